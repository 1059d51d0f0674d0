//! The switch in a process of its own (the flag is process-wide): blocks
//! made before it stay the C library's, blocks made after are mimalloc's,
//! and every block is freed and grown by the allocator that made it.

#[global_allocator]
static ALLOCATOR: mnemo_alloc::Switch = mnemo_alloc::Switch;

use mnemo_alloc::{is_mimalloc_block, use_mimalloc, uses_mimalloc};

/// Fills a block with a pattern that says which block it is.
fn filled(tag: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| tag ^ (i as u8)).collect()
}

fn holds(v: &[u8], tag: u8, len: usize) -> bool {
    v.len() == len && v.iter().enumerate().all(|(i, &b)| b == tag ^ (i as u8))
}

#[test]
fn blocks_keep_their_allocator_across_the_switch() {
    assert!(!uses_mimalloc());
    // Small, medium and large (glibc mmaps blocks over 128 KiB) blocks.
    let sizes = [24usize, 4000, 300_000];
    let mut before: Vec<Vec<u8>> = sizes.iter().map(|&n| filled(1, n)).collect();
    let boxed = Box::new([7u64; 64]);
    for v in &before {
        assert!(!is_mimalloc_block(v.as_ptr()));
    }

    use_mimalloc();
    use_mimalloc(); // idempotent
    assert!(uses_mimalloc());

    // The blocks made before are still not mimalloc's (the page-map
    // look-up runs now) and read back whole.
    for (v, &n) in before.iter().zip(&sizes) {
        assert!(!is_mimalloc_block(v.as_ptr()));
        assert!(holds(v, 1, n));
    }
    let after: Vec<Vec<u8>> = sizes.iter().map(|&n| filled(2, n)).collect();
    for (v, &n) in after.iter().zip(&sizes) {
        assert!(
            is_mimalloc_block(v.as_ptr()),
            "a {n}-byte block after the switch"
        );
        assert!(holds(v, 2, n));
    }
    let zeroed = vec![0u32; 10_000];
    assert!(is_mimalloc_block(zeroed.as_ptr().cast()));
    assert!(zeroed.iter().all(|&x| x == 0));

    // Growing a block made before the switch keeps it the C library's and
    // keeps its bytes; growing one made after keeps it mimalloc's.
    for v in &mut before {
        let n = v.len();
        v.extend(std::iter::repeat_n(9u8, n * 3));
        assert!(!is_mimalloc_block(v.as_ptr()));
        assert!(holds(&v[..n], 1, n));
    }
    let mut grown = after[1].clone();
    grown.extend(std::iter::repeat_n(9u8, 1 << 20));
    assert!(is_mimalloc_block(grown.as_ptr()));
    assert!(holds(&grown[..4000], 2, 4000));

    // Freed by their own allocators (a wrong free aborts the process).
    drop(before);
    drop(after);
    drop(grown);
    assert_eq!(boxed.iter().sum::<u64>(), 7 * 64);
    drop(boxed);

    // Blocks handed between threads are freed where they land.
    let made_here = filled(3, 5000);
    let made_there = std::thread::spawn(move || {
        assert!(holds(&made_here, 3, 5000));
        drop(made_here);
        filled(4, 6000)
    })
    .join()
    .unwrap_or_default();
    assert!(is_mimalloc_block(made_there.as_ptr()));
    assert!(holds(&made_there, 4, 6000));
}

/// A server's command line makes the process mimalloc's from its first
/// block (glibc Linux: decided before `main`). The test binary runs itself
/// as `<test binary> guard http --exact`: `guard http` is what the start-up
/// check looks for, and libtest reads the words as filters, so this test
/// alone runs in the child.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn http() {
    if std::env::var_os("MNEMO_ALLOC_CHILD").is_some() {
        assert!(mnemo_alloc::only_mimalloc());
        assert!(uses_mimalloc());
        let v = filled(5, 100_000);
        assert!(is_mimalloc_block(v.as_ptr()));
        let mut w = v.clone();
        w.extend(std::iter::repeat_n(1u8, 1 << 20));
        assert!(holds(&w[..100_000], 5, 100_000));
        use_mimalloc(); // nothing to do: already mimalloc's
        assert!(mnemo_alloc::only_mimalloc());
        return;
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let out = std::process::Command::new(exe)
        .args(["guard", "http", "--exact", "--nocapture"])
        .env("MNEMO_ALLOC_CHILD", "1")
        .output();
    let Ok(out) = out else {
        panic!("the test binary did not run: {out:?}");
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
}
