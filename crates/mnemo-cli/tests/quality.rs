#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The gate quality benchmark (`bench/quality/`, see its README): runs the
//! real `mnemo gate` over both halves of the hand-written set and measures
//! the ZZ artifact's `## Priority Entries` — fact survival, size against
//! the input (characters and o200k tokens), lines per entry and
//! readability defects — beside Pantheon's first-80-characters baseline
//! (`mnemo inline compress`, the drop-in of `compress-inline.py`).
//!
//! The held-out half is pinned by hash: it was committed before the
//! summariser was tuned and must never change. Each half must stay above
//! the committed thresholds. `bench/quality/run.sh` prints the report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// sha256 over `name sha256(content)\n` of every file, names in byte order
/// (the same as `for f in $(ls | LC_ALL=C sort); do echo "$f $(sha256sum <$f)"; done | sha256sum`).
const HELD_OUT_SHA256: &str = "99c67a931993d6b8224c76538a9661646d793b59bbf9fdfa1e45d785aabad1c9";

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/quality")
}

fn mnemo() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mnemo"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn dir_hash(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut list = String::new();
    for n in names {
        let content = std::fs::read(dir.join(&n)).unwrap();
        list.push_str(&format!("{n} {}\n", hex(&Sha256::digest(&content))));
    }
    hex(&Sha256::digest(list.as_bytes()))
}

/// Whitespace runs → one space, backticks removed: a fact survives when it
/// is on the page, whatever the markdown around it.
fn norm(s: &str) -> String {
    s.replace('`', "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn tokens(s: &str) -> usize {
    mnemo_tokens::count_o200k(s).unwrap()
}

/// One block of the Priority Entries: the agent, the section it is in, its
/// head line (an expanded entry's `Agent title · fields · files`) and
/// its body lines (for a table row: the row).
#[derive(Debug)]
struct Block {
    agent: String,
    section: String,
    head: Option<String>,
    lines: Vec<String>,
}

impl Block {
    /// Everything on the page for this entry: head and lines.
    fn all_lines(&self) -> impl Iterator<Item = &String> {
        self.head.iter().chain(&self.lines)
    }
}

fn priority_entries(zz: &str) -> String {
    let start = zz.find("## Priority Entries").expect("no Priority Entries");
    let end = zz[start..]
        .find("\n## Cross-References")
        .map_or(zz.len(), |e| start + e + 1);
    zz[start..end].to_string()
}

fn blocks(pe: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut section = String::new();
    let mut open = false;
    for line in pe.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            section = h.split_whitespace().next().unwrap_or_default().to_string();
            open = false;
        } else if line.trim().is_empty() {
            open = false;
        } else if section != "STANDARD" && !open {
            // `Hermes title · fields · files`: the line after a blank one
            // (the roster's agent names are one word each).
            let agent = line.split_whitespace().next().unwrap_or_default();
            out.push(Block {
                agent: agent.to_string(),
                section: section.clone(),
                head: Some(line.to_string()),
                lines: Vec::new(),
            });
            open = true;
        } else if open {
            if let Some(b) = out.last_mut() {
                b.lines.push(line.to_string());
            }
        } else if section == "STANDARD"
            && let Some(agent) = line.split_whitespace().next()
        {
            // `Agent sentence — files` (seed §4's one-line form; the
            // roster's names are one word each).
            out.push(Block {
                agent: agent.to_string(),
                section: section.clone(),
                head: None,
                lines: vec![line.to_string()],
            });
        }
    }
    out
}

/// What was given: the text fields the summariser reads and the file list.
struct Source {
    text: String,
    files: Vec<String>,
    agent: String,
}

fn source(path: &Path) -> Source {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.display().to_string();
    let fmt = mnemo_model::Format::detect(&text, Some(&name));
    let recs = mnemo_model::parse_records(&text, &name, fmt).unwrap();
    assert_eq!(recs.len(), 1, "{name}: one record per file");
    let r = &recs[0];
    Source {
        text: r.scoring_text(),
        files: r.files_changed.clone(),
        agent: r.agent.clone().unwrap_or_default(),
    }
}

