//! The rule file format and its compilation.

use std::collections::{BTreeMap, HashSet};
use std::sync::OnceLock;

/// Default window (bytes after the keyword hit) of multi-line rules.
pub(crate) const DEFAULT_MAX_LEN: usize = 32 * 1024;

/// Errors of loading a rule file.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RuleError {
    /// The file is not valid TOML or does not have the expected shape.
    #[error("rule file: {0}")]
    Parse(String),
    /// A pattern (of a rule or an allow-list) does not compile.
    #[error("rule `{id}`: pattern does not compile: {message}")]
    Regex {
        /// Rule id (or `allow.templates` / `allow.placeholders`).
        id: String,
        /// The regex error.
        message: String,
    },
    /// A rule is invalid (missing keywords, bad id, bad group, …).
    #[error("rule `{id}`: {message}")]
    Invalid {
        /// Rule id.
        id: String,
        /// What is wrong.
        message: String,
    },
    /// Two rules share an id.
    #[error("duplicate rule id `{0}`")]
    Duplicate(String),
    /// The keyword automaton could not be built.
    #[error("keyword automaton: {0}")]
    Automaton(String),
}

use crate::file_format::RuleFile;

/// A rule of the built-in file as `build.rs` wrote it into the binary
/// (macros expanded, keywords lowercased, ids checked).
#[derive(Debug)]
pub(crate) struct Spec<'a> {
    pub(crate) id: &'a str,
    pub(crate) description: &'a str,
    pub(crate) pattern: &'a str,
    pub(crate) keywords: &'a [&'a str],
    pub(crate) secret_group: Option<usize>,
    pub(crate) entropy: Option<f64>,
    pub(crate) allow: &'a [&'a str],
    pub(crate) specificity: u32,
    pub(crate) placeholders: bool,
    pub(crate) code_aware: bool,
    pub(crate) require_digit: bool,
    pub(crate) max_len: Option<usize>,
    pub(crate) pantheon_replacement: Option<&'a str>,
    pub(crate) examples: &'a [&'a str],
    pub(crate) counter_examples: &'a [&'a str],
    /// `required_byte` (src/required.rs, run by build.rs) of the pattern.
    pub(crate) requires: Option<u8>,
}

/// `rules/default.toml`, parsed by `build.rs`.
mod builtin {
    include!(concat!(env!("OUT_DIR"), "/default_rules.rs"));
}

/// The keywords of the built-in rules, rule by rule (see
/// [`crate::default_rule_keywords`]).
pub(crate) fn builtin_keywords() -> impl Iterator<Item = &'static str> + Clone {
    builtin::RULES
        .iter()
        .flat_map(|r| r.keywords.iter().copied())
}

