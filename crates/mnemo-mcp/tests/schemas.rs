//! Every tool's input and output schema is standard JSON Schema 2020-12:
//! valid against the meta-schema, and compilable by a strict validator
//! (`jsonschema`, unknown formats rejected); the structured answers of the
//! tools validate against their output schemas.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use mnemo_mcp::{MnemoServer, SqliteStore, StoreSource};
use mnemo_model::Config;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

fn strict(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        .build(schema)
        .map_err(|e| e.to_string())
}

fn formats(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(f)) = m.get("format") {
                out.push(f.clone());
            }
            m.values().for_each(|x| formats(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| formats(x, out)),
        _ => {}
    }
}

/// Paths of every `"type"` whose value is an array (`["string", "null"]`),
/// which single-type client dialects reject.
fn type_arrays(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(_)) = m.get("type") {
                out.push(path.to_string());
            }
            for (k, x) in m {
                type_arrays(x, &format!("{path}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                type_arrays(x, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn tool_schemas_are_standard_json_schema() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_in_memory().unwrap();
    let server = MnemoServer::with_root(
        &Config::default(),
        StoreSource::Ready(Arc::new(store)),
        dir.path().to_path_buf(),
    )
    .unwrap();
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let mut outputs = 0;
    for t in &tools {
        let mut schemas = vec![("input", Value::Object(t.input_schema.as_ref().clone()))];
        if let Some(o) = &t.output_schema {
            schemas.push(("output", Value::Object(o.as_ref().clone())));
            outputs += 1;
        }
        for (kind, s) in &schemas {
            let mut found = Vec::new();
            formats(s, &mut found);
            assert!(
                found
                    .iter()
                    .all(|f| !f.starts_with("uint") && !f.starts_with("int")),
                "{} {kind} schema has formats {found:?}",
                t.name
            );
            let mut arrays = Vec::new();
            type_arrays(s, "", &mut arrays);
            assert!(
                arrays.is_empty(),
                "{} {kind} schema has type arrays at {arrays:?}",
                t.name
            );
            assert!(
                jsonschema::draft202012::meta::is_valid(s),
                "{} {kind} schema is not valid JSON Schema 2020-12",
                t.name
            );
            if let Err(e) = strict(s) {
                panic!("{} {kind} schema: {e}", t.name);
            }
        }
    }
    assert!(outputs >= 6, "only {outputs} tools have an output schema");

    // Real answers validate against the published output schemas.
    let pat = format!("ghp_{}", "Qq1Ww2Ee3Rr4Tt5Yy6Uu7Ii8Oo9Pp0Aa1Ss2");
    for (name, args) in [
        ("scrub", json!({"text": format!("token {pat}")})),
        (
            "memory_store",
            json!({"value": "the API is versioned", "key": "k1"}),
        ),
        ("memory_search", json!({"query": "API"})),
        ("memory_list", json!({})),
        ("memory_stats", json!({})),
    ] {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let schema = Value::Object(tool.output_schema.clone().unwrap().as_ref().clone());
        let params =
            CallToolRequestParams::new(name).with_arguments(args.as_object().cloned().unwrap());
        let r = client.call_tool(params).await.unwrap();
        assert_ne!(r.is_error, Some(true), "{name}: {:?}", r.content);
        let answer = r.structured_content.clone().unwrap();
        let v = strict(&schema).unwrap();
        let errors: Vec<String> = v.iter_errors(&answer).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:?}\n{answer}");
    }
}
