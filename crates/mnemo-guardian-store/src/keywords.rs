//! A pre-check that cannot miss: whether a string contains any keyword of
//! the built-in scrubber rules.
//!
//! The scrubber finds a secret only where one of its rules' prefilter
//! keywords occurs (ASCII-case-insensitively): its scan starts every rule
//! at a keyword hit and nowhere else (`mnemo-scrub`'s engine). So a string
//! in which no keyword occurs has no finding, and the store wrapper need
//! not build the scrubber for it. The check walks the keyword table that
//! `mnemo-scrub`'s build script compiled into the binary
//! ([`mnemo_scrub::default_rule_keyword_occurs`]): one table step a byte
//! and nothing built at run time, so a one-shot hook process pays for no
//! automaton construction (an aho-corasick DFA built here cost ~15 M
//! instructions a process). The tests check it against the scrubber's
//! keywords and findings.

/// Whether the scrubber may find something in `text`: `false` only when no
/// keyword of the built-in rules occurs in it (then it finds nothing).
pub(crate) fn may_hold_secret(text: &str) -> bool {
    mnemo_scrub::default_rule_keyword_occurs(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_scrub::Scrubber;
    use std::collections::BTreeSet;

    fn scrubber() -> &'static Scrubber {
        Scrubber::default_rules().unwrap_or_else(|e| panic!("{e}"))
    }

    /// The pre-check the store wrapper calls, over the test's (UTF-8) bytes.
    struct Ix;
    impl Ix {
        fn occurs_in(&self, hay: &[u8]) -> bool {
            may_hold_secret(std::str::from_utf8(hay).unwrap_or_else(|e| panic!("{e}")))
        }
    }
    fn index() -> Ix {
        Ix
    }

    /// The built-in rules' keywords, lowercase, sorted, deduplicated.
    fn words() -> Vec<Vec<u8>> {
        let set: BTreeSet<Vec<u8>> = mnemo_scrub::default_rule_keywords()
            .map(|k| k.to_ascii_lowercase().into_bytes())
            .collect();
        set.into_iter().collect()
    }

    #[test]
    fn the_keywords_checked_are_exactly_the_scrubbers() {
        let ours: BTreeSet<Vec<u8>> = words().into_iter().collect();
        let theirs: BTreeSet<Vec<u8>> = scrubber()
            .rules()
            .iter()
            .flat_map(|r| {
                r.keywords()
                    .iter()
                    .map(|k| k.to_ascii_lowercase().into_bytes())
            })
            .collect();
        assert_eq!(ours, theirs);
        assert!(ours.len() > 100, "{}", ours.len());
    }

    #[test]
    fn every_rule_keyword_is_found_in_any_case_and_position() {
        let ix = index();
        for rule in scrubber().rules() {
            for k in rule.keywords() {
                for text in [
                    k.clone(),
                    k.to_ascii_uppercase(),
                    format!("0000-{k}"),
                    format!("x{}y", k.to_ascii_uppercase()),
                ] {
                    assert!(ix.occurs_in(text.as_bytes()), "{}: {text:?}", rule.id());
                }
            }
        }
    }

    /// Fills `{{class:n}}` (and `{{uuid}}`, `{{discord}}`) of a rule's
    /// example with characters of the class from a small PRNG.
    fn expand(template: &str, seed: u64) -> String {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut pick = |alphabet: &[u8], n: usize| -> String {
            (0..n)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let i = (state >> 33) as usize % alphabet.len();
                    char::from(alphabet[i])
                })
                .collect()
        };
        const HEX: &[u8] = b"0123456789abcdef";
        const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
        const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        const DIGIT: &[u8] = b"0123456789";
        let alnum: Vec<u8> = [UPPER, LOWER, DIGIT].concat();
        let b64: Vec<u8> = [&alnum[..], b"+/"].concat();
        let b64url: Vec<u8> = [&alnum[..], b"-_"].concat();
        let lowernum: Vec<u8> = [LOWER, DIGIT].concat();
        let uppernum: Vec<u8> = [UPPER, DIGIT].concat();
        let mut out = String::new();
        let mut rest = template;
        while let Some(i) = rest.find("{{") {
            let Some(j) = rest[i..].find("}}") else { break };
            out.push_str(&rest[..i]);
            let spec = &rest[i + 2..i + j];
            let fill = match spec {
                "uuid" => format!(
                    "{}-{}-4{}-a{}-{}",
                    pick(HEX, 8),
                    pick(HEX, 4),
                    pick(HEX, 3),
                    pick(HEX, 3),
                    pick(HEX, 12)
                ),
                "discord" => format!(
                    "M{}.{}.{}",
                    pick(&b64url, 25),
                    pick(&b64url, 6),
                    pick(&b64url, 38)
                ),
                _ => {
                    let (class, n) = spec.split_once(':').unwrap_or((spec, "0"));
                    let n = n.parse::<usize>().unwrap_or(0);
                    let a: &[u8] = match class {
                        "alnum" => &alnum,
                        "lower" => LOWER,
                        "upper" => UPPER,
                        "digit" => DIGIT,
                        "hex" => HEX,
                        "HEX" => b"0123456789ABCDEF",
                        "b64" => &b64,
                        "b64url" => &b64url,
                        "lowernum" => &lowernum,
                        "uppernum" => &uppernum,
                        "base32" => b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
                        "bech" => b"qpzry9x8gf2tvdw0s3jn54khce6mua7l",
                        _ => b"x",
                    };
                    pick(a, n)
                }
            };
            out.push_str(&fill);
            rest = &rest[i + j + 2..];
        }
        out.push_str(rest);
        out
    }

    /// The claim the store wrapper relies on, rule by rule: whatever the
    /// scrubber finds in a rule's own examples (each also alone on a line
    /// of an id-like string and inside JSON), the pre-check lets through to
    /// the scrubber.
    #[test]
    fn every_finding_in_every_rules_examples_passes_the_pre_check() {
        let s = scrubber();
        let ix = index();
        let mut found_rules = BTreeSet::new();
        for rule in s.rules() {
            for (n, template) in rule.examples().iter().enumerate() {
                for seed in 0..4u64 {
                    let ex = expand(template, seed * 31 + n as u64);
                    for text in [
                        ex.clone(),
                        format!("step-{ex}#0"),
                        serde_json::json!({"entries": ["00000000-0000-4000-8000-000000000001", ex]})
                            .to_string(),
                    ] {
                        if !s.find(&text).is_empty() {
                            found_rules.insert(rule.id().to_string());
                            assert!(
                                ix.occurs_in(text.as_bytes()),
                                "{}: found by the scrubber, missed by the pre-check: {text:?}",
                                rule.id()
                            );
                        }
                    }
                }
            }
        }
        // the examples do exercise (nearly) every rule
        assert!(
            found_rules.len() * 10 >= s.rules().len() * 9,
            "{} of {} rules found in their examples",
            found_rules.len(),
            s.rules().len()
        );
    }

    /// The automaton against the definition: some keyword is a
    /// case-insensitive substring. Strings are spliced from keyword pieces
    /// (prefixes, suffixes, whole words in random case) and JSON bytes, so
    /// near misses and overlaps are common.
    #[test]
    fn the_automaton_agrees_with_a_naive_substring_scan() {
        let ix = index();
        let owned = words();
        let words: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let naive = |hay: &[u8]| {
            let low = hay.to_ascii_lowercase();
            words.iter().any(|w| low.windows(w.len()).any(|x| x == *w))
        };
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut hits, mut misses) = (0, 0);
        for _ in 0..4000 {
            let mut hay = Vec::new();
            for _ in 0..(next() % 6) {
                let w = words[(next() % words.len() as u64) as usize];
                let piece = match next() % 4 {
                    0 => w.to_vec(),
                    1 => w[..w.len() - 1].to_vec(),
                    2 => w[1..].to_vec(),
                    _ => br#"{"a":"0b6e-3c1e",[1,2]}"#.to_vec(),
                };
                for b in piece {
                    hay.push(if next() % 2 == 0 {
                        b.to_ascii_uppercase()
                    } else {
                        b
                    });
                }
            }
            let want = naive(&hay);
            assert_eq!(
                ix.occurs_in(&hay),
                want,
                "{:?}",
                String::from_utf8_lossy(&hay)
            );
            if want { hits += 1 } else { misses += 1 }
        }
        assert!(hits > 500 && misses > 500, "{hits} hits, {misses} misses");
    }

    #[test]
    fn ids_of_the_usual_shapes_skip_the_scrubber() {
        let ix = index();
        for id in [
            "00000000-0000-4000-8000-000000000123",
            "0b6e3c1e-4a59-4c1f-9e57-2f4a8d7c9b10",
            "0b6e3c1e-4a59-4c1f-9e57-2f4a8d7c9b10#0",
            "steps/preCompact",
            "steps/postCompact",
            "claude-code:prior-compaction",
        ] {
            assert!(!ix.occurs_in(id.as_bytes()), "{id}");
            assert!(scrubber().find(id).is_empty(), "{id}");
        }
        // hex that happens to hold a keyword goes to the scrubber
        assert!(ix.occurs_in(b"0b6e3c1e-4eaa-4c1f-9e57-2f4a8d7c9b10"));
    }
}
