//! Conformance: our validator's verdict equals the official ACS v0.1.0 JSON
//! Schemas' verdict (checked with the `jsonschema` crate, offline) on the
//! standard's examples, our fixtures, our own responses, and thousands of
//! mutations of them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::validate::{self, Node};
use mnemo_guardian::{Guardian, GuardianConfig, MemoryStore, Policy};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Serves the local schema files for every `$id`/`$ref` URI, whatever its
/// base; the two schemas missing upstream (ask/defer details) become `{"type":"object"}`.
struct LocalSchemas(HashMap<String, Value>);

impl jsonschema::Retrieve for LocalSchemas {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let s = uri.as_str();
        let rel = s.split("/v0.1.0/").nth(1).unwrap_or(s);
        let rel = rel.split('#').next().unwrap_or(rel);
        if let Some(v) = self.0.get(rel) {
            return Ok(v.clone());
        }
        if rel == "ask-details.json" || rel == "defer-details.json" {
            return Ok(json!({"type": "object"}));
        }
        Err(format!("no local schema for {s}").into())
    }
}

fn load_schemas(root: &Path) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    for dir in ["", "hooks/"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "json") {
                let name = format!("{dir}{}", p.file_name().unwrap().to_string_lossy());
                out.insert(name, read_json(&p));
            }
        }
    }
    out
}

fn compile(schemas: &HashMap<String, Value>, schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_retriever(LocalSchemas(schemas.clone()))
        .should_validate_formats(true)
        .build(schema)
        .expect("schema compiles")
}

/// A `$ref` wrapper so `$defs` and files resolve against the local base.
fn wrapper(target: &str) -> Value {
    json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
           "$id": "https://acs.org/schema/v0.1.0/__wrapper.json", "$ref": target})
}

const STRINGS: &[&str] = &[
    "",
    "x",
    "0.1.0",
    "1.0",
    "10.20.30",
    "1.2.3.4",
    "steps/x",
    "steps/",
    "foo/bar",
    "wrapped:a2a-0.2/message/send",
    "550e8400-e29b-41d4-a716-446655440000",
    "550E8400-E29B-41D4-A716-446655440000",
    "550e8400e29b41d4a716446655440000",
    "550e8400-e29b-41d4-a716-44665544000g",
    "2026-09-09T14:02:11Z",
    "2026-09-09T14:02:11.123+02:00",
    "2026-09-09T14:02:11",
    "2026-02-30T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-09-09T25:00:00Z",
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
    "0123456789abcdef",
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0",
    "https://example.com/x",
    "not a uri",
    "user_input",
    "tool_output",
    "agent_generated",
    "manual",
    "auto",
    "allow",
    "deny",
    "modify",
    "final",
    "text",
    "HMAC-SHA256",
    "stdio",
    "deterministic",
    "2.0",
    "success",
    "completed",
];

fn replacements(v: &Value) -> Vec<Value> {
    let mut out = vec![
        Value::Null,
        json!(true),
        json!(-1),
        json!(0),
        json!(7),
        json!(1.5),
        json!(2.0),
        json!("x"),
        json!([]),
        json!({}),
    ];
    match v {
        Value::String(_) => out.extend(STRINGS.iter().map(|s| json!(s))),
        Value::Array(a) => {
            if let Some(first) = a.first() {
                let mut dup = a.clone();
                dup.push(first.clone());
                out.push(Value::Array(dup));
                let mut extra = a.clone();
                extra.push(json!(42));
                out.push(Value::Array(extra));
                out.push(Value::Array(vec![first.clone()]));
            }
        }
        Value::Object(m) => {
            let mut extra = m.clone();
            extra.insert("zz_extra".into(), json!(1));
            out.push(Value::Object(extra));
            for k in m.keys() {
                let mut less = m.clone();
                less.remove(k);
                out.push(Value::Object(less));
            }
        }
        _ => {}
    }
    out
}

