#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Golden files for every format this crate writes. `MNEMO_BLESS=1`
//! rewrites them.

use mnemo_compress::budget::{AllocItem, BudgetParams, HalfLines, allocate_phase};
use mnemo_compress::facts::extract;
use mnemo_compress::mask::{FieldMask, entry_fields};
use mnemo_compress::render::{
    EntryKey, EntryTokens, EntryView, Review, ZzHeader, completed_entry, confirmation,
    handoff_prompt, marker, parse_marker, progress_section, render_zz,
};
use mnemo_compress::summary::{DeterministicSummarizer, Summarizer, SummaryRequest};
use mnemo_compress::xref::{NextIds, detect, parse_index};
use mnemo_model::{Config, Status, SummaryRecord, Verdict};
use mnemo_score::Band;

fn golden(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("MNEMO_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden {name}; run with MNEMO_BLESS=1"));
    assert_eq!(
        actual, expected,
        "golden {name} differs; rerun with MNEMO_BLESS=1 if intended"
    );
}

struct Case {
    record: SummaryRecord,
    score: u32,
    band: Band,
    to: &'static str,
}

fn rec(agent: &str, summary: &str, files: &[&str]) -> SummaryRecord {
    SummaryRecord {
        agent: Some(agent.into()),
        phase: Some("1".into()),
        date: Some("2026-06-20".into()),
        feature: Some("auth-jwt".into()),
        files_changed: files.iter().map(|s| s.to_string()).collect(),
        summary: summary.into(),
        status: Some(Status::Complete),
        tests: Some("✅ 14 passing".into()),
        ..SummaryRecord::default()
    }
}

fn cases() -> Vec<Case> {
    let mut hermes = rec(
        "hermes",
        "Added POST /auth/login and POST /auth/refresh endpoints with JWT rotation. Access token lives 15 min, refresh token 7 days.",
        &[
            "backend/routers/auth.py",
            "backend/services/token_service.py",
        ],
    );
    hermes.why = Some("Aphrodite needs to implement login form and token storage (httpOnly cookies), auto-refresh on 401.".into());
    hermes.gotcha = Some("Refresh tokens are stored in DB as hashed — no raw token access after issue. Rotate on every use.".into());
    let demeter = rec(
        "demeter",
        "Created `refresh_tokens` table with FK to `users`, hashed token, expires_at, revoked_at. Migration 0012_refresh_tokens adds a unique composite index on (user_id, token_hash). Note: two-phase rollout — read-old/write-new first.",
        &["backend/migrations/0012_refresh_tokens.sql"],
    );
    let aphrodite = rec(
        "aphrodite",
        "Login form with email + password, validation, error display. Hits POST /auth/login.",
        &["web/src/components/LoginForm.tsx"],
    );
    let prometheus = rec(
        "prometheus",
        "Dockerized auth service with nginx",
        &["Dockerfile", "deploy/nginx.conf"],
    );
    let mut docs = rec("mnemosyne", "Fixed a typo in the README", &["README.md"]);
    docs.status = Some(Status::Partial);
    docs.status_reason = Some("one link left".into());
    let mut themis = rec(
        "themis",
        "Review approved. Decided to keep rotation instead of opaque tokens, see _notes/ADR-auth-strategy.md.",
        &[],
    );
    themis.verdict = Some(Verdict::Approved);
    themis.critical_issues = Some(0);
    themis.coverage = Some("87%".into());
    vec![
        Case {
            record: hermes,
            score: 8200,
            band: Band::Critical,
            to: "aphrodite",
        },
        Case {
            record: demeter,
            score: 9100,
            band: Band::Critical,
            to: "hermes",
        },
        Case {
            record: aphrodite,
            score: 6200,
            band: Band::High,
            to: "hermes",
        },
        Case {
            record: prometheus,
            score: 4500,
            band: Band::Medium,
            to: "hermes",
        },
        Case {
            record: docs,
            score: 300,
            band: Band::Low,
            to: "hermes",
        },
        Case {
            record: themis,
            score: 5000,
            band: Band::Medium,
            to: "hermes",
        },
    ]
}

