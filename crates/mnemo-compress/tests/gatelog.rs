//! The gate log (`_xref/gate-log.jsonl`): what each gate's plan appends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_compress::gatelog::{self, GATE_LOG, GateRecord};
use mnemo_compress::plan::{
    BankTexts, FileChange, GatePlan, GateRequest, gate_reads, plan_gate, prepare,
};
use mnemo_model::{Config, SummaryRecord};
use mnemo_score::Engine;

#[path = "common/gate_fixtures.rs"]
mod gate_fixtures;
use gate_fixtures::{DATE, demeter, hermes, ident, records};

fn blocked() -> (&'static str, serde_json::Value) {
    (
        "aphrodite.json",
        serde_json::json!({"agent": "aphrodite", "status": "blocked",
            "summary": "Login form waits for the API.", "blockers": ["POST /auth/login"]}),
    )
}

fn plan_with(
    config: &Config,
    phase: &str,
    recs: &[(String, SummaryRecord)],
    texts: &BankTexts,
    clean: &dyn Fn(&str) -> String,
) -> GatePlan {
    let engine = Engine::new(config).unwrap();
    let prepared = prepare(config, None, &[], recs.to_vec(), &ident);
    plan_gate(
        &GateRequest {
            config,
            engine: &engine,
            phase,
            from: &["hermes".to_string()],
            to: &["themis".to_string()],
            phases: None,
            date: DATE,
            feature: Some("auth"),
            records: &prepared.records,
        },
        texts,
        clean,
    )
    .unwrap()
}

fn plan(phase: &str, recs: &[(String, SummaryRecord)], texts: &BankTexts) -> GatePlan {
    plan_with(&Config::default(), phase, recs, texts, &ident)
}

fn empty(phase: &str) -> BankTexts {
    BankTexts::absent(&gate_reads(phase, DATE))
}

/// The bytes the plan appends to the log (it never rewrites it).
fn log_text(p: &GatePlan) -> Option<&str> {
    assert!(
        !p.changes
            .iter()
            .any(|c| matches!(c, FileChange::Write { rel, .. } | FileChange::Delete { rel } if rel == GATE_LOG)),
        "the log is appended to, never rewritten"
    );
    p.changes.iter().find_map(|c| match c {
        FileChange::Append { rel, content } if rel == GATE_LOG => Some(content.as_str()),
        _ => None,
    })
}

fn only_record(p: &GatePlan) -> GateRecord {
    let parsed = gatelog::parse(log_text(p).expect("the gate appends its line"));
    assert!(parsed.unreadable.is_empty());
    assert_eq!(parsed.records.len(), 1);
    parsed.records.into_iter().next().unwrap()
}

#[test]
fn a_gate_appends_one_line_with_what_it_decided() {
    let recs = records(&[
        hermes("Added POST /auth/login with JWT refresh rotation; answers 401 when expired."),
        demeter(),
        blocked(),
    ]);
    let p = plan("1", &recs, &empty("1"));
    let text = log_text(&p).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(text.ends_with('\n'));
    let r = only_record(&p);
    assert_eq!(Some(&r), p.gate_log.as_ref());
    assert_eq!((r.seq, r.version, r.phase.as_str()), (1, 1, "1"));
    assert_eq!(r.confirmation, p.outcome.confirmation);
    assert_eq!(r.entries.len(), 2);
    // Allocation order: score descending, each with its explain.
    assert!(r.entries[0].score_exact >= r.entries[1].score_exact);
    let h = r.entries.iter().find(|e| e.agent == "Hermes").unwrap();
    assert_eq!(h.key, "2026-06-20|1|hermes");
    assert_eq!(h.action, "new");
    assert_eq!(h.source, "hermes.json");
    let dims: Vec<&str> = h.explain.iter().map(|x| x.dimension.as_str()).collect();
    assert_eq!(
        dims,
        ["impact", "risk", "novelty", "blockers", "downstream"]
    );
    assert!(h.explain[0].why.contains("keyword"), "{:?}", h.explain);
    assert!(h.input_chars > 0 && h.entry_chars > 0);
    assert!(h.input_tokens > 0 && h.entry_tokens > 0);
    assert_eq!(h.facts_total, h.facts_kept.len() + h.facts_dropped.len());
    assert!(
        h.facts_kept.iter().any(|f| f.contains("POST /auth/login")),
        "{:?}",
        h.facts_kept
    );
    // The skipped input, with the preflight's reason.
    assert_eq!(r.skipped.len(), 1);
    assert_eq!(r.skipped[0].source, "aphrodite.json");
    assert!(!r.skipped[0].reason.is_empty());
    let b = r.budget;
    assert_eq!(
        b.allocated_half_lines,
        b.base_half_lines + b.carry_in_half_lines
    );
    assert_eq!(b.over_budget, b.used_half_lines > b.allocated_half_lines);
    assert!(r.c7.is_none());
}

