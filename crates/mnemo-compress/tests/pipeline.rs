#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A whole phase gate through the pure pipeline.

use mnemo_compress::budget::HalfLines;
use mnemo_compress::pipeline::{PhaseInput, compress_phase};
use mnemo_compress::preflight::Decision;
use mnemo_compress::render::{ZzHeader, render_zz};
use mnemo_compress::summary::{
    Body, DeterministicSummarizer, SummarizeError, Summarizer, Summary, SummaryRequest,
};
use mnemo_compress::xref::{NextIds, parse_index};
use mnemo_model::{Config, Status, SummaryRecord};
use mnemo_score::{Band, Engine};

fn rec(agent: &str, status: Option<Status>, summary: &str, files: &[&str]) -> SummaryRecord {
    SummaryRecord {
        agent: Some(agent.into()),
        status,
        summary: summary.into(),
        files_changed: files.iter().map(|s| s.to_string()).collect(),
        ..SummaryRecord::default()
    }
}

fn batch() -> Vec<SummaryRecord> {
    vec![
        rec(
            "demeter",
            Some(Status::Complete),
            "Migration adds new table refresh_tokens with foreign key to users; CREATE TABLE refresh_tokens. Note: hashed tokens only.",
            &["backend/migrations/0012_refresh.sql"],
        ),
        rec(
            "hermes",
            Some(Status::Complete),
            "Added JWT auth endpoint POST /auth/login with refresh token rotation.",
            &["backend/routers/auth.py"],
        ),
        rec(
            "aphrodite",
            Some(Status::Partial),
            "Fixed a typo in the README",
            &["README.md"],
        ),
        rec(
            "hermes",
            Some(Status::InProgress),
            "Half of the payments API.",
            &[],
        ),
        SummaryRecord {
            blockers: vec!["waiting on keys".into()],
            ..rec("prometheus", Some(Status::Complete), "Deploy config.", &[])
        },
        rec("themis", None, "Looked at things.", &[]),
    ]
}

struct Failing;
impl Summarizer for Failing {
    fn summarize(&self, _: &SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        Err(SummarizeError("model offline".into()))
    }
}

#[test]
fn phase_gate_end_to_end() {
    let config = Config::default();
    let engine = Engine::new(&config).unwrap();
    let records = batch();
    let input = PhaseInput {
        phase: "1",
        date: "2026-06-20",
        to: Some("aphrodite"),
        phases: None,
        carry_in: HalfLines(0),
        records: &records,
    };
    let out = compress_phase(
        &config,
        &engine,
        &DeterministicSummarizer::new(&config),
        &input,
    );
    assert_eq!(out.entries.len(), 3);
    let skipped: Vec<(usize, String)> = out
        .skipped
        .iter()
        .map(|(i, d)| (*i, d.reason().unwrap().to_string()))
        .collect();
    assert_eq!(
        skipped,
        [
            (
                3,
                "subtask_summary with status in_progress is never compressed".to_string()
            ),
            (4, "the artifact has active blockers".to_string()),
            (
                5,
                "subtask_summary without a status is never compressed".to_string()
            ),
        ]
    );
    // Score order: demeter's migration is CRITICAL first.
    assert_eq!(out.entries[0].index, 0);
    assert_eq!(out.entries[0].view.band, Band::Critical);
    assert!(matches!(
        out.entries[0].view.summary.body,
        Body::Critical { .. }
    ));
    // The partial entry is at least MEDIUM with a warning decision.
    let partial = out.entries.iter().find(|e| e.index == 2).unwrap();
    assert!(partial.view.band >= Band::Medium);
    assert!(matches!(
        partial.decision,
        Decision::CompressWithWarning { .. }
    ));
    // Masks: default pair keeps the semantic summary of expanded entries.
    assert!(
        out.entries[0]
            .masked
            .summary_semantic
            .as_deref()
            .unwrap()
            .starts_with("What changed: ")
    );
    assert!(out.refs.iter().any(|r| r.name == "refresh_tokens table"));
    let mut index = parse_index("");
    let mut ids = NextIds::default();
    let merged = index.merge(&out.refs, &mut ids).unwrap();
    let added = merged.iter().filter(|(_, a)| *a).count();
    let conf = out.confirmation(added);
    assert!(
        conf.starts_with("Compression complete: 3 entries compressed (1 CRITICAL, "),
        "{conf}"
    );
    let views: Vec<_> = out.entries.iter().map(|e| e.view.clone()).collect();
    let xrefs: Vec<_> = merged
        .iter()
        .zip(&out.refs)
        .map(|((id, _), r)| (*id, r.clone()))
        .collect();
    let zz = render_zz(
        &ZzHeader {
            phase: "1",
            next_phase: None,
            from: &["demeter".into()],
            to: &["aphrodite".into()],
        },
        &out.allocation,
        &views,
        &xrefs,
    );
    assert!(zz.contains("\n\nDemeter"), "{zz}");
    // The Budget states the tokens given and written; each entry has its own.
    let tin: usize = out.entries.iter().map(|e| e.view.tokens.input).sum();
    assert!(tin > 0 && out.entries.iter().all(|e| e.view.tokens.output > 0));
    assert!(zz.contains(&format!("- Tokens: {tin} in, ")), "{zz}");
    assert!(zz.contains(
        "| M0001 | migration | refresh_tokens table | backend/migrations/0012_refresh.sql |"
    ));
    // Deterministic.
    assert_eq!(
        out,
        compress_phase(
            &config,
            &engine,
            &DeterministicSummarizer::new(&config),
            &input
        )
    );
}

