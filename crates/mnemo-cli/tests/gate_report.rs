#![allow(clippy::unwrap_used, clippy::expect_used)]
//! #14 items 5 and 7 through the binary: a re-run of the same gate says
//! what changed ("0 new entries, 3 unchanged"); the By Feature table takes
//! the feature from the records when they all agree; the gate reports the
//! fields Layer 1 dropped, as `score` does.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

fn mnemo(cwd: &Path) -> Command {
    let mut c = Command::cargo_bin("mnemo").unwrap();
    c.current_dir(cwd).env_remove("MNEMO_CONFIG");
    c
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

fn gate(dir: &Path, files: &[String]) -> assert_cmd::assert::Assert {
    mnemo(dir)
        .args(["--bank", "bank", "gate", "--phase", "2", "--from", "hermes"])
        .args(["--to", "aphrodite", "--date", "2026-11-30"])
        .args(files)
        .assert()
}

const A: &str = r#"{"agent": "hermes", "feature": "orders-api", "status": "complete",
 "summary": "Added POST /api/v1/orders; unknown products return 422.",
 "stdout": "pytest: 14 passed"}"#;
const B: &str = "## subtask_summary\n**agent:** demeter\n**feature:** orders-api\n**status:** complete\n**summary:** Migration 0014 adds table orders.\n**stderr:** warning\n";
const C: &str = "agent: prometheus\nfeature: orders-api\nstatus: complete\nsummary: Deployed the orders service.\n";

#[test]
fn a_rerun_says_nothing_new_and_the_feature_comes_from_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![
        write(dir.path(), "a.json", A),
        write(dir.path(), "b.md", B),
        write(dir.path(), "c.yaml", C),
    ];
    gate(dir.path(), &files)
        .success()
        .stderr(predicate::str::contains(
            "note: 3 new entries, 0 unchanged\n",
        ))
        .stderr(predicate::str::contains(
            "note: feature orders-api (from the records)\n",
        ))
        .stderr(predicate::str::contains(
            "note: a.json record 1: field `stdout` dropped (only metadata is promoted: Layer 1)\n",
        ))
        .stderr(predicate::str::contains(
            "note: b.md:6: field `stderr` dropped (only metadata is promoted: Layer 1)\n",
        ));
    let index = std::fs::read_to_string(dir.path().join("bank/_xref/index.md")).unwrap();
    let by_feature = &index[index.find("## By Feature").unwrap()..];
    let by_feature = &by_feature[..by_feature[3..]
        .find("\n## ")
        .map_or(by_feature.len(), |i| i + 3)];
    assert!(
        by_feature.contains("| orders-api | 2 | Demeter, Prometheus, Hermes | HIGH |"),
        "{by_feature}"
    );

    // The same batch again: same confirmation line, and it says so.
    gate(dir.path(), &files)
        .success()
        .stderr(predicate::str::contains(
            "note: 0 new entries, 3 unchanged\n",
        ));

    // One summary changed: it alone is updated.
    let files2 = vec![
        write(dir.path(), "a.json", &A.replace("422", "422 and 409")),
        files[1].clone(),
        files[2].clone(),
    ];
    gate(dir.path(), &files2)
        .success()
        .stderr(predicate::str::contains(
            "note: 0 new entries, 2 unchanged, 1 updated\n",
        ));
}

#[test]
fn records_that_disagree_on_the_feature_fill_no_by_feature_row() {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![
        write(dir.path(), "a.json", A),
        write(dir.path(), "c.yaml", &C.replace("orders-api", "billing")),
    ];
    gate(dir.path(), &files)
        .success()
        .stderr(predicate::str::contains("from the records").not());
    let index = std::fs::read_to_string(dir.path().join("bank/_xref/index.md")).unwrap();
    assert!(!index.contains("| orders-api"), "{index}");
    assert!(!index.contains("| billing"), "{index}");
}
