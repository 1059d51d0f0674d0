//! Cross-references (seed §7): detection, ids, and the `_xref/index.md`
//! document.
//!
//! * [`detect`] finds what a compressed entry adds: a CRITICAL entry that
//!   names an endpoint → `E`, a new table / column / migration → `M`, a new
//!   component → `C`; a review with a decision note or an ADR reference →
//!   `D`. [`unblock_links`] links an entry that was blocked to the entry that
//!   completes it (a `D` row of type `unblocks`).
//! * [`NextIds`] reads and writes `_xref/_next_id.json`: one counter per
//!   prefix (`E`, `M`, `C`, `D`). Pantheon's older layout
//!   (`decisions`, `entities`, `milestones`, `tasks`) is read and carried
//!   over — `D` starts at `decisions`, `E`/`M`/`C` at `entities` — and the
//!   legacy keys are kept (and advanced), never reset.
//! * [`XrefIndex`] parses the index tolerantly (hand-edited rows, extra or
//!   reordered columns, placeholder rows, missing tables — created) and
//!   renders it precisely: rendering a parsed index gives the same bytes,
//!   and every byte outside the three tables is kept.
//! * Ids are stable: merging the same entity again (same type and
//!   normalised name) keeps its id; an explicit id already used by another
//!   entity is an error.

use std::collections::BTreeMap;
use std::fmt;

use mnemo_model::{Status, SummaryRecord, agent_key};
use mnemo_score::Band;
use serde::Serialize;

use crate::facts::{FactKind, Facts};

/// Errors of the cross-reference index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XrefError {
    /// `_next_id.json` is not a JSON object of counters.
    #[error("_xref/_next_id.json: {0}")]
    NextIds(String),
    /// An id is already used by another entity.
    #[error("{id} is already used for {existing:?}, not {new:?}")]
    IdConflict {
        /// The id.
        id: String,
        /// What the index says it is.
        existing: String,
        /// What was to be written under it.
        new: String,
    },
    /// A reference id that is not `E0001`-like.
    #[error("{0:?} is not a reference id (E, M, C or D and four digits)")]
    BadId(String),
}

/// The prefixes of reference ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Prefix {
    /// Endpoint.
    E,
    /// Migration (table, column).
    M,
    /// Component.
    C,
    /// Decision (and blocked → unblocked link).
    D,
}

impl Prefix {
    /// The letter.
    pub fn letter(self) -> char {
        match self {
            Prefix::E => 'E',
            Prefix::M => 'M',
            Prefix::C => 'C',
            Prefix::D => 'D',
        }
    }

    /// The entity type written in the index.
    pub fn entity_type(self) -> &'static str {
        match self {
            Prefix::E => "endpoint",
            Prefix::M => "migration",
            Prefix::C => "component",
            Prefix::D => "decision",
        }
    }

    fn from_letter(c: char) -> Option<Prefix> {
        match c.to_ascii_uppercase() {
            'E' => Some(Prefix::E),
            'M' => Some(Prefix::M),
            'C' => Some(Prefix::C),
            'D' => Some(Prefix::D),
            _ => None,
        }
    }
}

/// A reference id such as `E0001`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct RefId {
    /// The prefix.
    pub prefix: Prefix,
    /// The number (1-based).
    pub n: u32,
}

impl RefId {
    /// Parses `E0001` (case-insensitive prefix, at least one digit).
    pub fn parse(s: &str) -> Result<RefId, XrefError> {
        let s = s.trim();
        let mut chars = s.chars();
        let prefix = chars
            .next()
            .and_then(Prefix::from_letter)
            .ok_or_else(|| XrefError::BadId(s.to_string()))?;
        let digits = chars.as_str();
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(XrefError::BadId(s.to_string()));
        }
        let n = digits
            .parse()
            .map_err(|_| XrefError::BadId(s.to_string()))?;
        Ok(RefId { prefix, n })
    }
}

impl fmt::Display for RefId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{:04}", self.prefix.letter(), self.n)
    }
}

