//! Downstream-aware field masks (seed §5).
//!
//! A mask, chosen by [`Config::mask_for`] with SPEC §2's precedence (exact
//! pair, then `* → to`, then `from → *`, then `* → *`), says which fields of
//! a compressed entry survive for the receiving agent. `summary:60` keeps at
//! most the first 60 characters of the summary, cut at a word boundary
//! ([`first_words`]).

use mnemo_model::{Config, Status, SummaryRecord};
use serde::Serialize;

/// The parsed field set of a mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct FieldMask {
    /// Keep `date`.
    pub date: bool,
    /// Keep `agent`.
    pub agent: bool,
    /// Keep `files`.
    pub files: bool,
    /// Keep `summary`; `Some(Some(n))` keeps the first `n` characters.
    pub summary: Option<Option<usize>>,
    /// Keep `summary_semantic`.
    pub summary_semantic: bool,
    /// Keep `tests`.
    pub tests: bool,
    /// Keep `status`.
    pub status: bool,
    /// Keep `coverage`.
    pub coverage: bool,
    /// Keep `verdict`.
    pub verdict: bool,
    /// Keep `critical_issues`.
    pub critical_issues: bool,
    /// Keep `blockers`.
    pub blockers: bool,
}

impl FieldMask {
    /// Every field (the `* → themis` need, and what callers use without a mask).
    pub const ALL: FieldMask = FieldMask {
        date: true,
        agent: true,
        files: true,
        summary: Some(None),
        summary_semantic: true,
        tests: true,
        status: true,
        coverage: true,
        verdict: true,
        critical_issues: true,
        blockers: true,
    };

    /// Parses a mask's field list (`["date", "summary:60"]`); unknown names
    /// and bad limits are ignored (the configuration validates them).
    pub fn parse<S: AsRef<str>>(fields: &[S]) -> FieldMask {
        let mut m = FieldMask::default();
        for f in fields {
            let f = f.as_ref().trim();
            let (name, limit) = match f.split_once(':') {
                Some((n, l)) => (n.trim(), l.trim().parse::<usize>().ok().filter(|&n| n > 0)),
                None => (f, None),
            };
            match name {
                "date" => m.date = true,
                "agent" => m.agent = true,
                "files" => m.files = true,
                "summary" => m.summary = Some(limit),
                "summary_semantic" => m.summary_semantic = true,
                "tests" => m.tests = true,
                "status" => m.status = true,
                "coverage" => m.coverage = true,
                "verdict" => m.verdict = true,
                "critical_issues" => m.critical_issues = true,
                "blockers" => m.blockers = true,
                _ => {}
            }
        }
        m
    }

    /// Adds the report fields that the pair's §4 variant asks for
    /// (`Config::variant_for(..).include`): `verdict`, `critical_issues`,
    /// `coverage`, `tests`, `status`, `blockers` by name, and all of them
    /// for `all` (`* → themis`: "Preserve ALL fields"). The summary fields
    /// and their limits stay the mask's.
    #[must_use]
    pub fn with_variant(mut self, config: &Config, from: &str, to: &str) -> FieldMask {
        let Some(v) = config.variant_for(from, to) else {
            return self;
        };
        for name in &v.include {
            let all = name == "all";
            let is = |f: &str| all || name == f;
            self.verdict |= is("verdict");
            self.critical_issues |= is("critical_issues");
            self.coverage |= is("coverage");
            self.tests |= is("tests");
            self.status |= is("status");
            self.blockers |= is("blockers");
        }
        self
    }

    /// The mask the configuration gives the pair (every field when the
    /// configuration has no mask at all).
    pub fn for_pair(config: &Config, from: &str, to: &str) -> FieldMask {
        config
            .mask_for(from, to)
            .map_or(FieldMask::ALL, |m| FieldMask::parse(&m.fields))
    }
}

/// An entry after masking: only the kept fields are `Some`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct MaskedEntry {
    /// `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// Agent name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Files changed, comma-separated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<String>,
    /// Summary text (possibly cut).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The semantic summary (CRITICAL/HIGH).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_semantic: Option<String>,
    /// Test status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tests: Option<String>,
    /// Status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Coverage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<String>,
    /// Review verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Critical issues found in review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_issues: Option<u32>,
    /// Blockers, `; `-separated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blockers: Option<String>,
}

