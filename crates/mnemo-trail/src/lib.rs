//! # mnemo-trail
//!
//! The artifact trail of a coding-agent session: what a host's LLM summary
//! loses at compaction and the next turn needs (SPEC §7). From a Claude
//! Code, Codex CLI or OpenCode transcript it extracts the files read,
//! written and edited (with the last action on each), the commands run with
//! their exit status, the user's standing constraints, decisions, open
//! errors and blockers, and the sentences that establish endpoints, tables,
//! env vars, ports, versions and other numbers; it scrubs every fact,
//! ranks them with the §3 scoring engine and cuts them to an o200k token
//! budget, counting what does not fit. After a compaction, [`check`] says
//! which facts a summary kept and renders the ones it lost for re-injection.
//!
//! **Owns:** transcript line → event parsing for the three hosts
//! ([`parse`]), sentence classification and anchors ([`text`]), the
//! streaming [`Extractor`] (bounded state: every table is capped and what a
//! cap refuses is counted), ranking, budgeting, rendering and the survival
//! check.
//!
//! **Must never:** do I/O (callers feed lines); let an unscrubbed byte into
//! a [`Trail`] or a re-injection; drop a fact silently (a fact over the
//! budget or a cap is counted in the output); panic on any input.

mod json;
pub mod parse;
pub mod text;

use mnemo_score::{Engine, ScoreInput};
use mnemo_scrub::Scrubber;
use parse::{Call, Event, FileAction, HostKind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// The extractor's tables: keyed by transcript text, so hashed with a
/// per-process random seed (foldhash's, a few times cheaper than std's
/// SipHash on these short keys); their order is never shown (facts are
/// sorted).
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
use text::Class;

/// The default token budget of a trail (o200k).
pub const DEFAULT_BUDGET: usize = 1500;
/// The most entries each table of the extractor holds; more are counted.
pub const MAX_ENTRIES: usize = 20_000;
/// Longest fact text kept (bytes); longer texts are cut with `…`.
pub const MAX_FACT_BYTES: usize = 300;
/// Sentences whose class the extractor remembers (per writer), and the
/// longest one it remembers (bytes): at most 2 × 8,192 × 256 B of memo.
const MEMO_ENTRIES: usize = 8192;
const MEMO_BYTES: usize = 256;

/// Why a trail could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TrailError {
    /// The scrubber's rules did not load (fail closed: no trail).
    #[error("cannot load the scrubber's rules: {0}")]
    Scrub(String),
    /// The o200k vocabulary did not load.
    #[error("{0}")]
    Tokens(String),
    /// The scoring tables did not compile.
    #[error("cannot build the scoring engine: {0}")]
    Score(String),
}

/// The kind of a trail fact, in the order the trail shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FactKind {
    /// A standing rule of the user's.
    Constraint,
    /// A failing command or a sentence about something still broken.
    Blocker,
    /// A decision.
    Decision,
    /// A sentence with concrete anchors (numbers, endpoints, env vars, …).
    Fact,
    /// A file and what was done to it.
    File,
    /// A command and its exit status.
    Command,
    /// What the user asked for.
    Request,
}

impl FactKind {
    const ALL: [FactKind; 7] = [
        FactKind::Constraint,
        FactKind::Blocker,
        FactKind::Decision,
        FactKind::Fact,
        FactKind::File,
        FactKind::Command,
        FactKind::Request,
    ];

    /// Name in JSON and in the "not shown" line.
    pub fn as_str(self) -> &'static str {
        match self {
            FactKind::Constraint => "constraint",
            FactKind::Blocker => "blocker",
            FactKind::Decision => "decision",
            FactKind::Fact => "fact",
            FactKind::File => "file",
            FactKind::Command => "command",
            FactKind::Request => "request",
        }
    }

    fn title(self) -> &'static str {
        match self {
            FactKind::Constraint => "User's standing constraints",
            FactKind::Blocker => "Open errors and blockers",
            FactKind::Decision => "Decisions",
            FactKind::Fact => "Established facts (endpoints, tables, env vars, ports, numbers)",
            FactKind::File => "Files (last action)",
            FactKind::Command => "Commands (last exit status)",
            FactKind::Request => "User's requests",
        }
    }

    fn base_rank(self, file_read: bool) -> u32 {
        match self {
            FactKind::Constraint => 40_000,
            FactKind::Blocker => 30_000,
            FactKind::Decision => 25_000,
            FactKind::Fact => 20_000,
            FactKind::File if file_read => 8_000,
            FactKind::File => 18_000,
            FactKind::Command => 15_000,
            FactKind::Request => 12_000,
        }
    }
}

