#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Bank behaviour: golden files of every format written, the real Pantheon
//! bank round-tripped, idempotency (also as a property), the Guardian gate,
//! scrubbing, malformed banks, C4/C5/C6/C7.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mnemo_bank::layout::{ACTIVE_CONTEXT, NEXT_ID, PROGRESS_LOG, XREF_INDEX};
use mnemo_bank::ops::{self, GateOptions, Input};
use mnemo_bank::{Bank, BankError, init_bank};
use mnemo_guardian::model::Trigger;
use mnemo_guardian::policy::Policy;
use mnemo_model::Config;
use proptest::prelude::*;

const T: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> Input {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    Input {
        name: format!("fixtures/{name}"),
        text: std::fs::read_to_string(p).unwrap(),
    }
}

fn opts(phase: &str, from: &[&str], to: &[&str]) -> GateOptions {
    GateOptions {
        phase: phase.into(),
        from: from.iter().map(|s| s.to_string()).collect(),
        to: to.iter().map(|s| s.to_string()).collect(),
        phases: None,
        date: "2026-06-20".into(),
        feature: Some("auth".into()),
        policy: Policy::default(),
        guardian_url: None,
        guardian_cmd: None,
        trace_quiet: false,
        guardian_tls: Default::default(),
        trigger: Trigger::FrameworkInitiated,
        lock_timeout: T,
    }
}

fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    mnemo_bank::txn::walk(root)
        .into_iter()
        .filter(|p| !p.ends_with(".tmp/compress.lock"))
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (rel, std::fs::read(&p).unwrap())
        })
        .collect()
}

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("MNEMO_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with MNEMO_BLESS=1", path.display()));
    assert_eq!(
        actual, want,
        "golden {name} differs (MNEMO_BLESS=1 rewrites)"
    );
}

fn read(bank: &Bank, rel: &str) -> String {
    bank.read(rel).unwrap().unwrap_or_default()
}

fn shared() -> Option<PathBuf> {
    mnemo_testkit::shared_dir()
}

fn copy_dir(from: &Path, to: &Path) {
    for p in mnemo_bank::txn::walk(from) {
        let rel = p.strip_prefix(from).unwrap();
        let dst = to.join(rel);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        // Written, not copied: ../shared is read-only, a bank is not (a
        // read-only bank file is refused by the commit).
        std::fs::write(&dst, std::fs::read(&p).unwrap()).unwrap();
    }
}

fn phase1() -> Vec<Input> {
    [
        "hermes.json",
        "demeter.yaml",
        "aphrodite.md",
        "prometheus.json",
        "partial.json",
    ]
    .iter()
    .map(|n| fixture(n))
    .collect()
}