/// A cross-reference found in an entry, before it has an id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewRef {
    /// Which id family.
    pub prefix: Prefix,
    /// Type column (`endpoint`, `migration`, `component`, `ADR`, `decision`, `unblocks`).
    pub kind: String,
    /// Name (`POST /auth/login`, `refresh_tokens table`) or decision summary.
    pub name: String,
    /// File reference (By Entity: Location; Decision Links: Links To).
    pub location: String,
    /// Phase label, written `P1`.
    pub phase: String,
    /// Agent display name.
    pub agent: String,
}

impl NewRef {
    /// The identity of the entity: prefix, type and normalised name.
    pub fn identity(&self) -> (Prefix, String, String) {
        (
            self.prefix,
            self.kind.to_ascii_lowercase(),
            normalise_name(&self.name),
        )
    }
}

/// Normalises an entity name for identity: backticks and trailing
/// punctuation dropped, whitespace collapsed, lower case, a trailing `/`
/// of a path dropped.
pub fn normalise_name(name: &str) -> String {
    let s: String = name.chars().filter(|c| *c != '`').collect();
    let s = s
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let s = s.trim_end_matches(['.', ',', ';']);
    if s.len() > 1 {
        s.trim_end_matches('/').to_string()
    } else {
        s.to_string()
    }
}

fn phase_label(phase: &str) -> String {
    let p = phase.trim();
    if p.is_empty() {
        String::new()
    } else if p.starts_with(['P', 'p']) && p[1..].starts_with(|c: char| c.is_ascii_digit()) {
        format!("P{}", &p[1..])
    } else {
        format!("P{p}")
    }
}

/// The file of `files` that best locates `name` (a file whose path names it,
/// then one under a matching directory, then the first file).
fn locate(files: &[String], name: &str, hints: &[&str]) -> String {
    let lname = name.to_lowercase();
    let token = lname
        .split(['/', ' ', '(', '{'])
        .rfind(|t| t.len() > 2)
        .unwrap_or_default()
        .to_string();
    let has_token = |f: &&String| !token.is_empty() && f.to_lowercase().contains(&token);
    let has_hint = |f: &&String| hints.iter().any(|h| f.to_lowercase().contains(h));
    files
        .iter()
        .find(|f| has_hint(f) && has_token(f))
        .or_else(|| files.iter().find(has_hint))
        .or_else(|| files.iter().find(has_token))
        .or_else(|| files.first())
        .cloned()
        .unwrap_or_default()
}

/// Cross-references that one compressed entry adds (seed §7 rules).
pub fn detect(
    record: &SummaryRecord,
    band: Band,
    phase: &str,
    agent: &str,
    facts: &Facts,
) -> Vec<NewRef> {
    let mut out = Vec::new();
    let files = &record.files_changed;
    let p = phase_label(phase);
    let mk = |prefix: Prefix, kind: &str, name: String, location: String| NewRef {
        prefix,
        kind: kind.to_string(),
        name,
        location,
        phase: p.clone(),
        agent: agent.to_string(),
    };
    if band == Band::Critical {
        for f in facts.of(FactKind::Endpoint) {
            if f.text.contains(' ') {
                let loc = locate(
                    files,
                    &f.text,
                    &["router", "route", "api", "handler", "controller", "view"],
                );
                out.push(mk(Prefix::E, "endpoint", f.text.clone(), loc));
            }
        }
        if facts.schema_change {
            let mig_file = files
                .iter()
                .find(|f| f.to_lowercase().contains("migration"))
                .cloned();
            let tables: Vec<_> = facts.of(FactKind::Table).collect();
            if tables.is_empty() {
                for m in facts.of(FactKind::Migration) {
                    let loc = mig_file
                        .clone()
                        .unwrap_or_else(|| locate(files, &m.text, &["migration"]));
                    out.push(mk(
                        Prefix::M,
                        "migration",
                        format!("migration {}", m.text),
                        loc,
                    ));
                }
            }
            for t in tables {
                let loc = mig_file
                    .clone()
                    .unwrap_or_else(|| locate(files, &t.text, &["migration", "model", "schema"]));
                out.push(mk(Prefix::M, "migration", format!("{} table", t.text), loc));
            }
        }
        if facts.new_component {
            for c in facts.of(FactKind::Component) {
                let loc = locate(files, &c.text, &["component", "page", "view"]);
                out.push(mk(Prefix::C, "component", c.text.clone(), loc));
            }
        }
    }
    // A review with a decision note or an ADR reference.
    let text = record.scoring_text();
    let is_review = record.verdict.is_some() || agent_key(agent) == "themis";
    let adr = find_adr(&text);
    let decision_note = text.lines().any(|l| {
        let t = l.trim().to_lowercase();
        t.starts_with("## decision") || t.starts_with("decision:")
    });
    if is_review && (adr.is_some() || decision_note) || adr.is_some() && band == Band::Critical {
        let summary = facts
            .decisions
            .first()
            .or(facts.sentences.first())
            .map(|s| crate::summary::cut_words(s, 100))
            .unwrap_or_default();
        let kind = if adr.is_some() { "ADR" } else { "decision" };
        out.push(mk(Prefix::D, kind, summary, adr.unwrap_or_default()));
    }
    // Stable order, one per identity.
    let mut seen = std::collections::HashSet::new();
    out.retain(|r| seen.insert(r.identity()));
    out
}

