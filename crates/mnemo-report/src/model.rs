//! The report's data: what [`build`] computes from the bank files and the
//! store rows. Every number is read back from what the bank and the store
//! record; where a value is recomputed (the explain of a score, the
//! guardrail flags of a phase) the field says so.

use std::collections::{BTreeMap, BTreeSet};

use mnemo_compress::facts;
use mnemo_compress::gatelog::{self, GateRecord, TrimRecord};
use mnemo_compress::render::parse_marker;
use mnemo_compress::xref::{TableKind, parse_index};
use mnemo_model::Config;
use mnemo_score::{Band, Engine, ScoreInput};
use mnemo_scrub::Scrubber;
use serde::Serialize;

use crate::input::{BankFiles, CompactionRow, StepRow, StoreDump};

/// Version of the JSON document's shape.
pub const REPORT_VERSION: u32 = 1;

/// What the bank does not record yet, so the report cannot show it.
pub const NOT_RECORDED: &[&str] = &[
    "gates run before the gate log (_xref/gate-log.jsonl) existed have no line in it: for them the budget section recomputes guardrail flags from each phase's ZZ artifact, and the entries table recomputes the explain from the progress log",
    "a gate the Guardian denied writes nothing, so it has no gate-log line (the deny is in the Guardian's timeline when a store is given); a gate that changes no byte (a re-run) appends no line either",
    "the entries table sizes an entry's input from the progress log's summary and file list, which leave out the gotcha and other fields; the gate log's input size counts every text field",
    "C7 runs alone (mnemo trim) made before the gate log kept them have no line in it; the archive section still shows the entries they moved",
    "preCompact decisions recorded by a Guardian before it kept their reasoning show the verdict only",
];

/// Counts by band.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BandCounts {
    /// CRITICAL.
    pub critical: usize,
    /// HIGH.
    pub high: usize,
    /// MEDIUM.
    pub medium: usize,
    /// LOW.
    pub low: usize,
}

impl BandCounts {
    fn add(&mut self, band: Band) {
        match band {
            Band::Critical => self.critical += 1,
            Band::High => self.high += 1,
            Band::Medium => self.medium += 1,
            Band::Low => self.low += 1,
        }
    }

    /// Sum of all bands.
    pub fn total(&self) -> usize {
        self.critical + self.high + self.medium + self.low
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// [`REPORT_VERSION`].
    pub version: u32,
    /// Headline counts.
    pub totals: Totals,
    /// Budget per phase.
    pub phases: Vec<PhaseReport>,
    /// Entries of `## Completed Phases`, in section order.
    pub entries: Vec<EntryReport>,
    /// Inputs the gate skipped (as the index records them).
    pub skipped: Vec<Skipped>,
    /// Entries C7 moved to the archive.
    pub archive: Vec<ArchivedEntry>,
    /// The cross-reference graph.
    pub xref: XrefGraph,
    /// The gate log, one record per gate that changed the bank.
    pub gates: GatesReport,
    /// The Guardian's sessions (absent without a store).
    pub guardian: Option<GuardianReport>,
    /// What the bank and store do not record yet ([`NOT_RECORDED`]).
    pub not_recorded: Vec<String>,
}

/// Headline counts (the page shows each one and the browser test reads
/// them back).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Phases with a budget or entries.
    pub phases: usize,
    /// Entries in `## Completed Phases`.
    pub entries: usize,
    /// Entries by band.
    pub by_band: BandCounts,
    /// Phases over budget.
    pub over_budget: usize,
    /// Guardrail flags over all phases.
    pub flags: usize,
    /// Skipped inputs.
    pub skipped: usize,
    /// Archived entries.
    pub archived: usize,
    /// Cross-reference ids.
    pub xref_ids: usize,
    /// Guardian sessions.
    pub sessions: usize,
    /// Gates in the gate log.
    pub gates: usize,
    /// Characters of the inputs (summary + files) of all entries.
    pub input_chars: usize,
    /// Characters of all entries.
    pub entry_chars: usize,
    /// o200k tokens of the inputs (absent when the vocabulary did not load).
    pub input_tokens: Option<usize>,
    /// o200k tokens of all entries.
    pub entry_tokens: Option<usize>,
}

/// A line amount: half-line units and its printed form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Lines {
    /// Half-line units (exact).
    pub half_lines: u32,
}

impl Lines {
    /// `4`, `6.5`.
    pub fn display(self) -> String {
        if self.half_lines.is_multiple_of(2) {
            format!("{}", self.half_lines / 2)
        } else {
            format!("{}.5", self.half_lines / 2)
        }
    }
}

