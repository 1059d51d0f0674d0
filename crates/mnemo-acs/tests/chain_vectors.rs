//! The standard's hash-chain test vectors (RFC 8785 + SHA-256, spec §8).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_acs::{chain, jcs};
use serde_json::Value;

#[test]
fn acs_chain_vectors() {
    let Some(path) = mnemo_testkit::shared(
        "acs/repo-data/reference-implementations/agt-go/internal/chain/testdata/vectors.json",
    ) else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let rh = &v["request_hash"];
    assert_eq!(
        jcs::canonicalize(&rh["params"]),
        rh["canonical"].as_str().unwrap()
    );
    assert_eq!(
        chain::to_hex(&chain::request_hash(&rh["params"])),
        rh["hash"].as_str().unwrap()
    );
    let mut prev: Option<chain::Hash> = None;
    let links = v["chain"].as_array().unwrap();
    assert!(links.len() >= 3);
    for link in links {
        assert_eq!(
            jcs::canonicalize(&link["entry"]),
            link["canonical_content"].as_str().unwrap()
        );
        let expected_prev = link["previous_hash"]
            .as_str()
            .map(|s| chain::from_hex(s).unwrap());
        assert_eq!(prev, expected_prev);
        let h = chain::entry_hash(&link["entry"], prev.as_ref());
        assert_eq!(chain::to_hex(&h), link["entry_hash"].as_str().unwrap());
        prev = Some(h);
    }
}
