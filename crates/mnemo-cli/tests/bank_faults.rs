#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Fault injection at the bank's edges, driving the real binary: something
//! that cannot be replaced in place of each target of a gate (a directory,
//! a read-only file, an immutable file, a symbolic link), a symlinked
//! `_xref/` or `.tmp/`. Every case must fail before anything is written,
//! name the path, give a hint, and leave the bank byte-identical; once the
//! obstacle is gone the same gate lands.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mnemo-bank/tests/fixtures")
        .join(name)
}

/// Every file under `root` (following no links) with its bytes, and every
/// directory, lock file excluded.
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let ft = e.file_type().unwrap();
            if rel == ".tmp/compress.lock" {
                continue;
            }
            if ft.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                stack.push(p);
            } else if ft.is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(format!("{rel} ->"), t.to_string_lossy().as_bytes().to_vec());
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn mnemo(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--bank")
        .arg(root)
        .args(args)
        .env_remove("MNEMO_CONFIG")
        .env_remove("MNEMO_FAILPOINT")
        .current_dir(root.parent().unwrap())
        .output()
        .unwrap()
}

fn gate2(root: &Path) -> Output {
    let mut args = vec![
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
    ];
    let files: Vec<String> = ["hermes.json", "demeter.yaml", "aphrodite.md"]
        .iter()
        .map(|f| fixture(f).display().to_string())
        .collect();
    args.extend(files.iter().map(String::as_str));
    mnemo(root, &args)
}