/// One phase's budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseReport {
    /// Phase label (`2`).
    pub phase: String,
    /// The ZZ artifact it was read from, when there is one.
    pub zz: Option<String>,
    /// `**From:**` of the artifact.
    pub from: Option<String>,
    /// `**To:**` of the artifact.
    pub to: Option<String>,
    /// Allocated lines (base + carry in).
    pub allocated: Option<Lines>,
    /// Used lines.
    pub used: Option<Lines>,
    /// Lines carried to the next phase.
    pub carried: Option<Lines>,
    /// Entries of the phase (and its sub-phases `2a`, `2b`, …) by band.
    pub by_band: BandCounts,
    /// Used more than allocated.
    pub over_budget: bool,
    /// Guardrail flags, recomputed from the artifact and the entries.
    pub flags: Vec<Flag>,
}

/// A guardrail of §18.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Flag {
    /// `overrun`, `too_many_critical`, `critical_exceeds_total`.
    pub kind: String,
    /// True for escalations to the orchestrator.
    pub escalation: bool,
    /// What it says.
    pub message: String,
}

/// One entry of `## Completed Phases`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryReport {
    /// `date|phase|agent`.
    pub key: String,
    /// Date.
    pub date: String,
    /// Phase label as written (`2b`).
    pub phase: String,
    /// The phase it counts under (`2`).
    pub phase_group: String,
    /// Agent display name.
    pub agent: String,
    /// Band as recorded.
    pub band: String,
    /// Score as recorded (two decimals).
    pub score: String,
    /// Shortened by C7.
    pub trimmed: bool,
    /// Lines the entry takes in the section.
    pub lines: Lines,
    /// The entry as written, without its marker.
    pub text: String,
    /// Characters of the entry text.
    pub entry_chars: usize,
    /// o200k tokens of the entry text.
    pub entry_tokens: Option<usize>,
    /// The input as the progress log keeps it, when found.
    pub input: Option<InputReport>,
}

/// The input of an entry (from `02-progress-log.md`) and what the report
/// recomputes from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputReport {
    /// The summary text.
    pub summary: String,
    /// Files.
    pub files: Vec<String>,
    /// Characters of summary + file list.
    pub chars: usize,
    /// o200k tokens of summary + file list.
    pub tokens: Option<usize>,
    /// Score recomputed from the summary and files (two decimals).
    pub rescored: String,
    /// Band recomputed.
    pub rescored_band: String,
    /// True when the recomputed score equals the recorded one.
    pub rescored_matches: bool,
    /// Which keyword (or rule) set each dimension.
    pub explain: Vec<ExplainLine>,
    /// Facts the extractor finds in the input.
    pub facts_total: usize,
    /// Facts that the entry text still holds.
    pub facts_kept: usize,
    /// Facts the entry does not hold (`kind: text`).
    pub facts_dropped: Vec<String>,
}

/// One dimension of the explain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExplainLine {
    /// Dimension.
    pub dimension: String,
    /// What set it.
    pub why: String,
}

/// An input the gate skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Decision Links id.
    pub id: String,
    /// `P2c Aphrodite blocked`.
    pub summary: String,
    /// The reason (its blockers).
    pub reason: String,
    /// Phase.
    pub phase: String,
    /// The later entry that unblocked it, when linked.
    pub unblocked_by: Option<String>,
}

/// An entry C7 archived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchivedEntry {
    /// The archive file.
    pub file: String,
    /// `date|phase|agent`.
    pub key: String,
    /// Band as recorded.
    pub band: String,
    /// Score as recorded.
    pub score: String,
    /// `removed` (gone from the section) or `shortened` (still there,
    /// `(trimmed)`).
    pub action: String,
    /// Lines archived.
    pub lines: usize,
    /// The archived text, without its marker.
    pub text: String,
}

/// The cross-reference graph: ids linked to phases and agents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct XrefGraph {
    /// Ids, in index order.
    pub nodes: Vec<XrefNode>,
    /// Phases that some id names, sorted.
    pub phases: Vec<String>,
    /// Agents that some id names, sorted.
    pub agents: Vec<String>,
    /// Ids by prefix letter (`C`, `D`, `E`, `M`).
    pub by_prefix: BTreeMap<String, usize>,
    /// Number of id–phase and id–agent links.
    pub links: usize,
}

/// One id of the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct XrefNode {
    /// `E0001`.
    pub id: String,
    /// `endpoint`, `blocked`, …
    pub kind: String,
    /// Name or summary.
    pub name: String,
    /// Location or link target.
    pub location: String,
    /// Phases it is linked to.
    pub phases: Vec<String>,
    /// Agents it is linked to.
    pub agents: Vec<String>,
}

