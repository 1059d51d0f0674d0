#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Rule-set sanity: count, ids, keywords, every example found.

mod common;

use mnemo_scrub::Scrubber;
use std::collections::HashSet;

#[test]
fn default_rules_load_and_are_many() {
    let s = Scrubber::default_rules().expect("default rules load");
    s.precompile().expect("every pattern compiles");
    let n = s.rules().len();
    println!("{n} rules");
    assert!(n >= 100, "only {n} rules");
    let mut ids = HashSet::new();
    for r in s.rules() {
        assert!(ids.insert(r.id().to_string()), "duplicate id {}", r.id());
        assert!(!r.keywords().is_empty(), "{} has no keywords", r.id());
        assert!(!r.description().is_empty(), "{} has no description", r.id());
        assert!(!r.examples().is_empty(), "{} has no example", r.id());
        for k in r.keywords() {
            assert_eq!(
                k,
                &k.to_ascii_lowercase(),
                "{}: keyword not lowercase",
                r.id()
            );
        }
    }
}

#[test]
fn every_example_is_found_by_its_rule() {
    let s = Scrubber::default_rules().unwrap();
    let mut failures = Vec::new();
    for r in s.rules() {
        for (i, ex) in r.examples().iter().enumerate() {
            for seed in 0..3u64 {
                let text = common::expand(ex, seed * 7919 + i as u64).text;
                let found = s.find_all(&text);
                if !found.iter().any(|f| f.rule == r.id()) {
                    failures.push(format!("{}: example {i} not found: {text:?}", r.id()));
                    break;
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn counter_examples_are_not_found_by_their_rule() {
    let s = Scrubber::default_rules().unwrap();
    let mut failures = Vec::new();
    for r in s.rules() {
        for ex in r.counter_examples() {
            let text = common::expand(ex, 1).text;
            let found = s.find_all(&text);
            if found.iter().any(|f| f.rule == r.id()) {
                failures.push(format!("{}: counter-example found: {text:?}", r.id()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_keyword_occurs_in_some_example_match_line() {
    // Each example's match must contain one of the rule's keywords
    // (otherwise the prefilter would hide it). Checked through find_all,
    // which only runs rules on keyword hits; here we double-check that the
    // raw pattern agrees with the prefiltered scan.
    let s = Scrubber::default_rules().unwrap();
    for r in s.rules() {
        for ex in r.examples() {
            let text = common::expand(ex, 3).text;
            if r.pattern_matches(&text) {
                assert!(
                    s.find_all(&text).iter().any(|f| f.rule == r.id()) || r.entropy().is_some(),
                    "{}: pattern matches but prefiltered scan misses {text:?}",
                    r.id()
                );
            }
        }
    }
}

#[test]
fn anchored_rules_really_start_with_a_keyword() {
    let s = Scrubber::default_rules().unwrap();
    let anchored = s.rules().iter().filter(|r| r.anchored_at_keyword()).count();
    println!(
        "{anchored} of {} rules use the anchored fast path",
        s.rules().len()
    );
    assert!(anchored > s.rules().len() / 2);
    for r in s.rules().iter().filter(|r| r.anchored_at_keyword()) {
        for (i, ex) in r.examples().iter().enumerate() {
            let text = common::expand(ex, 11 + i as u64).text;
            let lower = text.to_ascii_lowercase();
            for (start, _) in r.raw_matches(&text) {
                assert!(
                    r.keywords()
                        .iter()
                        .any(|k| lower.as_bytes()[start..].starts_with(k.as_bytes())),
                    "{}: match at {start} does not start with a keyword in {text:?}",
                    r.id()
                );
            }
        }
    }
}
