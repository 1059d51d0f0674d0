#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Several `mnemo gate` processes on one bank at once: the lock serialises
//! them and nothing is lost.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const AGENTS: [&str; 8] = [
    "hermes",
    "demeter",
    "aphrodite",
    "themis",
    "prometheus",
    "hephaestus",
    "mnemosyne",
    "zeus",
];

fn summary(dir: &Path, i: usize) -> std::path::PathBuf {
    let p = dir.join(format!("s{i}.json"));
    let v = serde_json::json!({
        "agent": AGENTS[i],
        "files_changed": [format!("src/part{i}.rs")],
        "summary": format!("Added POST /api/part{i} endpoint and the part{i}_items table with column owner_id"),
        "status": "complete",
    });
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

fn gate(root: &Path, phase: &str, file: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    c.arg("--bank")
        .arg(root)
        .args([
            "gate",
            "--phase",
            phase,
            "--from",
            "hermes",
            "--to",
            "themis",
            "--date",
            "2026-06-22",
        ])
        .arg(file)
        .env_remove("MNEMO_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

#[test]
fn parallel_gates_serialise_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    mnemo_bank::init_bank(&root).unwrap();
    let files: Vec<_> = (0..AGENTS.len()).map(|i| summary(dir.path(), i)).collect();
    for round in 0..2 {
        let children: Vec<_> = files
            .iter()
            .enumerate()
            .map(|(i, f)| {
                gate(
                    &root,
                    &format!("3{}", (b'a' + u8::try_from(i).unwrap()) as char),
                    f,
                )
                .spawn()
                .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                String::from_utf8_lossy(&out.stdout)
                    .starts_with("Compression complete: 1 entries compressed")
            );
        }
    }
    let active = std::fs::read_to_string(root.join("01-active-context.md")).unwrap();
    let log = std::fs::read_to_string(root.join("02-progress-log.md")).unwrap();
    for (i, a) in AGENTS.iter().enumerate() {
        let phase = format!("3{}", (b'a' + u8::try_from(i).unwrap()) as char);
        assert_eq!(
            active
                .matches(&format!("mnemo:key=2026-06-22|{phase}|{a} "))
                .count(),
            1,
            "{a} lost or doubled"
        );
        assert_eq!(log.matches(&format!("— Phase {phase}: ")).count(), 1);
        assert!(
            root.join(format!(".tmp/ZZ-phase{phase}-context.md"))
                .exists()
        );
    }
    assert!(!root.join(".tmp/journal.json").exists());
    let doctor = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--bank")
        .arg(&root)
        .arg("doctor")
        .output()
        .unwrap();
    assert!(
        doctor.status.success(),
        "{}",
        String::from_utf8_lossy(&doctor.stderr)
    );
    println!(
        "concurrency: {} processes x 2 rounds, nothing lost",
        AGENTS.len()
    );
}

#[test]
fn a_held_lock_makes_a_gate_wait() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    mnemo_bank::init_bank(&root).unwrap();
    let bank = mnemo_bank::Bank::new(&root);
    let file = summary(dir.path(), 0);
    let before = std::fs::read(root.join("01-active-context.md")).unwrap();
    let lock = mnemo_bank::txn::lock(&bank, Duration::from_secs(5)).unwrap();
    let mut child = gate(&root, "1", &file).spawn().unwrap();
    let t = Instant::now();
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        child.try_wait().unwrap().is_none(),
        "gate ran without the lock"
    );
    assert_eq!(
        before,
        std::fs::read(root.join("01-active-context.md")).unwrap()
    );
    drop(lock);
    let status = child.wait().unwrap();
    assert!(status.success());
    assert!(t.elapsed() >= Duration::from_millis(400));
    assert_ne!(
        before,
        std::fs::read(root.join("01-active-context.md")).unwrap()
    );
}
