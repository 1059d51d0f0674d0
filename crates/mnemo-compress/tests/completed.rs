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

/// The owned upsert the borrowed one replaced (parse into `Item`s, edit,
/// render), kept as the reference the borrowed one must agree with.
mod reference {
    use mnemo_compress::completed::{Item, NewEntry, parse_section, render_section};

    const MNEMO_CONTINUATIONS: [&str; 2] = ["  - To next agent: ", "  - Gotcha: "];

    fn keep_human_lines(old: &str, mut new: String) -> String {
        for line in old.split_inclusive('\n').skip(1) {
            let mine = MNEMO_CONTINUATIONS
                .iter()
                .any(|p| line.trim_end_matches(['\r', '\n']).starts_with(p));
            if !mine && !new.split_inclusive('\n').any(|l| l == line) {
                if !new.ends_with('\n') {
                    new.push('\n');
                }
                new.push_str(line);
            }
        }
        new
    }

    fn insertion_point(items: &[Item]) -> usize {
        if let Some(i) = items.iter().rposition(|i| matches!(i, Item::Entry { .. })) {
            return i + 1;
        }
        match items.last() {
            Some(Item::Other(o)) if o.trim().is_empty() => items.len() - 1,
            _ => items.len(),
        }
    }

    pub fn upsert(body: &str, entries: &[NewEntry]) -> (String, (usize, usize, usize)) {
        let mut items = parse_section(body);
        let (mut added, mut skipped, mut replaced) = (0, 0, 0);
        for e in entries {
            let mut text = e.text.clone();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            let existing = items.iter_mut().find_map(|i| match i {
                Item::Entry { key, hash, text } if *key == e.key => Some((hash, text)),
                _ => None,
            });
            match existing {
                Some((hash, _)) if *hash == e.hash => skipped += 1,
                Some((hash, old)) => {
                    *hash = e.hash.clone();
                    *old = keep_human_lines(old, text);
                    replaced += 1;
                }
                None => {
                    let at = insertion_point(&items);
                    if let Some(Item::Other(o) | Item::Entry { text: o, .. }) =
                        at.checked_sub(1).and_then(|i| items.get_mut(i))
                        && !o.ends_with('\n')
                    {
                        o.push('\n');
                    }
                    items.insert(
                        at,
                        Item::Entry {
                            key: e.key.clone(),
                            hash: e.hash.clone(),
                            text,
                        },
                    );
                    added += 1;
                }
            }
        }
        (render_section(&items), (added, skipped, replaced))
    }
}

proptest! {
    /// The borrowed upsert writes the same bytes as the owned one, on
    /// bodies with entries, people's notes under them, other text, a last
    /// line without its newline, CRLF lines and texts without a newline.
    #[test]
    fn borrowed_upsert_agrees_with_the_owned_reference(
        body_parts in prop::collection::vec((0usize..6, 0usize..4, 0usize..3), 0..8),
        picks in prop::collection::vec((0usize..4, 0usize..3, 0usize..3, any::<bool>()), 0..6),
        cut_last_newline: bool,
    ) {
        let agents = ["hermes", "demeter", "aphrodite", "themis"];
        let mut body = String::new();
        for &(kind, a, v) in &body_parts {
            match kind {
                0 | 1 => body.push_str(&entry(agents[a], &format!("version {v}"), v).text),
                2 => body.push_str("  - Note: a person's line\n"),
                3 => body.push_str("Human text.\r\n"),
                4 => body.push('\n'),
                _ => body.push_str("  \n"),
            }
        }
        if cut_last_newline && body.ends_with('\n') {
            body.pop();
        }
        let entries: Vec<NewEntry> = picks
            .iter()
            .map(|&(a, v, l, bare)| {
                let mut e = entry(agents[a], &format!("version {v}"), l);
                if bare {
                    e.text.pop();
                }
                e
            })
            .collect();
        let (got, r) = upsert(&body, &entries);
        let (want, counts) = reference::upsert(&body, &entries);
        prop_assert_eq!(got, want);
        prop_assert_eq!((r.added, r.skipped, r.replaced), counts);
        // The borrowed parse is the owned parse.
        let spans = mnemo_compress::completed::parse_spans(&body);
        prop_assert_eq!(spans.len(), parse_section(&body).len());
        for (s, i) in spans.iter().zip(parse_section(&body)) {
            match (s, i) {
                (
                    mnemo_compress::completed::Span::Entry { key, hash, text },
                    mnemo_compress::completed::Item::Entry { key: k, hash: h, text: t },
                ) => {
                    prop_assert_eq!(key.to_key(), k);
                    prop_assert_eq!(*hash, h.as_str());
                    prop_assert_eq!(*text, t.as_str());
                }
                (mnemo_compress::completed::Span::Other(o), mnemo_compress::completed::Item::Other(p)) => {
                    prop_assert_eq!(*o, p.as_str());
                }
                _ => prop_assert!(false, "the parses differ in kind"),
            }
        }
    }
}