fn pointers(v: &Value, base: String, out: &mut Vec<String>) {
    out.push(base.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                pointers(
                    c,
                    format!("{base}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                pointers(c, format!("{base}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Checks `instance` and all its mutations; returns (cases, valid cases).
fn compare(
    name: &str,
    ours: &Node,
    theirs: &jsonschema::Validator,
    instance: &Value,
) -> (usize, usize) {
    let mut ptrs = Vec::new();
    pointers(instance, String::new(), &mut ptrs);
    let mut cases = vec![instance.clone()];
    for p in &ptrs {
        let target = instance.pointer(p).unwrap();
        for r in replacements(target) {
            let mut m = instance.clone();
            if p.is_empty() {
                m = r;
            } else {
                *m.pointer_mut(p).unwrap() = r;
            }
            cases.push(m);
        }
    }
    let mut valid = 0;
    for c in &cases {
        let expected = theirs.is_valid(c);
        let got = validate::validate(ours, c, "");
        assert_eq!(
            got.is_ok(),
            expected,
            "{name}: verdicts differ (schema says {expected}, ours {got:?}) on\n{}",
            serde_json::to_string(c).unwrap()
        );
        if expected {
            valid += 1;
        }
    }
    (cases.len(), valid)
}

fn method_schema_file(method: &str) -> Option<&'static str> {
    Some(match method {
        "steps/preCompact" => "hooks/pre-compact.json",
        "steps/postCompact" => "hooks/post-compact.json",
        "steps/toolCallRequest" => "hooks/tool-call-request.json",
        "steps/toolCallResult" => "hooks/tool-call-result.json",
        "steps/userMessage" => "hooks/user-message.json",
        "steps/agentResponse" => "hooks/agent-response.json",
        "steps/knowledgeRetrieval" => "hooks/knowledge-retrieval.json",
        "steps/memoryContextRetrieval" => "hooks/memory-context-retrieval.json",
        "steps/memoryStore" => "hooks/memory-store.json",
        "steps/turnEnd" => "hooks/turn-end.json",
        "steps/subagentStop" => "hooks/subagent-stop.json",
        _ => return None,
    })
}

fn requests(root: &Path) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut add = |dir: PathBuf, filter: &dyn Fn(&str) -> bool| {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for p in names {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            if filter(&n) {
                out.push((n, read_json(&p)));
            }
        }
    };
    add(root.join("examples"), &|n: &str| {
        n.ends_with(".request.json")
    });
    add(fixtures().join("requests"), &|n: &str| n.ends_with(".json"));
    out
}

#[test]
fn validator_agrees_with_official_schemas() {
    let Some(shared) = mnemo_testkit::shared_dir() else {
        return;
    };
    let root = shared.join("acs/v0.1.0");
    let schemas = load_schemas(&root);
    let envelope = compile(&schemas, &schemas["request-envelope.json"]);
    let mut total = 0;
    let mut total_valid = 0;
    let reqs = requests(&root);
    assert!(reqs.len() >= 15);
    for (name, req) in &reqs {
        let (n, v) = compare(name, validate::request_envelope_schema(), &envelope, req);
        total += n;
        total_valid += v;
        let method = req["method"].as_str().unwrap();
        let payload = &req["params"]["payload"];
        let (schema, ours) = if method == "handshake/hello" {
            (
                wrapper("handshake.json#/$defs/ClientHello"),
                validate::payload_schema_strict(method).unwrap(),
            )
        } else if let Some(file) = method_schema_file(method) {
            (
                schemas[file].clone(),
                validate::payload_schema_strict(method).unwrap(),
            )
        } else {
            continue;
        };
        let theirs = compile(&schemas, &schema);
        let (n, v) = compare(&format!("{name} payload"), ours, &theirs, payload);
        total += n;
        total_valid += v;
    }
    // Provenance, summaries, modifications, server hello on their own.
    let prov = compile(&schemas, &schemas["provenance.json"]);
    let (n, _) = compare(
        "provenance",
        &validate::provenance(),
        &prov,
        &json!({"provenance_id": "p", "origin": "retrieved", "source_id": "s", "derived_from": ["a", "b"]}),
    );
    total += n;
    let summ = compile(&schemas, &schemas["provenance-summary.json"]);
    let (n, _) = compare(
        "provenance-summary",
        &validate::provenance_summary(),
        &summ,
        &json!({"origins_seen": ["user_input", "tool_output"], "entry_count": 2, "entry_count_by_origin": {"user_input": 1}, "earliest_step_id_by_origin": {"tool_output": "s2"}, "max_lineage_depth": 0}),
    );
    total += n;
    let mods = compile(&schemas, &schemas["modifications.json"]);
    let (n, _) = compare(
        "modifications",
        &validate::modifications(),
        &mods,
        &json!({"modified_content": "x", "redactions": [{"path": "/a", "replacement": "[R]"}], "parameter_overrides": {"a": 1}}),
    );
    total += n;
    let sh = compile(&schemas, &wrapper("handshake.json#/$defs/ServerHello"));
    let (n, _) = compare(
        "server-hello",
        &validate::server_hello(),
        &sh,
        &json!({"negotiated_version": "0.1.0", "methods_evaluated": ["steps/preCompact"], "selected_transport": "stdio",
                "signature_algorithms_supported": ["HMAC-SHA256"], "timeout_config": {"default_ms": 1000, "per_method_ms": {"steps/preCompact": 50}},
                "skew_window_ms": 300000, "on_timeout": "proceed", "approver_types_supported": ["human"], "policy_requires_provenance": false,
                "agbom_serializations_supported": ["canonical"], "trace_emission": {"otel_enabled": true, "otel_collector_endpoint": "https://otel.example/v1"},
                "profiles_accepted": ["acs-core"]}),
    );
    total += n;
    println!("conformance: {total} cases, {total_valid} valid envelopes/payloads");
    assert!(total > 5000, "only {total} cases");
}

#[test]
fn responses_agree_with_official_schema() {
    let Some(shared) = mnemo_testkit::shared_dir() else {
        return;
    };
    let root = shared.join("acs/v0.1.0");
    let schemas = load_schemas(&root);
    let theirs = compile(&schemas, &schemas["response-envelope.json"]);
    let ours = validate::response_envelope_schema();
    let mut total = 0;
    // The standard's example responses.
    for e in std::fs::read_dir(root.join("examples")).unwrap() {
        let p = e.unwrap().path();
        let n = p.file_name().unwrap().to_string_lossy().to_string();
        if n.ends_with(".response.json") {
            total += compare(&n, ours, &theirs, &read_json(&p)).0;
        }
    }
    // Every response our Guardian gives to the fixtures (and to garbage).
    let mut g = Guardian::new(
        Policy::default(),
        GuardianConfig {
            skew_window_ms: None,
            ..GuardianConfig::default()
        },
        MemoryStore::new(),
    );
    let mut produced = Vec::new();
    for (_, req) in requests(&root) {
        produced
            .push(serde_json::from_slice::<Value>(&g.handle(req.to_string().as_bytes())).unwrap());
    }
    produced.push(serde_json::from_slice(&g.handle(b"{not json")).unwrap());
    produced.push(serde_json::from_slice(&g.handle(b"[]")).unwrap());
    for (i, r) in produced.iter().enumerate() {
        assert!(theirs.is_valid(r), "response {i} invalid: {r}");
        total += compare(&format!("response {i}"), ours, &theirs, r).0;
    }
    println!("responses: {total} cases");
}

#[test]
fn every_valid_fixture_payload_parses_into_its_typed_model() {
    let mut n = 0;
    let mut names: Vec<PathBuf> = std::fs::read_dir(fixtures().join("requests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for p in names {
        let req = read_json(&p);
        let method = req["method"].as_str().unwrap();
        let payload = &req["params"]["payload"];
        let typed = mnemo_guardian::model::parse_payload(method, payload)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(
            !matches!(typed, mnemo_guardian::model::Payload::Other(_)) || method == "system/ping"
        );
        // Typed → JSON → typed is stable.
        let again = match &typed {
            mnemo_guardian::model::Payload::UserMessage(m) => {
                Some(serde_json::to_value(m).unwrap())
            }
            mnemo_guardian::model::Payload::PreCompact(m) => Some(serde_json::to_value(m).unwrap()),
            mnemo_guardian::model::Payload::PostCompact(m) => {
                Some(serde_json::to_value(m).unwrap())
            }
            _ => None,
        };
        if let Some(v) = again {
            assert_eq!(
                mnemo_guardian::model::parse_payload(method, &v).unwrap(),
                typed
            );
        }
        n += 1;
    }
    assert!(n >= 13);
    let bad = json!({"entries_to_compact": ["a"], "triggered_by": "manual", "estimated_input_tokens": -1});
    let e = mnemo_guardian::model::parse_payload("steps/preCompact", &bad).unwrap_err();
    assert_eq!(e.path, "/params/payload/estimated_input_tokens");
}
