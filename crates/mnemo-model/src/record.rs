//! The subtask summary record: what an agent returns at the end of a phase.
//!
//! Layer 1 of the seed's §13 lives here: only the metadata fields listed in
//! [`KNOWN_FIELDS`] are promoted into a [`SummaryRecord`]. Anything else (raw
//! stdout or stderr, test output, stack traces, environment values) is never
//! copied; its name is reported in [`SummaryRecord::dropped`].

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

/// Status of a subtask, as the agent reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The work is done.
    Complete,
    /// Done in part; compressed with a warning, at least MEDIUM.
    Partial,
    /// Handed up to the orchestrator; never compressed.
    Escalated,
    /// Still running; never compressed.
    InProgress,
    /// Waiting on something; never compressed.
    Blocked,
}

impl Status {
    /// All statuses, in the order they are documented.
    pub const ALL: [Status; 5] = [
        Status::Complete,
        Status::Partial,
        Status::Escalated,
        Status::InProgress,
        Status::Blocked,
    ];

    /// The canonical spelling (`in_progress`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Complete => "complete",
            Status::Partial => "partial",
            Status::Escalated => "escalated",
            Status::InProgress => "in_progress",
            Status::Blocked => "blocked",
        }
    }

    /// Parses a status as people write it: `complete`, `Partial (tests flaky)`,
    /// `in-progress`, `✅ complete`. Returns the status and the reason, if any.
    pub fn parse_loose(raw: &str) -> Option<(Status, Option<String>)> {
        let trimmed = raw
            .trim_start_matches(|c: char| !c.is_alphanumeric())
            .trim();
        let lower = trimmed.to_lowercase();
        let candidates: [(&str, Status); 9] = [
            ("complete", Status::Complete),
            ("completed", Status::Complete),
            ("done", Status::Complete),
            ("partial", Status::Partial),
            ("escalated", Status::Escalated),
            ("in_progress", Status::InProgress),
            ("in-progress", Status::InProgress),
            ("in progress", Status::InProgress),
            ("blocked", Status::Blocked),
        ];
        // Longest spelling first so that "completed" wins over "complete".
        let mut best: Option<(usize, Status)> = None;
        for (word, status) in candidates {
            if let Some(rest) = lower.strip_prefix(word) {
                let at_boundary = rest.chars().next().is_none_or(|c| !c.is_alphanumeric());
                if at_boundary && best.is_none_or(|(len, _)| word.len() > len) {
                    best = Some((word.len(), status));
                }
            }
        }
        let (len, status) = best?;
        let rest = trimmed[len..].trim();
        let reason = rest
            .trim_start_matches(['(', '—', '-', ':', '–'])
            .trim_end_matches(')')
            .trim();
        let reason = (!reason.is_empty()).then(|| reason.to_string());
        Some((status, reason))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reviewer's verdict (Themis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// The phase passed review.
    Approved,
    /// The phase must be reworked.
    NeedsRevision,
    /// The phase failed review.
    Failed,
}

