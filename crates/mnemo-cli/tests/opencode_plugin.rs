//! The OpenCode plugin (`integrations/opencode`) under `node --test`,
//! against this build's `mnemo` binary: allowed → the trail in
//! `output.context`; denied → a throw carrying the Guardian's reason.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn opencode_plugin_node_tests_pass() {
    if !mnemo_testkit::require_command("node", &["--version"], "the OpenCode plugin's tests") {
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../integrations/opencode");
    let out = Command::new("node")
        .args(["--test", "test/"])
        .current_dir(&root)
        .env("MNEMO_BIN", env!("CARGO_BIN_EXE_mnemo"))
        .output()
        .unwrap_or_else(|e| panic!("node: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node --test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("# pass 4"), "{stdout}");
}
