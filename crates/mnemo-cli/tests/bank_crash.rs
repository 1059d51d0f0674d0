#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Crash and fault suite for the bank's commit, deterministic: every
//! filesystem mutation of a commit is a numbered step (`mnemo_bank::failpoint`,
//! feature `failpoints`, on for tests), and `MNEMO_FAILPOINT` makes a real
//! `mnemo gate` kill itself with SIGKILL just before step N (`kill@N`) or
//! fail at step N (`error@N`). Every step is hit both ways, and so are the
//! steps of a roll-forward and of a rollback interrupted in turn. After each
//! case every file of the bank must be exactly as before the gate or exactly
//! as after it: before the commit point → before, after it → after, an
//! error → before (the command rolls itself back); a person's text, note
//! and `*.tmp` file are in both, so nothing a user wrote is lost.
//!
//! (It replaces a time-based test that killed gates at random instants and
//! needed 200 kills within a time limit, which failed under load.)

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mnemo-bank/tests/fixtures")
        .join(name)
}

type Snap = BTreeMap<String, Vec<u8>>;

fn snapshot(root: &Path) -> Snap {
    mnemo_bank::txn::walk(root)
        .into_iter()
        .filter(|p| !p.ends_with(".tmp/compress.lock"))
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (rel, std::fs::read(&p).unwrap())
        })
        .collect()
}

