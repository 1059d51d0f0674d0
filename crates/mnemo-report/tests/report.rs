//! The report of the bundled example bank (`examples/report/bank`, built by
//! `examples/report/build.sh` with the gate): golden HTML and JSON, counts,
//! determinism, escaping and scrubbing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use mnemo_model::Config;
use mnemo_report::{BankFiles, CompactionRow, SessionRows, StepRow, StoreDump};
use mnemo_score::Engine;
use mnemo_scrub::Scrubber;

fn example_bank() -> PathBuf {
    mnemo_testkit::workspace_root().join("examples/report/bank")
}

#[path = "common/bank_dir.rs"]
mod bank_dir;
use bank_dir::bank_files;

/// A session as the Guardian would record it: untrusted tool output, a
/// denied compaction, a re-grounding by the user, an allowed one.
fn store() -> StoreDump {
    let step = |seq: u64, id: &str, method: &str, origin: &str, trust: &str, reg: bool| StepRow {
        seq,
        step_id: id.into(),
        method: method.into(),
        timestamp: Some(format!("2026-12-01T10:00:0{seq}Z")),
        origins: if origin.is_empty() {
            vec![]
        } else {
            vec![origin.into()]
        },
        trust: (!trust.is_empty()).then(|| trust.into()),
        regrounding: reg,
    };
    StoreDump {
        sessions: vec![SessionRows {
            session_id: "sess-demo".into(),
            steps: vec![
                step(
                    1,
                    "req-1",
                    "steps/toolCallResult",
                    "tool_output",
                    "untrusted",
                    false,
                ),
                step(
                    2,
                    "req-2",
                    "steps/preCompact",
                    "tool_output",
                    "untrusted",
                    false,
                ),
                step(
                    3,
                    "req-3",
                    "steps/userMessage",
                    "user_input",
                    "trusted",
                    true,
                ),
                step(
                    4,
                    "req-4",
                    "steps/preCompact",
                    "user_input",
                    "trusted",
                    false,
                ),
            ],
            compactions: vec![
                CompactionRow {
                    step_id: "req-2".into(),
                    entries: vec!["req-1".into()],
                    verdict: "deny".into(),
                    reasoning: Some("compaction denied: 1 untrusted entry in the region; a user re-grounding ends it".into()),
                    reason_codes: vec!["untrusted_in_region".into()],
                },
                CompactionRow {
                    step_id: "req-4".into(),
                    entries: vec!["req-1".into(), "req-3".into()],
                    verdict: "allow".into(),
                    reasoning: None,
                    reason_codes: Vec::new(),
                },
            ],
        }],
    }
}

fn config() -> Config {
    // The example bank was gated with examples/report/mnemo.toml.
    let text =
        std::fs::read_to_string(mnemo_testkit::workspace_root().join("examples/report/mnemo.toml"))
            .unwrap();
    Config::from_toml_str(&text, "examples/report/mnemo.toml").unwrap()
}

fn build(files: &BankFiles, store: Option<&StoreDump>) -> mnemo_report::Report {
    let config = config();
    let engine = Engine::new(&config).unwrap();
    let scrubber = Scrubber::default_rules().unwrap();
    mnemo_report::build(files, store, &config, &engine, scrubber)
}

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("MNEMO_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with MNEMO_BLESS=1", path.display()));
    assert!(
        expected == actual,
        "golden {name} differs (MNEMO_BLESS=1 rewrites)"
    );
}

#[test]
fn example_bank_counts() {
    let r = build(&bank_files(&example_bank()), Some(&store()));
    let t = &r.totals;
    assert_eq!(t.phases, 2);
    assert_eq!(t.entries, 4);
    assert_eq!(
        (
            t.by_band.critical,
            t.by_band.high,
            t.by_band.medium,
            t.by_band.low
        ),
        (2, 2, 0, 0)
    );
    // Phase 2 used 6.5 of 5 lines: an overrun, recomputed from its ZZ.
    assert_eq!(t.over_budget, 1);
    let p2 = &r.phases[0];
    assert_eq!(p2.phase, "2");
    assert_eq!(p2.used.unwrap().display(), "6.5");
    assert_eq!(p2.allocated.unwrap().display(), "5");
    assert!(p2.over_budget);
    assert_eq!(p2.flags[0].kind, "overrun");
    // The blocked Aphrodite record of the batch.
    assert_eq!(t.skipped, 1);
    assert_eq!(r.skipped[0].phase, "2c");
    assert!(r.skipped[0].reason.contains("product copy"));
    // C7 removed the LOW Prometheus entry into the archive.
    assert_eq!(t.archived, 1);
    assert_eq!(r.archive[0].action, "removed");
    assert_eq!(r.archive[0].band, "LOW");
    // A later gate of Aphrodite unblocked it (the D0002 row).
    assert_eq!(r.skipped[0].unblocked_by.as_deref(), Some("P3 Aphrodite"));
    // M0001, E0001, E0002, D0001 and D0002.
    assert_eq!(t.xref_ids, 5);
    assert_eq!(r.xref.by_prefix.get("E"), Some(&2));
    assert_eq!(r.xref.by_prefix.get("D"), Some(&2));
    assert!(r.xref.agents.contains(&"Aphrodite".to_string()));
    // Every entry found its input and an explain with five dimensions.
    for e in &r.entries {
        let i = e.input.as_ref().expect("input in the progress log");
        assert_eq!(i.explain.len(), 5, "{}", e.key);
        assert!(i.facts_kept <= i.facts_total);
        assert!(e.entry_tokens.unwrap() > 0);
    }
    let g = r.guardian.as_ref().unwrap();
    assert_eq!(t.sessions, 1);
    assert_eq!((g.sessions[0].allowed, g.sessions[0].denied), (1, 1));
    assert_eq!(g.sessions[0].regroundings, 1);
    assert_eq!(g.sessions[0].by_origin.get("tool_output"), Some(&2));
}

