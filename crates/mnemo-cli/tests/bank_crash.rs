#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Crash test: real `mnemo gate` processes are killed with SIGKILL at random
//! instants (deterministic seed); after recovery (`mnemo doctor`) every file
//! of the bank must be exactly as before the gate or exactly as after it
//! (all or nothing).
//!
//! Loading the secret scrubber dominates a debug-build gate (about half a
//! second) and happens before the gate takes the bank lock, so the test
//! keeps a few gates pre-loaded, each on its own bank whose lock the test
//! holds; it releases one lock and kills that gate at a random instant of
//! its locked work (recover, read, compute, stage, journal, rename).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mnemo-bank/tests/fixtures")
        .join(name)
}

fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    mnemo_bank::txn::walk(root)
        .into_iter()
        .filter(|p| !p.ends_with(".tmp/compress.lock"))
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (rel, std::fs::read(&p).unwrap())
        })
        .collect()
}

/// Puts the bank back to `from`, keeping the lock file (its inode is what
/// the held lock protects).
fn restore(from: &BTreeMap<String, Vec<u8>>, root: &Path) {
    for p in mnemo_bank::txn::walk(root) {
        if !p.ends_with(".tmp/compress.lock") {
            std::fs::remove_file(p).unwrap();
        }
    }
    for (rel, bytes) in from {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

fn gate_cmd(root: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    c.arg("--bank")
        .arg(root)
        .args([
            "--quiet",
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
        ])
        .arg(fixture("hermes.json"))
        .arg(fixture("demeter.yaml"))
        .arg(fixture("aphrodite.md"))
        .arg(fixture("partial.json"))
        .env_remove("MNEMO_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

fn doctor(root: &Path) {
    let ok = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--bank")
        .arg(root)
        .args(["--quiet", "doctor"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success(), "doctor found problems after recovery");
}

/// xorshift64*, fixed seed: the same kill instants on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

struct Slot {
    root: PathBuf,
    bank: mnemo_bank::Bank,
    lock: Option<mnemo_bank::BankLock>,
    child: Option<Child>,
    spawned: Instant,
}

impl Slot {
    fn new(root: PathBuf, before: &BTreeMap<String, Vec<u8>>) -> Slot {
        std::fs::create_dir_all(&root).unwrap();
        let bank = mnemo_bank::Bank::new(&root);
        let lock = mnemo_bank::txn::lock(&bank, Duration::from_secs(30)).unwrap();
        let mut s = Slot {
            root,
            bank,
            lock: Some(lock),
            child: None,
            spawned: Instant::now(),
        };
        s.arm(before);
        s
    }

    /// With the lock held: bank back to `before`, a new gate spawned (it
    /// loads, then waits for the lock).
    fn arm(&mut self, before: &BTreeMap<String, Vec<u8>>) {
        restore(before, &self.root);
        self.child = Some(gate_cmd(&self.root).spawn().unwrap());
        self.spawned = Instant::now();
    }

    /// Waits until the gate has loaded and waits for the lock (on Linux: it
    /// has the lock file open; elsewhere: a little longer than a full run).
    fn wait_loaded(&self, full: Duration) {
        let Some(child) = &self.child else { return };
        let fd_dir = PathBuf::from(format!("/proc/{}/fd", child.id()));
        if !Path::new("/proc/self/fd").is_dir() {
            std::thread::sleep((full + full / 4).saturating_sub(self.spawned.elapsed()));
            return;
        }
        let limit = Instant::now() + Duration::from_secs(20);
        while Instant::now() < limit {
            let open = std::fs::read_dir(&fd_dir)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| {
                    std::fs::read_link(e.path()).is_ok_and(|t| t.ends_with(".tmp/compress.lock"))
                });
            if open {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Releases the lock; kills the gate at `when` unless it is done.
    /// Returns whether it was killed, how long the locked work ran, and
    /// how long after its first staged file it ended.
    fn fire(&mut self, when: Kill) -> (bool, Duration, Option<Duration>) {
        let mut child = self.child.take().unwrap();
        let t0 = Instant::now();
        self.lock = None;
        let mut killed = false;
        let mut staged_at = None;
        let mut kill_at = match when {
            Kill::After(d) => Some(t0 + d),
            Kill::Never | Kill::AfterStaged(_) | Kill::AfterJournal(_) => None,
        };
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            let now = Instant::now();
            if staged_at.is_none() && staged(&self.root) {
                staged_at = Some(now);
                if let Kill::AfterStaged(d) = when {
                    kill_at = Some(now + d);
                }
            }
            if let Kill::AfterJournal(d) = when
                && kill_at.is_none()
                && self.root.join(".tmp/journal.json").exists()
            {
                kill_at = Some(now + d);
            }
            if kill_at.is_some_and(|k| now >= k) {
                child.kill().unwrap(); // SIGKILL
                killed = true;
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let _ = child.wait();
        let end = Instant::now();
        doctor(&self.root);
        self.lock = Some(mnemo_bank::txn::lock(&self.bank, Duration::from_secs(30)).unwrap());
        (killed, end - t0, staged_at.map(|s| end - s))
    }
}

/// When to kill.
#[derive(Clone, Copy)]
enum Kill {
    Never,
    /// This long after the lock is released.
    After(Duration),
    /// This long after the first staged file appears (the commit).
    AfterStaged(Duration),
    /// This long after the journal appears (the commit point).
    AfterJournal(Duration),
}

/// Whether a staged file or the journal exists (the gate is committing).
fn staged(root: &Path) -> bool {
    [root.to_path_buf(), root.join(".tmp")].iter().any(|d| {
        std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.contains(".mnemo-stage-") || n == "journal.json"
            })
    })
}

#[test]
fn kill_minus_nine_at_random_instants_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    // Before: a bank with human text and a first phase.
    mnemo_bank::init_bank(&root).unwrap();
    let human = "# Active Context\n\n> Hand-written: keep.\n\n## Current Focus\nAuth.\n\n## Completed Phases\n\n";
    std::fs::write(root.join("01-active-context.md"), human).unwrap();
    let first = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--bank")
        .arg(&root)
        .args([
            "gate",
            "--phase",
            "1",
            "--from",
            "hermes",
            "--to",
            "demeter",
            "--date",
            "2026-06-20",
        ])
        .arg(fixture("prometheus.json"))
        .status()
        .unwrap();
    assert!(first.success());
    let before = snapshot(&root);
    let t = Instant::now();
    assert!(gate_cmd(&root).status().unwrap().success());
    let full = t.elapsed();
    let after = snapshot(&root);
    assert_ne!(before, after);

    let mut slots: Vec<Slot> = (0..3)
        .map(|i| Slot::new(dir.path().join(format!("bank-{i}")), &before))
        .collect();
    // Warm-up: how long the locked part of a gate takes.
    let mut locked = Duration::MAX;
    let mut commit = Duration::MAX;
    for s in &mut slots {
        s.wait_loaded(full);
        let (_, ran, committing) = s.fire(Kill::Never);
        assert_eq!(snapshot(&s.root), after);
        locked = locked.min(ran);
        commit = commit.min(committing.unwrap_or(ran));
        s.arm(&before);
    }
    let window = u64::try_from(locked.as_micros()).unwrap().max(1000) * 9 / 10;
    let commit_window = u64::try_from(commit.as_micros()).unwrap().max(100) * 9 / 10;

    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut runs, mut kills, mut landed, mut rolled_back, mut damaged) =
        (0u32, 0u32, 0u32, 0u32, 0u32);
    let deadline = Instant::now() + Duration::from_secs(150);
    while kills < 200 && Instant::now() < deadline {
        let s = &mut slots[usize::try_from(runs).unwrap() % 3];
        runs += 1;
        // Let the gate finish loading so the kill lands in its locked work.
        s.wait_loaded(full);
        // A third of the instants anywhere in the locked work, a third in
        // the commit, a third after its commit point (the journal).
        let when = match rng.next() % 3 {
            0 => Kill::After(Duration::from_micros(rng.next() % window)),
            1 => Kill::AfterStaged(Duration::from_micros(rng.next() % commit_window)),
            _ => Kill::AfterJournal(Duration::from_micros(rng.next() % (commit_window / 3 + 1))),
        };
        let (killed, _, _) = s.fire(when);
        kills += u32::from(killed);
        let now = snapshot(&s.root);
        if now == after {
            landed += 1;
        } else if now == before {
            rolled_back += 1;
        } else {
            let bad: Vec<&String> = after
                .keys()
                .chain(before.keys())
                .chain(now.keys())
                .filter(|k| now.get(*k) != after.get(*k) && now.get(*k) != before.get(*k))
                .collect();
            eprintln!("run {runs}: damaged files {bad:?}");
            damaged += u32::try_from(bad.len().max(1)).unwrap();
        }
        s.arm(&before);
    }
    for s in &mut slots {
        if let Some(mut c) = s.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    println!(
        "crash test: {kills} kills in {runs} runs (gate {full:?}, locked work {locked:?}, commit {commit:?}); {landed} landed whole, {rolled_back} rolled back, {damaged} damaged files"
    );
    assert_eq!(damaged, 0);
    assert!(kills >= 200, "only {kills} kills before the time limit");
    assert!(
        landed > 0 && rolled_back > 0,
        "kills must land on both sides of the commit point"
    );
}