fn owned(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

/// The built-in rules, from the statics `build.rs` made of
/// `rules/default.toml` (what [`compile`] of that file gives, lazily, without
/// parsing TOML at run time).
pub(crate) fn compile_builtin() -> Result<Compiled, RuleError> {
    let mut c = compile_builtin_where(|_| true)?;
    c.builtin = true;
    Ok(c)
}

/// [`compile_builtin`] of the rules whose index `keep` keeps (in order):
/// what [`compile_file`] makes of the file lazily, built straight from the
/// statics (no intermediate [`RuleFile`]; ids, keywords and macros were
/// checked, lowercased and expanded by `build.rs`).
pub(crate) fn compile_builtin_where(keep: impl Fn(usize) -> bool) -> Result<Compiled, RuleError> {
    let templates = LazyRegex::any_of("allow.templates", &owned(builtin::TEMPLATES), true, false)?;
    let placeholders = LazyRegex::any_of(
        "allow.placeholders",
        &owned(builtin::PLACEHOLDERS),
        true,
        false,
    )?;
    let mut rules = Vec::with_capacity(builtin::RULES.len());
    for (_, s) in builtin::RULES.iter().enumerate().filter(|(i, _)| keep(*i)) {
        rules.push(Rule {
            id: s.id.to_string(),
            description: s.description.to_string(),
            pattern: s.pattern.to_string(),
            keywords: owned(s.keywords),
            regex: LazyMeta {
                id: s.id.to_string(),
                pattern: s.pattern.to_string(),
                cell: OnceLock::new(),
            },
            shape: OnceLock::new(),
            secret_group: s.secret_group,
            entropy: s.entropy,
            allow: LazyRegex::any_of(s.id, &owned(s.allow), true, false)?,
            specificity: s.specificity,
            placeholders: s.placeholders,
            code_aware: s.code_aware,
            require_digit: s.require_digit,
            max_len: s.max_len.unwrap_or(DEFAULT_MAX_LEN).clamp(256, 1 << 20),
            pantheon_replacement: s.pantheon_replacement.map(str::to_string),
            examples: owned(s.examples),
            counter_examples: owned(s.counter_examples),
            requires: s.requires,
        });
    }
    Ok(Compiled {
        rules,
        templates,
        placeholders,
        builtin: false,
    })
}

/// Indices (ascending) of the built-in rules with a keyword in `text`,
/// ASCII-case-insensitively (the keywords are lowercase): at each byte,
/// only the keywords starting with it are compared.
pub(crate) fn builtin_rules_in(text: &[u8]) -> Vec<usize> {
    /// Per first byte: (keyword, rule index).
    type ByFirst = Vec<Vec<(&'static [u8], usize)>>;
    static BY_FIRST: OnceLock<ByFirst> = OnceLock::new();
    let by_first = BY_FIRST.get_or_init(|| {
        let mut t: ByFirst = vec![Vec::new(); 256];
        for (i, r) in builtin::RULES.iter().enumerate() {
            for k in r.keywords {
                if let Some(&f) = k.as_bytes().first() {
                    t[usize::from(f)].push((k.as_bytes(), i));
                }
            }
        }
        t
    });
    let lower = text.to_ascii_lowercase();
    let mut hit = vec![false; builtin::RULES.len()];
    for (at, &b) in lower.iter().enumerate() {
        for &(k, rule) in &by_first[usize::from(b)] {
            if !hit[rule] && lower[at..].starts_with(k) {
                hit[rule] = true;
            }
        }
    }
    hit.iter()
        .enumerate()
        .filter(|(_, h)| **h)
        .map(|(i, _)| i)
        .collect()
}

/// A compiled rule. Its data is read through accessors.
#[derive(Debug)]
pub struct Rule {
    pub(crate) id: String,
    pub(crate) description: String,
    pub(crate) pattern: String,
    pub(crate) keywords: Vec<String>,
    pub(crate) regex: LazyMeta,
    /// What the scan needs to know of the pattern (from its syntax tree).
    shape: OnceLock<Shape>,
    pub(crate) secret_group: Option<usize>,
    pub(crate) entropy: Option<f64>,
    /// The rule's allow-list, as one alternation (none when empty).
    pub(crate) allow: Option<LazyRegex>,
    pub(crate) specificity: u32,
    pub(crate) placeholders: bool,
    pub(crate) code_aware: bool,
    pub(crate) require_digit: bool,
    pub(crate) max_len: usize,
    pub(crate) pantheon_replacement: Option<String>,
    pub(crate) examples: Vec<String>,
    pub(crate) counter_examples: Vec<String>,
    /// A byte every match holds (src/required.rs, run by build.rs;
    /// built-in rules only, `None` for a user's).
    pub(crate) requires: Option<u8>,
}

impl Rule {
    /// Kebab-case id, used in `[REDACTED:<id>]`.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// Human description.
    pub fn description(&self) -> &str {
        &self.description
    }
    /// The regex as written in the rule file, macros expanded.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }
    /// Prefilter keywords (lowercase; matched ASCII-case-insensitively).
    pub fn keywords(&self) -> &[String] {
        &self.keywords
    }
    /// Overlap priority (higher wins).
    pub fn specificity(&self) -> u32 {
        self.specificity
    }
    /// Minimum Shannon entropy (bits per byte) of the secret, if any.
    pub fn entropy(&self) -> Option<f64> {
        self.entropy
    }
    /// Whether the pattern can match across lines (PEM blocks, …).
    pub fn multiline(&self) -> bool {
        self.shape().multiline
    }
    /// Replacement used by [`crate::ReplacementStyle::Pantheon`].
    pub fn pantheon_replacement(&self) -> Option<&str> {
        self.pantheon_replacement.as_deref()
    }
    /// Positive example templates (see `docs/scrubbing.md`; `{{class:n}}`
    /// expands to `n` fake characters of `class`).
    pub fn examples(&self) -> &[String] {
        &self.examples
    }
    /// Example templates that must not be found by this rule.
    pub fn counter_examples(&self) -> &[String] {
        &self.counter_examples
    }
    /// Whether the raw pattern matches somewhere in `text` (no prefilter, no
    /// allow-lists).
    pub fn pattern_matches(&self, text: &str) -> bool {
        self.regex
            .get()
            .is_some_and(|r| r.is_match(text.as_bytes()))
    }
    /// Every non-overlapping match of the raw pattern in `text` (no
    /// prefilter, no allow-lists), as byte ranges.
    pub fn raw_matches(&self, text: &str) -> Vec<(usize, usize)> {
        match self.regex.get() {
            Some(re) => re
                .find_iter(text.as_bytes())
                .map(|m| (m.start(), m.end()))
                .collect(),
            None => Vec::new(),
        }
    }
    /// Whether every match of the pattern starts with one of the keywords
    /// (then the scan runs an anchored search at each keyword hit instead of
    /// scanning the hit's line).
    pub fn anchored_at_keyword(&self) -> bool {
        self.shape().anchored
    }
    /// What the scan needs to know of the pattern: computed when the rule
    /// is loaded from a user's file, and on the first keyword hit for the
    /// built-in file (a short process then parses only the patterns its
    /// inputs reach). A pattern that does not parse (never the built-in
    /// file's: its tests compile every one) has no regex either, so the
    /// shape of it only needs to be conservative.
    pub(crate) fn shape(&self) -> &Shape {
        self.shape
            .get_or_init(|| match parse_pattern(&self.pattern, false) {
                Ok(hir) => {
                    // the regex from the same parse (it is needed right
                    // after: the scan asks for the shape at a keyword hit)
                    let shape = Shape::of(&hir, &self.keywords);
                    let _ = self
                        .regex
                        .cell
                        .set(self.regex.build(Some(&hir), !shape.anchored).ok());
                    shape
                }
                Err(_) => Shape {
                    anchored: false,
                    has_groups: false,
                    groups: 1,
                    multiline: true,
                },
            })
    }

    /// The rule's regex for the scan (compiled on first use, from the parse
    /// that gave the shape; without a prefilter when the rule is anchored).
    pub(crate) fn scan_regex(&self) -> Option<&regex_automata::meta::Regex> {
        let anchored = self.shape().anchored;
        self.regex
            .cell
            .get_or_init(|| self.regex.build(None, !anchored).ok())
            .as_ref()
    }

    /// Whether the shape was computed already (for tests).
    #[cfg(test)]
    pub(crate) fn shape_known(&self) -> bool {
        self.shape.get().is_some()
    }

    /// Compiles the rule's regexes now (they are otherwise compiled on first
    /// use) and reports any error.
    pub fn compile(&self) -> Result<(), RuleError> {
        parse_pattern(&self.pattern, false).map_err(|e| RuleError::Regex {
            id: self.id.clone(),
            message: e,
        })?;
        if let Some(g) = self.secret_group
            && (g == 0 || g >= self.shape().groups)
        {
            return Err(RuleError::Invalid {
                id: self.id.clone(),
                message: format!("secret_group {g} does not exist"),
            });
        }
        self.regex.force()?;
        self.allow.iter().try_for_each(LazyRegex::force)
    }
}

/// A pattern's properties that the scan uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    /// Every match starts with a keyword (see [`Rule::anchored_at_keyword`]).
    pub(crate) anchored: bool,
    /// The pattern has capture groups.
    pub(crate) has_groups: bool,
    /// Capture groups, the implicit group 0 included.
    groups: usize,
    /// The pattern may match a `\n`.
    pub(crate) multiline: bool,
}

impl Shape {
    fn of(hir: &regex_syntax::hir::Hir, keywords: &[String]) -> Shape {
        let groups = hir.properties().explicit_captures_len() + 1;
        Shape {
            anchored: starts_with_keyword(hir, keywords),
            has_groups: groups > 1,
            groups,
            multiline: can_match_newline(hir),
        }
    }
}

/// A rule's regex (`regex-automata` meta engine, bytes, Unicode off),
/// compiled on first use.
#[derive(Debug)]
pub(crate) struct LazyMeta {
    id: String,
    pattern: String,
    cell: OnceLock<Option<regex_automata::meta::Regex>>,
}

impl LazyMeta {
    /// Compiles the pattern (or its already parsed `hir`). A prefilter
    /// (literal search for the pattern's prefixes) only serves unanchored
    /// searches; the anchored search at a keyword hit never uses one, and
    /// building it was half the cost of compiling such a rule.
    fn build(
        &self,
        hir: Option<&regex_syntax::hir::Hir>,
        prefilter: bool,
    ) -> Result<regex_automata::meta::Regex, RuleError> {
        use regex_automata::{meta, util::syntax};
        let mut b = meta::Regex::builder();
        b.syntax(syntax::Config::new().unicode(false).utf8(false))
            .configure(
                meta::Config::new()
                    .utf8_empty(false)
                    .auto_prefilter(prefilter)
                    .nfa_size_limit(Some(64 * 1024 * 1024))
                    .hybrid_cache_capacity(4 * 1024 * 1024),
            );
        match hir {
            // parsed with the same flags as the syntax config above
            Some(h) => b.build_from_hir(h),
            None => b.build(&self.pattern),
        }
        .map_err(|e| RuleError::Regex {
            id: self.id.clone(),
            message: e.to_string(),
        })
    }

    pub(crate) fn get(&self) -> Option<&regex_automata::meta::Regex> {
        self.cell
            .get_or_init(|| self.build(None, true).ok())
            .as_ref()
    }

    pub(crate) fn force(&self) -> Result<(), RuleError> {
        if self.get().is_some() {
            return Ok(());
        }
        self.build(None, true).map(|_| ())
    }
}

/// A regex whose syntax was validated at load time and which is compiled on
/// first use (most rules never fire on a given input; compiling all 200+
/// patterns up front would dominate start-up).
#[derive(Debug)]
pub(crate) struct LazyRegex {
    id: String,
    pattern: String,
    case_insensitive: bool,
    cell: OnceLock<Option<regex_automata::meta::Regex>>,
}

impl LazyRegex {
    /// One regex matching where any of `patterns` matches (`(?:p1)|(?:p2)|…`,
    /// the same `is_match` as trying each in turn, compiled once instead of
    /// once per pattern); none for an empty list. With `validate`, each
    /// pattern is parsed on its own first, so that an error names it.
    fn any_of(
        id: &str,
        patterns: &[String],
        case_insensitive: bool,
        validate: bool,
    ) -> Result<Option<Self>, RuleError> {
        if validate {
            for p in patterns {
                parse_pattern(p, case_insensitive).map_err(|e| RuleError::Regex {
                    id: id.to_string(),
                    message: format!("`{p}`: {e}"),
                })?;
            }
        }
        if patterns.is_empty() {
            return Ok(None);
        }
        let joined = patterns
            .iter()
            .map(|p| format!("(?:{p})"))
            .collect::<Vec<_>>()
            .join("|");
        LazyRegex::new(id, &joined, case_insensitive, false).map(Some)
    }

    /// A regex compiled on first use. Its syntax is checked here only when
    /// `validate` (a user's rule file is compiled eagerly anyway, and the
    /// built-in file's patterns are checked by its tests: parsing them all
    /// at every start-up was most of a short process's work).
    fn new(
        id: &str,
        pattern: &str,
        case_insensitive: bool,
        validate: bool,
    ) -> Result<Self, RuleError> {
        if validate {
            parse_pattern(pattern, case_insensitive).map_err(|e| RuleError::Regex {
                id: id.to_string(),
                message: e,
            })?;
        }
        Ok(LazyRegex {
            id: id.to_string(),
            pattern: pattern.to_string(),
            case_insensitive,
            cell: OnceLock::new(),
        })
    }

    /// The compiled regex (None only if compilation failed, which the
    /// built-in rules' tests rule out and `from_toml` reports up front).
    pub(crate) fn get(&self) -> Option<&regex_automata::meta::Regex> {
        self.cell
            .get_or_init(|| build_regex(&self.id, &self.pattern, self.case_insensitive).ok())
            .as_ref()
    }

    pub(crate) fn is_match(&self, hay: &[u8]) -> bool {
        self.get().is_some_and(|r| r.is_match(hay))
    }

    pub(crate) fn force(&self) -> Result<(), RuleError> {
        if self.get().is_some() {
            return Ok(());
        }
        build_regex(&self.id, &self.pattern, self.case_insensitive).map(|_| ())
    }
}

pub(crate) struct Compiled {
    pub(crate) rules: Vec<Rule>,
    pub(crate) templates: Option<LazyRegex>,
    pub(crate) placeholders: Option<LazyRegex>,
    /// The whole built-in rule list, in order ([`compile_builtin`]): its
    /// keyword tables and automaton were built by `build.rs`.
    pub(crate) builtin: bool,
}

/// Parses `pattern` with the engine's flags (bytes, Unicode off).
fn parse_pattern(pattern: &str, case_insensitive: bool) -> Result<regex_syntax::hir::Hir, String> {
    regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .case_insensitive(case_insensitive)
        .build()
        .parse(pattern)
        .map_err(|e| e.to_string())
}

/// An allow-list regex: tried on a candidate secret only (a few dozen
/// bytes), so it is built without a prefilter (building one was half the
/// cost of compiling it, and a secret is too short for it to pay off).
fn build_regex(
    id: &str,
    pattern: &str,
    case_insensitive: bool,
) -> Result<regex_automata::meta::Regex, RuleError> {
    use regex_automata::{meta, util::syntax};
    meta::Regex::builder()
        .syntax(
            syntax::Config::new()
                .unicode(false)
                .utf8(false)
                .case_insensitive(case_insensitive),
        )
        .configure(
            meta::Config::new()
                .auto_prefilter(false)
                .which_captures(regex_automata::nfa::thompson::WhichCaptures::Implicit)
                .nfa_size_limit(Some(64 * 1024 * 1024))
                .hybrid_cache_capacity(16 * 1024 * 1024),
        )
        .build(pattern)
        .map_err(|e| RuleError::Regex {
            id: id.to_string(),
            message: e.to_string(),
        })
}

fn expand_macros(pattern: &str, macros: &BTreeMap<String, String>) -> String {
    if !pattern.contains('%') {
        return pattern.to_string();
    }
    let mut out = pattern.to_string();
    for (name, value) in macros {
        let token = format!("%{name}%");
        if out.contains(&token) {
            out = out.replace(&token, value);
        }
    }
    out
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-')
        && !id.ends_with('-')
        && !id.contains("--")
}

/// Parses and validates a rule file. With `eager`, every regex is compiled
/// now (errors reported); otherwise on first use.
pub(crate) fn compile(text: &str, eager: bool) -> Result<Compiled, RuleError> {
    let file: RuleFile = toml::from_str(text).map_err(|e| RuleError::Parse(e.to_string()))?;
    compile_file(file, eager)
}

fn compile_file(file: RuleFile, eager: bool) -> Result<Compiled, RuleError> {
    if let Some(v) = file.version
        && v != 1
    {
        return Err(RuleError::Parse(format!("unsupported version {v}")));
    }
    let templates = LazyRegex::any_of("allow.templates", &file.allow.templates, true, eager)?;
    let placeholders =
        LazyRegex::any_of("allow.placeholders", &file.allow.placeholders, true, eager)?;
    let mut seen = HashSet::new();
    let mut rules = Vec::with_capacity(file.rules.len());
    for spec in file.rules {
        if !valid_id(&spec.id) {
            return Err(RuleError::Invalid {
                id: spec.id,
                message: "id must be kebab-case (a-z, 0-9, -)".into(),
            });
        }
        if !seen.insert(spec.id.clone()) {
            return Err(RuleError::Duplicate(spec.id));
        }
        let keywords: Vec<String> = spec
            .keywords
            .iter()
            .map(|k| k.to_ascii_lowercase())
            .filter(|k| !k.is_empty())
            .collect();
        if keywords.is_empty() {
            return Err(RuleError::Invalid {
                id: spec.id,
                message: "at least one non-empty keyword is required".into(),
            });
        }
        let pattern = expand_macros(&spec.pattern, &file.macros);
        let regex = LazyMeta {
            id: spec.id.clone(),
            pattern: pattern.clone(),
            cell: OnceLock::new(),
        };
        // A user's file: one parse now validates the syntax and gives the
        // pattern's shape. The built-in file: on first use (see `Rule::shape`).
        let shape = OnceLock::new();
        if eager {
            let hir = parse_pattern(&pattern, false).map_err(|e| RuleError::Regex {
                id: spec.id.clone(),
                message: e,
            })?;
            let s = Shape::of(&hir, &keywords);
            if let Some(g) = spec.secret_group
                && (g == 0 || g >= s.groups)
            {
                return Err(RuleError::Invalid {
                    id: spec.id,
                    message: format!("secret_group {g} does not exist"),
                });
            }
            let _ = shape.set(s);
        } else if spec.secret_group == Some(0) {
            return Err(RuleError::Invalid {
                id: spec.id,
                message: "secret_group 0 does not exist".into(),
            });
        }
        let allow = LazyRegex::any_of(&spec.id, &spec.allow, true, eager)?;
        rules.push(Rule {
            id: spec.id,
            description: spec.description,
            pattern,
            keywords,
            regex,
            shape,
            secret_group: spec.secret_group,
            entropy: spec.entropy,
            allow,
            specificity: spec.specificity,
            placeholders: spec.placeholders,
            code_aware: spec.code_aware,
            require_digit: spec.require_digit,
            max_len: spec.max_len.unwrap_or(DEFAULT_MAX_LEN).clamp(256, 1 << 20),
            pantheon_replacement: spec.pantheon_replacement,
            examples: spec.examples,
            counter_examples: spec.counter_examples,
            requires: None,
        });
    }
    if eager {
        for r in &rules {
            r.compile()?;
        }
        templates.iter().try_for_each(LazyRegex::force)?;
        placeholders.iter().try_for_each(LazyRegex::force)?;
    }
    Ok(Compiled {
        rules,
        templates,
        placeholders,
        builtin: false,
    })
}

/// Whether every match of `hir` provably starts with one of `keywords`
/// (ASCII case-insensitively). Conservative: `false` when unsure.
fn starts_with_keyword(hir: &regex_syntax::hir::Hir, keywords: &[String]) -> bool {
    let (set, _) = prefixes(hir);
    !set.is_empty()
        && set.iter().all(|p| {
            keywords
                .iter()
                .any(|k| p.len() >= k.len() && p.starts_with(k.as_bytes()))
        })
}

const PREFIX_LIMIT: usize = 4096;

/// Lower-cased strings one of which starts every match, and whether the set
/// is exact (every match of `h` is exactly one of them).
fn prefixes(h: &regex_syntax::hir::Hir) -> (Vec<Vec<u8>>, bool) {
    use regex_syntax::hir::{Class, HirKind};
    let unknown = || (vec![Vec::new()], false);
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => (vec![Vec::new()], true),
        HirKind::Literal(l) => (vec![l.0.to_ascii_lowercase()], true),
        HirKind::Class(Class::Bytes(c)) => {
            let mut bytes: Vec<u8> = Vec::new();
            for r in c.ranges() {
                if usize::from(r.end() - r.start()) > 2 {
                    return unknown();
                }
                for b in r.start()..=r.end() {
                    bytes.push(b.to_ascii_lowercase());
                }
            }
            bytes.sort_unstable();
            bytes.dedup();
            if bytes.len() > 4 {
                return unknown();
            }
            (bytes.into_iter().map(|b| vec![b]).collect(), true)
        }
        HirKind::Class(Class::Unicode(_)) => unknown(),
        HirKind::Capture(c) => prefixes(&c.sub),
        HirKind::Repetition(r) => {
            if r.min == 0 {
                return unknown();
            }
            let (set, exact) = prefixes(&r.sub);
            (set, exact && r.min == 1 && r.max == Some(1))
        }
        HirKind::Alternation(subs) => {
            let mut all = Vec::new();
            let mut exact = true;
            for s in subs {
                let (set, e) = prefixes(s);
                exact &= e;
                all.extend(set);
                if all.len() > PREFIX_LIMIT {
                    return unknown();
                }
            }
            all.sort();
            all.dedup();
            (all, exact)
        }
        HirKind::Concat(subs) => {
            let mut acc: Vec<Vec<u8>> = vec![Vec::new()];
            for s in subs {
                let (set, exact) = prefixes(s);
                if acc.len().saturating_mul(set.len()) > PREFIX_LIMIT {
                    return (acc, false);
                }
                let mut next = Vec::with_capacity(acc.len() * set.len());
                for a in &acc {
                    for b in &set {
                        let mut v = a.clone();
                        v.extend_from_slice(b);
                        next.push(v);
                    }
                }
                next.sort();
                next.dedup();
                acc = next;
                if !exact {
                    return (acc, false);
                }
            }
            (acc, true)
        }
    }
}