/// An ADR reference in text: a `_notes/ADR-….md` / `adr/….md` path, or `ADR-0001`.
fn find_adr(text: &str) -> Option<String> {
    for word in text
        .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | ';' | '`' | '"' | '\''))
    {
        let w = word.trim_end_matches(['.', ':']);
        let lw = w.to_lowercase();
        if (lw.contains("adr") && lw.ends_with(".md")) || (lw.starts_with("adr-") && lw.len() > 4) {
            return Some(w.to_string());
        }
    }
    None
}

/// An entry that was blocked in an earlier phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockedEntry {
    /// Its phase.
    pub phase: String,
    /// Its agent.
    pub agent: String,
    /// What blocked it.
    pub blockers: Vec<String>,
}

/// Links from previously blocked entries to the entries that now complete
/// them: the same agent completing, or an entry whose `unblocks` names the
/// blocked agent or phase.
pub fn unblock_links(
    blocked: &[BlockedEntry],
    current: &[(&str, &str, &SummaryRecord)],
) -> Vec<NewRef> {
    let mut out = Vec::new();
    for b in blocked {
        let bkey = agent_key(&b.agent);
        let bphase = phase_label(&b.phase);
        for (phase, agent, r) in current {
            if r.status != Some(Status::Complete) {
                continue;
            }
            let same_agent = agent_key(agent) == bkey;
            let names_it = r.unblocks_refs.iter().any(|u| {
                let u = agent_key(u);
                u == bkey || phase_label(&u) == bphase.to_lowercase() || u == bphase.to_lowercase()
            });
            if same_agent || names_it {
                let p = phase_label(phase);
                out.push(NewRef {
                    prefix: Prefix::D,
                    kind: "unblocks".into(),
                    name: format!("{bphase} {} blocked → unblocked by {p} {agent}", b.agent),
                    location: b.blockers.join("; "),
                    phase: p,
                    agent: agent.to_string(),
                });
                break;
            }
        }
    }
    out
}

/// `_xref/_next_id.json`: the next number of each prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NextIds {
    /// Next `E` number.
    pub e: u32,
    /// Next `M` number.
    pub m: u32,
    /// Next `C` number.
    pub c: u32,
    /// Next `D` number.
    pub d: u32,
    /// Other keys (Pantheon's `decisions`, `entities`, `milestones`,
    /// `tasks`, …), carried over.
    pub legacy: BTreeMap<String, serde_json::Value>,
}

impl Default for NextIds {
    fn default() -> Self {
        NextIds {
            e: 1,
            m: 1,
            c: 1,
            d: 1,
            legacy: BTreeMap::new(),
        }
    }
}

