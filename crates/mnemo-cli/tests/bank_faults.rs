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