fn band(path: &Path, to: &str) -> String {
    let out = mnemo()
        .args(["score", "--json", "--to", to])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value =
        serde_json::from_slice(out.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    v["band"].as_str().unwrap().to_string()
}

#[derive(Debug, Default, Clone)]
struct Figures {
    summaries: usize,
    ch_entries: usize,
    ch_facts: (usize, usize),
    contract: (usize, usize),
    all_facts: (usize, usize),
    in_chars: usize,
    in_tokens: usize,
    text_tokens: usize,
    out_chars: usize,
    out_tokens: usize,
    /// The whole ZZ artifact (frame, Budget, Cross-References too), so that
    /// nothing is seen to be merely moved out of `## Priority Entries`.
    zz_tokens: usize,
    max_critical_lines: usize,
    max_high_lines: usize,
    defects: Vec<String>,
    lost: Vec<String>,
}

fn ratio((a, b): (usize, usize)) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

impl Figures {
    fn line(&self, name: &str) -> String {
        format!(
            "{name:<22} C/H facts {}/{} = {:.3} · contract {}/{} = {:.3} · all facts {}/{} = {:.3} · size {:.2}× chars, {:.2}× tokens of text+files ({:.2}× tokens of text alone; {} → {} tokens, {} → {} chars; whole ZZ {} tokens) · max lines C {} H {} · defects {} · {} summaries, {} C/H entries",
            self.ch_facts.0,
            self.ch_facts.1,
            ratio(self.ch_facts),
            self.contract.0,
            self.contract.1,
            ratio(self.contract),
            self.all_facts.0,
            self.all_facts.1,
            ratio(self.all_facts),
            ratio((self.out_chars, self.in_chars)),
            ratio((self.out_tokens, self.in_tokens)),
            ratio((self.out_tokens, self.text_tokens)),
            self.in_tokens,
            self.out_tokens,
            self.in_chars,
            self.out_chars,
            self.zz_tokens,
            self.max_critical_lines,
            self.max_high_lines,
            self.defects.len(),
            self.summaries,
            self.ch_entries,
        )
    }
}

const LABELS: &[&str] = &[
    "column",
    "columns",
    "table",
    "tables",
    "index",
    "indexes",
    "config",
    "code",
    "endpoint",
    "endpoints",
    "migration",
    "env",
    "status",
    "http",
];

/// Readability defects of one entry's lines against its source text.
fn defects(lines: &[String], src: &Source, expanded: bool, out: &mut Vec<String>) {
    let src_norm = norm(&src.text).to_lowercase();
    for line in lines {
        let l = norm(line);
        let low = l.to_lowercase();
        // A label repeated by the text after it (`**Gotcha:** Gotcha:`).
        for (i, _) in l.match_indices(":**") {
            let label = l[..i]
                .rsplit("**")
                .next()
                .unwrap_or_default()
                .to_lowercase();
            let after = low[i + 3..].trim_start();
            if !label.is_empty() && after.starts_with(&format!("{label}:")) {
                out.push(format!("repeated label `{label}`: {l}"));
            }
        }
        if (l.contains('…') && !src.text.contains('…'))
            || (l.contains("...") && !src.text.contains("..."))
        {
            out.push(format!("cut with an ellipsis: {l}"));
        }
        let words: Vec<&str> = low
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty())
            .collect();
        for w in words.windows(2) {
            let (a, b) = (w[0], w[1]);
            let similar =
                a == b || (a.len() >= 4 && b.len() >= 4 && (a.starts_with(b) || b.starts_with(a)));
            if similar
                && a.chars().all(char::is_alphabetic)
                && !src_norm.contains(&format!("{a} {b}"))
            {
                out.push(format!("doubled word `{a} {b}`: {l}"));
            }
        }
        // A type label the agent did not write (`column ix_…`, `config expired=1`).
        let raw: Vec<&str> = l.split(' ').collect();
        for w in raw.windows(2) {
            let label = w[0].to_lowercase();
            if LABELS.contains(&label.as_str()) && w[1].chars().any(char::is_alphanumeric) {
                let pair = format!("{} {}", label, w[1].to_lowercase());
                let pair = pair.trim_end_matches([',', ';', '.']);
                if !src_norm.contains(pair) {
                    out.push(format!("invented label `{pair}`: {l}"));
                }
            }
        }
        // File paths taking most of the line.
        let file_chars: usize = src
            .files
            .iter()
            .filter(|f| l.contains(f.as_str()))
            .map(|f| f.chars().count())
            .sum();
        let n = l.chars().count();
        // (A LOW entry is its file list, by the seed's template.)
        if expanded && n > 40 && file_chars * 2 > n {
            out.push(format!("file list dominates: {l}"));
        }
    }
}

