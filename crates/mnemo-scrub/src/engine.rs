//! The scan: keyword prefilter, windowed regex, filters, overlap resolution.

use crate::kwtable::{self, TABLE_LEN};
use crate::rules::{Compiled, LazyRegex, Rule, RuleError};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::bytes::Regex;
use regex_automata::{Anchored, Input, meta};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A candidate or resolved span (rule index, byte range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) rule: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

#[derive(Debug)]
pub(crate) struct Engine {
    /// For a user's rules, the keyword automaton every scan can use: a
    /// contiguous NFA, cheap to build (a process that scrubs a few short
    /// strings pays for nothing more). `None` for the built-in keywords:
    /// their table, built by `build.rs`, walks every haystack.
    ac: Option<AhoCorasick>,
    /// The same keywords as a DFA table (same matches, in the same order),
    /// walked by [`keyword_hits`]; for a user's rules faster on long inputs
    /// but costly to build, so built on the first haystack of
    /// [`DFA_MIN_HAYSTACK`] bytes or more; for the built-in keywords the
    /// table in the binary, set from the start.
    laned: OnceLock<Option<Table>>,
    /// Bytes scanned so far by this engine: many short haystacks (a tree of
    /// small files) pay for the DFA as one long one does.
    scanned: AtomicUsize,
    /// The distinct keywords (keyword id -> keyword); empty for the built-in
    /// rules (their table is built already).
    keywords: Vec<String>,
    /// keyword id `k` -> the rules (indices) that list it:
    /// `kw_rules[kw_at[k]..kw_at[k + 1]]` (the built-in rules' from `build.rs`)
    kw_at: Cow<'static, [u32]>,
    kw_rules: Cow<'static, [u32]>,
    templates: Option<LazyRegex>,
    placeholders: Option<LazyRegex>,
}

/// The regex of [`MARKER_PATTERN`], compiled on the first haystack that
/// holds `REDACTED` (most hold none) and shared by every engine. `None`
/// only if the constant did not compile (a unit test compiles it): then no
/// marker is recognised, which redacts more, never less.
fn marker() -> Option<&'static Regex> {
    static MARKER: OnceLock<Option<Regex>> = OnceLock::new();
    MARKER
        .get_or_init(|| Regex::new(MARKER_PATTERN).ok())
        .as_ref()
}

/// The shapes of our own replacement texts (and Pantheon's): a candidate is
/// never allowed to cover these, which makes scrubbing idempotent.
/// Most re-searches after rejected matches in one line window: enough for
/// any real line, and a bound on the work a hostile line can cause (each
/// re-search is linear in the line).
const MAX_RETRIES_PER_WINDOW: usize = 64;

/// Haystacks at least this long, and every haystack once the engine has
/// scanned this many bytes in all, are scanned with the DFA walk.
const DFA_MIN_HAYSTACK: usize = 32 * 1024;

const MARKER_PATTERN: &str = r"\[(?:[A-Z0-9][A-Z0-9 ]* )?REDACTED(?::[a-z0-9-]*)?\]";

/// Bytes whose keyword hits are collected before they are processed (bounds
/// the hit buffers whatever the haystack).
const BLOCK: usize = 64 * 1024;

/// Shorter ranges are walked in one lane (lanes start early: overhead).
const SPLIT_MIN: usize = 4096;

/// Independent walks interleaved by [`Engine::keyword_hits`].
const LANES: usize = 4;

/// Every keyword occurrence that ends in `from+1..=to`, as (keyword id,
/// start, end), in the order of an overlapping Aho-Corasick search:
/// by end, and at one end longest keyword first.
///
/// The block is cut into [`LANES`] lanes walked in one loop (the DFA
/// walk is a chain of dependent loads; independent lanes overlap
/// them). A lane starts `max_pattern_len` bytes early, from the start
/// state, which puts it in the exact state of a whole-haystack walk by
/// its first reported byte (the state only depends on that many bytes);
/// it reports only the hits that end inside its own part.
fn keyword_hits(table: &Table, hay: &[u8], from: usize, to: usize, walk: &mut Walk) {
    for lane in &mut walk.lanes {
        lane.clear();
    }
    let to = to.min(hay.len());
    if from >= to {
        return;
    }
    let t = &table.walker();
    let start = table.start;
    if to - from < SPLIT_MIN {
        let mut s = start;
        let first = from.saturating_sub(table.max_len);
        for (i, &b) in hay.get(first..to).unwrap_or_default().iter().enumerate() {
            s = t.next(s, b);
            if t.is_match(s) {
                walk.record(table, 0, s, first + i + 1, from);
            }
        }
        return;
    }
    let ov = table.max_len;
    let part = (to - from).div_ceil(LANES);
    // lane k reports ends in (lo[k], hi[k]] and walks from pos[k]
    let mut lo = [0usize; LANES];
    let mut hi = [0usize; LANES];
    let mut pos = [0usize; LANES];
    for k in 0..LANES {
        lo[k] = (from + k * part).min(to);
        hi[k] = (from + (k + 1) * part).min(to);
        pos[k] = lo[k].saturating_sub(ov);
    }
    // the common length of all lanes, walked interleaved
    let common = (0..LANES).map(|k| hi[k] - pos[k]).min().unwrap_or(0);
    let lane = |k: usize| hay.get(pos[k]..pos[k] + common).unwrap_or_default();
    let (l0, l1, l2, l3) = (lane(0), lane(1), lane(2), lane(3));
    let lanes = [l0, l1, l2, l3];
    let mut sid = [start; LANES];
    let mut i = 0usize;
    while i < common {
        let (next, special) = run_lanes(t, &mut sid, lanes, i);
        i = next;
        if special {
            // the states after byte `i - 1` of each lane
            for (k, &s) in sid.iter().enumerate() {
                if t.is_match(s) {
                    walk.record(table, k, s, pos[k] + i, lo[k]);
                }
            }
        }
    }
    for k in 0..LANES {
        let mut s = sid[k];
        let tail = hay.get(pos[k] + common..hi[k]).unwrap_or_default();
        for (i, &b) in tail.iter().enumerate() {
            s = t.next(s, b);
            if t.is_match(s) {
                walk.record(table, k, s, pos[k] + common + i + 1, lo[k]);
            }
        }
    }
}