#[test]
fn golden_formats() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    let created = init_bank(&root).unwrap();
    assert_eq!(created.len(), 4);
    let bank = Bank::new(&root);
    golden("init-01-active-context.md", &read(&bank, ACTIVE_CONTEXT));
    golden("init-xref-index.md", &read(&bank, XREF_INDEX));
    golden("init-next-id.json", &read(&bank, NEXT_ID));
    let config = Config::default();
    let r = ops::gate(
        &bank,
        &config,
        &opts("1", &["hermes", "demeter"], &["aphrodite"]),
        &phase1(),
    )
    .unwrap();
    golden("gate-confirmation.txt", &format!("{}\n", r.confirmation));
    let r2 = ops::gate(
        &bank,
        &config,
        &opts("2", &["aphrodite"], &["themis"]),
        &[fixture("blocked.json"), fixture("aphrodite.md")],
    )
    .unwrap();
    assert_eq!(r2.skipped.len(), 1, "{:?}", r2.skipped);
    assert!(r2.skipped[0].contains("fixtures/blocked.json"));
    golden(
        "ZZ-phase1-context.md",
        &read(&bank, ".tmp/ZZ-phase1-context.md"),
    );
    golden(
        "ZZ-phase2-context.md",
        &read(&bank, ".tmp/ZZ-phase2-context.md"),
    );
    // Phase 3's budget carries phase 2's 20% (2 lines).
    assert!(read(&bank, ".tmp/ZZ-phase2-context.md").contains("- Carried: 2 lines"));
    ops::gate(
        &bank,
        &config,
        &opts("3", &["themis"], &["prometheus"]),
        &[fixture("prometheus.json")],
    )
    .unwrap();
    assert!(read(&bank, ".tmp/ZZ-phase3-context.md").contains("- Allocated: 14 lines"));
    // Phase 2's blocked Themis completes in phase 4: a blocked → unblocked link.
    let r4 = ops::gate(
        &bank,
        &config,
        &opts("4", &["themis"], &["mnemosyne"]),
        &[fixture("themis.json")],
    )
    .unwrap();
    assert!(r4.xrefs_added >= 1, "{}", r4.confirmation);
    let index = read(&bank, XREF_INDEX);
    assert!(
        index.contains("| blocked | P2 Themis blocked | fixtures missing | P2 |"),
        "{index}"
    );
    assert!(
        index.contains(
            "| unblocks | P2 Themis blocked → unblocked by P4 Themis | fixtures missing | P4 |"
        ),
        "{index}"
    );
    assert!(
        read(&bank, PROGRESS_LOG)
            .contains("**Review:** APPROVED — 0 critical issues, coverage 88%")
    );
    // Re-running phase 4 changes no byte.
    let snap = snapshot(&root);
    ops::gate(
        &bank,
        &config,
        &opts("4", &["themis"], &["mnemosyne"]),
        &[fixture("themis.json")],
    )
    .unwrap();
    assert_eq!(snap, snapshot(&root));
    golden("01-active-context.md", &read(&bank, ACTIVE_CONTEXT));
    golden("02-progress-log.md", &read(&bank, PROGRESS_LOG));
    golden("xref-index.md", &read(&bank, XREF_INDEX));
    golden("next-id.json", &read(&bank, NEXT_ID));
    // Provenance survives into the bank entry.
    assert!(
        read(&bank, ACTIVE_CONTEXT)
            .contains("<!-- mnemo:prov origins=user_input derived_from=step-17,step-18 -->")
    );
    let learnings = dir.path().join("learnings");
    std::fs::create_dir_all(learnings.join("auth")).unwrap();
    std::fs::write(
        learnings.join("auth/learnings.md"),
        "- Hash refresh tokens before storage.\n",
    )
    .unwrap();
    let h = ops::handoff(&bank, &learnings, "1", Some("auth"), T).unwrap();
    golden("handoff.md", &h);
    std::fs::write(root.join(".tmp/PLAN-auth.md"), "# Plan: auth\n").unwrap();
    let line = ops::feature_complete(&bank, "auth", "2026-06-21", T).unwrap();
    golden("feature-complete.txt", &format!("{line}\n"));
    golden(
        "01-active-context-after-c4.md",
        &read(&bank, ACTIVE_CONTEXT),
    );
    assert!(!root.join(".tmp/PLAN-auth.md").exists());
    assert!(!root.join(".tmp/ZZ-phase1-context.md").exists());
    // C4 again: nothing changes.
    let before = snapshot(&root);
    ops::feature_complete(&bank, "auth", "2026-06-21", T).unwrap();
    assert_eq!(before, snapshot(&root));
}

