//! The text mnemo writes (seed §8, §9, §15, §17).
//!
//! * [`render_zz`]: `ZZ-phase{N}-context.md` in the §8 structure (the same
//!   headings, Budget and Cross-References), with dense entries: an
//!   expanded entry is one head line (`Agent title · fields · files`)
//!   and its §4 lines under it, one a line without list markers, only the
//!   gotcha labelled; a STANDARD entry is one line `Agent text` (seed
//!   §4's one-line form), the gate's date is stated once and a
//!   status only when it is not `complete`. The Budget states the o200k
//!   tokens of the entries' input and of the Priority Entries written.
//! * [`completed_entry`]: an entry of `## Completed Phases` in
//!   `01-active-context.md`. Its first line ends with a marker
//!   `<!-- mnemo:key=DATE|PHASE|AGENT hash=HHHHHHHHHHHHHHHH -->` that carries
//!   the §17 idempotency key and content hash, so that a re-run skips an
//!   identical entry and overwrites a changed one ([`parse_marker`]).
//!   Continuation lines start with two spaces.
//! * [`progress_section`]: `### YYYY-MM-DD — Phase <phase>: <Agent>` with
//!   its `**Review:**` line.
//! * [`handoff_prompt`]: the §15 next-agent block.
//! * [`confirmation`]: the §9 confirmation line.

use std::fmt::Write as _;

use mnemo_model::{Status, SummaryRecord, Verdict, agent_key};
use mnemo_score::Band;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::budget::{Mode, PhaseAllocation};
use crate::mask::EntryFields;
use crate::summary::{Body, Summary, file_list, short_file_list};
use crate::xref::{NewRef, RefId};

/// A score in ten-thousandths, printed with two decimals rounded half-up.
pub fn fmt_score(ten_thousandths: u32) -> String {
    let r = ten_thousandths.saturating_add(50) / 100;
    format!("{}.{:02}", r / 100, r % 100)
}

/// The label of the next phase: `2` → `3`, `2a` → `3`; other labels get
/// `+1` appended (`final` → `final+1`).
pub fn next_phase(phase: &str) -> String {
    let p = phase.trim();
    let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
    match digits.parse::<u64>() {
        Ok(n) => n.saturating_add(1).to_string(),
        Err(_) => format!("{p}+1"),
    }
}

