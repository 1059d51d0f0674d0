#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The scrubber measured on data it was not made from (issue 13 item 9–11).
//!
//! `tests/eval/heldout/` and `tests/eval/tuning/` are realistic files
//! (`.env`, shell histories, CI logs, kubeconfigs, notebooks,
//! docker-compose, `.netrc`, `.pgpass`, SQL, Go DSNs, cookies…) written
//! without looking at `rules/default.toml`; `LABELS.tsv` lists every secret
//! of each half. A labelled secret counts as found when a finding overlaps
//! it; a finding that overlaps no labelled secret is a false positive.
//! The held-out half was written and committed first and never changes
//! (its hash is pinned below): rules are tuned on the tuning half only.
//!
//! The third set is negative only: real Rust sources from the local cargo
//! registry (`~/.cargo/registry/src`, `.rs` files in sorted path order up to
//! a fixed budget), where every finding is a false positive. Under
//! `CI=true` a missing registry fails the test.

use mnemo_scrub::Scrubber;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// sha256 over the held-out half (sorted names, each name, NUL, contents, NUL).
const HELDOUT_SHA256: &str = "92c3337d3c91b0bc0eba88e3595882e04b86266ac166ea39144cf532395e5bb0";
/// The same for the second held-out set (`heldout2/`, issue 13 item 9:
/// false positives of the generic password and Slack rules), committed in
/// 1a6a5fa before any tuning for it.
const HELDOUT2_SHA256: &str = "c8d628e53725c16b46859d415500e4d17d1e89f305ee383f199957b6c172660b";

fn eval_dir(half: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/eval")
        .join(half)
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

fn digest(dir: &Path) -> String {
    let mut h = Sha256::new();
    for p in files(dir) {
        h.update(p.file_name().unwrap().to_string_lossy().as_bytes());
        h.update([0]);
        h.update(std::fs::read(&p).unwrap());
        h.update([0]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_held_out_halves_never_change() {
    for (half, pinned) in [("heldout", HELDOUT_SHA256), ("heldout2", HELDOUT2_SHA256)] {
        assert_eq!(
            digest(&eval_dir(half)),
            pinned,
            "tests/eval/{half}/ changed: a held-out set is fixed once written"
        );
    }
}

/// One half's score.
#[derive(Debug, Default)]
struct Score {
    secrets: usize,
    found: usize,
    findings: usize,
    false_positives: usize,
    /// Labelled negatives (`NEGATIVES.tsv`: text that looks like a
    /// credential but is not) and how many of them a finding overlaps.
    negatives: usize,
    negatives_flagged: usize,
    /// Negative-only files (no labelled secret) with a finding.
    negative_files: usize,
    negative_files_flagged: usize,
    misses: Vec<String>,
    fps: Vec<String>,
}

/// `file<TAB>text` lines of a label file (absent file: none), by file.
fn read_labels(path: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut by_file: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let labels = std::fs::read_to_string(path).unwrap_or_default();
    for line in labels
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (f, s) = line.split_once('\t').unwrap();
        by_file
            .entry(f.to_string())
            .or_default()
            .push(s.to_string());
    }
    by_file
}

fn span_of(text: &str, name: &str, s: &str) -> (usize, usize) {
    let at = text
        .find(s)
        .unwrap_or_else(|| panic!("{name}: label {s:?} not in file"));
    (at, at + s.len())
}

fn score_half(half: &str) -> Score {
    let dir = eval_dir(half);
    let by_file = read_labels(&dir.join("LABELS.tsv"));
    let negatives = read_labels(&dir.join("NEGATIVES.tsv"));
    let scrubber = Scrubber::default_rules().unwrap();
    let mut sc = Score::default();
    for p in files(&dir) {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name == "LABELS.tsv" || name == "NEGATIVES.tsv" {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let secrets = by_file.get(&name).cloned().unwrap_or_default();
        let spans: Vec<(usize, usize)> = secrets.iter().map(|s| span_of(&text, &name, s)).collect();
        let findings = scrubber.find(&text);
        for n in negatives.get(&name).into_iter().flatten() {
            let (a, b) = span_of(&text, &name, n);
            sc.negatives += 1;
            if findings.iter().any(|f| f.start < b && f.end > a) {
                sc.negatives_flagged += 1;
            }
        }
        sc.secrets += spans.len();
        sc.findings += findings.len();
        for (s, (a, b)) in secrets.iter().zip(&spans) {
            if findings.iter().any(|f| f.start < *b && f.end > *a) {
                sc.found += 1;
            } else {
                sc.misses.push(format!("{name}: {s}"));
            }
        }
        for f in &findings {
            if !spans.iter().any(|(a, b)| f.start < *b && f.end > *a) {
                sc.false_positives += 1;
                sc.fps
                    .push(format!("{name}: {} {:?}", f.rule, &text[f.start..f.end]));
            }
        }
        if spans.is_empty() {
            sc.negative_files += 1;
            if !findings.is_empty() {
                sc.negative_files_flagged += 1;
            }
        }
    }
    sc
}

fn report(half: &str, sc: &Score) {
    println!(
        "{half}: recall {}/{} = {:.3}; findings {}, false positives {}; labelled negatives flagged {}/{}; negative files flagged {}/{}",
        sc.found,
        sc.secrets,
        sc.found as f64 / sc.secrets.max(1) as f64,
        sc.findings,
        sc.false_positives,
        sc.negatives_flagged,
        sc.negatives,
        sc.negative_files_flagged,
        sc.negative_files
    );
    for m in &sc.misses {
        println!("  missed {m}");
    }
    for f in &sc.fps {
        println!("  false positive {f}");
    }
}

/// Committed thresholds: (least secrets found, most false positives).
/// Before the issue-13 rules: held-out 20/33 and 2, tuning 3/19 and 3.
const HELDOUT_MIN: (usize, usize) = (32, 2);
const TUNING_MIN: (usize, usize) = (19, 0);
/// Second round (issue 13 item 9). Before tuning (rules of 87e7715):
/// held-out2 32/33 and 9 false positives (9/118 labelled negatives
/// flagged), tuning2 7/7 and 9 (9/40).
/// After tuning on tuning2 (Slack token shapes, example passwords,
/// acronym type names, kebab-case object names): held-out2 32/33 and 3
/// (3/118), tuning2 7/7 and 0 (0/40).
const HELDOUT2_MIN: (usize, usize) = (32, 3);
const TUNING2_MIN: (usize, usize) = (7, 0);
/// Most false findings on the cargo-registry corpus (the target).
/// Measured on the Cargo.lock of 87e7715 (4,132 files, 52.4 MB): 10 before
/// the second round (3× an `opensesame` proxy-URL test in hyper-util,
/// `secret123` in jsonschema, `'pwd'` in postgres-protocol's docs, and the
/// five private keys below), 0 false after it.
const CORPUS_MAX_FALSE: usize = 2;
/// Findings in the corpus that are real secrets, not false ones: a 512-bit
/// RSA private key (and an encrypted one) that the `pem` crate publishes in
/// its docs and tests, once under a `CERTIFICATE` header (its body,
/// `MIIBPQIBAAJBAO…`, is a DER RSAPrivateKey). A scrubber must redact a
/// private key wherever it appears. (file suffix, rule)
const CORPUS_REAL_KEYS: &[(&str, &str)] = &[
    ("/pem-3.0.6/src/lib.rs", "pem-private-key"),
    ("/pem-3.0.6/src/lib.rs", "certificate"),
];
/// Budget of the corpus.
const CORPUS_BYTES: u64 = 50 * 1024 * 1024;

#[test]
fn recall_and_false_positives_on_both_halves() {
    for (half, (min_found, max_fp)) in [
        ("heldout", HELDOUT_MIN),
        ("tuning", TUNING_MIN),
        ("heldout2", HELDOUT2_MIN),
        ("tuning2", TUNING2_MIN),
    ] {
        let sc = score_half(half);
        report(half, &sc);
        assert!(
            sc.found >= min_found,
            "{half}: found {} of {}, below the committed {min_found}",
            sc.found,
            sc.secrets
        );
        assert!(
            sc.false_positives <= max_fp,
            "{half}: {} false positives, above the committed {max_fp}",
            sc.false_positives
        );
    }
}

/// The crates of the workspace's Cargo.lock that are in the local registry,
/// as `registry/src/<index>/<name>-<version>` directories, sorted.
fn corpus_files() -> Option<Vec<PathBuf>> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = home.join("registry/src");
    let lock =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock"))
            .ok()?;
    let mut wanted = std::collections::BTreeSet::new();
    let mut name = None;
    for line in lock.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let Some(v) = line.strip_prefix("version = ")
            && let Some(n) = name.take()
        {
            wanted.insert(format!("{n}-{}", v.trim_matches('"')));
        }
    }
    let mut dirs = Vec::new();
    for index in std::fs::read_dir(&src).ok()? {
        let index = index.ok()?.path();
        for c in std::fs::read_dir(&index).ok()?.flatten() {
            let n = c.file_name().to_string_lossy().to_string();
            if wanted.contains(&n) {
                dirs.push((n, c.path()));
            }
        }
    }
    dirs.sort();
    dirs.dedup_by(|a, b| a.0 == b.0);
    let mut out = Vec::new();
    for (_, d) in dirs {
        let mut stack = vec![d];
        let mut fs = Vec::new();
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    fs.push(p);
                }
            }
        }
        fs.sort();
        out.extend(fs);
    }
    Some(out)
}