/// Walks the four lanes in step from index `from` until one of them enters
/// a special (match) state; returns the index after that byte and whether
/// it stopped for a special state (else it reached the end). Kept apart
/// from the match handling so that the loop's state stays in registers.
#[inline(never)]
fn run_lanes(
    t: &Walker<'_>,
    sid: &mut [u32; LANES],
    lanes: [&[u8]; LANES],
    from: usize,
) -> (usize, bool) {
    let [l0, l1, l2, l3] = lanes;
    let [mut s0, mut s1, mut s2, mut s3] = *sid;
    let tail = |l: &[u8]| l.get(from..).unwrap_or_default().len();
    let n = tail(l0).min(tail(l1)).min(tail(l2)).min(tail(l3));
    let mut stop = (from + n, false);
    let it = l0
        .get(from..)
        .unwrap_or_default()
        .iter()
        .zip(l1.get(from..).unwrap_or_default())
        .zip(l2.get(from..).unwrap_or_default())
        .zip(l3.get(from..).unwrap_or_default());
    for (i, (((&b0, &b1), &b2), &b3)) in it.enumerate() {
        s0 = t.next(s0, b0);
        s1 = t.next(s1, b1);
        s2 = t.next(s2, b2);
        s3 = t.next(s3, b3);
        // match states have the smallest ids
        if t.is_match(s0.min(s1).min(s2.min(s3))) {
            stop = (from + i + 1, true);
            break;
        }
    }
    *sid = [s0, s1, s2, s3];
    stop
}

/// The transition table (see [`kwtable`]) as little-endian `u32`s: built
/// at run time for a user's rules, or the built-in keywords' table that
/// `build.rs` put in the binary.
enum Trans {
    Builtin(&'static [[u8; 4]; TABLE_LEN]),
    Built(Box<[[u8; 4]; TABLE_LEN]>),
}

impl std::fmt::Debug for Trans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Trans::Builtin(_) => "Builtin",
            Trans::Built(_) => "Built",
        })
    }
}

/// The built-in keywords' table, made by `build.rs` with [`kwtable::build`].
mod builtin {
    include!(concat!(env!("OUT_DIR"), "/kw_table.rs"));
}

static BUILTIN_TRANS: &[u8; 4 * TABLE_LEN] =
    include_bytes!(concat!(env!("OUT_DIR"), "/kw_trans.bin"));

/// The keyword DFA as a flat table ([`kwtable`]): `next` is one class load,
/// one add, one mask and one table load.
#[derive(Debug)]
pub(crate) struct Table {
    trans: Trans,
    start: u32,
    classes: [u8; 256],
    /// ids below this are match states
    match_lim: u32,
    /// log2 of the stride
    shift: u32,
    /// match state number `i` reports `pids[match_at[i]..match_at[i + 1]]`
    match_at: Cow<'static, [u32]>,
    pids: Cow<'static, [u32]>,
    /// keyword id -> length
    lens: Cow<'static, [u32]>,
    max_len: usize,
}

/// What the walk reads of a [`Table`], borrowed once per walk.
struct Walker<'a> {
    trans: &'a [[u8; 4]; TABLE_LEN],
    classes: &'a [u8; 256],
    match_lim: u32,
}

impl Walker<'_> {
    #[inline(always)]
    fn next(&self, s: u32, b: u8) -> u32 {
        let i = s as usize + usize::from(self.classes[usize::from(b)]);
        u32::from_le_bytes(self.trans[i & (TABLE_LEN - 1)])
    }

    #[inline(always)]
    fn is_match(&self, s: u32) -> bool {
        s < self.match_lim
    }
}

impl Table {
    /// The table of a user's keywords; None when the states do not fit
    /// [`TABLE_LEN`] (then the NFA runs).
    fn new(keywords: &[String]) -> Option<Table> {
        let p = kwtable::build(keywords)?;
        let rows: Vec<[u8; 4]> = p.trans.iter().map(|v| v.to_le_bytes()).collect();
        Some(Table {
            trans: Trans::Built(rows.into_boxed_slice().try_into().ok()?),
            start: p.start,
            classes: p.classes,
            match_lim: p.match_lim,
            shift: p.shift,
            match_at: Cow::Owned(p.match_at),
            pids: Cow::Owned(p.pids),
            lens: Cow::Owned(p.lens),
            max_len: p.max_len,
        })
    }

    /// The built-in keywords' table, when `keywords` are those (in order).
    fn builtin_for(keywords: &[String]) -> Option<Table> {
        if !keywords
            .iter()
            .map(String::as_str)
            .eq(builtin::KEYWORDS.iter().copied())
        {
            return None;
        }
        Table::builtin()
    }

    /// The built-in keywords' table.
    fn builtin() -> Option<Table> {
        let (rows, _) = BUILTIN_TRANS.as_chunks::<4>();
        Some(Table {
            trans: Trans::Builtin(rows.try_into().ok()?),
            start: builtin::START,
            classes: builtin::CLASSES,
            match_lim: builtin::MATCH_LIM,
            shift: builtin::SHIFT,
            match_at: Cow::Borrowed(builtin::MATCH_AT),
            pids: Cow::Borrowed(builtin::PIDS),
            lens: Cow::Borrowed(builtin::LENS),
            max_len: builtin::MAX_LEN,
        })
    }

    fn walker(&self) -> Walker<'_> {
        Walker {
            trans: match &self.trans {
                Trans::Builtin(t) => t,
                Trans::Built(t) => t,
            },
            classes: &self.classes,
            match_lim: self.match_lim,
        }
    }
}

/// Whether any keyword of the built-in rules occurs in `hay` (ASCII case
/// folded, overlapping: the scrubber's own keyword semantics), by a walk of
/// the table `build.rs` put in the binary: nothing is built at run time.
pub(crate) fn builtin_keyword_occurs(hay: &[u8]) -> bool {
    static TABLE: OnceLock<Option<Table>> = OnceLock::new();
    let Some(t) = TABLE.get_or_init(Table::builtin).as_ref() else {
        // no table: nothing may skip the scrubber
        return true;
    };
    let w = t.walker();
    let mut s = t.start;
    for &b in hay {
        s = w.next(s, b);
        if w.is_match(s) {
            return true;
        }
    }
    false
}

/// Per-rule progress of one scan and its candidates.
struct Scan {
    /// rule index -> offset before which its keyword hits need no scan
    covered: Vec<usize>,
    found: Found,
}

/// The candidates of one scan, and per rule the capture slots its accepted
/// matches reuse (one allocation per rule and scan, not per match; the
/// table grows on the first accepted match, so a scan without one, the
/// usual case, allocates nothing here).
#[derive(Default)]
struct Found {
    out: Vec<Span>,
    caps: Vec<Option<regex_automata::util::captures::Captures>>,
}