/// The first `n` characters of `s` (never splits a character).
pub fn first_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// At most `n` characters of `s`, whitespace runs collapsed, cut at a word
/// boundary (the `summary:60` of seed §5): a word that does not fit is left
/// out whole, so a path or a status code is never cut in half. A first
/// word longer than `n` is cut at `n` characters (there is no boundary
/// before it). An HTTP method left without its path and a dangling
/// function word (`of`, `the`) are dropped. Trailing separators (`,`, `;`, `:`, `—`) are dropped.
pub fn first_words(s: &str, n: usize) -> String {
    let s = one_line(s);
    if s.chars().count() <= n {
        return s;
    }
    let head = first_chars(&s, n);
    // The character after the cut: a space means the cut is on a boundary.
    let on_boundary = s[head.len()..].starts_with(' ');
    let cut = if on_boundary {
        head
    } else {
        match head.rfind(' ') {
            Some(i) => &head[..i],
            None => head,
        }
    };
    trim_dangling(cut).to_string()
}

/// `cut` without trailing separators (`,`, `;`, `:`, `—`), an HTTP method
/// left without its path (half a fact) or a dangling function word
/// (`security of`) at its end.
pub fn trim_dangling(cut: &str) -> &str {
    let mut cut = cut.trim_end_matches([',', ';', ':', ' ', '—', '-']);
    while let Some((rest, last)) = cut.rsplit_once(' ')
        && (HTTP_METHODS.contains(&last) || DANGLING.contains(&last.to_lowercase().as_str()))
    {
        cut = rest.trim_end_matches([',', ';', ':', ' ', '—', '-']);
    }
    cut
}

const HTTP_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
const DANGLING: &[&str] = &[
    "a", "an", "the", "of", "to", "and", "or", "with", "for", "in", "on", "at", "by", "from",
];

/// Applies `mask` to a record. `semantic` is the generated semantic summary
/// (CRITICAL/HIGH), kept when the mask keeps `summary_semantic`. Empty
/// values stay `None`.
pub fn apply_mask(record: &SummaryRecord, semantic: Option<&str>, mask: &FieldMask) -> MaskedEntry {
    let nonempty = |s: &str| (!s.trim().is_empty()).then(|| s.to_string());
    let keep = |on: bool, v: Option<&String>| {
        if on {
            v.and_then(|s| nonempty(s))
        } else {
            None
        }
    };
    let status = record.status.map(|s| match &record.status_reason {
        Some(r) => format!("{s} ({r})"),
        None => s.to_string(),
    });
    MaskedEntry {
        date: keep(mask.date, record.date.as_ref()),
        agent: keep(mask.agent, record.agent.as_ref()),
        files: if mask.files && !record.files_changed.is_empty() {
            Some(record.files_changed.join(", "))
        } else {
            None
        },
        summary: mask.summary.and_then(|limit| {
            let text = match limit {
                Some(n) => first_words(&record.summary, n),
                None => record.summary.clone(),
            };
            nonempty(&text)
        }),
        summary_semantic: if mask.summary_semantic {
            semantic.and_then(nonempty)
        } else {
            None
        },
        tests: keep(mask.tests, record.tests.as_ref()),
        status: keep(mask.status, status.as_ref()),
        coverage: keep(mask.coverage, record.coverage.as_ref()),
        verdict: if mask.verdict {
            record.verdict.map(|v| v.to_string())
        } else {
            None
        },
        critical_issues: if mask.critical_issues {
            record.critical_issues
        } else {
            None
        },
        blockers: if mask.blockers && !record.blockers.is_empty() {
            Some(record.blockers.join("; "))
        } else {
            None
        },
    }
}

/// Looks up the pair's mask in `config` and applies it.
pub fn mask_entry(
    config: &Config,
    record: &SummaryRecord,
    semantic: Option<&str>,
    from: &str,
    to: &str,
) -> MaskedEntry {
    apply_mask(record, semantic, &FieldMask::for_pair(config, from, to))
}

/// What an entry of the ZZ artifact shows besides its summary lines, as
/// the pair's mask decides (seed §5). A field is shown when the mask keeps
/// it, it has a value, and the entry's own lines do not already say it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct EntryFields {
    /// Show the date (the artifact states the gate's date once; an entry
    /// shows its own only when it differs).
    pub date: bool,
    /// Show the files: an expanded entry lists the files its lines do not
    /// name, a one-line entry its file names.
    pub files: bool,
    /// The status, when the mask keeps it and it is not `complete` (the
    /// preflight compresses only complete and partial work, so `complete`
    /// says nothing): `⚠️ partial`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The other kept fields, rendered in this order: `tests: …`,
    /// the verdict (`APPROVED`), `N critical issues`, `coverage …`, `blockers: …`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The fields `mask` lets an entry of `record` show; `said` is the text of
