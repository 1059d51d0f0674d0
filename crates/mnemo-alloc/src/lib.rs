//! # mnemo-alloc
//!
//! The process's global allocator, [`Switch`]: the C library's `malloc`
//! (Rust's [`System`]) for one-shot commands, mimalloc for the servers. On
//! glibc Linux the choice is made before `main`, from the command line
//! ([`is_server_command`], run from `.init_array`), so a server's process
//! is mimalloc's from its first block and a free needs no look-up;
//! elsewhere, or when that reading misses, the server calls
//! [`use_mimalloc`] and new blocks are mimalloc's from then on.
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
//! before a switch nothing is mimalloc's; in a process mimalloc's from its
//! start everything is; after a run-time switch a block is mimalloc's
//! exactly when mimalloc's page map holds it (`mi_is_in_heap_region`, a
//! lookup of ~20 instructions at each free: ~4k of `guard http`'s ~150k a
//! request). Blocks made before a run-time switch stay the C library's for
//! their whole life, reallocations included.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

/// Nothing allocated yet.
const FRESH: u8 = 0;
/// Blocks come from the C library.
const SYSTEM: u8 = 1;
/// Every block is mimalloc's: set at process start, before any block was
/// made (a server's command line, [`is_server_command`]); free needs no
/// look-up.
const ONLY_MIMALLOC: u8 = 2;
/// New blocks are mimalloc's, older ones the C library's ([`use_mimalloc`]).
const SWITCHED: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(FRESH);

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
/// thread, though a server calls it before it starts its threads. A
/// process whose command line [`is_server_command`] accepts is mimalloc's
/// from its start already (glibc Linux), and this does nothing.
pub fn use_mimalloc() {
    let mut s = STATE.load(Ordering::Acquire);
    while s == FRESH || s == SYSTEM {
        match STATE.compare_exchange(s, SWITCHED, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            Err(now) => s = now,
        }
    }
}

/// True when new blocks come from mimalloc.
pub fn uses_mimalloc() -> bool {
    matches!(STATE.load(Ordering::Acquire), ONLY_MIMALLOC | SWITCHED)
}

/// True when every block of the process is mimalloc's (decided at start).
pub fn only_mimalloc() -> bool {
    STATE.load(Ordering::Acquire) == ONLY_MIMALLOC
}

/// Whether a command line (without the program name) is `mnemo guard
/// http …` or `mnemo guard stdio …`, the long-running servers, with the
/// global options (`-q`, `--quiet`, `--config[=]FILE`, `--bank[=]DIR`)
/// anywhere before the server's name. It mirrors mnemo-cli's grammar (a
/// test there checks it against clap); a miss only costs speed: the
/// server then switches with [`use_mimalloc`].
pub fn is_server_command<'a>(args: impl IntoIterator<Item = &'a [u8]>) -> bool {
    let mut args = args.into_iter();
    let mut guard = false;
    while let Some(a) = args.next() {
        match a {
            b"-q" | b"--quiet" => {}
            b"--config" | b"--bank" => {
                if args.next().is_none() {
                    return false;
                }
            }
            _ if a.starts_with(b"--config=") || a.starts_with(b"--bank=") => {}
            b"guard" if !guard => guard = true,
            b"http" | b"stdio" => return guard,
            _ => return false,
        }
    }
    false
}

/// Run by the C runtime before `main` (glibc passes the command line to
/// `.init_array` functions): a server's process is mimalloc's from its
/// first block. The state moves from FRESH only, so a block some other
/// start-up code made first keeps the process on the checked path.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn decide_at_start(
    argc: std::ffi::c_int,
    argv: *const *const std::ffi::c_char,
    _envp: *const *const std::ffi::c_char,
) {
    if argv.is_null() || argc < 2 {
        return;
    }
    let args = (1..argc as usize).map(|i| {
        // SAFETY: glibc calls .init_array functions with the process's
        // argc and argv: argc valid pointers to NUL-terminated strings
        // that live as long as the process.
        #[allow(unsafe_code)]
        unsafe {
            let p = *argv.add(i);
            if p.is_null() {
                &[][..]
            } else {
                std::ffi::CStr::from_ptr(p).to_bytes()
            }
        }
    });
    if is_server_command(args) {
        let _ = STATE.compare_exchange(FRESH, ONLY_MIMALLOC, Ordering::AcqRel, Ordering::Acquire);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
#[used]
#[unsafe(link_section = ".init_array")]
static DECIDE_AT_START: extern "C" fn(
    std::ffi::c_int,
    *const *const std::ffi::c_char,
    *const *const std::ffi::c_char,
) = decide_at_start;

/// The state a new block is made in: FRESH becomes SYSTEM with the
/// process's first block (unless the start already made it ONLY_MIMALLOC).
#[inline]
fn state_for_alloc() -> u8 {
    let s = STATE.load(Ordering::Acquire);
    if s != FRESH {
        return s;
    }
    match STATE.compare_exchange(FRESH, SYSTEM, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => SYSTEM,
        Err(now) => now,
    }
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

/// True when `p` is a block of mimalloc's.
pub fn is_mimalloc_block(p: *const u8) -> bool {
    match STATE.load(Ordering::Acquire) {
        ONLY_MIMALLOC => true,
        SWITCHED => {
            // SAFETY: mi_is_in_heap_region only reads mimalloc's page map
            // for the address; it accepts any pointer value, its own or
            // not, and never dereferences it.
            #[allow(unsafe_code)]
            unsafe {
                libmimalloc_sys::mi_is_in_heap_region(p.cast())
            }
        }
        // Before any switch mimalloc has made no block.
        _ => false,
    }
}

// SAFETY: each method forwards to System or to mimalloc::MiMalloc, both
// GlobalAlloc implementations, with the caller's arguments unchanged. A block
// is always freed or reallocated by the one that made it: mimalloc makes
// blocks only in ONLY_MIMALLOC (entered from FRESH alone, so no block of
// System's exists) and SWITCHED (where `is_mimalloc_block` asks mimalloc's
// page map); a state never goes back to SYSTEM; a thread handed a block was
// handed it after the state it was made in was stored, so its Acquire load
// sees that state or a later one.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Switch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if state_for_alloc() == SYSTEM {
            // SAFETY: the caller's contract (non-zero size) is passed on.
            unsafe { System.alloc(layout) }
        } else {
            // SAFETY: as above.
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if state_for_alloc() == SYSTEM {
            // SAFETY: the caller's contract (non-zero size) is passed on.
            unsafe { System.alloc_zeroed(layout) }
        } else {
            // SAFETY: as above.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
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

#[cfg(test)]
mod tests {
    use super::is_server_command;

    fn server(line: &str) -> bool {
        is_server_command(line.split_whitespace().map(str::as_bytes))
    }

    #[test]
    fn the_servers_command_lines_are_told_apart() {
        for line in [
            "guard http --listen 127.0.0.1:7717",
            "--quiet guard http --listen a",
            "-q --config c.toml --bank b guard stdio",
            "--config=c.toml guard -q http",
            "guard --bank b stdio --memory",
        ] {
            assert!(server(line), "{line}");
        }
        for line in [
            "",
            "guard",
            "guard check",
            "http",
            "hook claude-code pre-compact --memory",
            "trail t.jsonl",
            "--config",
            "--config guard http",
            "guard guard http",
            "guard check http",
            "--version",
            "mcp",
        ] {
            assert!(!server(line), "{line}");
        }
    }
}