/// Keyword hits of one block, one buffer per lane (reused across blocks).
#[derive(Default)]
struct Walk {
    lanes: [Vec<(usize, usize, usize)>; LANES],
}

impl Walk {
    /// Records the matches of match state `s` ending at `end`, when `end`
    /// lies in lane `k`'s own part (after `lo`).
    #[inline]
    fn record(&mut self, t: &Table, k: usize, s: u32, end: usize, lo: usize) {
        if end <= lo {
            return;
        }
        let Some(lane) = self.lanes.get_mut(k) else {
            return;
        };
        let n = (s >> t.shift) as usize;
        let (Some(&a), Some(&b)) = (t.match_at.get(n), t.match_at.get(n + 1)) else {
            return;
        };
        for &pid in t.pids.get(a as usize..b as usize).unwrap_or_default() {
            let len = t.lens.get(pid as usize).map_or(0, |&l| l as usize);
            lane.push((pid as usize, end - len, end));
        }
    }

    /// All hits of the block, in walk order.
    fn hits(&self) -> impl Iterator<Item = &(usize, usize, usize)> {
        self.lanes.iter().flatten()
    }
}

impl Engine {
    pub(crate) fn new(compiled: Compiled) -> Result<(Self, Vec<Rule>), RuleError> {
        if compiled.builtin
            && let Some(t) = Table::builtin()
        {
            // the whole built-in set: keyword ids, their rules and the
            // automaton all come from `build.rs`
            let engine = Engine {
                ac: None,
                laned: OnceLock::from(Some(t)),
                scanned: AtomicUsize::new(0),
                keywords: Vec::new(),
                kw_at: Cow::Borrowed(builtin::KW_AT),
                kw_rules: Cow::Borrowed(builtin::KW_RULES),
                templates: compiled.templates,
                placeholders: compiled.placeholders,
            };
            return Ok((engine, compiled.rules));
        }
        let (keywords, lists) = keyword_table(&compiled.rules);
        let mut kw_at = vec![0u32];
        let mut kw_rules = Vec::new();
        for list in &lists {
            for &ri in list {
                kw_rules.push(u32::try_from(ri).map_err(|e| RuleError::Automaton(e.to_string()))?);
            }
            kw_at.push(
                u32::try_from(kw_rules.len()).map_err(|e| RuleError::Automaton(e.to_string()))?,
            );
        }
        let (ac, laned) = match Table::builtin_for(&keywords) {
            Some(t) => (None, OnceLock::from(Some(t))),
            None => (
                Some(
                    keyword_automaton(&keywords, AhoCorasickKind::ContiguousNFA)
                        .map_err(|e| RuleError::Automaton(e.to_string()))?,
                ),
                OnceLock::new(),
            ),
        };
        let engine = Engine {
            ac,
            laned,
            scanned: AtomicUsize::new(0),
            keywords,
            kw_at: Cow::Owned(kw_at),
            kw_rules: Cow::Owned(kw_rules),
            templates: compiled.templates,
            placeholders: compiled.placeholders,
        };
        Ok((engine, compiled.rules))
    }

    /// Compiles the shared allow-lists now.
    pub(crate) fn precompile(&self) -> Result<(), RuleError> {
        for r in self.templates.iter().chain(&self.placeholders) {
            r.force()?;
        }
        Ok(())
    }

    /// All candidates of all rules (may overlap), in no particular order.
    pub(crate) fn candidates(&self, rules: &[Rule], hay: &[u8]) -> Vec<Span> {
        if hay.is_empty() {
            return Vec::new();
        }
        let markers = self.markers(hay);
        let mut scan = Scan {
            covered: vec![0usize; rules.len()],
            found: Found::default(),
        };
        match self.laned(hay.len()) {
            Some(table) => {
                let mut walk = Walk::default();
                let mut block_start = 0usize;
                while block_start < hay.len() {
                    let block_end = block_start.saturating_add(BLOCK).min(hay.len());
                    keyword_hits(table, hay, block_start, block_end, &mut walk);
                    for &hit in walk.hits() {
                        self.on_hit(rules, hay, &markers, hit, &mut scan);
                    }
                    block_start = block_end;
                }
            }
            None => {
                let Some(ac) = &self.ac else {
                    return Vec::new();
                };
                for m in ac.find_overlapping_iter(hay) {
                    let hit = (m.pattern().as_usize(), m.start(), m.end());
                    self.on_hit(rules, hay, &markers, hit, &mut scan);
                }
            }
        }
        let mut out = scan.found.out;
        if !markers.is_empty() {
            out = subtract_markers(hay, &markers, out);
        }
        out
    }

    /// Runs the rules of the keyword of `hit` (keyword id, start, end),
    /// unless the hit lies in a marker or an earlier hit's scan of the same
    /// rule already covered it.
    fn on_hit(
        &self,
        rules: &[Rule],
        hay: &[u8],
        markers: &[(usize, usize)],
        (pid, hit_start, hit_end): (usize, usize, usize),
        scan: &mut Scan,
    ) {
        if !markers.is_empty() && in_marker(markers, hit_start) {
            // a keyword inside our own replacement text (`[REDACTED:bearer-token]`)
            return;
        }
        let (Some(&a), Some(&b)) = (self.kw_at.get(pid), self.kw_at.get(pid + 1)) else {
            return;
        };
        for ri in self
            .kw_rules
            .get(a as usize..b as usize)
            .unwrap_or_default()
        {
            let ri = *ri as usize;
            let Some(rule) = rules.get(ri) else { continue };
            let Some(&cov) = scan.covered.get(ri) else {
                continue;
            };
            if hit_start < cov {
                continue;
            }
            if let Some(b) = rule.requires {
                // Every match of the rule holds `b` and starts on the hit's
                // line or later: without `b` there, no scan of this rule
                // from here on can match (nothing compiled, nothing scanned).
                let ls = memchr::memrchr(b'\n', &hay[..hit_start]).map_or(0, |i| i + 1);
                if memchr::memchr(b, &hay[ls..]).is_none() {
                    if let Some(c) = scan.covered.get_mut(ri) {
                        *c = hay.len();
                    }
                    continue;
                }
            }
            let next = if rule.shape().anchored {
                self.scan_anchored(rule, ri, hay, markers, hit_start, &mut scan.found)
            } else {
                self.scan_window(
                    rule,
                    ri,
                    hay,
                    markers,
                    (hit_start, hit_end),
                    &mut scan.found,
                )
            };
            if let Some(c) = scan.covered.get_mut(ri) {
                *c = next;
            }
        }
    }

