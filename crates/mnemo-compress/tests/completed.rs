#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `## Completed Phases`: idempotent upsert and the C7 trim plan.

use mnemo_compress::budget::HalfLines;
use mnemo_compress::completed::{
    NewEntry, TrimCandidate, parse_section, plan_trim, render_section, upsert,
};
use mnemo_compress::render::{EntryKey, entry_hash, marker};
use mnemo_score::Band;
use proptest::prelude::*;

fn entry(agent: &str, summary: &str, extra_lines: usize) -> NewEntry {
    let key = EntryKey::new("2026-06-20", "1", agent);
    let hash = entry_hash("2026-06-20", "1", agent, summary);
    let mut text = format!(
        "- **2026-06-20 · P1 · {agent}** — MEDIUM 0.50 — {summary} {}\n",
        marker(&key, &hash)
    );
    for i in 0..extra_lines {
        // mnemo's own continuation lines (see `render::completed_entry`).
        text.push_str(&format!("  - To next agent: line {i}\n"));
    }
    NewEntry { key, hash, text }
}

#[test]
fn rerun_is_byte_identical_and_changes_overwrite() {
    let body = "\n> Written by a person; keep me.\n\n";
    let a = entry("hermes", "Did A.", 2);
    let b = entry("demeter", "Did B.", 0);
    let (once, r1) = upsert(body, &[a.clone(), b.clone()]);
    assert_eq!((r1.added, r1.skipped, r1.replaced), (2, 0, 0));
    assert!(
        once.starts_with("\n> Written by a person; keep me.\n\n- **2026-06-20 · P1 · hermes**"),
        "{once}"
    );
    let (twice, r2) = upsert(&once, &[a.clone(), b.clone()]);
    assert_eq!(twice, once);
    assert_eq!((r2.added, r2.skipped, r2.replaced), (0, 2, 0));
    // Same key, new content: replaced in place, mnemo's continuation lines
    // too.
    let a2 = entry("hermes", "Did A better.", 0);
    let (third, r3) = upsert(&twice, &[a2]);
    assert_eq!((r3.added, r3.skipped, r3.replaced), (0, 0, 1));
    assert!(third.contains("Did A better."));
    assert!(!third.contains("  - To next agent: line 0"));
    assert!(third.contains("keep me."));
    assert_eq!(third.matches("mnemo:key=").count(), 2);
    // A person's indented note under an entry stays when it is replaced.
    let noted = third;
    let at = noted.find("Did A better.").unwrap();
    let eol = at + noted[at..].find('\n').unwrap() + 1;
    let noted = format!(
        "{}  - Note: ask Ana first\n{}",
        &noted[..eol],
        &noted[eol..]
    );
    let (fourth, r4) = upsert(&noted, &[entry("hermes", "Did A best.", 1)]);
    assert_eq!(r4.replaced, 1);
    assert!(fourth.contains("Did A best."));
    assert!(
        fourth.contains("  - To next agent: line 0\n  - Note: ask Ana first\n"),
        "{fourth}"
    );
}

#[test]
fn human_lines_between_entries_stay() {
    let a = entry("hermes", "A", 1);
    let body = format!(
        "{}Human note in the middle.\n{}",
        a.text,
        entry("demeter", "B", 0).text
    );
    let items = parse_section(&body);
    assert_eq!(items.len(), 3);
    assert_eq!(render_section(&items), body);
    let (out, _) = upsert(&body, &[entry("themis", "C", 0)]);
    assert!(out.starts_with(&body), "appended after the last entry");
}

#[test]
fn body_without_final_newline() {
    let (out, r) = upsert("text", &[entry("hermes", "A", 0)]);
    assert_eq!(r.added, 1);
    assert!(out.starts_with("text\n- **"));
}

#[test]
fn trim_removes_low_first_then_shortens_medium() {
    let c = |agent: &str, band, score, size| TrimCandidate {
        key: EntryKey::new("2026-06-20", "1", agent),
        band,
        score,
        size: HalfLines(size),
    };
    let cands = vec![
        c("a", Band::Critical, 9000, 6),
        c("b", Band::Low, 2000, 1),
        c("c", Band::Medium, 3000, 2),
        c("d", Band::Low, 1000, 1),
        c("e", Band::High, 6000, 4),
        c("f", Band::Medium, 2600, 2),
    ];
    // Size 16, cap 12: remove d (15), b (14), shorten f (13), c (12).
    let p = plan_trim(&cands, HalfLines(16), HalfLines(12));
    assert_eq!(p.remove, [3, 1]);
    assert_eq!(p.shorten, [5, 2]);
    assert_eq!(p.after, HalfLines(12));
    assert!(!p.still_over);
    // Within cap: nothing.
    assert_eq!(
        plan_trim(&cands, HalfLines(16), HalfLines(16)).remove.len(),
        0
    );
    // CRITICAL and HIGH are never trimmed.
    let p = plan_trim(&cands, HalfLines(16), HalfLines(2));
    assert!(p.still_over);
    assert!(!p.remove.contains(&0) && !p.remove.contains(&4));
}

proptest! {
    #[test]
    fn upsert_is_idempotent(
        body in "([a-z >#-]{0,20}\n){0,5}",
        picks in prop::collection::vec((0usize..4, 0usize..3, 0usize..3), 0..8),
    ) {
        let agents = ["hermes", "demeter", "aphrodite", "themis"];
        let entries: Vec<NewEntry> = picks
            .iter()
            .map(|&(a, v, l)| entry(agents[a], &format!("version {v}"), l))
            .collect();
        let (once, _) = upsert(&body, &entries);
        let (twice, r) = upsert(&once, &entries);
        prop_assert_eq!(&twice, &once);
        prop_assert_eq!(r.added, 0);
        // Every human line of the body is still there.
        for line in body.lines().filter(|l| !l.trim().is_empty()) {
            prop_assert!(once.contains(line));
        }
        // One entry per key.
        let items = parse_section(&once);
        let mut keys: Vec<_> = items.iter().filter_map(|i| match i { mnemo_compress::completed::Item::Entry { key, .. } => Some(key.render()), _ => None }).collect();
        let n = keys.len();
        keys.sort();
        keys.dedup();
        prop_assert_eq!(keys.len(), n);
    }
}