/// The gate log (`_xref/gate-log.jsonl`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GatesReport {
    /// Gates in log order.
    pub gates: Vec<GateReport>,
    /// C7 runs on their own (`mnemo trim`), in log order: what each moved
    /// to the archive and shortened.
    pub trims: Vec<TrimRecord>,
    /// 1-based numbers of the log's lines that could not be read.
    pub unreadable_lines: Vec<usize>,
}

/// One gate of the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateReport {
    /// The record as the log keeps it (scrubbed).
    #[serde(flatten)]
    pub record: GateRecord,
    /// The later gate of the same phase whose ZZ artifact replaced this
    /// one's (`None`: this is the phase's last gate).
    pub replaced_by: Option<u64>,
}

/// The Guardian's sessions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GuardianReport {
    /// Sessions, in the order given.
    pub sessions: Vec<SessionReport>,
}

/// One session's timeline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SessionReport {
    /// Session id.
    pub session_id: String,
    /// Steps in order.
    pub steps: Vec<StepRow>,
    /// Steps per origin (a step with two origins counts under both).
    pub by_origin: BTreeMap<String, usize>,
    /// Steps the policy counts as re-groundings.
    pub regroundings: usize,
    /// preCompact decisions in order.
    pub compactions: Vec<CompactionRow>,
    /// Decisions that allowed (allow or modify).
    pub allowed: usize,
    /// Decisions that denied.
    pub denied: usize,
}

/// Builds the report. Every text of `bank` and `store` is scrubbed before
/// it is parsed; `config` gives the budget guardrails, `engine` the explain.
/// The gate log is scrubbed and read on a thread of its own while the rest
/// is built (the result does not depend on it: same bytes every time).
pub fn build(
    bank: &BankFiles,
    store: Option<&StoreDump>,
    config: &Config,
    engine: &Engine,
    scrubber: &Scrubber,
) -> Report {
    let clean = |s: &str| scrubber.scrub(s).text;
    let log = bank.gate_log.as_deref();
    std::thread::scope(|sc| {
        let t = sc.spawn(|| gates_report(log, &clean));
        let mut r = build_bank(bank, store, config, engine, scrubber);
        r.gates = t.join().unwrap_or_else(|_| gates_report(log, &clean));
        r.totals.gates = r.gates.gates.len();
        r
    })
}

/// Everything but the gate log.
fn build_bank(
    bank: &BankFiles,
    store: Option<&StoreDump>,
    config: &Config,
    engine: &Engine,
    scrubber: &Scrubber,
) -> Report {
    let clean = |s: &str| scrubber.scrub(s).text;
    let active = bank
        .active_context
        .as_deref()
        .map(clean)
        .unwrap_or_default();
    let progress = bank.progress_log.as_deref().map(clean).unwrap_or_default();
    let index = bank.xref_index.as_deref().map(clean).unwrap_or_default();

    let inputs = parse_progress(&progress);
    let zz: Vec<Zz> = {
        let mut v: Vec<Zz> = bank
            .zz
            .iter()
            .filter_map(|(rel, text)| parse_zz(&clean(rel), &clean(text)))
            .collect();
        v.sort_by(|a, b| phase_order(&a.phase, &b.phase));
        v
    };
    let next_agent: BTreeMap<String, String> = zz
        .iter()
        .filter_map(|z| Some((z.phase.clone(), first_agent(z.to.as_deref()?)?)))
        .collect();

    let section = section_body(&active, "Completed Phases");
    let parsed = parse_entries(section);
    let current_keys: BTreeMap<String, bool> =
        parsed.iter().map(|e| (e.key.clone(), e.trimmed)).collect();
    // Each entry is rescored, its facts found and its texts' tokens counted:
    // the second half on a thread of its own (the order is kept).
    let one = |e: &ParsedEntry| entry_report(e, &inputs, engine, &next_agent);
    let (head, tail) = parsed.split_at(parsed.len() / 2);
    let (mut entries, rest) = std::thread::scope(|sc| {
        let t = sc.spawn(|| tail.iter().map(one).collect::<Vec<_>>());
        let h: Vec<EntryReport> = head.iter().map(one).collect();
        (h, t.join())
    });
    entries.extend(rest.unwrap_or_else(|_| tail.iter().map(one).collect()));

    let phases = phase_reports(&zz, &entries, config);
    let xi = parse_index(&index);
    let skipped = skipped_inputs(&xi);
    let xref = xref_graph(&xi);
    let mut archive = Vec::new();
    let mut files: Vec<&(String, String)> = bank.archives.iter().collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    for (rel, text) in files {
        let rel = clean(rel);
        for e in parse_entries(&clean(text)) {
            let action = match current_keys.get(&e.key) {
                Some(true) => "shortened",
                Some(false) => "kept",
                None => "removed",
            };
            archive.push(ArchivedEntry {
                file: rel.clone(),
                key: e.key,
                band: e.band.as_str().to_string(),
                score: e.score,
                action: action.to_string(),
                lines: e.text.lines().filter(|l| !l.trim().is_empty()).count(),
                text: e.text,
            });
        }
    }
    let guardian = store.map(|s| guardian_report(s, &clean));
    let gates = GatesReport::default();

    let mut totals = Totals {
        phases: phases.len(),
        entries: entries.len(),
        over_budget: phases.iter().filter(|p| p.over_budget).count(),
        flags: phases.iter().map(|p| p.flags.len()).sum(),
        skipped: skipped.len(),
        archived: archive.len(),
        xref_ids: xref.nodes.len(),
        sessions: guardian.as_ref().map_or(0, |g| g.sessions.len()),
        gates: gates.gates.len(),
        input_chars: 0,
        entry_chars: 0,
        input_tokens: Some(0),
        entry_tokens: Some(0),
        by_band: BandCounts::default(),
    };
    for e in &entries {
        if let Some(b) = band_of(&e.band) {
            totals.by_band.add(b);
        }
        totals.entry_chars += e.entry_chars;
        totals.entry_tokens = add_opt(totals.entry_tokens, e.entry_tokens);
        if let Some(i) = &e.input {
            totals.input_chars += i.chars;
            totals.input_tokens = add_opt(totals.input_tokens, i.tokens);
        }
    }
    Report {
        version: REPORT_VERSION,
        totals,
        phases,
        entries,
        skipped,
        archive,
        xref,
        gates,
        guardian,
        not_recorded: NOT_RECORDED.iter().map(|s| (*s).to_string()).collect(),
    }
}