#[test]
fn c7_trim_archives_low_entries() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    init_bank(&root).unwrap();
    let bank = Bank::new(&root);
    let mut config = Config::default();
    config.budget.total_lines = 3;
    let inputs: Vec<Input> = ["hermes.json", "prometheus.json", "aphrodite.md"]
        .iter()
        .map(|n| fixture(n))
        .collect();
    let r = ops::gate(
        &bank,
        &config,
        &opts("1", &["hermes"], &["aphrodite"]),
        &inputs,
    )
    .unwrap();
    let log = r.trim.expect("over the cap: trimmed");
    assert!(log.starts_with("C7 trim: removed "), "{log}");
    golden("trim-01-active-context.md", &read(&bank, ACTIVE_CONTEXT));
    golden(
        "trim-archive.md",
        &read(&bank, "_notes/archive/2026-06-compressed-entries.md"),
    );
    golden("trim-log.txt", &format!("{log}\n"));
    // The standalone command has nothing more to do and changes nothing.
    let before = snapshot(&root);
    let line = ops::trim(&bank, &config, "2026-06-20", T).unwrap();
    assert!(line.starts_with("C7 trim: nothing to trim"), "{line}");
    assert_eq!(before, snapshot(&root));
}

/// `mnemo trim` on its own logs what it moved to the archive: one
/// `"kind":"trim"` line after the gate's, in the same commit as the trim;
/// a trim with nothing to do logs nothing.
#[test]
fn c7_alone_appends_a_trim_record_to_the_gate_log() {
    use mnemo_compress::gatelog::{self, GATE_LOG, RecordKind};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    init_bank(&root).unwrap();
    let bank = Bank::new(&root);
    let inputs: Vec<Input> = ["hermes.json", "prometheus.json", "aphrodite.md"]
        .iter()
        .map(|n| fixture(n))
        .collect();
    let r = ops::gate(
        &bank,
        &Config::default(),
        &opts("1", &["hermes"], &["aphrodite"]),
        &inputs,
    )
    .unwrap();
    assert!(r.trim.is_none(), "within the default cap");
    let gate_line = read(&bank, GATE_LOG);
    let mut config = Config::default();
    config.budget.total_lines = 3;
    let line = ops::trim(&bank, &config, "2026-06-20", T).unwrap();
    assert!(line.starts_with("C7 trim: removed "), "{line}");
    let log = read(&bank, GATE_LOG);
    assert!(
        log.starts_with(&gate_line),
        "the gate's line is kept byte for byte"
    );
    let parsed = gatelog::parse(&log);
    assert!(parsed.unreadable.is_empty());
    assert_eq!(parsed.records.len(), 1);
    assert_eq!(parsed.trims.len(), 1);
    let t = &parsed.trims[0];
    assert_eq!(
        (t.seq, t.kind, t.date.as_str()),
        (2, RecordKind::Trim, "2026-06-20")
    );
    assert_eq!(t.c7.log, line);
    assert_eq!(t.c7.archive, "_notes/archive/2026-06-compressed-entries.md");
    assert_eq!(t.c7.cap_half_lines, 6);
    assert!(t.c7.after_half_lines < t.c7.before_half_lines, "{:?}", t.c7);
    let archive = read(&bank, &t.c7.archive);
    assert!(!t.c7.removed.is_empty() || !t.c7.shortened.is_empty());
    for key in t.c7.removed.iter().chain(&t.c7.shortened) {
        assert!(archive.contains(&format!("mnemo:key={key} ")), "{key}");
    }
    for key in &t.c7.removed {
        assert!(!read(&bank, ACTIVE_CONTEXT).contains(&format!("mnemo:key={key} ")));
    }
    // Nothing more to trim: no line, no byte changed.
    let before = snapshot(&root);
    let again = ops::trim(&bank, &config, "2026-06-20", T).unwrap();
    assert!(again.starts_with("C7 trim: nothing to trim"), "{again}");
    assert_eq!(before, snapshot(&root));
}

