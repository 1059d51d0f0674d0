//! mnemo's configuration: every table of the seed, with the seed's values as
//! built-in defaults.
//!
//! The defaults are the TOML document [`DEFAULT_CONFIG_TOML`], which `mnemo
//! init` writes out whole. A user's `mnemo.toml` is merged over it key by key
//! (tables merge, everything else replaces), then validated; a bad value is
//! rejected with its key path and the reason.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use crate::hundredths::Hundredths;

/// The built-in configuration, as written by `mnemo init`.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("default.toml");

/// How keywords are matched against summary text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Matching {
    /// Case-insensitive, anchored at the start of a word (mnemo's default).
    WordStart,
    /// Case-insensitive plain substring (Pantheon's script).
    Substring,
}

/// One row of the keyword map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keyword {
    /// The keyword as displayed (`JWT`); matched case-insensitively.
    pub keyword: String,
    /// Impact dimension.
    pub impact: Hundredths,
    /// Risk dimension.
    pub risk: Hundredths,
    /// Novelty dimension.
    pub novelty: Hundredths,
    /// Category, for explanations.
    #[serde(default)]
    pub category: String,
}

/// Dimension weights; they add up to exactly 1.00.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Weights {
    /// Weight of impact.
    pub impact: Hundredths,
    /// Weight of risk.
    pub risk: Hundredths,
    /// Weight of novelty.
    pub novelty: Hundredths,
    /// Weight of blockers.
    pub blockers: Hundredths,
    /// Weight of downstream relevance.
    pub downstream: Hundredths,
}

/// Lower thresholds of the bands (LOW is everything below `medium`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bands {
    /// CRITICAL at or above.
    pub critical: Hundredths,
    /// HIGH at or above.
    pub high: Hundredths,
    /// MEDIUM at or above.
    pub medium: Hundredths,
}

/// The blockers dimension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockerRules {
    /// Value when the entry unblocks others.
    pub unblocks: Hundredths,
    /// Value when the entry was blocked, has blockers or depends on something.
    pub blocked: Hundredths,
    /// Phrases that say the entry unblocks others.
    pub unblocks_phrases: Vec<String>,
    /// Phrases that say the entry was blocked or depends on something.
    pub blocked_phrases: Vec<String>,
}

/// Novelty floor by number of files changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileNovelty {
    /// At least this many files…
    pub min_files: u32,
    /// …raise novelty to at least this.
    pub novelty: Hundredths,
}

/// The scoring engine's tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoringConfig {
    /// Keyword matching mode.
    pub matching: Matching,
    /// Downstream relevance for unknown pairs.
    pub default_relevance: Hundredths,
    /// Dimension weights.
    pub weights: Weights,
    /// Band thresholds.
    pub bands: Bands,
    /// Blockers dimension rules.
    pub blockers: BlockerRules,
    /// Novelty floors by file count.
    pub file_novelty: Vec<FileNovelty>,
    /// The keyword map, in output order.
    pub keywords: Vec<Keyword>,
}

/// The agent roster and the downstream relevance table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsConfig {
    /// Agents in display spelling.
    pub roster: Vec<String>,
    /// relevance[from][to], keys in lower case after loading.
    pub relevance: BTreeMap<String, BTreeMap<String, Hundredths>>,
}

/// A field of a compressed entry that a mask can keep.
pub const MASK_FIELDS: &[&str] = &[
    "date",
    "agent",
    "files",
    "summary",
    "summary_semantic",
    "tests",
    "status",
    "coverage",
    "verdict",
    "critical_issues",
    "blockers",
];

/// The kinds of facts a semantic summary can be asked to include.
pub const VARIANT_FACTS: &[&str] = &[
    "all",
    "endpoints",
    "payload_shape",
    "status_codes",
    "tables",
    "columns",
    "relationships",
    "foreign_keys",
    "migration_version",
    "data_types",
    "fields",
    "defaults",
    "components",
    "data_requirements",
    "event_handlers",
    "ui_state",
    "verdict",
    "critical_issues",
    "coverage",
    "summary",
    "status",
    "pipeline_io",
    "model_endpoints",
    "deploy_target",
    "env_vars",
    "config_changes",
];