impl NextIds {
    /// Parses either layout; an empty text is a fresh file.
    pub fn parse(text: &str) -> Result<NextIds, XrefError> {
        if text.trim().is_empty() {
            return Ok(NextIds::default());
        }
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| XrefError::NextIds(e.to_string()))?;
        let obj = v
            .as_object()
            .ok_or_else(|| XrefError::NextIds("expected a JSON object of counters".into()))?;
        let num = |k: &str| -> Result<Option<u32>, XrefError> {
            match obj.get(k) {
                None => Ok(None),
                Some(x) => x
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .map(Some)
                    .ok_or_else(|| {
                        XrefError::NextIds(format!("`{k}` must be a non-negative whole number"))
                    }),
            }
        };
        let mut ids = NextIds::default();
        let entities = num("entities")?;
        let decisions = num("decisions")?;
        ids.e = num("E")?.or(entities).unwrap_or(1).max(1);
        ids.m = num("M")?.or(entities).unwrap_or(1).max(1);
        ids.c = num("C")?.or(entities).unwrap_or(1).max(1);
        ids.d = num("D")?.or(decisions).unwrap_or(1).max(1);
        for (k, v) in obj {
            if !matches!(k.as_str(), "E" | "M" | "C" | "D") {
                ids.legacy.insert(k.clone(), v.clone());
            }
        }
        Ok(ids)
    }

    /// The counter of a prefix.
    pub fn get(&self, p: Prefix) -> u32 {
        match p {
            Prefix::E => self.e,
            Prefix::M => self.m,
            Prefix::C => self.c,
            Prefix::D => self.d,
        }
    }

    fn slot(&mut self, p: Prefix) -> &mut u32 {
        match p {
            Prefix::E => &mut self.e,
            Prefix::M => &mut self.m,
            Prefix::C => &mut self.c,
            Prefix::D => &mut self.d,
        }
    }

    /// Raises counters above every id already used in `index`.
    pub fn observe(&mut self, index: &XrefIndex) {
        for id in index.ids() {
            let s = self.slot(id.prefix);
            *s = (*s).max(id.n.saturating_add(1));
        }
    }

    /// Takes the next id of a prefix.
    pub fn take(&mut self, p: Prefix) -> RefId {
        let s = self.slot(p);
        let n = *s;
        *s = n.saturating_add(1);
        RefId { prefix: p, n }
    }

    /// Renders the file: `C`, `D`, `E`, `M`, then the legacy keys; the
    /// legacy `decisions` and `entities` counters advance with `D` and with
    /// the largest of `E`, `M`, `C`, so older tools never reuse a number.
    pub fn render(&self) -> String {
        let mut map = serde_json::Map::new();
        map.insert("C".into(), self.c.into());
        map.insert("D".into(), self.d.into());
        map.insert("E".into(), self.e.into());
        map.insert("M".into(), self.m.into());
        for (k, v) in &self.legacy {
            let v = match k.as_str() {
                "decisions" => serde_json::Value::from(
                    self.d.max(
                        v.as_u64()
                            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
                    ),
                ),
                "entities" => serde_json::Value::from(
                    self.e.max(self.m).max(self.c).max(
                        v.as_u64()
                            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
                    ),
                ),
                _ => v.clone(),
            };
            map.insert(k.clone(), v);
        }
        let mut s =
            serde_json::to_string_pretty(&serde_json::Value::Object(map)).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// Which table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum TableKind {
    /// `## By Feature`.
    ByFeature,
    /// `## By Entity`.
    ByEntity,
    /// `## Decision Links`.
    DecisionLinks,
}

impl TableKind {
    const ALL: [TableKind; 3] = [
        TableKind::ByFeature,
        TableKind::ByEntity,
        TableKind::DecisionLinks,
    ];