#[test]
fn real_pantheon_bank_round_trips() {
    let Some(shared) = shared() else { return };
    let src = shared.join("pantheon-fixtures/memory-bank");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory-bank");
    copy_dir(&src, &root);
    let original = snapshot(&root);
    let bank = Bank::new(&root);
    // doctor changes nothing on a healthy bank.
    let d = ops::doctor(&bank, T).unwrap();
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    let mut after_doctor = snapshot(&root);
    after_doctor.retain(|k, _| !k.starts_with(".tmp"));
    assert_eq!(original, after_doctor);
    // A gate: human content byte-identical.
    let config = Config::default();
    ops::gate(
        &bank,
        &config,
        &opts("1", &["hermes", "demeter"], &["aphrodite"]),
        &phase1(),
    )
    .unwrap();
    let after = snapshot(&root);
    for (rel, bytes) in &original {
        let now = &after[rel];
        match rel.as_str() {
            ACTIVE_CONTEXT | PROGRESS_LOG => {
                assert!(now.starts_with(bytes), "{rel}: human bytes changed");
                assert!(now.len() > bytes.len());
            }
            XREF_INDEX => {
                let keep = |b: &[u8]| -> Vec<String> {
                    String::from_utf8(b.to_vec())
                        .unwrap()
                        .lines()
                        .filter(|l| !l.starts_with('|'))
                        .map(str::to_string)
                        .collect()
                };
                assert_eq!(keep(bytes), keep(now), "{rel}: text outside tables changed");
            }
            NEXT_ID => {
                let v: serde_json::Value = serde_json::from_slice(now).unwrap();
                for k in ["decisions", "entities", "milestones", "tasks"] {
                    assert!(v.get(k).is_some(), "legacy key {k} lost");
                }
            }
            _ => assert_eq!(bytes, now, "{rel} must not change"),
        }
    }
    let active = String::from_utf8(after[ACTIVE_CONTEXT].clone()).unwrap();
    assert_eq!(active.matches("## Completed Phases").count(), 1);
    // Idempotent on the real bank.
    ops::gate(
        &bank,
        &config,
        &opts("1", &["hermes", "demeter"], &["aphrodite"]),
        &phase1(),
    )
    .unwrap();
    assert_eq!(after, snapshot(&root));
}

#[test]
fn opencode_adrs_are_never_touched() {
    let Some(shared) = shared() else { return };
    let src = shared.join("pantheon-fixtures/memory-bank-opencode");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    copy_dir(&src, &root);
    let bank = Bank::new(&root);
    std::fs::create_dir_all(root.join(".tmp")).unwrap();
    std::fs::write(root.join(".tmp/ADR-0009-draft.md"), "# ADR draft\n").unwrap();
    std::fs::write(root.join(".tmp/notes.bin"), "???").unwrap();
    std::fs::write(
        root.join(".tmp/IMPL-login.md"),
        "# IMPL login\n\nThemis: APPROVED\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".tmp/DISC-old.md"),
        "# DISC\n\nDecision: DISCARD\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".tmp/DISC-open.md"),
        "# DISC\n\nDecision: REQUEST CHANGES\n",
    )
    .unwrap();
    let before = snapshot(&root);
    ops::gate(
        &bank,
        &Config::default(),
        &opts("1", &["hermes"], &["aphrodite"]),
        &[fixture("hermes.json")],
    )
    .unwrap();
    let (line, flags) = ops::sprint_close(&bank, "2026-06-30", T).unwrap();
    assert!(
        line.starts_with("Sprint close: 1 artifacts archived, 2 deleted"),
        "{line}"
    );
    let after = snapshot(&root);
    for (rel, bytes) in &before {
        if rel.starts_with("adr/") || rel.contains("ADR-") {
            assert_eq!(Some(bytes), after.get(rel), "{rel} touched");
        }
    }
    assert!(
        after.contains_key(".tmp/notes.bin"),
        "foreign file left in place"
    );
    assert!(after.contains_key(".tmp/DISC-open.md"));
    assert!(!after.contains_key(".tmp/DISC-old.md"));
    assert!(!after.contains_key(".tmp/IMPL-login.md"));
    assert!(flags.iter().any(|f| f.contains("notes.bin")), "{flags:?}");
    assert!(flags.iter().any(|f| f.contains("DISC-open")), "{flags:?}");
    assert!(flags.iter().any(|f| f.contains("ADR-0009")), "{flags:?}");
    assert!(after.contains_key("_notes/archive/2026-06-30-xref-index.md"));
    let d = ops::doctor(&bank, T).unwrap();
    assert_eq!(d.foreign, vec![".tmp/notes.bin".to_string()]);
}