fn run_half(half: &str) -> (Figures, Figures) {
    let dir = bench_dir().join(half);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let mut fig = Figures::default();
    let mut base = Figures::default();
    for batch in manifest["batches"].as_array().unwrap() {
        let phase = batch["phase"].as_str().unwrap();
        let to = batch["to"].as_str().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let bank = tmp.path().join("bank");
        let summaries = batch["summaries"].as_array().unwrap();
        let files: Vec<PathBuf> = summaries
            .iter()
            .map(|s| dir.join(s["file"].as_str().unwrap()))
            .collect();
        let out = mnemo()
            .current_dir(tmp.path())
            .arg("--bank")
            .arg(&bank)
            .args(["--quiet", "gate", "--phase", phase, "--to", to])
            .args(["--from", batch["from"].as_str().unwrap()])
            .args(["--date", batch["date"].as_str().unwrap()])
            .args(&files)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{half} phase {phase}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let zz =
            std::fs::read_to_string(bank.join(format!(".tmp/ZZ-phase{phase}-context.md"))).unwrap();
        let pe = priority_entries(&zz);
        fig.out_chars += pe.chars().count();
        fig.out_tokens += tokens(&pe);
        fig.zz_tokens += tokens(&zz);
        let bl = blocks(&pe);
        for (s, path) in summaries.iter().zip(&files) {
            let src = source(path);
            let input = format!("{}\n{}", src.text, src.files.join(", "));
            for f in [&mut fig, &mut base] {
                f.summaries += 1;
                f.in_chars += input.chars().count();
                f.in_tokens += tokens(&input);
                f.text_tokens += tokens(&src.text);
            }
            let b = band(path, to);
            let ch = b == "CRITICAL" || b == "HIGH";
            let agent = mnemo_model::Config::default().display_agent(&src.agent);
            let mine: Vec<&Block> = bl.iter().filter(|x| x.agent == agent).collect();
            let text = norm(
                &mine
                    .iter()
                    .flat_map(|x| x.all_lines().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            // The baseline: Pantheon's compress mode (first 80 characters).
            let bo = mnemo()
                .args(["inline", "compress", "--text", &src.text, "--files"])
                .arg(src.files.join(","))
                .args(["--from-agent", &src.agent, "--to-agent", to])
                .output()
                .unwrap();
            let btext = String::from_utf8_lossy(&bo.stdout).into_owned();
            base.out_chars += btext.chars().count();
            base.out_tokens += tokens(&btext);
            let btext = norm(&btext);
            if ch {
                fig.ch_entries += 1;
                base.ch_entries += 1;
                for x in &mine {
                    let n = x.lines.len();
                    if x.section == "CRITICAL" {
                        fig.max_critical_lines = fig.max_critical_lines.max(n);
                    } else if x.section == "HIGH" {
                        fig.max_high_lines = fig.max_high_lines.max(n);
                    }
                }
            }
            for x in &mine {
                let mut found = Vec::new();
                defects(&x.lines, &src, x.section != "STANDARD", &mut found);
                // The head line is where an expanded entry lists the files
                // its lines do not name: every check but that one.
                defects(
                    std::slice::from_ref(x.head.as_ref().unwrap_or(&String::new())),
                    &src,
                    false,
                    &mut found,
                );
                for d in found {
                    if !fig.defects.contains(&d) {
                        fig.defects.push(d);
                    }
                }
            }
            for fact in s["facts"].as_array().unwrap() {
                let t = norm(fact["text"].as_str().unwrap());
                let contract = fact["contract"].as_bool().unwrap();
                for (f, page) in [(&mut fig, &text), (&mut base, &btext)] {
                    let kept = page.contains(&t);
                    f.all_facts.1 += 1;
                    f.all_facts.0 += usize::from(kept);
                    if ch {
                        f.ch_facts.1 += 1;
                        f.ch_facts.0 += usize::from(kept);
                        if contract {
                            f.contract.1 += 1;
                            f.contract.0 += usize::from(kept);
                        }
                        if !kept {
                            f.lost
                                .push(format!("{} ({b}): {t}", s["file"].as_str().unwrap()));
                        }
                    }
                }
            }
        }
    }
    (fig, base)
}

/// The halves to run: both, or only the one `MNEMO_QUALITY_HALF` names
/// (`tuning` while a change is judged, so that nothing of the held-out
/// half — not even which of its facts are lost — is seen before the final
/// check).
fn halves() -> Vec<&'static str> {
    let only = std::env::var("MNEMO_QUALITY_HALF").unwrap_or_default();
    ["held-out", "tuning"]
        .into_iter()
        .filter(|h| only.is_empty() || only == *h)
        .collect()
}

fn report() -> BTreeMap<&'static str, (Figures, Figures)> {
    let mut m = BTreeMap::new();
    let halves = halves();
    assert!(!halves.is_empty(), "MNEMO_QUALITY_HALF names no half");
    for half in halves {
        m.insert(half, run_half(half));
    }
    for (half, (fig, base)) in &m {
        println!("{}", fig.line(&format!("mnemo, {half}")));
        println!("{}", base.line(&format!("baseline, {half}")));
        if std::env::var_os("MNEMO_QUALITY_VERBOSE").is_some() {
            for l in &fig.lost {
                println!("  lost {l}");
            }
            for d in &fig.defects {
                println!("  defect {d}");
            }
        }
    }
    m
}