    fn heading(self) -> &'static str {
        match self {
            TableKind::ByFeature => "By Feature",
            TableKind::ByEntity => "By Entity",
            TableKind::DecisionLinks => "Decision Links",
        }
    }

    /// The standard columns.
    pub fn columns(self) -> &'static [&'static str] {
        match self {
            TableKind::ByFeature => &["Feature", "Phase(s)", "Agent(s)", "Priority", "Summary"],
            TableKind::ByEntity => &["Entity ID", "Type", "Name", "Location", "Phase", "Agent"],
            TableKind::DecisionLinks => &["Ref ID", "Type", "Summary", "Links To", "Phase"],
        }
    }

    /// Which standard column a header cell names.
    fn column_of(self, header: &str) -> Option<usize> {
        let h: String = header
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect::<String>()
            .to_lowercase();
        let names: &[&[&str]] = match self {
            TableKind::ByFeature => &[
                &["feature"],
                &["phases", "phase"],
                &["agents", "agent"],
                &["priority", "band"],
                &["summary"],
            ],
            TableKind::ByEntity => &[
                &["entityid", "id", "refid"],
                &["type"],
                &["name", "entity"],
                &["location", "file", "files"],
                &["phase"],
                &["agent"],
            ],
            TableKind::DecisionLinks => &[
                &["refid", "id", "decisionid"],
                &["type"],
                &["summary", "decision"],
                &["linksto", "links", "link"],
                &["phase"],
            ],
        };
        names.iter().position(|alts| alts.contains(&h.as_str()))
    }

    fn of_heading(title: &str) -> Option<TableKind> {
        let t: String = title
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect::<String>()
            .to_lowercase();
        match t.as_str() {
            "byfeature" => Some(TableKind::ByFeature),
            "byentity" => Some(TableKind::ByEntity),
            "decisionlinks" | "decisions" => Some(TableKind::DecisionLinks),
            _ => None,
        }
    }
}

/// One row: the standard cells, then cells of extra columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// Standard cells, in [`TableKind::columns`] order.
    pub cells: Vec<String>,
    /// Cells of extra columns, in their order.
    pub extra: Vec<String>,
}

impl Row {
    /// The cell of standard column `i` (empty when absent).
    pub fn cell(&self, i: usize) -> &str {
        self.cells.get(i).map_or("", String::as_str)
    }
}

/// A table of the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Table {
    /// Which table.
    pub kind: TableKind,
    /// Names of extra (non-standard) columns, as written.
    pub extra_columns: Vec<String>,
    /// Data rows.
    pub rows: Vec<Row>,
    /// Placeholder lines (`| _(empty — …)_ | | |`), kept verbatim while the
    /// table has no rows.
    pub placeholder: Vec<String>,
}

impl Table {
    fn new(kind: TableKind) -> Table {
        Table {
            kind,
            extra_columns: Vec::new(),
            rows: Vec::new(),
            placeholder: Vec::new(),
        }
    }

    fn render(&self, out: &mut String) {
        let headers: Vec<&str> = self
            .kind
            .columns()
            .iter()
            .copied()
            .chain(self.extra_columns.iter().map(String::as_str))
            .collect();
        out.push_str(&format!("| {} |\n", headers.join(" | ")));
        out.push('|');
        for h in &headers {
            out.push_str(&"-".repeat(h.chars().count() + 2));
            out.push('|');
        }
        out.push('\n');
        if self.rows.is_empty() {
            for p in &self.placeholder {
                out.push_str(p);
                out.push('\n');
            }
        }
        for r in &self.rows {
            let n = self.kind.columns().len();
            let mut cells: Vec<String> = (0..n).map(|i| escape_cell(r.cell(i))).collect();
            cells.extend(r.extra.iter().map(|c| escape_cell(c)));
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
    }
}

fn escape_cell(s: &str) -> String {
    let one_line = s.replace(['\n', '\r'], " ");
    let mut out = String::with_capacity(one_line.len());
    let mut prev = '\0';
    for c in one_line.chars() {
        if c == '|' && prev != '\\' {
            out.push('\\');
        }
        out.push(c);
        prev = c;
    }
    out
}

/// Splits a table line into trimmed cells (`\|` is an escaped bar).
fn split_row(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = if t.ends_with('|') && !t.ends_with("\\|") {
        &t[..t.len() - 1]
    } else {
        t
    };
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut prev = '\0';
    for c in t.chars() {
        if c == '|' && prev != '\\' {
            cells.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(c);
        }
        prev = c;
    }
    cells.push(cur.trim().to_string());
    cells
}

fn is_separator(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|') && t.contains('-') && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

/// A part of the index document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Block {
    /// Text that mnemo does not own, kept byte for byte.
    Raw(String),
    /// One of the three tables, with its heading line and the lines between
    /// heading and table.
    Section {
        /// The heading line, with its line ending.
        heading: String,
        /// Lines between heading and table, verbatim.
        gap: String,
        /// The table.
        table: Table,
    },
}

/// The parsed `_xref/index.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct XrefIndex {
    /// The document, in order.
    pub blocks: Vec<Block>,
}

