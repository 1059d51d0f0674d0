//! # mnemo-alloc
//!
//! The process's global allocator, [`Switch`]: the C library's `malloc`
//! (Rust's [`System`]) until [`use_mimalloc`] is called, mimalloc after.
//!
//! Why two: `mnemo` is mostly one-shot processes (a host runs `mnemo hook
//! … pre-compact` at every compaction; `gate`, `scrub`, `trail`, `guard
//! check`) whose whole run is a few milliseconds, and a long-running
//! server (`guard http`, `guard stdio`). mimalloc saves the server ~25k of
//! ~170k instructions a request, but costs a one-shot process more than it
//! saves: its 1 GiB arena is `madvise(MADV_HUGEPAGE)`d, so with transparent
//! huge pages on `madvise` the first touches fault in 2 MiB pages (RSS of
//! `mnemo --version` 4.7 MB with glibc, 11 MB with mimalloc), its 64 KiB
//! pages per size class touch more 4 KiB pages than glibc's packed heap
//! (~100 more page faults on a hook), and it purges with one `madvise` per
//! page at exit. Measured figures are in `bench/guardian/README.md`.
//!
//! **Owns:** the choice of allocator for each block. **Does not own:**
//! which commands switch (the command line, `mnemo-cli`).
//!
//! Every block is freed and reallocated by the allocator that made it:
//! before the switch nothing is mimalloc's, after it a block is mimalloc's
//! exactly when mimalloc's page map holds it (`mi_is_in_heap_region`, a
//! lookup of a few instructions). Blocks made before the switch stay the C
//! library's for their whole life, reallocations included.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once, never cleared: new blocks come from mimalloc.
static MIMALLOC: AtomicBool = AtomicBool::new(false);

/// The global allocator of the `mnemo` binary: see the crate docs.
///
/// ```
/// #[global_allocator]
/// static ALLOCATOR: mnemo_alloc::Switch = mnemo_alloc::Switch;
/// # fn main() {}
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Switch;

/// From now on, new blocks come from mimalloc (for a long-running server).
/// Blocks already made stay the C library's. Idempotent; safe from any
/// thread, though a server calls it before it starts its threads.
pub fn use_mimalloc() {
    MIMALLOC.store(true, Ordering::Release);
}

/// True after [`use_mimalloc`].
pub fn uses_mimalloc() -> bool {
    MIMALLOC.load(Ordering::Acquire)
}

/// Tunes the C library's `malloc` for a process that lives milliseconds:
/// blocks under 4 MiB come from the heap instead of a mapping of their own,
/// and up to 64 MiB freed at the heap's top is kept instead of handed back.
/// glibc's defaults (128 KiB, growing with each mapped block freed) give
/// each large buffer (a 1 MiB read buffer, a transcript's `Vec`) fresh
/// pages that fault one by one, and then unmap them; with these a buffer
/// freed is reused in place. On a hook this is ~85 of ~560 page faults (each
/// ~2 us here). Returns false where it does not apply (not glibc) or when
/// glibc refuses a value. Call it first thing in `main`.
pub fn tune_c_malloc_for_one_shot() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets glibc malloc parameters (it takes the
        // arena lock itself); any value is accepted or refused with 0.
        #[allow(unsafe_code)]
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// True when `p` is a block of mimalloc's (only ever after [`use_mimalloc`]).
pub fn is_mimalloc_block(p: *const u8) -> bool {
    // Before the switch mimalloc has made no block: no look-up.
    if !uses_mimalloc() {
        return false;
    }
    // SAFETY: mi_is_in_heap_region only reads mimalloc's page map for the
    // address; it accepts any pointer value, its own or not, and never
    // dereferences it.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_is_in_heap_region(p.cast())
    }
}

// SAFETY: each method forwards to System or to mimalloc::MiMalloc, both
// GlobalAlloc implementations, with the caller's arguments unchanged. A block
// is always freed or reallocated by the one that made it: a block is
// mimalloc's exactly when `is_mimalloc_block` says so (mimalloc makes no
// block before MIMALLOC is set, and the flag is never cleared; a thread that
// was handed a mimalloc block was handed it after the flag's store, so its
// Acquire load sees it).
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Switch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if uses_mimalloc() {
            // SAFETY: the caller's contract (non-zero size) is passed on.
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        } else {
            // SAFETY: as above.
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if uses_mimalloc() {
            // SAFETY: the caller's contract (non-zero size) is passed on.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
        } else {
            // SAFETY: as above.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_mimalloc_block(ptr) {
            // SAFETY: `ptr` is a live block of mimalloc's with this layout.
            unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
        } else {
            // SAFETY: `ptr` is a live block of System's with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if is_mimalloc_block(ptr) {
            // SAFETY: `ptr` is mimalloc's; the caller's contract is passed on.
            unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
        } else {
            // SAFETY: `ptr` is System's; the caller's contract is passed on.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
}
