//! ACS conformance through the real `mnemo guard http` and `mnemo guard
//! stdio` binaries: `tests/acs/run_vectors.py` replays every member of the
//! standard's ACS-Core vectors that can go on the wire (the PyPI package
//! `agent-evidence-vectors`, pinned in `.ci/setup.d/20-acs-vectors.sh`) and
//! mnemo's own members (`tests/acs/vectors/`), prints a table (vector,
//! expected, got, per transport), and fails on any difference from
//! `tests/acs/expected.tsv`. Rewrite that file with `--update` after a
//! reviewed change of behaviour.
//!
//! Members that judge the Observed Agent (what it applied after a MODIFY,
//! a gateway page read as a decision, a session started with no
//! ServerHello) are also played in the client role: a fake Guardian of the
//! runner's answers as the member says and the real `mnemo gate` is the
//! Observed Agent, over HTTP (`--guardian-url`) and over stdio
//! (`--guardian-cmd`, the fake run as a child) (statuses PASS-CLIENT,
//! N/A-CLIENT, FAIL-CLIENT). The runner also prints how far the Guardian's answer alone
//! can go on the reference runner's set (members with byte-identical
//! requests and opposite verdicts); the corpus test pins that figure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn acs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acs")
}

/// The corpus directory: `$ACS_VECTORS_DIR`, else the installed package's.
fn corpus() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("ACS_VECTORS_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import agent_evidence_vectors, os; print(os.path.dirname(agent_evidence_vectors.__file__))",
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let root = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    Some(root.join("corpora/vectors-acs-core"))
}

/// What the runner prints for the reference runner's set of agent-evidence-vectors
/// 0.27.0: its members grouped by their requests (byte-identical apart from
/// `session_id`) and the best score of any Guardian that sees only the wire.
const ANSWER_ALONE: &str = "answer alone: reference set 32 members, 17 request groups, \
    14 share their requests with a member expecting the opposite verdict, \
    best score by the answer alone 26 of 31 scored";

fn run(corpus: Option<&Path>, name: &str) -> String {
    let tmp = std::env::temp_dir().join(format!("mnemo-acs-{name}-{}", std::process::id()));
    let mut cmd = Command::new("python3");
    cmd.arg(acs_dir().join("run_vectors.py"))
        .arg("--mnemo")
        .arg(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--own")
        .arg(acs_dir().join("vectors"))
        .arg("--expected")
        .arg(acs_dir().join("expected.tsv"))
        .arg("--tmp")
        .arg(&tmp);
    if let Some(c) = corpus {
        cmd.arg("--corpus").arg(c);
    }
    let out = cmd.output().expect("python3 runs");
    let _ = std::fs::remove_dir_all(&tmp);
    println!("{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "conformance drifted from tests/acs/expected.tsv (see DRIFT lines above)"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn own_acs_vectors_over_http_and_stdio() {
    if !mnemo_testkit::require_command("python3", &["--version"], "the vector runner is Python") {
        return;
    }
    run(None, "own");
}

#[test]
fn acs_core_corpus_over_http_and_stdio() {
    if !mnemo_testkit::require_command("python3", &["--version"], "the vector runner is Python") {
        return;
    }
    let Some(dir) = corpus().filter(|d| d.join("MANIFEST.json").is_file()) else {
        mnemo_testkit::skip(
            "the ACS-Core vectors (pip install agent-evidence-vectors==0.27.0, or set ACS_VECTORS_DIR)",
        );
        return;
    };
    let table = run(Some(&dir), "corpus");
    assert!(
        table.lines().any(|l| l == ANSWER_ALONE),
        "the answer-alone figure changed: expected `{ANSWER_ALONE}`"
    );
    // Every member that judges the Observed Agent was played in the client
    // role, over both transports, with the same outcome: the protocol
    // logic of mnemo's client is one, whatever carries it.
    for set in ["sent by the reference runner", "on the wire"] {
        let counts = |t: &str| {
            let head =
                format!("client role ({t}), corpus members {set} that judge the Observed Agent: ");
            table
                .lines()
                .find_map(|l| l.strip_prefix(head.as_str()).map(str::to_string))
        };
        let http = counts("http");
        assert!(
            http.is_some(),
            "the client-role replay did not run on the members {set}"
        );
        assert_eq!(
            http,
            counts("stdio"),
            "the client role differs between HTTP and stdio on the members {set}"
        );
    }
    assert!(
        table.contains("client role (http), corpus members sent by the reference runner that judge the Observed Agent: 9: "),
        "the client-role replay did not run on the reference runner's 9 client members"
    );
}

#[test]
fn expectation_file_pins_every_own_member_as_passing() {
    // Our own members state what mnemo must do: none may be recorded as failing.
    let text = std::fs::read_to_string(acs_dir().join("expected.tsv")).unwrap();
    let mut own = 0;
    for line in text.lines().filter(|l| l.starts_with("mnemo-")) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols[1..], ["PASS", "PASS"], "{line}");
        own += 1;
    }
    let files = std::fs::read_dir(acs_dir().join("vectors"))
        .unwrap()
        .count();
    assert_eq!(own, files, "every own member has a row");
}