#[test]
fn example_bank_gate_log() {
    let r = build(&bank_files(&example_bank()), Some(&store()));
    let g = &r.gates;
    assert_eq!(r.totals.gates, 2);
    assert!(g.unreadable_lines.is_empty());
    let (p2, p3) = (&g.gates[0], &g.gates[1]);
    assert_eq!((p2.record.seq, p2.record.phase.as_str()), (1, "2"));
    assert_eq!((p3.record.seq, p3.record.phase.as_str()), (2, "3"));
    // Phase 2: the overrun flag, three entries, the blocked Aphrodite skip.
    assert!(p2.record.budget.over_budget);
    assert_eq!(p2.record.flags[0].kind, "overrun");
    assert_eq!(p2.record.entries.len(), 3);
    assert_eq!(p2.record.skipped.len(), 1);
    assert_eq!(p2.record.skipped[0].agent, "Aphrodite");
    assert!(p2.record.skipped[0].reason.contains("blockers"));
    for e in g.gates.iter().flat_map(|x| &x.record.entries) {
        assert_eq!(e.explain.len(), 5, "{}", e.key);
        assert_eq!(e.facts_total, e.facts_kept.len() + e.facts_dropped.len());
        assert!(e.input_tokens > 0 && e.entry_tokens > 0);
    }
    // Phase 3's gate ran C7, which archived the LOW Prometheus entry.
    let c7 = p3.record.c7.as_ref().unwrap();
    assert_eq!(c7.removed, ["2026-11-30|2d|prometheus"]);
    assert!(c7.before_half_lines > c7.cap_half_lines);
    assert_eq!(r.archive[0].key, c7.removed[0]);
    // Each is the last gate of its phase.
    assert!(p2.replaced_by.is_none() && p3.replaced_by.is_none());
    let html = mnemo_report::to_html(&r);
    let sec = html
        .split("<section id=\"gates\"")
        .nth(1)
        .unwrap()
        .split("</section>")
        .next()
        .unwrap();
    assert!(sec.contains("data-count=\"2\""));
    for t in [
        "gates-table",
        "gate-entries-table",
        "gate-skipped-table",
        "gate-c7-table",
    ] {
        let table = sec.split(&format!("<table id=\"{t}\">")).nth(1).unwrap();
        assert!(table.starts_with("\n<caption>"), "{t} has a caption");
    }
    assert_eq!(sec.matches("<tr data-seq=").count(), 2);
    assert!(sec.contains("removed 1 low-priority entries"));
}

#[test]
fn earlier_gates_of_a_phase_and_bad_log_lines() {
    let mut files = bank_files(&example_bank());
    let log = files.gate_log.take().unwrap();
    let first = log.lines().next().unwrap();
    // Phase 2 gated again (line 3), and a line that is not a record.
    let again = first.replacen("\"seq\":1", "\"seq\":3", 1);
    files.gate_log = Some(format!("{log}{{not json\n{again}\n"));
    let r = build(&files, None);
    assert_eq!(r.gates.unreadable_lines, [3]);
    assert_eq!(r.totals.gates, 3);
    assert_eq!(r.gates.gates[0].replaced_by, Some(3));
    assert_eq!(r.gates.gates[1].replaced_by, None);
    let html = mnemo_report::to_html(&r);
    assert!(html.contains("<td>gate 3</td>"));
    assert!(html.contains("data-unreadable=\"1\""));
}