/// Parses `_xref/index.md`. Never fails on markdown: anything it does not
/// recognise is kept as raw text; a missing table is created (at the end).
pub fn parse_index(text: &str) -> XrefIndex {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut blocks: Vec<Block> = Vec::new();
    let mut raw = String::new();
    let mut i = 0;
    let mut seen: Vec<TableKind> = Vec::new();
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_end();
        let kind = trimmed
            .strip_prefix("## ")
            .and_then(TableKind::of_heading)
            .filter(|k| !seen.contains(k));
        let Some(kind) = kind else {
            raw.push_str(line);
            i += 1;
            continue;
        };
        seen.push(kind);
        if !raw.is_empty() {
            blocks.push(Block::Raw(std::mem::take(&mut raw)));
        }
        let heading = line.to_string();
        i += 1;
        // Gap: lines before the table, up to the next heading.
        let mut gap = String::new();
        while i < lines.len()
            && !lines[i].trim_start().starts_with('|')
            && !lines[i].starts_with('#')
        {
            // Stop the gap at a blank line followed by non-table text, so
            // that a section without a table keeps its prose as raw text.
            gap.push_str(lines[i]);
            i += 1;
        }
        let mut table = Table::new(kind);
        if i < lines.len() && lines[i].trim_start().starts_with('|') {
            let header = split_row(lines[i]);
            i += 1;
            let map: Vec<Option<usize>> = header.iter().map(|h| kind.column_of(h)).collect();
            table.extra_columns = header
                .iter()
                .zip(&map)
                .filter(|(_, m)| m.is_none())
                .map(|(h, _)| h.clone())
                .collect();
            if i < lines.len() && is_separator(lines[i]) {
                i += 1;
            }
            while i < lines.len() && lines[i].trim_start().starts_with('|') {
                let l = lines[i];
                i += 1;
                if is_separator(l) {
                    continue;
                }
                let cells = split_row(l);
                if cells.first().is_some_and(|c| c.starts_with("_(")) {
                    table
                        .placeholder
                        .push(l.trim_end_matches(['\n', '\r']).to_string());
                    continue;
                }
                let n = kind.columns().len();
                let mut row = Row {
                    cells: vec![String::new(); n],
                    extra: Vec::new(),
                };
                for (j, c) in cells.into_iter().enumerate() {
                    match map.get(j) {
                        Some(Some(k)) => row.cells[*k] = c,
                        _ => row.extra.push(c),
                    }
                }
                if row.cells.iter().all(String::is_empty) && row.extra.iter().all(String::is_empty)
                {
                    continue;
                }
                table.rows.push(row);
            }
        } else {
            // No table under the heading: the gap is prose; keep it after
            // a created table.
            raw = std::mem::take(&mut gap);
            gap = "\n".to_string();
        }
        blocks.push(Block::Section {
            heading,
            gap,
            table,
        });
    }
    if !raw.is_empty() {
        blocks.push(Block::Raw(raw));
    }
    let mut index = XrefIndex { blocks };
    index.ensure_tables();
    index
}

