#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Budget allocation: the seed's worked example, the guardrails, and
//! properties that must hold for every input.

use mnemo_compress::budget::{
    AllocItem, BudgetFlag, BudgetParams, HalfLines, Mode, allocate, allocate_phase,
};
use mnemo_model::Config;
use mnemo_score::Band;
use proptest::prelude::*;

fn params() -> BudgetParams {
    BudgetParams::from_config(&Config::default().budget, None)
}

fn item(score: u32, band: Band) -> AllocItem {
    AllocItem {
        score,
        band,
        partial: false,
    }
}

/// Seed §6: phase 1 uses 4 of 12 lines; floor(8 × 0.20) = 1 line carries
/// over, so phase 2 has 13 lines; its HIGH entry D is expanded.
#[test]
fn seed_worked_example() {
    let phases = vec![
        (
            "1".to_string(),
            vec![item(8200, Band::Critical), item(4500, Band::Medium)],
        ),
        (
            "2".to_string(),
            vec![
                item(9100, Band::Critical),
                item(6700, Band::High),
                item(2100, Band::Low),
            ],
        ),
    ];
    let a = allocate(&params(), HalfLines(0), &phases);
    let p1 = &a.phases[0];
    assert_eq!(p1.allocated, HalfLines::lines(12));
    assert_eq!(p1.used, HalfLines::lines(4));
    assert_eq!(p1.carried, HalfLines::lines(1));
    let p2 = &a.phases[1];
    assert_eq!(p2.carry_in, HalfLines::lines(1));
    assert_eq!(p2.allocated, HalfLines::lines(13));
    let d = p2.entry(1).unwrap();
    assert_eq!(
        (d.band, d.mode, d.lines),
        (Band::High, Mode::Expanded, HalfLines::lines(2))
    );
    assert_eq!(p2.entry(2).unwrap().lines, HalfLines(1));
    assert_eq!(p2.used, HalfLines(11), "5.5 lines");
    assert_eq!(p2.used.to_string(), "5.5");
    // Cumulative 9.5 lines used of 12 + 13 = 25 allocated (the seed says 24).
    assert_eq!(p1.used.plus(p2.used), HalfLines(19));
    assert!(a.all_flags().next().is_none());
}

#[test]
fn high_falls_back_to_one_line_when_short() {
    // 12 lines: 3 CRITICAL = 9, two HIGH and one LOW left: 3 lines remain.
    let items = vec![
        item(9000, Band::Critical),
        item(8500, Band::Critical),
        item(8000, Band::Critical),
        item(7000, Band::High),
        item(6000, Band::High),
        item(1000, Band::Low),
    ];
    let p = allocate_phase(&params(), "3", HalfLines(0), &items);
    // First HIGH: 9 + 2 + reserve(1 + 0.5) = 12.5 > 12 → 1 line.
    assert_eq!(p.entry(3).unwrap().mode, Mode::Standard);
    assert_eq!(p.entry(4).unwrap().mode, Mode::Standard);
    assert_eq!(p.used, HalfLines(23));
    assert!(p.flags.is_empty(), "{:?}", p.flags);
}

#[test]
fn higher_score_high_is_expanded_first() {
    let items = vec![
        item(5500, Band::High),
        item(7000, Band::High),
        item(9000, Band::Critical),
        item(8000, Band::Critical),
        item(7600, Band::Critical),
    ];
    // 9 lines CRITICAL; 3 left for two HIGH: the 0.70 one gets 2, the 0.55 one 1.
    let p = allocate_phase(&params(), "1", HalfLines(0), &items);
    assert_eq!(p.entry(1).unwrap().mode, Mode::Expanded);
    assert_eq!(p.entry(0).unwrap().mode, Mode::Standard);
    assert_eq!(p.used, HalfLines::lines(12));
    assert_eq!(
        p.entries.iter().map(|e| e.index).collect::<Vec<_>>(),
        [2, 3, 4, 1, 0]
    );
}

#[test]
fn ties_keep_input_order() {
    let items = vec![
        item(5000, Band::High),
        item(5000, Band::High),
        item(5000, Band::High),
    ];
    let p = allocate_phase(&params(), "1", HalfLines(0), &items);
    assert_eq!(
        p.entries.iter().map(|e| e.index).collect::<Vec<_>>(),
        [0, 1, 2]
    );
}

#[test]
fn partial_is_at_least_medium_with_warning() {
    let items = vec![AllocItem {
        score: 1000,
        band: Band::Low,
        partial: true,
    }];
    let p = allocate_phase(&params(), "1", HalfLines(0), &items);
    let e = p.entry(0).unwrap();
    assert_eq!(
        (e.band, e.scored_band, e.mode, e.warn),
        (Band::Medium, Band::Low, Mode::Standard, true)
    );
}

#[test]
fn too_many_critical_is_flagged_and_nothing_dropped() {
    let items: Vec<_> = (0..7).map(|i| item(9000 - i, Band::Critical)).collect();
    let p = allocate_phase(&params(), "4", HalfLines(0), &items);
    assert_eq!(p.entries.len(), 7);
    assert_eq!(p.used, HalfLines::lines(21));
    let msgs: Vec<String> = p.flags.iter().map(ToString::to_string).collect();
    assert!(
        msgs.contains(&"Phase 4 has 7 > 5 CRITICAL entries. Budget risk.".to_string()),
        "{msgs:?}"
    );
    assert!(
        p.flags
            .iter()
            .any(|f| matches!(f, BudgetFlag::Overrun { .. }))
    );
    assert_eq!(p.carried, HalfLines(0));
}