/// A `mnemo trim` line of the log is a record of its own: in `gates.trims`
/// (not counted as a gate) and in the `#gates` section's trim table, its
/// strings escaped.
#[test]
fn a_trim_alone_is_shown_in_the_gates_section() {
    let mut files = bank_files(&example_bank());
    let log = files.gate_log.take().unwrap();
    let trim = serde_json::json!({
        "version": 1, "seq": 3, "kind": "trim", "date": "2026-12-01",
        "c7": {"log": "C7 trim: removed 1 low-priority entries, archived to _notes/archive/2026-12-compressed-entries.md",
            "archive": "_notes/archive/2026-12-compressed-entries.md",
            "cap_half_lines": 6, "before_half_lines": 9, "after_half_lines": 5,
            "removed": ["2026-11-30|3|<b>hermes</b>"], "shortened": []}
    });
    files.gate_log = Some(format!("{log}{trim}\n"));
    let r = build(&files, None);
    assert!(r.gates.unreadable_lines.is_empty());
    assert_eq!(r.totals.gates, 2, "a trim is not a gate");
    assert_eq!(r.gates.trims.len(), 1);
    let t = &r.gates.trims[0];
    assert_eq!(
        (t.seq, t.c7.before_half_lines, t.c7.after_half_lines),
        (3, 9, 5)
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["gates"]["trims"][0]["kind"], "trim");
    assert_eq!(
        json["gates"]["trims"][0]["c7"]["removed"][0],
        "2026-11-30|3|<b>hermes</b>"
    );
    let html = mnemo_report::to_html(&r);
    let sec = html
        .split("<section id=\"gates\"")
        .nth(1)
        .unwrap()
        .split("</section>")
        .next()
        .unwrap();
    let table = sec
        .split("<table id=\"trim-table\">")
        .nth(1)
        .expect("the trim table");
    assert!(table.starts_with("\n<caption>"));
    assert_eq!(table.matches("<tr data-trim-seq=\"3\">").count(), 1);
    assert!(table.contains("2026-11-30|3|&lt;b&gt;hermes&lt;/b&gt;"));
    assert!(!table.contains("<b>hermes"));
    // Without a gate's line, the trim still shows.
    files.gate_log = Some(format!("{trim}\n"));
    let r = build(&files, None);
    assert_eq!((r.totals.gates, r.gates.trims.len()), (0, 1));
    assert!(mnemo_report::to_html(&r).contains("<tr data-trim-seq=\"3\">"));
}

