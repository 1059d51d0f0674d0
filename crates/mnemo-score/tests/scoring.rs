//! The scoring engine against the seed's §3 tables and SPEC §2's decisions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_model::{Config, Hundredths, Matching};
use mnemo_score::{Band, Engine, ScoreInput};
use proptest::prelude::*;

/// The seed's keyword table, typed in independently of the default config.
const SEED_TABLE: &[(&str, u16, u16, u16)] = &[
    ("schema", 100, 100, 60),
    ("migration", 100, 100, 40),
    ("auth", 100, 100, 50),
    ("login", 100, 100, 40),
    ("permission", 80, 100, 50),
    ("role", 80, 80, 40),
    ("JWT", 80, 100, 40),
    ("OAuth", 80, 100, 50),
    ("password", 70, 100, 30),
    ("encrypt", 70, 100, 50),
    ("token", 70, 80, 30),
    ("security", 80, 100, 40),
    ("new table", 100, 80, 90),
    ("new column", 70, 80, 60),
    ("index", 50, 60, 30),
    ("foreign key", 80, 90, 50),
    ("constraint", 60, 70, 30),
    ("endpoint", 90, 60, 50),
    ("route", 80, 50, 40),
    ("API", 80, 50, 40),
    ("service", 70, 40, 40),
    ("new file", 60, 30, 80),
    ("refactor", 50, 70, 60),
    ("rename", 40, 60, 30),
    ("delete", 50, 70, 20),
    ("deprecat", 40, 40, 30),
    ("config", 50, 60, 30),
    ("Docker", 70, 60, 30),
    ("deploy", 80, 80, 20),
    ("CSS", 20, 10, 20),
    ("style", 20, 10, 20),
    ("typo", 0, 0, 0),
    ("comment", 10, 0, 0),
    ("README", 20, 0, 10),
    ("docstring", 20, 0, 10),
];

fn engine() -> Engine {
    Engine::new(&Config::default()).unwrap()
}

fn h(n: u16) -> Hundredths {
    Hundredths::new(n).unwrap()
}

#[test]
fn every_keyword_row_of_the_seed() {
    for matching in [Matching::WordStart, Matching::Substring] {
        let e = Engine::with_matching(&Config::default(), matching).unwrap();
        assert_eq!(e.keywords().len(), SEED_TABLE.len());
        for &(kw, impact, risk, novelty) in SEED_TABLE {
            // Upper-cased and embedded in a sentence: matching is case-insensitive.
            let text = format!("We worked on the {} today", kw.to_uppercase());
            let s = e.score(&ScoreInput {
                text: &text,
                ..Default::default()
            });
            let found: Vec<&str> = s
                .keywords
                .iter()
                .map(|&i| e.keywords()[i].keyword.as_str())
                .collect();
            if matching == Matching::Substring {
                // Plain substrings also find keywords inside others ("OAuth"
                // contains "auth"), as Pantheon's script does.
                assert!(found.contains(&kw), "{text:?} ({matching:?})");
                continue;
            }
            assert_eq!(found, [kw], "{text:?} ({matching:?})");
            assert_eq!(
                (s.impact, s.risk, s.novelty),
                (h(impact), h(risk), h(novelty)),
                "row {kw}"
            );
            assert_eq!(s.downstream, h(50), "unknown pair → 0.5");
            let want =
                u32::from(impact) * 30 + u32::from(risk) * 25 + u32::from(novelty) * 20 + 50 * 10;
            assert_eq!(s.total.ten_thousandths(), want, "row {kw}");
        }
    }
}

#[test]
fn the_seed_example_scores_0_74_high_not_0_71() {
    let e = engine();
    let s = e.score(&ScoreInput {
        text: "Added JWT auth endpoint with refresh token rotation",
        files: 2,
        from: Some("Hermes"),
        to: Some("Aphrodite"),
        ..Default::default()
    });
    assert_eq!(s.total.to_string(), "0.74");
    assert_eq!(s.band, Band::High);
    assert_eq!((s.impact, s.risk, s.novelty), (h(100), h(100), h(50)));
    assert_eq!((s.blockers, s.downstream), (h(0), h(90)));
    let explain = e.explain(&s);
    let names: Vec<&str> = explain.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        names,
        ["impact", "risk", "novelty", "blockers", "downstream"]
    );
    assert_eq!(explain[0].1, "keyword \"auth\" (auth/security)");
    assert_eq!(explain[4].1, "relevance table hermes -> aphrodite");
}

