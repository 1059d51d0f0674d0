#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Pantheon parity, on purpose: every real secret that Pantheon's
//! `scrub-secrets.py` redacts in `scrub-cases.json` is redacted by us too;
//! where that scrubber is wrong we differ deliberately (see
//! `docs/scrubbing.md`).

use mnemo_scrub::{ReplacementStyle, scrub, scrub_with};
use serde_json::Value;

fn shared() -> Option<std::path::PathBuf> {
    mnemo_testkit::shared_dir()
}

fn input_of(case: &Value) -> String {
    if let Some(s) = case.get("input").and_then(Value::as_str) {
        return s.to_string();
    }
    case["input_parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect::<String>()
}

/// Where we deliberately differ from Pantheon: case name -> whether we
/// redact (and which rule).
fn our_decision(name: &str) -> Option<Option<&'static str>> {
    Some(match name {
        // Pantheon redacts every UUID as a "Heroku key": a request id is not a secret.
        "uuid-redacted-as-heroku" => None,
        // `sk-` inside "task-management-board" is not an OpenAI key.
        "false-positive-sk-inside-word" => None,
        // prose about Bearer tokens is not a token.
        "false-positive-bearer-prose" => None,
        // PATH is not a secret.
        "false-positive-export-shell" => None,
        // `xoxb-1234567890-abcdefghijklmnop` is a docs sample (counting
        // sequences, a 16-character tail); a bot token is
        // `xoxb-<digits>-<digits>-<24 characters>` (issue 13 item 9).
        "slack-token" => None,
        // Pantheon misses upper-case names and `API key=`; we redact.
        "API_KEY-uppercase-not-matched" => Some("api-key-assignment"),
        "API-key-with-space-not-matched" => Some("api-key-assignment"),
        "Password-capitalized-not-matched" => Some("password-assignment"),
        // a token in JSON is a token.
        "token-colon-json-not-matched" => Some("token-assignment"),
        _ => return None,
    })
}

#[test]
fn scrub_cases_parity() {
    let Some(root) = shared() else { return };
    let text =
        std::fs::read_to_string(root.join("pantheon-fixtures/expected/scrub-cases.json")).unwrap();
    let cases: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert!(cases.len() >= 30);
    let mut report = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let input = input_of(case);
        let ours = scrub(&input);
        // our own invariants on every case
        let again = scrub(&ours.text);
        assert_eq!(again.text, ours.text, "{name}: not idempotent");
        assert!(
            again.redactions.is_empty(),
            "{name}: new redactions on rescrub"
        );
        match our_decision(name) {
            Some(None) => {
                assert!(
                    ours.redactions.is_empty(),
                    "{name}: we must NOT redact {input:?}, got {:?}",
                    ours.redactions
                );
                assert_eq!(ours.text, input);
            }
            Some(Some(rule)) => {
                assert_eq!(ours.redactions.len(), 1, "{name}: {:?}", ours.redactions);
                assert_eq!(ours.redactions[0].rule, rule, "{name}");
            }
            None => {
                let expected = case["expected_redactions"].as_array().unwrap();
                if expected.is_empty() {
                    assert!(
                        ours.redactions.is_empty(),
                        "{name}: Pantheon redacts nothing, we redacted {:?}",
                        ours.redactions
                    );
                    continue;
                }
                // Every byte range Pantheon redacted that holds secret
                // material must be covered by one of our redactions: we
                // check that the secret part (Pantheon's span minus the
                // generic prefix it also replaces) does not survive.
                for r in expected {
                    let pos = r["position"].as_array().unwrap();
                    let (s, e) = (
                        pos[0].as_u64().unwrap() as usize,
                        pos[1].as_u64().unwrap() as usize,
                    );
                    let span = &input[s..e];
                    let secret = secret_part(span);
                    assert!(
                        !strip_markers(&ours.text).contains(secret),
                        "{name}: secret {secret:?} survives in {:?}",
                        ours.text
                    );
                }
            }
        }
        report.push(format!("{name:40} {:?}", ours.text));
    }
    println!("{}", report.join("\n"));
}

