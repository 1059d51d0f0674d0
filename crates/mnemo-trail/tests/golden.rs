//! Golden trails of two small transcripts (one per host): the rendered
//! markdown at the default budget and at a budget that forces a cut.
//! Regenerate with `UPDATE_GOLDEN=1 cargo test -p mnemo-trail --test golden`.

use mnemo_trail::{DEFAULT_BUDGET, trail_of};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn golden(input: &str, budget: usize, expected: &str) {
    let text = std::fs::read_to_string(dir().join(input)).unwrap_or_default();
    assert!(!text.is_empty(), "missing fixture {input}");
    let trail = match trail_of(&text, None, budget) {
        Ok(t) => t,
        Err(e) => panic!("trail of {input}: {e}"),
    };
    assert!(
        trail.tokens <= budget,
        "{} tokens over {budget}",
        trail.tokens
    );
    let path = dir().join(expected);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let _ = std::fs::write(&path, &trail.text);
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        trail.text, want,
        "{input} at budget {budget} differs from {expected}"
    );
}

#[test]
fn claude_code_trail() {
    golden("claude.jsonl", DEFAULT_BUDGET, "claude.md");
}

#[test]
fn codex_trail() {
    golden("codex.jsonl", DEFAULT_BUDGET, "codex.md");
}

#[test]
fn claude_code_trail_cut_to_a_small_budget() {
    golden("claude.jsonl", 120, "claude-120.md");
}

#[test]
fn secrets_never_reach_the_trail() {
    let text = std::fs::read_to_string(dir().join("claude.jsonl")).unwrap_or_default();
    let t = trail_of(&text, None, DEFAULT_BUDGET).unwrap_or_else(|e| panic!("{e}"));
    let json = serde_json::to_string(&t).unwrap_or_default();
    assert!(!json.contains("ghp_0123456789"), "secret leaked: {json}");
    assert!(t.redactions >= 1);
    assert!(t.text.contains("[REDACTED:"));
}

#[test]
fn check_finds_what_a_summary_lost_and_reinjects_it() {
    let text = std::fs::read_to_string(dir().join("codex.jsonl")).unwrap_or_default();
    let t = trail_of(&text, None, DEFAULT_BUDGET).unwrap_or_else(|e| panic!("{e}"));
    let summary = "We sped up the export. Files: export/run.py (edited), export/batch.py (written). \
                   `pytest export -q` → exit 0. Always keep the CSV header order.";
    let c = mnemo_trail::check(&t, summary).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        c.reinject.contains("python export/run.py --full"),
        "{}",
        c.reinject
    );
    assert!(c.reinject.contains("EXPORT_BUCKET"), "{}", c.reinject);
    assert!(!c.reinject.contains("pytest export -q"), "{}", c.reinject);
    assert!(!c.reinject.contains("CSV header order"), "{}", c.reinject);
    assert_eq!(c.survived.len() + c.lost.len(), t.shown);
    let full = mnemo_trail::check(&t, &t.text).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        full.lost.is_empty(),
        "the trail itself loses {:?}",
        full.lost
    );
    assert!(full.reinject.is_empty());
}