#[test]
fn a_re_run_appends_nothing_and_a_new_gate_appends_the_next_line() {
    let recs = records(&[hermes("Added POST /auth/login."), demeter()]);
    let mut texts = empty("1");
    let first = plan("1", &recs, &texts);
    texts.apply(&first.changes);
    let again = plan("1", &recs, &texts);
    assert!(again.gate_log.is_none());
    assert!(log_text(&again).is_none());

    // An updated summary is a change: line 2, the entry `updated`.
    let recs2 = records(&[
        hermes("Added POST /auth/login and POST /auth/logout."),
        demeter(),
    ]);
    let second = plan("1", &recs2, &texts);
    let appended = log_text(&second).unwrap();
    assert_eq!(appended.lines().count(), 1);
    texts.apply(&second.changes);
    let parsed = gatelog::parse(texts.get(GATE_LOG).unwrap().unwrap());
    assert_eq!(parsed.records.len(), 2);
    assert_eq!(parsed.records[0], first.gate_log.unwrap());
    let r = &parsed.records[1];
    assert_eq!(r.seq, 2);
    let actions: Vec<(&str, &str)> = r
        .entries
        .iter()
        .map(|e| (e.agent.as_str(), e.action.as_str()))
        .collect();
    assert!(actions.contains(&("Hermes", "updated")), "{actions:?}");
    assert!(actions.contains(&("Demeter", "unchanged")), "{actions:?}");
}

#[test]
fn c7_trims_are_recorded_with_sizes_and_keys() {
    let mut config = Config::default();
    config.budget.total_lines = 3;
    let recs = records(&[
        hermes("Added POST /auth/login with JWT refresh rotation; answers 401 when expired."),
        demeter(),
        (
            "notes.json",
            serde_json::json!({"agent": "mnemosyne", "status": "complete",
                "summary": "Notes.", "files_changed": ["docs/notes.md"]}),
        ),
    ]);
    let p = plan_with(&config, "1", &recs, &empty("1"), &ident);
    let r = only_record(&p);
    let c7 = r.c7.expect("the section went over its 3-line cap");
    assert_eq!(Some(&c7.log), p.outcome.trim.as_ref());
    assert_eq!(c7.cap_half_lines, 6);
    assert!(c7.before_half_lines > c7.cap_half_lines, "{c7:?}");
    assert!(c7.after_half_lines < c7.before_half_lines, "{c7:?}");
    assert!(!c7.removed.is_empty() || !c7.shortened.is_empty());
    assert!(c7.archive.starts_with("_notes/archive/2026-06"));
}

#[test]
fn every_string_is_scrubbed_on_its_own_and_the_line_stays_json() {
    let recs = records(&[hermes(
        "Added POST /auth/login with a \"quoted\" secret-ish value.",
    )]);
    // A scrubber that would break JSON if it ran on the whole line.
    let clean = |t: &str| t.replace("auth", "\"}{AUTH\\");
    let p = plan_with(&Config::default(), "1", &recs, &empty("1"), &clean);
    let text = log_text(&p).unwrap();
    let r = only_record(&p);
    assert!(text.contains("AUTH"));
    assert!(r.entries[0].key.contains("hermes"));
    assert!(
        r.entries[0]
            .facts_kept
            .iter()
            .chain(&r.entries[0].facts_dropped)
            .all(|f| !f.contains("/auth/"))
    );
}