/// The gate log's records, each with the later gate of its phase.
fn gates_report(text: Option<&str>, clean: &dyn Fn(&str) -> String) -> GatesReport {
    let Some(text) = text else {
        return GatesReport::default();
    };
    let parsed = gatelog::parse_clean(text, clean);
    let mut replaced = vec![None; parsed.records.len()];
    {
        let mut last: BTreeMap<&str, u64> = BTreeMap::new();
        for (i, r) in parsed.records.iter().enumerate().rev() {
            replaced[i] = last.get(r.phase.as_str()).copied();
            last.insert(r.phase.as_str(), r.seq);
        }
    }
    GatesReport {
        gates: parsed
            .records
            .into_iter()
            .zip(replaced)
            .map(|(record, replaced_by)| GateReport {
                record,
                replaced_by,
            })
            .collect(),
        trims: parsed.trims,
        unreadable_lines: parsed.unreadable,
    }
}

fn entry_report(
    e: &ParsedEntry,
    inputs: &BTreeMap<(String, String, String), ProgressInput>,
    engine: &Engine,
    next_agent: &BTreeMap<String, String>,
) -> EntryReport {
    let group = phase_group(&e.phase);
    let input = inputs
        .get(&(e.date.clone(), e.phase.clone(), e.agent.to_lowercase()))
        .map(|inp| input_report(inp, e, engine, next_agent.get(&group).map(String::as_str)));
    EntryReport {
        entry_chars: e.text.chars().count(),
        entry_tokens: tokens(&e.text),
        phase_group: group,
        input,
        key: e.key.clone(),
        date: e.date.clone(),
        phase: e.phase.clone(),
        agent: e.agent.clone(),
        band: e.band.as_str().to_string(),
        score: e.score.clone(),
        trimmed: e.trimmed,
        lines: e.lines,
        text: e.text.clone(),
    }
}

fn add_opt(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    Some(a? + b?)
}

fn tokens(s: &str) -> Option<usize> {
    mnemo_tokens::count_o200k(s).ok()
}

fn band_of(s: &str) -> Option<Band> {
    match s {
        "CRITICAL" => Some(Band::Critical),
        "HIGH" => Some(Band::High),
        "MEDIUM" => Some(Band::Medium),
        "LOW" => Some(Band::Low),
        _ => None,
    }
}

/// `2b` → `2`, `10` → `10`, `final` → `final`: a batch's sub-phase letters
/// count under their phase.
pub fn phase_group(label: &str) -> String {
    let l = label.trim().trim_start_matches(['P', 'p']);
    let stem = l.trim_end_matches(|c: char| c.is_ascii_lowercase());
    if !stem.is_empty() && stem.ends_with(|c: char| c.is_ascii_digit()) {
        stem.to_string()
    } else {
        l.to_string()
    }
}

