//! The tools through rmcp's own client, in process (a duplex pipe stands in
//! for stdio).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use mnemo_mcp::{MnemoServer, SqliteStore, StoreSource};
use mnemo_model::Config;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

struct Harness {
    client: RunningService<RoleClient, ()>,
    _dir: tempfile::TempDir,
}

async fn harness_with(source: StoreSource) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "Added JWT auth endpoint.\n").unwrap();
    let server =
        MnemoServer::with_root(&Config::default(), source, dir.path().to_path_buf()).unwrap();
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();
    Harness { client, _dir: dir }
}

async fn harness() -> Harness {
    let store = SqliteStore::open_in_memory().unwrap();
    harness_with(StoreSource::Ready(Arc::new(store))).await
}

async fn call(h: &Harness, name: &'static str, args: Value) -> CallToolResult {
    let params =
        CallToolRequestParams::new(name).with_arguments(args.as_object().cloned().unwrap());
    h.client.call_tool(params).await.unwrap()
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

fn ok(r: &CallToolResult) -> Value {
    assert_ne!(r.is_error, Some(true), "tool error: {}", text(r));
    r.structured_content
        .clone()
        .unwrap_or_else(|| serde_json::from_str(&text(r)).unwrap_or(Value::Null))
}

fn err(r: &CallToolResult) -> String {
    assert_eq!(
        r.is_error,
        Some(true),
        "expected a tool error, got {}",
        text(r)
    );
    text(r)
}

#[tokio::test]
async fn lists_every_tool_with_precise_schemas() {
    let h = harness().await;
    let tools = h.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        vec![
            "compress_inline",
            "gate",
            "handoff",
            "memory_forget",
            "memory_list",
            "memory_recall",
            "memory_search",
            "memory_stats",
            "memory_store",
            "scrub"
        ]
    );
    let schema = |name: &str| {
        Value::Object((*tools.iter().find(|t| t.name == name).unwrap().input_schema).clone())
    };
    let search = schema("memory_search");
    assert_eq!(search["required"], json!(["query"]));
    assert_eq!(search["additionalProperties"], json!(false));
    assert_eq!(search["properties"]["top_k"]["maximum"], json!(50));
    assert_eq!(search["properties"]["top_k"]["minimum"], json!(1));
    assert_eq!(
        schema("memory_list")["properties"]["limit"]["maximum"],
        json!(500)
    );
    assert_eq!(schema("memory_store")["required"], json!(["value"]));
    assert_eq!(
        schema("memory_store")["properties"]["namespace"]["default"],
        json!("default")
    );
    assert_eq!(schema("compress_inline")["required"], json!(["mode"]));
    let forget = tools.iter().find(|t| t.name == "memory_forget").unwrap();
    assert_eq!(
        forget.annotations.as_ref().and_then(|a| a.destructive_hint),
        Some(true)
    );
    assert!(
        tools
            .iter()
            .find(|t| t.name == "memory_store")
            .unwrap()
            .output_schema
            .is_some()
    );
    h.client.cancel().await.unwrap();
}