/// Dimension sets whose exact weighted sum is a band boundary but whose naive
/// floating-point sum (0.30·i + 0.25·r + 0.20·n + 0.15·b + 0.10·d) lands just
/// below it.
const FLOAT_BELOW: &[([u16; 5], u32)] = &[
    ([50, 90, 100, 50, 100], 7500),
    ([60, 90, 100, 50, 70], 7500),
    ([70, 70, 100, 50, 90], 7500),
    ([20, 60, 60, 80, 50], 5000),
    ([50, 80, 50, 0, 50], 5000),
    ([60, 60, 0, 80, 50], 5000),
    ([0, 10, 60, 50, 30], 2500),
    ([20, 10, 30, 50, 30], 2500),
    ([40, 10, 0, 50, 30], 2500),
];

#[test]
fn band_boundaries_are_exact_where_floating_point_falls_short() {
    let e = engine();
    for &(dims, boundary) in FLOAT_BELOW {
        let naive = f64::from(dims[0]) / 100.0 * 0.30
            + f64::from(dims[1]) / 100.0 * 0.25
            + f64::from(dims[2]) / 100.0 * 0.20
            + f64::from(dims[3]) / 100.0 * 0.15
            + f64::from(dims[4]) / 100.0 * 0.10;
        assert!(
            naive < f64::from(boundary) / 10_000.0,
            "{dims:?} is not a float trap"
        );
        let total = e.weighted(dims.map(h));
        assert_eq!(total.ten_thousandths(), boundary);
        let want = match boundary {
            7500 => Band::Critical,
            5000 => Band::High,
            _ => Band::Medium,
        };
        assert_eq!(e.band(total), want, "{dims:?}");
    }
}

#[test]
fn just_below_each_boundary_is_the_lower_band() {
    let e = engine();
    // 0.7499 is not CRITICAL: one ten-thousandth below each threshold.
    let w = e.weighted([h(50), h(90), h(100), h(50), h(100)]);
    assert_eq!(w.ten_thousandths(), 7500);
    let t = |n: u32| {
        // Build totals through dimensions that add up to n - 10 (0.001 below):
        // downstream one hundredth lower removes exactly 0.0010.
        n - 10
    };
    for (boundary, lower) in [(7500, Band::High), (5000, Band::Medium), (2500, Band::Low)] {
        let dims = FLOAT_BELOW
            .iter()
            .find(|(_, b)| *b == boundary)
            .map(|(d, _)| *d)
            .unwrap();
        let mut lowered = dims;
        lowered[4] -= 1;
        let total = e.weighted(lowered.map(h));
        assert_eq!(total.ten_thousandths(), t(boundary));
        assert_eq!(e.band(total), lower);
    }
}

#[test]
fn a_boundary_score_end_to_end_through_a_custom_keyword() {
    // A team's own keyword lands a summary exactly on 0.75.
    let config = Config::from_toml_str(
        "[[scoring.keywords]]\nkeyword = \"ledger\"\nimpact = 0.5\nrisk = 0.9\nnovelty = 1.0\n",
        "mnemo.toml",
    )
    .unwrap();
    let e = Engine::new(&config).unwrap();
    let s = e.score(&ScoreInput {
        text: "Rewrote the ledger; blocked on the bank feed",
        from: Some("hermes"),
        to: Some("hermes"),
        ..Default::default()
    });
    assert_eq!(s.total.ten_thousandths(), 7500);
    assert_eq!(s.band, Band::Critical);
    assert_eq!(s.total.to_string(), "0.75");
}