/// Phases in natural order: numeric prefix first, then the text.
fn phase_order(a: &str, b: &str) -> std::cmp::Ordering {
    let num = |s: &str| -> (u64, String) {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        (digits.parse().unwrap_or(u64::MAX), s.to_string())
    };
    num(a).cmp(&num(b))
}

/// The body of `## title` (outside fences; ends at the next `#`/`##`).
fn section_body<'a>(text: &'a str, title: &str) -> &'a str {
    let mut start = None;
    let mut pos = 0;
    let mut fence = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim_end();
        if t.trim_start().starts_with("```") {
            fence = !fence;
        } else if !fence {
            let heading = t.starts_with("# ") || t.starts_with("## ") || t == "#" || t == "##";
            match start {
                None if t
                    .strip_prefix("## ")
                    .is_some_and(|h| h.trim().eq_ignore_ascii_case(title)) =>
                {
                    start = Some(pos + line.len());
                }
                Some(s) if heading => return &text[s..pos],
                _ => {}
            }
        }
        pos += line.len();
    }
    start.map_or("", |s| &text[s..])
}

struct ParsedEntry {
    key: String,
    date: String,
    phase: String,
    agent: String,
    band: Band,
    score: String,
    trimmed: bool,
    lines: Lines,
    text: String,
}

/// Entries (marker lines and their continuation lines) of a section body
/// or an archive file.
fn parse_entries(body: &str) -> Vec<ParsedEntry> {
    let mut out: Vec<ParsedEntry> = Vec::new();
    let mut open = false;
    for line in body.split_inclusive('\n') {
        if let Some((key, _hash)) = parse_marker(line) {
            let first = strip_marker(line);
            let (date, phase, agent, band, score, trimmed) = parse_head(&first, &key);
            out.push(ParsedEntry {
                key: key.render(),
                date,
                phase,
                agent,
                band,
                score,
                trimmed,
                lines: Lines::default(),
                text: first,
            });
            open = true;
            continue;
        }
        let continuation = line.starts_with("  ") && !line.trim().is_empty();
        match out.last_mut() {
            Some(e) if open && continuation => {
                e.text.push('\n');
                e.text.push_str(line.trim_end());
            }
            _ => open = false,
        }
    }
    for e in &mut out {
        let n = e.text.lines().filter(|l| !l.trim().is_empty()).count();
        e.lines = Lines {
            half_lines: if e.band == Band::Low || e.trimmed {
                1
            } else {
                u32::try_from(n.saturating_mul(2)).unwrap_or(u32::MAX)
            },
        };
    }
    out
}

fn strip_marker(line: &str) -> String {
    let l = line.trim_end();
    match (l.find("<!-- mnemo:key="), l.rfind("-->")) {
        (Some(a), Some(b)) if b > a => format!("{}{}", l[..a].trim_end(), &l[b + 3..]),
        _ => l.to_string(),
    }
}

/// `- **DATE · PPHASE · AGENT** — BAND SCORE[ (trimmed)] — …`.
fn parse_head(
    first: &str,
    key: &mnemo_compress::render::EntryKey,
) -> (String, String, String, Band, String, bool) {
    let mut date = key.date.clone();
    let mut phase = key.phase.clone();
    let mut agent = key.agent.clone();
    let mut band = Band::High;
    let mut score = String::new();
    let mut trimmed = false;
    if let Some(rest) = first.trim_start().strip_prefix("- **")
        && let Some((head, tail)) = rest.split_once("** — ")
    {
        let parts: Vec<&str> = head.split(" · ").collect();
        if let [d, p, a] = parts.as_slice() {
            date = d.trim().to_string();
            phase = p.trim().trim_start_matches(['P', 'p']).to_string();
            agent = a.trim().to_string();
        }
        let mut words = tail.split_whitespace();
        if let Some(b) = words.next().and_then(band_of) {
            band = b;
        }
        score = words.next().unwrap_or_default().to_string();
        trimmed = tail.contains("(trimmed)");
    }
    (date, phase, agent, band, score, trimmed)
}

struct ProgressInput {
    summary: String,
    files: Vec<String>,
}