#[test]
fn guardian_deny_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    init_bank(&root).unwrap();
    let bank = Bank::new(&root);
    let before = snapshot(&root);
    let err = ops::gate(
        &bank,
        &Config::default(),
        &opts("1", &["hermes"], &["aphrodite"]),
        &[fixture("hermes.json"), fixture("tainted.json")],
    )
    .unwrap_err();
    assert!(matches!(err, BankError::Denied { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("denied by the Guardian"), "{msg}");
    assert!(msg.contains("nothing was written"), "{msg}");
    assert_eq!(before, snapshot(&root));
    // A manual compaction (the operator's override) is allowed.
    let mut o = opts("1", &["hermes"], &["aphrodite"]);
    o.trigger = Trigger::Manual;
    ops::gate(&bank, &Config::default(), &o, &[fixture("tainted.json")]).unwrap();
    assert!(read(&bank, ACTIVE_CONTEXT).contains("origins=retrieved derived_from=step-3"));
}

#[test]
fn secrets_never_reach_the_bank() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    init_bank(&root).unwrap();
    let bank = Bank::new(&root);
    ops::gate(
        &bank,
        &Config::default(),
        &opts("1", &["hermes"], &["aphrodite"]),
        &[fixture("secret.json")],
    )
    .unwrap();
    for (rel, bytes) in snapshot(&root) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("ghp_abcdef"), "{rel} holds the secret");
    }
    assert!(read(&bank, PROGRESS_LOG).contains("[REDACTED:github-pat]"));
}

#[test]
fn malformed_banks_get_clear_reports_and_no_damage() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    init_bank(&root).unwrap();
    let bank = Bank::new(&root);
    // Broken _next_id.json: the gate names the file and writes nothing.
    std::fs::write(root.join(NEXT_ID), "{\"E\": \"x\"").unwrap();
    let before = snapshot(&root);
    let err = ops::gate(
        &bank,
        &Config::default(),
        &opts("1", &["hermes"], &["aphrodite"]),
        &[fixture("hermes.json")],
    )
    .unwrap_err();
    assert!(err.to_string().contains("_next_id.json"), "{err}");
    assert_eq!(before, snapshot(&root));
    let d = ops::doctor(&bank, T).unwrap();
    assert!(
        d.problems.iter().any(|p| p.contains("_next_id.json")),
        "{:?}",
        d.problems
    );
    std::fs::write(root.join(NEXT_ID), "{\"E\": 1}\n").unwrap();
    // Broken tables: an id that is not an id, a duplicate, too many cells.
    let index = "# Cross-Reference Index\n\n## By Entity\n| Entity ID | Type | Name | Location | Phase | Agent |\n|---|---|---|---|---|---|\n| E0001 | endpoint | GET /a | a.py | P1 | Hermes |\n| E0001 | endpoint | GET /b | b.py | P1 | Hermes |\n| X12 | endpoint | GET /c | c.py | P1 | Hermes |\n| E0002 | endpoint | GET /d | d.py | P1 | Hermes | extra | more |\n";
    std::fs::write(root.join(XREF_INDEX), index).unwrap();
    // Missing section: no `## Completed Phases`, hand-written text only.
    std::fs::write(
        root.join(ACTIVE_CONTEXT),
        "# Active Context\n\nHand text, no newline",
    )
    .unwrap();
    // Foreign files in .tmp/.
    std::fs::write(root.join(".tmp/random.txt"), "hello").unwrap();
    let before = snapshot(&root);
    let d = ops::doctor(&bank, T).unwrap();
    let all = d.problems.join("\n");
    assert!(
        all.contains("_xref/index.md:7: id E0001 is also used on line 6"),
        "{all}"
    );
    assert!(all.contains("_xref/index.md:8:"), "{all}");
    assert!(
        all.contains("_xref/index.md:9: table row has 8 cells"),
        "{all}"
    );
    assert_eq!(d.foreign, vec![".tmp/random.txt".to_string()]);
    assert_eq!(before, snapshot(&root), "doctor damaged the bank");
    // A gate on it still works, keeps the hand text and the foreign file.
    ops::gate(
        &bank,
        &Config::default(),
        &opts("1", &["hermes"], &["aphrodite"]),
        &[fixture("hermes.json")],
    )
    .unwrap();
    let active = read(&bank, ACTIVE_CONTEXT);
    assert!(
        active.starts_with(
            "# Active Context\n\nHand text, no newline\n\n## Completed Phases\n\n- **"
        )
    );
    assert!(root.join(".tmp/random.txt").exists());
    // A bad summary names the file and the line; nothing is written.
    let before = snapshot(&root);
    let err = ops::gate(
        &bank,
        &Config::default(),
        &opts("1", &["hermes"], &["aphrodite"]),
        &[Input {
            name: "bad.json".into(),
            text: "{\n  \"summary\": 12,\n".into(),
        }],
    )
    .unwrap_err();
    assert!(err.to_string().starts_with("bad.json:"), "{err}");
    assert_eq!(before, snapshot(&root));
    // A phase that is not a file-name label: refused before anything.
    let mut o = opts("../x", &["hermes"], &["aphrodite"]);
    let err = ops::gate(&bank, &Config::default(), &o, &[fixture("hermes.json")]).unwrap_err();
    assert!(err.to_string().contains("cannot name a file"), "{err}");
    o.phase = "1".into();
    o.feature = Some("../up".into());
    assert!(ops::gate(&bank, &Config::default(), &o, &[fixture("hermes.json")]).is_err());
    assert_eq!(before, snapshot(&root));
    assert_eq!(before, snapshot(&root));
}