/// One fact of the trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    /// Stable id (kind and key hashed).
    pub id: String,
    /// Kind.
    pub kind: FactKind,
    /// The line the trail shows (scrubbed).
    pub text: String,
    /// What must survive in a summary for the fact to count as kept
    /// (scrubbed; a path, a command, or a sentence's anchors).
    pub anchors: Vec<String>,
    /// Last transcript line (1-based) that established it.
    pub line: usize,
    /// The §3 score of its text, in ten-thousandths.
    pub score: u32,
    /// Rank used for the budget (higher first).
    pub rank: u32,
    /// o200k tokens of its line in the trail.
    pub tokens: usize,
    /// Whether it fit in the budget.
    pub shown: bool,
}

/// A trail: the facts, the rendered text and its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trail {
    /// Host whose transcript it came from (`claude-code`, `codex`, `opencode`).
    pub host: Option<String>,
    /// The rendered trail (markdown), within the budget.
    pub text: String,
    /// o200k tokens of `text`.
    pub tokens: usize,
    /// The budget it was cut to.
    pub budget: usize,
    /// Every fact found, shown or not, in rank order.
    pub facts: Vec<Fact>,
    /// Facts shown.
    pub shown: usize,
    /// Facts over the budget (not shown, counted in `text`).
    pub omitted: usize,
    /// Facts over the budget by kind.
    pub omitted_by_kind: BTreeMap<String, usize>,
    /// Facts a table cap refused (counted, never silent).
    pub capped: usize,
    /// Redactions the scrubber made in the facts.
    pub redactions: usize,
    /// Transcript lines read.
    pub lines: usize,
    /// Lines that were not JSON.
    pub bad_lines: usize,
    /// Compaction boundaries seen.
    pub boundaries: usize,
}

#[derive(Debug, Clone)]
struct FileState {
    last: FileAction,
    strongest: FileAction,
    line: usize,
}

#[derive(Debug, Clone)]
struct CmdState {
    exit: Option<i64>,
    first_line: String,
    earlier_failure: Option<i64>,
    runs: usize,
    line: usize,
}

#[derive(Debug, Clone)]
struct SentState {
    text: String,
    class: Class,
    line: usize,
}

/// Streaming extraction: feed transcript lines with [`Extractor::push_line`],
/// then [`Extractor::finish`]. State is bounded by [`MAX_ENTRIES`] per table.
#[derive(Debug, Default)]
pub struct Extractor {
    host: Option<HostKind>,
    cwd: Option<String>,
    /// Commands waiting for their result, by call id.
    pending: Map<String, String>,
    files: Map<String, FileState>,
    commands: Map<String, CmdState>,
    sentences: Map<String, SentState>,
    capped: usize,
    lines: usize,
    bad_lines: usize,
    boundaries: usize,
    /// [`text::classify`] of sentences seen, by writer (assistant, user).
    classes: [Map<Box<str>, Option<Class>>; 2],
}

impl Extractor {
    /// An extractor for `host` (`None`: detect from the lines).
    pub fn new(host: Option<HostKind>) -> Extractor {
        Extractor {
            host,
            ..Extractor::default()
        }
    }

    /// The host, as given or detected so far.
    pub fn host(&self) -> Option<HostKind> {
        self.host
    }

    /// Lines read so far (blank lines not counted).
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// Reads one transcript line (blank lines are skipped; a line that is
    /// not JSON is counted in `bad_lines`). The line is read typed and
    /// borrowed ([`parse::parse_line`]): nothing of it is kept but the
    /// facts it adds to the bounded tables.
    pub fn push_line(&mut self, line: &str) {
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        self.lines += 1;
        match parse::parse_line(t) {
            Ok(l) => self.push_parsed(&l),
            Err(_) => self.bad_lines += 1,
        }
    }