#[test]
fn golden_phase_outputs() {
    let config = Config::default();
    let params = BudgetParams::from_config(&config.budget, None);
    let cases = cases();
    let items: Vec<AllocItem> = cases
        .iter()
        .map(|c| AllocItem {
            score: c.score,
            band: c.band,
            partial: c.record.status == Some(Status::Partial),
        })
        .collect();
    let alloc = allocate_phase(&params, "1", HalfLines(0), &items);
    let summarizer = DeterministicSummarizer::new(&config);
    let mut views = Vec::new();
    let mut refs = Vec::new();
    for ea in &alloc.entries {
        let c = &cases[ea.index];
        let agent = c.record.agent.clone().unwrap();
        let summary = summarizer
            .summarize(&SummaryRequest {
                record: &c.record,
                band: ea.band,
                mode: ea.mode,
                from: &agent,
                to: Some(c.to),
            })
            .unwrap();
        let display = config.display_agent(&agent);
        let said = summary.lines().join(" ");
        let facts = extract(&c.record.scoring_text(), &c.record.files_changed);
        refs.extend(detect(&c.record, ea.band, "1", &display, &facts));
        let mut view = EntryView {
            agent: display,
            date: "2026-06-20".into(),
            phase: "1".into(),
            score: ea.score,
            band: ea.band,
            mode: ea.mode,
            status: c.record.status,
            summary,
            source_summary: c.record.summary.clone(),
            task: None,
            fields: entry_fields(
                &c.record,
                &FieldMask::for_pair(&config, &agent, c.to),
                &said,
            ),
            tokens: EntryTokens::default(),
        };
        view.tokens = EntryTokens::measure(&c.record, &view, "2026-06-20");
        views.push(view);
    }
    let mut index = parse_index("");
    let mut ids =
        NextIds::parse(r#"{"decisions": 1, "entities": 1, "milestones": 1, "tasks": 1}"#).unwrap();
    let merged = index.merge(&refs, &mut ids).unwrap();
    for v in &views {
        index.upsert_feature(
            "auth-jwt",
            "1",
            &v.agent,
            v.band,
            "JWT login + refresh token UI",
        );
    }
    let xrefs: Vec<_> = merged
        .iter()
        .zip(&refs)
        .map(|((id, _), r)| (*id, r.clone()))
        .collect();
    let from = vec!["hermes".to_string(), "demeter".to_string()];
    let to = vec!["aphrodite".to_string()];
    let zz = render_zz(
        &ZzHeader {
            phase: "1",
            next_phase: None,
            from: &from,
            to: &to,
        },
        &alloc,
        &views,
        &xrefs,
    );
    golden("ZZ-phase1-context.md", &zz);

    let completed: String = views.iter().map(completed_entry).collect();
    golden("completed-phases.md", &completed);
    // Every entry has a marker with its key and hash; line counts follow the budget.
    for (v, ea) in views.iter().zip(&alloc.entries) {
        let text = completed_entry(v);
        let (key, hash) = parse_marker(text.lines().next().unwrap()).unwrap();
        assert_eq!(key, v.key());
        assert_eq!(hash, v.hash());
        let expect_lines = (ea.lines.units() as usize).div_ceil(2);
        assert_eq!(text.lines().count(), expect_lines, "{text}");
    }

    let log: String = views
        .iter()
        .zip(&alloc.entries)
        .map(|(v, ea)| {
            let r = &cases[ea.index].record;
            progress_section(v, r, Review::of(r).as_ref()) + "\n"
        })
        .collect();
    golden("progress-log.md", &log);

    golden("xref-index.md", &index.render());
    golden("next-id.json", &ids.render());

    let learnings =
        "# Learnings: auth-jwt\n\n## Gotchas\n- Cookies need SameSite=Lax for the refresh call.";
    golden(
        "handoff.md",
        &handoff_prompt(Some(learnings), "1", None, &zz),
    );

    let conf = confirmation(
        views.len(),
        alloc.count(Band::Critical),
        alloc.count(Band::High),
        merged.iter().filter(|(_, added)| *added).count(),
    );
    golden("confirmation.txt", &(conf.clone() + "\n"));
    assert!(conf.starts_with("Compression complete: 6 entries compressed (2 CRITICAL, 1 HIGH), "));
}

#[test]
fn zz_format_matches_the_spec_example_structure() {
    let Some(example) =
        mnemo_testkit::shared("pantheon-fixtures/spec-examples/ZZ-phase1-context.example.md")
    else {
        return;
    };
    let example = std::fs::read_to_string(example).unwrap();
    let ours = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/ZZ-phase1-context.md"
    ))
    .unwrap();
    // Same skeleton: the headings and labels, in the same order.
    let skeleton = |s: &str| -> Vec<String> {
        s.lines()
            .filter_map(|l| {
                if l.starts_with('#') {
                    Some(l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
                } else if let Some(rest) = l.strip_prefix("**") {
                    rest.split("**").next().map(|x| format!("**{x}**"))
                } else if l.starts_with("- ") {
                    l.split(':').next().map(str::to_string)
                } else if l.starts_with('|') {
                    Some("|".into())
                } else {
                    None
                }
            })
            .collect()
    };
    let mut a = skeleton(&example);
    let mut b = skeleton(&ours);
    a.dedup();
    b.dedup();
    let heads = |v: &Vec<String>| {
        v.iter()
            .filter(|l| l.starts_with('#'))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(heads(&a), heads(&b));
    // The Budget labels of §8 stay (the report reads them); the entries'
    // fixed labels (`**Entry:**`, `**What changed:**`, …) are gone on
    // purpose: they carried no fact and took a third of the page (SPEC §2,
    // "a handoff is smaller than what it summarises"). What is left of the
    // §4 shape: a head line per expanded entry, its lines under it one a
    // line (as the seed writes them, no list markers), the gotcha labelled.
    for label in ["- Allocated", "- Used", "- Carried", "- Tokens"] {
        assert!(b.contains(&label.to_string()), "{label}");
    }
    assert!(!ours.contains("**Entry:**") && !ours.contains("**What changed:**"));
    assert!(ours.contains("\nGotcha: "), "{ours}");
    let pe =
        &ours[ours.find("## Priority Entries").unwrap()..ours.find("## Cross-References").unwrap()];
    assert!(!pe.lines().any(|l| l.starts_with("- ")), "{pe}");
    // STANDARD entries are seed §4's one-line form under §8's heading
    // (its band name; the `(1-line)` parentheticals go): `Agent text`, one
    // line each, opening with a roster name, no table (the seed's §8
    // example is a table; §4's templates are lines).
    let std = &pe[pe.find("### STANDARD\n").unwrap()..];
    let rows: Vec<&str> = std.lines().skip(1).filter(|l| !l.is_empty()).collect();
    assert!(!rows.is_empty(), "{pe}");
    let roster = [
        "Themis ",
        "Prometheus ",
        "Mnemosyne ",
        "Hermes ",
        "Demeter ",
        "Aphrodite ",
    ];
    for r in &rows {
        assert!(
            !r.starts_with('|') && roster.iter().any(|a| r.starts_with(a)),
            "{r}"
        );
        assert!(
            !r.split_whitespace().next().unwrap_or("").ends_with(':'),
            "{r}"
        );
    }
    for heading in ["### CRITICAL\n", "### HIGH\n", "### STANDARD\n"] {
        assert!(pe.contains(heading), "{heading} {pe}");
    }
    assert!(!pe.contains("(expanded)") && !pe.contains("(2-line)") && !pe.contains("(1-line)"));
    assert!(
        !pe.contains("| Agent | Summary |") && !pe.contains("|-|-|"),
        "{pe}"
    );
    assert!(ours.contains("| ID | Type | Name | File |\n|----|------|------|------|\n"));
}

#[test]
fn a_task_discriminated_key_round_trips_through_its_marker() {
    let key = EntryKey::new("2026-06-20", "1", "@Hermes").with_task(Some("login -- flow | v2"));
    assert_eq!(key.render(), "2026-06-20|1|hermes|login_-_flow___v2");
    let line = format!("- x {}", marker(&key, "00ff00ff00ff00ff"));
    assert!(
        !line["- x <!--".len()..line.len() - 3].contains("--"),
        "{line}"
    );
    let (back, hash) = parse_marker(&line).unwrap();
    assert_eq!(back, key);
    assert_eq!(hash, "00ff00ff00ff00ff");
    // The seed's plain key has no fourth part.
    let plain = EntryKey::new("2026-06-20", "1", "hermes");
    let (back, _) = parse_marker(&marker(&plain, "ab")).unwrap();
    assert_eq!(back.task, None);
    assert_eq!(back.render(), "2026-06-20|1|hermes");
}
