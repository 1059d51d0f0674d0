//! The environment variables `.ci/setup.d/*.sh` export for the OpenCode
//! tests and the ones those tests read are the same names: a name a test
//! reads that no setup script exports would leave the test on its default
//! path (a SKIPPED or a wrong binary under CI=true), and a name a setup
//! script exports that no test reads is a leftover of a rename.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const PREFIX: &str = "MNEMO_OPENCODE_";

/// Every `MNEMO_OPENCODE_*` name in `text`.
fn names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find(PREFIX) {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

/// The names `export`ed by a shell script (`export NAME=…` or `export NAME`).
fn exported(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("export "))
        .flat_map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            names(&name)
        })
        .collect()
}

fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "node_modules") {
                files(&p, exts, out);
            }
        } else if p
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| exts.contains(&x))
        {
            out.push(p);
        }
    }
}

#[test]
fn setup_scripts_export_the_opencode_names_the_tests_read() {
    let root = mnemo_testkit::workspace_root();
    let mut setup = Vec::new();
    files(&root.join(".ci/setup.d"), &["sh"], &mut setup);
    assert!(
        setup.iter().any(|p| p.ends_with("31-opencode.sh")),
        "no .ci/setup.d/31-opencode.sh under {}",
        root.display()
    );
    let mut exports = BTreeSet::new();
    for p in &setup {
        exports.extend(exported(&std::fs::read_to_string(p).unwrap_or_default()));
    }
    // What reads them: the Rust tests, their driver scripts, the plugin's
    // own tests.
    let mut tests = Vec::new();
    let crates = std::fs::read_dir(root.join("crates"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default();
    for c in crates {
        files(&c.join("tests"), &["rs", "sh", "py", "js"], &mut tests);
    }
    files(&root.join("integrations"), &["js", "ts", "sh"], &mut tests);
    let me = Path::new(file!()).file_name();
    let mut read = BTreeSet::new();
    for p in tests.iter().filter(|p| p.file_name() != me) {
        read.extend(names(&std::fs::read_to_string(p).unwrap_or_default()));
    }
    assert!(
        read.contains("MNEMO_OPENCODE_BIN"),
        "the OpenCode end-to-end test no longer reads MNEMO_OPENCODE_BIN: {read:?}"
    );
    let unset: Vec<&String> = read.difference(&exports).collect();
    assert!(
        unset.is_empty(),
        "tests read {unset:?}, which no .ci/setup.d script exports (exported: {exports:?})"
    );
    let unread: Vec<&String> = exports.difference(&read).collect();
    assert!(
        unread.is_empty(),
        "setup scripts export {unread:?}, which no test reads (read: {read:?})"
    );
}

#[test]
fn names_are_found_whole() {
    let n = names("a $MNEMO_OPENCODE_BIN, ${MNEMO_OPENCODE_PLUGIN_DEPS:-x} MNEMO_OPENCODE_BIN\"");
    assert_eq!(
        n.into_iter().collect::<Vec<_>>(),
        ["MNEMO_OPENCODE_BIN", "MNEMO_OPENCODE_PLUGIN_DEPS"]
    );
    let e = exported(
        "X=1\nexport MNEMO_OPENCODE_BIN=\"$P/bin\"\n  export MNEMO_OPENCODE_X\nMNEMO_OPENCODE_PREFIX=/opt\n",
    );
    assert_eq!(
        e.into_iter().collect::<Vec<_>>(),
        ["MNEMO_OPENCODE_BIN", "MNEMO_OPENCODE_X"]
    );
}