/// A field mask for a (from, to) pair; `*` is a wildcard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mask {
    /// Sending agent or `*`.
    pub from: String,
    /// Receiving agent or `*`.
    pub to: String,
    /// Fields kept, optionally `name:N` to keep the first N characters.
    pub fields: Vec<String>,
}

/// What a semantic summary includes for a (from, to) pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Sending agent or `*`.
    pub from: String,
    /// Receiving agent or `*`.
    pub to: String,
    /// Fact kinds, from [`VARIANT_FACTS`].
    pub include: Vec<String>,
}

/// Line budgets of the `## Completed Phases` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Hard cap of the section, in lines.
    pub total_lines: u32,
    /// Phases of a feature when unknown.
    pub default_phases: u32,
    /// Floor of a phase's budget.
    pub min_phase_lines: u32,
    /// Share of unused budget carried to the next phase.
    pub carryover_percent: u32,
    /// More CRITICAL entries than this per phase are flagged.
    pub max_critical_per_phase: u32,
    /// Largest summary input a bank command accepts, in bytes (a larger one
    /// is refused before it is read whole).
    #[serde(default = "default_max_summary_bytes")]
    pub max_summary_bytes: u64,
}

/// 1 MiB: a subtask summary is a few KiB; anything near this is raw output.
fn default_max_summary_bytes() -> u64 {
    1 << 20
}

/// Where the bank and the learnings live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathsConfig {
    /// Memory bank root.
    pub bank: String,
    /// Learnings root (`<learnings>/<feature>/learnings.md`).
    pub learnings: String,
}

/// The startup posture of `gate --guardian-url` (ACS §4.1): what the gate
/// does when the remote Guardian's `handshake/hello` gets no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StartupPosture {
    /// Compact nothing (mnemo's default: fail closed).
    #[default]
    Refuse,
    /// Compact unguarded, with a warning and an audit record.
    Proceed,
}

/// `on_decision_failure` of `gate --guardian-url` (ACS §6.4): what the
/// gate does when a step after the hello gets no usable decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FailurePosture {
    /// Compact nothing (mnemo's default: fail closed).
    #[default]
    Deny,
    /// Compact without a decision, with a warning and an audit record,
    /// unless the Guardian announced `deny` in its ServerHello.
    Proceed,
}

/// `[guardian_client]`: the postures of the gate's remote Guardian client
/// (both fail closed by default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct GuardianClientConfig {
    /// The startup posture.
    #[serde(default)]
    pub startup_posture: StartupPosture,
    /// The decision-failure posture.
    #[serde(default)]
    pub on_decision_failure: FailurePosture,
    /// Where the client exports its ACS trace events (OTLP/HTTP JSON,
    /// `http://host:port`, path `/v1/traces` when none is given); best
    /// effort, never changes a decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_endpoint: Option<String>,
    /// The label (`key_id`) of the HMAC secret the remote Guardian knows:
    /// with it every request is signed under the per-session key (ACS §10,
    /// HKDF-SHA256 of the secret, info = the session id) and every response
    /// must verify. Needs `hmac_key_env`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmac_key_id: Option<String>,
    /// The environment variable holding that secret (never the secret
    /// itself in the file). Needs `hmac_key_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmac_key_env: Option<String>,
    /// How the variable's text encodes the secret: `utf8` (default),
    /// `base64` or `hex`, as the Guardian's own `hmac_keys`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmac_key_encoding: Option<KeyEncoding>,
}

/// How an environment variable's text encodes an HMAC secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyEncoding {
    /// The text's UTF-8 bytes.
    Utf8,
    /// Standard or URL-safe base64.
    Base64,
    /// Hexadecimal.
    Hex,
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Scoring tables.
    pub scoring: ScoringConfig,
    /// Roster and relevance.
    pub agents: AgentsConfig,
    /// Field masks.
    pub masks: Vec<Mask>,
    /// Summary variants.
    pub variants: Vec<Variant>,
    /// Budgets.
    pub budget: BudgetConfig,
    /// Paths.
    pub paths: PathsConfig,
    /// The remote Guardian client's postures.
    #[serde(default)]
    pub guardian_client: GuardianClientConfig,
}