    /// [`Extractor::push_line`] of a line as read from a file, without a
    /// UTF-8 pass of its own: serde_json checks the UTF-8 of the strings as
    /// it reads them, and JSON outside strings is ASCII. A line that does
    /// not parse this way (invalid UTF-8 in a string, white space JSON does
    /// not allow around it, or not JSON) takes the text path with invalid
    /// UTF-8 replaced, so both read every line alike.
    pub fn push_bytes(&mut self, line: &[u8]) {
        let t = line.trim_ascii();
        if t.is_empty() {
            return;
        }
        match serde_json::from_slice::<parse::Line<'_>>(t) {
            Ok(l) => {
                self.lines += 1;
                self.push_parsed(&l);
            }
            Err(_) => self.push_line(&String::from_utf8_lossy(line)),
        }
    }

    /// Reads one line already parsed ([`parse::parse_line`] of the line,
    /// trimmed or not): the same as [`Extractor::push_bytes`] of that line
    /// (the caller that parses once for another reader, and gives a line
    /// that did not parse to `push_bytes`).
    pub fn push_parsed_line(&mut self, l: &parse::Line<'_>) {
        self.lines += 1;
        self.push_parsed(l);
    }

    fn push_parsed(&mut self, l: &parse::Line<'_>) {
        if self.host.is_none() {
            self.host = l.host();
        }
        let Some(host) = self.host else { return };
        let line = self.lines;
        l.events(host, &mut |e| self.event(e, line));
    }

    fn event(&mut self, e: Event<'_>, line: usize) {
        match e {
            Event::UserText(t) => self.prose(t, true, line),
            Event::AssistantText(t) => self.prose(t, false, line),
            Event::Cwd(c) => {
                if self.cwd.as_deref() != Some(c) {
                    self.cwd = Some(c.to_string());
                }
            }
            Event::Boundary => self.boundaries += 1,
            Event::Call { id, call } => match call {
                Call::Files(files) => {
                    for (p, a) in files {
                        self.file(&p, a, line);
                    }
                }
                Call::Command(c) => {
                    if self.pending.len() >= MAX_ENTRIES {
                        self.capped += 1;
                    } else {
                        self.pending.insert(id.to_string(), c.into_owned());
                    }
                }
                Call::Other => {}
            },
            Event::Result {
                id,
                exit,
                is_error,
                first_line,
            } => {
                if let Some(c) = self.pending.remove(id) {
                    self.command(&c, exit, is_error, first_line, line);
                }
            }
            Event::CallResult {
                call,
                exit,
                is_error,
                first_line,
            } => match call {
                Call::Command(c) => self.command(&c, exit, is_error, first_line, line),
                Call::Files(files) => {
                    for (p, a) in files {
                        self.file(&p, a, line);
                    }
                }
                Call::Other => {}
            },
        }
    }

    fn file(&mut self, path: &str, action: FileAction, line: usize) {
        if let Some(f) = self.files.get_mut(path) {
            f.last = action;
            f.strongest = f.strongest.max(action);
            f.line = line;
        } else if self.files.len() >= MAX_ENTRIES {
            self.capped += 1;
        } else {
            self.files.insert(
                path.to_string(),
                FileState {
                    last: action,
                    strongest: action,
                    line,
                },
            );
        }
    }

    fn command(
        &mut self,
        cmd: &str,
        exit: Option<i64>,
        is_error: bool,
        first_line: String,
        line: usize,
    ) {
        let cmd = collapse(cmd);
        let exit = match exit {
            Some(e) => Some(e),
            None if is_error => Some(1),
            None if self.host == Some(HostKind::ClaudeCode) => Some(0),
            None => None,
        };
        if let Some(c) = self.commands.get_mut(&cmd) {
            if let Some(prev) = c.exit.filter(|e| *e != 0) {
                c.earlier_failure = Some(prev);
            }
            c.exit = exit;
            c.first_line = first_line;
            c.runs += 1;
            c.line = line;
        } else if self.commands.len() >= MAX_ENTRIES {
            self.capped += 1;
        } else {
            self.commands.insert(
                cmd,
                CmdState {
                    exit,
                    first_line,
                    earlier_failure: None,
                    runs: 1,
                    line,
                },
            );
        }
    }

    /// [`text::classify`], remembered for short sentences: a session says
    /// the same sentences again and again ("Running the tests again.").
    fn classify(&mut self, s: &str, user: bool) -> Option<Class> {
        let memo = &mut self.classes[usize::from(user)];
        if let Some(c) = memo.get(s) {
            return *c;
        }
        let c = text::classify(s, user);
        if s.len() <= MEMO_BYTES && memo.len() < MEMO_ENTRIES {
            memo.insert(s.into(), c);
        }
        c
    }

    fn prose(&mut self, t: &str, user: bool, line: usize) {
        for s in text::sentences(t) {
            let Some(class) = self.classify(s, user) else {
                continue;
            };
            let key = s.to_lowercase();
            if let Some(st) = self.sentences.get_mut(&key) {
                st.line = line;
            } else if self.sentences.len() >= MAX_ENTRIES {
                self.capped += 1;
            } else {
                self.sentences.insert(
                    key,
                    SentState {
                        text: parse::cut(s, MAX_FACT_BYTES),
                        class,
                        line,
                    },
                );
            }
        }
    }

    /// The collected facts, unscrubbed and unranked (for [`build`]).
    fn raw_facts(&self) -> Vec<(FactKind, String, Vec<String>, usize, bool)> {
        let rel = |p: &str| -> String {
            match self.cwd.as_deref() {
                Some(c) if !c.is_empty() => p
                    .strip_prefix(c)
                    .and_then(|r| r.strip_prefix('/'))
                    .unwrap_or(p)
                    .to_string(),
                _ => p.to_string(),
            }
        };
        let mut out = Vec::new();
        for (p, f) in &self.files {
            let p = rel(p);
            let text = if f.strongest != f.last && f.strongest != FileAction::Read {
                format!("{} {p} (earlier {})", f.last.as_str(), f.strongest.as_str())
            } else {
                format!("{} {p}", f.last.as_str())
            };
            let read = f.strongest == FileAction::Read;
            out.push((FactKind::File, text, vec![p], f.line, read));
        }
        for (c, st) in &self.commands {
            let shown = parse::cut(c, 200);
            let status = match st.exit {
                Some(e) => format!("exit {e}"),
                None => "exit status unknown".to_string(),
            };
            let mut text = format!("`{shown}` → {status}");
            let failing = st.exit.is_some_and(|e| e != 0);
            if failing && !st.first_line.is_empty() {
                text.push_str(&format!(": {}", parse::cut(&st.first_line, 120)));
            }
            if let Some(prev) = st.earlier_failure.filter(|_| !failing) {
                text.push_str(&format!(" (earlier exit {prev})"));
            }
            if st.runs > 1 {
                text.push_str(&format!(" ({} runs)", st.runs));
            }
            let kind = if failing {
                FactKind::Blocker
            } else {
                FactKind::Command
            };
            out.push((kind, text, vec![shown], st.line, false));
        }
        for st in self.sentences.values() {
            let kind = match st.class {
                Class::Constraint => FactKind::Constraint,
                Class::Decision => FactKind::Decision,
                Class::Blocker => FactKind::Blocker,
                Class::Fact => FactKind::Fact,
                Class::Request => FactKind::Request,
            };
            out.push((
                kind,
                st.text.clone(),
                text::anchors(&st.text),
                st.line,
                false,
            ));
        }
        out
    }

    /// Builds the trail: scrub, score, rank, cut to `budget` tokens.
    pub fn finish(self, budget: usize) -> Result<Trail, TrailError> {
        let scrubber = Scrubber::default_rules().map_err(|e| TrailError::Scrub(e.to_string()))?;
        let engine = Engine::new(&mnemo_model::Config::default())
            .map_err(|e| TrailError::Score(e.to_string()))?;
        self.finish_with(budget, scrubber, &engine)
    }

    /// [`Extractor::finish`] with a given scrubber and engine.
    pub fn finish_with(
        self,
        budget: usize,
        scrubber: &Scrubber,
        engine: &Engine,
    ) -> Result<Trail, TrailError> {
        let mut redactions = 0usize;
        let total_lines = self.lines.max(1);
        let mut facts = Vec::new();
        for (kind, text, anchors, line, read) in self.raw_facts() {
            let s = scrubber.scrub(&text);
            redactions += s.redactions.len();
            let anchors: Vec<String> = anchors
                .iter()
                .map(|a| scrubber.scrub(a).text)
                .filter(|a| !a.contains("[REDACTED"))
                .collect();
            let score = engine.score(&ScoreInput {
                text: &s.text,
                files: usize::from(kind == FactKind::File),
                has_blockers: kind == FactKind::Blocker,
                ..ScoreInput::default()
            });
            let recency = u32::try_from(line.saturating_mul(2000) / total_lines).unwrap_or(2000);
            let rank = kind.base_rank(read) + score.total.ten_thousandths() + recency;
            let tokens = count(&format!("- {}\n", s.text))?;
            facts.push(Fact {
                id: fact_id(kind, &s.text),
                kind,
                text: s.text,
                anchors,
                line,
                score: score.total.ten_thousandths(),
                rank,
                tokens,
                shown: false,
            });
        }
        facts.sort_by(|a, b| {
            b.rank
                .cmp(&a.rank)
                .then(a.line.cmp(&b.line))
                .then(a.text.cmp(&b.text))
        });
        let host = self.host.map(|h| h.as_str().to_string());
        let mut trail = Trail {
            host,
            text: String::new(),
            tokens: 0,
            budget,
            facts,
            shown: 0,
            omitted: 0,
            omitted_by_kind: BTreeMap::new(),
            capped: self.capped,
            redactions,
            lines: self.lines,
            bad_lines: self.bad_lines,
            boundaries: self.boundaries,
        };
        cut_to_budget(&mut trail)?;
        Ok(trail)
    }
}