/// The §17 content hash: `sha256("date|phase|agent|summary")`, first 16 hex
/// digits. The agent is normalised (lower case, no `@`).
pub fn entry_hash(date: &str, phase: &str, agent: &str, summary: &str) -> String {
    let canonical = format!("{date}|{phase}|{}|{summary}", agent_key(agent));
    let digest = Sha256::digest(canonical.as_bytes());
    let mut out = String::with_capacity(16);
    for b in digest.iter().take(8) {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The §17 idempotency key of an entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct EntryKey {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Phase label.
    pub phase: String,
    /// Agent, normalised.
    pub agent: String,
    /// The task discriminator (SPEC §2): present only when one agent has
    /// several summaries in one phase of a batch; a lone summary keeps the
    /// seed's plain `date|phase|agent` key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

fn key_part(s: &str) -> String {
    let mut out = s
        .trim()
        .chars()
        .map(|c| {
            if c.is_whitespace() || c == '|' || c == '>' || c == '<' {
                '_'
            } else {
                c
            }
        })
        .collect::<String>();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out
}

impl EntryKey {
    /// A key; the parts are made marker-safe (no spaces, `|`, `<`, `>`, `--`).
    pub fn new(date: &str, phase: &str, agent: &str) -> EntryKey {
        EntryKey {
            date: key_part(date),
            phase: key_part(phase),
            agent: key_part(&agent_key(agent)),
            task: None,
        }
    }

    /// The key with a task discriminator (made marker-safe; an empty one
    /// leaves the plain key).
    pub fn with_task(mut self, task: Option<&str>) -> EntryKey {
        self.task = task.map(key_part).filter(|t| !t.is_empty());
        self
    }

    /// `date|phase|agent`, or `date|phase|agent|task`.
    pub fn render(&self) -> String {
        match &self.task {
            None => format!("{}|{}|{}", self.date, self.phase, self.agent),
            Some(t) => format!("{}|{}|{}|{t}", self.date, self.phase, self.agent),
        }
    }
}

/// The marker that ends an entry's first line.
pub fn marker(key: &EntryKey, hash: &str) -> String {
    format!("<!-- mnemo:key={} hash={} -->", key.render(), hash)
}

/// Reads the marker of a `## Completed Phases` line: key and hash.
pub fn parse_marker(line: &str) -> Option<(EntryKey, String)> {
    const MARK: &str = "<!-- mnemo:key=";
    // Every line of a bank's Completed Phases passes through here (twice a
    // gate): a byte scan for `<` (memchr) and a prefix check, rather than a
    // substring searcher built for each line.
    let mut from = 0;
    let at = loop {
        let i = from + line.get(from..)?.find('<')?;
        if line[i..].starts_with(MARK) {
            break i;
        }
        from = i + 1;
    };
    let start = at + MARK.len();
    let rest = &line[start..];
    let end = rest.find("-->")?;
    let inner = rest[..end].trim();
    let (key, hash) = inner.split_once(" hash=")?;
    let mut parts = key.splitn(4, '|');
    let (date, phase, agent) = (parts.next()?, parts.next()?, parts.next()?);
    let task = parts.next().filter(|t| !t.is_empty()).map(str::to_string);
    let hash = hash.trim();
    if hash.is_empty() || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((
        EntryKey {
            date: date.to_string(),
            phase: phase.to_string(),
            agent: agent.to_string(),
            task,
        },
        hash.to_string(),
    ))
}

/// One compressed entry, ready to render.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryView {
    /// Agent display name (`Hermes`).
    pub agent: String,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Phase label.
    pub phase: String,
    /// Exact score in ten-thousandths.
    pub score: u32,
    /// Band used.
    pub band: Band,
    /// Mode given by the allocator.
    pub mode: Mode,
    /// Status (`partial` is marked ⚠️).
    pub status: Option<Status>,
    /// The summary.
    pub summary: Summary,
    /// The record's summary text (for the content hash).
    pub source_summary: String,
    /// The task discriminator of the key, when the agent has several
    /// summaries in this phase of the batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// What the pair's field mask lets the entry show besides its lines.
    pub fields: EntryFields,
    /// Its size: tokens given (text + files) and written (its ZZ lines).
    pub tokens: EntryTokens,
}

/// The size of one entry in o200k tokens (SPEC §2: the Budget section
/// states tokens in and out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct EntryTokens {
    /// The record's text fields (summary, what, why, gotcha) and its file
    /// list: what the agent handed over.
    pub input: usize,
    /// The entry as the ZZ artifact's `## Priority Entries` writes it.
    pub output: usize,
}

/// Counts o200k tokens; `false` when the vocabulary could not be loaded and
/// the count is the characters / 4 estimate.
pub fn count_tokens(text: &str) -> (usize, bool) {
    match mnemo_tokens::count_o200k(text) {
        Ok(n) => (n, true),
        Err(_) => (mnemo_tokens::estimate(text), false),
    }
}

/// What an entry was given, as [`EntryTokens::input`] counts it: the text
/// fields, a line break, the files joined by `, `.
pub fn entry_input(record: &SummaryRecord) -> String {
    format!(
        "{}\n{}",
        record.scoring_text(),
        record.files_changed.join(", ")
    )
}

impl EntryTokens {
    /// The tokens of `record` given and of `e` written (with the artifact
    /// stating `zz_date`).
    pub fn measure(record: &SummaryRecord, e: &EntryView, zz_date: &str) -> EntryTokens {
        EntryTokens {
            input: count_tokens(&entry_input(record)).0,
            output: count_tokens(&render_entry(e, zz_date)).0,
        }
    }
}

impl EntryView {
    fn status_cell(&self) -> String {
        match self.status {
            Some(Status::Partial) => "⚠️ partial".to_string(),
            Some(s) => s.to_string(),
            None => "complete".to_string(),
        }
    }

    /// The idempotency key.
    pub fn key(&self) -> EntryKey {
        EntryKey::new(&self.date, &self.phase, &self.agent).with_task(self.task.as_deref())
    }

    /// The content hash.
    pub fn hash(&self) -> String {
        entry_hash(&self.date, &self.phase, &self.agent, &self.source_summary)
    }
}

/// What the ZZ artifact needs besides the entries.
#[derive(Debug, Clone, Copy)]
pub struct ZzHeader<'a> {
    /// Phase label (`1`).
    pub phase: &'a str,
    /// Next phase label; `None` → [`next_phase`].
    pub next_phase: Option<&'a str>,
    /// Sending agents (`hermes`).
    pub from: &'a [String],
    /// Receiving agents.
    pub to: &'a [String],
}