    /// The DFA walk for a haystack of `len` bytes (none for short ones, or
    /// when the DFA cannot be built: then the NFA runs).
    fn laned(&self, len: usize) -> Option<&Table> {
        if self.ac.is_none() {
            return self.laned.get().and_then(Option::as_ref);
        }
        let before = self.scanned.fetch_add(len, Ordering::Relaxed);
        if len < DFA_MIN_HAYSTACK && before.saturating_add(len) < DFA_MIN_HAYSTACK {
            return None;
        }
        self.laned
            .get_or_init(|| Table::new(&self.keywords))
            .as_ref()
    }

    /// Byte ranges of replacement markers in `hay` (usually none).
    fn markers(&self, hay: &[u8]) -> Vec<(usize, usize)> {
        if memchr::memmem::find(hay, b"REDACTED").is_none() {
            return Vec::new();
        }
        let Some(marker) = marker() else {
            return Vec::new();
        };
        marker
            .find_iter(hay)
            .map(|m| (m.start(), m.end()))
            .collect()
    }

    /// For rules whose every match starts with a keyword: one anchored
    /// search at the hit. Returns the offset up to which later hits of the
    /// same rule need no search.
    fn scan_anchored(
        &self,
        rule: &Rule,
        ri: usize,
        hay: &[u8],
        markers: &[(usize, usize)],
        start: usize,
        found: &mut Found,
    ) -> usize {
        let len = hay.len();
        let Some(re) = rule.scan_regex() else {
            return start + 1;
        };
        let end = if rule.shape().multiline {
            let lim = start.saturating_add(rule.max_len).min(len);
            memchr::memchr(b'\n', &hay[lim..]).map_or(len, |i| lim + i)
        } else {
            len
        };
        let window = &hay[..end];
        let input = Input::new(window).span(start..end).anchored(Anchored::Yes);
        match re.search(&input) {
            Some(m) => {
                let taken = if markers.is_empty() || !in_marker(markers, m.start()) {
                    self.accept(rule, re, ri, hay, window, (m.start(), m.end()), found)
                } else {
                    None
                };
                if let Some(secret_end) = taken {
                    secret_end.max(start + 1)
                } else {
                    // A rejected match must not hide a later keyword hit
                    // inside it (the fuzzer found one).
                    start + 1
                }
            }
            None => start + 1,
        }
    }

    /// Runs `rule` on the window around a keyword hit; returns the offset up
    /// to which later hits of the same rule need no new window.
    fn scan_window(
        &self,
        rule: &Rule,
        ri: usize,
        hay: &[u8],
        markers: &[(usize, usize)],
        (hit_start, hit_end): (usize, usize),
        found: &mut Found,
    ) -> usize {
        let len = hay.len();
        let ls = memchr::memrchr(b'\n', &hay[..hit_start]).map_or(0, |i| i + 1);
        let multiline = rule.shape().multiline;
        let (le, line_end_of_hit) = if multiline {
            let lim = hit_end.saturating_add(rule.max_len).min(len);
            let le = memchr::memchr(b'\n', &hay[lim..]).map_or(len, |i| lim + i);
            let hl = memchr::memchr(b'\n', &hay[hit_end..]).map_or(len, |i| hit_end + i);
            (le, hl)
        } else {
            let le = memchr::memchr(b'\n', &hay[hit_end..]).map_or(len, |i| hit_end + i);
            (le, le)
        };
        let Some(re) = rule.scan_regex() else {
            return le;
        };
        let window = &hay[..le];
        let mut pos = ls;
        let mut retries = 0usize;
        while pos <= le {
            let Some(m) = re.search(&Input::new(window).range(pos..)) else {
                break;
            };
            if multiline && m.end() == le && le < len && m.start() > line_end_of_hit {
                // May be cut by the window: rescan it from its own keyword hit.
                return m.start();
            }
            let taken = if markers.is_empty() || !in_marker(markers, m.start()) {
                self.accept(rule, re, ri, hay, window, (m.start(), m.end()), found)
            } else {
                None
            };
            pos = if let Some(secret_end) = taken {
                // Resume where the redaction ends, not where the match ends:
                // trailing context (the host's first letter after
                // `user:pass@`) can begin the next secret.
                secret_end.max(m.start() + 1)
            } else if m.end() > m.start() + 1 && retries < MAX_RETRIES_PER_WINDOW {
                // A rejected match (placeholder, low entropy, code…) must not
                // hide a real candidate that starts inside it: search again
                // from the next byte (the fuzzer found such a secret).
                retries += 1;
                m.start() + 1
            } else if m.end() > m.start() {
                m.end()
            } else {
                m.end() + 1
            };
        }
        le
    }

    /// Adds the candidate unless an allow-list, the entropy floor or a
    /// rule condition rejects it; returns the end of the secret when added.
    #[allow(clippy::too_many_arguments)]
    fn accept(
        &self,
        rule: &Rule,
        re: &meta::Regex,
        ri: usize,
        hay: &[u8],
        window: &[u8],
        (mstart, mend): (usize, usize),
        found: &mut Found,
    ) -> Option<usize> {
        let (s, e) = if rule.shape().has_groups {
            if found.caps.len() <= ri {
                found.caps.resize_with(ri + 1, || None);
            }
            let mut own = None;
            let caps = match found.caps.get_mut(ri) {
                Some(slot) => slot.get_or_insert_with(|| re.create_captures()),
                None => own.get_or_insert_with(|| re.create_captures()),
            };
            let input = Input::new(window)
                .span(mstart..window.len())
                .anchored(Anchored::Yes);
            re.search_captures(&input, caps);
            let g = match rule.secret_group {
                Some(g) => caps.get_group(g),
                None => (1..caps.group_len()).find_map(|g| caps.get_group(g)),
            };
            match g {
                Some(g) => (g.start, g.end),
                None => (mstart, mend),
            }
        } else {
            (mstart, mend)
        };
        if e <= s {
            return None;
        }
        let secret = &hay[s..e];
        if self.templates.iter().any(|r| r.is_match(secret)) {
            return None;
        }
        if rule.placeholders && self.is_placeholder(secret) {
            return None;
        }
        if rule.allow.iter().any(|r| r.is_match(secret)) {
            return None;
        }
        if let Some(min) = rule.entropy
            && crate::shannon_entropy(secret) < min
        {
            return None;
        }
        if rule.require_digit && !secret.iter().any(u8::is_ascii_digit) {
            return None;
        }
        if rule.code_aware && looks_like_code(hay, s, e) {
            return None;
        }
        let (s, e) = char_bounds(hay, s, e);
        found.out.push(Span {
            rule: ri,
            start: s,
            end: e,
        });
        Some(e)
    }

