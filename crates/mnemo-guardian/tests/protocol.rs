//! The JSON-RPC core: every error code, handshake, preCompact allow / deny /
//! manual override / re-grounding, postCompact lineage checks, chain.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::chain;
use mnemo_guardian::protocol::{METHODS, codes, expected_post_compact_hash, sign_request};
use mnemo_guardian::validate;
use mnemo_guardian::{Guardian, GuardianConfig, MemoryStore, Policy, SessionStore};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

const SESSION: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
const NOW: &str = "2026-09-19T10:00:00Z";
static NEXT: AtomicU64 = AtomicU64::new(1);

fn now_ms() -> i64 {
    mnemo_guardian::time::parse_rfc3339_ms(NOW).unwrap()
}

fn rid() -> String {
    format!(
        "00000000-0000-4000-8000-{:012}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn req(method: &str, payload: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "id": 1, "params": {
        "acs_version": "0.1.0", "request_id": rid(), "timestamp": NOW,
        "metadata": {"agent_id": "a", "session_id": SESSION}, "payload": payload}})
}

fn hello() -> Value {
    req(
        "handshake/hello",
        json!({"acs_versions_supported": ["0.1.0"], "methods_implemented": METHODS,
               "transports_supported": ["stdio"], "provenance_producer": "deterministic"}),
    )
}

fn guardian_with(policy: Policy) -> Guardian<MemoryStore> {
    let config = GuardianConfig::from_policy(&policy);
    Guardian::new(policy, config, MemoryStore::new()).with_clock(now_ms)
}

fn guardian() -> Guardian<MemoryStore> {
    let mut g = guardian_with(Policy::default());
    let r = call(&mut g, &hello());
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    g
}

/// Sends a request, checks the response against the response schema.
fn call<S: SessionStore>(g: &mut Guardian<S>, r: &Value) -> Value {
    raw(g, r.to_string().as_bytes())
}

fn raw<S: SessionStore>(g: &mut Guardian<S>, bytes: &[u8]) -> Value {
    let out: Value = serde_json::from_slice(&g.handle(bytes)).unwrap();
    validate::validate(validate::response_envelope_schema(), &out, "")
        .unwrap_or_else(|e| panic!("bad response {e}: {out}"));
    out
}

fn code(r: &Value) -> i64 {
    r["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {r}"))
}

fn user(id: &str) -> Value {
    req(
        "steps/userMessage",
        json!({"content": [{"type": "text", "value": "hi", "provenance": {"provenance_id": id, "origin": "user_input"}}]}),
    )
}

fn tool(id: &str, name: &str) -> Value {
    req(
        "steps/toolCallResult",
        json!({"tool": {"name": name}, "exit_status": "success",
               "outputs": [{"value": "out", "provenance": {"provenance_id": id, "origin": "tool_output", "source_id": name}}]}),
    )
}

fn step_id(r: &Value) -> String {
    r["params"]["request_id"].as_str().unwrap().to_string()
}

fn pre(entries: &[&str], trigger: &str) -> Value {
    req(
        "steps/preCompact",
        json!({"entries_to_compact": entries, "triggered_by": trigger}),
    )
}

#[test]
fn handshake_is_required_first() {
    let mut g = guardian_with(Policy::default());
    let r = call(&mut g, &user("p1"));
    // ACS §17.1: a step before the handshake is CAPABILITY_NOT_NEGOTIATED.
    assert_eq!(code(&r), codes::CAPABILITY_NOT_NEGOTIATED);
    assert_eq!(r["error"]["data"]["method"], "steps/userMessage");
    let h = call(&mut g, &hello());
    // The ServerHello is the result itself (current standard) and, for
    // v0.1.0 clients, also under result.payload.
    let server_hello = &h["result"];
    validate::validate(&validate::server_hello(), &h["result"]["payload"], "").unwrap();
    assert_eq!(server_hello["negotiated_version"], "0.1.0");
    assert_eq!(h["result"]["payload"]["negotiated_version"], "0.1.0");
    assert_eq!(server_hello["on_decision_failure"], "proceed");
    assert_eq!(server_hello["profiles_accepted"], json!(["acs-core"]));
    assert_eq!(server_hello["skew_window_ms"], 300000);
    assert_eq!(call(&mut g, &user("p1"))["result"]["decision"], "allow");
    assert_eq!(server_hello["policy_requires_provenance"], true);
    // A client that produces no provenance is refused at handshake time.
    let mut g = guardian_with(Policy::default());
    let mut h = hello();
    h["params"]["payload"]["provenance_producer"] = json!("none");
    let r = call(&mut g, &h);
    assert_eq!(code(&r), codes::PROVENANCE_REQUIRED);
    assert_eq!(
        code(&call(&mut g, &user("p2"))),
        codes::CAPABILITY_NOT_NEGOTIATED
    );
    // Unless the policy does not require provenance.
    let mut g =
        guardian_with(Policy::from_toml("[guardian]\nrequire_provenance = false\n").unwrap());
    let r = call(&mut g, &h);
    assert_eq!(r["result"]["policy_requires_provenance"], false, "{r}");
    // Without provenance the data hooks still validate (base schemas, §7).
    let bare = req(
        "steps/userMessage",
        json!({"content": [{"type": "text", "value": "hi"}]}),
    );
    assert_eq!(call(&mut g, &bare)["result"]["decision"], "allow");
}

#[test]
fn only_negotiated_methods_are_answered() {
    let mut g = guardian_with(Policy::default());
    let mut h = hello();
    h["params"]["payload"]["methods_implemented"] = json!(["steps/userMessage"]);
    let r = call(&mut g, &h);
    assert_eq!(
        r["result"]["methods_evaluated"],
        json!(["steps/userMessage"])
    );
    assert_eq!(call(&mut g, &user("n1"))["result"]["decision"], "allow");
    // Not negotiated: -32003, and in particular no `allow` for sessionEnd.
    let r = call(
        &mut g,
        &req("steps/sessionEnd", json!({"reason": "completed"})),
    );
    assert_eq!(code(&r), codes::CAPABILITY_NOT_NEGOTIATED, "{r}");
    assert_eq!(r["error"]["data"]["method"], "steps/sessionEnd");
    assert_eq!(
        code(&call(&mut g, &tool("n2", "Bash"))),
        codes::CAPABILITY_NOT_NEGOTIATED
    );
}

#[test]
fn hello_over_the_wrong_transport_is_refused() {
    let config = GuardianConfig {
        transport: mnemo_guardian::Transport::Http,
        ..GuardianConfig::default()
    };
    let mut g = Guardian::new(Policy::default(), config, MemoryStore::new()).with_clock(now_ms);
    let r = call(&mut g, &hello()); // offers only stdio
    assert_eq!(code(&r), codes::SESSION_REFUSED, "{r}");
    let mut h = hello();
    h["params"]["payload"]["transports_supported"] = json!(["stdio", "http"]);
    assert_eq!(call(&mut g, &h)["result"]["selected_transport"], "http");
}

