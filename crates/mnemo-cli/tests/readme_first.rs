//! The README's first command runs as documented (with the built binary in
//! place of `cargo run -q --`, in a fresh copy of the files it reads): it
//! prints the gate's confirmation line and the handoff, writes only under
//! `target/`, and its second line is exactly what `.ci/run` runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let block = readme
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    block
        .lines()
        .map(|l| l.split("  #").next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn the_first_command_gates_the_batch_and_prints_the_handoff() {
    let first = readme_commands()[0].clone();
    assert!(
        first.contains(" gate ") && first.contains(" handoff "),
        "{first}"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("examples")).unwrap();
    std::fs::copy(
        repo().join("examples/phase-batch.md"),
        dir.path().join("examples/phase-batch.md"),
    )
    .unwrap();
    let bin = assert_cmd::cargo::cargo_bin("mnemo");
    let cmd = first.replace("cargo run -q --", &bin.display().to_string());
    for run in 0..2 {
        let out = std::process::Command::new("sh")
            .current_dir(dir.path())
            .env_remove("MNEMO_CONFIG")
            .args(["-c", &cmd])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            stdout.starts_with("Compression complete: 3 entries compressed (2 CRITICAL, 0 HIGH)"),
            "run {run}: {stdout}"
        );
        assert!(
            stdout.contains("## Compressed Context (Phase 2 → Phase 3)"),
            "{stdout}"
        );
        assert!(
            stdout.contains("\n\nDemeter tests: ✅ upgrade + downgrade verified"),
            "{stdout}"
        );
    }
    // Only target/ (ignored by git) and the copied example exist.
    let mut top: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(top, ["examples", "target"]);
    let ignore = std::fs::read_to_string(repo().join(".gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "/target"));
}

#[test]
fn the_second_command_is_what_ci_runs() {
    let second = readme_commands()[1].clone();
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == second),
        "{second:?} is not a line of .ci/run"
    );
}
