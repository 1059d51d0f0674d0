//! Codex CLI rollout transcripts (JSONL): entries and origins (pure).
//!
//! Lines are `{"type": "response_item", "payload": item}` (older files hold
//! the item itself). Items: `message` (role `user`: `user_input`, except the
//! injected `<environment_context>` / `<user_instructions>` / AGENTS.md blocks,
//! which are `system`; role `assistant`: `agent_generated`; `developer` /
//! `system`: `system`), `function_call` / `custom_tool_call` /
//! `local_shell_call` (remembered by `call_id`), `*_output` items (origin from
//! the tool name, MCP tools `server__tool` or `mcp__server__tool` with the
//! server as source id; an MCP call's `namespace: "mcp__<server>"` names
//! the server), `web_search_call` (`external`). A `compacted` line starts a
//! new region holding its `replacement_history` (the items that stay in
//! context; the summary in it, and a `compacted` line without one, is
//! `agent_generated` derived from [`summary_id`] of the line's `message`:
//! the id `mnemo hook codex post-compact` recorded the compaction's lineage
//! under, so the summary is as trusted as what it was made from; when no
//! PostCompact recorded it, the id is unknown and the policy's
//! `unknown_lineage` resolves it: a compaction never clears the taint by
//! itself).
//!
//! **The turn a pre-turn compaction belongs to.** Before a turn whose
//! context is already over the limit, Codex compacts before it writes the
//! user's new message: the hook sees that turn's `task_started` event (a
//! user turn carries `turn_attribution`, `turn_trigger` null from
//! app-server, `"exec"` from `codex exec`; Codex's own compaction task has
//! none) and no user message of it yet. [`Mapper::pending_user_turn`] names
//! that case, so that the user's message ends a deny on its own turn.

use super::{entry, tool_origin};
use mnemo_acs::model::Origin;
use mnemo_guardian::decide::EntryProvenance;
use serde_json::Value;
use std::collections::HashMap;

/// Provenance id standing for a previous compaction's unknown lineage.
pub const PRIOR_COMPACTION: &str = "codex:prior-compaction";

/// The provenance id of the summary of a compaction whose `compacted`
/// line says `message`: `codex:summary:` + the first 16 hex digits of its
/// SHA-256. PostCompact records the lineage under it; the next PreCompact
/// finds the summary in the transcript and derives it from this id.
pub fn summary_id(message: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(message.as_bytes());
    let hex: String = d.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("codex:summary:{hex}")
}

/// `turn_trigger` values of turns a user started (`null`: app-server
/// `turn/start`; `exec`: `codex exec`).
fn user_trigger(t: Option<&Value>) -> bool {
    match t {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s == "exec",
        Some(_) => false,
    }
}

/// How Codex starts the summary message of a compacted history.
const SUMMARY_PREFIX: &str = "Another language model started to solve this problem";

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

/// Maps rollout lines to entries, one line at a time.
#[derive(Debug, Default)]
pub struct Mapper {
    entries: Vec<EntryProvenance>,
    bad: usize,
    /// call_id → the source id of its output
    calls: HashMap<String, (Origin, String)>,
    /// The `message` of the `compacted` line being read, while its
    /// replacement history is mapped.
    compacted_message: Option<String>,
    /// Turns a user started (`task_started` with a user `turn_attribution`).
    user_turns: std::collections::HashSet<String>,
    /// Turns whose user message is in the transcript.
    turns_with_message: std::collections::HashSet<String>,
}

fn summary_entry(step: String, lineage: String) -> EntryProvenance {
    let mut e = entry(
        step,
        vec![(Origin::AgentGenerated, Some("codex:compact-summary".into()))],
    );
    for p in &mut e.provenance {
        p.derived_from.push(lineage.clone());
    }
    e
}