/// A configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The file (or `<built-in>`).
    pub source_name: String,
    /// Dotted key path (`scoring.weights.impact`), when known.
    pub key_path: Option<String>,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.source_name)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key_path {
            write!(f, ": `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Normalises an agent name for lookups: trimmed, `@` dropped, lower case.
pub fn agent_key(name: &str) -> String {
    name.trim().trim_start_matches('@').trim().to_lowercase()
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

/// Merges `over` into `base`: tables merge recursively, other values replace.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Finds the line where a dotted key path's last key is written, best effort.
fn find_key_line(text: &str, key_path: &str) -> Option<usize> {
    let last = key_path
        .rsplit('.')
        .next()?
        .split('[')
        .next()
        .filter(|s| !s.is_empty())?;
    text.lines().enumerate().find_map(|(i, l)| {
        let t = l.trim_start();
        let is_key = t.starts_with(last) && t[last.len()..].trim_start().starts_with('=');
        let is_table = t.starts_with('[') && t.trim_end().trim_end_matches(']').ends_with(last);
        (is_key || is_table).then_some(i + 1)
    })
}

impl Config {
    /// Loads a user configuration merged over the built-in defaults.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<Config, ConfigError> {
        let err = |key_path: Option<String>, line: Option<usize>, message: String| ConfigError {
            source_name: source_name.to_string(),
            key_path,
            line,
            message,
        };
        if text.trim().is_empty() {
            // No user file: the built-in document straight into the types.
            let config: Config = toml::from_str(DEFAULT_CONFIG_TOML).map_err(|e| {
                err(
                    None,
                    None,
                    format!("built-in configuration: {}", e.message()),
                )
            })?;
            return config
                .validated()
                .map_err(|(path, message)| err(Some(path), None, message));
        }
        let mut base: toml::Table = DEFAULT_CONFIG_TOML.parse().map_err(|e: toml::de::Error| {
            err(
                None,
                None,
                format!("built-in configuration: {}", e.message()),
            )
        })?;
        let user: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e.span().map(|s| line_of(text, s.start));
            err(None, line, e.message().to_string())
        })?;
        // A team with its own roster does not inherit Pantheon's agent-keyed
        // tables: relevance rows, pair masks and variants start empty (the
        // `* -> *` mask stays) unless the file gives its own.
        let own_roster = user
            .get("agents")
            .and_then(toml::Value::as_table)
            .is_some_and(|a| a.contains_key("roster"));
        if own_roster {
            if let Some(toml::Value::Table(agents)) = base.get_mut("agents") {
                agents.insert("relevance".into(), toml::Value::Table(toml::Table::new()));
            }
            if let Some(toml::Value::Array(masks)) = base.get_mut("masks") {
                masks.retain(|m| {
                    m.get("from").and_then(toml::Value::as_str) == Some("*")
                        && m.get("to").and_then(toml::Value::as_str) == Some("*")
                });
            }
            base.insert("variants".into(), toml::Value::Array(Vec::new()));
        }
        // The relevance table is data: a file that gives one replaces it whole.
        if let Some(rel) = user
            .get("agents")
            .and_then(toml::Value::as_table)
            .and_then(|a| a.get("relevance"))
            .cloned()
            && let Some(toml::Value::Table(agents)) = base.get_mut("agents")
        {
            agents.insert("relevance".into(), rel);
        }
        merge(&mut base, user);
        let config: Config =
            serde_path_to_error::deserialize(toml::Value::Table(base)).map_err(|e| {
                let path = e.path().to_string();
                let message = e.inner().message().to_string();
                let line = find_key_line(text, &path);
                err(Some(path), line, message)
            })?;
        config.validated().map_err(|(path, message)| {
            let line = find_key_line(text, &path);
            err(Some(path), line, message)
        })
    }

    /// Checks the rules that types cannot express, and normalises agent names.
    fn validated(mut self) -> Result<Config, (String, String)> {
        let w = self.scoring.weights;
        let sum: u32 = [w.impact, w.risk, w.novelty, w.blockers, w.downstream]
            .iter()
            .map(|h| u32::from(h.get()))
            .sum();
        if sum != 100 {
            return Err((
                "scoring.weights".into(),
                format!(
                    "the weights must add up to exactly 1.00, they add up to {}",
                    Hundredths::format_sum(sum)
                ),
            ));
        }
        let b = self.scoring.bands;
        if !(b.critical > b.high && b.high > b.medium) {
            return Err((
                "scoring.bands".into(),
                "thresholds must decrease strictly: critical > high > medium".into(),
            ));
        }
        if self.scoring.keywords.is_empty() {
            return Err((
                "scoring.keywords".into(),
                "at least one keyword is needed".into(),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, k) in self.scoring.keywords.iter().enumerate() {
            let trimmed = k.keyword.trim();
            if trimmed.is_empty() {
                return Err((format!("scoring.keywords[{i}].keyword"), "is empty".into()));
            }
            if !seen.insert(trimmed.to_lowercase()) {
                return Err((
                    format!("scoring.keywords[{i}].keyword"),
                    format!("{trimmed:?} is listed twice"),
                ));
            }
        }
        for (field, phrases) in [
            ("unblocks_phrases", &self.scoring.blockers.unblocks_phrases),
            ("blocked_phrases", &self.scoring.blockers.blocked_phrases),
        ] {
            if let Some(i) = phrases.iter().position(|p| p.trim().is_empty()) {
                return Err((format!("scoring.blockers.{field}[{i}]"), "is empty".into()));
            }
        }
        let mut last_files = 0;
        for (i, f) in self.scoring.file_novelty.iter().enumerate() {
            if f.min_files <= last_files && i > 0 {
                return Err((
                    format!("scoring.file_novelty[{i}].min_files"),
                    "must increase from one row to the next".into(),
                ));
            }
            last_files = f.min_files;
        }
        // Agents.
        if self.agents.roster.is_empty() {
            return Err((
                "agents.roster".into(),
                "at least one agent is needed".into(),
            ));
        }
        let mut roster_keys = std::collections::HashSet::new();
        for (i, name) in self.agents.roster.iter().enumerate() {
            let key = agent_key(name);
            if key.is_empty() || key == "*" || key.contains(char::is_whitespace) {
                return Err((
                    format!("agents.roster[{i}]"),
                    format!("{name:?} is not a valid agent name (one word, not `*`)"),
                ));
            }
            if !roster_keys.insert(key) {
                return Err((
                    format!("agents.roster[{i}]"),
                    format!("{name:?} is listed twice"),
                ));
            }
        }
        let mut relevance = BTreeMap::new();
        for (from, row) in std::mem::take(&mut self.agents.relevance) {
            let from_key = agent_key(&from);
            if !roster_keys.contains(&from_key) {
                return Err((
                    format!("agents.relevance.{from}"),
                    format!("{from:?} is not in agents.roster"),
                ));
            }
            let mut out_row = BTreeMap::new();
            for (to, v) in row {
                let to_key = agent_key(&to);
                if !roster_keys.contains(&to_key) {
                    return Err((
                        format!("agents.relevance.{from}.{to}"),
                        format!("{to:?} is not in agents.roster"),
                    ));
                }
                out_row.insert(to_key, v);
            }
            relevance.insert(from_key, out_row);
        }
        self.agents.relevance = relevance;
        let check_agent = |path: String, name: &str| -> Result<(), (String, String)> {
            let key = agent_key(name);
            if key == "*" || roster_keys.contains(&key) {
                Ok(())
            } else {
                Err((
                    path,
                    format!("{name:?} is neither `*` nor an agent of agents.roster"),
                ))
            }
        };
        for (i, m) in self.masks.iter_mut().enumerate() {
            check_agent(format!("masks[{i}].from"), &m.from)?;
            check_agent(format!("masks[{i}].to"), &m.to)?;
            m.from = agent_key(&m.from);
            m.to = agent_key(&m.to);
            for (j, f) in m.fields.iter().enumerate() {
                let (name, limit) = match f.split_once(':') {
                    Some((n, l)) => (n, Some(l)),
                    None => (f.as_str(), None),
                };
                if !MASK_FIELDS.contains(&name) {
                    return Err((
                        format!("masks[{i}].fields[{j}]"),
                        format!("unknown field {name:?}; known: {}", MASK_FIELDS.join(", ")),
                    ));
                }
                if let Some(l) = limit
                    && l.parse::<usize>().map_or(true, |n| n == 0)
                {
                    return Err((
                        format!("masks[{i}].fields[{j}]"),
                        format!("{f:?}: the limit after `:` must be a positive number"),
                    ));
                }
            }
        }
        if !self.masks.iter().any(|m| m.from == "*" && m.to == "*") {
            return Err((
                "masks".into(),
                "a default mask (from = \"*\", to = \"*\") is needed".into(),
            ));
        }
        for (i, v) in self.variants.iter_mut().enumerate() {
            check_agent(format!("variants[{i}].from"), &v.from)?;
            check_agent(format!("variants[{i}].to"), &v.to)?;
            v.from = agent_key(&v.from);
            v.to = agent_key(&v.to);
            for (j, f) in v.include.iter().enumerate() {
                if !VARIANT_FACTS.contains(&f.as_str()) {
                    return Err((
                        format!("variants[{i}].include[{j}]"),
                        format!(
                            "unknown fact kind {f:?}; known: {}",
                            VARIANT_FACTS.join(", ")
                        ),
                    ));
                }
            }
        }
        let bud = self.budget;
        if bud.total_lines == 0 {
            return Err(("budget.total_lines".into(), "must be at least 1".into()));
        }
        if bud.default_phases == 0 {
            return Err(("budget.default_phases".into(), "must be at least 1".into()));
        }
        if bud.carryover_percent > 100 {
            return Err((
                "budget.carryover_percent".into(),
                "must be between 0 and 100".into(),
            ));
        }
        if self.paths.bank.trim().is_empty() {
            return Err(("paths.bank".into(), "is empty".into()));
        }
        if self.paths.learnings.trim().is_empty() {
            return Err(("paths.learnings".into(), "is empty".into()));
        }
        Ok(self)
    }

    /// Downstream relevance of a pair, `None` when the table has no entry.
    pub fn relevance(&self, from: &str, to: &str) -> Option<Hundredths> {
        self.agents
            .relevance
            .get(&agent_key(from))?
            .get(&agent_key(to))
            .copied()
    }

    /// The display spelling of an agent (`Hermes`), or the name capitalised.
    pub fn display_agent(&self, name: &str) -> String {
        let key = agent_key(name);
        if let Some(d) = self.agents.roster.iter().find(|r| agent_key(r) == key) {
            return d.trim().to_string();
        }
        let mut chars = key.chars();
        match chars.next() {
            Some(c) => c.to_uppercase().chain(chars).collect(),
            None => String::new(),
        }
    }

    /// The mask for a pair, with SPEC's precedence: exact pair, `* → to`,
    /// `from → *`, then `* → *`.
    pub fn mask_for(&self, from: &str, to: &str) -> Option<&Mask> {
        pick_pair(&self.masks, from, to, |m| (&m.from, &m.to))
    }

    /// The summary variant for a pair, same precedence as masks.
    pub fn variant_for(&self, from: &str, to: &str) -> Option<&Variant> {
        pick_pair(&self.variants, from, to, |v| (&v.from, &v.to))
    }
}

fn pick_pair<'a, T>(
    items: &'a [T],
    from: &str,
    to: &str,
    key: impl Fn(&T) -> (&String, &String),
) -> Option<&'a T> {
    let (f, t) = (agent_key(from), agent_key(to));
    let find = |a: &str, b: &str| items.iter().find(|i| key(i).0 == a && key(i).1 == b);
    find(&f, &t)
        .or_else(|| find("*", &t))
        .or_else(|| find(&f, "*"))
        .or_else(|| find("*", "*"))
}