#[test]
fn compress_c6_consumes_tmp_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    init_bank(&root).unwrap();
    let bank = Bank::new(&root);
    std::fs::write(
        root.join(".tmp/subtask-hermes.json"),
        fixture("hermes.json").text,
    )
    .unwrap();
    std::fs::write(
        root.join(".tmp/subtask-themis.json"),
        fixture("blocked.json").text,
    )
    .unwrap();
    let mut o = opts("3", &[], &["themis"]);
    o.trigger = Trigger::Manual;
    let (r, _) = ops::compress(&bank, &Config::default(), &o, &[]).unwrap();
    assert_eq!(r.entries, 1);
    assert!(!root.join(".tmp/subtask-hermes.json").exists());
    assert!(
        root.join(".tmp/subtask-themis.json").exists(),
        "skipped one stays"
    );
}

#[test]
fn same_key_new_content_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    init_bank(&root).unwrap();
    let bank = Bank::new(&root);
    let o = opts("1", &["hermes"], &["aphrodite"]);
    ops::gate(&bank, &Config::default(), &o, &[fixture("hermes.json")]).unwrap();
    let mut changed = fixture("hermes.json");
    changed.text = changed.text.replace("15 min", "30 min");
    ops::gate(&bank, &Config::default(), &o, &[changed]).unwrap();
    let active = read(&bank, ACTIVE_CONTEXT);
    assert_eq!(active.matches("mnemo:key=2026-06-20|1|hermes").count(), 1);
    assert!(active.contains("30 min") || !active.contains("15 min"));
}

