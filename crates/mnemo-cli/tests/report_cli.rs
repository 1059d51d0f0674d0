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

#[test]
fn a_denying_hook_run_writes_its_reasons_and_the_timeline_shows_them() {
    let home = tempfile::tempdir().unwrap();
    let root = mnemo_testkit::workspace_root();
    let input = std::fs::read_to_string(root.join("examples/guardian/hook-input.json")).unwrap();
    let store = home.path().join("g.sqlite3");
    // The bundled transcript has tool output after the user's last words:
    // an automatic compaction is denied, exit 2, the reason on stderr.
    let hook = mnemo(home.path())
        .current_dir(&root)
        .args(["hook", "claude-code", "pre-compact", "--store"])
        .arg(&store)
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(hook.status.code(), Some(2), "the hook did not deny");
    let stderr = String::from_utf8_lossy(&hook.stderr);
    let reason = stderr
        .lines()
        .find_map(|l| l.strip_prefix("mnemo guardian blocked compaction: "))
        .unwrap_or_else(|| panic!("no reason on stderr: {stderr}"))
        .trim()
        .to_string();
    assert!(
        reason.contains("re-grounding"),
        "a deny names its way out: {reason}"
    );

    let report = |extra: &[&str]| {
        let out = mnemo(home.path())
            .current_dir(home.path())
            .arg("--bank")
            .arg(example_bank())
            .args(["report", "--store"])
            .arg(&store)
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // The store kept the decision with the hook's own reasoning and codes.
    let v: Value = serde_json::from_str(&report(&["--json"])).unwrap();
    let s = &v["guardian"]["sessions"][0];
    assert_eq!(
        (s["allowed"].as_u64(), s["denied"].as_u64()),
        (Some(0), Some(1))
    );
    let c = &s["compactions"][0];
    assert_eq!(c["verdict"], "deny");
    assert_eq!(c["reasoning"].as_str(), Some(reason.as_str()));
    let codes: Vec<&str> = c["reason_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(!codes.is_empty());
    let step = c["step_id"].as_str().unwrap();
    // The page's timeline shows the deny row with that reasoning and code.
    let html = report(&[]);
    let row = html
        .split("<tr data-verdict=\"deny\">")
        .nth(1)
        .expect("a deny row in the timeline")
        .split("</tr>")
        .next()
        .unwrap();
    assert!(row.contains(step), "{row}");
    assert!(row.contains(&mnemo_report::html::esc(&reason)), "{row}");
    for code in codes {
        assert!(row.contains(code), "{row}");
    }
    assert_eq!(html.matches("<tr data-verdict=\"deny\">").count(), 1);
}