fn at_list(agents: &[String]) -> String {
    if agents.is_empty() {
        return "@unknown".to_string();
    }
    let mut seen: Vec<String> = Vec::new();
    for a in agents {
        let k = agent_key(a);
        if !seen.contains(&k) {
            seen.push(k);
        }
    }
    seen.iter()
        .map(|a| format!("@{a}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn cell(s: &str) -> String {
    s.replace(['\n', '\r'], " ").replace('|', "\\|")
}

/// The date the artifact states once: the most common date of its entries
/// (the first of them on a tie), or none without entries.
fn zz_date(entries: &[EntryView]) -> Option<&str> {
    let mut best: Option<(&str, usize)> = None;
    for e in entries {
        let d = e.date.as_str();
        let n = entries.iter().filter(|x| x.date == d).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((d, n));
        }
    }
    best.map(|(d, _)| d)
}

fn is_expanded(e: &EntryView) -> bool {
    matches!(e.summary.body, Body::Critical { .. } | Body::High { .. })
}

/// The title an expanded entry's head line shows: the summary's title
/// when it says something the first line does not and names something
/// (an identifier, a path, an upper-case name: `notifications API`), or
/// when it is the task that tells one of an agent's several entries of the
/// phase from the others. A title that only repeats the first words of the
/// first line, or a lead that only announces the work ("Reviewed
/// notifications: approved", when the verdict is in the fields), is left
/// out. [`crate::pipeline`] counts only a shown title as said.
pub fn shown_title(summary: &Summary, task: Option<&str>) -> Option<String> {
    let t = summary
        .title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let first = summary.lines().first().copied().unwrap_or_default();
    let norm = |s: &str| {
        s.replace('`', "")
            .to_lowercase()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    // Names something: an identifier, a path, an upper-case name (a
    // constraint word such as the `so` of "So this phase I wired" names
    // nothing).
    let names = task.is_some() || t.split_whitespace().any(crate::extractive::is_fact_token);
    (!t.is_empty() && names && !norm(first).starts_with(&norm(&t))).then_some(t)
}

/// The head of an entry: date (when not the artifact's), status, and for an
/// expanded entry the mask's other fields (a one-line entry keeps the seed's
/// `sentence — files` shape).
fn field_bits(e: &EntryView, zz_date: &str) -> Vec<String> {
    let mut bits = Vec::new();
    if e.fields.date && e.date != zz_date {
        bits.push(e.date.clone());
    }
    if let Some(s) = &e.fields.status {
        bits.push(s.clone());
    }
    if is_expanded(e) {
        bits.extend(e.fields.notes.iter().cloned());
    }
    bits
}

/// A line of an expanded entry as written under its head line: as is, but
/// a start that would open a markdown block of its own (a heading `# `, a
/// quote `>`, a list item `- ` / `* ` / `+ ` / `1. `, a code fence) is
/// escaped with `\`, so that the line stays text of its entry.
fn plain_line(l: &str) -> String {
    let hashes = l.bytes().take_while(|b| *b == b'#').count();
    let digits = l.bytes().take_while(u8::is_ascii_digit).count();
    let after = |n: usize| l.as_bytes().get(n).copied();
    let heading = (1..=6).contains(&hashes) && matches!(after(hashes), None | Some(b' '));
    let bullet =
        matches!(after(0), Some(b'-' | b'*' | b'+')) && matches!(after(1), None | Some(b' '));
    let fence = l.starts_with("```") || l.starts_with("~~~");
    let numbered = digits > 0
        && matches!(after(digits), Some(b'.' | b')'))
        && matches!(after(digits + 1), None | Some(b' '));
    if numbered {
        format!("{}\\{}", &l[..digits], &l[digits..])
    } else if heading || bullet || fence || l.starts_with('>') {
        format!("\\{l}")
    } else {
        l.to_string()
    }
}

/// One entry as `## Priority Entries` writes it. An expanded entry:
///
/// ```text
/// Hermes Auth endpoints · a.py, b.py +1
/// What changed (the agent's words).
/// Why it matters to the next agent.
/// Gotcha: the gotcha.
/// ```
///
/// (a blank line before it; empty lines are left out; one line a line, as
/// the seed's own entries are written, without list markers). A STANDARD entry is
/// one line `Agent sentence — files` (LOW: `Agent files`).
pub fn render_entry(e: &EntryView, zz_date: &str) -> String {
    let mut o = String::new();
    let bits = field_bits(e, zz_date);
    match &e.summary.body {
        Body::Critical { .. } | Body::High { .. } => {
            // No score: the band is the section; the score is in
            // `## Completed Phases`.
            // `Agent title · fields · files`: the name opens the line (the
            // line after a blank one), so the first part follows after a
            // space; no bold markers (two tokens an entry that tell the
            // next agent nothing: the name is the head by its place) and
            // no separator (a token an entry).
            let mut parts: Vec<String> = Vec::new();
            parts.extend(shown_title(&e.summary, e.task.as_deref()));
            parts.extend(bits);
            if e.fields.files && !e.summary.files.is_empty() {
                parts.push(short_file_list(&e.summary.files));
            }
            let mut head = e.agent.replace(['\n', '\r'], " ");
            if !parts.is_empty() {
                let _ = write!(head, " {}", parts.join(" · "));
            }
            let _ = writeln!(o, "\n{}", plain_line(&head));
            let lines = e.summary.lines();
            for (i, l) in lines.iter().enumerate() {
                if l.trim().is_empty() {
                    continue;
                }
                let gotcha = i == 2 && matches!(e.summary.body, Body::Critical { .. });
                if gotcha {
                    let _ = writeln!(o, "Gotcha: {l}");
                } else {
                    let _ = writeln!(o, "{}", plain_line(l));
                }
            }
        }
        Body::Standard { sentence, files } => {
            let mut c = bits;
            let mut text = sentence.clone();
            if e.fields.files && !files.is_empty() {
                text = format!("{text} — {files}");
            }
            c.push(text);
            o.push_str(&standard_line(&e.agent, &c.join(" · ")));
        }
        Body::Aggressive { .. } => {
            // A LOW entry is its file names (seed §4), whatever the mask.
            let mut c = bits;
            c.push(e.summary.cell());
            o.push_str(&standard_line(&e.agent, &c.join(" · ")));
        }
    }
    o
}

/// One line of the STANDARD section: `Agent text` (seed §4's one-line
/// templates `[agent] — <sentence> — <files>` / `[agent] — <files>`, in
/// their cheapest readable spelling; see [`render_zz`]), on one line. The
/// agent's name opens the line as it opens an expanded entry's head line,
/// with no separator after it (a token a row that tells the next agent
/// nothing: the roster's names are known words).
fn standard_line(agent: &str, text: &str) -> String {
    let one = |s: &str| s.split(['\n', '\r']).collect::<Vec<_>>().join(" ");
    plain_line(&format!("{} {}\n", one(agent), one(text)))
}

/// The STANDARD section's lines, one an entry in order, except that an
/// agent's LOW entries (half a line each, seed §4) share one row at the
/// first one's place: their file names joined by `; `, when their other
/// fields (date, status) are the same. Returns each entry's part of the
/// text, in `standard`'s order: the parts joined are the section's lines
/// (a shared row is split where its `; ` cells begin; the first entry's
/// part holds the agent and the fields, the last one's the line end).
fn standard_rows(standard: &[&EntryView], date: &str) -> (String, Vec<String>) {
    // (agent and fields of a LOW row, its cells with their entries) or
    // (none, a rendered row and its entry).
    type Row = (Option<(String, Vec<String>)>, Vec<(usize, String)>);
    let mut rows: Vec<Row> = Vec::new();
    for (i, e) in standard.iter().enumerate() {
        if matches!(e.summary.body, Body::Aggressive { .. }) {
            let key = (e.agent.clone(), field_bits(e, date));
            let cellv = e.summary.cell();
            if let Some((_, cells)) = rows.iter_mut().find(|(k, _)| k.as_ref() == Some(&key)) {
                cells.push((i, cellv));
                continue;
            }
            rows.push((Some(key), vec![(i, cellv)]));
        } else {
            rows.push((None, vec![(i, render_entry(e, date))]));
        }
    }
    let mut parts = vec![String::new(); standard.len()];
    let mut o = String::new();
    for (key, cells) in rows {
        match key {
            Some((agent, mut bits)) => {
                let joined = cells
                    .iter()
                    .map(|(_, c)| c.as_str())
                    .collect::<Vec<_>>()
                    .join("; ");
                bits.push(joined);
                let row = standard_line(&agent, &bits.join(" · "));
                o.push_str(&row);
                // [`standard_line`] keeps every byte's length and changes
                // only the row's start, so the cells after the first are
                // the row's last bytes: `; cell` each, the line end last.
                let mut end = row.len();
                let mut tails: Vec<(usize, String)> = Vec::new();
                for (k, (i, c)) in cells.iter().enumerate().skip(1).rev() {
                    let n = 2 + c.len() + usize::from(k + 1 == cells.len());
                    let start = end.saturating_sub(n);
                    tails.push((*i, row.get(start..end).unwrap_or_default().to_string()));
                    end = start;
                }
                if let Some((i, _)) = cells.first() {
                    parts[*i] = row.get(..end).unwrap_or_default().to_string();
                }
                for (i, t) in tails {
                    parts[i] = t;
                }
            }
            None => {
                for (i, text) in cells {
                    o.push_str(&text);
                    parts[i] = text;
                }
            }
        }
    }
    (o, parts)
}

/// `## Priority Entries` as [`render_zz`] writes it, and each entry's part
/// of it, in `entries`' order: the lines the entry renders, with its blank
/// line before (an expanded entry) or its part of a shared LOW row. Every
/// byte of the section is the headings' or one entry's, so an entry's
/// tokens out ([`EntryTokens::output`], `gate --json`) are those of
/// exactly what the page shows of it: a head line leaves out the files the
/// Cross-References table names (`xrefs`), as the page does.
pub fn priority_entries(entries: &[EntryView], xrefs: &[(RefId, NewRef)]) -> (String, Vec<String>) {
    let date = zz_date(entries).unwrap_or_default();
    let mut parts = vec![String::new(); entries.len()];
    // A file that this artifact's Cross-References table names (its File
    // column) is not listed again in an expanded entry's head line: every
    // file name the head would show still appears once in the ZZ.
    let xref_files: std::collections::HashSet<&str> =
        xrefs.iter().map(|(_, r)| r.location.trim()).collect();
    let in_xrefs = |f: &str| xref_files.contains(f.trim());
    let expanded = |e: &EntryView| -> String {
        if e.summary.files.iter().any(|f| in_xrefs(f)) {
            let mut v = e.clone();
            v.summary.files.retain(|f| !in_xrefs(f));
            render_entry(&v, date)
        } else {
            render_entry(e, date)
        }
    };
    let of_body = |critical: bool| {
        entries.iter().enumerate().filter(move |(_, e)| {
            if critical {
                matches!(e.summary.body, Body::Critical { .. })
            } else {
                matches!(e.summary.body, Body::High { .. })
            }
        })
    };
    let mut pe = String::from("## Priority Entries\n");
    for (critical, heading) in [(true, "\n### CRITICAL\n"), (false, "\n### HIGH\n")] {
        let mut band = of_body(critical).peekable();
        if band.peek().is_some() {
            pe.push_str(heading);
        }
        for (i, e) in band {
            parts[i] = expanded(e);
            pe.push_str(&parts[i]);
        }
    }
    let standard: Vec<(usize, &EntryView)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !is_expanded(e))
        .collect();
    if !standard.is_empty() {
        // The seed writes these entries two ways: §4's templates are lines
        // (`[agent] — <sentence> — <files>`, `[agent] — <files>`), §8's
        // example a table. mnemo follows §4, spelt `Agent text`, one line
        // an entry: no table header, delimiter row or pipes (59 o200k
        // tokens fewer on the tuning half of bench/quality, 61 on held-out).
        pe.push_str("\n### STANDARD\n");
        let views: Vec<&EntryView> = standard.iter().map(|(_, e)| *e).collect();
        let (rows, of_rows) = standard_rows(&views, date);
        pe.push_str(&rows);
        for ((i, _), part) in standard.iter().zip(of_rows) {
            parts[*i] = part;
        }
    }
    (pe, parts)
}

/// Renders `ZZ-phase{N}-context.md` (seed §8). `entries` are in allocation
/// order (score descending). Subsections with no entries are left out; the
/// Cross-References table is always written (header only when empty).
pub fn render_zz(
    header: &ZzHeader<'_>,
    alloc: &PhaseAllocation,
    entries: &[EntryView],
    xrefs: &[(RefId, NewRef)],
) -> String {
    render_zz_entries(header, alloc, entries, xrefs).0
}

/// [`render_zz`], and each entry's part of its `## Priority Entries`
/// ([`priority_entries`]), in `entries`' order.
pub fn render_zz_entries(
    header: &ZzHeader<'_>,
    alloc: &PhaseAllocation,
    entries: &[EntryView],
    xrefs: &[(RefId, NewRef)],
) -> (String, Vec<String>) {
    let n = header.phase.trim();
    let next = header
        .next_phase
        .map_or_else(|| next_phase(n), |s| s.trim().to_string());
    let date = zz_date(entries).unwrap_or_default();
    let (pe, parts) = priority_entries(entries, xrefs);
    let tokens_in: usize = entries.iter().map(|e| e.tokens.input).sum();
    let (tokens_out, exact) = count_tokens(&pe);
    let mut o = String::new();
    let _ = writeln!(o, "# Phase {n} → Phase {next} Context");
    let _ = writeln!(o, "**From:** {} (Phase {n})", at_list(header.from));
    let _ = writeln!(o, "**To:** {} (Phase {next})", at_list(header.to));
    if !date.is_empty() && entries.iter().any(|e| e.fields.date) {
        let _ = writeln!(o, "**Date:** {date}");
    }
    o.push('\n');
    o.push_str("## Budget\n");
    let _ = writeln!(o, "- Allocated: {} lines", alloc.allocated);
    let _ = writeln!(o, "- Used: {} lines", alloc.used);
    let _ = writeln!(o, "- Carried: {} lines", alloc.carried);
    let _ = writeln!(
        o,
        "- Tokens: {tokens_in} in, {tokens_out} out ({})",
        if exact {
            "o200k"
        } else {
            "estimate: characters / 4"
        }
    );
    o.push('\n');
    o.push_str(&pe);
    o.push_str("\n## Cross-References\n\n");
    o.push_str("| ID | Type | Name | File |\n");
    o.push_str("|----|------|------|------|\n");
    for (id, r) in xrefs {
        let _ = writeln!(
            o,
            "| {id} | {} | {} | {} |",
            cell(&r.kind),
            cell(&r.name),
            cell(&r.location)
        );
    }
    (o, parts)
}

/// An entry of `## Completed Phases`: one line per budget line (CRITICAL 3,
/// HIGH expanded 2, otherwise 1), the first ending with the marker. The
/// text ends with a newline.
pub fn completed_entry(e: &EntryView) -> String {
    let warn = if e.status == Some(Status::Partial) {
        " ⚠️ partial"
    } else {
        ""
    };
    let head = format!(
        "- **{} · P{} · {}** — {} {}{warn}",
        e.date,
        e.phase.trim().trim_start_matches(['P', 'p']),
        e.agent,
        e.band,
        fmt_score(e.score)
    );
    let m = marker(&e.key(), &e.hash());
    // One line per budget line: an empty one says so.
    let or_none = |s: &str| {
        if s.trim().is_empty() {
            "None stated.".to_string()
        } else {
            s.to_string()
        }
    };
    let files = if e.summary.files.is_empty() {
        String::new()
    } else {
        format!(" Files: {}.", file_list(&e.summary.files))
    };
    match &e.summary.body {
        Body::Critical {
            what,
            to_next,
            gotcha,
        } => format!(
            "{head} — What changed: {what}{files} {m}\n  - To next agent: {}\n  - Gotcha: {}\n",
            or_none(to_next),
            or_none(gotcha)
        ),
        Body::High { what, to_next } => {
            format!(
                "{head} — What changed: {what}{files} {m}\n  - To next agent: {}\n",
                or_none(to_next)
            )
        }
        Body::Standard { .. } | Body::Aggressive { .. } => {
            format!("{head} — {} {m}\n", e.summary.cell())
        }
    }
}

/// A review's outcome, for the `**Review:**` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Review {
    /// Verdict.
    pub verdict: Verdict,
    /// Critical issues found.
    pub critical_issues: Option<u32>,
    /// Coverage.
    pub coverage: Option<String>,
}