#[test]
fn downstream_table_and_defaults() {
    let e = engine();
    let d = |from: Option<&str>, to: Option<&str>| e.downstream(from, to).0.get();
    assert_eq!(d(Some("hermes"), Some("aphrodite")), 90);
    assert_eq!(d(Some(" Hermes "), Some("THEMIS")), 70);
    assert_eq!(d(Some("themis"), Some("mnemosyne")), 50);
    assert_eq!(d(Some("mnemosyne"), Some("mnemosyne")), 100);
    assert_eq!(d(Some("apollo"), Some("hermes")), 50);
    assert_eq!(d(Some("hermes"), None), 50);
    assert_eq!(d(None, Some("hermes")), 50);
}

#[test]
fn word_start_never_matches_inside_a_word() {
    let e = engine();
    for text in [
        "subroute",
        "reauthorise",
        "prerole",
        "unindexed",
        "hyperservice",
    ] {
        let s = e.score(&ScoreInput {
            text,
            ..Default::default()
        });
        assert!(s.keywords.is_empty(), "{text:?} matched {:?}", s.keywords);
    }
    for text in [
        "authorization",
        "Roles",
        "indexes",
        "deprecated",
        "deployment",
        "APIs",
    ] {
        let s = e.score(&ScoreInput {
            text,
            ..Default::default()
        });
        assert_eq!(s.keywords.len(), 1, "{text:?}");
    }
}

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(
            SEED_TABLE
                .iter()
                .map(|r| r.0.to_string())
                .collect::<Vec<_>>()
        ),
        "[a-zA-Z]{1,10}",
        Just("blocked".to_string()),
        Just("unblocked".to_string()),
        "[ \t\n,.;:!?-]{1,3}",
        any::<String>(),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..20).prop_map(|v| v.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn score_is_always_within_zero_and_one(
        t in text(),
        files in 0usize..30,
        unblocks: bool,
        has_blockers: bool,
        from in prop::option::of("[a-z]{0,10}"),
        to in prop::option::of("hermes|themis|zeus|"),
    ) {
        for e in [engine(), Engine::with_matching(&Config::default(), Matching::Substring).unwrap()] {
            let s = e.score(&ScoreInput { text: &t, files, from: from.as_deref(), to: to.as_deref(), unblocks, has_blockers });
            prop_assert!(s.total.ten_thousandths() <= 10_000);
            for d in [s.impact, s.risk, s.novelty, s.blockers, s.downstream] {
                prop_assert!(d.get() <= 100);
            }
            prop_assert_eq!(s.band, e.band(s.total));
            // The total is the weighted sum of the dimensions (unless empty).
            if !t.trim().is_empty() {
                prop_assert_eq!(s.total, e.weighted([s.impact, s.risk, s.novelty, s.blockers, s.downstream]));
            }
        }
    }

    #[test]
    fn adding_a_keyword_never_lowers_a_dimension(t in text(), row in 0..SEED_TABLE.len(), files in 0usize..15) {
        let e = engine();
        let before = e.score(&ScoreInput { text: &t, files, ..Default::default() });
        let more = format!("{t} {}", SEED_TABLE[row].0);
        let after = e.score(&ScoreInput { text: &more, files, ..Default::default() });
        prop_assert!(after.impact >= before.impact);
        prop_assert!(after.risk >= before.risk);
        prop_assert!(after.novelty >= before.novelty);
        prop_assert!(after.blockers >= before.blockers);
        prop_assert!(after.total >= before.total || t.trim().is_empty());
        let index = e.keywords().iter().position(|k| k.keyword == SEED_TABLE[row].0).unwrap();
        prop_assert!(after.keywords.contains(&index));
    }

    #[test]
    fn more_files_never_lower_novelty(t in text(), files in 0usize..20, extra in 0usize..20) {
        let e = engine();
        let a = e.score(&ScoreInput { text: &t, files, ..Default::default() });
        let b = e.score(&ScoreInput { text: &t, files: files + extra, ..Default::default() });
        prop_assert!(b.novelty >= a.novelty);
    }
}