/// A bank with human text and a first phase (every target of gate 2 but
/// its ZZ artifact exists).
fn bank(dir: &Path) -> PathBuf {
    let root = dir.join("bank");
    mnemo_bank::init_bank(&root).unwrap();
    std::fs::write(
        root.join("01-active-context.md"),
        "# Active Context\n\n> Hand-written: keep.\n\n## Completed Phases\n\n",
    )
    .unwrap();
    let p = fixture("prometheus.json").display().to_string();
    let o = mnemo(
        &root,
        &[
            "gate",
            "--phase",
            "1",
            "--from",
            "hermes",
            "--to",
            "demeter",
            "--date",
            "2026-06-20",
            &p,
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    root
}

const TARGETS: [&str; 5] = [
    "01-active-context.md",
    "02-progress-log.md",
    "_xref/index.md",
    "_xref/_next_id.json",
    ".tmp/ZZ-phase2-context.md",
];

/// Clears the immutable flag again, even when an assertion fails (or the
/// temporary directory could not be removed).
struct Unchattr(PathBuf);
impl Drop for Unchattr {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

fn can_chattr(dir: &Path) -> bool {
    let probe = dir.join("probe");
    std::fs::write(&probe, "x").unwrap();
    let ok = Command::new("chattr")
        .arg("+i")
        .arg(&probe)
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        let _ = Command::new("chattr").arg("-i").arg(&probe).status();
    }
    std::fs::remove_file(&probe).unwrap();
    ok
}

#[derive(Debug, Clone, Copy)]
enum Obstacle {
    Directory,
    ReadOnly,
    Immutable,
    Symlink,
}

/// Puts the obstacle at `rel`; returns a guard for the immutable flag.
fn place(root: &Path, outside: &Path, rel: &str, o: Obstacle) -> Option<Unchattr> {
    let p = root.join(rel);
    match o {
        Obstacle::Directory => {
            let _ = std::fs::remove_file(&p);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("inside.md"), "# a person's file\n").unwrap();
            None
        }
        Obstacle::ReadOnly => {
            if !p.exists() {
                std::fs::write(&p, "# kept\n").unwrap();
            }
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
            None
        }
        Obstacle::Immutable => {
            if !p.exists() {
                std::fs::write(&p, "# kept\n").unwrap();
            }
            let ok = Command::new("chattr").arg("+i").arg(&p).status().unwrap();
            assert!(ok.success());
            Some(Unchattr(p))
        }
        Obstacle::Symlink => {
            let t = outside.join(rel.replace('/', "_"));
            // The link points at the file's own content, moved outside.
            let content = std::fs::read(&p).unwrap_or_else(|_| b"# outside the bank\n".to_vec());
            std::fs::write(&t, content).unwrap();
            let _ = std::fs::remove_file(&p);
            std::os::unix::fs::symlink(&t, &p).unwrap();
            None
        }
    }
}

fn remove(root: &Path, rel: &str, o: Obstacle, guard: Option<Unchattr>) {
    drop(guard);
    let p = root.join(rel);
    match o {
        Obstacle::Directory => std::fs::remove_dir_all(&p).unwrap(),
        Obstacle::ReadOnly => {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        Obstacle::Immutable => {}
        Obstacle::Symlink => std::fs::remove_file(&p).unwrap(),
    }
}

#[test]
fn an_unreplaceable_target_fails_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut kinds = vec![Obstacle::Directory, Obstacle::ReadOnly, Obstacle::Symlink];
    if can_chattr(dir.path()) {
        kinds.push(Obstacle::Immutable);
    } else {
        mnemo_testkit::skip("chattr +i is not possible here (needs root and ext4/xfs/tmpfs)");
    }
    let mut cases = 0;
    for (ki, kind) in kinds.iter().enumerate() {
        for (ti, rel) in TARGETS.iter().enumerate() {
            let case = dir.path().join(format!("case-{ki}-{ti}"));
            std::fs::create_dir_all(&case).unwrap();
            let outside = case.join("outside");
            std::fs::create_dir_all(&outside).unwrap();
            let root = bank(&case);
            let guard = place(&root, &outside, rel, *kind);
            let before = snapshot(&root);
            let outside_before = snapshot(&outside);
            let o = gate2(&root);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{kind:?} at {rel}: the gate succeeded");
            assert!(
                err.contains(&root.join(rel).display().to_string()),
                "{kind:?} at {rel}: the error does not name it: {err}"
            );
            assert!(err.contains("hint: "), "{kind:?} at {rel}: no hint: {err}");
            assert!(
                err.contains("nothing was written"),
                "{kind:?} at {rel}: {err}"
            );
            assert_eq!(before, snapshot(&root), "{kind:?} at {rel}: bank changed");
            assert_eq!(
                outside_before,
                snapshot(&outside),
                "{kind:?} at {rel}: wrote through"
            );
            // doctor leaves it as it is (and says nothing is half-done).
            let d = mnemo(&root, &["doctor"]);
            let out = String::from_utf8_lossy(&d.stdout);
            assert!(out.contains("0 journal ops finished"), "{out}");
            assert_eq!(
                before,
                snapshot(&root),
                "{kind:?} at {rel}: doctor changed it"
            );
            // Without the obstacle the same gate lands.
            remove(&root, rel, *kind, guard);
            let o = gate2(&root);
            assert!(
                o.status.success(),
                "{kind:?} at {rel}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let d = mnemo(&root, &["doctor"]);
            assert!(d.status.success(), "{}", String::from_utf8_lossy(&d.stderr));
            cases += 1;
        }
    }
    println!(
        "bank faults: {cases} obstacle cases ({} kinds × {} targets)",
        kinds.len(),
        TARGETS.len()
    );
}

#[test]
fn symlinked_xref_or_tmp_is_refused_not_written_through() {
    for sub in ["_xref", ".tmp"] {
        let dir = tempfile::tempdir().unwrap();
        let root = bank(dir.path());
        let outside = dir.path().join("elsewhere");
        // Move the directory out of the bank and link to it.
        std::fs::rename(root.join(sub), &outside).unwrap();
        if sub == ".tmp" {
            let _ = std::fs::remove_file(outside.join("compress.lock"));
        }
        std::os::unix::fs::symlink(&outside, root.join(sub)).unwrap();
        let before = snapshot(&root);
        let outside_before = snapshot(&outside);
        for args in [&["doctor"][..], &["trim", "--date", "2026-06-21"][..]] {
            let o = mnemo(&root, args);
            let err = String::from_utf8_lossy(&o.stderr);
            if sub == ".tmp" {
                assert!(!o.status.success(), "{sub}: {args:?} succeeded");
                assert!(err.contains("symbolic link"), "{sub}: {err}");
            }
        }
        let o = gate2(&root);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success(),
            "{sub}: the gate wrote through the link"
        );
        assert!(err.contains("symbolic link"), "{sub}: {err}");
        assert!(
            err.contains(&root.join(sub).display().to_string()),
            "{sub}: {err}"
        );
        assert!(err.contains("hint: "), "{sub}: {err}");
        assert_eq!(before, snapshot(&root), "{sub}");
        assert_eq!(outside_before, snapshot(&outside), "{sub}: written through");
    }
}

fn gate_with(root: &Path, config: Option<&Path>, summary: &str) -> Output {
    let mut args: Vec<String> = Vec::new();
    if let Some(c) = config {
        args.push("--config".into());
        args.push(c.display().to_string());
    }
    args.extend(
        [
            "gate",
            "--phase",
            "3",
            "--from",
            "hermes",
            "--to",
            "aphrodite",
            "--date",
            "2026-06-22",
            summary,
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    mnemo(root, &args)
}

#[test]
fn nul_bytes_are_refused_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = bank(dir.path());
    let before = snapshot(&root);
    let raw = dir.path().join("raw.md");
    std::fs::write(
        &raw,
        "## subtask_summary\n**agent:** hermes\n**summary:** Added the login \0endpoint\n",
    )
    .unwrap();
    let escaped = dir.path().join("escaped.json");
    std::fs::write(
        &escaped,
        "{\n  \"agent\": \"hermes\",\n  \"summary\": \"Added the login \\u0000 endpoint\"\n}\n",
    )
    .unwrap();
    for (f, line) in [(&raw, 3), (&escaped, 3)] {
        let o = gate_with(&root, None, &f.display().to_string());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(&format!("{}:{line}", f.display())), "{err}");
        assert!(err.contains("NUL"), "{err}");
        assert_eq!(before, snapshot(&root));
    }
}

#[test]
fn oversized_summaries_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = bank(dir.path());
    let before = snapshot(&root);
    // Configured limit.
    // Not beside the bank: mnemo.toml is found upward from the working
    // directory.
    std::fs::create_dir_all(dir.path().join("conf")).unwrap();
    let config = dir.path().join("conf/mnemo.toml");
    std::fs::write(&config, "[budget]\nmax_summary_bytes = 1000\n").unwrap();
    let big = dir.path().join("big.json");
    let text = format!(
        "{{\"agent\": \"hermes\", \"summary\": \"Added {}\"}}\n",
        "the login endpoint ".repeat(100)
    );
    std::fs::write(&big, &text).unwrap();
    let o = gate_with(&root, Some(&config), &big.display().to_string());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&big.display().to_string()), "{err}");
    assert!(err.contains("over the limit of 1000 bytes"), "{err}");
    assert!(err.contains("max_summary_bytes"), "{err}");
    assert!(err.contains("hint: "), "{err}");
    assert_eq!(before, snapshot(&root));
    // The same summary is fine under the default limit (1 MiB).
    let o = gate_with(&root, None, &big.display().to_string());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = snapshot(&root);
    // 200 MB (sparse): refused from its size at once, never read.
    let huge = dir.path().join("huge.md");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(200_000_000)
        .unwrap();
    let t = std::time::Instant::now();
    let o = gate_with(&root, None, &huge.display().to_string());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("200000000 bytes"), "{err}");
    assert!(t.elapsed() < std::time::Duration::from_secs(20));
    // Standard input: cut off after the limit.
    let mut child = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--bank")
        .arg(&root)
        .args(["--config"])
        .arg(&config)
        .args([
            "gate",
            "--phase",
            "3",
            "--from",
            "hermes",
            "--to",
            "aphrodite",
            "-",
        ])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(text.as_bytes());
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("<stdin>") && err.contains("over the limit"),
        "{err}"
    );
    assert_eq!(before, snapshot(&root));
}