/// `### DATE — Phase P: Agent` sections with `**Files:**` and
/// `**Summary:**` lines, keyed by (date, phase, agent in lower case).
fn parse_progress(text: &str) -> BTreeMap<(String, String, String), ProgressInput> {
    let mut out = BTreeMap::new();
    let mut cur: Option<((String, String, String), ProgressInput)> = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            if let Some((k, v)) = cur.take() {
                out.entry(k).or_insert(v);
            }
            if let Some((date, rest)) = h.split_once(" — Phase ")
                && let Some((phase, agent)) = rest.split_once(": ")
            {
                cur = Some((
                    (
                        date.trim().to_string(),
                        phase.trim().to_string(),
                        agent.trim().to_lowercase(),
                    ),
                    ProgressInput {
                        summary: String::new(),
                        files: Vec::new(),
                    },
                ));
            }
            continue;
        }
        if line.starts_with("# ") || line.starts_with("## ") {
            if let Some((k, v)) = cur.take() {
                out.entry(k).or_insert(v);
            }
            continue;
        }
        if let Some((_, inp)) = cur.as_mut() {
            if let Some(f) = line.strip_prefix("**Files:**") {
                inp.files = f
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
            } else if let Some(s) = line.strip_prefix("**Summary:**") {
                inp.summary = s.trim().to_string();
            }
        }
    }
    if let Some((k, v)) = cur.take() {
        out.entry(k).or_insert(v);
    }
    out
}

fn input_report(
    inp: &ProgressInput,
    e: &ParsedEntry,
    engine: &Engine,
    next: Option<&str>,
) -> InputReport {
    let whole = if inp.files.is_empty() {
        inp.summary.clone()
    } else {
        format!("{}\n{}", inp.summary, inp.files.join(", "))
    };
    let score = engine.score(&ScoreInput {
        text: &inp.summary,
        files: inp.files.len(),
        from: Some(&e.agent),
        to: next,
        unblocks: false,
        has_blockers: false,
    });
    let rescored = mnemo_compress::render::fmt_score(score.total.ten_thousandths());
    let explain = engine
        .explain(&score)
        .into_iter()
        .map(|(d, w)| ExplainLine {
            dimension: d.to_string(),
            why: w,
        })
        .collect();
    let found = facts::extract(&inp.summary, &inp.files);
    let mut seen = BTreeSet::new();
    let mut total = 0;
    let mut kept = 0;
    let mut dropped = Vec::new();
    for f in &found.facts {
        if !seen.insert((f.kind.label(), f.text.clone())) {
            continue;
        }
        total += 1;
        if e.text.contains(f.text.as_str()) {
            kept += 1;
        } else {
            dropped.push(format!("{}: {}", f.kind.label(), f.text));
        }
    }
    InputReport {
        chars: whole.chars().count(),
        tokens: tokens(&whole),
        summary: inp.summary.clone(),
        files: inp.files.clone(),
        rescored_matches: rescored == e.score,
        rescored,
        rescored_band: score.band.as_str().to_string(),
        explain,
        facts_total: total,
        facts_kept: kept,
        facts_dropped: dropped,
    }
}

struct Zz {
    rel: String,
    phase: String,
    from: Option<String>,
    to: Option<String>,
    allocated: Option<Lines>,
    used: Option<Lines>,
    carried: Option<Lines>,
}

fn parse_lines(s: &str) -> Option<Lines> {
    let n = s.trim().strip_suffix("lines").unwrap_or(s).trim();
    let (w, f) = n.split_once('.').unwrap_or((n, "0"));
    let w: u32 = w.parse().ok()?;
    let half = match f {
        "0" | "" => 0,
        "5" => 1,
        _ => return None,
    };
    Some(Lines {
        half_lines: w.checked_mul(2)?.checked_add(half)?,
    })
}

fn parse_zz(rel: &str, text: &str) -> Option<Zz> {
    let name = rel.rsplit('/').next()?;
    let phase = name.strip_prefix("ZZ-phase")?.strip_suffix("-context.md")?;
    let mut z = Zz {
        rel: rel.to_string(),
        phase: phase.to_string(),
        from: None,
        to: None,
        allocated: None,
        used: None,
        carried: None,
    };
    for line in text.lines() {
        let l = line.trim();
        if let Some(v) = l.strip_prefix("**From:**") {
            z.from = Some(v.trim().to_string());
        } else if let Some(v) = l.strip_prefix("**To:**") {
            z.to = Some(v.trim().to_string());
        } else if let Some(v) = l.strip_prefix("- Allocated:") {
            z.allocated = parse_lines(v);
        } else if let Some(v) = l.strip_prefix("- Used:") {
            z.used = parse_lines(v);
        } else if let Some(v) = l.strip_prefix("- Carried:") {
            z.carried = parse_lines(v);
        }
    }
    Some(z)
}

