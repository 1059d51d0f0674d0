//! mnemo's o200k counts against GitHub's `bpe-openai` (an encoder the team
//! did not write): the same count on every file of this repository's docs
//! and sources, and on random text that mixes scripts, digits, punctuation,
//! contractions and every kind of whitespace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

fn theirs(text: &str) -> usize {
    bpe_openai::o200k_base().count(text)
}

fn ours(text: &str) -> usize {
    mnemo_tokens::count_o200k(text).unwrap()
}

#[test]
fn same_counts_on_the_repository_text() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for dir in [
        "docs",
        "crates/mnemo-inline/src",
        "crates/mnemo-model/src",
        "examples",
    ] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                files.push(p);
            }
        }
    }
    let mut total = 0;
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        assert_eq!(ours(&text), theirs(&text), "{}", f.display());
        total += text.len();
    }
    assert!(total > 100_000, "only {total} bytes compared");
}

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z]{1,12}",
        "[A-Z][a-z]{0,8}",
        "[0-9]{1,7}",
        "[ \t\n\r\u{a0}\u{3000}\u{2028}]{1,5}",
        "[!-/:-@\\[-`{-~]{1,6}",
        Just("'s".to_string()),
        Just("'LL".to_string()),
        Just("\r\n".to_string()),
        "[é漢字한국어ελληνικάкириллица😀👍🏽\u{301}\u{200d}]{1,4}",
        "\\PC{1,3}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn same_counts_on_random_text(parts in proptest::collection::vec(piece(), 0..40)) {
        let text: String = parts.concat();
        prop_assert_eq!(ours(&text), theirs(&text), "{:?}", text);
    }
}