    fn is_placeholder(&self, secret: &[u8]) -> bool {
        if self.placeholders.iter().any(|r| r.is_match(secret)) {
            return true;
        }
        // Low variety: "xxxxxxxx", "aaaa1111", "********".
        let mut seen = [false; 256];
        let mut distinct = 0usize;
        for &b in secret {
            let slot = &mut seen[usize::from(b)];
            if !*slot {
                *slot = true;
                distinct += 1;
            }
        }
        secret.len() >= 6 && distinct <= 2
    }

    /// Candidates resolved into sorted, non-overlapping spans: overlapping
    /// candidates merge into one span covering their union, named after the
    /// most specific rule (specificity, then longer span, then earlier
    /// start, then smaller rule id).
    pub(crate) fn resolved(&self, rules: &[Rule], hay: &[u8]) -> Vec<Span> {
        let mut c = self.candidates(rules, hay);
        if c.is_empty() {
            return c;
        }
        c.sort_by_key(|s| (s.start, s.end, s.rule));
        c.dedup();
        let better = |a: &Span, b: &Span| -> bool {
            let ra = rules.get(a.rule);
            let rb = rules.get(b.rule);
            let sa = ra.map_or(0, |r| r.specificity);
            let sb = rb.map_or(0, |r| r.specificity);
            if sa != sb {
                return sa > sb;
            }
            let (la, lb) = (a.end - a.start, b.end - b.start);
            if la != lb {
                return la > lb;
            }
            if a.start != b.start {
                return a.start < b.start;
            }
            ra.map(|r| r.id.as_str()) < rb.map(|r| r.id.as_str())
        };
        let mut out: Vec<Span> = Vec::with_capacity(c.len());
        let mut winner = c[0];
        let mut cur = c[0];
        for s in c.into_iter().skip(1) {
            if s.start < cur.end {
                cur.end = cur.end.max(s.end);
                if better(&s, &winner) {
                    winner = s;
                }
            } else {
                out.push(Span {
                    rule: winner.rule,
                    start: cur.start,
                    end: cur.end,
                });
                winner = s;
                cur = s;
            }
        }
        out.push(Span {
            rule: winner.rule,
            start: cur.start,
            end: cur.end,
        });
        out
    }
}

/// The prefilter automaton over `keywords` (ASCII case-insensitive,
/// standard overlapping semantics); both kinds report the same matches.
fn keyword_automaton(
    keywords: &[String],
    kind: AhoCorasickKind,
) -> Result<AhoCorasick, aho_corasick::BuildError> {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(kind))
        .build(keywords)
}

/// The distinct keywords of `rules` (first-seen order) and, per keyword,
/// the rules that list it.
fn keyword_table(rules: &[Rule]) -> (Vec<String>, Vec<Vec<usize>>) {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut keywords: Vec<String> = Vec::new();
    let mut kw_rules: Vec<Vec<usize>> = Vec::new();
    for (ri, rule) in rules.iter().enumerate() {
        for k in &rule.keywords {
            let id = *index.entry(k.clone()).or_insert_with(|| {
                keywords.push(k.clone());
                kw_rules.push(Vec::new());
                keywords.len() - 1
            });
            if let Some(list) = kw_rules.get_mut(id)
                && !list.contains(&ri)
            {
                list.push(ri);
            }
        }
    }
    (keywords, kw_rules)
}

/// Whether `pos` lies inside one of the sorted, disjoint `markers`.
fn in_marker(markers: &[(usize, usize)], pos: usize) -> bool {
    let i = markers.partition_point(|&(_, e)| e <= pos);
    markers.get(i).is_some_and(|&(s, _)| s <= pos)
}

/// Removes our own replacement markers from candidates (idempotency): a
/// candidate that covers a marker keeps only its parts outside markers.
fn subtract_markers(hay: &[u8], markers: &[(usize, usize)], cands: Vec<Span>) -> Vec<Span> {
    let mut out = Vec::with_capacity(cands.len());
    for c in cands {
        let mut pos = c.start;
        for &(ms, me) in markers {
            if me <= pos || ms >= c.end {
                continue;
            }
            if ms > pos {
                push_piece(hay, &mut out, c.rule, pos, ms);
            }
            pos = pos.max(me);
        }
        if pos < c.end {
            push_piece(hay, &mut out, c.rule, pos, c.end);
        }
    }
    out
}

/// Keeps the part `s..e` of a candidate that covered a marker when it can
/// still be secret material: 8+ bytes with a letter or digit. Shorter
/// leftovers next to our own replacement text are artefacts of that text
/// (`[REDACTED:github-pat]+A@` looks like URL credentials), and dropping them
/// keeps scrubbing idempotent.
fn push_piece(hay: &[u8], out: &mut Vec<Span>, rule: usize, s: usize, e: usize) {
    let piece = &hay[s..e];
    if piece.len() >= 8 && piece.iter().any(|b| b.is_ascii_alphanumeric()) {
        let (s, e) = char_bounds(hay, s, e);
        out.push(Span {
            rule,
            start: s,
            end: e,
        });
    }
}

/// Widens `s..e` to UTF-8 character boundaries.
pub(crate) fn char_bounds(hay: &[u8], mut s: usize, mut e: usize) -> (usize, usize) {
    while s > 0 && hay.get(s).is_some_and(|b| b & 0xC0 == 0x80) {
        s -= 1;
    }
    while e < hay.len() && hay.get(e).is_some_and(|b| b & 0xC0 == 0x80) {
        e += 1;
    }
    (s, e)
}

