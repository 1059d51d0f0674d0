//! A pre-check that cannot miss: whether a string contains any keyword of
//! the built-in scrubber rules.
//!
//! The scrubber finds a secret only where one of its rules' prefilter
//! keywords occurs (ASCII-case-insensitively): its scan starts every rule
//! at a keyword hit and nowhere else (`mnemo-scrub`'s engine). So a string
//! in which no keyword occurs has no finding, and the store wrapper need
//! not build the scrubber for it. Building the scrubber compiles its
//! rules; this index takes only their keywords, from the statics
//! `mnemo-scrub`'s build script wrote ([`mnemo_scrub::default_rule_keywords`]),
//! once per process.
//!
//! A keyword list this index cannot hold (none at all, a keyword shorter
//! than two bytes, 65,535 or more, or one the automaton cannot be built
//! for) gives no index, and then every string
//! goes to the scrubber. The tests check that the keywords held here are
//! exactly the scrubber's.
use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use std::sync::OnceLock;

/// The keywords, lowercased, sorted, and one automaton over all of them.
#[derive(Debug)]
pub(crate) struct KeywordIndex {
    /// Sorted, deduplicated, lowercase (the tests compare them with the
    /// scrubber's).
    #[cfg(test)]
    words: Vec<Vec<u8>>,
    /// An ASCII-case-insensitive Aho-Corasick DFA over `words`: one pass,
    /// one table step a byte, reports whether any keyword occurs anywhere
    /// (the standard, overlapping semantics: no occurrence is skipped).
    /// Replaces a pair bitmap with a keyword comparison at each hit, which
    /// cost ~45 instructions a byte on the Guardian's JSON and ids.
    automaton: AhoCorasick,
}

static INDEX: OnceLock<Option<KeywordIndex>> = OnceLock::new();

/// The index of the built-in rules (`None`: their keywords do not fit it;
/// then nothing may skip the scrubber).
pub(crate) fn default_index() -> Option<&'static KeywordIndex> {
    INDEX
        .get_or_init(|| KeywordIndex::from_keywords(mnemo_scrub::default_rule_keywords()))
        .as_ref()
}

/// Whether the scrubber may find something in `text`: `false` only when no
/// keyword of the built-in rules occurs in it (then it finds nothing).
pub(crate) fn may_hold_secret(text: &str) -> bool {
    match default_index() {
        Some(ix) => ix.occurs_in(text.as_bytes()),
        None => true,
    }
}

impl KeywordIndex {
    /// The index of `keywords` (any case); `None` when there is none, one
    /// is shorter than two bytes, there are 65,535 or more, or the
    /// automaton cannot be built.
    pub(crate) fn from_keywords<'k>(
        keywords: impl IntoIterator<Item = &'k str>,
    ) -> Option<KeywordIndex> {
        let mut words: Vec<Vec<u8>> = keywords
            .into_iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        if words.is_empty() {
            return None;
        }
        for w in &mut words {
            w.make_ascii_lowercase();
        }
        if words.iter().any(|w| w.len() < 2) {
            return None;
        }
        words.sort();
        words.dedup();
        if words.len() >= usize::from(u16::MAX) {
            return None;
        }
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            // Hundreds of keywords starting with most letters: a
            // prefilter would stop at nearly every byte of JSON.
            .prefilter(false)
            .build(&words)
            .ok()?;
        Some(KeywordIndex {
            #[cfg(test)]
            words,
            automaton,
        })
    }

    /// The keywords (lowercase, sorted).
    #[cfg(test)]
    pub(crate) fn words(&self) -> impl Iterator<Item = &[u8]> {
        self.words.iter().map(Vec::as_slice)
    }

    /// Whether any keyword occurs in `hay`, ASCII-case-insensitively (as
    /// the scrubber's keyword automaton matches them).
    pub(crate) fn occurs_in(&self, hay: &[u8]) -> bool {
        self.automaton.is_match(hay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_scrub::Scrubber;
    use std::collections::BTreeSet;

    fn scrubber() -> &'static Scrubber {
        Scrubber::default_rules().unwrap_or_else(|e| panic!("{e}"))
    }

    fn index() -> &'static KeywordIndex {
        default_index().unwrap_or_else(|| panic!("the built-in rule file's keywords must read"))
    }

    #[test]
    fn the_keywords_read_are_exactly_the_scrubbers() {
        let ours: BTreeSet<Vec<u8>> = index().words().map(<[u8]>::to_vec).collect();
        let theirs: BTreeSet<Vec<u8>> = scrubber()
            .rules()
            .iter()
            .flat_map(|r| r.keywords().iter().map(|k| k.as_bytes().to_vec()))
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
        let words: Vec<&[u8]> = ix.words().collect();
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

    #[test]
    fn keyword_lists_the_index_cannot_hold_give_no_index() {
        let ix = KeywordIndex::from_keywords(["GHP_", "x\"y", "ghp_"])
            .unwrap_or_else(|| panic!("two keywords"));
        assert_eq!(ix.words().count(), 2);
        assert!(ix.occurs_in(b"--ghp_--"));
        assert!(ix.occurs_in(b"x\"Y"));
        assert!(!ix.occurs_in(b"ghp-"));
        assert!(KeywordIndex::from_keywords(["ghp_", "g"]).is_none());
        assert!(KeywordIndex::from_keywords(["ghp_", ""]).is_none());
        assert!(KeywordIndex::from_keywords([]).is_none());
        let many: Vec<String> = (0..70_000u32).map(|i| format!("k{i:05}")).collect();
        assert!(KeywordIndex::from_keywords(many.iter().map(String::as_str)).is_none());
    }
}