fn restore(from: &Snap, root: &Path) {
    let _ = std::fs::remove_dir_all(root);
    for (rel, bytes) in from {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

fn mnemo(root: &Path, failpoint: Option<&str>, args: &[String]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    c.arg("--bank")
        .arg(root)
        .arg("--quiet")
        .args(args)
        .env_remove("MNEMO_CONFIG")
        // A killed process must not leave a core file in the checkout.
        .current_dir(root.parent().unwrap());
    match failpoint {
        Some(f) => c.env("MNEMO_FAILPOINT", f),
        None => c.env_remove("MNEMO_FAILPOINT"),
    };
    c.output().unwrap()
}

fn gate_args() -> Vec<String> {
    let mut a: Vec<String> = [
        "gate",
        "--phase",
        "2",
        "--from",
        "hermes,demeter",
        "--to",
        "aphrodite",
        "--date",
        "2026-06-21",
        "--feature",
        "auth",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for f in [
        "hermes.json",
        "demeter.yaml",
        "aphrodite.md",
        "partial.json",
    ] {
        a.push(fixture(f).display().to_string());
    }
    a
}

fn doctor(root: &Path, failpoint: Option<&str>) -> Output {
    mnemo(root, failpoint, &["doctor".to_string()])
}

/// The steps a run went through (`mnemo-failpoint N: what` on stderr).
fn steps(o: &Output) -> Vec<(u32, String)> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("mnemo-failpoint "))
        .filter_map(|l| {
            let (n, what) = l.split_once(": ")?;
            Some((n.parse().ok()?, what.to_string()))
        })
        .collect()
}

fn killed(o: &Output) -> bool {
    o.status.signal() == Some(9)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Before,
    After,
}

fn side(now: &Snap, before: &Snap, after: &Snap) -> Result<Side, String> {
    if now == after {
        return Ok(Side::After);
    }
    if now == before {
        return Ok(Side::Before);
    }
    let bad: Vec<&String> = after
        .keys()
        .chain(before.keys())
        .chain(now.keys())
        .filter(|k| now.get(*k) != after.get(*k) && now.get(*k) != before.get(*k))
        .collect();
    Err(format!("damaged files {bad:?}"))
}

struct Case {
    name: String,
    /// The failpoint of the gate.
    gate: String,
    /// A failpoint for the first recovery (`doctor`), if any.
    recovery: Option<String>,
    expect: Side,
    /// Whether the gate itself must fail (exit 1, no kill).
    gate_fails: bool,
}

/// Runs one case on its own copy of `before`.
fn run(dir: &Path, i: usize, c: &Case, before: &Snap, after: &Snap) -> Result<(), String> {
    let root = dir.join(format!("case-{i}")).join("bank");
    restore(before, &root);
    let o = mnemo(&root, Some(&c.gate), &gate_args());
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if c.gate_fails {
        if o.status.code() != Some(1) {
            return Err(format!("{}: gate did not fail cleanly: {err}", c.name));
        }
        if !err.contains("injected failure") {
            return Err(format!(
                "{}: the error does not say what failed: {err}",
                c.name
            ));
        }
        // The failed command cleaned up after itself: no recovery needed.
        let now = snapshot(&root);
        if now != *before {
            return Err(format!(
                "{}: a failed gate changed the bank: {:?}",
                c.name,
                side(&now, before, after)
            ));
        }
    } else if c.gate.contains("kill@") && !killed(&o) {
        return Err(format!("{}: gate was not killed: {err}", c.name));
    }
    if let Some(f) = &c.recovery {
        let d = doctor(&root, Some(f));
        if !killed(&d) {
            return Err(format!("{}: recovery was not killed", c.name));
        }
    }
    let d = doctor(&root, None);
    if !d.status.success() {
        return Err(format!(
            "{}: doctor after recovery: {}{}",
            c.name,
            String::from_utf8_lossy(&d.stdout),
            String::from_utf8_lossy(&d.stderr)
        ));
    }
    let now = snapshot(&root);
    match side(&now, before, after) {
        Ok(s) if s == c.expect => {}
        Ok(s) => return Err(format!("{}: expected {:?}, got {s:?}", c.name, c.expect)),
        Err(e) => return Err(format!("{}: {e}", c.name)),
    }
    // Nothing of mnemo's is left behind.
    if let Some(p) = now
        .keys()
        .find(|k| k.contains(".mnemo-") || k.ends_with("journal.json"))
    {
        return Err(format!("{}: left {p}", c.name));
    }
    let _ = std::fs::remove_dir_all(root.parent().unwrap());
    Ok(())
}

#[test]
fn kill_minus_nine_and_errors_at_every_step_are_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    // Before: a bank with human text, a person's note, a person's *.tmp
    // file, and a first phase.
    mnemo_bank::init_bank(&root).unwrap();
    let human = "# Active Context\n\n> Hand-written: keep.\n\n## Current Focus\nAuth.\n\n## Completed Phases\n\n";
    std::fs::write(root.join("01-active-context.md"), human).unwrap();
    std::fs::write(root.join("_xref/ideas.tmp"), "a person's draft\n").unwrap();
    let first: Vec<String> = [
        "gate",
        "--phase",
        "1",
        "--from",
        "hermes",
        "--to",
        "demeter",
        "--date",
        "2026-06-20",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([fixture("prometheus.json").display().to_string()])
    .collect();
    let o = mnemo(&root, None, &first);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = snapshot(&root);

    // The full gate, traced: its steps, and the bank after it.
    let traced = mnemo(&root, Some("trace"), &gate_args());
    assert!(
        traced.status.success(),
        "{}",
        String::from_utf8_lossy(&traced.stderr)
    );
    let all = steps(&traced);
    assert!(
        all.len() >= 10,
        "the binary has no failpoints (feature `failpoints`): {all:?}"
    );
    let after = snapshot(&root);
    assert_ne!(before, after);
    let commit_point = all
        .iter()
        .find(|(_, w)| w.starts_with("commit point"))
        .map(|(n, _)| *n)
        .unwrap();
    let total = all.last().unwrap().0;
    for (n, w) in &all {
        println!("step {n}: {w}");
    }

    let mut cases = Vec::new();
    for (n, what) in &all {
        // kill -9 just before step n: before the commit point's rename the
        // bank is as before, from then on recovery finishes the commit.
        cases.push(Case {
            name: format!("kill@{n} ({what})"),
            gate: format!("kill@{n}"),
            recovery: None,
            expect: if *n <= commit_point {
                Side::Before
            } else {
                Side::After
            },
            gate_fails: false,
        });
        // An error at step n: the command fails and rolls back, except in
        // the clean-up after the commit has landed (removing backups).
        let cleanup = what.starts_with("remove the backup");
        cases.push(Case {
            name: format!("error@{n} ({what})"),
            gate: format!("error@{n}"),
            recovery: None,
            expect: if cleanup { Side::After } else { Side::Before },
            gate_fails: !cleanup,
        });
    }
    // A kill after the commit point, then the recovery killed at each of
    // its steps: the next recovery still finishes the commit.
    let post = commit_point + 1;
    let sdir = dir.path().join("probe-recovery");
    let sroot = sdir.join("bank");
    restore(&before, &sroot);
    assert!(killed(&mnemo(
        &sroot,
        Some(&format!("kill@{post}")),
        &gate_args()
    )));
    let rsteps = steps(&doctor(&sroot, Some("trace")));
    assert!(!rsteps.is_empty());
    for (m, what) in &rsteps {
        cases.push(Case {
            name: format!("kill@{post} then recovery kill@{m} ({what})"),
            gate: format!("kill@{post}"),
            recovery: Some(format!("kill@{m}")),
            expect: Side::After,
            gate_fails: false,
        });
    }
    // The gate log's line is appended in place (no staged file, no
    // backup): the journal holds its old length.
    assert!(
        all.iter()
            .any(|(_, w)| w == "append to _xref/gate-log.jsonl"),
        "{all:?}"
    );
    // An error at the last rename or append, then the rollback killed at
    // each of its steps: the next recovery finishes the rollback.
    let last_rename = all
        .iter()
        .filter(|(_, w)| w.starts_with("rename over") || w.starts_with("append to"))
        .map(|(n, _)| *n)
        .max()
        .unwrap();
    restore(&before, &sroot);
    let rb = mnemo(
        &sroot,
        Some(&format!("error@{last_rename},trace")),
        &gate_args(),
    );
    let rollback_steps: Vec<(u32, String)> = steps(&rb)
        .into_iter()
        .filter(|(n, _)| *n > last_rename)
        .collect();
    assert!(!rollback_steps.is_empty());
    for (m, what) in &rollback_steps {
        cases.push(Case {
            name: format!("error@{last_rename} then kill@{m} ({what})"),
            gate: format!("error@{last_rename},kill@{m}"),
            recovery: None,
            // Killed before the rollback is recorded in the journal, the
            // commit is still `forward`: recovery (where the injected error
            // does not recur) finishes it. Once recorded, it is undone.
            expect: if what.starts_with("mark the journal for rollback") {
                Side::After
            } else {
                Side::Before
            },
            gate_fails: false,
        });
    }

    // Run the cases, four at a time.
    let failures = std::sync::Mutex::new(Vec::new());
    let counts = std::sync::Mutex::new((0u32, 0u32));
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(c) = cases.get(i) else { break };
                    match run(dir.path(), i, c, &before, &after) {
                        Ok(()) => {
                            let mut k = counts.lock().unwrap();
                            match c.expect {
                                Side::Before => k.0 += 1,
                                Side::After => k.1 += 1,
                            }
                        }
                        Err(e) => failures.lock().unwrap().push(e),
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let (rolled_back, landed) = counts.into_inner().unwrap();
    println!(
        "crash suite: {} cases over {total} commit steps (commit point at step {commit_point}), {} recovery steps, {} rollback steps; {landed} landed whole, {rolled_back} as before; {} failed",
        cases.len(),
        rsteps.len(),
        rollback_steps.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}
