//! What the real-host end-to-end tests share: where the hosts are, and one
//! run of a driver script inside `unshare -n` (only loopback up).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where `.ci/setup.d/30-hosts.sh` installs the hosts' binaries.
pub fn hosts_bin() -> PathBuf {
    std::env::var_os("MNEMO_HOSTS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/mnemo-hosts/node_modules/.bin"))
}

/// A file the driver wrote into its work directory ("" when absent).
pub fn read(w: &Path, name: &str) -> String {
    std::fs::read_to_string(w.join(name)).unwrap_or_default()
}

/// Runs `tests/hosts/<script>` with the host binary `bin` (under
/// [`hosts_bin`]), mnemo and a fresh work directory, inside a network
/// namespace, and asserts that the driver succeeded. `None` when the host,
/// `unshare` or python3 is missing (SKIPPED, or a failure under CI=true).
pub fn run_session(bin: &str, what: &str, script: &str) -> Option<tempfile::TempDir> {
    run_session_at(&hosts_bin().join(bin), what, "30-hosts.sh", script)
}

/// [`run_session`] with the host binary at `host`, installed by
/// `.ci/setup.d/<setup>`.
pub fn run_session_at(
    host: &Path,
    what: &str,
    setup: &str,
    script: &str,
) -> Option<tempfile::TempDir> {
    if !host.exists() {
        mnemo_testkit::skip(&format!(
            "{what} not installed at {} (.ci/setup.d/{setup})",
            host.display()
        ));
        return None;
    }
    if !mnemo_testkit::require_command("unshare", &["-n", "true"], "a network namespace")
        || !mnemo_testkit::require_command("python3", &["-c", "pass"], "the mock model server")
    {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hosts")
        .join(script);
    let st = Command::new("timeout")
        .args(["600", "unshare", "-n", "sh"])
        .arg(&script)
        .arg(host)
        .arg(env!("CARGO_BIN_EXE_mnemo"))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success(), "driver: {st}");
    Some(dir)
}