#[test]
fn replay_is_per_session_and_nonces_count() {
    let mut g = guardian();
    let u = user("r1");
    assert_eq!(call(&mut g, &u)["result"]["decision"], "allow");
    assert_eq!(code(&call(&mut g, &u)), codes::REPLAY_DETECTED);
    // The same request_id in another (handshaken) session is fresh (§10.3).
    let other = "1c9e6679-7425-40de-944b-e07fc1f90ae8";
    let mut h2 = hello();
    h2["params"]["metadata"]["session_id"] = json!(other);
    assert!(call(&mut g, &h2).get("result").is_some());
    let mut u2 = u.clone();
    u2["params"]["metadata"]["session_id"] = json!(other);
    assert_eq!(call(&mut g, &u2)["result"]["decision"], "allow");
    // A repeated nonce under a fresh request_id is a replay too.
    let mut a = user("r2");
    a["params"]["nonce"] = json!("bm9uY2Utbm9uY2Utbm9uY2U=");
    let mut b = user("r3");
    b["params"]["nonce"] = a["params"]["nonce"].clone();
    assert_eq!(call(&mut g, &a)["result"]["decision"], "allow");
    let r = call(&mut g, &b);
    assert_eq!(code(&r), codes::REPLAY_DETECTED);
    assert_eq!(r["error"]["data"]["reason"], "duplicate_nonce");
}

#[test]
fn ping_never_answers_an_acs_error() {
    let config = GuardianConfig {
        hmac_keys: vec![("k1".into(), b"secret".to_vec())],
        ..GuardianConfig::default()
    };
    let mut g = Guardian::new(Policy::default(), config, MemoryStore::new()).with_clock(now_ms);
    // Unsigned, no handshake, an hour stale, twice with one request_id.
    let mut p = req("system/ping", json!({"echo": "x"}));
    p["params"]["timestamp"] = json!("2026-09-19T09:00:00Z");
    for _ in 0..2 {
        let r = call(&mut g, &p);
        assert_eq!(r["result"]["decision"], "allow", "{r}");
        assert_eq!(r["result"]["payload"]["status"], "ok");
        assert_eq!(r["result"]["payload"]["echo"], "x");
        // Signed all the same, under the session key.
        assert!(
            mnemo_acs::sign::verify_response(&r, SESSION, &[("k1".into(), b"secret".to_vec())])
                .is_ok(),
            "{r}"
        );
    }
    let mut wrong = p.clone();
    sign_request(&mut wrong, "k1", b"wrong");
    assert_eq!(call(&mut g, &wrong)["result"]["decision"], "allow");
    wrong["params"]["acs_version"] = json!("9.0.0");
    assert_eq!(call(&mut g, &wrong)["result"]["decision"], "allow");
}

#[test]
fn modify_incapable_clients_get_allow_at_post_compact() {
    let policy = Policy::from_toml("[guardian]\nmodify_unsupported_agents = [\"a\"]\n").unwrap();
    let mut f = compacted_flow_with(policy);
    let entries = f.entries.clone();
    let (_, resp) = post(&mut f, &["p-u"], "agent_generated", &entries, None);
    let res = &resp["result"];
    assert_eq!(res["decision"], "allow", "{resp}");
    let codes = res["reason_codes"].as_array().unwrap();
    assert_eq!(codes[0], "modify_unsupported");
    assert!(codes.contains(&json!("lineage_mismatch")));
    assert!(res.get("modifications").is_none());
    assert!(
        res["policy_data"]["modify_unsupported"]["intended_modifications"]["parameter_overrides"]
            ["summary"]["provenance"]["derived_from"]
            .as_array()
            .is_some_and(|a| a.len() == 3),
        "{resp}"
    );
}