impl Review {
    /// The review of a Themis record, when it has a verdict.
    pub fn of(record: &SummaryRecord) -> Option<Review> {
        Some(Review {
            verdict: record.verdict?,
            critical_issues: record.critical_issues,
            coverage: record.coverage.clone(),
        })
    }
}

/// `### YYYY-MM-DD — Phase <phase>: <Agent>` (the §17 key of the section).
pub fn progress_heading(date: &str, phase: &str, agent: &str) -> String {
    format!("### {date} — Phase {}: {agent}", phase.trim())
}

/// `**Review:** APPROVED — 0 critical issues, coverage 87%`.
pub fn review_line(r: &Review) -> String {
    let mut bits = Vec::new();
    if let Some(n) = r.critical_issues {
        bits.push(format!(
            "{n} critical issue{}",
            if n == 1 { "" } else { "s" }
        ));
    }
    if let Some(c) = &r.coverage {
        bits.push(format!("coverage {c}"));
    }
    if bits.is_empty() {
        format!("**Review:** {}", r.verdict)
    } else {
        format!("**Review:** {} — {}", r.verdict, bits.join(", "))
    }
}

/// A progress-log section: heading, status, score, files, summary, tests and
/// the `**Review:**` line when there is a review. Ends with a newline.
pub fn progress_section(e: &EntryView, record: &SummaryRecord, review: Option<&Review>) -> String {
    let mut o = String::new();
    let mut heading = progress_heading(&e.date, &e.phase, &e.agent);
    if let Some(t) = &e.task {
        let _ = write!(
            heading,
            " — {}",
            t.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }
    let _ = writeln!(o, "{heading}");
    o.push('\n');
    let _ = writeln!(
        o,
        "**Status:** {} · **Priority:** {} ({})",
        e.status_cell(),
        e.band,
        fmt_score(e.score)
    );
    if !record.files_changed.is_empty() {
        let _ = writeln!(o, "**Files:** {}", file_list(&record.files_changed));
    }
    let text = record
        .summary
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if !text.is_empty() {
        let _ = writeln!(o, "**Summary:** {text}");
    }
    if let Some(t) = &record.tests {
        let _ = writeln!(o, "**Tests:** {t}");
    }
    if let Some(r) = review {
        let _ = writeln!(o, "{}", review_line(r));
    }
    o
}

/// The §15 block injected into the next agent's prompt.
pub fn handoff_prompt(
    learnings: Option<&str>,
    phase: &str,
    next: Option<&str>,
    zz: &str,
) -> String {
    let next = next.map_or_else(|| next_phase(phase), str::to_string);
    let learnings = learnings
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .unwrap_or("_(no learnings recorded)_");
    format!(
        "## Previous Wave Learnings\n{learnings}\n\n## Compressed Context (Phase {} → Phase {next})\n{}\n\nApply these learnings and context to your implementation.\n",
        phase.trim(),
        zz.trim_end()
    )
}

/// `Compression complete: N entries compressed (M CRITICAL, P HIGH), K cross-refs added`.
pub fn confirmation(entries: usize, critical: usize, high: usize, xrefs: usize) -> String {
    format!(
        "Compression complete: {entries} entries compressed ({critical} CRITICAL, {high} HIGH), {xrefs} cross-refs added"
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn scores_round_half_up() {
        assert_eq!(fmt_score(8150), "0.82");
        assert_eq!(fmt_score(7449), "0.74");
        assert_eq!(fmt_score(10_000), "1.00");
        assert_eq!(fmt_score(0), "0.00");
    }

    #[test]
    fn next_phases() {
        assert_eq!(next_phase("1"), "2");
        assert_eq!(next_phase("2a"), "3");
        assert_eq!(next_phase("final"), "final+1");
    }

    #[test]
    fn hash_is_sixteen_hex_and_stable() {
        let h = entry_hash("2026-06-20", "1", "Hermes", "x");
        assert_eq!(h.len(), 16);
        assert_eq!(h, entry_hash("2026-06-20", "1", "@hermes", "x"));
        assert_ne!(h, entry_hash("2026-06-20", "1", "hermes", "y"));
        // sha256("2026-06-20|1|hermes|x")[:16]
        let full = Sha256::digest(b"2026-06-20|1|hermes|x");
        assert!(h.starts_with(&format!("{:02x}", full[0])));
    }

    #[test]
    fn an_entry_line_that_would_open_a_markdown_block_is_escaped() {
        assert_eq!(
            plain_line("GET /a returns 200 OK."),
            "GET /a returns 200 OK."
        );
        assert_eq!(plain_line("# of retries is 3"), "\\# of retries is 3");
        assert_eq!(plain_line("#123 is fixed"), "#123 is fixed");
        assert_eq!(plain_line("> 5 replicas"), "\\> 5 replicas");
        assert_eq!(plain_line("- not a list"), "\\- not a list");
        assert_eq!(plain_line("**bold** stays"), "**bold** stays");
        assert_eq!(plain_line("2. then this"), "2\\. then this");
        assert_eq!(plain_line("2.5 s timeout"), "2.5 s timeout");
        assert_eq!(plain_line("```sh"), "\\```sh");
    }

    #[test]
    fn a_head_line_shows_a_title_that_names_something() {
        let high = |title: &str| Summary {
            title: title.to_string(),
            body: Body::High {
                what: "The default-deny NetworkPolicy is missing.".to_string(),
                to_next: "Fix it before the cutover.".to_string(),
            },
            files: Vec::new(),
        };
        // An announcement that names nothing goes; the verdict and the
        // issue count are the head line's fields.
        assert_eq!(
            shown_title(&high("Infrastructure review: two critical issues"), None),
            None
        );
        assert_eq!(
            shown_title(&high("notifications API"), None).as_deref(),
            Some("notifications API")
        );
        // The task that tells an agent's entries apart stays, named or not.
        assert_eq!(
            shown_title(&high("sms provider"), Some("sms provider")).as_deref(),
            Some("sms provider")
        );
        // A title that repeats the first line's first words goes.
        assert_eq!(
            shown_title(&high("The default-deny NetworkPolicy"), None),
            None
        );
        // A constraint word names nothing (`So this phase I wired`).
        assert_eq!(shown_title(&high("So this phase I wired"), None), None);
    }

    /// A LOW entry of `agent` from 2026-10-19 (files shown, `status` in its
    /// fields); tests override what they look at.
    fn test_view(agent: &str, status: Option<&str>) -> EntryView {
        EntryView {
            agent: agent.to_string(),
            date: "2026-10-19".to_string(),
            phase: "1".to_string(),
            score: 1000,
            band: Band::Low,
            mode: Mode::Aggressive,
            status: None,
            summary: Summary {
                title: "x".to_string(),
                body: Body::Aggressive {
                    files: String::new(),
                },
                files: Vec::new(),
            },
            source_summary: String::new(),
            task: None,
            fields: EntryFields {
                date: true,
                files: true,
                status: status.map(str::to_string),
                notes: Vec::new(),
            },
            tokens: EntryTokens::default(),
        }
    }

    #[test]
    fn a_head_line_leaves_out_a_file_the_cross_references_name() {
        use crate::budget::HalfLines;
        let e = EntryView {
            band: Band::High,
            mode: Mode::Expanded,
            summary: Summary {
                title: "x".to_string(),
                body: Body::High {
                    what: "GET /a returns 200.".to_string(),
                    to_next: "Call it.".to_string(),
                },
                files: vec!["api/routes.py".to_string(), "api/db.py".to_string()],
            },
            ..test_view("Hermes", None)
        };
        let alloc = PhaseAllocation {
            phase: "1".to_string(),
            base: HalfLines(10),
            carry_in: HalfLines(0),
            allocated: HalfLines(10),
            used: HalfLines(4),
            carried: HalfLines(0),
            entries: Vec::new(),
            flags: Vec::new(),
        };
        let header = ZzHeader {
            phase: "1",
            next_phase: None,
            from: &["hermes".to_string()],
            to: &["aphrodite".to_string()],
        };
        let r = NewRef {
            prefix: crate::xref::Prefix::E,
            kind: "endpoint".to_string(),
            name: "GET /a".to_string(),
            location: "api/routes.py".to_string(),
            phase: "1".to_string(),
            agent: "Hermes".to_string(),
        };
        let id = RefId {
            prefix: crate::xref::Prefix::E,
            n: 1,
        };
        let without = render_zz(&header, &alloc, std::slice::from_ref(&e), &[]);
        assert!(without.contains("\nHermes routes.py +1\n"), "{without}");
        let with = render_zz(&header, &alloc, std::slice::from_ref(&e), &[(id, r)]);
        // The head names only db.py; routes.py is in the table, once.
        assert!(with.contains("\nHermes db.py\n"), "{with}");
        assert_eq!(with.matches("routes.py").count(), 1, "{with}");
    }

    #[test]
    fn a_head_line_is_the_agent_then_its_parts() {
        let view = |title: &str, files: &[&str], status: Option<&str>| EntryView {
            score: 6000,
            band: Band::High,
            mode: Mode::Expanded,
            summary: Summary {
                title: title.to_string(),
                body: Body::High {
                    what: "GET /a returns 200.".to_string(),
                    to_next: "Call it.".to_string(),
                },
                files: files.iter().map(|f| f.to_string()).collect(),
            },
            ..test_view("Hermes", status)
        };
        // No separator between the name and its first part.
        assert_eq!(
            render_entry(
                &view("x", &["api/a.py", "api/b.py", "c.py"], None),
                "2026-10-19"
            ),
            "\nHermes a.py +2\nGET /a returns 200.\nCall it.\n"
        );
        assert_eq!(
            render_entry(
                &view("notes API", &["a.py"], Some("⚠️ partial")),
                "2026-10-19"
            )
            .lines()
            .nth(1),
            Some("Hermes notes API · ⚠️ partial · a.py")
        );
        // Nothing to show: the name alone.
        assert_eq!(
            render_entry(&view("x", &[], None), "2026-10-19")
                .lines()
                .nth(1),
            Some("Hermes")
        );
        // A name that would open a markdown block is escaped: the head
        // stays the entry's text.
        let hash = EntryView {
            agent: "# Ops".to_string(),
            ..view("x", &[], None)
        };
        assert_eq!(
            render_entry(&hash, "2026-10-19").lines().nth(1),
            Some("\\# Ops")
        );
    }

    #[test]
    fn an_agents_low_entries_share_one_row() {
        let one = |agent: &str, body: Body, status: Option<&str>| EntryView {
            summary: Summary {
                title: "x".to_string(),
                body,
                files: Vec::new(),
            },
            ..test_view(agent, status)
        };
        let low = |agent: &str, files: &str| {
            one(
                agent,
                Body::Aggressive {
                    files: files.to_string(),
                },
                None,
            )
        };
        let medium = one(
            "Hermes",
            Body::Standard {
                sentence: "GET /a returns 200".to_string(),
                files: "a.py".to_string(),
            },
            None,
        );
        let partial = one(
            "Hermes",
            Body::Aggressive {
                files: "d.md".to_string(),
            },
            Some("⚠️ partial"),
        );
        let (a, b, c) = (
            low("Hermes", "a.md, b.md +1"),
            low("Demeter", "x.sql"),
            low("Hermes", "c.md"),
        );
        let (rows, parts) = standard_rows(&[&a, &medium, &b, &c, &partial], "2026-10-19");
        assert_eq!(
            rows,
            "Hermes a.md, b.md +1; c.md\n\
             Hermes GET /a returns 200 — a.py\n\
             Demeter x.sql\n\
             Hermes ⚠️ partial · d.md\n"
        );
        // Each entry's part of the text, in the entries' order: the shared
        // row split where its second cell begins.
        assert_eq!(
            parts,
            [
                "Hermes a.md, b.md +1",
                "Hermes GET /a returns 200 — a.py\n",
                "Demeter x.sql\n",
                "; c.md\n",
                "Hermes ⚠️ partial · d.md\n",
            ]
        );
        // A row that opens a markdown block is escaped at its start, in
        // the first entry's part; the others keep their bytes.
        let (d, e) = (low("1. x", "a.md"), low("1. x", "b.md"));
        let (rows, parts) = standard_rows(&[&d, &e], "2026-10-19");
        assert_eq!(rows, "1\\. x a.md; b.md\n");
        assert_eq!(parts, ["1\\. x a.md", "; b.md\n"]);
    }

    #[test]
    fn marker_round_trip() {
        let k = EntryKey::new("2026-06-20", "2 a", "Hermes");
        let m = marker(&k, "0123456789abcdef");
        assert_eq!(
            m,
            "<!-- mnemo:key=2026-06-20|2_a|hermes hash=0123456789abcdef -->"
        );
        let (k2, h) = parse_marker(&format!("- text {m}")).unwrap();
        assert_eq!((k2, h.as_str()), (k, "0123456789abcdef"));
        assert!(parse_marker("no marker").is_none());
        // `<` before the marker (placeholders, comparisons) and after it.
        let (k3, _) = parse_marker(&format!("- GET /a/<id> when n < 3 <b> {m} <")).unwrap();
        assert_eq!(k3, EntryKey::new("2026-06-20", "2 a", "Hermes"));
        assert!(parse_marker("- a <id> <!-- other --> <").is_none());
        assert!(parse_marker("<").is_none());
        assert!(parse_marker("<!-- mnemo:key=a|b|c hash=zz -->").is_none());
    }
}
