//! The shape of a rule file (`rules/default.toml` and a user's own), as
//! serde reads it. One definition for two readers: the runtime loader
//! (`rules.rs`) and the build script (`build.rs`, through `#[path]`), which
//! turns the built-in file into statics; so the two cannot drift apart.

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuleFile {
    #[serde(default)]
    pub(crate) version: Option<u32>,
    #[serde(default)]
    pub(crate) macros: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) allow: AllowSection,
    #[serde(default, rename = "rule")]
    pub(crate) rules: Vec<RuleSpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AllowSection {
    /// Shapes that are never a secret for any rule (variable references).
    #[serde(default)]
    pub(crate) templates: Vec<String>,
    /// Placeholder shapes, applied to rules with `placeholders = true`.
    #[serde(default)]
    pub(crate) placeholders: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuleSpec {
    pub(crate) id: String,
    pub(crate) description: String,
    pub(crate) pattern: String,
    pub(crate) keywords: Vec<String>,
    #[serde(default)]
    pub(crate) secret_group: Option<usize>,
    #[serde(default)]
    pub(crate) entropy: Option<f64>,
    #[serde(default)]
    pub(crate) allow: Vec<String>,
    #[serde(default = "default_specificity")]
    pub(crate) specificity: u32,
    #[serde(default)]
    pub(crate) placeholders: bool,
    #[serde(default)]
    pub(crate) code_aware: bool,
    #[serde(default)]
    pub(crate) require_digit: bool,
    #[serde(default)]
    pub(crate) max_len: Option<usize>,
    #[serde(default)]
    pub(crate) pantheon_replacement: Option<String>,
    #[serde(default)]
    pub(crate) examples: Vec<String>,
    #[serde(default)]
    pub(crate) counter_examples: Vec<String>,
}

pub(crate) fn default_specificity() -> u32 {
    50
}
