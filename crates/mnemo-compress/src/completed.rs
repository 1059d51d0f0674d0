//! The entries of `## Completed Phases`: idempotent upsert (seed §17) and
//! the C7 size trim plan (seed §18).
//!
//! The functions work on the *body* of the section (the text between its
//! heading and the next heading); finding the section in the file is the
//! bank's job. An entry is a line carrying a mnemo marker
//! (see [`crate::render::marker`]) plus its continuation lines (lines that
//! start with two spaces). Every other line is human text and is kept byte
//! for byte, in place.

use mnemo_score::Band;
use serde::Serialize;

use crate::budget::HalfLines;
use crate::render::{EntryKey, parse_marker};

/// A part of the section body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Item {
    /// A mnemo entry: key, hash, and its full text (with line endings).
    Entry {
        /// Idempotency key.
        key: EntryKey,
        /// Content hash.
        hash: String,
        /// The entry's lines, verbatim.
        text: String,
    },
    /// Anything else, verbatim.
    Other(String),
}

/// Splits a section body into entries and other text.
pub fn parse_section(body: &str) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::new();
    for line in body.split_inclusive('\n') {
        if let Some((key, hash)) = parse_marker(line) {
            items.push(Item::Entry {
                key,
                hash,
                text: line.to_string(),
            });
            continue;
        }
        let continuation = line.starts_with("  ") && !line.trim().is_empty();
        match items.last_mut() {
            Some(Item::Entry { text, .. }) if continuation => text.push_str(line),
            Some(Item::Other(o)) => o.push_str(line),
            _ => items.push(Item::Other(line.to_string())),
        }
    }
    items
}

/// Renders parsed items back (the exact input for an unmodified parse).
pub fn render_section(items: &[Item]) -> String {
    items
        .iter()
        .map(|i| match i {
            Item::Entry { text, .. } | Item::Other(text) => text.as_str(),
        })
        .collect()
}

/// What an upsert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct UpsertReport {
    /// New entries appended.
    pub added: usize,
    /// Entries with the same key and hash: left as they were.
    pub skipped: usize,
    /// Entries with the same key and another hash: replaced in place.
    pub replaced: usize,
}

/// A rendered entry to upsert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewEntry {
    /// Idempotency key.
    pub key: EntryKey,
    /// Content hash.
    pub hash: String,
    /// Full text (from [`crate::render::completed_entry`]), ending in `\n`.
    pub text: String,
}

/// The continuation lines mnemo writes under an entry
/// ([`crate::render::completed_entry`]); any other indented line under an
/// entry is a person's note.
const MNEMO_CONTINUATIONS: [&str; 2] = ["  - To next agent: ", "  - Gotcha: "];

/// The new text of a re-gated entry followed by the notes people wrote
/// under the old one (indented lines mnemo does not write), verbatim.
fn keep_human_lines(old: &str, mut new: String) -> String {
    for line in old.split_inclusive('\n').skip(1) {
        let mine = MNEMO_CONTINUATIONS
            .iter()
            .any(|p| line.trim_end_matches(['\r', '\n']).starts_with(p));
        // A line the new text has already is not repeated.
        if !mine && !new.split_inclusive('\n').any(|l| l == line) {
            if !new.ends_with('\n') {
                new.push('\n');
            }
            new.push_str(line);
        }
    }
    new
}

/// Upserts entries into a section body (§17): same key and hash → skip;
/// same key, other hash → replace in place; new key → append after the
/// last entry (or at the end of the body, before trailing blank lines).
/// Human lines are never touched. Running it twice gives the same text.
pub fn upsert(body: &str, entries: &[NewEntry]) -> (String, UpsertReport) {
    let (text, report, _) = upsert_each(body, entries);
    (text, report)
}

/// What an upsert did to one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Upserted {
    /// A new key: appended.
    New,
    /// Same key and hash: left as it was.
    Unchanged,
    /// Same key, other hash: replaced in place.
    Updated,
}

impl Upserted {
    /// `new`, `unchanged` or `updated`.
    pub fn as_str(self) -> &'static str {
        match self {
            Upserted::New => "new",
            Upserted::Unchanged => "unchanged",
            Upserted::Updated => "updated",
        }
    }
}

