//! Property tests of the summary parsers: no input makes them panic, and what
//! a person writes in any of the three formats reads back the same.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_model::{Format, Status, parse_records};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        for format in [Format::Markdown, Format::Json, Format::Yaml] {
            if let Ok(records) = parse_records(&text, "fuzz", format) {
                prop_assert!(!records.is_empty());
            }
        }
        let _ = Format::detect(&text, None);
    }

    #[test]
    fn structured_noise_never_panics(
        lines in prop::collection::vec(
            prop_oneof![
                Just("## subtask_summary".to_string()),
                Just("```".to_string()),
                "\\*\\*[a-z_ ]{0,12}:\\*\\* [ -~]{0,30}",
                "- [ -~]{0,20}",
                "[ -~]{0,40}",
                "#{1,7} [a-z]{0,10}",
            ],
            0..30,
        )
    ) {
        let text = lines.join("\n");
        let _ = parse_records(&text, "fuzz", Format::Markdown);
        let _ = parse_records(&text, "fuzz", Format::Yaml);
    }

    #[test]
    fn the_same_record_reads_the_same_in_every_format(
        agent in "[a-z]{3,10}",
        summary in "[A-Za-z][A-Za-z0-9 ,./()-]{0,60}[a-z0-9.]",
        files in prop::collection::vec("[a-z]{1,8}/[a-z_]{1,10}\\.(py|rs|ts)", 0..6),
        status in prop::sample::select(vec!["complete", "partial", "escalated", "in_progress", "blocked"]),
        issues in 0u32..20,
    ) {
        let md = format!(
            "## subtask_summary\n**agent:** {agent}\n**files_changed:**\n{}\n**summary:** {summary}\n**status:** {status}\n**critical_issues:** {issues}\n",
            files.iter().map(|f| format!("- {f}")).collect::<Vec<_>>().join("\n")
        );
        let json = serde_json::json!({
            "agent": agent, "files_changed": files, "summary": summary,
            "status": status, "critical_issues": issues,
        }).to_string();
        let yaml = format!(
            "agent: {agent}\nfiles_changed: [{}]\nsummary: \"{summary}\"\nstatus: {status}\ncritical_issues: {issues}\n",
            files.join(", ")
        );
        let a = parse_records(&md, "a.md", Format::Markdown).unwrap();
        let b = parse_records(&json, "b.json", Format::Json).unwrap();
        let c = parse_records(&yaml, "c.yaml", Format::Yaml).unwrap();
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(&b, &c);
        prop_assert_eq!(a[0].files_changed.clone(), files);
        prop_assert_eq!(a[0].summary.clone(), summary);
        prop_assert_eq!(a[0].status.map(Status::as_str), Some(status));
        prop_assert_eq!(a[0].critical_issues, Some(issues));
    }
}

#[test]
fn pantheon_artifacts_parse() {
    let Some(root) = mnemo_testkit::shared("pantheon-fixtures") else {
        return;
    };
    for name in ["subtask-demeter.json", "subtask-hermes.json"] {
        let text = std::fs::read_to_string(root.join("artifacts").join(name)).unwrap();
        let recs = parse_records(&text, name, Format::Json).unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].status, Some(Status::Complete));
        assert!(recs[0].blockers.is_empty());
        assert_eq!(recs[0].files_changed.len(), 2);
        assert!(recs[0].dropped.is_empty(), "{:?}", recs[0].dropped);
    }
    // The agent-return template reads as one block; every field it names
    // (`tokens` included) is metadata, so nothing is dropped.
    let template =
        std::fs::read_to_string(root.join("spec-examples/subtask_summary.template.md")).unwrap();
    let recs = parse_records(&template, "template.md", Format::Markdown).unwrap();
    assert_eq!(recs.len(), 1);
    assert!(recs[0].dropped.is_empty(), "{:?}", recs[0].dropped);
    assert_eq!(recs[0].summary, "What was done, in 2-3 sentences");
}