#[test]
fn failing_summarizer_falls_back() {
    let config = Config::default();
    let engine = Engine::new(&config).unwrap();
    let records = batch();
    let input = PhaseInput {
        phase: "2",
        date: "2026-06-21",
        to: None,
        phases: Some(4),
        carry_in: HalfLines(2),
        records: &records,
    };
    let out = compress_phase(&config, &engine, &Failing, &input);
    assert!(out.entries.iter().all(|e| e.fell_back));
    assert_eq!(out.allocation.allocated, HalfLines::lines(26));
    assert!(
        out.entries
            .iter()
            .all(|e| e.view.date == "2026-06-21" && e.view.phase == "2")
    );
}

/// Seed §5: `* → mnemosyne` keeps "summary (first 60 chars)", no semantic
/// summary and no files: the archive gets one line of at most 60
/// characters, cut at a word boundary, whatever the band.
#[test]
fn mnemosyne_gets_the_first_sixty_characters_at_a_word_boundary() {
    let config = Config::default();
    let engine = Engine::new(&config).unwrap();
    let long = "Breaking change: POST /auth/login now returns 202 Accepted and the refresh cookie is HttpOnly; Secure; SameSite=Strict. Clients must re-login.";
    let records = vec![rec(
        "hermes",
        Some(Status::Complete),
        long,
        &["backend/routers/auth.py"],
    )];
    let input = PhaseInput {
        phase: "1",
        date: "2026-06-20",
        to: Some("mnemosyne"),
        phases: None,
        carry_in: HalfLines(0),
        records: &records,
    };
    let out = compress_phase(
        &config,
        &engine,
        &DeterministicSummarizer::new(&config),
        &input,
    );
    let e = &out.entries[0];
    let Body::Standard { sentence, .. } = &e.view.summary.body else {
        panic!("one line for the archive: {:?}", e.view.summary.body);
    };
    assert!(sentence.chars().count() <= 60, "{sentence}");
    assert!(long.starts_with(sentence.as_str()), "{sentence}");
    // The next character of the summary is a space: no word was cut.
    assert!(long[sentence.len()..].starts_with(' '), "{sentence}");
    assert!(!e.view.fields.files);
    let input = PhaseInput {
        to: Some("aphrodite"),
        ..input
    };
    let out = compress_phase(
        &config,
        &engine,
        &DeterministicSummarizer::new(&config),
        &input,
    );
    // Another receiver keeps the summarizer's lines: the facts past the
    // first 60 characters are still there.
    let lines = out.entries[0].view.summary.lines().join(" ");
    assert!(lines.contains("202 Accepted"), "{lines}");
}

/// Seed §5 masks decide what is on the page: `* → mnemosyne` keeps no
/// files, so a LOW entry (by §4 its file names) shows the summary's first
/// words instead; another receiver gets the file names.
#[test]
fn a_low_entry_shows_no_file_the_receivers_mask_hides() {
    let config = Config::default();
    let engine = Engine::new(&config).unwrap();
    let records = vec![rec(
        "prometheus",
        Some(Status::Complete),
        "Fixed a typo in the README and two spelling mistakes in the user guide",
        &["docs/README.md"],
    )];
    let input = PhaseInput {
        phase: "1",
        date: "2026-06-20",
        to: Some("mnemosyne"),
        phases: None,
        carry_in: HalfLines(0),
        records: &records,
    };
    let summarizer = DeterministicSummarizer::new(&config);
    let zz = |input: &PhaseInput<'_>| {
        let out = compress_phase(&config, &engine, &summarizer, input);
        assert_eq!(out.entries[0].view.band, Band::Low);
        let header = ZzHeader {
            phase: "1",
            next_phase: None,
            from: &["prometheus".to_string()],
            to: &[input.to.unwrap_or_default().to_string()],
        };
        let views: Vec<_> = out.entries.iter().map(|e| e.view.clone()).collect();
        render_zz(&header, &out.allocation, &views, &[])
    };
    let archive = zz(&input);
    assert!(!archive.contains("README.md"), "{archive}");
    assert!(
        archive.contains("\nPrometheus Fixed a typo in the README and two spelling mistakes\n"),
        "{archive}"
    );
    let dev = zz(&PhaseInput {
        to: Some("hermes"),
        ..input
    });
    assert!(dev.contains("\nPrometheus README.md\n"), "{dev}");
}