fn words() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("auth"),
            Just("endpoint"),
            Just("POST /api/items"),
            Just("table"),
            Just("migration"),
            Just("refactor"),
            Just("docs"),
            Just("fixed"),
            Just("`user_id`"),
            Just("component"),
            Just("Note:"),
            Just("security"),
            Just("|"),
            Just("<!--"),
        ],
        1..12,
    )
    .prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    /// Re-running a gate on the same input leaves every byte unchanged.
    #[test]
    fn gate_is_idempotent(
        recs in proptest::collection::vec((words(), 0usize..6, prop::bool::ANY), 1..5),
        human in "[a-zA-Z #\n]{0,80}",
    ) {
        let roster = ["hermes", "demeter", "aphrodite", "themis", "prometheus", "hephaestus"];
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("bank");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join(ACTIVE_CONTEXT), format!("# Active Context\n{human}")).unwrap();
        let bank = Bank::new(&root);
        let inputs: Vec<Input> = recs.iter().enumerate().map(|(i, (summary, nfiles, partial))| {
            let files: Vec<String> = (0..*nfiles).map(|k| format!("src/f{k}.rs")).collect();
            let v = serde_json::json!({
                "agent": roster[i % roster.len()],
                "summary": summary,
                "files_changed": files,
                "status": if *partial { "partial" } else { "complete" },
            });
            Input { name: format!("s{i}.json"), text: v.to_string() }
        }).collect();
        let o = opts("2", &["hermes"], &["aphrodite"]);
        ops::gate(&bank, &Config::default(), &o, &inputs).unwrap();
        let first = snapshot(&root);
        let head = format!("# Active Context\n{}", human);
        prop_assert!(String::from_utf8_lossy(&first[ACTIVE_CONTEXT]).starts_with(&head));
        ops::gate(&bank, &Config::default(), &o, &inputs).unwrap();
        prop_assert_eq!(first, snapshot(&root));
    }
}

#[test]
fn other_tmp_files_are_kept_and_bad_journals_explained() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bank");
    init_bank(&root).unwrap();
    let bank = Bank::new(&root);
    // People's *.tmp files, old and new, anywhere in the bank: kept.
    std::fs::create_dir_all(root.join("_tasks/drafts")).unwrap();
    let people = [
        ".tmp/draft.md.tmp",
        "_tasks/drafts/sprint-12.tmp",
        "ideas.tmp",
        // Look-alikes of mnemo's pattern that are not it.
        ".notes.mnemo-stage-1-2.tmp",
        ".x.mnemo-stage-1-2-3.tmp.bak.tmp",
        "x.mnemo-stage-1-2-3.tmp",
        ".x.mnemo-backup-a-2-3.tmp",
    ];
    for rel in people {
        let p = root.join(rel);
        std::fs::write(&p, "mine").unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
    }
    // mnemo's own orphans: removed.
    std::fs::write(
        root.join(".01-active-context.md.mnemo-stage-12-345-0.tmp"),
        "# x\n",
    )
    .unwrap();
    std::fs::write(
        root.join("_xref/.index.md.mnemo-backup-12-345-1.tmp"),
        "# x\n",
    )
    .unwrap();
    let d = ops::doctor(&bank, T).unwrap();
    assert_eq!(d.recovery.rolled_back, 2);
    let mut expected: Vec<String> = people.iter().map(|s| s.to_string()).collect();
    expected.sort();
    let mut got = d.recovery.other_tmp.clone();
    got.sort();
    assert_eq!(got, expected);
    for rel in people {
        assert_eq!(
            std::fs::read_to_string(root.join(rel)).unwrap(),
            "mine",
            "{rel}"
        );
    }
    assert!(
        !root
            .join(".01-active-context.md.mnemo-stage-12-345-0.tmp")
            .exists()
    );
    assert!(
        !root
            .join("_xref/.index.md.mnemo-backup-12-345-1.tmp")
            .exists()
    );
    // A gate keeps them too.
    ops::gate(
        &bank,
        &Config::default(),
        &opts("1", &["hermes"], &["aphrodite"]),
        &[fixture("hermes.json")],
    )
    .unwrap();
    for rel in people {
        assert_eq!(
            std::fs::read_to_string(root.join(rel)).unwrap(),
            "mine",
            "{rel}"
        );
    }
    // An unreadable journal stops every command, naming the file; doctor
    // reports it as a problem with what to do.
    std::fs::write(root.join(".tmp/journal.json"), "{not json").unwrap();
    let before = snapshot(&root);
    let d = ops::doctor(&bank, T).unwrap();
    assert_eq!(d.problems.len(), 1, "{:?}", d.problems);
    assert!(d.problems[0].contains("journal.json"), "{:?}", d.problems);
    assert!(d.problems[0].contains("hint: "), "{:?}", d.problems);
    let err = ops::gate(
        &bank,
        &Config::default(),
        &opts("2", &["hermes"], &["aphrodite"]),
        &[fixture("hermes.json")],
    )
    .unwrap_err();
    assert!(err.to_string().contains("journal.json"), "{err}");
    assert!(err.hint().is_some());
    assert_eq!(before, snapshot(&root));
}