/// Extracts the trail of a whole JSONL transcript.
pub fn trail_of(jsonl: &str, host: Option<HostKind>, budget: usize) -> Result<Trail, TrailError> {
    let mut x = Extractor::new(host);
    for line in jsonl.lines() {
        x.push_line(line);
    }
    x.finish(budget)
}

fn count(text: &str) -> Result<usize, TrailError> {
    mnemo_tokens::count_o200k(text).map_err(|e| TrailError::Tokens(e.to_string()))
}

/// Whitespace runs → one space.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// FNV-1a of kind and text, 12 hex digits.
fn fact_id(kind: FactKind, text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in kind.as_str().bytes().chain([0u8]).chain(text.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:012x}", h >> 16)
}

const HEADER: &str = "# mnemo trail: the artifact trail of this session. Keep every item below in the summary, verbatim (paths, commands, exit codes, numbers).\n";

/// Renders the shown facts (`shown == true`) by kind, in transcript order.
fn render(
    header: &str,
    facts: &[&Fact],
    omitted: &BTreeMap<String, usize>,
    budget: usize,
) -> String {
    let mut out = String::from(header);
    for kind in FactKind::ALL {
        let mut of: Vec<&&Fact> = facts.iter().filter(|f| f.kind == kind).collect();
        if of.is_empty() {
            continue;
        }
        of.sort_by(|a, b| a.line.cmp(&b.line).then(a.text.cmp(&b.text)));
        out.push_str(&format!("## {}\n", kind.title()));
        for f in of {
            out.push_str("- ");
            out.push_str(&f.text);
            out.push('\n');
        }
    }
    let n: usize = omitted.values().sum();
    if n > 0 {
        let parts: Vec<String> = FactKind::ALL
            .iter()
            .filter_map(|k| {
                omitted
                    .get(k.as_str())
                    .map(|c| format!("{c} {}", k.as_str()))
            })
            .collect();
        out.push_str(&format!(
            "## Not shown: {n} more facts over the {budget}-token budget ({})\n",
            parts.join(", ")
        ));
    }
    out
}