/// `@aphrodite (Phase 3)` → `aphrodite`.
fn first_agent(to: &str) -> Option<String> {
    let a = to.split_whitespace().next()?.trim_start_matches('@');
    let a = a.trim_end_matches(',');
    (!a.is_empty()).then(|| a.to_string())
}

fn phase_reports(zz: &[Zz], entries: &[EntryReport], config: &Config) -> Vec<PhaseReport> {
    let mut by_group: BTreeMap<String, BandCounts> = BTreeMap::new();
    for e in entries {
        if let Some(b) = band_of(&e.band) {
            by_group.entry(e.phase_group.clone()).or_default().add(b);
        }
    }
    let mut out: Vec<PhaseReport> = zz
        .iter()
        .map(|z| PhaseReport {
            phase: z.phase.clone(),
            zz: Some(z.rel.clone()),
            from: z.from.clone(),
            to: z.to.clone(),
            allocated: z.allocated,
            used: z.used,
            carried: z.carried,
            by_band: by_group.get(&z.phase).copied().unwrap_or_default(),
            over_budget: false,
            flags: Vec::new(),
        })
        .collect();
    for (g, counts) in &by_group {
        if !out.iter().any(|p| &p.phase == g) {
            out.push(PhaseReport {
                phase: g.clone(),
                zz: None,
                from: None,
                to: None,
                allocated: None,
                used: None,
                carried: None,
                by_band: *counts,
                over_budget: false,
                flags: Vec::new(),
            });
        }
    }
    out.sort_by(|a, b| phase_order(&a.phase, &b.phase));
    let b = &config.budget;
    for p in &mut out {
        if let (Some(a), Some(u)) = (p.allocated, p.used)
            && u > a
        {
            p.over_budget = true;
            p.flags.push(Flag {
                kind: "overrun".into(),
                escalation: false,
                message: format!(
                    "Phase {} uses {} lines of a {}-line budget (nothing dropped).",
                    p.phase,
                    u.display(),
                    a.display()
                ),
            });
        }
        let c = p.by_band.critical;
        if u32::try_from(c).unwrap_or(u32::MAX) > b.max_critical_per_phase {
            p.flags.push(Flag {
                kind: "too_many_critical".into(),
                escalation: false,
                message: format!(
                    "Phase {} has {c} > {} CRITICAL entries. Budget risk.",
                    p.phase, b.max_critical_per_phase
                ),
            });
        }
        let required = u64::try_from(c).unwrap_or(u64::MAX).saturating_mul(3);
        if required > u64::from(b.total_lines) {
            p.flags.push(Flag {
                kind: "critical_exceeds_total".into(),
                escalation: true,
                message: format!(
                    "CRITICAL entries require {required} lines but budget is {}. Options: (1) increase budget, (2) increase TOTAL_BUDGET permanently, (3) split phase.",
                    b.total_lines
                ),
            });
        }
    }
    out
}

fn skipped_inputs(xi: &mnemo_compress::XrefIndex) -> Vec<Skipped> {
    let Some(t) = xi.table(TableKind::DecisionLinks) else {
        return Vec::new();
    };
    let unblocks: Vec<(String, String)> = t
        .rows
        .iter()
        .filter(|r| r.cell(1).trim().eq_ignore_ascii_case("unblocks"))
        .map(|r| (r.cell(2).to_string(), r.cell(0).to_string()))
        .collect();
    t.rows
        .iter()
        .filter(|r| r.cell(1).trim().eq_ignore_ascii_case("blocked"))
        .map(|r| {
            let summary = r.cell(2).trim().to_string();
            let unblocked_by = unblocks
                .iter()
                .find(|(s, _)| s.starts_with(&summary) && s.contains('→'))
                .and_then(|(s, id)| {
                    let by = s
                        .split_once("unblocked by")
                        .map(|(_, b)| b.trim().to_string());
                    by.or_else(|| Some(id.clone()))
                });
            Skipped {
                id: r.cell(0).trim().to_string(),
                summary,
                reason: r.cell(3).trim().to_string(),
                phase: r.cell(4).trim().trim_start_matches(['P', 'p']).to_string(),
                unblocked_by,
            }
        })
        .collect()
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty() && p != "—" && p != "-")
        .collect()
}