#[test]
fn a_secret_or_html_in_the_gate_log_is_redacted_and_escaped() {
    let mut files = bank_files(&example_bank());
    let token = ["ghp_", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"].concat();
    let log = files.gate_log.take().unwrap().replace(
        "the artifact has active blockers",
        &format!("token {token} <b>x</b>"),
    );
    files.gate_log = Some(log);
    let r = build(&files, None);
    assert_eq!(r.gates.gates.len(), 2, "the line still parses");
    let reason = &r.gates.gates[0].record.skipped[0].reason;
    assert!(
        !reason.contains(&token) && reason.contains("[REDACTED:"),
        "{reason}"
    );
    let html = mnemo_report::to_html(&r);
    let json = mnemo_report::to_json(&r);
    assert!(!html.contains(&token) && !json.contains(&token));
    assert!(html.contains("&lt;b&gt;x&lt;/b&gt;") && !html.contains("<b>x"));
}

#[test]
fn example_bank_golden_html_and_json() {
    let r = build(&bank_files(&example_bank()), Some(&store()));
    let html = mnemo_report::to_html(&r);
    golden("example-bank.html", &html);
    golden("example-bank.json", &mnemo_report::to_json(&r));
    // The same bank gives the same bytes.
    let again = mnemo_report::to_html(&build(&bank_files(&example_bank()), Some(&store())));
    assert_eq!(html, again);
}

#[test]
fn page_is_self_contained() {
    let html = mnemo_report::to_html(&build(&bank_files(&example_bank()), Some(&store())));
    for needle in [
        "http://", "https://", "<script", "src=", "<link", "@import", "url(",
    ] {
        assert!(!html.contains(needle), "the page contains {needle:?}");
    }
    assert!(html.contains("default-src 'none'"));
    // Every chart has a table with a caption.
    assert_eq!(html.matches("<svg role=\"img\"").count(), 4);
    assert!(html.matches("<caption>").count() >= 7);
    assert!(html.contains("prefers-color-scheme:dark"));
}

#[test]
fn html_in_a_summary_stays_text() {
    let r = build(&bank_files(&example_bank()), None);
    let html = mnemo_report::to_html(&r);
    // The Aphrodite summary of examples/report/phase3-ui.md holds a script tag.
    assert!(r.entries.iter().any(|e| e.text.contains("<script>alert(")));
    assert!(!html.contains("<script"));
    assert!(html.contains("&lt;script&gt;alert(\"x\")&lt;/script&gt;"));
}

#[test]
fn a_secret_in_a_bank_file_is_redacted() {
    // A hand-edited progress log and an index with secrets in them (the
    // gate would have scrubbed them; a person may not have).
    let mut files = bank_files(&example_bank());
    let token = ["ghp_", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"].concat();
    let aws = ["AKIA", "IOSFODNN7EXAMPLE"].concat();
    let log = files.progress_log.take().unwrap().replace(
        "Reviewed the orders endpoints",
        &format!("Reviewed the orders endpoints with token {token}"),
    );
    files.progress_log = Some(log);
    let index = files
        .xref_index
        .take()
        .unwrap()
        .replace("waiting on final product copy", &format!("key {aws}"));
    files.xref_index = Some(index);
    let mut st = store();
    st.sessions[0].steps[0].step_id = format!("req-{token}");
    let r = build(&files, Some(&st));
    let html = mnemo_report::to_html(&r);
    let json = mnemo_report::to_json(&r);
    for out in [&html, &json] {
        assert!(!out.contains(&token));
        assert!(!out.contains(&aws));
        assert!(out.contains("[REDACTED:"));
    }
}

#[test]
fn an_empty_bank_renders() {
    let r = build(&BankFiles::default(), None);
    assert_eq!(r.totals.entries, 0);
    let html = mnemo_report::to_html(&r);
    assert!(html.contains("No phase has been gated yet."));
    assert!(html.contains("No Guardian session store was found."));
    assert!(html.ends_with("</html>\n"));
}

#[test]
fn garbage_never_panics() {
    let junk = "## Completed Phases\n- **x** — <!-- mnemo:key=a|b|c hash=zz -->\n- **a · b** — CRITICAL <!-- mnemo:key=|| hash=00 -->\n  cont\n### — Phase : \n**Files:**\n| a | b |\n";
    let files = BankFiles {
        active_context: Some(junk.into()),
        progress_log: Some(junk.into()),
        xref_index: Some(junk.into()),
        zz: vec![
            (".tmp/ZZ-phase-context.md".into(), junk.into()),
            (
                "ZZ-phase9-context.md".into(),
                "- Used: 99999999999 lines\n- Allocated: 1.5 lines".into(),
            ),
        ],
        archives: vec![("_notes/archive/x-compressed-entries.md".into(), junk.into())],
        gate_log: Some(format!(
            "{junk}\n{{\"version\":1}}\n{{\"version\":1,\"seq\":\"x\"}}\n[]\n"
        )),
    };
    let r = build(&files, Some(&StoreDump::default()));
    let _ = mnemo_report::to_html(&r);
    let _ = mnemo_report::to_json(&r);
}

#[test]
fn big_tables_are_capped_and_say_so() {
    let mut active = String::from("# Active Context\n\n## Completed Phases\n\n");
    for i in 0..1_005 {
        active.push_str(&format!(
            "- **2026-06-01 · P1 · Hermes** — MEDIUM 0.45 — entry {i} <!-- mnemo:key=2026-06-01|1|hermes-{i} hash={i:016x} -->\n"
        ));
    }
    let files = BankFiles {
        active_context: Some(active),
        ..BankFiles::default()
    };
    let r = build(&files, None);
    assert_eq!(r.totals.entries, 1_005);
    let html = mnemo_report::to_html(&r);
    let table = html.split("<table id=\"entries-table\">").nth(1).unwrap();
    let table = table.split("</table>").next().unwrap();
    assert_eq!(table.matches("<tr><th scope=\"row\">").count(), 1_000);
    assert!(table.contains("entry 1004<"));
    assert!(!table.contains("entry 4<"));
    assert!(html.contains("the last 1000 of 1005 entries; the 5 before them"));
    assert!(html.contains("data-count=\"1005\""));
    // A table that long is folded, closed, so the browser lays out none of
    // its rows until the reader opens it.
    let fold = html
        .split("<details class=\"fold\" data-rows=\"1000\"><summary>Table of 1000 entries (folded; open to read it)</summary>\n")
        .nth(1)
        .unwrap();
    assert!(fold.starts_with("<table id=\"entries-table\">"));
    assert!(
        fold.split("</details>")
            .next()
            .unwrap()
            .ends_with("</table>\n")
    );
}

#[test]
fn small_tables_are_not_folded() {
    let r = build(&bank_files(&example_bank()), Some(&store()));
    let html = mnemo_report::to_html(&r);
    assert!(!html.contains("<details"));
    assert!(html.contains("<table id=\"entries-table\">"));
    // No inline style anywhere: every rule is in the one style sheet.
    assert!(!html.contains(" style="));
}