fn cut_to_budget(t: &mut Trail) -> Result<(), TrailError> {
    // Greedy by rank against a running estimate (each line's own count plus
    // the header and section titles), then exact: drop the lowest-ranked
    // shown fact until the rendered text fits.
    let mut used = count(HEADER)? + 40;
    let mut titles = [false; 7];
    for f in &mut t.facts {
        let k = FactKind::ALL.iter().position(|k| *k == f.kind).unwrap_or(0);
        let title = if titles[k] { 0 } else { 14 };
        if used + f.tokens + title <= t.budget {
            used += f.tokens + title;
            titles[k] = true;
            f.shown = true;
        }
    }
    loop {
        let mut omitted = BTreeMap::new();
        for f in t.facts.iter().filter(|f| !f.shown) {
            *omitted.entry(f.kind.as_str().to_string()).or_insert(0) += 1;
        }
        let shown: Vec<&Fact> = t.facts.iter().filter(|f| f.shown).collect();
        let text = render(HEADER, &shown, &omitted, t.budget);
        let tokens = count(&text)?;
        if tokens <= t.budget || shown.is_empty() {
            t.shown = shown.len();
            t.omitted = t.facts.len() - t.shown;
            t.omitted_by_kind = omitted;
            t.text = text;
            t.tokens = tokens;
            return Ok(());
        }
        if let Some(f) = t.facts.iter_mut().rev().find(|f| f.shown) {
            f.shown = false;
        }
    }
}