#[tokio::test]
async fn memory_tools_round_trip_and_scrub() {
    let h = harness().await;
    let pat = format!("ghp_{}", "Qq1Ww2Ee3Rr4Tt5Yy6Uu7Ii8Oo9Pp0Aa1Ss2");
    let stored = ok(&call(
        &h,
        "memory_store",
        json!({"value": format!("release token {pat}"), "key": "rel", "metadata": {"why": pat}}),
    )
    .await);
    assert_eq!(stored["status"], "stored");
    assert_eq!(stored["redactions"], 2);
    assert_eq!(stored["namespace"], "default");
    let dup = err(&call(&h, "memory_store", json!({"value": "again", "key": "rel"})).await);
    assert!(dup.contains("already exists"), "{dup}");
    let recalled = ok(&call(&h, "memory_recall", json!({"key": "rel"})).await);
    assert!(!recalled.to_string().contains(&pat));
    let hits = ok(&call(&h, "memory_search", json!({"query": "release"})).await);
    assert_eq!(hits["count"], 1);
    let e = err(&call(
        &h,
        "memory_search",
        json!({"query": "release", "top_k": 500}),
    )
    .await);
    assert!(e.contains("top_k"), "{e}");
    let listed = ok(&call(&h, "memory_list", json!({"prefix": "r"})).await);
    assert_eq!(listed["total"], 1);
    let stats = ok(&call(&h, "memory_stats", json!({})).await);
    assert_eq!(stats["total"], 1);
    let gone = ok(&call(&h, "memory_forget", json!({"id": stored["id"]})).await);
    assert_eq!(gone["status"], "forgotten");
    let e = err(&call(&h, "memory_forget", json!({"id": stored["id"]})).await);
    assert!(e.contains("no memory"), "{e}");
    h.client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_not_crashes() {
    let h = harness().await;
    let e = err(&call(&h, "memory_store", json!({"value": 3})).await);
    assert!(e.contains("invalid type"), "{e}");
    let e = err(&call(&h, "memory_store", json!({"value": "x", "extra": 1})).await);
    assert!(e.contains("unknown field"), "{e}");
    let e = err(&call(&h, "memory_search", json!({"query": "x", "top_k": -1})).await);
    assert!(e.contains("invalid value"), "{e}");
    let e = err(&call(&h, "memory_recall", json!({"id": 1, "key": "k"})).await);
    assert!(e.contains("not both"), "{e}");
    let e = err(&call(&h, "compress_inline", json!({"mode": "batch"})).await);
    assert!(e.contains("required for batch"), "{e}");
    // Still serving.
    ok(&call(&h, "scrub", json!({"text": "nothing secret"})).await);
    h.client.cancel().await.unwrap();
}

#[tokio::test]
async fn compress_inline_modes() {
    let h = harness().await;
    let score = text(&call(&h, "compress_inline", json!({"mode": "score", "text": "Added JWT auth endpoint with refresh token rotation", "to_agent": "themis"})).await);
    let score: Value = serde_json::from_str(&score).unwrap();
    assert_eq!(score["band"], "HIGH");
    let stats = text(
        &call(
            &h,
            "compress_inline",
            json!({"mode": "stats", "text": "Line 1\nLine 2\nLine 3"}),
        )
        .await,
    );
    assert!(stats.contains("\"lines\": 3"), "{stats}");
    let batch = text(
        &call(
            &h,
            "compress_inline",
            json!({"mode": "batch", "files": ["notes.md", "../../etc/passwd", "/etc/hostname"]}),
        )
        .await,
    );
    assert!(batch.contains("### notes.md"), "{batch}");
    assert!(batch.contains("../../etc/passwd: ERROR"), "{batch}");
    assert!(batch.contains("/etc/hostname: ERROR"), "{batch}");
    h.client.cancel().await.unwrap();
}

#[tokio::test]
async fn without_a_store_memory_tools_fail_and_the_rest_works() {
    let h = harness_with(StoreSource::Unavailable).await;
    let e = err(&call(&h, "memory_stats", json!({})).await);
    assert!(e.contains("MNEMO_HOME"), "{e}");
    let scrubbed = ok(&call(&h, "scrub", json!({"text": "hello"})).await);
    assert_eq!(scrubbed["text"], "hello");
    h.client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_store_that_cannot_be_opened_is_a_tool_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let h = harness_with(StoreSource::Path(blocker.join("memory.sqlite3"))).await;
    let e = err(&call(&h, "memory_store", json!({"value": "x"})).await);
    assert!(e.contains("cannot open the memory store"), "{e}");
    h.client.cancel().await.unwrap();
}

#[tokio::test]
async fn gate_and_handoff_write_and_read_the_bank() {
    let dir = tempfile::tempdir().unwrap();
    let bank_root = dir.path().join("bank");
    mnemo_bank::init_bank(&bank_root).unwrap();
    let config = Config::default();
    let server =
        MnemoServer::with_root(&config, StoreSource::Unavailable, dir.path().to_path_buf())
            .unwrap()
            .with_bank(mnemo_mcp::BankContext {
                root: bank_root.clone(),
                learnings: dir.path().join("learnings"),
                config: config.clone(),
                policy: mnemo_guardian::Policy::default(),
            });
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();
    let h = Harness { client, _dir: dir };
    let summary = json!({
        "agent": "demeter",
        "summary": "Migration 0014 adds new table orders with a foreign key to users.",
        "files_changed": ["backend/migrations/0014_create_orders.py"],
        "status": "complete",
        "to": "hermes"
    })
    .to_string();
    let args = json!({
        "phase": "1",
        "from": ["demeter"],
        "to": ["hermes"],
        "date": "2026-11-30",
        "summaries": [{"name": "demeter.json", "text": summary}]
    });
    let first = ok(&call(&h, "gate", args.clone()).await);
    assert_eq!(first["entries"], 1, "{first}");
    assert!(
        first["confirmation"]
            .as_str()
            .unwrap()
            .starts_with("Compression complete: 1 entries compressed (1 CRITICAL, 0 HIGH)")
    );
    let active = std::fs::read_to_string(bank_root.join("01-active-context.md")).unwrap();
    assert!(active.contains("orders"), "{active}");
    // Same input again: nothing changes.
    let again = ok(&call(&h, "gate", args).await);
    assert_eq!(again["changed"], json!([]), "{again}");
    let prompt = text(&call(&h, "handoff", json!({"phase": "1"})).await);
    assert!(
        prompt.contains("## Compressed Context (Phase 1 → Phase 2)"),
        "{prompt}"
    );
    // Bad input is a tool error, not a crash.
    let e = err(&call(
        &h,
        "gate",
        json!({"phase": "1", "summaries": [{"name": "x.json", "text": "{"}]}),
    )
    .await);
    assert!(e.contains("x.json"), "{e}");
    let e = err(&call(&h, "handoff", json!({"phase": "9"})).await);
    assert!(e.contains("no ZZ artifact"), "{e}");
    h.client.cancel().await.unwrap();
}

#[tokio::test]
async fn gate_without_a_bank_says_so() {
    let h = harness().await;
    let e = err(&call(&h, "gate", json!({"phase": "1", "files": ["notes.md"]})).await);
    assert!(e.contains("no memory bank"), "{e}");
    h.client.cancel().await.unwrap();
}
