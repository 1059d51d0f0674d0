//! `tune_c_malloc_for_one_shot` in a process of its own (it sets glibc's
//! malloc parameters for the whole process): a 1 MiB block comes from the
//! heap, not from a mapping of its own, and a second one reuses the first's
//! pages. The test binary keeps Rust's default allocator (glibc's malloc).
#![cfg(all(target_os = "linux", target_env = "gnu"))]

/// glibc's count of blocks it mapped on their own, and of heap bytes in use.
fn mapped_blocks_and_heap() -> (usize, usize) {
    // SAFETY: mallinfo2 only reads glibc's malloc statistics.
    #[allow(unsafe_code)]
    let m = unsafe { libc::mallinfo2() };
    (m.hblks, m.uordblks)
}

#[test]
fn large_buffers_come_from_the_heap_after_tuning() {
    const MIB: usize = 1 << 20;
    // glibc's default: a 1 MiB block is mapped on its own.
    let (mapped0, _) = mapped_blocks_and_heap();
    let before = vec![1u8; MIB];
    let (mapped1, _) = mapped_blocks_and_heap();
    assert_eq!(mapped1, mapped0 + 1, "glibc's default maps a 1 MiB block");
    drop(before);

    assert!(mnemo_alloc::tune_c_malloc_for_one_shot());
    let (mapped2, heap2) = mapped_blocks_and_heap();
    let a = vec![2u8; MIB];
    let (mapped3, heap3) = mapped_blocks_and_heap();
    assert_eq!(mapped3, mapped2, "after tuning, 1 MiB comes from the heap");
    assert!(heap3 >= heap2 + MIB);
    let at = a.as_ptr() as usize;
    drop(a);
    let b = vec![3u8; MIB];
    assert_eq!(
        b.as_ptr() as usize,
        at,
        "the freed block is reused in place"
    );
    assert!(b.iter().all(|&x| x == 3));
    // Blocks of 4 MiB and over are still mapped on their own.
    let big = vec![4u8; 8 * MIB];
    assert_eq!(mapped_blocks_and_heap().0, mapped3 + 1);
    drop(big);
}