fn xref_graph(xi: &mnemo_compress::XrefIndex) -> XrefGraph {
    let mut g = XrefGraph::default();
    let mut seen = BTreeSet::new();
    if let Some(t) = xi.table(TableKind::ByEntity) {
        for r in &t.rows {
            let id = r.cell(0).trim().to_string();
            if id.is_empty() || !seen.insert(id.clone()) {
                continue;
            }
            g.nodes.push(XrefNode {
                id,
                kind: r.cell(1).trim().to_string(),
                name: r.cell(2).trim().to_string(),
                location: r.cell(3).trim().to_string(),
                phases: split_list(r.cell(4))
                    .into_iter()
                    .map(|p| p.trim_start_matches(['P', 'p']).to_string())
                    .collect(),
                agents: split_list(r.cell(5)),
            });
        }
    }
    if let Some(t) = xi.table(TableKind::DecisionLinks) {
        for r in &t.rows {
            let id = r.cell(0).trim().to_string();
            if id.is_empty() || !seen.insert(id.clone()) {
                continue;
            }
            let summary = r.cell(2).trim().to_string();
            // `P2c Aphrodite blocked`: the agent follows the phase.
            let mut words = summary.split_whitespace();
            let agents = match (words.next(), words.next()) {
                (Some(p), Some(a))
                    if p.starts_with('P') && a.chars().next().is_some_and(char::is_uppercase) =>
                {
                    vec![a.to_string()]
                }
                _ => Vec::new(),
            };
            g.nodes.push(XrefNode {
                id,
                kind: r.cell(1).trim().to_string(),
                name: summary,
                location: r.cell(3).trim().to_string(),
                phases: split_list(r.cell(4))
                    .into_iter()
                    .map(|p| p.trim_start_matches(['P', 'p']).to_string())
                    .collect(),
                agents,
            });
        }
    }
    let mut phases = BTreeSet::new();
    let mut agents = BTreeSet::new();
    for n in &g.nodes {
        let letter: String = n.id.chars().take(1).collect();
        *g.by_prefix.entry(letter).or_default() += 1;
        g.links += n.phases.len() + n.agents.len();
        phases.extend(n.phases.iter().cloned());
        agents.extend(n.agents.iter().cloned());
    }
    g.phases = phases.into_iter().collect();
    g.phases.sort_by(|a, b| phase_order(a, b));
    g.agents = agents.into_iter().collect();
    g
}

fn guardian_report(store: &StoreDump, clean: &dyn Fn(&str) -> String) -> GuardianReport {
    let sessions = store
        .sessions
        .iter()
        .map(|s| {
            let steps: Vec<StepRow> = s
                .steps
                .iter()
                .map(|st| StepRow {
                    seq: st.seq,
                    step_id: clean(&st.step_id),
                    method: clean(&st.method),
                    timestamp: st.timestamp.as_deref().map(clean),
                    origins: st.origins.iter().map(|o| clean(o)).collect(),
                    trust: st.trust.as_deref().map(clean),
                    regrounding: st.regrounding,
                })
                .collect();
            let compactions: Vec<CompactionRow> = s
                .compactions
                .iter()
                .map(|c| CompactionRow {
                    step_id: clean(&c.step_id),
                    entries: c.entries.iter().map(|e| clean(e)).collect(),
                    verdict: clean(&c.verdict),
                    reasoning: c.reasoning.as_deref().map(clean),
                    reason_codes: c.reason_codes.iter().map(|x| clean(x)).collect(),
                })
                .collect();
            let mut by_origin = BTreeMap::new();
            for st in &steps {
                for o in st.origins.iter().collect::<BTreeSet<_>>() {
                    *by_origin.entry(o.clone()).or_default() += 1;
                }
            }
            SessionReport {
                session_id: clean(&s.session_id),
                regroundings: steps.iter().filter(|s| s.regrounding).count(),
                allowed: compactions.iter().filter(|c| c.verdict != "deny").count(),
                denied: compactions.iter().filter(|c| c.verdict == "deny").count(),
                by_origin,
                steps,
                compactions,
            }
        })
        .collect();
    GuardianReport { sessions }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn phase_groups() {
        assert_eq!(phase_group("2b"), "2");
        assert_eq!(phase_group("P10"), "10");
        assert_eq!(phase_group("final"), "final");
        assert_eq!(phase_group("2"), "2");
    }

    #[test]
    fn lines_parse_and_print() {
        assert_eq!(parse_lines(" 6.5 lines").unwrap().half_lines, 13);
        assert_eq!(parse_lines("12 lines").unwrap().display(), "12");
        assert!(parse_lines("x lines").is_none());
        assert!(parse_lines("1.7 lines").is_none());
    }

    #[test]
    fn section_ends_at_next_heading() {
        let t = "# A\n\n## Completed Phases\n\nx\n```\n## not\n```\n## Next\ny\n";
        assert_eq!(
            section_body(t, "completed phases"),
            "\nx\n```\n## not\n```\n"
        );
        assert_eq!(section_body(t, "Missing"), "");
    }
}
