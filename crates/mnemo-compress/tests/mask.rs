#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Field masks: SPEC §2 precedence over the seed's §5 table.

use mnemo_compress::mask::{FieldMask, apply_mask, mask_entry};
use mnemo_model::{Config, Status, SummaryRecord, Verdict};

fn record() -> SummaryRecord {
    SummaryRecord {
        agent: Some("hermes".into()),
        date: Some("2026-06-20".into()),
        files_changed: vec!["api/auth.py".into(), "api/tokens.py".into()],
        summary: "Added POST /auth/login and POST /auth/refresh with JWT rotation; refresh tokens hashed.".into(),
        tests: Some("12 passing".into()),
        coverage: Some("87%".into()),
        status: Some(Status::Partial),
        status_reason: Some("flaky e2e".into()),
        verdict: Some(Verdict::Approved),
        critical_issues: Some(0),
        blockers: vec!["waiting on DBA".into()],
        ..SummaryRecord::default()
    }
}

#[test]
fn default_mask_keeps_semantic_not_full_summary() {
    let c = Config::default();
    let m = mask_entry(
        &c,
        &record(),
        Some("What changed: …"),
        "hermes",
        "aphrodite",
    );
    assert_eq!(m.date.as_deref(), Some("2026-06-20"));
    assert_eq!(m.agent.as_deref(), Some("hermes"));
    assert_eq!(m.files.as_deref(), Some("api/auth.py, api/tokens.py"));
    assert_eq!(m.summary_semantic.as_deref(), Some("What changed: …"));
    assert_eq!(m.summary, None);
    assert_eq!(m.status.as_deref(), Some("partial (flaky e2e)"));
    assert_eq!(m.tests.as_deref(), Some("12 passing"));
    assert_eq!(
        (m.coverage, m.verdict, m.critical_issues, m.blockers),
        (None, None, None, None)
    );
}

#[test]
fn receiver_themis_gets_full_summary_and_coverage() {
    let c = Config::default();
    let m = mask_entry(&c, &record(), Some("x"), "hermes", "themis");
    assert!(
        m.summary
            .as_deref()
            .unwrap()
            .ends_with("refresh tokens hashed.")
    );
    assert_eq!(m.coverage.as_deref(), Some("87%"));
    assert_eq!(m.summary_semantic, None);
}

#[test]
fn mnemosyne_gets_sixty_chars_and_status() {
    let c = Config::default();
    // `* → mnemosyne` wins over `themis → *`: the receiver's need wins.
    let m = mask_entry(&c, &record(), Some("x"), "themis", "mnemosyne");
    let s = m.summary.unwrap();
    // At most 60 characters, cut at a word boundary (`rotation` does not fit).
    assert_eq!(s, "Added POST /auth/login and POST /auth/refresh with JWT");
    assert!(s.chars().count() <= 60);
    assert!(record().summary.starts_with(&s));
    assert_eq!(m.files, None);
    assert_eq!(m.verdict, None);
    assert!(m.status.is_some());
}

#[test]
fn themis_sender_keeps_review_fields() {
    let c = Config::default();
    let m = mask_entry(&c, &record(), Some("x"), "Themis", "hermes");
    assert_eq!(m.verdict.as_deref(), Some("APPROVED"));
    assert_eq!(m.critical_issues, Some(0));
    assert_eq!(m.coverage.as_deref(), Some("87%"));
    assert!(m.files.is_some());
    assert_eq!(
        (m.summary, m.summary_semantic, m.status),
        (None, None, None)
    );
}

#[test]
fn parse_limits_and_unknown_names() {
    let m = FieldMask::parse(&["summary:5", "blockers", "bogus", "status:x"]);
    assert_eq!(m.summary, Some(Some(5)));
    assert!(m.blockers && m.status);
    let e = apply_mask(&record(), None, &m);
    assert_eq!(e.summary.as_deref(), Some("Added"));
    assert_eq!(e.blockers.as_deref(), Some("waiting on DBA"));
    let all = apply_mask(&record(), Some("sem"), &FieldMask::ALL);
    assert!(all.summary.is_some() && all.summary_semantic.is_some() && all.blockers.is_some());
}

#[test]
fn multibyte_summary_cut_is_safe() {
    let mut r = record();
    r.summary = "é".repeat(100);
    let m = apply_mask(&r, None, &FieldMask::parse(&["summary:60"]));
    assert_eq!(m.summary.unwrap().chars().count(), 60);
}
