//! The entries of `## Completed Phases`: idempotent upsert (seed §17) and
//! the C7 size trim plan (seed §18).
//!
//! The functions work on the *body* of the section (the text between its
//! heading and the next heading); finding the section in the file is the
//! bank's job. An entry is a line carrying a mnemo marker
//! (see [`crate::render::marker`]) plus its continuation lines (lines that
//! start with two spaces). Every other line is human text and is kept byte
//! for byte, in place.

use std::borrow::Cow;

use mnemo_score::Band;
use serde::Serialize;

use crate::budget::HalfLines;
use crate::render::EntryKey;

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
    parse_spans(body)
        .into_iter()
        .map(|s| match s {
            Span::Entry { key, hash, text } => Item::Entry {
                key: key.to_key(),
                hash: hash.to_string(),
                text: text.to_string(),
            },
            Span::Other(o) => Item::Other(o.to_string()),
        })
        .collect()
}

/// The parts of an idempotency key as a marker writes them, borrowed from
/// the text (see [`EntryKey`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRef<'a> {
    /// `YYYY-MM-DD`.
    pub date: &'a str,
    /// Phase label.
    pub phase: &'a str,
    /// Agent.
    pub agent: &'a str,
    /// Task discriminator.
    pub task: Option<&'a str>,
}

impl<'a> KeyRef<'a> {
    /// The key's parts, borrowed.
    pub fn of(k: &'a EntryKey) -> KeyRef<'a> {
        KeyRef {
            date: &k.date,
            phase: &k.phase,
            agent: &k.agent,
            task: k.task.as_deref(),
        }
    }

    /// The owned key.
    pub fn to_key(self) -> EntryKey {
        EntryKey {
            date: self.date.to_string(),
            phase: self.phase.to_string(),
            agent: self.agent.to_string(),
            task: self.task.map(str::to_string),
        }
    }
}

/// A part of a section body, borrowed: what [`parse_section`] gives,
/// without copying a byte (a gate scans a 10,000-entry section twice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span<'a> {
    /// A mnemo entry: its marker line and continuation lines.
    Entry {
        /// Idempotency key.
        key: KeyRef<'a>,
        /// Content hash.
        hash: &'a str,
        /// The entry's lines, verbatim.
        text: &'a str,
    },
    /// Anything else, verbatim.
    Other(&'a str),
}

/// Reads the marker of a line, borrowed: the same answer as
/// [`crate::render::parse_marker`] (a test holds them together), found
/// with byte searches instead of a substring searcher per line.
pub fn marker_ref(line: &str) -> Option<(KeyRef<'_>, &str)> {
    const MARK: &[u8] = b"<!-- mnemo:key=";
    let bytes = line.as_bytes();
    let at = memchr::memchr_iter(b'<', bytes).find(|&i| bytes[i..].starts_with(MARK))?;
    let start = at + MARK.len();
    let rest = &line[start..];
    let end = find_bytes(rest, "-->")?;
    let inner = rest[..end].trim();
    let split = find_bytes(inner, " hash=")?;
    let (key, hash) = (&inner[..split], &inner[split + " hash=".len()..]);
    let mut parts = key.splitn(4, '|');
    let (date, phase, agent) = (parts.next()?, parts.next()?, parts.next()?);
    let task = parts.next().filter(|t| !t.is_empty());
    let hash = hash.trim();
    if hash.is_empty() || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((
        KeyRef {
            date,
            phase,
            agent,
            task,
        },
        hash,
    ))
}

/// The first occurrence of `needle` in `hay` (as `str::find`): its first
/// byte by `memchr`, then a prefix check. For the short needles and lines
/// of a section, cheaper than building a substring searcher per call.
pub(crate) fn find_bytes(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let first = *n.first()?;
    memchr::memchr_iter(first, h).find(|&i| h[i..].starts_with(n))
}

/// Lines of `text` with their line endings (`split_inclusive('\n')`,
/// by `memchr`).
pub(crate) fn lines_inclusive(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut from = 0;
    std::iter::from_fn(move || {
        if from >= bytes.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &bytes[from..]).map_or(bytes.len(), |i| from + i + 1);
        let line = &text[from..end];
        from = end;
        Some(line)
    })
}

/// [`parse_section`], borrowed.
pub fn parse_spans(body: &str) -> Vec<Span<'_>> {
    // (marker, start, end): the marker's key and hash for an entry.
    type Part<'a> = (Option<(KeyRef<'a>, &'a str)>, usize, usize);
    let mut parts: Vec<Part<'_>> = Vec::new();
    let mut pos = 0;
    for line in lines_inclusive(body) {
        let start = pos;
        pos += line.len();
        if let Some(m) = marker_ref(line) {
            parts.push((Some(m), start, pos));
            continue;
        }
        let continuation = line.starts_with("  ") && !line.trim().is_empty();
        match parts.last_mut() {
            Some((Some(_), _, end)) if continuation => *end = pos,
            Some((None, _, end)) => *end = pos,
            _ => parts.push((None, start, pos)),
        }
    }
    parts
        .into_iter()
        .map(|(m, s, e)| match m {
            Some((key, hash)) => Span::Entry {
                key,
                hash,
                text: &body[s..e],
            },
            None => Span::Other(&body[s..e]),
        })
        .collect()
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