/// the entry's lines (a value it already contains is not repeated).
pub fn entry_fields(record: &SummaryRecord, mask: &FieldMask, said: &str) -> EntryFields {
    let said_low = said.to_lowercase();
    let unsaid = |v: &str| !v.trim().is_empty() && !said_low.contains(&v.trim().to_lowercase());
    let mut notes = Vec::new();
    if mask.tests
        && let Some(t) = record.tests.as_deref().filter(|t| unsaid(t))
    {
        notes.push(format!("tests: {}", one_line(t)));
    }
    // The verdict is a token (`APPROVED`): prose that says "approved" does
    // not state it. The token alone, without a `verdict` label: it names
    // itself (`NEEDS_REVISION`), and the label is a token an entry.
    if mask.verdict
        && let Some(v) = record
            .verdict
            .map(|v| v.to_string())
            .filter(|v| !said.contains(v.as_str()))
    {
        notes.push(v);
    }
    // No critical issues is what a review without them says: not repeated.
    if mask.critical_issues
        && let Some(n) = record.critical_issues.filter(|n| *n > 0)
    {
        let plural = if n == 1 { "" } else { "s" };
        let s = format!("{n} critical issue{plural}");
        let word = NUMBER_WORDS
            .get(n as usize)
            .map(|w| format!("{w} critical issue{plural}"));
        if unsaid(&s) && word.is_none_or(|w| unsaid(&w)) {
            notes.push(s);
        }
    }
    if mask.coverage
        && let Some(c) = record.coverage.as_deref().filter(|c| unsaid(c))
    {
        notes.push(format!("coverage {}", one_line(c)));
    }
    if mask.blockers && !record.blockers.is_empty() {
        let b = record.blockers.join("; ");
        if unsaid(&b) {
            notes.push(format!("blockers: {}", one_line(&b)));
        }
    }
    let status = match record.status {
        Some(Status::Complete) | None => None,
        Some(s) if mask.status => Some(match s {
            Status::Partial => "⚠️ partial".to_string(),
            other => other.to_string(),
        }),
        // A partial entry is always flagged (seed §9: compress with ⚠️).
        Some(Status::Partial) => Some("⚠️ partial".to_string()),
        Some(_) => None,
    };
    EntryFields {
        date: mask.date,
        files: mask.files,
        status,
        notes,
    }
}

const NUMBER_WORDS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
];

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_words_cuts_at_a_word_boundary() {
        let s = "POST /v2/payments/intents returns 202 Accepted with a Location header";
        let c = first_words(s, 60);
        assert_eq!(c, "POST /v2/payments/intents returns 202 Accepted");
        assert!(c.chars().count() <= 60);
        // Exactly on a boundary: the word before it is kept.
        assert_eq!(first_words("alpha beta gamma", 10), "alpha beta");
        // Inside a word: that word goes whole.
        assert_eq!(first_words("alpha beta gamma", 13), "alpha beta");
        assert_eq!(first_words("short", 60), "short");
        assert_eq!(first_words("a,  b\n c", 60), "a, b c");
        assert_eq!(first_words("alpha, beta", 8), "alpha");
        assert_eq!(first_words("supercalifragilistic", 5), "super");
        assert_eq!(first_words("héllo wörld", 8), "héllo");
    }

    #[test]
    fn the_summary_limit_of_a_mask_never_cuts_a_word() {
        let r = SummaryRecord {
            summary:
                "Archived the notes on GET /unsubscribe?token=<jwt>&list=<slug> and the signing key"
                    .into(),
            ..SummaryRecord::default()
        };
        let m = apply_mask(&r, None, &FieldMask::parse(&["summary:60"]));
        let s = m.summary.unwrap_or_default();
        // The path does not fit: it goes whole, and so do its method and
        // the dangling `on`.
        assert_eq!(s, "Archived the notes");
        assert!(s.chars().count() <= 60, "{s}");
    }

    #[test]
    fn first_chars_respects_char_boundaries() {
        assert_eq!(first_chars("héllo wörld", 7), "héllo w");
        assert_eq!(first_chars("ab", 60), "ab");
        assert_eq!(first_chars("✅✅✅", 2), "✅✅");
    }
}
