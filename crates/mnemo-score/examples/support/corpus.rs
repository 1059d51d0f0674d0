//! The 1 KB summaries shared by the scoring benchmark and the profiling
//! example, and the loop both time.

use mnemo_score::{Engine, ScoreInput};

/// Scores every text as the same hand-off (3 files, hermes → aphrodite);
/// returns the sum of totals so the work cannot be optimised away.
pub fn score_all(engine: &Engine, texts: &[String]) -> u64 {
    let mut sum = 0u64;
    for t in texts {
        let s = engine.score(&ScoreInput {
            text: t,
            files: 3,
            from: Some("hermes"),
            to: Some("aphrodite"),
            ..Default::default()
        });
        sum += u64::from(s.total.ten_thousandths());
    }
    sum
}

/// Deterministic 1 KB summaries made of realistic phrases.
pub fn summaries(n: usize) -> Vec<String> {
    const PHRASES: &[&str] = &[
        "Added POST /api/v1/orders returning 201 with the order id.",
        "Migration 0014 creates the orders table with a foreign key to users.",
        "Refactored the payment service to retry idempotently on timeouts.",
        "The OrderForm component validates quantities before submitting.",
        "Updated the Docker image and the deploy pipeline for staging.",
        "Tests cover the happy path and the 422 error for unknown products.",
        "Renamed the legacy helper and removed a dead code path.",
        "Coverage rose from 84% to 91% across the backend package.",
        "This unblocked the frontend work on the checkout page.",
        "The cache layer now invalidates on every order status change.",
        "Documented the retry semantics in the module docstring.",
        "Permissions are checked per organisation, not per user.",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..n)
        .map(|_| {
            let mut s = String::with_capacity(1100);
            while s.len() < 1024 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push_str(PHRASES[(state % PHRASES.len() as u64) as usize]);
                s.push(' ');
            }
            s.truncate(1024);
            s
        })
        .collect()
}