impl Verdict {
    /// The canonical spelling (`APPROVED`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approved => "APPROVED",
            Verdict::NeedsRevision => "NEEDS_REVISION",
            Verdict::Failed => "FAILED",
        }
    }

    /// Parses `APPROVED`, `approved ✅`, `needs revision`, `NEEDS-REVISION`, `failed`.
    pub fn parse_loose(raw: &str) -> Option<Verdict> {
        let cleaned: String = raw
            .trim()
            .trim_start_matches(|c: char| !c.is_alphanumeric())
            .chars()
            .map(|c| match c {
                '-' | ' ' => '_',
                c => c.to_ascii_uppercase(),
            })
            .collect();
        let word = cleaned
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or_default()
            .trim_end_matches('_');
        match word {
            "APPROVED" | "APPROVE" => Some(Verdict::Approved),
            "NEEDS_REVISION" | "NEEDS_REVISIONS" => Some(Verdict::NeedsRevision),
            "FAILED" | "FAIL" => Some(Verdict::Failed),
            _ => None,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where data entered the system, as the Agent Control Standard names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Typed by the user.
    UserInput,
    /// The system prompt or the runtime.
    System,
    /// Returned by a tool.
    ToolOutput,
    /// Retrieved from a knowledge source.
    Retrieved,
    /// Written by an agent.
    AgentGenerated,
    /// Received from another agent over A2A.
    A2aInbound,
    /// Anything else from outside.
    External,
}

impl Origin {
    /// Every origin of ACS v0.1.0.
    pub const ALL: [Origin; 7] = [
        Origin::UserInput,
        Origin::System,
        Origin::ToolOutput,
        Origin::Retrieved,
        Origin::AgentGenerated,
        Origin::A2aInbound,
        Origin::External,
    ];

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::UserInput => "user_input",
            Origin::System => "system",
            Origin::ToolOutput => "tool_output",
            Origin::Retrieved => "retrieved",
            Origin::AgentGenerated => "agent_generated",
            Origin::A2aInbound => "a2a_inbound",
            Origin::External => "external",
        }
    }

    /// Parses the wire spelling (case-insensitive, `-` accepted for `_`).
    pub fn parse(raw: &str) -> Option<Origin> {
        let norm = raw.trim().to_ascii_lowercase().replace('-', "_");
        Origin::ALL.into_iter().find(|o| o.as_str() == norm)
    }
}

/// What a summary derives from, when it is not the orchestrator's own text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Provenance {
    /// Origins of the content the summary was made from.
    pub origins: Vec<Origin>,
    /// Step (provenance) ids the summary was made from.
    pub derived_from: Vec<String>,
}

/// A field that Layer 1 refused to promote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedField {
    /// The field name as written.
    pub name: String,
    /// 1-based line where it was found, when the format tells.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

/// One subtask summary, after Layer 1 filtering.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SummaryRecord {
    /// Agent that did the work (`hermes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Phase identifier (`1`, `2a`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Date, `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// Feature slug.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feature: Option<String>,
    /// The subtask this summary reports on (`task`, `task_id`, `id`,
    /// `title` or `subtask`): the discriminator of the §17 key when one
    /// agent returns several summaries in one phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Files the phase changed.
    pub files_changed: Vec<String>,
    /// What was done.
    pub summary: String,
    /// Test status line (`✅ All passing`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tests: Option<String>,
    /// Coverage (`87%`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<String>,
    /// Reported status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// The reason given with the status (`partial (tests flaky)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    /// Blockers; empty when none.
    pub blockers: Vec<String>,
    /// Review verdict (Themis).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Number of critical issues found in review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_issues: Option<u32>,
    /// The agent's own one-sentence "what changed".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what: Option<String>,
    /// The agent's own "why it matters to the next agent".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The agent's own gotcha, decision or trade-off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gotcha: Option<String>,
    /// Sending agent of a batch entry (defaults to `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Receiving (next) agent of a batch entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// True when the entry says explicitly that it unblocks others.
    pub unblocks: bool,
    /// What it unblocks, when named.
    pub unblocks_refs: Vec<String>,
    /// Origins and step ids the summary derives from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// Fields refused by Layer 1, in input order.
    pub dropped: Vec<DroppedField>,
}

/// Every field name Layer 1 promotes (after normalisation: lower case, `-` and
/// spaces read as `_`), with the aliases people use.
pub const KNOWN_FIELDS: &[&str] = &[
    "agent",
    "phase",
    "date",
    "feature",
    "task",
    "task_id",
    "id",
    "title",
    "subtask",
    "files_changed",
    "files",
    "summary",
    "tests",
    "coverage",
    "status",
    "blockers",
    "verdict",
    "critical_issues",
    "what",
    "why",
    "gotcha",
    "from",
    "to",
    "unblocks",
    "provenance",
    "type",
    "tokens",
];

