//! The scan: keyword prefilter, windowed regex, filters, overlap resolution.

use crate::rules::{Compiled, LazyRegex, Rule, RuleError};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::bytes::Regex;
use regex_automata::{Anchored, Input, meta};
use std::collections::HashMap;
use std::sync::OnceLock;

/// A candidate or resolved span (rule index, byte range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) rule: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

#[derive(Debug)]
pub(crate) struct Engine {
    /// The keyword automaton every scan can use: a contiguous NFA, cheap to
    /// build (a process that scrubs a few short strings, such as a hook,
    /// pays for nothing more).
    ac: AhoCorasick,
    /// The same keywords as a DFA (same matches, in the same order, faster
    /// on long inputs but costly to build), built on the first haystack of
    /// [`DFA_MIN_HAYSTACK`] bytes or more.
    ac_dfa: OnceLock<Option<AhoCorasick>>,
    keywords: Vec<String>,
    /// keyword pattern id -> rule indices
    kw_rules: Vec<Vec<usize>>,
    templates: Vec<LazyRegex>,
    placeholders: Vec<LazyRegex>,
    marker: Regex,
}

/// The shapes of our own replacement texts (and Pantheon's): a candidate is
/// never allowed to cover these, which makes scrubbing idempotent.
/// Most re-searches after rejected matches in one line window: enough for
/// any real line, and a bound on the work a hostile line can cause (each
/// re-search is linear in the line).
const MAX_RETRIES_PER_WINDOW: usize = 64;

/// Haystacks at least this long are scanned with the DFA automaton.
const DFA_MIN_HAYSTACK: usize = 32 * 1024;

const MARKER_PATTERN: &str = r"\[(?:[A-Z0-9][A-Z0-9 ]* )?REDACTED(?::[a-z0-9-]*)?\]";

impl Engine {
    pub(crate) fn new(compiled: Compiled) -> Result<(Self, Vec<Rule>), RuleError> {
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut keywords: Vec<String> = Vec::new();
        let mut kw_rules: Vec<Vec<usize>> = Vec::new();
        for (ri, rule) in compiled.rules.iter().enumerate() {
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
        let ac = keyword_automaton(&keywords, AhoCorasickKind::ContiguousNFA)
            .map_err(|e| RuleError::Automaton(e.to_string()))?;
        let marker = Regex::new(MARKER_PATTERN).map_err(|e| RuleError::Regex {
            id: "marker".into(),
            message: e.to_string(),
        })?;
        let engine = Engine {
            ac,
            ac_dfa: OnceLock::new(),
            keywords,
            kw_rules,
            templates: compiled.templates,
            placeholders: compiled.placeholders,
            marker,
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
        let mut out = Vec::new();
        if hay.is_empty() {
            return out;
        }
        let markers = self.markers(hay);
        let mut covered = vec![0usize; rules.len()];
        for m in self.automaton(hay.len()).find_overlapping_iter(hay) {
            if !markers.is_empty() && in_marker(&markers, m.start()) {
                // a keyword inside our own replacement text (`[REDACTED:bearer-token]`)
                continue;
            }
            let Some(list) = self.kw_rules.get(m.pattern().as_usize()) else {
                continue;
            };
            for &ri in list {
                let Some(rule) = rules.get(ri) else { continue };
                let Some(cov) = covered.get_mut(ri) else {
                    continue;
                };
                if m.start() < *cov {
                    continue;
                }
                *cov = if rule.shape().anchored {
                    self.scan_anchored(rule, ri, hay, &markers, m.start(), &mut out)
                } else {
                    self.scan_window(rule, ri, hay, &markers, (m.start(), m.end()), &mut out)
                };
            }
        }
        if !markers.is_empty() {
            out = subtract_markers(hay, &markers, out);
        }
        out
    }

    /// The keyword automaton for a haystack of `len` bytes.
    fn automaton(&self, len: usize) -> &AhoCorasick {
        if len < DFA_MIN_HAYSTACK {
            return &self.ac;
        }
        self.ac_dfa
            .get_or_init(|| keyword_automaton(&self.keywords, AhoCorasickKind::DFA).ok())
            .as_ref()
            .unwrap_or(&self.ac)
    }

    /// Byte ranges of replacement markers in `hay` (usually none).
    fn markers(&self, hay: &[u8]) -> Vec<(usize, usize)> {
        if memchr::memmem::find(hay, b"REDACTED").is_none() {
            return Vec::new();
        }
        self.marker
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
        out: &mut Vec<Span>,
    ) -> usize {
        let len = hay.len();
        let Some(re) = rule.regex.get() else {
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
                    self.accept(rule, re, ri, hay, window, (m.start(), m.end()), out)
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
        out: &mut Vec<Span>,
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
        let Some(re) = rule.regex.get() else {
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
                self.accept(rule, re, ri, hay, window, (m.start(), m.end()), out)
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
        out: &mut Vec<Span>,
    ) -> Option<usize> {
        let (s, e) = if rule.shape().has_groups {
            let mut caps = re.create_captures();
            let input = Input::new(window)
                .span(mstart..window.len())
                .anchored(Anchored::Yes);
            re.search_captures(&input, &mut caps);
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
        out.push(Span {
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
    use super::*;

    /// The cheap automaton and the DFA report the same overlapping matches,
    /// in the same order, so the scan does not depend on which one ran.
    #[test]
    fn both_automata_report_the_same_matches() {
        let scrubber = crate::Scrubber::default_rules().expect("built-in rules load");
        let keywords = &scrubber.engine.keywords;
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

    /// Loading the built-in rules parses and compiles no pattern; a scan
    /// parses only the rules whose keywords it meets.
    #[test]
    fn the_built_in_rules_load_lazily() {
        let s = crate::Scrubber::build(crate::DEFAULT_RULES_TOML, false).expect("loads");
        let parsed = |s: &crate::Scrubber| s.rules.iter().filter(|r| r.shape_known()).count();
        assert_eq!(parsed(&s), 0);
        assert!(s.engine.ac_dfa.get().is_none());
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
        assert!(s.engine.ac_dfa.get().is_none());
    }
}
