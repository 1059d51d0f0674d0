//! # mnemo-testkit
//!
//! Test support shared by mnemo's test suites. It owns one rule: **a skip is
//! not a pass.** A test whose external tool or data is missing calls
//! [`skip`] (or one of the `require_*` helpers):
//!
//! * under `CI=true` (or `CI=1`) the test **fails**, naming what is missing;
//! * elsewhere it writes a `SKIPPED: <test>: <reason>` line straight to the
//!   process's standard error, past libtest's output capture, so the line is
//!   visible in a plain `cargo test` run, and the test returns early.
//!
//! It also finds the conformance data in `../shared/` beside the checkout
//! (or `$MNEMO_SHARED`), which the shipped binary never needs.
//!
//! **Must never:** be a dependency of anything but tests, benches and
//! examples; make a missing tool look like a pass under CI.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// True when the environment says this is a CI run (`CI=true` or `CI=1`).
pub fn in_ci() -> bool {
    matches!(
        std::env::var("CI")
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Ok("true") | Ok("1") | Ok("yes")
    )
}

/// The name of the running test (libtest names the thread after it).
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_string()
}

/// Records that the running test cannot run because `reason` (a missing tool
/// or data set). Under CI this panics, failing the test. Elsewhere it prints a
/// visible `SKIPPED` line and returns, and the caller returns early.
///
/// # Panics
///
/// Under `CI=true`, always: a skip is not a pass in CI.
#[allow(clippy::panic)]
pub fn skip(reason: &str) {
    let name = test_name();
    if in_ci() {
        panic!("{name}: required under CI=true but missing: {reason}");
    }
    // Straight to fd 2: libtest captures only the print macros.
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "SKIPPED: {name}: {reason}");
    let _ = err.flush();
}

/// The workspace root (the directory of the top `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    // This crate lives at <root>/crates/mnemo-testkit.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// The conformance data directory: `$MNEMO_SHARED` when set, else `shared/`
/// beside the checkout. `None` (after [`skip`]) when it is absent.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("MNEMO_SHARED") {
        Some(p) => PathBuf::from(p),
        None => workspace_root().join("../shared"),
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        skip(&format!(
            "conformance data not found at {} (set MNEMO_SHARED or put shared/ beside the checkout)",
            dir.display()
        ));
        None
    }
}

/// A path under the conformance data directory, when it exists; otherwise
/// [`skip`] and `None`.
pub fn shared(rel: &str) -> Option<PathBuf> {
    let dir = shared_dir()?;
    let p = dir.join(rel);
    if p.exists() {
        Some(p)
    } else {
        skip(&format!("{} not found", p.display()));
        None
    }
}

/// True when `program args…` runs and exits 0; otherwise [`skip`] with
/// `why` and false.
pub fn require_command(program: &str, args: &[&str], why: &str) -> bool {
    let ok = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip(&format!("`{program} {}` failed: {why}", args.join(" ")));
    }
    ok
}

/// The value of environment variable `var` when set and non-empty;
/// otherwise [`skip`] with `why` and `None`.
pub fn require_env(var: &str, why: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            skip(&format!("${var} is not set: {why}"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_root_holds_the_workspace_manifest() {
        assert!(workspace_root().join("Cargo.toml").is_file());
        assert!(workspace_root().join("crates/mnemo-testkit").is_dir());
    }

    #[test]
    fn a_missing_command_is_not_required_silently() {
        // Outside CI this prints SKIPPED and answers false; under CI it panics.
        let r = std::panic::catch_unwind(|| {
            require_command("/nonexistent/mnemo-testkit-probe", &[], "probe")
        });
        if in_ci() {
            assert!(r.is_err(), "under CI a missing tool must fail the test");
        } else {
            assert_eq!(r.ok(), Some(false));
        }
    }
}