/// The field a (normalised) key maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    Agent,
    Phase,
    Date,
    Feature,
    Task,
    Files,
    Summary,
    Tests,
    Coverage,
    Status,
    Blockers,
    Verdict,
    CriticalIssues,
    What,
    Why,
    Gotcha,
    From,
    To,
    Unblocks,
    Provenance,
    /// Accepted metadata that mnemo does not use (`type`, `tokens`).
    Ignored,
}

/// Normalises a key as people write it (`Files Changed`, `files-changed`).
pub(crate) fn normalise_key(raw: &str) -> String {
    raw.trim()
        .chars()
        .map(|c| match c {
            '-' | ' ' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

pub(crate) fn field_for(key: &str) -> Option<Field> {
    Some(match normalise_key(key).as_str() {
        "agent" => Field::Agent,
        "phase" => Field::Phase,
        "date" => Field::Date,
        "feature" => Field::Feature,
        "task" | "task_id" | "id" | "title" | "subtask" => Field::Task,
        "files_changed" | "files" => Field::Files,
        "summary" => Field::Summary,
        "tests" => Field::Tests,
        "coverage" => Field::Coverage,
        "status" => Field::Status,
        "blockers" => Field::Blockers,
        "verdict" => Field::Verdict,
        "critical_issues" => Field::CriticalIssues,
        "what" => Field::What,
        "why" => Field::Why,
        "gotcha" => Field::Gotcha,
        "from" => Field::From,
        "to" => Field::To,
        "unblocks" => Field::Unblocks,
        "provenance" => Field::Provenance,
        "type" | "tokens" => Field::Ignored,
        _ => return None,
    })
}

/// True for the spellings people use for "nothing here".
pub(crate) fn is_none_word(s: &str) -> bool {
    matches!(
        s.trim().to_ascii_lowercase().as_str(),
        "" | "none" | "null" | "nil" | "n/a" | "na" | "-" | "[]" | "no" | "nothing"
    )
}

/// Checks `YYYY-MM-DD` (a real calendar date).
pub fn valid_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// Splits a comma-separated file list, trimming blanks and list markers.
pub fn split_file_list(s: &str) -> Vec<String> {
    s.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split([',', '\n'])
        .map(|p| {
            p.trim()
                .trim_start_matches(['-', '*'])
                .trim()
                .trim_matches(['"', '\'', '`'])
                .trim()
        })
        .filter(|p| !p.is_empty() && !is_none_word(p))
        .map(str::to_string)
        .collect()
}

// ---------------------------------------------------------------------------
// serde: the record is read field by field so that every error keeps the
// position that the JSON or YAML deserializer reports, and unknown fields are
// skipped without being buffered.
// ---------------------------------------------------------------------------

/// A string, a number or a boolean, read as text.
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text, E> {
                Ok(Text(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Like [`Text`] but `null` reads as `None`.
struct OptText(Option<String>);

impl<'de> Deserialize<'de> for OptText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OptText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or null")
            }
            fn visit_unit<E: de::Error>(self) -> Result<OptText, E> {
                Ok(OptText(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<OptText, E> {
                Ok(OptText(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<OptText, D::Error> {
                Ok(OptText(Some(Text::deserialize(d)?.0)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OptText, E> {
                Ok(OptText(Some(v.to_string())))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<OptText, E> {
                Ok(OptText(Some(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<OptText, E> {
                Ok(OptText(Some(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<OptText, E> {
                Ok(OptText(Some(v.to_string())))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<OptText, E> {
                Ok(OptText(Some(v.to_string())))
            }
        }
        d.deserialize_any(V)
    }
}

/// A list of strings, a single (comma-separated) string, or null.
struct TextList(Vec<String>);

impl<'de> Deserialize<'de> for TextList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TextList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of strings, a comma-separated string, or null")
            }
            fn visit_unit<E: de::Error>(self) -> Result<TextList, E> {
                Ok(TextList(Vec::new()))
            }
            fn visit_none<E: de::Error>(self) -> Result<TextList, E> {
                Ok(TextList(Vec::new()))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<TextList, D::Error> {
                TextList::deserialize(d)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TextList, E> {
                Ok(TextList(split_file_list(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TextList, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<OptText>()? {
                    if let Some(s) = item.0 {
                        let s = s.trim();
                        if !is_none_word(s) {
                            out.push(s.to_string());
                        }
                    }
                }
                Ok(TextList(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// `unblocks`: a boolean, or what is unblocked.
struct UnblocksValue(bool, Vec<String>);

impl<'de> Deserialize<'de> for UnblocksValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = UnblocksValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false, or a list of what this entry unblocks")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<UnblocksValue, E> {
                Ok(UnblocksValue(v, Vec::new()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<UnblocksValue, E> {
                Ok(UnblocksValue(false, Vec::new()))
            }
            fn visit_none<E: de::Error>(self) -> Result<UnblocksValue, E> {
                Ok(UnblocksValue(false, Vec::new()))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<UnblocksValue, D::Error> {
                UnblocksValue::deserialize(d)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<UnblocksValue, E> {
                match v.trim().to_ascii_lowercase().as_str() {
                    "true" | "yes" => Ok(UnblocksValue(true, Vec::new())),
                    "false" | "no" => Ok(UnblocksValue(false, Vec::new())),
                    _ => {
                        let refs = split_file_list(v);
                        Ok(UnblocksValue(!refs.is_empty(), refs))
                    }
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<UnblocksValue, A::Error> {
                let list = TextList::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(UnblocksValue(!list.0.is_empty(), list.0))
            }
        }
        d.deserialize_any(V)
    }
}

/// A non-negative count that may be written as a number or a numeric string.
struct Count(Option<u32>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative whole number")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Count, D::Error> {
                Count::deserialize(d)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                u32::try_from(v)
                    .map(|n| Count(Some(n)))
                    .map_err(|_| E::custom(format!("{v} is too large")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                u32::try_from(v)
                    .map(|n| Count(Some(n)))
                    .map_err(|_| E::custom(format!("{v} is not a non-negative whole number")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Count, E> {
                parse_count(v).map(Count).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// Parses a count as people write it (`2`, `0 critical`, `none`).
pub(crate) fn parse_count(v: &str) -> Result<Option<u32>, String> {
    let t = v.trim();
    if is_none_word(t) {
        return Ok(None);
    }
    let digits: String = t.chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.is_empty() {
        return Err(format!("{t:?} is not a non-negative whole number"));
    }
    digits
        .parse::<u32>()
        .map(Some)
        .map_err(|_| format!("{t:?} is too large"))
}

/// The provenance object: `{origins: [...], derived_from: [...]}`.
struct ProvenanceValue(Option<Provenance>);

impl<'de> Deserialize<'de> for ProvenanceValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ProvenanceValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object with `origins` and `derived_from` lists, or null")
            }
            fn visit_unit<E: de::Error>(self) -> Result<ProvenanceValue, E> {
                Ok(ProvenanceValue(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<ProvenanceValue, E> {
                Ok(ProvenanceValue(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<ProvenanceValue, D::Error> {
                ProvenanceValue::deserialize(d)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ProvenanceValue, A::Error> {
                let mut p = Provenance::default();
                while let Some(key) = map.next_key::<String>()? {
                    match normalise_key(&key).as_str() {
                        "origins" | "origin" => {
                            for raw in map.next_value::<TextList>()?.0 {
                                let origin = Origin::parse(&raw).ok_or_else(|| {
                                    de::Error::custom(format!(
                                        "unknown origin {raw:?}; expected one of {}",
                                        Origin::ALL.map(Origin::as_str).join(", ")
                                    ))
                                })?;
                                if !p.origins.contains(&origin) {
                                    p.origins.push(origin);
                                }
                            }
                        }
                        "derived_from" | "step_ids" | "steps" => {
                            p.derived_from = map.next_value::<TextList>()?.0;
                        }
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown provenance key {other:?}; expected `origins` or `derived_from`"
                            )));
                        }
                    }
                }
                Ok(ProvenanceValue(Some(p)))
            }
        }
        d.deserialize_any(V)
    }
}

fn set_text(slot: &mut Option<String>, v: Option<String>) {
    *slot = v
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && !is_none_word(s));
}

impl SummaryRecord {
    /// Applies one already-decoded textual field value (used by the markdown
    /// parser, which has no typed values). Errors are plain messages; the
    /// caller adds file, line and field.
    pub(crate) fn apply_text(&mut self, field: Field, value: &str) -> Result<(), String> {
        let v = value.trim();
        match field {
            Field::Agent => set_text(&mut self.agent, Some(v.trim_start_matches('@').into())),
            Field::Phase => set_text(&mut self.phase, Some(v.into())),
            Field::Date => {
                if !is_none_word(v) && !valid_date(v) {
                    return Err(format!("{v:?} is not a date in the form YYYY-MM-DD"));
                }
                set_text(&mut self.date, Some(v.into()));
            }
            Field::Feature => set_text(&mut self.feature, Some(v.into())),
            Field::Task => set_text(&mut self.task, Some(v.into())),
            Field::Files => self.files_changed = split_file_list(v),
            Field::Summary => self.summary = v.to_string(),
            Field::Tests => set_text(&mut self.tests, Some(v.into())),
            Field::Coverage => set_text(&mut self.coverage, Some(v.into())),
            Field::Status => self.set_status(v)?,
            Field::Blockers => self.blockers = split_file_list(v),
            Field::Verdict => self.set_verdict(v)?,
            Field::CriticalIssues => self.critical_issues = parse_count(v)?,
            Field::What => set_text(&mut self.what, Some(v.into())),
            Field::Why => set_text(&mut self.why, Some(v.into())),
            Field::Gotcha => set_text(&mut self.gotcha, Some(v.into())),
            Field::From => set_text(&mut self.from, Some(v.trim_start_matches('@').into())),
            Field::To => set_text(&mut self.to, Some(v.trim_start_matches('@').into())),
            Field::Unblocks => {
                let lower = v.to_ascii_lowercase();
                if lower == "true" || lower == "yes" {
                    self.unblocks = true;
                } else if lower == "false" || lower == "no" || is_none_word(v) {
                    self.unblocks = false;
                } else {
                    self.unblocks_refs = split_file_list(v);
                    self.unblocks = !self.unblocks_refs.is_empty();
                }
            }
            Field::Provenance => {
                return Err(
                    "provenance must be a structured object (use JSON or YAML input)".into(),
                );
            }
            Field::Ignored => {}
        }
        Ok(())
    }

    fn set_status(&mut self, v: &str) -> Result<(), String> {
        if is_none_word(v) {
            self.status = None;
            return Ok(());
        }
        let (status, reason) = Status::parse_loose(v).ok_or_else(|| {
            format!(
                "{v:?} is not a status; expected one of {}",
                Status::ALL.map(Status::as_str).join(", ")
            )
        })?;
        self.status = Some(status);
        self.status_reason = reason;
        Ok(())
    }

    fn set_verdict(&mut self, v: &str) -> Result<(), String> {
        if is_none_word(v) {
            self.verdict = None;
            return Ok(());
        }
        self.verdict = Some(Verdict::parse_loose(v).ok_or_else(|| {
            format!("{v:?} is not a verdict; expected APPROVED, NEEDS_REVISION or FAILED")
        })?);
        Ok(())
    }

    /// The text the scoring engine reads: the summary and the agent's own
    /// what / why / gotcha lines.
    pub fn scoring_text(&self) -> String {
        let mut out = self.summary.clone();
        for extra in [&self.what, &self.why, &self.gotcha].into_iter().flatten() {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(extra);
        }
        out
    }

    /// The sending agent: `from`, else `agent`.
    pub fn sender(&self) -> Option<&str> {
        self.from.as_deref().or(self.agent.as_deref())
    }

    /// True when the record says it was blocked or has blockers.
    pub fn has_blockers(&self) -> bool {
        !self.blockers.is_empty() || self.status == Some(Status::Blocked)
    }
}

/// Deserializes a textual field and applies it, so that a validation error
/// carries the position and path of the value.
struct Apply<'a>(Field, &'a mut SummaryRecord);

impl<'de> de::DeserializeSeed<'de> for Apply<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if let Some(v) = OptText::deserialize(d)?.0 {
            self.1.apply_text(self.0, &v).map_err(de::Error::custom)?;
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for SummaryRecord {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SummaryRecord;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a subtask summary (an object with at least `summary`)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SummaryRecord, A::Error> {
                let mut r = SummaryRecord::default();
                let mut saw_summary = false;
                while let Some(key) = map.next_key::<String>()? {
                    let Some(field) = field_for(&key) else {
                        map.next_value::<IgnoredAny>()?;
                        r.dropped.push(DroppedField {
                            name: key,
                            line: None,
                        });
                        continue;
                    };
                    match field {
                        Field::Files => r.files_changed = map.next_value::<TextList>()?.0,
                        Field::Blockers => r.blockers = map.next_value::<TextList>()?.0,
                        Field::CriticalIssues => r.critical_issues = map.next_value::<Count>()?.0,
                        Field::Unblocks => {
                            let u = map.next_value::<UnblocksValue>()?;
                            r.unblocks = u.0;
                            r.unblocks_refs = u.1;
                        }
                        Field::Provenance => r.provenance = map.next_value::<ProvenanceValue>()?.0,
                        Field::Ignored => {
                            map.next_value::<IgnoredAny>()?;
                        }
                        Field::Summary => {
                            saw_summary = true;
                            let v = map.next_value::<OptText>()?.0.unwrap_or_default();
                            r.summary = v.trim().to_string();
                        }
                        other => map.next_value_seed(Apply(other, &mut r))?,
                    }
                }
                if !saw_summary {
                    return Err(de::Error::missing_field("summary"));
                }
                Ok(r)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_loose_forms() {
        assert_eq!(
            Status::parse_loose("complete"),
            Some((Status::Complete, None))
        );
        assert_eq!(
            Status::parse_loose("partial (tests flaky)"),
            Some((Status::Partial, Some("tests flaky".into())))
        );
        assert_eq!(
            Status::parse_loose("In-Progress"),
            Some((Status::InProgress, None))
        );
        assert_eq!(
            Status::parse_loose("✅ Completed"),
            Some((Status::Complete, None))
        );
        assert_eq!(Status::parse_loose("completely wrong"), None);
        assert_eq!(Status::parse_loose("shipped"), None);
    }

    #[test]
    fn verdict_loose_forms() {
        assert_eq!(Verdict::parse_loose("APPROVED"), Some(Verdict::Approved));
        assert_eq!(
            Verdict::parse_loose("needs revision"),
            Some(Verdict::NeedsRevision)
        );
        assert_eq!(Verdict::parse_loose("✅ approved"), Some(Verdict::Approved));
        assert_eq!(Verdict::parse_loose("maybe"), None);
    }

    #[test]
    fn dates() {
        assert!(valid_date("2026-06-20"));
        assert!(valid_date("2024-02-29"));
        assert!(!valid_date("2023-02-29"));
        assert!(!valid_date("2026-13-01"));
        assert!(!valid_date("2026-1-01"));
        assert!(!valid_date("yesterday"));
    }

    #[test]
    fn file_lists() {
        assert_eq!(
            split_file_list(" a.py, b.py ,, none"),
            vec!["a.py".to_string(), "b.py".to_string()]
        );
        assert_eq!(
            split_file_list("[\"x/y.rs\", 'z.rs']"),
            vec!["x/y.rs".to_string(), "z.rs".to_string()]
        );
        assert!(split_file_list("null").is_empty());
    }
}
