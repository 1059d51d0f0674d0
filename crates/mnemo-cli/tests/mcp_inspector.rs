//! `mnemo mcp` checked by the official MCP Inspector's CLI
//! (`@modelcontextprotocol/inspector`, installed by
//! `.ci/setup.d/30-mcp-inspector.sh`, which exports `MNEMO_MCP_INSPECTOR`):
//! `tools/list --strict` must report no portability problem in any tool
//! schema, and a `tools/call` through the Inspector's TypeScript SDK client
//! (which validates structured results against the tool's `outputSchema`)
//! must succeed. Without the Inspector: SKIPPED (a failure under `CI=true`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

fn inspector() -> Option<String> {
    mnemo_testkit::require_env(
        "MNEMO_MCP_INSPECTOR",
        "the MCP Inspector is not installed (bash .ci/setup.d/30-mcp-inspector.sh)",
    )
}

fn run(inspector: &str, home: &Path, args: &[&str]) -> Output {
    let binary = assert_cmd::cargo::cargo_bin("mnemo");
    // The Inspector starts a stdio server with a few variables of its own
    // environment only (HOME, PATH, …), so MNEMO_HOME goes in with -e.
    let mnemo_home = format!("MNEMO_HOME={}", home.join("mnemo-home").display());
    Command::new(inspector)
        .arg("--cli")
        .args(["-e", &mnemo_home])
        .args(args)
        .arg(&binary)
        .arg("mcp")
        .current_dir(home)
        .env("MNEMO_HOME", home.join("mnemo-home"))
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("xdg"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn inspector_strict_tools_list_has_no_schema_problem() {
    let Some(inspector) = inspector() else { return };
    let home = tempfile::tempdir().unwrap();
    let out = run(
        &inspector,
        home.path(),
        &["--method", "tools/list", "--strict"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "inspector failed ({})\n{stderr}",
        out.status
    );
    let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let tools = list["tools"].as_array().unwrap();
    assert!(tools.len() >= 8, "{} tools listed", tools.len());
    assert!(
        !stderr.contains("Warning:") && !stderr.contains("Error:"),
        "the Inspector found schema problems:\n{stderr}"
    );
}

#[test]
fn inspector_calls_a_tool_and_accepts_its_structured_result() {
    let Some(inspector) = inspector() else { return };
    let home = tempfile::tempdir().unwrap();
    let out = run(
        &inspector,
        home.path(),
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "compress_inline",
            // One JSON object: --tool-arg is variadic and would swallow the
            // server command that follows.
            "--tool-args-json",
            r#"{"mode":"score","text":"Added a new table orders with a foreign key to users; migration 0014"}"#,
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "inspector failed ({})\n{stderr}",
        out.status
    );
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_ne!(result["isError"], serde_json::Value::Bool(true), "{stdout}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("CRITICAL"), "{stdout}");
}

#[test]
fn inspector_accepts_a_structured_result_against_the_output_schema() {
    let Some(inspector) = inspector() else { return };
    let home = tempfile::tempdir().unwrap();
    let out = run(
        &inspector,
        home.path(),
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "memory_store",
            "--tool-args-json",
            r#"{"value":"orders use uuid keys","namespace":"team","key":"orders-keys"}"#,
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "inspector failed ({})\n{stderr}",
        out.status
    );
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_ne!(result["isError"], serde_json::Value::Bool(true), "{stdout}");
    assert_eq!(result["structuredContent"]["status"], "stored", "{stdout}");
    assert_eq!(
        result["structuredContent"]["key"], "orders-keys",
        "{stdout}"
    );
    // The store went where MNEMO_HOME said, not into a real home.
    assert!(home.path().join("mnemo-home/memory.sqlite3").is_file());
}