impl XrefIndex {
    /// An empty index with the title and the three tables.
    pub fn empty() -> XrefIndex {
        parse_index("# Cross-Reference Index\n")
    }

    fn ensure_tables(&mut self) {
        if self.blocks.is_empty() {
            self.blocks
                .push(Block::Raw("# Cross-Reference Index\n".into()));
        }
        for kind in TableKind::ALL {
            if self.table(kind).is_some() {
                continue;
            }
            if let Some(Block::Raw(last)) = self.blocks.last_mut()
                && !last.ends_with('\n')
            {
                last.push('\n');
            }
            let needs_blank = match self.blocks.last() {
                Some(Block::Raw(r)) => !r.ends_with("\n\n"),
                Some(Block::Section { .. }) => true,
                None => false,
            };
            let heading = if needs_blank {
                format!("\n## {}\n", kind.heading())
            } else {
                format!("## {}\n", kind.heading())
            };
            self.blocks.push(Block::Section {
                heading,
                gap: "\n".into(),
                table: Table::new(kind),
            });
        }
    }

    /// The table of a kind.
    pub fn table(&self, kind: TableKind) -> Option<&Table> {
        self.blocks.iter().find_map(|b| match b {
            Block::Section { table, .. } if table.kind == kind => Some(table),
            _ => None,
        })
    }

    fn table_mut(&mut self, kind: TableKind) -> Option<&mut Table> {
        self.ensure_tables();
        self.blocks.iter_mut().find_map(|b| match b {
            Block::Section { table, .. } if table.kind == kind => Some(table),
            _ => None,
        })
    }

