//! Property test: `mnemo inline` (the library, with the scrubber left out)
//! against a reference model of Pantheon's `compress-inline.py`
//! (`reference_model.py`, Python's own argparse, `re`, `splitlines` and
//! `strip`), on 10,000 random command lines (`MNEMO_DIFF_CASES` to change
//! the number): text that mixes the keywords, their case-folded and
//! whitespace-split forms, `API`/`CSS` beside word characters, blocker
//! words, every Python line break and whitespace, non-ASCII letters and
//! marks; agents in any case and padding; files that exist, are missing,
//! are directories or are not UTF-8; options spelled in full, abbreviated,
//! with `=`, out of order, with stray `--`, `-x`, `-5` and `-h`. Every exit
//! status, standard output and standard error must be equal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use mnemo_inline::script::{self, Env, Outcome, ReadError};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};

struct Files;

impl Env for Files {
    fn read(&self, path: &str) -> Result<String, ReadError> {
        match std::fs::read(path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(t) => Ok(t.replace("\r\n", "\n").replace('\r', "\n")),
                Err(e) => Err(ReadError::Decode(mnemo_inline::python_utf8_error(&e))),
            },
            Err(e) => Err(ReadError::Os(mnemo_inline::python_os_error(path, &e))),
        }
    }
    fn scrub(&self, text: &str) -> String {
        text.to_string()
    }
}

const WORDS: &[&str] = &[
    "schema",
    "migration",
    "new",
    "table",
    "column",
    "file",
    "auth",
    "login",
    "permission",
    "role",
    "JWT",
    "OAuth",
    "password",
    "encrypt",
    "token",
    "security",
    "index",
    "foreign",
    "key",
    "constraint",
    "endpoint",
    "route",
    "API",
    "service",
    "refactor",
    "rename",
    "delete",
    "deprecated",
    "config",
    "Docker",
    "deploy",
    "CSS",
    "style",
    "typo",
    "comment",
    "README",
    "docstring",
    "blocked",
    "unblocked",
    "unblock",
    "blocker",
    "blocking",
    "depend",
    "dependency",
    "dependencies",
    "independent",
    "API_KEY",
    "OPENAI_API_KEY",
    "CSS3",
    "ſchema",
    "ſervice",
    "DOC\u{212a}ER",
    "LOGİN",
    "loġin",
    "rolé",
    "apis",
    "éAPI",
    "Fixed",
    "the",
    "users",
    "for",
    "Added",
    "x",
    "café",
    "ǅ",
    "٣",
    "_",
    "-",
    "--",
    "-x",
    "-5",
    "…",
    "😀",
    "\u{345}",
    "Ⓐ",
    "\u{200b}",
    "\u{feff}",
];

const SPACES: &[&str] = &[
    " ", "  ", "\t", "\n", "\r", "\r\n", "\u{0b}", "\u{0c}", "\u{1c}", "\u{1d}", "\u{1e}",
    "\u{1f}", "\u{85}", "\u{a0}", "\u{2028}", "\u{2029}", "\u{3000}", "", ".", ",", "/", "(",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(String::new()),
        1 => proptest::collection::vec(proptest::sample::select(SPACES), 1..4).prop_map(|v| v.concat()),
        8 => proptest::collection::vec(
            (proptest::sample::select(WORDS), proptest::sample::select(SPACES), any::<bool>()),
            1..14
        )
        .prop_map(|v| {
            v.into_iter()
                .map(|(w, s, up)| {
                    let w = if up { w.to_uppercase() } else { w.to_string() };
                    format!("{w}{s}")
                })
                .collect::<String>()
        }),
        1 => "\\PC{0,120}",
        1 => "[a-z ]{81,100}",
    ]
}