/// Which trail facts a compaction summary kept, and the re-injection of the
/// ones it lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Ids of shown facts the summary kept.
    pub survived: Vec<String>,
    /// Ids of shown facts the summary lost.
    pub lost: Vec<String>,
    /// The lost facts, rendered for re-injection (empty when none was lost).
    pub reinject: String,
    /// o200k tokens of `reinject`.
    pub reinject_tokens: usize,
    /// Secrets the scrubber found in the summary itself (rule ids).
    pub summary_secrets: Vec<String>,
}

const REINJECT_HEADER: &str = "# mnemo: facts of this session that the compaction summary lost (restored from the trail kept before it)\n";

fn norm(s: &str) -> String {
    collapse(&s.to_lowercase())
}

/// True when `summary` (normalised with [`norm`]) keeps `f`.
fn kept(f: &Fact, summary: &str) -> bool {
    if summary.contains(&norm(&f.text)) {
        return true;
    }
    match f.kind {
        FactKind::File | FactKind::Command => {
            !f.anchors.is_empty() && f.anchors.iter().all(|a| summary.contains(&norm(a)))
        }
        // A sentence survives when all its anchors do and most of its
        // words: an anchor alone ("0.27") may survive in another fact.
        _ => {
            if !f.anchors.iter().all(|a| summary.contains(&norm(a))) {
                return false;
            }
            let words = text::content_words(&f.text);
            if words.is_empty() {
                return !f.anchors.is_empty();
            }
            let hit = words
                .iter()
                .filter(|w| summary.contains(w.as_str()))
                .count();
            hit * 10 >= words.len() * 7
        }
    }
}

/// Checks a compaction summary against a trail: which shown facts survived,
/// the rendered re-injection of those lost, and any secret in the summary.
pub fn check(trail: &Trail, summary: &str) -> Result<Check, TrailError> {
    let scrubber = Scrubber::default_rules().map_err(|e| TrailError::Scrub(e.to_string()))?;
    let summary_secrets = scrubber.find(summary).into_iter().map(|f| f.rule).collect();
    let s = norm(summary);
    let mut survived = Vec::new();
    let mut lost = Vec::new();
    let mut lost_facts = Vec::new();
    for f in trail.facts.iter().filter(|f| f.shown) {
        if kept(f, &s) {
            survived.push(f.id.clone());
        } else {
            lost.push(f.id.clone());
            lost_facts.push(f);
        }
    }
    let reinject = if lost_facts.is_empty() {
        String::new()
    } else {
        // Already scrubbed and within the trail's budget (a subset of it);
        // scrubbed again so a stored trail edited by hand cannot leak.
        scrubber
            .scrub(&render(
                REINJECT_HEADER,
                &lost_facts,
                &BTreeMap::new(),
                trail.budget,
            ))
            .text
    };
    let reinject_tokens = count(&reinject)?;
    Ok(Check {
        survived,
        lost,
        reinject,
        reinject_tokens,
        summary_secrets,
    })
}
