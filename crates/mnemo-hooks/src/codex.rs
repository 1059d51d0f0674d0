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
//!
//! Each line is read with a typed, borrowing parser that takes only the
//! members above and skips the others (tool outputs; a text past its first
//! 64 bytes unless it is a summary) without building them; a line it rejects (a member of another
//! type, a duplicate key, an array where an object belongs) is read again
//! as a `serde_json::Value` with the same meaning, so nothing that is JSON
//! is dropped.

use super::{MapOnly, entry, tool_origin};
use mnemo_acs::model::Origin;
use mnemo_guardian::decide::EntryProvenance;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, Visitor};
use serde_json::Value;
use std::borrow::Cow;
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

/// How many leading bytes (after leading white space) of a message text
/// the mapping looks at: every prefix it tests is shorter.
const HEAD: usize = 64;

/// A message text as the mapping needs it: its head (leading white space
/// trimmed, at most [`HEAD`] bytes), and the whole text only when it is a
/// compaction summary ([`SUMMARY_PREFIX`]), whose id hashes it.
#[derive(Debug, Default)]
struct Text {
    head: String,
    summary: Option<String>,
}

impl Text {
    fn of(s: &str) -> Text {
        let t = s.trim_start();
        let mut end = t.len().min(HEAD);
        while !t.is_char_boundary(end) {
            end -= 1;
        }
        Text {
            head: t[..end].to_string(),
            summary: t.starts_with(SUMMARY_PREFIX).then(|| s.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, s: &str) -> Result<Text, E> {
                Ok(Text::of(s))
            }
        }
        d.deserialize_str(V)
    }
}

/// A content block of a message: its `text`, if it is a string.
#[derive(Debug, Default, Deserialize)]
struct Block {
    #[serde(default)]
    text: Option<Text>,
}

/// `turn_attribution` of a `task_started` event, reduced to whether a
/// user started the turn (`turn_trigger` null, absent or `"exec"`; no
/// parent turn; no initiating agent).
#[derive(Debug, Default)]
struct Attribution {
    user: bool,
}

impl<'de> Deserialize<'de> for Attribution {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw<'a> {
            #[serde(borrow, default)]
            turn_trigger: Option<Cow<'a, str>>,
            #[serde(default)]
            parent_turn_id: Option<IgnoredAny>,
            #[serde(default)]
            initiating_agent_path: Option<IgnoredAny>,
        }
        let r = MapOnly::<Raw<'_>>::deserialize(d)?.0;
        Ok(Attribution {
            user: r.turn_trigger.as_deref().is_none_or(|t| t == "exec")
                && r.parent_turn_id.is_none()
                && r.initiating_agent_path.is_none(),
        })
    }
}

#[derive(Debug, Default, Deserialize)]
struct MessageMeta<'a> {
    #[serde(borrow, default)]
    turn_id: Option<Cow<'a, str>>,
}

/// Every member the mapping reads, of a rollout line, of its `payload` and
/// of a `replacement_history` item (one shape for all three: older files
/// hold the item itself on the line). Read with a typed, borrowing parser
/// that skips every other member without building it; a line it rejects
/// (a member of another type than expected, a duplicate key) is read again
/// as a `serde_json::Value` ([`Obj::lenient`]), as the mapping always did.
#[derive(Debug, Default, Deserialize)]
struct Obj<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "payload")]
    payload: Option<Box<Obj<'a>>>,
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "history")]
    replacement_history: Option<Vec<Obj<'a>>>,
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "blocks")]
    content: Option<Vec<Option<Text>>>,
    #[serde(
        rename = "internal_chat_message_metadata_passthrough",
        borrow,
        default,
        deserialize_with = "message_turn_id"
    )]
    message_turn_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    call_id: Option<Cow<'a, str>>,
    #[serde(default)]
    turn_attribution: Option<Attribution>,
    #[serde(borrow, default)]
    turn_id: Option<Cow<'a, str>>,
}