#[test]
fn cargo_registry_corpus_has_at_most_the_committed_findings() {
    let Some(all) = corpus_files().filter(|f| !f.is_empty()) else {
        mnemo_testkit::skip(
            "no cargo registry sources for the workspace's Cargo.lock (run cargo fetch)",
        );
        return;
    };
    let scrubber = Scrubber::default_rules().unwrap();
    let (mut bytes, mut nfiles, mut findings, mut real) = (0u64, 0usize, Vec::new(), 0usize);
    for p in all {
        if bytes >= CORPUS_BYTES {
            break;
        }
        let Ok(data) = std::fs::read(&p) else {
            continue;
        };
        bytes += data.len() as u64;
        nfiles += 1;
        let path = p.to_string_lossy();
        for f in scrubber.find_bytes(&data) {
            if CORPUS_REAL_KEYS
                .iter()
                .any(|(suffix, rule)| path.ends_with(suffix) && f.rule == *rule)
            {
                real += 1;
                continue;
            }
            let s = String::from_utf8_lossy(&data[f.start..f.end.min(f.start + 80)]).to_string();
            findings.push(format!("{}: {} {s:?}", p.display(), f.rule));
        }
    }
    println!(
        "corpus: {nfiles} files, {:.1} MB, {} false findings, {real} real private keys",
        bytes as f64 / 1e6,
        findings.len()
    );
    for f in &findings {
        println!("  {f}");
    }
    assert!(
        bytes >= CORPUS_BYTES / 2,
        "the corpus is only {bytes} bytes: is the registry complete?"
    );
    assert!(
        findings.len() <= CORPUS_MAX_FALSE,
        "{} false findings on the corpus, above the committed {CORPUS_MAX_FALSE}",
        findings.len()
    );
}
