//! `mnemo report` through the binary: JSON counts of the example bank,
//! `--out`, errors, and a Guardian store recorded by a real `mnemo hook`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use serde_json::Value;

fn example_bank() -> std::path::PathBuf {
    mnemo_testkit::workspace_root().join("examples/report/bank")
}

fn mnemo(home: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("mnemo").unwrap();
    c.env("MNEMO_HOME", home).env_remove("MNEMO_CONFIG");
    c
}

#[test]
fn json_of_the_example_bank() {
    let home = tempfile::tempdir().unwrap();
    let out = mnemo(home.path())
        .current_dir(home.path())
        .arg("--bank")
        .arg(example_bank())
        .args(["report", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["totals"]["entries"], 4);
    assert_eq!(v["totals"]["phases"], 2);
    assert_eq!(v["totals"]["skipped"], 1);
    assert_eq!(v["totals"]["archived"], 1);
    assert_eq!(v["totals"]["xref_ids"], 5);
    // No store under MNEMO_HOME: no Guardian section, and none was created.
    assert!(v["guardian"].is_null());
    assert!(!home.path().join("guardian.sqlite3").exists());
}

#[test]
fn out_writes_the_page_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    mnemo(dir.path())
        .current_dir(dir.path())
        .arg("--bank")
        .arg(example_bank())
        .args(["report", "--no-store", "--out"])
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("data-total=\"entries\">4<"));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["report.html"]);
}

#[test]
fn errors_name_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = mnemo(dir.path())
        .current_dir(dir.path())
        .args(["--bank", "nope", "report"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
    let out = mnemo(dir.path())
        .current_dir(dir.path())
        .arg("--bank")
        .arg(example_bank())
        .args(["report", "--store", "missing.sqlite3"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.sqlite3"));
}

#[test]
fn guardian_timeline_from_a_real_hook() {
    let home = tempfile::tempdir().unwrap();
    let g = mnemo_testkit::workspace_root().join("examples/guardian");
    // The bundled Claude Code hook input names its transcript relative to
    // the workspace root.
    let input = std::fs::read_to_string(g.join("hook-input.json")).unwrap();
    let _ = mnemo(home.path())
        .current_dir(mnemo_testkit::workspace_root())
        .args(["hook", "claude-code", "pre-compact", "--store"])
        .arg(home.path().join("g.sqlite3"))
        .write_stdin(input)
        .output()
        .unwrap();
    let store = home.path().join("g.sqlite3");
    assert!(store.is_file(), "the hook recorded nothing");
    let out = mnemo(home.path())
        .current_dir(home.path())
        .arg("--bank")
        .arg(example_bank())
        .args(["report", "--json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sessions = v["guardian"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    let s = &sessions[0];
    let decided = s["allowed"].as_u64().unwrap() + s["denied"].as_u64().unwrap();
    assert_eq!(decided, 1, "{s}");
    assert!(!s["steps"].as_array().unwrap().is_empty());
}