/// [`upsert`], also saying what happened to each entry (in input order).
pub fn upsert_each(body: &str, entries: &[NewEntry]) -> (String, UpsertReport, Vec<Upserted>) {
    let mut items = parse_section(body);
    let mut report = UpsertReport::default();
    let mut each = Vec::with_capacity(entries.len());
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
            Some((hash, _)) if *hash == e.hash => {
                report.skipped += 1;
                each.push(Upserted::Unchanged);
            }
            Some((hash, old)) => {
                *hash = e.hash.clone();
                *old = keep_human_lines(old, text);
                report.replaced += 1;
                each.push(Upserted::Updated);
            }
            None => {
                let at = insertion_point(&items);
                // A body that does not end its last line gets one first.
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
                report.added += 1;
                each.push(Upserted::New);
            }
        }
    }
    (render_section(&items), report, each)
}

/// After the last entry; without entries, before the trailing blank lines.
fn insertion_point(items: &[Item]) -> usize {
    if let Some(i) = items.iter().rposition(|i| matches!(i, Item::Entry { .. })) {
        return i + 1;
    }
    match items.last() {
        Some(Item::Other(o)) if o.trim().is_empty() => items.len() - 1,
        _ => items.len(),
    }
}

/// One entry as the C7 trim sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrimCandidate {
    /// Idempotency key.
    pub key: EntryKey,
    /// Band of the entry.
    pub band: Band,
    /// Exact score in ten-thousandths.
    pub score: u32,
    /// Its size in the section.
    pub size: HalfLines,
}

/// The C7 plan: what to archive and what to shorten.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct TrimPlan {
    /// Positions (in the candidate list) of entries to remove and archive.
    pub remove: Vec<usize>,
    /// Positions of MEDIUM entries to shorten to half a line (files only).
    pub shorten: Vec<usize>,
    /// Section size before.
    pub before: HalfLines,
    /// Section size after the plan.
    pub after: HalfLines,
    /// True when the section is still over the cap (only CRITICAL and HIGH,
    /// which are never trimmed, remain above it).
    pub still_over: bool,
}

/// Plans the C7 trim of a section of `size` (candidates plus any other
/// lines) against `cap`: LOW entries first, lowest score first (ties: the
/// oldest, i.e. the earliest in the list), removed whole; then MEDIUM
/// entries, lowest score first, shortened to half a line. CRITICAL and HIGH
/// are never trimmed. Nothing happens when the section is within the cap.
pub fn plan_trim(candidates: &[TrimCandidate], size: HalfLines, cap: HalfLines) -> TrimPlan {
    let mut plan = TrimPlan {
        before: size,
        after: size,
        ..TrimPlan::default()
    };
    if size <= cap {
        return plan;
    }
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| {
        candidates[a]
            .score
            .cmp(&candidates[b].score)
            .then(a.cmp(&b))
    });
    for &i in &order {
        if plan.after <= cap {
            break;
        }
        if candidates[i].band == Band::Low {
            plan.remove.push(i);
            plan.after = plan.after.minus(candidates[i].size);
        }
    }
    for &i in &order {
        if plan.after <= cap {
            break;
        }
        let c = &candidates[i];
        if c.band == Band::Medium && c.size > HalfLines(1) {
            plan.shorten.push(i);
            plan.after = plan.after.minus(c.size.minus(HalfLines(1)));
        }
    }
    plan.still_over = plan.after > cap;
    plan
}

/// `_notes/archive/YYYY-MM-compressed-entries.md` for a `YYYY-MM-DD` date.
pub fn archive_path(date: &str) -> String {
    let month = date.get(..7).unwrap_or(date);
    format!("_notes/archive/{month}-compressed-entries.md")
}

/// The log line of §18: `C7 trim: removed N low-priority entries, archived to …`.
pub fn trim_log(removed: usize, archive: &str) -> String {
    format!("C7 trim: removed {removed} low-priority entries, archived to {archive}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn archive_paths() {
        assert_eq!(
            archive_path("2026-06-20"),
            "_notes/archive/2026-06-compressed-entries.md"
        );
        assert_eq!(
            trim_log(3, &archive_path("2026-06-20")),
            "C7 trim: removed 3 low-priority entries, archived to _notes/archive/2026-06-compressed-entries.md"
        );
    }
}