/// Whether a pattern may match a `\n` (then it is scanned in a bounded
/// multi-line window instead of the keyword's line).
fn can_match_newline(hir: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::{Class, Hir, HirKind};
    fn walk(h: &Hir) -> bool {
        match h.kind() {
            HirKind::Empty | HirKind::Look(_) => false,
            HirKind::Literal(l) => l.0.contains(&b'\n'),
            HirKind::Class(Class::Bytes(c)) => c.ranges().iter().any(|r| {
                let (s, e) = (r.start(), r.end());
                s <= b'\n' && b'\n' <= e
            }),
            HirKind::Class(Class::Unicode(c)) => c.ranges().iter().any(|r| {
                let (s, e) = (r.start(), r.end());
                s <= '\n' && '\n' <= e
            }),
            HirKind::Repetition(r) => walk(&r.sub),
            HirKind::Capture(c) => walk(&c.sub),
            HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(walk),
        }
    }
    walk(hir)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    /// build.rs gave every built-in rule the byte `required_byte` finds in
    /// its pattern (parsed as the runtime parses it), and that byte is in
    /// every example of the rule.
    #[test]
    fn built_in_required_bytes_are_the_patterns() {
        let mut with = 0;
        for s in super::builtin::RULES {
            let hir = super::parse_pattern(s.pattern, false).unwrap_or_else(|e| panic!("{e}"));
            let kw: Vec<String> = s.keywords.iter().map(|k| k.to_string()).collect();
            assert_eq!(
                s.requires,
                crate::required::required_byte(&hir, &kw),
                "{}",
                s.id
            );
            if let Some(b) = s.requires {
                with += 1;
                for e in s.examples.iter().filter(|e| !e.contains("{{")) {
                    assert!(e.as_bytes().contains(&b), "{}: {e}", s.id);
                }
            }
        }
        assert!(with >= 20, "{with}");
        let by_id = |id: &str| super::builtin::RULES.iter().find(|s| s.id == id);
        assert_eq!(
            by_id("url-credentials").and_then(|s| s.requires),
            Some(b'@')
        );
        assert_eq!(
            by_id("database-url-password").and_then(|s| s.requires),
            Some(b'@')
        );
    }

    #[test]
    fn a_required_byte_is_a_literal_every_match_holds() {
        let req = |p: &str, kw: &[&str]| {
            let hir = super::parse_pattern(p, false).unwrap_or_else(|e| panic!("{e}"));
            let kw: Vec<String> = kw.iter().map(|k| k.to_string()).collect();
            crate::required::required_byte(&hir, &kw)
        };
        assert_eq!(req("a@b", &[]), Some(b'@'));
        assert_eq!(req("x://[a-z]+:([^@]+)@h", &["://"]), Some(b'@'));
        assert_eq!(req("a(@)b", &[]), Some(b'@'));
        // not in every match: alternation, repetition, optional group
        assert_eq!(req("(?:x|@)y", &[]), None);
        assert_eq!(req("a@?b", &[]), None);
        assert_eq!(req("a(?:@b)?c", &[]), None);
        assert_eq!(req("(?:a@b|c@d)", &[]), None);
        // letters, digits and the keyword's own bytes are not chosen
        assert_eq!(req("abc123", &[]), None);
        assert_eq!(req("key=([a-z]+)", &["key="]), None);
        assert_eq!(req("(?i)key=([a-z]+);", &["key="]), Some(b';'));
    }

    /// The statics `build.rs` wrote are the rule file: every rule, field by
    /// field, and both allow-lists, as the runtime loader reads the TOML.
    #[test]
    fn the_built_in_statics_are_the_rule_file() {
        let from_toml = compile(crate::DEFAULT_RULES_TOML, false).unwrap();
        let built = compile_builtin().unwrap();
        assert_eq!(from_toml.rules.len(), built.rules.len());
        assert!(built.rules.len() > 200);
        let pat = |r: &Option<LazyRegex>| r.as_ref().map(|r| r.pattern.clone());
        assert_eq!(pat(&from_toml.templates), pat(&built.templates));
        assert_eq!(pat(&from_toml.placeholders), pat(&built.placeholders));
        assert!(pat(&built.templates).is_some());
        for (a, b) in from_toml.rules.iter().zip(&built.rules) {
            assert_eq!(a.id, b.id);
            assert_eq!(a.description, b.description, "{}", a.id);
            assert_eq!(a.pattern, b.pattern, "{}", a.id);
            assert!(!b.pattern.contains("%VAL"), "{}: macro left", b.id);
            assert_eq!(a.keywords, b.keywords, "{}", a.id);
            assert_eq!(a.secret_group, b.secret_group, "{}", a.id);
            assert_eq!(
                a.entropy.map(f64::to_bits),
                b.entropy.map(f64::to_bits),
                "{}",
                a.id
            );
            assert_eq!(pat(&a.allow), pat(&b.allow), "{}", a.id);
            assert_eq!(a.specificity, b.specificity, "{}", a.id);
            assert_eq!(a.placeholders, b.placeholders, "{}", a.id);
            assert_eq!(a.code_aware, b.code_aware, "{}", a.id);
            assert_eq!(a.require_digit, b.require_digit, "{}", a.id);
            assert_eq!(a.max_len, b.max_len, "{}", a.id);
            assert_eq!(a.pantheon_replacement, b.pantheon_replacement, "{}", a.id);
            assert_eq!(a.examples, b.examples, "{}", a.id);
            assert_eq!(a.counter_examples, b.counter_examples, "{}", a.id);
            // and every other field (the lazy regex, the unparsed shape)
            // but `requires`, which only build.rs computes
            assert!(a.requires.is_none() || b.requires.is_none(), "{}", a.id);
            let cut = |r: &Rule| {
                let d = format!("{r:?}");
                d.find(", requires: ")
                    .map_or(d.clone(), |i| d[..i].to_string())
            };
            assert_eq!(cut(a), cut(b));
        }
        assert_eq!(
            format!("{:?}", (&from_toml.templates, &from_toml.placeholders)),
            format!("{:?}", (&built.templates, &built.placeholders))
        );
    }
}