/// For `code_aware` rules: an unquoted value that is a code expression
/// (identifier, dotted path, call, type) rather than a literal.
///
/// `KEY=value` with no space before the value (`.env`, shell, query strings)
/// is taken as a literal unless it is a call or a dotted path; after a
/// spaced separator (`x = y`, `x: y`) identifier-shaped words (`String`,
/// `read_password`, `getToken`, `MAX_LEN`) are code.
fn looks_like_code(hay: &[u8], s: usize, e: usize) -> bool {
    let before = if s > 0 { hay.get(s - 1).copied() } else { None };
    if matches!(before, Some(b'"' | b'\'' | b'`')) {
        return false;
    }
    if matches!(hay.get(e).copied(), Some(b'(' | b'[' | b'{' | b'<' | b'!')) {
        return true;
    }
    let v = &hay[s..e];
    if v.starts_with(b"&") {
        return true;
    }
    let letters_only = v.iter().all(|&b| b.is_ascii_alphabetic() || b == b'_');
    let v = v.strip_suffix(b"?").unwrap_or(v);
    let path_chars = v
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'!' | b'?'));
    let has_path = v.windows(2).any(|w| {
        (w[0] == b'.' || w[0] == b':') && (w[1].is_ascii_alphabetic() || w[1] == b'_')
            || w[0].is_ascii_alphabetic() && w[1] == b'.'
    });
    if path_chars && has_path && v.first().is_some_and(u8::is_ascii_alphabetic) {
        // `self.password`, `config::TOKEN`, `os.environ`, `crate::__u32`
        // (but not `a1.b2c3d4`)
        // `a?.b` (optional chaining) included; every segment must be
        // shaped like an identifier (`pass.EC1Bn4XQv` is a value).
        let digits = v.iter().filter(|b| b.is_ascii_digit()).count();
        let segments_named = v
            .split(|b| matches!(b, b'.' | b':' | b'?' | b'!'))
            .filter(|seg| !seg.is_empty())
            .all(|seg| {
                let letters: Vec<u8> = seg
                    .iter()
                    .copied()
                    .filter(|b| b.is_ascii_alphabetic())
                    .collect();
                identifier_shape(&letters)
            });
        if digits * 4 < v.len() && segments_named {
            return true;
        }
    }
    let spaced = matches!(before, Some(b' ' | b'\t'));
    if spaced
        && v.first() == Some(&b'_')
        && v.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
    {
        // `_bindgen_ty_3`: a type or constant name
        return true;
    }
    if spaced
        && v.len() >= 10
        && v.iter().all(u8::is_ascii_lowercase)
        && matches!(hay.get(e).copied(), None | Some(b'\n' | b'\r'))
    {
        // `bindPassword: correcthorsebattery` ending its line: a lowercase
        // word of ten letters or more is a value, not a type or a variable
        return false;
    }
    spaced && letters_only && identifier_shape(v)
}

/// Longest acronym inside a camel-case name (`CF` of `CFStringRef`, `URL`
/// of `parseURL`).
const MAX_ACRONYM: usize = 4;