impl Mapper {
    /// A mapper with nothing seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps one line (`lineno` is 1-based: step ids are `line-N`).
    pub fn line(&mut self, line: &str, lineno: usize) {
        if line.trim().is_empty() {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            self.bad += 1;
            return;
        };
        let step = format!("line-{lineno}");
        match v.get("type").and_then(Value::as_str) {
            Some("response_item") => {
                if let Some(p) = v.get("payload") {
                    self.item(p, step);
                }
            }
            Some("compacted") => {
                self.entries.clear();
                let payload = v.get("payload").unwrap_or(&v);
                let message = payload
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let lineage = message
                    .as_deref()
                    .map(summary_id)
                    .unwrap_or_else(|| PRIOR_COMPACTION.to_string());
                let history = payload.get("replacement_history").and_then(Value::as_array);
                match history {
                    Some(items) if !items.is_empty() => {
                        self.compacted_message = message;
                        for (k, item) in items.iter().enumerate() {
                            self.item(item, format!("{step}.{}", k + 1));
                        }
                        self.compacted_message = None;
                    }
                    _ => self.entries.push(summary_entry(step, lineage)),
                }
            }
            Some("event_msg") => {
                let p = v.get("payload").unwrap_or(&v);
                if p.get("type").and_then(Value::as_str) == Some("task_started")
                    && let Some(attr) = p.get("turn_attribution").and_then(Value::as_object)
                    && user_trigger(attr.get("turn_trigger"))
                    && attr.get("parent_turn_id").is_none_or(Value::is_null)
                    && attr.get("initiating_agent_path").is_none_or(Value::is_null)
                    && let Some(turn) = p.get("turn_id").and_then(Value::as_str)
                {
                    self.user_turns.insert(turn.to_string());
                }
            }
            Some("session_meta" | "turn_context") => {}
            _ => self.item(&v, step),
        }
    }

    fn item(&mut self, item: &Value, step: String) {
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
                if role == "user"
                    && let Some(t) = texts
                        .iter()
                        .find(|t| t.trim_start().starts_with(SUMMARY_PREFIX))
                {
                    let lineage = summary_id(self.compacted_message.as_deref().unwrap_or(t));
                    self.entries.push(summary_entry(step, lineage));
                    return;
                }
                if role == "user"
                    && texts.iter().any(|t| !is_injected(t))
                    && let Some(turn) = item
                        .get("internal_chat_message_metadata_passthrough")
                        .and_then(|m| m.get("turn_id"))
                        .and_then(Value::as_str)
                {
                    self.turns_with_message.insert(turn.to_string());
                }
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
                let origin = match item.get("namespace").and_then(Value::as_str) {
                    Some(ns) if ns.starts_with("mcp__") => {
                        let server = ns.trim_start_matches("mcp__");
                        (Origin::ToolOutput, server.to_string())
                    }
                    _ => codex_tool_origin(name),
                };
                if let Some(id) = item.get("call_id").and_then(Value::as_str) {
                    self.calls.insert(id.to_string(), origin);
                }
            }
            t if t.ends_with("_output") => {
                let origin = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .and_then(|id| self.calls.get(id))
                    .cloned()
                    .unwrap_or((Origin::ToolOutput, "unknown-tool".into()));
                items.push((origin.0, Some(origin.1)));
            }
            "web_search_call" => items.push((Origin::External, Some("web_search".into()))),
            _ => {}
        }
        if !items.is_empty() {
            self.entries.push(entry(step, items));
        }
    }

    /// Whether `turn` is a turn the user started whose message is not in
    /// the transcript yet: the compaction now is its pre-turn compaction,
    /// and the message Codex writes after it is the user's.
    pub fn pending_user_turn(&self, turn: &str) -> bool {
        self.user_turns.contains(turn) && !self.turns_with_message.contains(turn)
    }

    /// Every [`Self::pending_user_turn`], sorted.
    pub fn pending_user_turns(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .user_turns
            .iter()
            .filter(|t| !self.turns_with_message.contains(*t))
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// The entries (oldest first) and the number of lines that did not parse.
    pub fn finish(self) -> (Vec<EntryProvenance>, usize) {
        (self.entries, self.bad)
    }
}

/// The entries a compaction now would fold, oldest first, and the number of
/// lines that did not parse.
pub fn transcript_entries(jsonl: &str) -> (Vec<EntryProvenance>, usize) {
    let mut m = Mapper::new();
    for (i, line) in jsonl.lines().enumerate() {
        m.line(line, i + 1);
    }
    m.finish()
}
