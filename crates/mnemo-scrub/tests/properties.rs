#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Property tests (the CI twin of `fuzz/fuzz_targets/scrub.rs`): no panic on
//! any input, offsets valid and on char boundaries, redactions sorted and
//! disjoint, the output is exactly the input with the spans replaced, a
//! redacted span's bytes (>= 8) never survive, idempotency; the same for the
//! streaming form with tiny chunks.

mod common;

use mnemo_scrub::{Redaction, ReplacementStyle, Scrubber, StreamOptions};
use proptest::prelude::*;

fn fragment() -> impl Strategy<Value = String> {
    let fixed = prop::sample::select(vec![
        "password=",
        "Password: ",
        "api_key=",
        "API key=",
        "token: ",
        "\"secret\": \"",
        "Authorization: Bearer ",
        "export AWS_SECRET_ACCESS_KEY=",
        "postgres://u:",
        "@db/x",
        "-----BEGIN RSA PRIVATE KEY-----\n",
        "\n-----END RSA PRIVATE KEY-----",
        "ghp_",
        "sk-",
        "sk-ant-api03-",
        "AKIA",
        "AIza",
        "xoxb-",
        "eyJ",
        ".eyJ",
        "\n",
        " ",
        "\"",
        "'",
        "=",
        ":",
        "[REDACTED]",
        "[REDACTED:github-pat]",
        "é",
        "🔑",
        "ü",
        "\u{0}",
        "\r\n",
        "\\n",
        "key-",
        "hooks.slack.com/services/",
        "https://",
        "mysql://root:",
        "[GITHUB TOKEN REDACTED]",
    ])
    .prop_map(str::to_string);
    let random = "[A-Za-z0-9+/=_.-]{1,60}";
    let unicode = "\\PC{0,12}";
    prop_oneof![
        4 => fixed,
        4 => random.prop_map(|s| s),
        1 => unicode.prop_map(|s| s),
        2 => any::<u64>().prop_map(|seed| common::expand("{{alnum:40}}", seed).text),
    ]
}

fn input() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..24).prop_map(|v| v.concat())
}

fn check(input: &str, out_text: &str, reds: &[Redaction]) -> Result<(), TestCaseError> {
    let mut last = 0usize;
    let mut rebuilt = String::new();
    for r in reds {
        prop_assert!(r.start < r.end && r.end <= input.len(), "{r:?}");
        prop_assert!(r.start >= last, "not sorted / overlapping: {reds:?}");
        prop_assert!(input.is_char_boundary(r.start) && input.is_char_boundary(r.end));
        rebuilt.push_str(&input[last..r.start]);
        rebuilt.push_str(&r.replacement);
        last = r.end;
    }
    rebuilt.push_str(&input[last..]);
    prop_assert_eq!(rebuilt.as_str(), out_text);
    for r in reds {
        let secret = &input[r.start..r.end];
        if secret.len() >= 8 && input.matches(secret).count() == 1 {
            prop_assert!(
                !out_text.contains(secret),
                "{secret:?} survives in {out_text:?}"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn scrub_invariants(input in input()) {
        let s = Scrubber::default_rules().unwrap();
        for style in [ReplacementStyle::Named, ReplacementStyle::Pantheon] {
            let out = s.scrub_with(&input, style);
            check(&input, &out.text, &out.redactions)?;
            let again = s.scrub_with(&out.text, style);
            prop_assert_eq!(&again.text, &out.text, "not idempotent");
        }
        let found = s.find(&input);
        let out = s.scrub(&input);
        prop_assert_eq!(found.len(), out.redactions.len());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let s = Scrubber::default_rules().unwrap();
        let found = s.find_bytes(&bytes);
        let mut last = 0;
        for f in &found {
            prop_assert!(f.start >= last && f.start < f.end && f.end <= bytes.len());
            last = f.end;
        }
        let text = String::from_utf8_lossy(&bytes);
        let out = s.scrub(&text);
        check(&text, &out.text, &out.redactions)?;
    }

    #[test]
    fn stream_invariants(input in input(), chunk in 1usize..64, carry in 0usize..96) {
        let s = Scrubber::default_rules().unwrap();
        let mut out = Vec::new();
        let mut reds = Vec::new();
        let opts = StreamOptions { chunk_size: chunk, carry, style: ReplacementStyle::Named };
        let stats = s
            .scrub_stream_with(input.as_bytes(), &mut out, &opts, |r| reds.push(r))
            .unwrap();
        prop_assert_eq!(stats.bytes_in as usize, input.len());
        let out = String::from_utf8(out).unwrap();
        check(&input, &out, &reds)?;
    }
}