/// snake_case, lowercase, camelCase / PascalCase with humps of 2+ lowercase
/// letters (an acronym of up to four capitals may precede a hump or end the
/// name: `CFStringRef`, `NSString`, `CFIndex`, `parseURL`), or
/// CONSTANT_CASE.
fn identifier_shape(v: &[u8]) -> bool {
    if v.is_empty() {
        return false;
    }
    let no_upper = !v.iter().any(u8::is_ascii_uppercase);
    let no_lower = !v.iter().any(u8::is_ascii_lowercase);
    if no_upper || no_lower {
        return true;
    }
    // camel / Pascal: every hump is a capital and >= 2 lowercase letters
    let mut i = 0;
    while i < v.len() {
        if v[i].is_ascii_uppercase() {
            let caps = v[i..].iter().take_while(|b| b.is_ascii_uppercase()).count();
            let run = v[i + caps..]
                .iter()
                .take_while(|b| b.is_ascii_lowercase())
                .count();
            if i + caps == v.len() {
                // a trailing acronym (`parseURL`)
                return caps <= MAX_ACRONYM;
            }
            // the last capital of a run begins the hump; the ones before
            // it are an acronym
            if run < 2 || caps - 1 > MAX_ACRONYM {
                return false;
            }
            i += caps + run;
        } else {
            i += 1;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    /// The reference walk: aho-corasick's own overlapping search over the
    /// same keywords (what the scan used before the laned walk).
    fn reference_ac(rules: &[Rule]) -> AhoCorasick {
        let (keywords, _) = keyword_table(rules);
        keyword_automaton(&keywords, AhoCorasickKind::DFA).unwrap()
    }

    fn reference_hits(ac: &AhoCorasick, hay: &[u8]) -> Vec<(usize, usize, usize)> {
        ac.find_overlapping_iter(hay)
            .map(|m| (m.pattern().as_usize(), m.start(), m.end()))
            .collect()
    }

    fn laned_hits(engine: &Engine, hay: &[u8], block: usize) -> Vec<(usize, usize, usize)> {
        let mut walk = Walk::default();
        let mut all = Vec::new();
        let mut from = 0;
        while from < hay.len() {
            let to = from.saturating_add(block).min(hay.len());
            let table = engine.laned(usize::MAX).unwrap();
            keyword_hits(table, hay, from, to, &mut walk);
            all.extend(walk.hits().copied());
            from = to;
        }
        all
    }

    /// The scan driven by the reference walk.
    fn reference_candidates(
        engine: &Engine,
        ac: &AhoCorasick,
        rules: &[Rule],
        hay: &[u8],
    ) -> Vec<Span> {
        if hay.is_empty() {
            return Vec::new();
        }
        let markers = engine.markers(hay);
        let mut scan = Scan {
            covered: vec![0; rules.len()],
            found: Found::default(),
        };
        for hit in reference_hits(ac, hay) {
            engine.on_hit(rules, hay, &markers, hit, &mut scan);
        }
        if markers.is_empty() {
            scan.found.out
        } else {
            subtract_markers(hay, &markers, scan.found.out)
        }
    }

    fn scrubber() -> &'static crate::Scrubber {
        crate::Scrubber::default_rules().unwrap()
    }

    /// Text made of keywords (random case), secret-like runs, separators,
    /// line breaks and non-ASCII, long enough to be split into lanes.
    fn text() -> impl Strategy<Value = Vec<u8>> {
        let (keywords, _) = keyword_table(&scrubber().rules);
        let kw = prop::sample::select(keywords).prop_flat_map(|k| {
            let n = k.len();
            (Just(k), prop::collection::vec(any::<bool>(), n)).prop_map(|(k, up)| {
                k.bytes()
                    .zip(up)
                    .map(|(b, u)| if u { b.to_ascii_uppercase() } else { b })
                    .collect::<Vec<u8>>()
            })
        });
        let piece = prop_oneof![
            6 => kw,
            3 => "[A-Za-z0-9+/=_.-]{1,40}".prop_map(String::into_bytes),
            2 => prop::sample::select(vec![" ", "\n", "=", ": ", "\"", "'", "@", "://", "é", "[REDACTED]", "\r\n"])
                .prop_map(|s| s.as_bytes().to_vec()),
        ];
        prop::collection::vec(piece, 0..700).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// The laned, blocked walk reports exactly the reference's hits in
        /// the reference's order, whatever the block size.
        #[test]
        fn laned_walk_equals_overlapping_search(hay in text(), block in prop::sample::select(vec![1usize, 3, 64, 4095, 4096, 5000, BLOCK])) {
            let engine = &scrubber().engine;
            let ac = reference_ac(&scrubber().rules);
            prop_assert_eq!(laned_hits(engine, &hay, block), reference_hits(&ac, &hay));
        }

        /// The scan finds the same candidates (hence the same redactions)
        /// as the scan driven by the reference walk.
        #[test]
        fn candidates_equal_reference(hay in text()) {
            let s = scrubber();
            let ac = reference_ac(&s.rules);
            prop_assert_eq!(
                s.engine.candidates(&s.rules, &hay),
                reference_candidates(&s.engine, &ac, &s.rules, &hay)
            );
        }
    }

    #[test]
    fn laned_walk_on_a_large_text_equals_overlapping_search() {
        let s = scrubber();
        let ac = reference_ac(&s.rules);
        let (keywords, _) = keyword_table(&s.rules);
        let mut hay = Vec::new();
        let mut i = 0usize;
        while hay.len() < 3 * BLOCK + 777 {
            let k = &keywords[(i * 7919) % keywords.len()];
            hay.extend_from_slice(k.as_bytes());
            hay.extend_from_slice(&b" x=1\n ab"[..(i % 9)]);
            i += 1;
        }
        let hits = laned_hits(&s.engine, &hay, BLOCK);
        assert!(hits.len() > 10_000);
        assert_eq!(hits, reference_hits(&ac, &hay));
        assert_eq!(
            s.engine.candidates(&s.rules, &hay),
            reference_candidates(&s.engine, &ac, &s.rules, &hay)
        );
    }

    /// The cheap automaton and the DFA report the same overlapping matches,
    /// in the same order, so the scan does not depend on which one ran.
    #[test]
    fn both_automata_report_the_same_matches() {
        let scrubber = crate::Scrubber::default_rules().expect("built-in rules load");
        let (keywords, _) = keyword_table(&scrubber.rules);
        let keywords = &keywords;
        let nfa = keyword_automaton(keywords, AhoCorasickKind::ContiguousNFA).expect("nfa");
        let dfa = keyword_automaton(keywords, AhoCorasickKind::DFA).expect("dfa");
        let mut hay = String::new();
        for (i, k) in keywords.iter().enumerate() {
            // every keyword, in mixed case, glued to its neighbours or not
            let k = if i % 2 == 0 {
                k.to_ascii_uppercase()
            } else {
                k.clone()
            };
            hay.push_str(&k);
            hay.push_str(["", " ", "=x\n", "_"][i % 4]);
        }
        let hay = hay.repeat(3);
        let all = |ac: &AhoCorasick| -> Vec<(usize, usize, usize)> {
            ac.find_overlapping_iter(hay.as_bytes())
                .map(|m| (m.pattern().as_usize(), m.start(), m.end()))
                .collect()
        };
        let a = all(&nfa);
        assert!(a.len() >= keywords.len() * 3);
        assert_eq!(a, all(&dfa));
    }

    /// A long haystack (the DFA) and its short pieces (the NFA) give the
    /// same findings.
    #[test]
    fn long_and_short_haystacks_agree() {
        let scrubber = crate::Scrubber::default_rules().expect("built-in rules load");
        let line = "export GITHUB_TOKEN=ghp_R4nd0mL00k1ngT0k3nV4lu3xYz0123456789 and password=Zq8#kL2!vN9w\n";
        let short = scrubber.find(line);
        assert!(!short.is_empty());
        let n = DFA_MIN_HAYSTACK / line.len() + 2;
        let long = line.repeat(n);
        assert!(long.len() >= DFA_MIN_HAYSTACK);
        let found = scrubber.find(&long);
        assert_eq!(found.len(), short.len() * n);
        for (i, f) in found.iter().enumerate() {
            let s = &short[i % short.len()];
            let off = (i / short.len()) * line.len();
            assert_eq!(
                (f.rule.as_str(), f.start, f.end),
                (s.rule.as_str(), s.start + off, s.end + off)
            );
        }
    }

    /// An allow-list compiled as one alternation matches exactly where one
    /// of its patterns, compiled alone, matches.
    #[test]
    fn joined_allow_lists_match_as_their_patterns_do() {
        let file: toml::Table = toml::from_str(crate::DEFAULT_RULES_TOML).unwrap();
        let allow = file["allow"].as_table().unwrap();
        let s = scrubber();
        let mut samples: Vec<String> = vec![
            "${DB_PASSWORD}",
            "$(cat x)",
            "{{ .Values.token }}",
            "%(pw)s",
            "%PASS%",
            "<your-token>",
            "#{secret}",
            "****",
            "changeme",
            "CHANGE_IT",
            "Example123",
            "dummy",
            "your_key",
            "replace-me",
            "xxxxYYYY",
            "a...b",
            "password",
            "my-secret",
            "admin123!",
            "open sesame",
            "p@ssw0rd1",
            "pwd",
            "insert-key",
            "mockToken",
            "test_value",
            "x_sample",
            "env.TOKEN",
            "process.env.X",
            "os.environ",
            "secrets.GH",
            "vault:kv",
            "arn:aws:iam",
            "sha256:abc",
            "Zq8#kL2!vN9w",
            "ghp_R4nd0mL00k1ngT0k3nV4lu3xYz0123456789",
            "hunter2",
            "",
            "é",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        for r in s.rules() {
            samples.extend(r.examples.iter().cloned());
        }
        let mut hits = 0;
        for (name, joined) in [
            ("templates", &s.engine.templates),
            ("placeholders", &s.engine.placeholders),
        ] {
            let joined = joined.as_ref().unwrap();
            for p in allow[name].as_array().unwrap() {
                assert!(p.as_str().is_some());
            }
            let each: Vec<regex::bytes::Regex> = allow[name]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    regex::bytes::RegexBuilder::new(p.as_str().unwrap())
                        .unicode(false)
                        .case_insensitive(true)
                        .build()
                        .unwrap()
                })
                .collect();
            for t in &samples {
                let want = each.iter().any(|r| r.is_match(t.as_bytes()));
                hits += usize::from(want);
                assert_eq!(joined.is_match(t.as_bytes()), want, "{name} on {t:?}");
            }
        }
        assert!(hits >= 30, "{hits}");
    }

    /// Loading the built-in rules parses and compiles no pattern; a scan
    /// parses only the rules whose keywords it meets.
    #[test]
    fn the_built_in_rules_load_lazily() {
        let s = crate::Scrubber::build_builtin().expect("loads");
        let parsed = |s: &crate::Scrubber| s.rules.iter().filter(|r| r.shape_known()).count();
        assert_eq!(parsed(&s), 0);
        // no automaton built: the table in the binary
        assert!(s.engine.ac.is_none());
        let builtin = |s: &crate::Scrubber| {
            matches!(
                s.engine.laned.get(),
                Some(Some(Table {
                    trans: Trans::Builtin(_),
                    ..
                }))
            )
        };
        assert!(builtin(&s));
        assert!(s.find("00000000-0000-4000-8000-000000000998").is_empty());
        assert_eq!(parsed(&s), 0);
        let found = s.find("token=ghp_R4nd0mL00k1ngT0k3nV4lu3xYz0123456789");
        assert!(!found.is_empty());
        let n = parsed(&s);
        assert!(
            n >= 1 && n < s.rules.len() / 4,
            "{n} of {} rules parsed",
            s.rules.len()
        );
        assert!(builtin(&s));
    }

    /// A URL without `@` compiles neither URL-password rule (every match
    /// of theirs holds `@`); with credentials in it, the rule still finds
    /// them.
    #[test]
    fn a_rule_whose_required_byte_is_absent_is_not_compiled() {
        let s = crate::Scrubber::build_builtin().expect("loads");
        let known = |s: &crate::Scrubber, id: &str| {
            s.rules
                .iter()
                .find(|r| r.id == id)
                .is_some_and(|r| r.shape_known())
        };
        let text = "fetched https://example.com/last and https://docs.rs/regex/1.0.0\nthen ftp://mirror.example.net/pub";
        assert!(s.find(text).is_empty());
        for id in ["url-credentials", "database-url-password"] {
            assert!(!known(&s, id), "{id} compiled for a text without @");
        }
        let found =
            s.find("https://deploy:Zq8vN2mK7pL4rT9wX3yB@git.internal.example.net/org/repo.git");
        assert!(
            found.iter().any(|f| f.rule == "url-credentials"),
            "{found:?}"
        );
        assert!(known(&s, "url-credentials"));
        // `@` on a later line still lets a hit's scan run (the rule may
        // span lines only as its pattern allows; the check is on the rest
        // of the text).
        let s = crate::Scrubber::build_builtin().expect("loads");
        let found = s.find("see https://example.com\nsqlserver://sa:Qw3rtyUi0pAsDfGh@db:1433");
        assert!(
            found.iter().any(|f| f.rule == "database-url-password"),
            "{found:?}"
        );
    }

    /// The marker pattern compiles, and finds the markers our replacement
    /// styles write.
    #[test]
    fn the_marker_pattern_compiles() {
        let m = marker().expect("compiles");
        for t in [
            "[REDACTED]",
            "[REDACTED:github-pat]",
            "[GITHUB TOKEN REDACTED]",
        ] {
            assert_eq!(m.find(t.as_bytes()).map(|m| m.len()), Some(t.len()), "{t}");
        }
        assert!(!m.is_match(b"REDACTED"));
    }

    /// The table `build.rs` put in the binary is the one [`kwtable::build`]
    /// makes of the built-in rules' keywords now.
    #[test]
    fn the_built_in_table_is_the_one_built_at_run_time() {
        let s = scrubber();
        let (keywords, _) = keyword_table(&s.rules);
        assert_eq!(keywords, builtin::KEYWORDS);
        let p = kwtable::build(&keywords).expect("builds");
        let trans: Vec<u32> = BUILTIN_TRANS
            .as_chunks::<4>()
            .0
            .iter()
            .map(|b| u32::from_le_bytes(*b))
            .collect();
        let shipped = kwtable::Parts {
            start: builtin::START,
            trans,
            classes: builtin::CLASSES,
            match_lim: builtin::MATCH_LIM,
            shift: builtin::SHIFT,
            match_at: builtin::MATCH_AT.to_vec(),
            pids: builtin::PIDS.to_vec(),
            lens: builtin::LENS.to_vec(),
            max_len: builtin::MAX_LEN,
        };
        assert_eq!(shipped, p);
        assert!(p.match_lim > 0 && p.pids.len() >= keywords.len());
        // and the keywords' rules are those of the rule list
        let (_, lists) = keyword_table(&s.rules);
        let shipped_lists: Vec<Vec<usize>> = builtin::KW_AT
            .windows(2)
            .map(|w| {
                builtin::KW_RULES[w[0] as usize..w[1] as usize]
                    .iter()
                    .map(|&r| r as usize)
                    .collect()
            })
            .collect();
        assert_eq!(shipped_lists, lists);
        assert!(s.engine.keywords.is_empty());
        assert_eq!(s.engine.kw_at, builtin::KW_AT);
    }

    /// Other keywords (a user's rules, a subset of the built-in ones) get
    /// the NFA and, on long haystacks, a table built at run time; both
    /// report what aho-corasick's own search reports.
    #[test]
    fn a_user_rule_set_builds_its_own_automata() {
        let s = crate::Scrubber::default_rules_subset_for("password=x token: y").expect("subset");
        assert!(s.engine.ac.is_some());
        assert!(s.engine.laned.get().is_none());
        let (keywords, _) = keyword_table(&s.rules);
        assert!(!keywords.is_empty() && keywords.len() < builtin::KEYWORDS.len());
        let ac = reference_ac(&s.rules);
        let line = "password=Zq8#kL2!vN9w token: R4nd0mL00k1ngT0k3nV4lu3 PASSWORD TOKEN\n";
        let hay = line.repeat(DFA_MIN_HAYSTACK / line.len() + 2);
        let hits = laned_hits(&s.engine, hay.as_bytes(), BLOCK);
        assert!(matches!(
            s.engine.laned.get(),
            Some(Some(Table {
                trans: Trans::Built(_),
                ..
            }))
        ));
        assert!(hits.len() >= 4 * (DFA_MIN_HAYSTACK / line.len()));
        assert_eq!(hits, reference_hits(&ac, hay.as_bytes()));
        assert_eq!(
            s.engine.candidates(&s.rules, hay.as_bytes()),
            reference_candidates(&s.engine, &ac, &s.rules, hay.as_bytes())
        );
    }
}