fn agent() -> impl Strategy<Value = Option<String>> {
    const NAMES: &[&str] = &[
        "hermes",
        "aphrodite",
        "demeter",
        "themis",
        "mnemosyne",
        "hephaestus",
        "prometheus",
        "zeus",
        "",
        " ",
    ];
    prop_oneof![
        1 => Just(None),
        4 => (proptest::sample::select(NAMES), any::<bool>(), proptest::sample::select(&["", " ", "\u{1f}", "\t", "\u{a0}"][..]))
            .prop_map(|(n, up, pad)| Some(format!("{pad}{}{pad}", if up { n.to_uppercase() } else { n.to_string() }))),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    argv: Vec<String>,
}

/// Builds a `--files` value over the fixture directory.
fn files_value(dir: &Path, picks: &[(u8, String)]) -> String {
    picks
        .iter()
        .map(|(k, junk)| match k % 8 {
            0 => dir.join("a.md").display().to_string(),
            1 => format!(" {} ", dir.join("b.txt").display()),
            2 => dir.join("empty.md").display().to_string(),
            3 => dir.join("latin1.md").display().to_string(),
            4 => dir.join("sub").display().to_string(),
            5 => dir.join(format!("missing{junk}")).display().to_string(),
            6 => String::new(),
            _ => format!("f{junk}.py"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn case(dir: PathBuf) -> impl Strategy<Value = Case> {
    let mode = prop_oneof![
        6 => proptest::sample::select(&["score", "compress", "stats", "batch"][..]).prop_map(str::to_string),
        1 => proptest::sample::select(&["bogus", "SCORE", "-", "scrubx"][..]).prop_map(str::to_string),
    ];
    (
        mode,
        proptest::option::weighted(0.9, text()),
        proptest::option::weighted(
            0.6,
            proptest::collection::vec((any::<u8>(), "[a-z'\"\\\\ \u{e9}\t]{0,6}"), 0..12),
        ),
        agent(),
        agent(),
        any::<bool>(),
        0u8..10,
        0u8..48,
    )
        .prop_map(
            move |(mode, text, files, from, to, blocker, spelling, extra)| {
                let mut opts: Vec<Vec<String>> = Vec::new();
                let spell = |full: &str, short: &str, v: String, k: u8| -> Vec<String> {
                    match k % 4 {
                        0 | 1 => vec![full.to_string(), v],
                        2 => vec![format!("{full}={v}")],
                        _ => vec![short.to_string(), v],
                    }
                };
                if let Some(t) = text {
                    opts.push(spell("--text", "--tex", t, spelling));
                }
                if let Some(f) = files {
                    opts.push(spell(
                        "--files",
                        "--fi",
                        files_value(&dir, &f),
                        spelling / 2,
                    ));
                }
                if let Some(a) = from {
                    opts.push(spell("--from-agent", "--from", a, spelling / 3));
                }
                if let Some(a) = to {
                    opts.push(spell("--to-agent", "--to", a, spelling / 4));
                }
                if blocker {
                    opts.push(vec![if spelling % 3 == 0 {
                        "--b".into()
                    } else {
                        "--blocker".into()
                    }]);
                }
                let mut argv = Vec::new();
                let at = usize::from(spelling) % (opts.len() + 1);
                for (i, o) in opts.into_iter().enumerate() {
                    if i == at {
                        argv.push(mode.clone());
                    }
                    argv.extend(o);
                }
                if !argv.contains(&mode) {
                    argv.push(mode.clone());
                }
                match extra {
                    0 => argv.push("-x".into()),
                    1 => argv.push("--".into()),
                    2 => argv.insert(0, "--".into()),
                    3 => argv.push("stray".into()),
                    4 => argv.push("-h".into()),
                    5 => argv.push("--f".into()),
                    6 => argv.push("--blocker=yes".into()),
                    7 => {
                        argv.push("--text".into());
                        argv.push("-5".into());
                    }
                    _ => {}
                }
                Case { argv }
            },
        )
}

fn fixtures(dir: &Path) {
    std::fs::write(
        dir.join("a.md"),
        "\n\n   Added new\ttable refresh_tokens with a foreign\nkey; unblocks hermes   \nmore",
    )
    .unwrap();
    std::fs::write(dir.join("b.txt"), "line one\r\nSchema API_KEY and CSS").unwrap();
    std::fs::write(dir.join("empty.md"), " \u{1f}\n\u{85}").unwrap();
    std::fs::write(dir.join("latin1.md"), b"caf\xe9 schema").unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
}

fn ours(c: &Case) -> Outcome {
    script::run(&c.argv, &Files)
}

/// argparse's messages name the program: both sides use `mnemo inline`.
fn equal(ours: &Outcome, model: &Value) -> bool {
    let code = model["code"].as_u64().unwrap();
    if u64::from(ours.code) != code || ours.stdout != model["stdout"].as_str().unwrap() {
        return false;
    }
    match model["stderr"].as_str() {
        Some(err) => ours.stderr == err,
        // A UnicodeDecodeError: Python prints a traceback; both exit 1 with
        // nothing on standard output.
        None => ours.stderr.starts_with("UnicodeDecodeError: "),
    }
}

#[test]
fn inline_matches_the_reference_model_on_10000_random_command_lines() {
    if !mnemo_testkit::require_command("python3", &["--version"], "the reference model is Python") {
        return;
    }
    let n: usize = std::env::var("MNEMO_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    let strategy = case(dir.path().to_path_buf());
    let mut runner = TestRunner::default();
    let cases: Vec<Case> = (0..n)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect();
    let input = json!(
        cases
            .iter()
            .map(|c| json!({"argv": c.argv, "cwd": dir.path()}))
            .collect::<Vec<_>>()
    );
    let results = model(&input, &[]);
    compare(&cases, &results, "the reference model", |_| false);
    // Beside it, when a copy of Pantheon's real script is at hand (it is not
    // part of this repository): the same command lines against it, with its
    // scrubber replaced by the identity so that only the rules differ. Only
    // the help text's description paragraph may differ.
    if let Ok(script) = std::env::var("MNEMO_PANTHEON_SCRIPT") {
        let results = model(&input, &["--script", &script, "--no-scrub"]);
        compare(&cases, &results, "Pantheon's compress-inline.py", |c| {
            c.argv.iter().any(|a| a == "-h")
        });
    }
}

fn model(input: &Value, args: &[&str]) -> Vec<Value> {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference_model.py");
    let mut child = Command::new("python3")
        .arg(&model)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let body = input.to_string();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(body.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "the reference model failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn compare(cases: &[Case], results: &[Value], against: &str, excused: impl Fn(&Case) -> bool) {
    let n = cases.len();
    assert_eq!(results.len(), n);
    let mut differences = Vec::new();
    let mut excused_count = 0;
    let mut codes = [0usize; 3];
    for (c, m) in cases.iter().zip(results) {
        let o = ours(c);
        codes[usize::from(o.code.min(2))] += 1;
        if !equal(&o, m) && excused(c) {
            excused_count += 1;
        } else if !equal(&o, m) {
            differences.push(format!(
                "argv {:?}\n  ours  {} {:?} {:?}\n  model {} {:?} {:?}",
                c.argv, o.code, o.stdout, o.stderr, m["code"], m["stdout"], m["stderr"]
            ));
        }
    }
    eprintln!(
        "against {against}: {n} command lines, {} differences, {excused_count} excused (exit 0: {}, 1: {}, 2: {})",
        differences.len(),
        codes[0],
        codes[1],
        codes[2]
    );
    assert!(
        differences.is_empty(),
        "{} of {n} differ from {against}; the first ones:\n{}",
        differences.len(),
        differences
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The cases reach every outcome.
    assert!(codes.iter().all(|&k| k > n / 50), "{codes:?}");
}
