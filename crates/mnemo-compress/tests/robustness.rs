#![allow(clippy::unwrap_used, clippy::expect_used)]
//! No panics on any input, and byte-stable rendering.

use mnemo_compress::budget::Mode;
use mnemo_compress::facts::extract;
use mnemo_compress::render::parse_marker;
use mnemo_compress::summary::{DeterministicSummarizer, LINE_CAP, SummaryRequest};
use mnemo_compress::xref::{NextIds, parse_index};
use mnemo_model::{Config, SummaryRecord};
use mnemo_score::Band;
use proptest::prelude::*;

/// Text made of the pieces the extractor looks for, glued at random.
fn techy() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("POST ".to_string()),
        Just("/api/v1/".to_string()),
        Just("`".to_string()),
        Just("table ".to_string()),
        Just("columns ".to_string()),
        Just("CREATE TABLE ".to_string()),
        Just("401".to_string()),
        Just("{a, b}".to_string()),
        Just("FK to ".to_string()),
        Just("ENV_VAR".to_string()),
        Just("x.y.rs".to_string()),
        Just(". ".to_string()),
        Just("\n".to_string()),
        Just("é".to_string()),
        Just("|".to_string()),
        Just("Note: ".to_string()),
        "[a-z_]{0,8}",
        "\\PC{0,6}",
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn extractor_and_summarizer_never_panic(text in techy(), files in prop::collection::vec("[a-z/._]{0,12}", 0..4)) {
        let f = extract(&text, &files);
        for fact in &f.facts {
            prop_assert!(!fact.text.is_empty());
        }
        let config = Config::default();
        let s = DeterministicSummarizer::new(&config);
        let r = SummaryRecord { summary: text.clone(), files_changed: files, ..SummaryRecord::default() };
        for (band, mode) in [(Band::Critical, Mode::Expanded), (Band::High, Mode::Expanded), (Band::High, Mode::Standard), (Band::Medium, Mode::Standard), (Band::Low, Mode::Aggressive)] {
            let sum = s.build(&SummaryRequest { record: &r, band, mode, from: "hermes", to: Some("aphrodite") });
            for l in sum.lines() {
                prop_assert!(l.chars().count() <= LINE_CAP);
                prop_assert!(!l.contains('\n'));
            }
            // Deterministic.
            prop_assert_eq!(&sum, &s.build(&SummaryRequest { record: &r, band, mode, from: "hermes", to: Some("aphrodite") }));
        }
    }

    #[test]
    fn index_render_is_a_fixed_point(text in "(## By Entity\n|## By Feature\n|## Decision Links\n|\\| E0001 \\| endpoint \\| x \\|\n|\\|---\\|\n|[a-z |_()-]{0,12}\n|\n){0,12}") {
        let once = parse_index(&text).render();
        prop_assert_eq!(parse_index(&once).render(), once.clone());
        let mut ids = NextIds::default();
        ids.observe(&parse_index(&once));
    }

    #[test]
    fn marker_parser_never_panics(s in "\\PC{0,80}") {
        let _ = parse_marker(&s);
        let _ = NextIds::parse(&s);
    }
}
