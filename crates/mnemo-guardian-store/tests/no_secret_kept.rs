//! Issue 13 item 5: no secret that a request carries is kept in the
//! Guardian's session store, whatever field it came in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::protocol::Transport;
use mnemo_guardian_store::{GuardOptions, open_guardian};
use serde_json::{Value, json};

const PAT: &str = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
const SESSION: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

fn req(session: &str, request_id: &str, method: &str, payload: Value) -> Vec<u8> {
    let now = mnemo_acs::time::format_rfc3339_ms(mnemo_acs::time::now_ms());
    json!({"jsonrpc": "2.0", "method": method, "id": 1, "params": {
        "acs_version": "0.1.0", "request_id": request_id, "timestamp": now,
        "metadata": {"agent_id": "a", "session_id": session}, "payload": payload}})
    .to_string()
    .into_bytes()
}

fn tool_result(source_id: &str, provenance_id: &str) -> Value {
    json!({"tool": {"name": "fetch"}, "exit_status": "success",
           "outputs": [{"value": "out", "provenance": {"provenance_id": provenance_id,
                        "origin": "tool_output", "source_id": source_id}}]})
}

/// Every byte of every file in `dir`.
fn all_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            out.extend(std::fs::read(&p).unwrap());
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn a_secret_in_any_field_never_reaches_the_store_file() {
    let dir = tempfile::tempdir().unwrap();
    let opts = GuardOptions {
        store: Some(dir.path().join("guardian.sqlite3")),
        ..GuardOptions::default()
    };
    {
        let mut g = open_guardian(&opts, Transport::Stdio, true).unwrap();
        let url = format!("https://api.example.com/v1/items?access_token={PAT}&page=2");
        // A secret inside a source_id: recorded, scrubbed.
        let r: Value = serde_json::from_slice(&g.handle(&req(
            SESSION,
            "00000000-0000-4000-8000-000000000001",
            "steps/toolCallResult",
            tool_result(&url, "p-1"),
        )))
        .unwrap();
        assert_eq!(r["result"]["decision"], "allow", "{r}");
        // A secret as the request id, the session id or a provenance id:
        // refused with an error, nothing kept.
        for (session, rid, pid) in [
            (SESSION, PAT, "p-2"),
            (PAT, "00000000-0000-4000-8000-000000000003", "p-3"),
            (SESSION, "00000000-0000-4000-8000-000000000004", PAT),
        ] {
            let r: Value = serde_json::from_slice(&g.handle(&req(
                session,
                rid,
                "steps/toolCallResult",
                tool_result("fetch", pid),
            )))
            .unwrap();
            assert!(
                r.get("error").is_some() || r["result"]["decision"] == "deny",
                "a secret id must not be accepted: {r}"
            );
        }
    }
    let bytes = all_bytes(dir.path());
    assert!(!bytes.is_empty());
    assert!(!contains(&bytes, PAT), "the store file keeps the token");
    assert!(
        !contains(&bytes, "a1B2c3D4e5F6g7H8i9J0"),
        "a part of the token is kept"
    );
    assert!(contains(&bytes, "api.example.com/v1/items?access_token="));
}