/// A part of the section while it is upserted: borrowed from the body or
/// the new entries until it changes.
enum Seg<'a> {
    Entry {
        key: KeyRef<'a>,
        hash: &'a str,
        text: Cow<'a, str>,
    },
    Other(Cow<'a, str>),
}

/// [`upsert`], also saying what happened to each entry (in input order).
pub fn upsert_each(body: &str, entries: &[NewEntry]) -> (String, UpsertReport, Vec<Upserted>) {
    let mut items: Vec<Seg<'_>> = parse_spans(body)
        .into_iter()
        .map(|s| match s {
            Span::Entry { key, hash, text } => Seg::Entry {
                key,
                hash,
                text: Cow::Borrowed(text),
            },
            Span::Other(o) => Seg::Other(Cow::Borrowed(o)),
        })
        .collect();
    let mut report = UpsertReport::default();
    let mut each = Vec::with_capacity(entries.len());
    for e in entries {
        let mut text = Cow::Borrowed(e.text.as_str());
        if !text.ends_with('\n') {
            text.to_mut().push('\n');
        }
        let want = KeyRef::of(&e.key);
        let existing = items.iter_mut().find_map(|i| match i {
            Seg::Entry { key, hash, text } if *key == want => Some((hash, text)),
            _ => None,
        });
        match existing {
            Some((hash, _)) if *hash == e.hash => {
                report.skipped += 1;
                each.push(Upserted::Unchanged);
            }
            Some((hash, old)) => {
                *hash = e.hash.as_str();
                *old = Cow::Owned(keep_human_lines(old.as_ref(), text.into_owned()));
                report.replaced += 1;
                each.push(Upserted::Updated);
            }
            None => {
                let at = insertion_point(&items);
                // A body that does not end its last line gets one first.
                if let Some(Seg::Other(o) | Seg::Entry { text: o, .. }) =
                    at.checked_sub(1).and_then(|i| items.get_mut(i))
                    && !o.ends_with('\n')
                {
                    o.to_mut().push('\n');
                }
                items.insert(
                    at,
                    Seg::Entry {
                        key: want,
                        hash: e.hash.as_str(),
                        text,
                    },
                );
                report.added += 1;
                each.push(Upserted::New);
            }
        }
    }
    let mut out =
        String::with_capacity(body.len() + entries.iter().map(|e| e.text.len() + 1).sum::<usize>());
    for i in &items {
        match i {
            Seg::Entry { text, .. } | Seg::Other(text) => out.push_str(text),
        }
    }
    (out, report, each)
}

/// After the last entry; without entries, before the trailing blank lines.
fn insertion_point(items: &[Seg<'_>]) -> usize {
    if let Some(i) = items.iter().rposition(|i| matches!(i, Seg::Entry { .. })) {
        return i + 1;
    }
    match items.last() {
        Some(Seg::Other(o)) if o.trim().is_empty() => items.len() - 1,
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

    /// The borrowed marker reader gives what `render::parse_marker` gives.
    #[test]
    fn marker_ref_agrees_with_parse_marker() {
        let lines = [
            "- **x** — HIGH 0.60 — y <!-- mnemo:key=2026-01-01|1|hermes hash=00ab -->\n",
            "- a <b> <!-- mnemo:key=2026-01-01|1|hermes|task-2 hash=FF -->",
            "<!-- mnemo:key=2026-01-01|1|hermes| hash=1 -->",
            "<!-- mnemo:key=2026-01-01|1 hash=1 -->",
            "<!-- mnemo:key=d|p|a hash= -->",
            "<!-- mnemo:key=d|p|a hash=12g -->",
            "<!-- mnemo:key=d|p|a hash=12",
            "<!-- mnemo:key=  d|p|a|t|u   hash=12  -->",
            "<!-- mnemo:key=d|p|a hash=12 hash=34 -->",
            "< <!- <!-- mnemo:key=d|p|a hash=ab --> <!-- mnemo:key=e|q|b hash=cd -->",
            "  - To next agent: no marker",
            "",
            "<!-- mnemo:key=d|p|a\u{a0}hash=12 -->",
            "<!-- mnemo:key=\u{2003}d|p|a hash=12\u{2003}-->",
        ];
        for l in lines {
            let got = marker_ref(l).map(|(k, h)| (k.to_key(), h.to_string()));
            assert_eq!(got, crate::render::parse_marker(l), "{l:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn marker_ref_agrees_on_generated_lines(
            line in "[ a<>!|-]{0,4}(<!-- mnemo:key=)?[ a-z0-9|.-]{0,12}( hash=)?[ 0-9a-hA-H]{0,6}(-->)?[ a-z<>-]{0,4}",
        ) {
            let got = marker_ref(&line).map(|(k, h)| (k.to_key(), h.to_string()));
            proptest::prop_assert_eq!(got, crate::render::parse_marker(&line));
        }
    }

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
