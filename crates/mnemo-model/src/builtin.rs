//! The built-in configuration as Rust: `build.rs` parses and validates
//! [`crate::config::DEFAULT_CONFIG_TOML`] with the crate's own loader and
//! writes the code that constructs the result, so [`Config::default`]
//! parses no TOML.

use crate::config::{
    AgentsConfig, Bands, BlockerRules, BudgetConfig, Config, FailurePosture, FileNovelty,
    GuardianClientConfig, Keyword, Mask, Matching, PathsConfig, ScoringConfig, StartupPosture,
    Variant, Weights,
};
use crate::hundredths::Hundredths;
use std::collections::BTreeMap;

include!(concat!(env!("OUT_DIR"), "/default_config.rs"));

/// `n` hundredths (`build.rs` writes only values it loaded, all <= 100).
const fn h(n: u16) -> Hundredths {
    match Hundredths::new(n) {
        Some(v) => v,
        None => Hundredths::ONE,
    }
}

impl Default for Config {
    /// The built-in configuration (`src/default.toml`, what `mnemo init`
    /// writes), constructed without parsing.
    fn default() -> Self {
        builtin()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated defaults are what loading the built-in TOML gives.
    #[test]
    fn generated_defaults_equal_the_parsed_toml() {
        let parsed = Config::from_toml_str("", "<built-in>").expect("built-in loads");
        let generated = Config::default();
        assert_eq!(generated, parsed);
        assert_eq!(generated.scoring.keywords.len(), 35);
        assert!(!generated.agents.relevance.is_empty());
        assert!(!generated.masks.is_empty() && !generated.variants.is_empty());
    }
}
