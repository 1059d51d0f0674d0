// Summary records shared by the plan's unit tests (`src/plan.rs`, through
// `include!`) and the gate-log tests (`tests/gatelog.rs`, through `#[path]`):
// one file, so the two suites plan gates over the same inputs. Plain `//`
// comments: an included file may not start with inner doc comments.

use mnemo_model::{Format, SummaryRecord, parse_records};

/// The date every fixture gate runs on.
pub const DATE: &str = "2026-06-20";

/// The identity scrub: fixtures hold no secrets.
pub fn ident(t: &str) -> String {
    t.to_string()
}

/// Parses `(file name, JSON)` pairs into the records a gate takes.
pub fn records(items: &[(&str, serde_json::Value)]) -> Vec<(String, SummaryRecord)> {
    items
        .iter()
        .flat_map(|(name, v)| {
            parse_records(&v.to_string(), name, Format::Json)
                .unwrap()
                .into_iter()
                .map(|r| (name.to_string(), r))
        })
        .collect()
}

/// Hermes's summary with `summary` as its text.
pub fn hermes(summary: &str) -> (&'static str, serde_json::Value) {
    (
        "hermes.json",
        serde_json::json!({"agent": "hermes", "status": "complete",
            "summary": summary, "files_changed": ["src/auth.rs"]}),
    )
}

/// Demeter's migration summary.
pub fn demeter() -> (&'static str, serde_json::Value) {
    (
        "demeter.json",
        serde_json::json!({"agent": "demeter", "status": "complete",
            "summary": "CREATE TABLE refresh_tokens with columns token_hash, expires_at; migration 0012.",
            "files_changed": ["migrations/0012.sql"]}),
    )
}
