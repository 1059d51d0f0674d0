//! Every case of Pantheon's `compress-inline.py` recorded in
//! `../shared/pantheon-fixtures/expected/compress-inline-cases.json` must come
//! out of `mnemo inline` byte for byte (exit code, stdout, stderr).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

fn fixtures_root() -> Option<PathBuf> {
    mnemo_testkit::shared("pantheon-fixtures")
}

#[test]
fn every_compress_inline_case_matches_byte_for_byte() {
    let Some(root) = fixtures_root() else {
        return;
    };
    let cases: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(root.join("expected/compress-inline-cases.json")).unwrap(),
    )
    .unwrap();
    assert!(cases.len() >= 30, "expected the whole case file");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let argv: Vec<&str> = case["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let out = Command::cargo_bin("mnemo")
            .unwrap()
            .current_dir(&root)
            .env_remove("MNEMO_CONFIG")
            .arg("inline")
            .args(&argv)
            .output()
            .unwrap();
        let code = out.status.code().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        let want_code = case["exit_code"].as_i64().unwrap() as i32;
        let want_out = case["stdout"].as_str().unwrap();
        let want_err = case["stderr"].as_str().unwrap();
        if code != want_code || stdout != want_out || stderr != want_err {
            failures.push(format!(
                "{name}:\n  exit {code} (want {want_code})\n  stdout {stdout:?}\n  want   {want_out:?}\n  stderr {stderr:?}\n  want   {want_err:?}"
            ));
        }
        // JSON outputs must also be equal as JSON.
        if want_out.starts_with('{') {
            let a: Value = serde_json::from_str(stdout.trim()).unwrap();
            let b: Value = serde_json::from_str(want_out.trim()).unwrap();
            assert_eq!(a, b, "{name}: JSON differs");
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    eprintln!(
        "{} Pantheon compress-inline cases pass byte for byte",
        cases.len()
    );
}