/// A person's note under an entry of `## Completed Phases` survives a
/// re-gate of that entry with new text (issue #13, item 2), in LF and CRLF
/// files alike, and a CRLF file gets CRLF for mnemo's rows.
#[test]
fn notes_under_an_entry_survive_a_regate() {
    for crlf in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("bank");
        init_bank(&root).unwrap();
        let bank = Bank::new(&root);
        let eol = if crlf { "\r\n" } else { "\n" };
        let human = [
            "# Active Context",
            "",
            "> Hand-written.",
            "",
            "## Completed Phases",
            "",
        ]
        .join(eol)
            + eol;
        std::fs::write(root.join(ACTIVE_CONTEXT), &human).unwrap();
        let o = opts("1", &["hermes"], &["aphrodite"]);
        ops::gate(&bank, &Config::default(), &o, &[fixture("hermes.json")]).unwrap();
        let active = read(&bank, ACTIVE_CONTEXT);
        if crlf {
            assert_eq!(
                active.matches('\n').count(),
                active.matches("\r\n").count(),
                "mnemo's rows in a CRLF file are CRLF: {active:?}"
            );
        }
        // A person writes notes under the entry (indented, and one flush
        // line after it).
        let first = active
            .split_inclusive('\n')
            .position(|l| l.contains("mnemo:key=2026-06-20|1|hermes"))
            .unwrap();
        let mut lines: Vec<String> = active.split_inclusive('\n').map(str::to_string).collect();
        let entry_end = lines[first + 1..]
            .iter()
            .position(|l| !l.starts_with("  "))
            .map_or(lines.len(), |p| first + 1 + p);
        let note = format!("  - Note (Ana): check the refresh flow with legal{eol}");
        let note2 = format!("    sub-note, keep me{eol}");
        lines.insert(entry_end, note2.clone());
        lines.insert(entry_end, note.clone());
        let edited: String = lines.concat();
        std::fs::write(root.join(ACTIVE_CONTEXT), &edited).unwrap();
        // Re-gated with new text: the entry changes, the notes stay.
        let mut changed = fixture("hermes.json");
        changed.text = changed.text.replace("JWT rotation", "JWT key rotation");
        ops::gate(&bank, &Config::default(), &o, &[changed]).unwrap();
        let after = read(&bank, ACTIVE_CONTEXT);
        assert_ne!(after, edited, "the entry was re-gated");
        assert!(after.contains("JWT key rotation"), "{after}");
        assert!(after.contains(&format!("{note}{note2}")), "{after:?}");
        assert_eq!(after.matches("Note (Ana)").count(), 1);
        assert!(after.starts_with(&human));
        if crlf {
            assert_eq!(after.matches('\n').count(), after.matches("\r\n").count());
        }
        // Idempotent: the same gate again changes nothing.
        let snap = snapshot(&root);
        let mut again = fixture("hermes.json");
        again.text = again.text.replace("JWT rotation", "JWT key rotation");
        ops::gate(&bank, &Config::default(), &o, &[again]).unwrap();
        assert_eq!(snap, snapshot(&root));
    }
}