#[test]
fn critical_alone_over_total_escalates() {
    let items: Vec<_> = (0..34).map(|_| item(8000, Band::Critical)).collect();
    let p = allocate_phase(&params(), "1", HalfLines(0), &items);
    let esc: Vec<String> = p
        .flags
        .iter()
        .filter(|f| f.is_escalation())
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        esc,
        [
            "CRITICAL entries require 102 lines but budget is 100. Options: (1) increase budget, (2) increase TOTAL_BUDGET permanently, (3) split phase."
        ]
    );
}

#[test]
fn critical_over_total_across_phases_escalates_once() {
    let phases: Vec<_> = (0..4)
        .map(|n| {
            (
                n.to_string(),
                (0..9)
                    .map(|_| item(8000, Band::Critical))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let a = allocate(&params(), HalfLines(0), &phases);
    assert_eq!(a.flags.len(), 1);
    assert!(
        a.flags[0]
            .to_string()
            .starts_with("CRITICAL entries require 108 lines")
    );
}

#[test]
fn empty_phase_carries_twenty_percent() {
    let p = allocate_phase(&params(), "1", HalfLines(0), &[]);
    assert_eq!(p.used, HalfLines(0));
    // floor(12 × 0.2) = 2 lines.
    assert_eq!(p.carried, HalfLines::lines(2));
}

fn band_strategy() -> impl Strategy<Value = Band> {
    prop_oneof![
        Just(Band::Critical),
        Just(Band::High),
        Just(Band::Medium),
        Just(Band::Low)
    ]
}

fn item_strategy() -> impl Strategy<Value = AllocItem> {
    (0u32..=10_000, band_strategy(), any::<bool>()).prop_map(|(score, band, partial)| AllocItem {
        score,
        band,
        partial,
    })
}

fn params_strategy() -> impl Strategy<Value = BudgetParams> {
    (1u32..400, 1u32..20, 0u32..30, 0u32..=100, 0u32..10).prop_map(
        |(total_lines, phases, min_phase_lines, carryover_percent, max_critical_per_phase)| {
            BudgetParams {
                total_lines,
                phases,
                min_phase_lines,
                carryover_percent,
                max_critical_per_phase,
            }
        },
    )
}

proptest! {
    #[test]
    fn allocation_properties(
        params in params_strategy(),
        carry in 0u32..50,
        phases in prop::collection::vec(prop::collection::vec(item_strategy(), 0..25), 1..5),
    ) {
        let input: Vec<(String, Vec<AllocItem>)> = phases
            .iter()
            .enumerate()
            .map(|(i, p)| ((i + 1).to_string(), p.clone()))
            .collect();
        let a = allocate(&params, HalfLines(carry), &input);
        // Deterministic.
        prop_assert_eq!(&a, &allocate(&params, HalfLines(carry), &input));
        let mut expected_carry = HalfLines(carry);
        for (p, (_, items)) in a.phases.iter().zip(&input) {
            // No entry dropped: every input position exactly once.
            let mut seen: Vec<usize> = p.entries.iter().map(|e| e.index).collect();
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..items.len()).collect::<Vec<_>>());
            // Sorted by score descending.
            for w in p.entries.windows(2) {
                prop_assert!(w[0].score > w[1].score || (w[0].score == w[1].score && w[0].index < w[1].index));
            }
            for e in &p.entries {
                let it = items[e.index];
                match e.band {
                    Band::Critical => prop_assert_eq!((e.lines, e.mode), (HalfLines(6), Mode::Expanded)),
                    Band::High => prop_assert!(e.lines == HalfLines(2) || e.lines == HalfLines(4)),
                    Band::Medium => prop_assert_eq!(e.lines, HalfLines(2)),
                    Band::Low => prop_assert_eq!(e.lines, HalfLines(1)),
                }
                if it.band == Band::Critical {
                    prop_assert_eq!(e.band, Band::Critical);
                }
                if it.partial {
                    prop_assert!(e.band >= Band::Medium);
                }
            }
            // used = sum of lines.
            let sum: u32 = p.entries.iter().map(|e| e.lines.units()).sum();
            prop_assert_eq!(p.used, HalfLines(sum));
            // Budget and carryover formulas.
            prop_assert_eq!(p.carry_in, expected_carry);
            let base = (params.total_lines / params.phases).max(params.min_phase_lines) * 2;
            prop_assert_eq!(p.allocated, HalfLines(base + expected_carry.units()));
            let unused = p.allocated.units().saturating_sub(p.used.units());
            let carried_lines = unused * params.carryover_percent / 200;
            prop_assert_eq!(p.carried, HalfLines(carried_lines * 2));
            // HIGH expansion never pushes the phase over budget.
            let high_expanded = p.entries.iter().any(|e| e.band == Band::High && e.mode == Mode::Expanded);
            if high_expanded {
                prop_assert!(p.used <= p.allocated);
            }
            // Overrun reported iff over.
            let overrun = p.flags.iter().any(|f| matches!(f, BudgetFlag::Overrun { .. }));
            prop_assert_eq!(overrun, p.used > p.allocated);
            expected_carry = p.carried;
        }
    }
}
