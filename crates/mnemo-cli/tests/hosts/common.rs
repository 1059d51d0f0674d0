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

/// The Claude Code version the tests are pinned to (what
/// `.ci/setup.d/30-hosts.sh` installs; a test checks the two agree).
pub const CLAUDE_CODE_VERSION: &str = "2.1.197";

/// The Codex CLI version the tests are pinned to (likewise).
pub const CODEX_VERSION: &str = "0.171.0";

/// Runs `tests/hosts/<script>` with the host binary `bin` (under
/// [`hosts_bin`]), mnemo and a fresh work directory, inside a network
/// namespace, and asserts that the driver succeeded. `None` when the host,
/// `unshare` or python3 is missing, or when the host's `--version` is not
/// `pinned` (SKIPPED, or a failure under CI=true): the observations these
/// tests check are of that version (SPEC §6).
pub fn run_session(bin: &str, what: &str, pinned: &str, script: &str) -> Option<tempfile::TempDir> {
    let host = hosts_bin().join(bin);
    if host.exists() && !is_pinned(&host, what, pinned) {
        return None;
    }
    run_session_at(&host, what, "30-hosts.sh", script)
}

/// Whether `host --version` names `pinned` as one of its words (Claude
/// Code prints `2.1.197 (Claude Code)`, Codex `codex-cli 0.171.0`);
/// otherwise SKIPPED (a failure under CI=true) naming what was found.
fn is_pinned(host: &Path, what: &str, pinned: &str) -> bool {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new("timeout")
        .arg("60")
        .arg(host)
        .arg("--version")
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path())
        .env("DISABLE_AUTOUPDATER", "1")
        .stdin(std::process::Stdio::null())
        .output();
    let found = match &out {
        Ok(o) => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        Err(e) => format!("no answer ({e})"),
    };
    let ok = found.split_whitespace().any(|w| w == pinned);
    if !ok {
        mnemo_testkit::skip(&format!(
            "{what} at {} reports {found:?}, the tests are pinned to {pinned} (.ci/setup.d/30-hosts.sh)",
            host.display()
        ));
    }
    ok
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

#[test]
fn the_pinned_versions_are_the_ones_ci_installs() {
    let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/setup.d/30-hosts.sh");
    let text = std::fs::read_to_string(&setup).unwrap();
    for pin in [
        format!("'@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}'"),
        format!("'@openai/codex@{CODEX_VERSION}'"),
    ] {
        assert!(
            text.contains(&pin),
            "{} does not install {pin}",
            setup.display()
        );
    }
}

#[test]
fn a_missing_host_is_skipped_here_and_fails_under_ci() {
    let r = std::panic::catch_unwind(|| {
        run_session_at(
            Path::new("/nonexistent/mnemo-host"),
            "a probe host",
            "30-hosts.sh",
            "none.sh",
        )
        .is_none()
    });
    if mnemo_testkit::in_ci() {
        assert!(r.is_err(), "under CI=true a missing host fails the test");
    } else {
        assert_eq!(r.ok(), Some(true), "SKIPPED elsewhere");
    }
}

#[test]
fn a_host_of_another_version_is_skipped_here_and_fails_under_ci() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("claude");
    std::fs::write(&host, "#!/bin/sh\necho '2.1.198 (Claude Code)'\n").unwrap();
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = std::panic::catch_unwind(|| is_pinned(&host, "a probe host", "2.1.197"));
    if mnemo_testkit::in_ci() {
        assert!(r.is_err(), "under CI=true another version fails the test");
    } else {
        assert_eq!(r.ok(), Some(false), "SKIPPED elsewhere");
    }
    assert_eq!(
        std::panic::catch_unwind(|| is_pinned(&host, "a probe host", "2.1.198")).ok(),
        Some(true),
        "the pin is a word of the answer"
    );
}