#[test]
fn error_codes() {
    let mut g = guardian();
    assert_eq!(code(&raw(&mut g, b"{oops")), codes::PARSE_ERROR);
    assert_eq!(code(&raw(&mut g, b"")), codes::PARSE_ERROR);
    assert_eq!(code(&raw(&mut g, b"[1,2]")), codes::INVALID_REQUEST);
    assert_eq!(
        code(&raw(&mut g, br#"{"jsonrpc":"2.0","id":1}"#)),
        codes::INVALID_REQUEST
    );
    // Unknown method in a reserved namespace.
    assert_eq!(
        code(&call(&mut g, &req("steps/noSuchHook", json!({})))),
        codes::METHOD_NOT_FOUND
    );
    // Invalid payload: the failing path is in data.
    let r = call(&mut g, &pre(&[], "manual"));
    assert_eq!(code(&r), codes::INVALID_PARAMS);
    assert_eq!(
        r["error"]["data"]["path"],
        "/params/payload/entries_to_compact"
    );
    let r = call(&mut g, &pre(&["x"], "auto"));
    assert_eq!(r["error"]["data"]["path"], "/params/payload/triggered_by");
    let mut bad = user("p");
    bad["params"]["request_id"] = json!("not-a-uuid");
    assert_eq!(
        call(&mut g, &bad)["error"]["data"]["path"],
        "/params/request_id"
    );
    // Unsupported major version.
    let mut v2 = user("p");
    v2["params"]["acs_version"] = json!("1.0.0");
    assert_eq!(code(&call(&mut g, &v2)), codes::UNSUPPORTED_VERSION);
    let mut h = hello();
    h["params"]["payload"]["acs_versions_supported"] = json!(["2.0.0"]);
    assert_eq!(code(&call(&mut g, &h)), codes::UNSUPPORTED_VERSION);
    // Replay.
    let u = user("p9");
    assert!(call(&mut g, &u).get("result").is_some());
    assert_eq!(code(&call(&mut g, &u)), codes::REPLAY_DETECTED);
    // Timestamp window.
    let mut old = user("p10");
    old["params"]["timestamp"] = json!("2026-09-19T09:00:00Z");
    let r = call(&mut g, &old);
    assert_eq!(code(&r), codes::TIMESTAMP_OUT_OF_WINDOW);
    assert_eq!(r["error"]["data"]["skew_window_ms"], 300_000);
    let mut future = user("p11");
    future["params"]["timestamp"] = json!("2026-09-19T10:04:59+00:00");
    assert!(call(&mut g, &future).get("result").is_some());
    // Too large.
    let mut small = Guardian::new(
        Policy::default(),
        GuardianConfig {
            max_request_bytes: 64,
            ..GuardianConfig::default()
        },
        MemoryStore::new(),
    );
    let big = user("p").to_string();
    assert_eq!(
        code(&raw(&mut small, big.as_bytes())),
        codes::INVALID_REQUEST
    );
}

#[test]
fn hmac_signatures() {
    let config = GuardianConfig {
        hmac_keys: vec![("k1".into(), b"secret".to_vec())],
        ..GuardianConfig::default()
    };
    let mut g = Guardian::new(Policy::default(), config, MemoryStore::new()).with_clock(now_ms);
    let mut h = hello();
    assert_eq!(code(&call(&mut g, &h)), codes::SIGNATURE_INVALID); // unsigned
    sign_request(&mut h, "k1", b"wrong");
    assert_eq!(code(&call(&mut g, &h)), codes::SIGNATURE_INVALID);
    let mut h = hello();
    sign_request(&mut h, "k2", b"secret");
    assert_eq!(code(&call(&mut g, &h)), codes::SIGNATURE_INVALID); // unknown key id
    let mut h = hello();
    sign_request(&mut h, "k1", b"secret");
    let r = call(&mut g, &h);
    assert_eq!(
        r["result"]["signature_algorithms_supported"],
        json!(["HMAC-SHA256"])
    );
    // The response is signed under the session key the request used.
    let keys = [("k1".to_string(), b"secret".to_vec())];
    assert!(
        mnemo_acs::sign::verify_response(&r, SESSION, &keys).is_ok(),
        "{r}"
    );
    assert!(mnemo_acs::sign::verify_response(&r, "another-session", &keys).is_err());
    // Tampering after signing breaks it.
    let mut u = user("p1");
    sign_request(&mut u, "k1", b"secret");
    u["params"]["payload"]["content"][0]["value"] = json!("changed");
    assert_eq!(code(&call(&mut g, &u)), codes::SIGNATURE_INVALID);
    // Key order and whitespace do not matter (RFC 8785).
    let mut u = user("p2");
    sign_request(&mut u, "k1", b"secret");
    let pretty = serde_json::to_string_pretty(&u).unwrap();
    assert!(raw(&mut g, pretty.as_bytes()).get("result").is_some());
}

#[test]
fn precompact_deny_names_the_exit_and_each_exit_works() {
    let mut g = guardian();
    let u1 = user("p-user-1");
    let t1 = tool("p-tool-1", "web_fetch");
    for r in [&u1, &t1] {
        let resp = call(&mut g, r);
        assert!(
            resp["result"]["chain_hash"]
                .as_str()
                .is_some_and(|h| h.len() == 64),
            "{resp}"
        );
    }
    let entries = [step_id(&u1), step_id(&t1)];
    let e: Vec<&str> = entries.iter().map(String::as_str).collect();
    let r = call(&mut g, &pre(&e, "size_threshold"));
    let res = &r["result"];
    assert_eq!(res["decision"], "deny", "{r}");
    assert_eq!(res["reason_codes"], json!(["aarm_cumulative_taint"]));
    assert_eq!(res["cited_provenance_ids"], json!(["p-tool-1"]));
    assert_eq!(
        res["policy_data"]["aarm"]["earliest_untrusted_step_id"],
        json!(step_id(&t1))
    );
    assert_eq!(res["policy_data"]["aarm"]["regrounding_since"], false);
    assert_eq!(res["policy_data"]["exit"]["manual_override"], true);
    let why = res["reasoning"].as_str().unwrap();
    assert!(
        why.contains("re-grounding") && why.contains("user_input") && why.contains("manual"),
        "{why}"
    );
    // Exit 1: the user asks for it.
    let r = call(&mut g, &pre(&e, "manual"));
    assert_eq!(r["result"]["decision"], "allow");
    assert!(
        r["result"]["reason_codes"]
            .as_array()
            .unwrap()
            .contains(&json!("manual_override"))
    );
    // Exit 2: a re-grounding from a trusted origin after the untrusted entry.
    call(&mut g, &user("p-user-2"));
    let r = call(&mut g, &pre(&e, "size_threshold"));
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    assert_eq!(
        r["result"]["policy_data"]["aarm"]["regrounding_since"],
        true
    );
}

#[test]
fn on_untrusted_allow_and_source_rules() {
    let policy = Policy::from_toml(
        "[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"mcp__github__*\"\ntrust = \"trusted\"\n",
    )
    .unwrap();
    let mut g = guardian_with(policy);
    call(&mut g, &hello());
    let t = tool("p-gh", "mcp__github__get_issue");
    call(&mut g, &t);
    let r = call(&mut g, &pre(&[&step_id(&t)], "size_threshold"));
    assert_eq!(r["result"]["decision"], "allow");
    let mut g =
        guardian_with(Policy::from_toml("[compaction]\non_untrusted = \"allow\"\n").unwrap());
    call(&mut g, &hello());
    let t = tool("p-x", "Bash");
    call(&mut g, &t);
    let r = call(&mut g, &pre(&[&step_id(&t)], "size_threshold"));
    assert_eq!(r["result"]["decision"], "allow");
    assert!(
        r["result"]["reason_codes"]
            .as_array()
            .unwrap()
            .contains(&json!("aarm_cumulative_taint"))
    );
}

#[test]
fn precompact_uses_summary_and_flags_unrecorded_entries() {
    let mut g = guardian();
    let r = call(
        &mut g,
        &req(
            "steps/preCompact",
            json!({"entries_to_compact": ["s1", "s2"], "triggered_by": "size_threshold",
            "pre_compact_provenance_summary": {"origins_seen": ["user_input", "retrieved"], "earliest_step_id_by_origin": {"retrieved": "s2"}}}),
        ),
    );
    assert_eq!(r["result"]["decision"], "deny");
    assert_eq!(
        r["result"]["policy_data"]["aarm"]["earliest_untrusted_step_id"],
        "s2"
    );
    let r = call(
        &mut g,
        &req(
            "steps/preCompact",
            json!({"entries_to_compact": ["ghost"], "triggered_by": "size_threshold"}),
        ),
    );
    assert_eq!(r["result"]["decision"], "deny");
    assert!(
        r["result"]["reason_codes"]
            .as_array()
            .unwrap()
            .contains(&json!("unrecorded_entries"))
    );
    let r = call(
        &mut g,
        &req(
            "steps/preCompact",
            json!({"entries_to_compact": ["s1"], "triggered_by": "size_threshold",
            "pre_compact_provenance_summary": {"origins_seen": ["user_input", "system", "agent_generated"]}}),
        ),
    );
    assert_eq!(r["result"]["decision"], "allow");
}

struct Flow {
    g: Guardian<MemoryStore>,
    entries: Vec<String>,
}

/// user, tool, agent response; an allowed (manual) preCompact of all three.
fn compacted_flow() -> Flow {
    compacted_flow_with(Policy::default())
}

fn compacted_flow_with(policy: Policy) -> Flow {
    let mut g = guardian_with(policy);
    let r = call(&mut g, &hello());
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    let u = user("p-u");
    let t = tool("p-t", "Bash");
    let a = req(
        "steps/agentResponse",
        json!({"content": [{"type": "text", "value": "ok", "provenance": {"provenance_id": "p-a", "origin": "agent_generated", "derived_from": ["p-u", "p-t"]}}]}),
    );
    for r in [&u, &t, &a] {
        call(&mut g, r);
    }
    let entries = vec![step_id(&u), step_id(&t), step_id(&a)];
    let e: Vec<&str> = entries.iter().map(String::as_str).collect();
    assert_eq!(
        call(&mut g, &pre(&e, "manual"))["result"]["decision"],
        "allow"
    );
    Flow { g, entries }
}

fn post(
    f: &mut Flow,
    derived: &[&str],
    origin: &str,
    entries: &[String],
    pre_hash: Option<String>,
) -> (Value, Value) {
    let head = f.g.store_mut().chain_head(SESSION).unwrap().unwrap();
    let pre_hex = pre_hash.unwrap_or_else(|| chain::to_hex(&head.1));
    let mut r = req(
        "steps/postCompact",
        json!({"summary": {"value": "sum", "provenance": {"provenance_id": "p-sum", "origin": origin, "derived_from": derived}},
               "entries_compacted": entries, "pre_compact_chain_hash": pre_hex, "post_compact_chain_hash": "0".repeat(64)}),
    );
    let post_hex = expected_post_compact_hash(&r["params"], head.0 + 1, Some(&head.1)).unwrap();
    r["params"]["payload"]["post_compact_chain_hash"] = json!(post_hex);
    let resp = call(&mut f.g, &r);
    (r, resp)
}

#[test]
fn postcompact_verifies_lineage_and_chain() {
    let mut f = compacted_flow();
    let entries = f.entries.clone();
    let (r, resp) = post(
        &mut f,
        &["p-u", "p-t", "p-a"],
        "agent_generated",
        &entries,
        None,
    );
    let res = &resp["result"];
    assert_eq!(res["decision"], "allow", "{resp}");
    assert_eq!(res["reason_codes"], json!(["lineage_verified"]));
    assert_eq!(
        res["chain_hash"],
        r["params"]["payload"]["post_compact_chain_hash"]
    );
    assert_eq!(res["policy_data"]["fides"]["summary_trust"], "untrusted");
    // The summary is recorded: compacting it later sees its untrusted lineage.
    let r2 = call(&mut f.g, &pre(&[&step_id(&r)], "size_threshold"));
    assert_eq!(r2["result"]["decision"], "deny", "{r2}");
    assert_eq!(r2["result"]["cited_provenance_ids"], json!(["p-sum"]));
}

#[test]
fn postcompact_modifies_never_denies() {
    // Lineage missing the untrusted id: mismatch and trust rise.
    let mut f = compacted_flow();
    let entries = f.entries.clone();
    let (_, resp) = post(&mut f, &["p-u"], "agent_generated", &entries, None);
    let res = &resp["result"];
    assert_eq!(res["decision"], "modify", "{resp}");
    let codes = res["reason_codes"].as_array().unwrap();
    assert!(
        codes.contains(&json!("lineage_mismatch")) && codes.contains(&json!("trust_rise")),
        "{codes:?}"
    );
    assert_eq!(
        res["modifications"]["parameter_overrides"]["summary"]["provenance"]["derived_from"],
        json!(["p-a", "p-t", "p-u"])
    );
    // Wrong origin.
    let mut f = compacted_flow();
    let entries = f.entries.clone();
    let (_, resp) = post(&mut f, &["p-u", "p-t", "p-a"], "user_input", &entries, None);
    assert!(
        resp["result"]["reason_codes"]
            .as_array()
            .unwrap()
            .contains(&json!("origin_not_agent_generated"))
    );
    assert_eq!(
        resp["result"]["modifications"]["parameter_overrides"]["summary"]["provenance"]["origin"],
        "agent_generated"
    );
    // Entries differ from the preCompact that allowed them.
    let mut f = compacted_flow();
    let entries = f.entries[..2].to_vec();
    let (_, resp) = post(&mut f, &["p-u", "p-t"], "agent_generated", &entries, None);
    assert!(
        resp["result"]["reason_codes"]
            .as_array()
            .unwrap()
            .contains(&json!("precompact_mismatch")),
        "{resp}"
    );
    // Chain mismatch.
    let mut f = compacted_flow();
    let entries = f.entries.clone();
    let (_, resp) = post(
        &mut f,
        &["p-u", "p-t", "p-a"],
        "agent_generated",
        &entries,
        Some("1".repeat(64)),
    );
    assert_eq!(resp["result"]["decision"], "modify");
    assert!(
        resp["result"]["reason_codes"]
            .as_array()
            .unwrap()
            .contains(&json!("chain_mismatch"))
    );
    // No allowed preCompact at all.
    let mut g = guardian();
    let u = user("p-u");
    call(&mut g, &u);
    let mut f = Flow {
        g,
        entries: vec![step_id(&u)],
    };
    let entries = f.entries.clone();
    let (_, resp) = post(&mut f, &["p-u"], "agent_generated", &entries, None);
    assert!(
        resp["result"]["reason_codes"]
            .as_array()
            .unwrap()
            .contains(&json!("no_precompact"))
    );
    assert_ne!(resp["result"]["decision"], "deny");
}

#[test]
fn chain_entries_rehash_to_published_heads() {
    let mut g = guardian();
    let mut heads = Vec::new();
    for i in 0..5 {
        let r = call(&mut g, &user(&format!("p{i}")));
        heads.push(r["result"]["chain_hash"].as_str().unwrap().to_string());
    }
    let entries = g.store_mut().chain_entries(SESSION);
    assert_eq!(entries.len(), 5);
    let mut prev: Option<chain::Hash> = None;
    for ((canonical, hash), published) in entries.iter().zip(&heads) {
        let v: Value = serde_json::from_str(canonical).unwrap();
        assert_eq!(&mnemo_guardian::jcs::canonicalize(&v), canonical);
        let h = chain::entry_hash(&v, prev.as_ref());
        assert_eq!(&h, hash);
        assert_eq!(&chain::to_hex(&h), published);
        prev = Some(h);
    }
}

#[test]
fn ping_and_schema_less_steps() {
    let mut g = guardian();
    let r = call(&mut g, &req("system/ping", json!({"echo": "x"})));
    assert_eq!(r["result"]["payload"]["echo"], "x");
    let r = call(&mut g, &req("steps/sessionStart", json!({})));
    assert_eq!(r["result"]["decision"], "allow");
}

#[test]
fn batch_answers_in_order_like_single_requests() {
    let mut g = guardian();
    let u = user("b-1");
    let t = tool("b-2", "Bash");
    let p = pre(&[&step_id(&u), &step_id(&t)], "size_threshold");
    let out = g.handle_batch(&[u.clone(), t, p, u, json!("junk")]);
    assert_eq!(out.len(), 5);
    assert_eq!(out[0]["result"]["decision"], "allow");
    assert_eq!(out[1]["result"]["decision"], "allow");
    assert_eq!(out[2]["result"]["decision"], "deny");
    assert_eq!(out[3]["error"]["code"], codes::REPLAY_DETECTED);
    assert_eq!(out[4]["error"]["code"], codes::INVALID_REQUEST);
}

/// A store whose writes fail: the Guardian answers -32603, never panics.
struct BrokenStore(MemoryStore);

impl SessionStore for BrokenStore {
    fn handshake(
        &mut self,
        s: &str,
    ) -> Result<Option<mnemo_guardian::store::SessionHandshake>, mnemo_guardian::store::StoreError>
    {
        self.0.handshake(s)
    }
    fn set_handshake(
        &mut self,
        s: &str,
        h: &mnemo_guardian::store::SessionHandshake,
    ) -> Result<(), mnemo_guardian::store::StoreError> {
        self.0.set_handshake(s, h)
    }
    fn mark_request(
        &mut self,
        s: &str,
        r: &str,
        at: i64,
    ) -> Result<bool, mnemo_guardian::store::StoreError> {
        self.0.mark_request(s, r, at)
    }
    fn mark_nonce(
        &mut self,
        s: &str,
        n: &str,
        at: i64,
    ) -> Result<bool, mnemo_guardian::store::StoreError> {
        self.0.mark_nonce(s, n, at)
    }
    fn record_step(
        &mut self,
        _: &str,
        _: &mnemo_guardian::store::StepRecord,
    ) -> Result<(), mnemo_guardian::store::StoreError> {
        Err(mnemo_guardian::store::StoreError::Corrupt(
            "disk on fire".into(),
        ))
    }
    fn steps(
        &mut self,
        s: &str,
    ) -> Result<Vec<mnemo_guardian::store::StepRecord>, mnemo_guardian::store::StoreError> {
        self.0.steps(s)
    }
    fn chain_head(
        &mut self,
        s: &str,
    ) -> Result<Option<(u64, chain::Hash)>, mnemo_guardian::store::StoreError> {
        self.0.chain_head(s)
    }
    fn append_chain(
        &mut self,
        s: &str,
        seq: u64,
        c: &str,
        h: &chain::Hash,
    ) -> Result<(), mnemo_guardian::store::StoreError> {
        self.0.append_chain(s, seq, c, h)
    }
    fn record_compaction(
        &mut self,
        s: &str,
        r: &mnemo_guardian::store::CompactionRecord,
    ) -> Result<(), mnemo_guardian::store::StoreError> {
        self.0.record_compaction(s, r)
    }
    fn last_compaction(
        &mut self,
        s: &str,
    ) -> Result<Option<mnemo_guardian::store::CompactionRecord>, mnemo_guardian::store::StoreError>
    {
        self.0.last_compaction(s)
    }
}

#[test]
fn store_failure_is_an_internal_error() {
    let mut g = Guardian::new(
        Policy::default(),
        GuardianConfig::default(),
        BrokenStore(MemoryStore::new()),
    )
    .with_clock(now_ms);
    assert!(call(&mut g, &hello()).get("result").is_some());
    let r = call(&mut g, &user("p-x"));
    assert_eq!(code(&r), codes::INTERNAL_ERROR);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("disk on fire")
    );
}

#[test]
fn a_client_chain_hash_that_differs_is_chain_mismatch() {
    let mut g = guardian();
    let r = call(&mut g, &user("c1"));
    let head = r["result"]["chain_hash"].as_str().unwrap().to_string();
    let mut ok = user("c2");
    ok["params"]["metadata"]["session_state"] = json!({"chain_hash": head});
    assert_eq!(call(&mut g, &ok)["result"]["decision"], "allow");
    let mut bad = user("c3");
    bad["params"]["metadata"]["session_state"] = json!({"chain_hash": "f".repeat(64)});
    let r = call(&mut g, &bad);
    assert_eq!(code(&r), codes::CHAIN_MISMATCH, "{r}");
}

#[test]
fn wrapped_mcp_is_evaluated_when_negotiated() {
    let mut g = guardian_with(Policy::default());
    let mut h = hello();
    h["params"]["payload"]["methods_implemented"] =
        json!(["steps/toolCallRequest", "protocols/MCP/tools/call"]);
    let r = call(&mut g, &h);
    assert_eq!(
        r["result"]["methods_evaluated"],
        json!(["steps/toolCallRequest", "protocols/MCP/tools/call"])
    );
    let mcp = req(
        "protocols/MCP/tools/call",
        json!({"name": "read", "arguments": {}}),
    );
    assert_eq!(call(&mut g, &mcp)["result"]["decision"], "allow");
    let other = req("protocols/MCP/resources/read", json!({"uri": "file:///x"}));
    assert_eq!(
        code(&call(&mut g, &other)),
        codes::CAPABILITY_NOT_NEGOTIATED
    );
}

#[test]
fn tool_rules_deny_unregistered_and_listed_calls() {
    let policy = Policy::from_toml(
        "[tools]\nregistered = [\"Bash\"]\n[[tools.deny]]\ntool = \"Bash\"\ncommand = \"rm -rf /*\"\n",
    )
    .unwrap();
    let mut g = guardian_with(policy);
    call(&mut g, &hello());
    let bash = |cmd: &str| {
        req(
            "steps/toolCallRequest",
            json!({"tool": {"name": "Bash"}, "arguments": {"command": {"value": cmd}}, "raw_command": cmd}),
        )
    };
    let ok = call(&mut g, &bash("ls"));
    assert_eq!(ok["result"]["decision"], "allow");
    let r = call(&mut g, &bash("rm -rf /"));
    assert_eq!(r["result"]["decision"], "deny", "{r}");
    assert_eq!(r["result"]["reason_codes"], json!(["tool_denied"]));
    // A deny is recorded and chained like any step.
    assert_ne!(r["result"]["chain_hash"], ok["result"]["chain_hash"]);
    let other = req(
        "steps/toolCallRequest",
        json!({"tool": {"name": "records.lookup"}, "arguments": {"id": {"value": "1"}}}),
    );
    let r = call(&mut g, &other);
    assert_eq!(r["result"]["reason_codes"], json!(["tool_unregistered"]));
    // No [tools]: every tool is allowed, as before.
    let mut g = guardian();
    assert_eq!(call(&mut g, &other)["result"]["decision"], "allow");
    assert!(Policy::from_toml("[[tools.deny]]\ncommand = \"x\"\n").is_err());
}

#[test]
fn unresolved_request_id_ref_is_recorded_and_denied_only_by_policy() {
    let result = |r: &str| {
        req(
            "steps/toolCallResult",
            json!({"execution_id": "e1", "exit_status": "success", "request_id_ref": r}),
        )
    };
    let call_req = req(
        "steps/toolCallRequest",
        json!({"tool": {"name": "Read"}, "arguments": {}}),
    );
    let called = step_id(&call_req);
    let never = "00000000-0000-4000-8000-999999999999";
    let mut g = guardian();
    assert_eq!(call(&mut g, &call_req)["result"]["decision"], "allow");

    // Resolved: no finding.
    let r = call(&mut g, &result(&called));
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    assert!(r["result"].get("policy_data").is_none(), "{r}");

    // Unresolved: allowed by default, recorded in the response and the chain entry.
    let r = call(&mut g, &result(never));
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    assert_eq!(
        r["result"]["reason_codes"],
        json!(["request_id_ref_unresolved"])
    );
    assert_eq!(
        r["result"]["policy_data"]["audit_findings"][0]["request_id_ref"],
        never
    );
    let entries = g.store_mut().chain_entries(SESSION);
    let (last, _) = entries.last().unwrap();
    let entry: Value = serde_json::from_str(last).unwrap();
    assert_eq!(entry["findings"][0]["finding"], "request_id_ref_unresolved");
    assert_eq!(entry["findings"][0]["request_id_ref"], never);
    // A reference to a step that is not a toolCallRequest does not resolve.
    let u = user("p-ref");
    let uid = step_id(&u);
    call(&mut g, &u);
    let r = call(&mut g, &result(&uid));
    assert_eq!(
        r["result"]["reason_codes"],
        json!(["request_id_ref_unresolved"])
    );

    // The policy may deny it; the record stays.
    let policy = Policy::from_toml("[tools]\non_unresolved_ref = \"deny\"\n").unwrap();
    let mut g = guardian_with(policy);
    call(&mut g, &hello());
    let r = call(&mut g, &result(never));
    assert_eq!(r["result"]["decision"], "deny", "{r}");
    assert_eq!(
        r["result"]["reason_codes"],
        json!(["request_id_ref_unresolved"])
    );
    assert!(r["result"]["chain_hash"].is_string());
    let e = Policy::from_toml("[tools]\non_unresolved_ref = \"maybe\"\n").unwrap_err();
    assert_eq!(e.key, "tools.on_unresolved_ref");
}

fn tool_call(name: &str, agent: &str, turn: Option<&str>) -> Value {
    let mut r = req(
        "steps/toolCallRequest",
        json!({"tool": {"name": name}, "arguments": {"id": {"value": "c-1"}}}),
    );
    r["params"]["metadata"]["agent_id"] = json!(agent);
    if let Some(t) = turn {
        r["params"]["metadata"]["turn_id"] = json!(t);
    }
    r
}

/// Per-turn budgets: the Guardian counts the calls (here in the memory
/// store; `guard http|stdio` run the Guardian's own count, which the
/// conformance vectors v448a61c91554a125 / v10351021bf6e46b1 drive).
#[test]
fn per_turn_budget_counts_calls_itself() {
    let policy =
        Policy::from_toml("[[tools.budget]]\ntool = \"records.*\"\nmax_calls_per_turn = 3\n")
            .unwrap();
    let mut g = guardian_with(policy);
    call(&mut g, &hello());
    for i in 1..=3 {
        let r = call(&mut g, &tool_call("records.lookup", "a", Some("t1")));
        assert_eq!(r["result"]["decision"], "allow", "call {i}: {r}");
    }
    // The fourth claims a fresh count; the claim is not read.
    let mut hint = tool_call("records.lookup", "a", Some("t1"));
    hint["params"]["metadata"]["session_state"] = json!({"records.lookup_calls_this_turn": 0});
    let r = call(&mut g, &hint);
    assert_eq!(r["result"]["decision"], "deny", "{r}");
    assert_eq!(r["result"]["reason_codes"], json!(["budget_exhausted"]));
    assert!(r["result"]["chain_hash"].is_string(), "a deny is recorded");
    // Another tool under the same glob shares the turn's budget; a new
    // turn starts again; an unbudgeted tool is not counted.
    let r = call(&mut g, &tool_call("records.write", "a", Some("t1")));
    assert_eq!(r["result"]["decision"], "deny", "{r}");
    let r = call(&mut g, &tool_call("records.lookup", "a", Some("t2")));
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    for _ in 0..5 {
        let r = call(&mut g, &tool_call("Read", "a", Some("t1")));
        assert_eq!(r["result"]["decision"], "allow", "{r}");
    }
}

/// ACS §9 / §9.2: a call that needs approval is allowed on a grant of an
/// authenticated approver bound to the agent and tool; otherwise denied
/// with approver_unavailable (mnemo never answers ASK).
#[test]
fn approvals_are_bound_and_never_asked() {
    let policy = Policy::from_toml(
        "[tools.approval]\nrequired = [\"records.write\"]\napprovers = [\"human:u-1\"]\n[[tools.approval.grant]]\napprover = \"human:u-1\"\nagent_id = \"agent-A\"\ntool = \"records.write\"\n",
    )
    .unwrap();
    let mut g = guardian_with(policy);
    call(&mut g, &hello());
    let r = call(&mut g, &tool_call("records.write", "agent-A", None));
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    let r = call(&mut g, &tool_call("records.write", "agent-B", None));
    assert_eq!(r["result"]["decision"], "deny", "{r}");
    assert_eq!(
        r["result"]["reason_codes"],
        json!(["approver_unavailable", "approval_binding_mismatch"])
    );
    assert_eq!(
        r["result"]["policy_references"][0]["rule_id"],
        "approver_unavailable"
    );
    assert!(
        r["result"]["reasoning"]
            .as_str()
            .is_some_and(|s| s.contains("agent-A")),
        "{r}"
    );
    let r = call(&mut g, &tool_call("records.lookup", "agent-B", None));
    assert_eq!(r["result"]["decision"], "allow", "no approval required");
}

/// `[tools] refusal_form = "error"`: the capability refusals (a tool outside
/// the registered set, a spent budget, a call no approval covers) become
/// CAPABILITY_NOT_NEGOTIATED errors, as the ACS-Core vectors ask; other
/// denies stay decisions. The form needs a fail-closed posture.
#[test]
fn refusal_form_error_answers_capability_refusals_with_32003() {
    let e = Policy::from_toml("[tools]\nrefusal_form = \"error\"\n").unwrap_err();
    assert_eq!(e.key, "tools.refusal_form");
    assert!(e.reason.contains("on_decision_failure"), "{e}");
    let e = Policy::from_toml("[tools]\nrefusal_form = \"maybe\"\n").unwrap_err();
    assert_eq!(e.key, "tools.refusal_form");
    let policy = Policy::from_toml(
        "[guardian]\non_decision_failure = \"deny\"\n[tools]\nrefusal_form = \"error\"\nregistered = [\"records.*\", \"Bash\"]\n[[tools.deny]]\ntool = \"Bash\"\n[[tools.budget]]\ntool = \"records.lookup\"\nmax_calls_per_turn = 1\n[tools.approval]\nrequired = [\"records.write\"]\napprovers = [\"human:u-1\"]\n[[tools.approval.grant]]\napprover = \"human:u-1\"\nagent_id = \"agent-A\"\ntool = \"records.write\"\n",
    )
    .unwrap();
    let mut g = guardian_with(policy);
    call(&mut g, &hello());
    let r = call(&mut g, &tool_call("records.lookup", "agent-A", Some("t1")));
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    let r = call(&mut g, &tool_call("records.lookup", "agent-A", Some("t1")));
    assert_eq!(r["error"]["code"], -32003, "{r}");
    assert_eq!(r["error"]["data"]["reason"], "budget_exhausted");
    assert_eq!(r["error"]["data"]["capability"], "records.lookup");
    let r = call(&mut g, &tool_call("records.delete.all", "agent-A", None));
    assert_eq!(r["result"]["decision"], "allow", "registered by glob: {r}");
    let r = call(&mut g, &tool_call("files.delete", "agent-A", None));
    assert_eq!(r["error"]["code"], -32003, "{r}");
    assert_eq!(r["error"]["data"]["reason"], "tool_unregistered");
    let r = call(&mut g, &tool_call("records.write", "agent-B", None));
    assert_eq!(r["error"]["code"], -32003, "{r}");
    assert_eq!(
        r["error"]["data"]["reason_codes"],
        json!(["approver_unavailable", "approval_binding_mismatch"])
    );
    let r = call(&mut g, &tool_call("records.write", "agent-A", None));
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    // A policy deny rule is not a capability refusal: still a decision.
    let r = call(&mut g, &tool_call("Bash", "agent-A", None));
    assert_eq!(r["result"]["decision"], "deny", "{r}");
    assert_eq!(r["result"]["reason_codes"], json!(["tool_denied"]));
}

/// `[guardian] permitted_agents`: a hello (and any step) from an agent the
/// policy does not permit is SESSION_REFUSED (-32000, §17.1); a permitted
/// agent's session runs; `system/ping` is never refused (§13).
#[test]
fn agents_the_policy_does_not_permit_are_refused_the_session() {
    let policy = Policy::from_toml("[guardian]\npermitted_agents = [\"agent-*\"]\n").unwrap();
    let mut g = guardian_with(policy);
    let r = call(&mut g, &hello());
    assert_eq!(r["error"]["code"], -32000, "{r}");
    assert_eq!(r["error"]["data"]["reason"], "agent_not_permitted");
    assert_eq!(r["error"]["data"]["agent_id"], "a");
    let mut h = hello();
    h["params"]["metadata"]["agent_id"] = json!("agent-A");
    let r = call(&mut g, &h);
    assert!(r["result"]["negotiated_version"].is_string(), "{r}");
    let r = call(&mut g, &tool_call("Read", "agent-A", None));
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    let r = call(&mut g, &tool_call("Read", "b", None));
    assert_eq!(r["error"]["code"], -32000, "{r}");
    let r = call(&mut g, &req("system/ping", json!({})));
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    let none = Policy::from_toml("[guardian]\npermitted_agents = []\n").unwrap();
    let mut g = guardian_with(none);
    let mut h = hello();
    h["params"]["metadata"]["agent_id"] = json!("agent-A");
    assert_eq!(call(&mut g, &h)["error"]["code"], -32000);
    let e = Policy::from_toml("[guardian]\npermitted_agents = \"a\"\n").unwrap_err();
    assert_eq!(e.key, "guardian.permitted_agents");
}

/// What the host's transcript holds at PostCompact and the allowed
/// PreCompact did not judge (lines the host wrote after an allow that
/// did not wait for them) joins the summary's lineage and is recorded with
/// the postCompact step, so a later compaction of the summary resolves it.
#[test]
fn host_post_compact_adds_what_the_transcript_held_since() {
    use mnemo_guardian::decide::EntryProvenance;
    use mnemo_guardian::policy::Trust;
    use mnemo_guardian::protocol::{HostCompaction, HostPostCompaction};
    use mnemo_guardian::{Origin, Provenance, Trigger};
    let node = |id: &str, o: Origin| Provenance::new(id, o, Some("src"));
    let run = |late: Provenance| {
        let mut g = guardian_with(Policy::default());
        let judged = vec![EntryProvenance::single(
            "e1",
            node("e1#0", Origin::UserInput),
        )];
        let (d, rec) = g.pre_compact_from_host(&HostCompaction {
            session_id: "s",
            agent_id: "claude-code",
            request_id: "pre-1",
            entries: &judged,
            after: &[],
            trigger: Trigger::Manual,
        });
        rec.unwrap();
        assert!(d.allowed(), "{}", d.reasoning);
        let transcript = vec![node("e1#0", Origin::UserInput), late.clone(), late];
        let (r, h) = g.post_compact_from_host(&HostPostCompaction {
            session_id: "s",
            agent_id: "claude-code",
            request_id: "post-1",
            summary_id: "sum-1",
            summary_source: "claude-code:compact-summary",
            unknown_lineage: "unknown",
            transcript: &transcript,
        });
        h.unwrap();
        // a later auto compaction of the summary alone resolves its
        // lineage through the store
        let next = vec![EntryProvenance::single(
            "s1",
            Provenance {
                provenance_id: "s1#0".into(),
                origin: Origin::AgentGenerated,
                source_id: None,
                derived_from: vec!["sum-1".into()],
            },
        )];
        let (d2, rec2) = g.pre_compact_from_host(&HostCompaction {
            session_id: "s",
            agent_id: "claude-code",
            request_id: "pre-2",
            entries: &next,
            after: &[],
            trigger: Trigger::SizeThreshold,
        });
        rec2.unwrap();
        (r, d2)
    };
    let (r, next) = run(node("late#0", Origin::ToolOutput));
    assert_eq!(r.pre_compact.as_deref(), Some("pre-1"));
    assert_eq!(r.summary.derived_from, vec!["e1#0", "late#0"]);
    assert_eq!(r.trust, Trust::Untrusted, "{}", r.reasoning);
    assert!(
        r.reasoning.contains("1 the transcript held"),
        "{}",
        r.reasoning
    );
    assert!(!next.allowed(), "{}", next.reasoning);
    // a trusted late node is resolved (recorded), not unknown lineage
    let (r, next) = run(node("late#0", Origin::System));
    assert_eq!(r.trust, Trust::Trusted, "{}", r.reasoning);
    assert!(next.allowed(), "{}", next.reasoning);
}

/// A host's PostCompact takes its lineage from the allowed PreCompact that
/// waits for it (found through the store's indexes), once: a second one
/// finds it consumed; the summary's trust follows the recorded nodes its
/// lineage reaches.
#[test]
fn host_post_compact_takes_the_waiting_pre_compact_once() {
    use mnemo_guardian::decide::EntryProvenance;
    use mnemo_guardian::policy::Trust;
    use mnemo_guardian::protocol::{HostCompaction, HostPostCompaction};
    use mnemo_guardian::{Origin, Provenance, Trigger};
    let mut g = guardian_with(Policy::default());
    let entry = |id: &str, o: Origin| EntryProvenance {
        step_id: id.into(),
        provenance: vec![Provenance::new(format!("{id}#0"), o, Some("src"))],
    };
    let entries = vec![
        entry("e1", Origin::UserInput),
        entry("e2", Origin::AgentGenerated),
    ];
    let pre = |g: &mut Guardian<MemoryStore>, rid: &str, entries: &[EntryProvenance]| {
        let (d, rec) = g.pre_compact_from_host(&HostCompaction {
            session_id: "s",
            agent_id: "codex",
            request_id: rid,
            entries,
            after: &[],
            trigger: Trigger::Manual,
        });
        rec.unwrap();
        d
    };
    let post = |g: &mut Guardian<MemoryStore>, rid: &str, summary: &str| {
        let (r, h) = g.post_compact_from_host(&HostPostCompaction {
            session_id: "s",
            agent_id: "codex",
            request_id: rid,
            summary_id: summary,
            summary_source: "codex:summary",
            unknown_lineage: "unknown",
            transcript: &[],
        });
        h.unwrap();
        r
    };
    assert!(pre(&mut g, "pre-1", &entries).allowed());
    // other sessions' steps never count
    let r = g.post_compact_from_host(&HostPostCompaction {
        session_id: "other",
        agent_id: "codex",
        request_id: "post-x",
        summary_id: "sum-x",
        summary_source: "codex:summary",
        unknown_lineage: "unknown",
        transcript: &[],
    });
    assert_eq!(r.0.pre_compact, None);
    let first = post(&mut g, "post-1", "sum-1");
    assert_eq!(first.pre_compact.as_deref(), Some("pre-1"));
    assert_eq!(first.summary.derived_from, vec!["e1#0", "e2#0"]);
    assert_eq!(first.trust, Trust::Trusted, "{}", first.reasoning);
    let second = post(&mut g, "post-2", "sum-2");
    assert_eq!(second.pre_compact, None, "{}", second.reasoning);
    assert_eq!(second.summary.derived_from, vec!["unknown"]);
    assert_eq!(second.trust, Policy::default().unknown_lineage);
    let mut g2 = guardian_with(Policy::default());
    // an untrusted entry judged by the allowed preCompact makes the summary untrusted
    let tainted = vec![
        entry("t1", Origin::UserInput),
        EntryProvenance {
            step_id: "t2".into(),
            provenance: vec![Provenance::new(
                "t2#0",
                Origin::Retrieved,
                Some("https://x"),
            )],
        },
    ];
    let (d, rec) = g2.pre_compact_from_host(&HostCompaction {
        session_id: "s",
        agent_id: "codex",
        request_id: "pre-t",
        entries: &tainted,
        after: &[],
        trigger: Trigger::Manual,
    });
    rec.unwrap();
    assert!(d.allowed(), "manual override: {}", d.reasoning);
    let r = post(&mut g2, "post-t", "sum-t");
    assert_eq!(r.pre_compact.as_deref(), Some("pre-t"));
    assert_eq!(r.trust, Trust::Untrusted, "{}", r.reasoning);
}

/// The chain entry of a host's compaction carries the request hash of the
/// whole `steps/preCompact` params a client would have sent: the payload
/// put into the params once hashes as the params with their payload built
/// as an `AcsParams`.
#[test]
fn host_pre_compact_request_hash_covers_the_whole_payload() {
    use mnemo_guardian::decide::EntryProvenance;
    use mnemo_guardian::model::{self, AcsParams, PreCompact};
    use mnemo_guardian::protocol::{HostCompaction, step_request_hash};
    use mnemo_guardian::{Origin, Provenance, Trigger};
    let entries: Vec<EntryProvenance> = (0..5)
        .map(|i| EntryProvenance {
            step_id: format!("e{i}"),
            provenance: vec![Provenance::new(
                format!("e{i}#0"),
                if i == 3 {
                    Origin::ToolOutput
                } else {
                    Origin::UserInput
                },
                Some("src"),
            )],
        })
        .collect();
    for trigger in [Trigger::Manual, Trigger::SizeThreshold] {
        let mut g = guardian_with(Policy::default());
        let (_, rec) = g.pre_compact_from_host(&HostCompaction {
            session_id: "s",
            agent_id: "claude-code",
            request_id: "pre-1",
            entries: &entries,
            after: &[],
            trigger,
        });
        rec.unwrap();
        let chain = g.store_mut().chain_entries("s");
        let entry: Value = serde_json::from_str(&chain[0].0).unwrap();
        let all: Vec<Provenance> = entries.iter().flat_map(|e| e.provenance.clone()).collect();
        let mut summary = model::summarize(&all);
        let mut earliest = std::collections::BTreeMap::new();
        for e in &entries {
            for p in &e.provenance {
                earliest
                    .entry(p.origin.as_str().to_string())
                    .or_insert_with(|| e.step_id.clone());
            }
        }
        summary.earliest_step_id_by_origin = Some(earliest);
        let pc = PreCompact {
            entries_to_compact: entries.iter().map(|e| e.step_id.clone()).collect(),
            pre_compact_provenance_summary: Some(summary),
            triggered_by: trigger,
            estimated_input_tokens: None,
            target_summary_tokens: None,
        };
        let params = AcsParams {
            acs_version: mnemo_guardian::model::ACS_VERSION.to_string(),
            request_id: "pre-1".into(),
            timestamp: mnemo_guardian::time::format_rfc3339_ms(now_ms()),
            nonce: None,
            metadata: model::Metadata {
                agent_id: "claude-code".into(),
                session_id: "s".into(),
                turn_id: None,
            },
            payload: match serde_json::to_value(&pc).unwrap() {
                Value::Object(m) => m,
                _ => unreachable!(),
            },
            signature: None,
        };
        let want = step_request_hash("steps/preCompact", &serde_json::to_value(&params).unwrap());
        assert_eq!(
            entry["request_hash"],
            json!(chain::to_hex(&want)),
            "{entry}"
        );
    }
}