struct Umount(PathBuf);
impl Drop for Umount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A gate on a full disk fails, names the file, and leaves no empty stage
/// file (and no other change) behind.
#[test]
fn a_full_disk_leaves_the_bank_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=512k", "tmpfs"])
        .arg(&mnt)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        mnemo_testkit::skip("cannot mount a small tmpfs (needs root: CI runs as root)");
        return;
    }
    let _guard = Umount(mnt.clone());
    let root = bank(&mnt);
    // Fill the rest of the file system.
    {
        use std::io::Write as _;
        let mut f = std::fs::File::create(mnt.join("filler")).unwrap();
        let chunk = vec![b'x'; 4096];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
    }
    let before = snapshot(&root);
    let o = gate2(&root);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains(&root.display().to_string()), "{err}");
    assert_eq!(
        before,
        snapshot(&root),
        "a failed gate on a full disk changed the bank"
    );
    // Room again: the gate lands.
    std::fs::remove_file(mnt.join("filler")).unwrap();
    let o = gate2(&root);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// What the user sees: a commit undone after its commit point says so, and
/// a journal that can be neither finished nor undone stops every command
/// with a hint, which `doctor` repeats as a problem; the hint works.
#[test]
fn rollbacks_and_stuck_journals_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let root = bank(dir.path());
    let before = snapshot(&root);
    // Trace the gate's steps; fail the first rename after the commit point.
    let mut args: Vec<String> = vec![
        "gate",
        "--phase",
        "2",
        "--from",
        "hermes",
        "--to",
        "aphrodite",
        "--date",
        "2026-06-21",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    args.push(fixture("hermes.json").display().to_string());
    let run = |fp: &str| {
        Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .arg("--bank")
            .arg(&root)
            .args(&args)
            .env("MNEMO_FAILPOINT", fp)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let steps = String::from_utf8_lossy(&run("trace").stderr).into_owned();
    // The traced run landed: go back to before for the real case.
    let rename = steps
        .lines()
        .find(|l| l.contains("rename over"))
        .and_then(|l| l.strip_prefix("mnemo-failpoint "))
        .and_then(|l| l.split(':').next())
        .unwrap()
        .to_string();
    for p in mnemo_bank::txn::walk(&root) {
        std::fs::remove_file(p).unwrap();
    }
    for (rel, bytes) in &before {
        if !rel.ends_with('/') && !rel.ends_with(" ->") {
            std::fs::write(root.join(rel), bytes).unwrap();
        }
    }
    assert_eq!(before, snapshot(&root));
    let o = run(&format!("error@{rename}"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("the commit was rolled back"), "{err}");
    assert!(err.contains("hint: "), "{err}");
    assert_eq!(before, snapshot(&root));

    // A version-1 journal (no backups) whose target is a directory.
    std::fs::write(root.join(".tmp/.x.md.mnemo-stage-1-2-3.tmp"), "# X\n").unwrap();
    std::fs::create_dir(root.join("x.md")).unwrap();
    std::fs::write(
        root.join(".tmp/journal.json"),
        r#"{"version":1,"ops":[{"op":"rename","staged":".tmp/.x.md.mnemo-stage-1-2-3.tmp","target":"x.md"}]}"#,
    )
    .unwrap();
    let o = mnemo(&root, &["trim", "--date", "2026-06-21"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("journal.json") && err.contains("x.md"),
        "{err}"
    );
    assert!(
        err.contains("hint: ") && err.contains("mnemo doctor"),
        "{err}"
    );
    let d = mnemo(&root, &["doctor"]);
    let derr = String::from_utf8_lossy(&d.stderr);
    assert_eq!(d.status.code(), Some(1), "{derr}");
    assert!(
        derr.contains("problem: ") && derr.contains("hint: "),
        "{derr}"
    );
    // Following the hint (move the directory away) and running doctor fixes it.
    std::fs::rename(root.join("x.md"), dir.path().join("x.md-moved")).unwrap();
    let d = mnemo(&root, &["doctor"]);
    assert!(d.status.success(), "{}", String::from_utf8_lossy(&d.stderr));
    assert!(String::from_utf8_lossy(&d.stdout).contains("1 journal ops finished"));
    assert!(!root.join(".tmp/journal.json").exists());
}