/// `payload`: an object, or (as `Value::get` saw it) `null` or any other
/// value standing for an empty one; never the line's own members.
fn payload<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Box<Obj<'a>>>, D::Error> {
    let o: Option<MapOnly<Obj<'a>>> = Deserialize::deserialize(d)?;
    Ok(Some(Box::new(o.map(|o| o.0).unwrap_or_default())))
}

fn history<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Obj<'a>>>, D::Error> {
    let v: Option<Vec<MapOnly<Obj<'a>>>> = Deserialize::deserialize(d)?;
    Ok(v.map(|v| v.into_iter().map(|o| o.0).collect()))
}

fn blocks<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Option<Text>>>, D::Error> {
    let v: Option<Vec<MapOnly<Block>>> = Deserialize::deserialize(d)?;
    Ok(v.map(|b| b.into_iter().map(|b| b.0.text).collect()))
}

fn message_turn_id<'de: 'a, 'a, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    let m: Option<MapOnly<MessageMeta<'a>>> = Deserialize::deserialize(d)?;
    Ok(m.and_then(|m| m.0.turn_id))
}

impl Obj<'static> {
    /// The same facts from a line already parsed as a `Value` (any shape:
    /// what is not where the mapping looks is absent).
    fn lenient(v: &Value) -> Obj<'static> {
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(|x| Cow::Owned(x.to_string()))
        };
        Obj {
            kind: s("type"),
            payload: v.get("payload").map(|p| Box::new(Obj::lenient(p))),
            message: s("message"),
            replacement_history: v
                .get("replacement_history")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Obj::lenient).collect()),
            role: s("role"),
            content: v.get("content").and_then(Value::as_array).map(|c| {
                c.iter()
                    .map(|b| b.get("text").and_then(Value::as_str).map(Text::of))
                    .collect()
            }),
            message_turn_id: v
                .get("internal_chat_message_metadata_passthrough")
                .and_then(|m| m.get("turn_id"))
                .and_then(Value::as_str)
                .map(|x| Cow::Owned(x.to_string())),
            name: s("name"),
            namespace: s("namespace"),
            call_id: s("call_id"),
            turn_attribution: v
                .get("turn_attribution")
                .and_then(Value::as_object)
                .map(|a| Attribution {
                    user: user_trigger(a.get("turn_trigger"))
                        && a.get("parent_turn_id").is_none_or(Value::is_null)
                        && a.get("initiating_agent_path").is_none_or(Value::is_null),
                }),
            turn_id: s("turn_id"),
        }
    }
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
    /// Entries held so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no entry is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Lets `c` fold the entries held so far when they reach its limit
    /// (bounded memory, [`crate::collapse`]).
    pub fn collapse(&mut self, c: &mut crate::collapse::Collapser<'_>) {
        c.maybe_collapse(&mut self.entries);
    }

    /// A mapper with nothing seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps one line (`lineno` is 1-based: step ids are `line-N`).
    pub fn line(&mut self, line: &str, lineno: usize) {
        self.line_read(line, lineno, true);
    }

    /// [`Self::line`]; `typed: false` reads every line as a `Value` (the
    /// tests compare both readings).
    fn line_read(&mut self, line: &str, lineno: usize, typed: bool) {
        if line.trim().is_empty() {
            return;
        }
        let parsed = if typed {
            serde_json::from_str::<MapOnly<Obj<'_>>>(line).ok()
        } else {
            None
        };
        let obj = match parsed {
            Some(o) => o.0,
            None => match serde_json::from_str::<Value>(line) {
                Ok(v) => Obj::lenient(&v),
                Err(_) => {
                    self.bad += 1;
                    return;
                }
            },
        };
        let step = format!("line-{lineno}");
        match obj.kind.as_deref() {
            Some("response_item") => {
                if let Some(p) = obj.payload {
                    self.item(*p, step);
                }
            }
            Some("compacted") => {
                self.entries.clear();
                let payload = match obj.payload {
                    Some(p) => *p,
                    None => obj,
                };
                let message = payload.message.map(Cow::into_owned);
                let lineage = message
                    .as_deref()
                    .map(summary_id)
                    .unwrap_or_else(|| PRIOR_COMPACTION.to_string());
                match payload.replacement_history {
                    Some(items) if !items.is_empty() => {
                        self.compacted_message = message;
                        for (k, item) in items.into_iter().enumerate() {
                            self.item(item, format!("{step}.{}", k + 1));
                        }
                        self.compacted_message = None;
                    }
                    _ => self.entries.push(summary_entry(step, lineage)),
                }
            }
            Some("event_msg") => {
                let p = match obj.payload {
                    Some(p) => *p,
                    None => obj,
                };
                if p.kind.as_deref() == Some("task_started")
                    && p.turn_attribution.is_some_and(|a| a.user)
                    && let Some(turn) = p.turn_id
                {
                    self.user_turns.insert(turn.into_owned());
                }
            }
            Some("session_meta" | "turn_context") => {}
            _ => self.item(obj, step),
        }
    }

    fn item(&mut self, item: Obj<'_>, step: String) {
        let mut items: Vec<(Origin, Option<String>)> = Vec::new();
        match item.kind.as_deref().unwrap_or("") {
            "message" => {
                let role = item.role.as_deref().unwrap_or("");
                let texts: Vec<&Text> = item.content.iter().flatten().flatten().collect();
                if role == "user"
                    && let Some(t) = texts.iter().find_map(|t| t.summary.as_deref())
                {
                    let lineage = summary_id(self.compacted_message.as_deref().unwrap_or(t));
                    self.entries.push(summary_entry(step, lineage));
                    return;
                }
                if role == "user"
                    && texts.iter().any(|t| !is_injected(&t.head))
                    && let Some(turn) = item.message_turn_id
                {
                    self.turns_with_message.insert(turn.into_owned());
                }
                for t in texts {
                    let o = match role {
                        "user" if is_injected(&t.head) => Origin::System,
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
                let name = item.name.as_deref().unwrap_or("local_shell");
                let origin = match item.namespace.as_deref() {
                    Some(ns) if ns.starts_with("mcp__") => {
                        let server = ns.trim_start_matches("mcp__");
                        (Origin::ToolOutput, server.to_string())
                    }
                    _ => codex_tool_origin(name),
                };
                if let Some(id) = item.call_id {
                    if self.calls.len() >= crate::claude::MAX_TOOLS {
                        // Bounded memory (see `claude::MAX_TOOLS`).
                        self.calls.clear();
                    }
                    self.calls.insert(id.into_owned(), origin);
                }
            }
            t if t.ends_with("_output") => {
                let origin = item
                    .call_id
                    .as_deref()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn both(lines: &[&str]) -> ((Vec<EntryProvenance>, usize), Vec<String>) {
        let mut typed = Mapper::new();
        let mut lenient = Mapper::new();
        for (i, l) in lines.iter().enumerate() {
            typed.line_read(l, i + 1, true);
            lenient.line_read(l, i + 1, false);
        }
        let turns = typed.pending_user_turns();
        assert_eq!(
            turns,
            lenient.pending_user_turns(),
            "pending turns of {lines:?}"
        );
        let t = typed.finish();
        assert_eq!(t, lenient.finish(), "entries of {lines:?}");
        (t, turns)
    }

    #[test]
    fn the_typed_reading_maps_every_fixture_as_the_value_reading() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/codex");
        let mut n = 0;
        for f in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(f.path()).unwrap_or_default();
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                let lines: Vec<&str> = text.lines().collect();
                let ((entries, _), _) = both(&lines);
                assert!(!entries.is_empty(), "{}", f.path().display());
                n += 1;
            }
        }
        assert!(n >= 4, "fixtures read: {n}");
    }

    #[test]
    fn odd_shapes_read_as_the_value_reading_does() {
        let summary = format!("  {SUMMARY_PREFIX} and here is the summary");
        let summary_line = format!(
            r#"{{"type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{summary}"}}]}}}}"#
        );
        let cases: Vec<&str> = vec![
            // a derived struct would take arrays member by member
            r#"["message",null,null,null,"user",[{"text":"hi"}]]"#,
            r#"{"type":"response_item","payload":["message",null,null,null,"user",[{"text":"hi"}]]}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[["hi"]]}}"#,
            r#"{"type":"event_msg","payload":{"type":"task_started","turn_id":"t1","turn_attribution":[]}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"text":"x"}],"internal_chat_message_metadata_passthrough":["t1"]}}"#,
            // null payloads stand for empty ones, never for the line itself
            r#"{"type":"compacted","payload":null,"message":"m","replacement_history":[{"type":"message","role":"user","content":[{"text":"u"}]}]}"#,
            r#"{"type":"compacted","message":"top","replacement_history":[]}"#,
            r#"{"type":"compacted","payload":{"message":"m2","replacement_history":[{"type":"message","role":"user","content":[{"text":"kept"}]},"odd",{"type":"web_search_call"}]}}"#,
            // members of another type than expected
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"text":5},{"text":"ok"}]}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":7,"call_id":"c1"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"x"}}"#,
            r#"{"type":7,"role":"user"}"#,
            r#"{"type":"message","role":"user","content":"not blocks"}"#,
            // a duplicate key: the last one counts
            r#"{"type":"response_item","payload":{"type":"message","role":"assistant","role":"user","content":[{"text":"dup"}]}}"#,
            // user turns, their messages and escapes
            r#"{"type":"event_msg","payload":{"type":"task_started","turn_id":"t2","turn_attribution":{"turn_trigger":null}}}"#,
            r#"{"type":"event_msg","payload":{"type":"task_started","turn_id":"t3","turn_attribution":{"turn_trigger":"exec","parent_turn_id":null}}}"#,
            r#"{"type":"event_msg","payload":{"type":"task_started","turn_id":"t4","turn_attribution":{"turn_trigger":"auto_compact"}}}"#,
            r#"{"type":"event_msg","payload":{"type":"task_started","turn_id":"t5","turn_attribution":{"turn_trigger":{"x":1}}}}"#,
            r#"{"type":"event_msg","payload":{"type":"task_started","turn_id":"t6","turn_attribution":{"parent_turn_id":"p"}}}"#,
            r#"{"type":"event_msg","payload":{"type":"task_started","turn_id":"t7","turn_attribution":{"initiating_agent_path":[]}}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"text":"\u003cenvironment_context\u003e"}],"internal_chat_message_metadata_passthrough":{"turn_id":"t2"}}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"text":"\n\tgo on \u00e9"}],"internal_chat_message_metadata_passthrough":{"turn_id":"t3"}}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"x","namespace":"mcp__srv","call_id":"c2"}}"#,
            r#"{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c2"}}"#,
            r#"{"type":"response_item","payload":{"type":"local_shell_call","call_id":"c3"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c3"}}"#,
            &summary_line,
            r#"not json"#,
            r#"[1,2]"#,
            r#""text""#,
            "",
        ];
        let ((entries, bad), turns) = both(&cases);
        assert_eq!(bad, 1);
        // t2's only message is injected text (not the user's); t1's
        // attribution is no object; t4-t7 are no user turns; t3 has its message
        assert_eq!(turns, vec!["t2".to_string()]);
        assert!(entries.iter().any(|e| {
            e.provenance
                .iter()
                .any(|p| p.source_id.as_deref() == Some("srv"))
        }));
        // each case alone too (a later line can hide an earlier one's effect)
        for c in &cases {
            both(&[c]);
        }
    }
}