/// The output without our `[REDACTED:<rule>]` markers (rule ids may
/// contain words like `pass`).
fn strip_markers(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("[REDACTED:") {
        out.push_str(&rest[..i]);
        match rest[i..].find(']') {
            Some(j) => rest = &rest[i + j + 1..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The secret bytes inside a span that Pantheon replaced: Pantheon's
/// replacement of `api_key=…`, `Bearer …` and `scheme://user:pass@` also
/// swallows the non-secret prefix.
fn secret_part(span: &str) -> &str {
    if let Some(i) = span.find("Bearer ") {
        return &span[i + 7..];
    }
    if span.contains("://") {
        // scheme://user:pass@ -> pass
        let after = &span[span.find("://").unwrap() + 3..];
        let userinfo = after.trim_end_matches('@');
        return userinfo.rsplit(':').next().unwrap();
    }
    if span.starts_with("export ") {
        return span.rsplit('=').next().unwrap();
    }
    if let Some(i) = span.find(['=', ':']) {
        let v = span[i + 1..].trim().trim_matches(['"', '\'']);
        if !v.is_empty() {
            return v;
        }
    }
    span
}

#[test]
fn compress_inline_byte_for_byte() {
    // The two cases `mnemo inline compress` must print exactly like Pantheon.
    let a = scrub_with(
        "Authorization: Bearer abcdefghij0123456789 added to auth client",
        ReplacementStyle::Pantheon,
    );
    assert_eq!(
        a.text,
        "Authorization: Bearer [REDACTED] added to auth client"
    );
    let b = scrub_with(
        "password=supersecret123 configured",
        ReplacementStyle::Pantheon,
    );
    assert_eq!(b.text, "password=[REDACTED] configured");
}

#[test]
fn pantheon_style_mimics_replacement_strings() {
    let gh = format!("key ghp_{}", "a".repeat(36));
    assert_eq!(
        scrub_with(&gh, ReplacementStyle::Pantheon).text,
        "key [GITHUB TOKEN REDACTED]"
    );
    let aws = format!("{}{}", "AKIAIOSFODNN7", "EXAMPLE");
    assert_eq!(
        scrub_with(&aws, ReplacementStyle::Pantheon).text,
        "[AWS KEY REDACTED]"
    );
    let jwt = format!(
        "jwt is {}{}",
        "eyJhbGciOiJIUzI1NiJ9", ".eyJzdWIiOiIxIn0.dozjgN4g_9kNN3kzYJPu5g"
    );
    assert_eq!(
        scrub_with(&jwt, ReplacementStyle::Pantheon).text,
        "jwt is [JWT REDACTED]"
    );
    let multi = format!(
        "api_key={} and password={} and Bearer {}",
        "abcdef1234567890", "mysecretkey123", "eyJhbGciOiJIUzI1NiJ9.token"
    );
    assert_eq!(
        scrub_with(&multi, ReplacementStyle::Pantheon).text,
        "api_key=[REDACTED] and password=[REDACTED] and Bearer [REDACTED]"
    );
}

#[test]
fn legacy_context_mcp_vectors() {
    let Some(root) = shared() else { return };
    let text = std::fs::read_to_string(
        root.join("pantheon-fixtures/expected/legacy-context-mcp-test-vectors.json"),
    )
    .unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut cases: Vec<&Value> = v["scrub_assertions_legacy"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    cases.extend(
        v["compress_text_assertions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c.get("canonical_scrub_output").is_some()),
    );
    assert!(!cases.is_empty());
    for c in cases {
        let parts: Vec<&str> = c["input_parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        let input = parts.concat();
        let ours = scrub_with(&input, ReplacementStyle::Pantheon);
        // the odd parts (after a prefix) are the secret values in these vectors
        for (i, p) in parts.iter().enumerate() {
            if i % 2 == 1 || (parts.len() > 2 && i == 2 && p.starts_with('a')) {
                let secret = p.trim();
                if secret.len() >= 8 && !secret.contains(' ') {
                    assert!(
                        !ours.text.contains(secret),
                        "{secret:?} survives in {:?}",
                        ours.text
                    );
                }
            }
        }
        let canonical = c["canonical_scrub_output"].as_str().unwrap();
        if canonical == input {
            assert_eq!(ours.text, input, "no secret expected in {input:?}");
        }
        if canonical.contains("REDACTED") {
            assert!(
                ours.text.contains("REDACTED"),
                "{input:?} -> {:?}",
                ours.text
            );
        }
        println!(
            "{input:?}\n  pantheon: {canonical:?}\n  ours:     {:?}",
            ours.text
        );
    }
}