#[test]
fn the_held_out_half_never_changes() {
    assert_eq!(
        dir_hash(&bench_dir().join("held-out")),
        HELD_OUT_SHA256,
        "bench/quality/held-out changed: it is the half nobody tunes on; restore it"
    );
}

#[test]
fn every_planted_fact_is_in_its_summary() {
    for half in ["held-out", "tuning"] {
        let dir = bench_dir().join(half);
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap())
                .unwrap();
        for b in manifest["batches"].as_array().unwrap() {
            for s in b["summaries"].as_array().unwrap() {
                let file = s["file"].as_str().unwrap();
                let text = norm(&std::fs::read_to_string(dir.join(file)).unwrap());
                for f in s["facts"].as_array().unwrap() {
                    let t = norm(f["text"].as_str().unwrap());
                    assert!(text.contains(&t), "{half}/{file}: {t:?}");
                }
            }
        }
    }
}

/// Committed floors (both halves): (C/H facts, contract facts, max size in
/// tokens of text+files, max defects): issue #10's targets (≥ 0.95 facts,
/// ≤ 0.6× the input), which both halves meet since 2026-12-06, session 13
/// (held-out 0.594× tokens, tuning 0.573×; 2 defects on held-out), so that
/// a regression fails.
const FLOORS: (f64, f64, f64, usize) = (0.95, 0.95, 0.60, 2);
/// Committed ceiling of the size in characters of text+files (session 13:
/// held-out 0.588×, tuning 0.545×): the same 0.6× target.
const MAX_CHARS_RATIO: f64 = 0.60;

#[test]
fn both_halves_stay_above_the_committed_thresholds() {
    for (half, (fig, _)) in report() {
        assert!(
            ratio(fig.ch_facts) >= FLOORS.0,
            "{half}: {}",
            fig.line(half)
        );
        assert!(
            ratio(fig.contract) >= FLOORS.1,
            "{half}: {}",
            fig.line(half)
        );
        assert!(
            ratio((fig.out_tokens, fig.in_tokens)) <= FLOORS.2,
            "{half}: {}",
            fig.line(half)
        );
        assert!(
            ratio((fig.out_chars, fig.in_chars)) <= MAX_CHARS_RATIO,
            "{half}: {}",
            fig.line(half)
        );
        assert!(fig.defects.len() <= FLOORS.3, "{half}: {:?}", fig.defects);
        assert!(fig.max_critical_lines <= 3, "{half}: {}", fig.line(half));
        assert!(fig.max_high_lines <= 2, "{half}: {}", fig.line(half));
    }
}