impl<'de> Deserialize<'de> for Hundredths {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Hundredths;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number from 0 to 1 in hundredths (for example 0.75)")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Hundredths, E> {
                Hundredths::from_f64(v).ok_or_else(|| {
                    E::custom(format!(
                        "{v} is not a number from 0 to 1 in hundredths (for example 0.75)"
                    ))
                })
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Hundredths, E> {
                match v {
                    0 => Ok(Hundredths::ZERO),
                    1 => Ok(Hundredths::ONE),
                    _ => Err(E::custom(format!("{v} is not a number from 0 to 1"))),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Hundredths, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_loads_with_seed_values() {
        let c = Config::default();
        assert_eq!(c.scoring.keywords.len(), 35);
        assert_eq!(c.scoring.weights.impact.get(), 30);
        assert_eq!(
            c.relevance("Hermes", " APHRODITE "),
            Some(Hundredths::new(90).unwrap())
        );
        assert_eq!(c.relevance("apollo", "hermes"), None);
        assert_eq!(c.budget.default_phases, 8);
        assert_eq!(c.display_agent("themis"), "Themis");
        assert_eq!(c.display_agent("apollo"), "Apollo");
    }

    #[test]
    fn user_file_overrides_one_key() {
        let c = Config::from_toml_str("[budget]\ndefault_phases = 4\n", "mnemo.toml").unwrap();
        assert_eq!(c.budget.default_phases, 4);
        assert_eq!(c.budget.total_lines, 100);
    }

    #[test]
    fn bad_value_names_key_path_and_line() {
        let e =
            Config::from_toml_str("[scoring.weights]\nimpact = 0.305\n", "mnemo.toml").unwrap_err();
        assert_eq!(e.key_path.as_deref(), Some("scoring.weights.impact"));
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("hundredths"), "{e}");
    }

    #[test]
    fn weights_must_sum_to_one() {
        let e =
            Config::from_toml_str("[scoring.weights]\nimpact = 0.40\n", "mnemo.toml").unwrap_err();
        assert_eq!(e.key_path.as_deref(), Some("scoring.weights"));
        assert!(e.message.contains("1.10"), "{e}");
    }

    #[test]
    fn unknown_key_rejected() {
        let e = Config::from_toml_str("[budget]\ntotal_line = 3\n", "mnemo.toml").unwrap_err();
        assert!(e.message.contains("total_line"), "{e}");
    }

    #[test]
    fn unknown_agent_in_mask_rejected() {
        let e = Config::from_toml_str(
            "[[masks]]\nfrom = \"*\"\nto = \"*\"\nfields = [\"date\"]\n[[masks]]\nfrom = \"zeus\"\nto = \"*\"\nfields = [\"date\"]\n",
            "mnemo.toml",
        )
        .unwrap_err();
        assert_eq!(e.key_path.as_deref(), Some("masks[1].from"));
    }

    #[test]
    fn mask_precedence() {
        let c = Config::default();
        // exact pair absent → `* → themis` wins over `hermes → *` and default.
        let m = c.mask_for("hermes", "themis").unwrap();
        assert!(m.fields.iter().any(|f| f == "coverage"));
        let m = c.mask_for("themis", "mnemosyne").unwrap();
        assert_eq!(m.to, "mnemosyne", "the receiver's need wins");
        let m = c.mask_for("themis", "hermes").unwrap();
        assert_eq!(m.from, "themis");
        let m = c.mask_for("hermes", "aphrodite").unwrap();
        assert_eq!((m.from.as_str(), m.to.as_str()), ("*", "*"));
    }

    #[test]
    fn syntax_error_has_line() {
        let e = Config::from_toml_str("[budget]\ntotal_lines = = 3\n", "mnemo.toml").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
    }
}
