//! The `mnemo` binary as users drive it: `score`, `stats`, `init`, `config`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A `mnemo` command run in an empty directory (no mnemo.toml upward).
fn mnemo_in(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("mnemo").unwrap();
    c.current_dir(dir).env_remove("MNEMO_CONFIG");
    c
}

fn mnemo() -> (Command, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (mnemo_in(dir.path()), dir)
}

#[test]
fn score_text_prints_the_table() {
    let (mut c, _d) = mnemo();
    c.args([
        "score",
        "--text",
        "Added JWT auth endpoint with refresh token rotation",
        "--from",
        "hermes",
        "--to",
        "aphrodite",
        "--files",
        "backend/routers/auth.py,backend/services/auth_service.py",
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains("0.74   HIGH"))
    .stdout(predicate::str::contains("auth, JWT, token, endpoint"));
}

#[test]
fn score_json_has_every_contract_field() {
    let (mut c, _d) = mnemo();
    let out = c
        .args([
            "score",
            "--json",
            "--text",
            "Refactored the user service",
            "--blocker",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    for key in [
        "score",
        "band",
        "impact",
        "risk",
        "novelty",
        "blockers",
        "downstream",
        "keywords_found",
        "explain",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["score"], 0.68);
    assert_eq!(v["band"], "HIGH");
    assert_eq!(v["blockers"], 0.8);
    assert_eq!(v["explain"]["blockers"], "flagged as unblocking others");
    assert_eq!(v["explain"]["impact"], "keyword \"service\" (architecture)");
    assert_eq!(
        v["keywords_found"],
        serde_json::json!(["service", "refactor"])
    );
}

/// The JSON outputs keep their members in the documented order (the binary
/// no longer builds serde_json with `preserve_order`, whose map kept
/// insertion order; a plain `json!` map would print them sorted).
#[test]
fn json_outputs_keep_their_member_order() {
    let keys_in_order = |text: &str, keys: &[&str]| {
        let at: Vec<usize> = keys
            .iter()
            .map(|k| {
                text.find(&format!("\"{k}\":"))
                    .unwrap_or_else(|| panic!("no {k} in {text}"))
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{keys:?} in {text}");
    };
    let (mut c, _d) = mnemo();
    let out = c
        .args([
            "score",
            "--json",
            "--text",
            "Refactored the user service",
            "--from",
            "hermes",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    keys_in_order(
        &text,
        &[
            "record",
            "score",
            "band",
            "impact",
            "risk",
            "novelty",
            "blockers",
            "downstream",
            "keywords_found",
            "explain",
            "score_exact",
        ],
    );
    keys_in_order(
        &text,
        &["impact", "risk", "novelty", "blockers", "downstream"],
    );
    let (mut c, _d) = mnemo();
    let out = c
        .args(["stats", "--json", "--text", "two words"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    keys_in_order(
        &text,
        &[
            "tokens",
            "encoding",
            "tokens_estimate",
            "lines",
            "chars",
            "bytes",
        ],
    );
    let (mut c, _d) = mnemo();
    let out = c
        .args(["scrub", "--json", "-"])
        .write_stdin("key ghp_0123456789abcdefghijABCDEFGHIJ012345\n")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    keys_in_order(
        &text,
        &["text", "redactions", "type", "start", "end", "replacement"],
    );
}

#[test]
fn score_markdown_batch_reports_dropped_fields() {
    let (mut c, _d) = mnemo();
    let out = c
        .args(["score", "--json", "--input"])
        .arg(repo().join("examples/phase-batch.md"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let bands: Vec<&str> = lines.iter().map(|v| v["band"].as_str().unwrap()).collect();
    assert_eq!(bands, ["CRITICAL", "CRITICAL", "MEDIUM", "LOW"]);
    assert_eq!(lines[1]["blockers"], 0.8, "\"This unblocked Hermes\"");
    assert_eq!(
        lines[1]["dropped"],
        serde_json::json!(["stdout", "stdout (fenced block)"])
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("phase-batch.md:34: field `stdout` dropped"),
        "{stderr}"
    );
    // Raw output never reaches the output.
    let all = lines.iter().map(Value::to_string).collect::<String>();
    assert!(!all.contains("alembic"));
}

#[test]
fn quiet_silences_notes() {
    let (mut c, _d) = mnemo();
    c.args(["--quiet", "score", "--input"])
        .arg(repo().join("examples/phase-batch.yaml"))
        .assert()
        .success()
        .stderr("");
}

#[test]
fn score_reads_yaml_from_stdin() {
    let (mut c, _d) = mnemo();
    c.args(["score", "--json", "--input", "-", "--format", "yaml"])
        .write_stdin("agent: demeter\nsummary: Migration adds new table refresh_tokens with foreign key to users\nto: hermes\n")
        .assert()
        .success()
        .stdout(predicate::str::contains("\"score\":0.82"))
        .stdout(predicate::str::contains("\"band\":\"CRITICAL\""));
}

#[test]
fn pantheon_profile_matches_substrings() {
    let (mut c, _d) = mnemo();
    c.args([
        "score",
        "--json",
        "--profile",
        "pantheon",
        "--text",
        "Updated author list and router docs",
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains(
        "\"keywords_found\":[\"auth\",\"route\"]",
    ));
    let (mut c, _d) = mnemo();
    c.args([
        "score",
        "--json",
        "--text",
        "Updated author list and subrouter docs",
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains("\"keywords_found\":[\"auth\"]"));
}

fn assert_fails(args: &[&str], file: &Path, needles: &[&str]) {
    let (mut c, _d) = mnemo();
    let out = c.args(args).arg(file).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{args:?} {}", file.display());
    assert!(out.stdout.is_empty(), "nothing is printed on failure");
    let stderr = String::from_utf8(out.stderr).unwrap();
    for n in needles {
        assert!(stderr.contains(n), "{n:?} not in {stderr}");
    }
}

#[test]
fn malformed_inputs_name_file_line_and_field() {
    assert_fails(
        &["score", "--input"],
        &fixture("bad-status.json"),
        &[
            "bad-status.json:4:",
            "field `[1].status`",
            "\"shipped\" is not a status",
        ],
    );
    assert_fails(
        &["score", "--input"],
        &fixture("truncated.json"),
        &["truncated.json:2:", "EOF while parsing"],
    );
    assert_fails(
        &["score", "--input"],
        &fixture("bad-count.yaml"),
        &[
            "bad-count.yaml:3:",
            "field `[1].critical_issues`",
            "\"many\"",
        ],
    );
    assert_fails(
        &["score", "--input"],
        &fixture("no-summary.md"),
        &["no-summary.md:3", "field `summary`", "missing"],
    );
    assert_fails(
        &["score", "--input"],
        &fixture("bad-date.md"),
        &["bad-date.md:3", "field `date`", "YYYY-MM-DD"],
    );
    assert_fails(
        &["score", "--input"],
        &fixture("does-not-exist.md"),
        &["cannot read", "does-not-exist.md", "hint: check the path"],
    );
}

#[test]
fn nothing_to_score_is_an_error_with_a_hint() {
    let (mut c, _d) = mnemo();
    c.arg("score")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("nothing to score"))
        .stderr(predicate::str::contains("hint:"));
}

#[test]
fn init_writes_the_defaults_and_a_bank_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    mnemo_in(dir.path()).arg("init").assert().success();
    let path = dir.path().join("mnemo.toml");
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(written, mnemo_model::config::DEFAULT_CONFIG_TOML);
    let bank = dir.path().join(".pantheon/memory-bank");
    for f in [
        "01-active-context.md",
        "02-progress-log.md",
        "_xref/index.md",
        "_xref/_next_id.json",
    ] {
        assert!(bank.join(f).is_file(), "{f} missing");
    }
    // Edit both, then init again: everything a user wrote survives.
    std::fs::write(&path, "[budget]\ndefault_phases = 4\n").unwrap();
    std::fs::write(bank.join("01-active-context.md"), "# Mine\n").unwrap();
    mnemo_in(dir.path())
        .arg("init")
        .assert()
        .success()
        .stderr(predicate::str::contains("kept"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "[budget]\ndefault_phases = 4\n"
    );
    assert_eq!(
        std::fs::read_to_string(bank.join("01-active-context.md")).unwrap(),
        "# Mine\n"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no temporary file is left behind: {leftovers:?}"
    );
}

#[test]
fn init_bank_follows_the_configured_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mnemo.toml"),
        "[paths]\nbank = \"memory\"\n",
    )
    .unwrap();
    let sub = dir.path().join("deep/er");
    std::fs::create_dir_all(&sub).unwrap();
    mnemo_in(dir.path()).arg("init").assert().success();
    assert!(dir.path().join("memory/01-active-context.md").is_file());
}

#[test]
fn config_is_found_upward_and_bad_values_are_rejected_with_key_path() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("a/b");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        dir.path().join("mnemo.toml"),
        "[scoring]\nmatching = \"substring\"\n",
    )
    .unwrap();
    mnemo_in(&sub)
        .args(["score", "--json", "--text", "subroute"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"keywords_found\":[\"route\"]"));
    mnemo_in(&sub)
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(predicate::str::contains("is valid"));

    std::fs::write(
        dir.path().join("mnemo.toml"),
        "[scoring.bands]\ncritical = 0.755\n",
    )
    .unwrap();
    mnemo_in(&sub)
        .args(["score", "--text", "x"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "mnemo.toml:2: `scoring.bands.critical`",
        ))
        .stderr(predicate::str::contains("hundredths"));
}

#[test]
fn a_team_roster_replaces_pantheons() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mnemo.toml"),
        "[agents]\nroster = [\"Planner\", \"Coder\"]\n[agents.relevance]\nplanner = { coder = 0.9 }\n\
         [[masks]]\nfrom = \"*\"\nto = \"*\"\nfields = [\"date\"]\n\n[[variants]]\nfrom = \"planner\"\nto = \"coder\"\ninclude = [\"summary\"]\n",
    )
    .unwrap();
    mnemo_in(dir.path())
        .args([
            "score",
            "--json",
            "--text",
            "Planned the API",
            "--from",
            "Planner",
            "--to",
            "coder",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"downstream\":0.9"));
}

#[test]
fn stats_counts_real_tokens() {
    let (mut c, _d) = mnemo();
    let out = c
        .args([
            "stats",
            "--json",
            "--text",
            "Hello world, this is a test of the system.",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["encoding"], "o200k_base");
    assert_eq!(v["tokens_estimate"], 10);
    assert_eq!(v["chars"], 42);
    assert_eq!(v["lines"], 1);
    let tokens = v["tokens"].as_u64().unwrap();
    assert!((9..=12).contains(&tokens), "{tokens}");
}
