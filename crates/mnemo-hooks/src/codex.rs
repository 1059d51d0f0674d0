//! Codex CLI rollout transcripts (JSONL): entries and origins (pure).
//!
//! Lines are `{"type": "response_item", "payload": item}` (older files hold
//! the item itself). Items: `message` (role `user`: `user_input`, except the
//! injected `<environment_context>` / `<user_instructions>` / AGENTS.md blocks,
//! which are `system`; role `assistant`: `agent_generated`; `developer` /
//! `system`: `system`), `function_call` / `custom_tool_call` /
//! `local_shell_call` (remembered by `call_id`), `*_output` items (origin from
//! the tool name, MCP tools `server__tool` or `mcp__server__tool` with the
//! server as source id), `web_search_call` (`external`). A `compacted` line
//! starts a new region.

use super::{entry, tool_origin};
use mnemo_acs::model::Origin;
use mnemo_guardian::decide::EntryProvenance;
use serde_json::Value;
use std::collections::HashMap;

fn is_injected(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<environment_context>")
        || t.starts_with("<user_instructions>")
        || t.starts_with("# AGENTS.md")
        || t.starts_with("<INSTRUCTIONS>")
}

fn codex_tool_origin(name: &str) -> (Origin, String) {
    if name.starts_with("mcp__") {
        return tool_origin(name, None);
    }
    if let Some((server, _tool)) = name.split_once("__") {
        return (Origin::ToolOutput, server.to_string());
    }
    tool_origin(name, None)
}

/// The entries a compaction now would fold, oldest first, and the number of
/// lines that did not parse.
pub fn transcript_entries(jsonl: &str) -> (Vec<EntryProvenance>, usize) {
    let mut entries = Vec::new();
    let mut bad = 0usize;
    let mut calls: HashMap<String, String> = HashMap::new();
    for (i, line) in jsonl.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            bad += 1;
            continue;
        };
        let step = format!("line-{}", i + 1);
        let item = match v.get("type").and_then(Value::as_str) {
            Some("response_item") => match v.get("payload") {
                Some(p) => p,
                None => continue,
            },
            Some("compacted") => {
                entries.clear();
                continue;
            }
            Some("session_meta" | "turn_context" | "event_msg") => continue,
            _ => &v,
        };
        let mut items: Vec<(Origin, Option<String>)> = Vec::new();
        match item.get("type").and_then(Value::as_str).unwrap_or("") {
            "message" => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("");
                let texts: Vec<&str> = item
                    .get("content")
                    .and_then(Value::as_array)
                    .map(|c| {
                        c.iter()
                            .filter_map(|b| b.get("text").and_then(Value::as_str))
                            .collect()
                    })
                    .unwrap_or_default();
                for t in texts {
                    let o = match role {
                        "user" if is_injected(t) => Origin::System,
                        "user" => Origin::UserInput,
                        "assistant" => Origin::AgentGenerated,
                        _ => Origin::System,
                    };
                    let src = match o {
                        Origin::UserInput => Some("codex:user".to_string()),
                        Origin::System => Some("codex:instructions".to_string()),
                        _ => None,
                    };
                    items.push((o, src));
                }
            }
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let name = item
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("local_shell");
                if let Some(id) = item.get("call_id").and_then(Value::as_str) {
                    calls.insert(id.to_string(), name.to_string());
                }
            }
            t if t.ends_with("_output") => {
                let name = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .and_then(|id| calls.get(id))
                    .map(String::as_str);
                let (o, src) = match name {
                    Some(n) => codex_tool_origin(n),
                    None => (Origin::ToolOutput, "unknown-tool".into()),
                };
                items.push((o, Some(src)));
            }
            "web_search_call" => items.push((Origin::External, Some("web_search".into()))),
            _ => {}
        }
        if !items.is_empty() {
            entries.push(entry(step, items));
        }
    }
    (entries, bad)
}