    /// Renders the document. `render(parse(render(x))) == render(x)`, and a
    /// document in canonical form renders to itself byte for byte.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for b in &self.blocks {
            match b {
                Block::Raw(r) => out.push_str(r),
                Block::Section {
                    heading,
                    gap,
                    table,
                } => {
                    out.push_str(heading);
                    if !heading.ends_with('\n') {
                        out.push('\n');
                    }
                    out.push_str(gap);
                    table.render(&mut out);
                }
            }
        }
        out
    }

    /// Every reference id used in By Entity and Decision Links.
    pub fn ids(&self) -> Vec<RefId> {
        let mut out = Vec::new();
        for kind in [TableKind::ByEntity, TableKind::DecisionLinks] {
            if let Some(t) = self.table(kind) {
                out.extend(t.rows.iter().filter_map(|r| RefId::parse(r.cell(0)).ok()));
            }
        }
        out
    }

    /// The id of an entity already in the index (same prefix, type and
    /// normalised name).
    pub fn find(&self, r: &NewRef) -> Option<RefId> {
        let (kind, name_col) = match r.prefix {
            Prefix::D => (TableKind::DecisionLinks, 2),
            _ => (TableKind::ByEntity, 2),
        };
        let t = self.table(kind)?;
        let want = r.identity();
        t.rows.iter().find_map(|row| {
            let id = RefId::parse(row.cell(0)).ok()?;
            let ident = (
                id.prefix,
                row.cell(1).to_ascii_lowercase(),
                normalise_name(row.cell(name_col)),
            );
            (ident == want).then_some(id)
        })
    }

    /// Inserts a reference under an explicit id. `Ok(false)`: the same
    /// entity is already there (skipped); error: the id is used by another
    /// entity.
    pub fn insert(&mut self, id: RefId, r: &NewRef) -> Result<bool, XrefError> {
        let (kind, name_col) = match r.prefix {
            Prefix::D => (TableKind::DecisionLinks, 2),
            _ => (TableKind::ByEntity, 2),
        };
        if id.prefix != r.prefix {
            return Err(XrefError::IdConflict {
                id: id.to_string(),
                existing: format!("the {} family", id.prefix.entity_type()),
                new: format!("{} {}", r.kind, r.name),
            });
        }
        let id_s = id.to_string();
        if let Some(t) = self.table(kind) {
            for row in &t.rows {
                if RefId::parse(row.cell(0)).ok() == Some(id) {
                    let same = row.cell(1).eq_ignore_ascii_case(&r.kind)
                        && normalise_name(row.cell(name_col)) == normalise_name(&r.name);
                    if same {
                        return Ok(false);
                    }
                    return Err(XrefError::IdConflict {
                        id: id_s,
                        existing: format!("{} {}", row.cell(1), row.cell(name_col)),
                        new: format!("{} {}", r.kind, r.name),
                    });
                }
            }
        }
        let Some(table) = self.table_mut(kind) else {
            return Ok(false);
        };
        let cells = match r.prefix {
            Prefix::D => vec![
                id_s,
                r.kind.clone(),
                r.name.clone(),
                r.location.clone(),
                r.phase.clone(),
            ],
            _ => vec![
                id_s,
                r.kind.clone(),
                r.name.clone(),
                r.location.clone(),
                r.phase.clone(),
                r.agent.clone(),
            ],
        };
        let extra = vec![String::new(); table.extra_columns.len()];
        table.rows.push(Row { cells, extra });
        Ok(true)
    }

    /// Merges detected references: an entity already present keeps its id;
    /// a new one takes the next free id of its prefix (counters are first
    /// raised above every id in the index, so none is reused). Returns the
    /// id of each reference, in order, and whether it was added.
    pub fn merge(
        &mut self,
        refs: &[NewRef],
        ids: &mut NextIds,
    ) -> Result<Vec<(RefId, bool)>, XrefError> {
        ids.observe(self);
        let mut out = Vec::with_capacity(refs.len());
        for r in refs {
            if let Some(id) = self.find(r) {
                out.push((id, false));
                continue;
            }
            let id = ids.take(r.prefix);
            let added = self.insert(id, r)?;
            out.push((id, added));
        }
        Ok(out)
    }

    /// Adds or updates the By Feature row of `feature`: phases and agents
    /// are added when missing, the priority is raised, never lowered; the
    /// summary is set only on a new row.
    pub fn upsert_feature(
        &mut self,
        feature: &str,
        phase: &str,
        agent: &str,
        band: Band,
        summary: &str,
    ) {
        let Some(table) = self.table_mut(TableKind::ByFeature) else {
            return;
        };
        let phase = phase.trim().trim_start_matches(['P', 'p']).to_string();
        let add = |list: &str, item: &str| -> String {
            let mut items: Vec<String> = list
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            if !item.is_empty() && !items.iter().any(|i| i.eq_ignore_ascii_case(item)) {
                items.push(item.to_string());
            }
            items.join(", ")
        };
        let rank = |s: &str| match s.trim().to_ascii_uppercase().as_str() {
            "CRITICAL" => 3,
            "HIGH" => 2,
            "MEDIUM" => 1,
            _ => 0,
        };
        if let Some(row) = table
            .rows
            .iter_mut()
            .find(|r| r.cell(0).eq_ignore_ascii_case(feature.trim()))
        {
            row.cells.resize(5, String::new());
            row.cells[1] = add(&row.cells[1], &phase);
            row.cells[2] = add(&row.cells[2], agent);
            if rank(band.as_str()) > rank(&row.cells[3]) {
                row.cells[3] = band.as_str().to_string();
            }
            return;
        }
        let extra = vec![String::new(); table.extra_columns.len()];
        table.rows.push(Row {
            cells: vec![
                feature.trim().to_string(),
                phase,
                agent.to_string(),
                band.as_str().to_string(),
                summary.to_string(),
            ],
            extra,
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ref_ids() {
        assert_eq!(RefId::parse("E0001").unwrap().to_string(), "E0001");
        assert_eq!(RefId::parse("m12").unwrap().to_string(), "M0012");
        assert!(RefId::parse("X0001").is_err());
        assert!(RefId::parse("E").is_err());
        assert!(RefId::parse("E00a1").is_err());
    }

    #[test]
    fn split_row_handles_escapes() {
        assert_eq!(split_row("| a | b \\| c |  |"), ["a", "b \\| c", ""]);
    }
}