#[test]
fn an_existing_log_is_kept_byte_for_byte_and_bad_lines_are_counted() {
    let old = "not json\n";
    let mut texts = empty("1").with(GATE_LOG, Some(old));
    let p = plan("1", &records(&[demeter()]), &texts);
    texts.apply(&p.changes);
    let text = texts.get(GATE_LOG).unwrap().unwrap();
    assert!(text.starts_with(old));
    let parsed = gatelog::parse(text);
    assert_eq!(parsed.unreadable, [1]);
    assert_eq!(parsed.records[0].seq, 2);
    // A log whose last line has no newline gets one before the new line.
    let mut texts = empty("1").with(GATE_LOG, Some("not json"));
    let p = plan("1", &records(&[demeter()]), &texts);
    assert!(log_text(&p).unwrap().starts_with("\n{"));
    texts.apply(&p.changes);
    assert!(
        texts
            .get(GATE_LOG)
            .unwrap()
            .unwrap()
            .starts_with("not json\n{")
    );
}

/// Only the end of a long log is read: the next `seq` comes from its last
/// record (plus the lines after it), the line is appended, and an end
/// without any record asks for the whole log.
#[test]
fn a_long_log_is_read_from_its_end() {
    let recs = records(&[demeter()]);
    // A log of 40 gates, as mnemo writes it.
    let mut whole = String::new();
    for i in 1..=40 {
        let phase = i.to_string();
        let p = plan(&phase, &recs, &empty(&phase).with(GATE_LOG, Some(&whole)));
        whole.push_str(log_text(&p).unwrap());
    }
    assert_eq!(gatelog::parse(&whole).records.len(), 40);
    // Its end: from inside its third-last line, from the next line start,
    // plus a blank line and an unreadable line after the last record.
    let last3: usize = whole.lines().rev().take(3).map(|l| l.len() + 1).sum();
    let tail_from = whole.len() - last3 + 10;
    let cut = tail_from + whole[tail_from..].find('\n').unwrap() + 1;
    let mut ended = whole.clone();
    ended.push_str("\nnot json\n");
    let tail = ended[cut..].to_string();
    assert_eq!(gatelog::next_seq(ended.len() as u64, &tail), Some(42));
    assert_eq!(
        gatelog::next_seq(ended.len() as u64, &ended),
        Some(42),
        "the whole log counts its lines to the same number"
    );
    let mut t = empty("41");
    t.insert(
        GATE_LOG,
        mnemo_compress::plan::FileText::Tail {
            len: ended.len() as u64,
            text: tail.clone(),
        },
    );
    let p = plan("41", &recs, &t);
    let line = log_text(&p).unwrap();
    assert_eq!(p.gate_log.as_ref().unwrap().seq, 42);
    let mut appended = ended.clone();
    appended.push_str(line);
    let parsed = gatelog::parse(&appended);
    assert_eq!(parsed.records.last().unwrap().seq, 42);
    // Line 41 is blank (not counted by `seq`), 42 the unreadable one.
    assert_eq!(parsed.unreadable, [42]);
    // A tail with no record in it: the whole log must be read.
    assert_eq!(gatelog::next_seq(10_000, "not json\n"), None);
    assert!(!gatelog::tail_suffices(10_000, "not json\n"));
    assert!(gatelog::tail_suffices(9, "not json\n"));
    let mut t = empty("41");
    t.insert(
        GATE_LOG,
        mnemo_compress::plan::FileText::Tail {
            len: 10_000,
            text: "not json\n".into(),
        },
    );
    let config = Config::default();
    let engine = Engine::new(&config).unwrap();
    let err = plan_gate(
        &GateRequest {
            config: &config,
            engine: &engine,
            phase: "41",
            from: &[],
            to: &[],
            phases: None,
            date: DATE,
            feature: None,
            records: &recs,
        },
        &t,
        &ident,
    )
    .unwrap_err();
    assert!(err.to_string().contains(GATE_LOG), "{err}");
}

#[test]
fn a_log_that_was_not_read_is_an_error() {
    let rels: Vec<String> = gate_reads("1", DATE)
        .into_iter()
        .filter(|r| r != GATE_LOG)
        .collect();
    let config = Config::default();
    let engine = Engine::new(&config).unwrap();
    let recs = records(&[demeter()]);
    let err = plan_gate(
        &GateRequest {
            config: &config,
            engine: &engine,
            phase: "1",
            from: &[],
            to: &[],
            phases: None,
            date: DATE,
            feature: None,
            records: &recs,
        },
        &BankTexts::absent(&rels),
        &ident,
    )
    .unwrap_err();
    assert!(err.to_string().contains(GATE_LOG), "{err}");
}
