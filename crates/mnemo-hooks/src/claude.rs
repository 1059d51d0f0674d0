//! Claude Code transcripts (JSONL): which entries a PreCompact is about to
//! compact, and their origins (pure).
//!
//! Lines of type `user` / `assistant` carry `message.content` (a string or
//! blocks `text`, `tool_use`, `tool_result`, `thinking`…). Only words the
//! user typed are `user_input` (and so re-ground): the host's own lines —
//! `<command-name>/compact</command-name>…`, `<local-command-stdout>…`,
//! `<system-reminder>`, "[Request interrupted…", and every `isMeta` line —
//! are `system` (trusted, not re-grounding), and the output of a `!` shell
//! command (`<bash-stdout>`) is `tool_output`. A previous compaction's summary
//! (`isCompactSummary`) is `agent_generated` with an unknown lineage; tool
//! results take their origin from the tool's name ([`super::tool_origin`]);
//! assistant text is `agent_generated`. `attachment` lines put content into
//! the context without a tool call; each kind has an origin and a source id
//! ([`attachment_origin`]). A message the host did not get from the user's
//! keyboard carries an `origin` (a `user` line, a `queued_command`
//! attachment: an MCP server's channel, another agent, a task
//! notification): it is never `user_input` ([`sent_by_origin`]).
//!
//! **Compaction boundaries.** Only lines after the last `compact_boundary`
//! are about to be compacted, plus the messages that boundary preserved
//! (`compactMetadata.preservedMessages.uuids`, or the
//! `preservedSegment` head..tail): those stayed in the model's context
//! verbatim, so they keep their own origins (and taint), ahead of the
//! summary. What the adapter cannot know: where the host will split the
//! next compaction between the summarised prefix and the kept tail (the
//! hook input does not say), so every entry of the region is judged as if
//! it were summarised — the conservative side: a deny may come from
//! untrusted content that would have been kept, an allow never hides
//! untrusted content that gets summarised. The lineage of the previous
//! summary is not in the transcript (it resolves by the policy's
//! `unknown_lineage`).
//!
//! Each line is first read with a typed, borrowing parser that skips the
//! large members (tool outputs, text) without building them (text keeps a
//! short prefix only); a line it rejects is read again leniently as a
//! `serde_json::Value`, so an odd line is never silently dropped if it is
//! JSON at all.

use super::{CowStr, entry};
use mnemo_acs::model::Origin;
use mnemo_guardian::decide::EntryProvenance;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// Provenance id standing for a previous compaction's unknown lineage.
pub const PRIOR_COMPACTION: &str = "claude-code:prior-compaction";

/// Most tool calls remembered for their results (bounded memory; a result
/// of a call older than that is `unknown-tool`, untrusted).
pub const MAX_TOOLS: usize = 200_000;

/// How many leading bytes of a text the mapping looks at.
const PREFIX: usize = 64;

/// The first [`PREFIX`] bytes of a string member (never the whole text),
/// held inline (no allocation per text).
#[derive(Debug, Clone, Copy)]
struct Prefix {
    buf: [u8; PREFIX],
    len: usize,
}

impl Default for Prefix {
    fn default() -> Self {
        Prefix {
            buf: [0; PREFIX],
            len: 0,
        }
    }
}

impl Prefix {
    fn of(s: &str) -> Prefix {
        let mut end = s.len().min(PREFIX);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut p = Prefix::default();
        p.buf[..end].copy_from_slice(&s.as_bytes()[..end]);
        p.len = end;
        p
    }

    fn as_str(&self) -> &str {
        // Copied from a `str`, cut at a char boundary: always UTF-8.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl<'de> Deserialize<'de> for Prefix {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Prefix;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, s: &str) -> Result<Prefix, E> {
                Ok(Prefix::of(s))
            }
        }
        d.deserialize_str(V)
    }
}

/// What the mapping needs from one line.
#[derive(Debug, Default)]
struct Facts<'a> {
    kind: Cow<'a, str>,
    uuid: Option<CowStr<'a>>,
    compact_boundary: bool,
    is_meta: bool,
    is_summary: bool,
    content: Content<'a>,
    attachment: Option<Attachment>,
    preserved: Option<Preserved>,
    prompt_id: Option<CowStr<'a>>,
    origin: Option<SentBy>,
}

#[derive(Debug, Default)]
enum Content<'a> {
    #[default]
    None,
    Text(Prefix),
    Blocks(Vec<Block<'a>>),
}

#[derive(Debug, Default, Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    id: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    name: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    tool_use_id: Option<CowStr<'a>>,
    #[serde(default)]
    text: Option<Prefix>,
    #[serde(borrow, default)]
    input: Option<Input<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct Input<'a> {
    #[serde(borrow, default)]
    url: Option<CowStr<'a>>,
}

/// An `attachment` line's kind and the members that name its source.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct Attachment {
    /// `file`, `mcp_resource`, `hook_additional_context`, …
    #[serde(rename = "type", default)]
    pub kind: String,
    /// `file` / `directory`: the path.
    #[serde(default)]
    pub path: Option<String>,
    /// `file`: the file name.
    #[serde(default)]
    pub filename: Option<String>,
    /// `mcp_resource`: the server.
    #[serde(default)]
    pub server: Option<String>,
    /// `mcp_resource`: the resource URI.
    #[serde(default)]
    pub uri: Option<String>,
    /// `hook_additional_context`: the hook.
    #[serde(rename = "hookName", default)]
    pub hook_name: Option<String>,
    /// `hook_additional_context`: the hook event.
    #[serde(rename = "hookEvent", default)]
    pub hook_event: Option<String>,
    /// `queued_command`: how it was queued (`prompt`, `task-notification`).
    #[serde(rename = "commandMode", default)]
    pub command_mode: Option<String>,
    /// `queued_command`: the host's own, not typed (`isMeta`).
    #[serde(rename = "isMeta", default)]
    pub is_meta: Option<bool>,
    /// `queued_command`: who sent it (absent, or kind `human`: the user).
    #[serde(default)]
    pub origin: Option<SentBy>,
    /// `queued_command`: the first bytes of its text ([`prompt_head`]).
    #[serde(default, deserialize_with = "prompt_head_de")]
    pub prompt: Option<String>,
}

/// The `origin` Claude Code puts on a message it did not get from the
/// user's keyboard (a `user` line, a `queued_command`): `kind` `human`
/// (or no `origin`) is the user; `channel` (an MCP server's push, with
/// `server`), `peer` / `coordinator` (another agent), `task-notification`,
/// `auto-continuation`, … are not.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
pub struct SentBy {
    /// `human`, `channel`, `peer`, `coordinator`, `task-notification`, …
    #[serde(default)]
    pub kind: Option<String>,
    /// `channel`: the MCP server.
    #[serde(default)]
    pub server: Option<String>,
}

impl SentBy {
    fn of(v: &Value) -> Option<SentBy> {
        let o = v.as_object()?;
        let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
        Some(SentBy {
            kind: s("kind"),
            server: s("server"),
        })
    }
}

/// The first [`PREFIX`] bytes of a queued command's text: the string, or
/// the first `text` block of a block list.
pub fn prompt_head(v: &Value) -> Option<String> {
    let t = match v {
        Value::String(t) => t.as_str(),
        Value::Array(items) => items
            .iter()
            .find(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .and_then(|b| b.get("text"))
            .and_then(Value::as_str)?,
        _ => return None,
    };
    Some(Prefix::of(t).as_str().to_string())
}

fn prompt_head_de<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<Value>::deserialize(d)?
        .as_ref()
        .and_then(prompt_head))
}

/// Origin and source id of a message `origin` that is not the user's
/// (`None`: absent, or kind `human`). Content pushed by an MCP server's
/// channel is `tool_output` from that server (as its tools and resources
/// are); another agent's message `a2a_inbound`; a task notification
/// `tool_output`; the host's own continuations `system`; an unknown kind
/// `tool_output` (untrusted by default). None of them re-grounds.
pub fn sent_by_origin(o: Option<&SentBy>) -> Option<(Origin, String)> {
    let kind = o?.kind.as_deref().unwrap_or("human");
    Some(match kind {
        "human" => return None,
        "channel" => (
            Origin::ToolOutput,
            o.and_then(|o| o.server.clone())
                .unwrap_or_else(|| "claude-code:channel".into()),
        ),
        "peer" | "coordinator" => (Origin::A2aInbound, "claude-code:peer".into()),
        "task-notification" => (Origin::ToolOutput, "claude-code:task-notification".into()),
        "auto-continuation" | "scheduled" => (Origin::System, "claude-code:host".into()),
        other => (Origin::ToolOutput, format!("claude-code:origin:{other}")),
    })
}

/// Origin and source id of a `queued_command` attachment (a message that
/// reached the context while a turn ran): the user's own words only when
/// queued as a prompt, sent by no one else, not the host's (`isMeta`), and
/// not a host line shape ([`user_text_origin`]), as Claude Code itself
/// tells a human turn.
fn queued_origin(a: &Attachment) -> (Origin, String) {
    if a.command_mode.as_deref() == Some("task-notification") {
        return (Origin::ToolOutput, "claude-code:task-notification".into());
    }
    if let Some(sent) = sent_by_origin(a.origin.as_ref()) {
        return sent;
    }
    if a.is_meta == Some(true) {
        return (Origin::System, "claude-code:meta".into());
    }
    match a.prompt.as_deref() {
        Some(t) => {
            let (o, src) = user_text_origin(t);
            (o, src.to_string())
        }
        None => (Origin::UserInput, "claude-code:user".into()),
    }
}

/// The messages a `compact_boundary` kept verbatim.
#[derive(Debug, Default, Clone)]
struct Preserved {
    uuids: Vec<String>,
    head: Option<String>,
    tail: Option<String>,
}

#[derive(Deserialize)]
struct TypedLine<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    uuid: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    subtype: Option<CowStr<'a>>,
    #[serde(rename = "isMeta", default)]
    is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    is_summary: Option<bool>,
    #[serde(borrow, default)]
    message: Option<TypedMessage<'a>>,
    #[serde(default)]
    attachment: Option<Attachment>,
    #[serde(rename = "compactMetadata", default)]
    compact_metadata: Option<CompactMeta>,
    #[serde(rename = "promptId", borrow, default)]
    prompt_id: Option<CowStr<'a>>,
    #[serde(default, deserialize_with = "sent_by_de")]
    origin: Option<SentBy>,
}

/// `origin` as [`SentBy::of`] reads it from a `Value` (an object, else none).
fn sent_by_de<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SentBy>, D::Error> {
    Ok(Option::<Value>::deserialize(d)?
        .as_ref()
        .and_then(SentBy::of))
}

#[derive(Deserialize)]
struct CompactMeta {
    #[serde(rename = "preservedSegment", default)]
    preserved_segment: Option<Segment>,
    #[serde(rename = "preservedMessages", default)]
    preserved_messages: Option<Messages>,
}

#[derive(Deserialize)]
struct Segment {
    #[serde(rename = "headUuid", default)]
    head: Option<String>,
    #[serde(rename = "tailUuid", default)]
    tail: Option<String>,
}

#[derive(Deserialize)]
struct Messages {
    #[serde(default)]
    uuids: Vec<String>,
}

impl CompactMeta {
    fn preserved(self) -> Option<Preserved> {
        let uuids = self.preserved_messages.map(|m| m.uuids).unwrap_or_default();
        let (head, tail) = self
            .preserved_segment
            .map(|s| (s.head, s.tail))
            .unwrap_or_default();
        (!uuids.is_empty() || head.is_some()).then_some(Preserved { uuids, head, tail })
    }
}

#[derive(Deserialize)]
struct TypedMessage<'a> {
    #[serde(borrow, default)]
    content: Content<'a>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Prefix::of(s)))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Content::None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                while let Some(b) = seq.next_element::<Block<'a>>()? {
                    blocks.push(b);
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::None)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

fn typed(line: &str) -> Option<Facts<'_>> {
    let t: TypedLine<'_> = serde_json::from_str::<crate::MapOnly<_>>(line).ok()?.0;
    Some(Facts {
        kind: t.kind.map(|k| k.0).unwrap_or(Cow::Borrowed("")),
        uuid: t.uuid,
        compact_boundary: t.subtype.as_deref() == Some("compact_boundary"),
        is_meta: t.is_meta.unwrap_or(false),
        is_summary: t.is_summary.unwrap_or(false),
        content: t.message.map(|m| m.content).unwrap_or_default(),
        attachment: t.attachment,
        preserved: t.compact_metadata.and_then(CompactMeta::preserved),
        prompt_id: t.prompt_id,
        origin: t.origin,
    })
}

fn lenient(v: &Value) -> Facts<'static> {
    let s = |x: Option<&Value>| x.and_then(Value::as_str).map(str::to_string);
    let content = match v.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(t)) => Content::Text(Prefix::of(t)),
        Some(Value::Array(items)) => Content::Blocks(
            items
                .iter()
                .map(|b| Block {
                    kind: s(b.get("type")).map(|x| CowStr(Cow::Owned(x))),
                    id: s(b.get("id")).map(|x| CowStr(Cow::Owned(x))),
                    name: s(b.get("name")).map(|x| CowStr(Cow::Owned(x))),
                    tool_use_id: s(b.get("tool_use_id")).map(|x| CowStr(Cow::Owned(x))),
                    text: b.get("text").and_then(Value::as_str).map(Prefix::of),
                    input: Some(Input {
                        url: b
                            .get("input")
                            .and_then(|i| i.get("url"))
                            .and_then(Value::as_str)
                            .map(|u| CowStr(Cow::Owned(u.to_string()))),
                    }),
                })
                .collect(),
        ),
        _ => Content::None,
    };
    let attachment = v.get("attachment").map(|a| Attachment {
        kind: s(a.get("type")).unwrap_or_default(),
        path: s(a.get("path")),
        filename: s(a.get("filename")),
        server: s(a.get("server")),
        uri: s(a.get("uri")),
        hook_name: s(a.get("hookName")),
        hook_event: s(a.get("hookEvent")),
        command_mode: s(a.get("commandMode")),
        is_meta: a.get("isMeta").and_then(Value::as_bool),
        origin: a.get("origin").and_then(SentBy::of),
        prompt: a.get("prompt").and_then(prompt_head),
    });
    let preserved = v
        .get("compactMetadata")
        .cloned()
        .and_then(|m| serde_json::from_value::<CompactMeta>(m).ok())
        .and_then(CompactMeta::preserved);
    Facts {
        kind: Cow::Owned(s(v.get("type")).unwrap_or_default()),
        uuid: s(v.get("uuid")).map(|x| CowStr(Cow::Owned(x))),
        compact_boundary: v.get("subtype").and_then(Value::as_str) == Some("compact_boundary"),
        is_meta: v.get("isMeta").and_then(Value::as_bool) == Some(true),
        is_summary: v.get("isCompactSummary").and_then(Value::as_bool) == Some(true),
        content,
        attachment,
        preserved,
        prompt_id: s(v.get("promptId")).map(|x| CowStr(Cow::Owned(x))),
        origin: v.get("origin").and_then(SentBy::of),
    }
}

/// Origin and source id of a user-role text, from how it starts: the host's
/// own lines are `system` (source `claude-code:host`), `!` shell output is
/// `tool_output`, anything else is what the user typed.
pub fn user_text_origin(text: &str) -> (Origin, &'static str) {
    let t = text.trim_start();
    const HOST: [&str; 7] = [
        "<command-name>",
        "<command-message>",
        "<command-args>",
        "<local-command-",
        "<system-reminder>",
        "[Request interrupted",
        "Caveat: The messages below were generated",
    ];
    if t.starts_with("<bash-stdout>") || t.starts_with("<bash-stderr>") {
        return (Origin::ToolOutput, "claude-code:bash-mode");
    }
    if t.starts_with("<task-notification>") {
        return (Origin::ToolOutput, "claude-code:task-notification");
    }
    if HOST.iter().any(|h| t.starts_with(h)) {
        return (Origin::System, "claude-code:host");
    }
    (Origin::UserInput, "claude-code:user")
}

/// Origin and source id of an `attachment` line, by kind. Content from a
/// file, a directory, an IDE selection, an MCP resource, a hook or another
/// agent is untrusted by default (as the same content read through a tool
/// would be); the host's own reminders and the user's memory files are
/// `system`; a command the user queued is `user_input`, other queued
/// messages as [`sent_by_origin`] says ([`queued_origin`]). An unknown kind is
/// `tool_output` (untrusted by default), never dropped.
///
/// Source ids: `file:<path>`, `mcp__<server>` style server name for
/// resources (the same id as that server's tools), `claude-code:hook:<name>`,
/// `claude-code:teammate`, `claude-code:memory`, `claude-code:host`,
/// `claude-code:attachment:<kind>`.
pub fn attachment_origin(a: &Attachment) -> (Origin, String) {
    let path = || {
        a.path
            .clone()
            .or_else(|| a.filename.clone())
            .unwrap_or_default()
    };
    match a.kind.as_str() {
        "file"
        | "directory"
        | "pdf_reference"
        | "compact_file_reference"
        | "edited_text_file"
        | "selected_lines_in_ide"
        | "opened_file_in_ide"
        | "image" => (Origin::ToolOutput, format!("file:{}", path())),
        "mcp_resource" | "mcp_resource_template" => (
            Origin::ToolOutput,
            a.server.clone().unwrap_or_else(|| "mcp".into()),
        ),
        "hook_additional_context" | "hook_success" | "hook_blocking_error" => (
            Origin::ToolOutput,
            format!(
                "claude-code:hook:{}",
                a.hook_name
                    .as_deref()
                    .or(a.hook_event.as_deref())
                    .unwrap_or("unknown")
            ),
        ),
        "teammate_mailbox" | "teammate_shutdown_batch" => {
            (Origin::A2aInbound, "claude-code:teammate".into())
        }
        "queued_command" => queued_origin(a),
        "nested_memory" | "memory" | "claude_md" => (Origin::System, "claude-code:memory".into()),
        "todo"
        | "todo_reminder"
        | "plan_mode"
        | "plan_mode_exit"
        | "date_change"
        | "critical_system_reminder"
        | "goal_status"
        | "deferred_tools"
        | "skill_listing"
        | "agent_listing_delta"
        | "deferred_tools_delta"
        | "token_usage"
        | "output_style" => (Origin::System, "claude-code:host".into()),
        other => (
            Origin::ToolOutput,
            format!("claude-code:attachment:{other}"),
        ),
    }
}

/// Maps transcript lines to entries, one line at a time, keeping only what
/// a compaction now would fold (bounded by the region, not the file).
#[derive(Debug, Default)]
pub struct Mapper {
    entries: Vec<EntryProvenance>,
    bad: usize,
    /// tool_use id → (tool name, URL of a web fetch)
    tools: HashMap<String, (String, Option<String>)>,
    /// Preserved uuids of the last boundary that were not seen before it.
    missing_preserved: Vec<String>,
    /// Where the summary goes (ahead of the preserved entries).
    summary_slot: Option<usize>,
    /// `promptId` of the last line that carried one (the newest turn
    /// written to the transcript).
    last_prompt_id: Option<String>,
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

    /// Maps one line (`lineno` is 1-based, for step ids of lines without a uuid).
    pub fn line(&mut self, line: &str, lineno: usize) {
        self.line_read(line, lineno, true);
    }

    /// [`Self::line`] of a line that mnemo-trail's parser read already
    /// (`parsed`: its [`mnemo_trail::parse::parse_line`] of `line`, `None`
    /// when that failed), so that a hook parses each line once for the
    /// Guardian and the trail. `user` and `assistant` lines (and lines of
    /// a kind the mapping ignores) are mapped from that parse, which reads
    /// every member as the `Value` reading does; `system` and
    /// `attachment` lines, and a line it did not parse, are read as
    /// [`Self::line`] reads them.
    pub fn line_parsed(
        &mut self,
        line: &str,
        parsed: Option<&mnemo_trail::parse::Line<'_>>,
        lineno: usize,
    ) {
        let Some(l) = parsed else {
            return self.line(line, lineno);
        };
        if line.trim().is_empty() {
            return;
        }
        let kind = l.kind().unwrap_or("");
        // mnemo-trail's parse does not read a user line's `origin`
        // (a message that is not the user's): such a line is read here.
        if matches!(kind, "system" | "attachment")
            || (kind == "user" && memchr::memmem::find(line.as_bytes(), b"\"origin\"").is_some())
        {
            return self.line(line, lineno);
        }
        fn cow(x: &str) -> CowStr<'_> {
            CowStr(Cow::Borrowed(x))
        }
        let content = match l.claude_content() {
            mnemo_trail::parse::ClaudeContent::None => Content::None,
            mnemo_trail::parse::ClaudeContent::Text(t) => Content::Text(Prefix::of(t)),
            mnemo_trail::parse::ClaudeContent::Blocks(bs) => Content::Blocks(
                bs.iter()
                    .map(|b| Block {
                        kind: b.kind().map(cow),
                        id: b.id().map(cow),
                        name: b.name().map(cow),
                        tool_use_id: b.tool_use_id().map(cow),
                        text: b.text().map(Prefix::of),
                        input: Some(Input {
                            url: b.input_url().map(cow),
                        }),
                    })
                    .collect(),
            ),
        };
        let facts = Facts {
            kind: Cow::Borrowed(kind),
            uuid: l.uuid().map(cow),
            compact_boundary: l.subtype() == Some("compact_boundary"),
            is_meta: l.is_meta() == Some(true),
            is_summary: l.is_compact_summary() == Some(true),
            content,
            attachment: None,
            preserved: None,
            prompt_id: l.prompt_id().map(cow),
            origin: None,
        };
        self.facts(facts, lineno);
    }

    /// [`Self::line`]; `typed: false` reads every line as a `Value` (the
    /// tests compare both readings).
    fn line_read(&mut self, line: &str, lineno: usize, typed_first: bool) {
        if line.trim().is_empty() {
            return;
        }
        let facts = match typed_first.then(|| typed(line)).flatten() {
            Some(f) => f,
            None => match serde_json::from_str::<Value>(line) {
                Ok(v) => lenient(&v),
                Err(_) => {
                    self.bad += 1;
                    return;
                }
            },
        };
        self.facts(facts, lineno);
    }

    fn boundary(&mut self, preserved: Option<Preserved>) {
        let Some(p) = preserved else {
            self.entries.clear();
            self.summary_slot = Some(0);
            self.missing_preserved.clear();
            return;
        };
        let mut keep: HashSet<&str> = p.uuids.iter().map(String::as_str).collect();
        if p.uuids.is_empty() {
            // Only the segment: head..=tail in transcript order.
            let head = p.head.as_deref().unwrap_or("");
            let tail = p.tail.as_deref().unwrap_or(head);
            let mut inside = false;
            for e in &self.entries {
                if e.step_id == head {
                    inside = true;
                }
                if inside {
                    keep.insert(e.step_id.as_str());
                }
                if e.step_id == tail {
                    break;
                }
            }
            if !inside {
                keep.insert(head);
                keep.insert(tail);
            }
        }
        let seen: HashSet<String> = self.entries.iter().map(|e| e.step_id.clone()).collect();
        let mut missing: Vec<String> = keep
            .iter()
            .filter(|u| !seen.contains(**u))
            .map(|u| u.to_string())
            .collect();
        missing.sort();
        let keep: HashSet<String> = keep.into_iter().map(str::to_string).collect();
        self.entries.retain(|e| keep.contains(&e.step_id));
        self.missing_preserved = missing;
        self.summary_slot = Some(0);
    }

    fn facts(&mut self, facts: Facts<'_>, lineno: usize) {
        if let Some(p) = facts.prompt_id.as_deref()
            && self.last_prompt_id.as_deref() != Some(p)
        {
            self.last_prompt_id = Some(p.to_string());
        }
        let step = facts
            .uuid
            .as_deref()
            .map(str::to_string)
            .unwrap_or_else(|| format!("line-{lineno}"));
        match facts.kind.as_ref() {
            "system" if facts.compact_boundary => self.boundary(facts.preserved),
            "attachment" => {
                let a = facts.attachment.unwrap_or_default();
                let (o, src) = attachment_origin(&a);
                self.entries.push(entry(step, vec![(o, Some(src))]));
            }
            "user" => {
                let sent = sent_by_origin(facts.origin.as_ref());
                let meta = |(o, src): (Origin, &'static str)| {
                    if let Some((o, src)) = &sent {
                        (*o, Some(src.clone()))
                    } else if facts.is_meta {
                        (Origin::System, Some("claude-code:meta".to_string()))
                    } else {
                        (o, Some(src.to_string()))
                    }
                };
                let mut items: Vec<(Origin, Option<String>)> = Vec::new();
                match &facts.content {
                    Content::Text(_) if facts.is_summary => {
                        items.push((Origin::AgentGenerated, None))
                    }
                    Content::Text(t) => items.push(meta(user_text_origin(t.as_str()))),
                    Content::Blocks(blocks) => {
                        for b in blocks {
                            match b.kind.as_deref() {
                                Some("tool_result") => {
                                    let id = b.tool_use_id.as_deref().unwrap_or("");
                                    let (o, src) = match self.tools.get(id) {
                                        Some((name, url)) => {
                                            crate::tool_origin_url(name, url.as_deref())
                                        }
                                        None => (Origin::ToolOutput, "unknown-tool".into()),
                                    };
                                    items.push((o, Some(src)));
                                }
                                Some("text") if facts.is_summary => {
                                    items.push((Origin::AgentGenerated, None))
                                }
                                Some("text") => {
                                    let t = b.text.as_ref().map(Prefix::as_str).unwrap_or("");
                                    items.push(meta(user_text_origin(t)));
                                }
                                Some("image" | "document") => {
                                    items.push(meta((Origin::UserInput, "claude-code:user")));
                                }
                                _ => {}
                            }
                        }
                    }
                    Content::None => {}
                }
                if !items.is_empty() {
                    let mut e = entry(step, items);
                    if facts.is_summary {
                        for p in &mut e.provenance {
                            p.source_id = Some("claude-code:compact-summary".into());
                            p.derived_from.push(PRIOR_COMPACTION.into());
                        }
                        match self.summary_slot.take() {
                            Some(at) if at <= self.entries.len() => self.entries.insert(at, e),
                            _ => self.entries.push(e),
                        }
                        return;
                    }
                    self.entries.push(e);
                }
            }
            "assistant" => {
                let mut items = Vec::new();
                match &facts.content {
                    Content::Blocks(blocks) => {
                        for b in blocks {
                            match b.kind.as_deref() {
                                Some("tool_use") => {
                                    if let (Some(id), Some(name)) =
                                        (b.id.as_deref(), b.name.as_deref())
                                    {
                                        let url = b
                                            .input
                                            .as_ref()
                                            .and_then(|i| i.url.as_deref())
                                            .map(str::to_string);
                                        if self.tools.len() >= MAX_TOOLS {
                                            // Bounded memory: results of calls this old
                                            // map to `unknown-tool` (untrusted).
                                            self.tools.clear();
                                        }
                                        self.tools.insert(id.to_string(), (name.to_string(), url));
                                    }
                                }
                                Some("text") => items.push((Origin::AgentGenerated, None)),
                                _ => {}
                            }
                        }
                    }
                    Content::Text(_) => items.push((Origin::AgentGenerated, None)),
                    Content::None => {}
                }
                if !items.is_empty() {
                    self.entries.push(entry(step, items));
                }
            }
            _ => {}
        }
    }

    /// Preserved messages the last boundary named that were not found
    /// before it (the reader then did not see the whole kept context).
    pub fn missing_preserved(&self) -> &[String] {
        &self.missing_preserved
    }

    /// `promptId` of the last line read that carried one: the newest user
    /// turn with a line in the transcript.
    pub fn last_prompt_id(&self) -> Option<&str> {
        self.last_prompt_id.as_deref()
    }

    /// The entries (oldest first) and the number of lines that did not parse.
    pub fn finish(self) -> (Vec<EntryProvenance>, usize) {
        (self.entries, self.bad)
    }
}

/// The entries of a transcript that a compaction now would fold, oldest first,
/// and the number of lines that did not parse.
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

    /// The typed, the `Value` and the shared (mnemo-trail's parse,
    /// [`Mapper::line_parsed`]) readings of `lines`, checked equal.
    fn both(lines: &[&str]) -> (Vec<EntryProvenance>, usize) {
        let mut typed = Mapper::new();
        let mut lenient = Mapper::new();
        let mut shared = Mapper::new();
        for (i, l) in lines.iter().enumerate() {
            typed.line_read(l, i + 1, true);
            lenient.line_read(l, i + 1, false);
            let parsed = mnemo_trail::parse::parse_line(l).ok();
            shared.line_parsed(l, parsed.as_ref(), i + 1);
        }
        assert_eq!(typed.last_prompt_id(), lenient.last_prompt_id());
        assert_eq!(typed.missing_preserved(), lenient.missing_preserved());
        assert_eq!(shared.last_prompt_id(), lenient.last_prompt_id());
        assert_eq!(shared.missing_preserved(), lenient.missing_preserved());
        let t = typed.finish();
        assert_eq!(t, lenient.finish(), "entries of {lines:?}");
        assert_eq!(t, shared.finish(), "shared parse: entries of {lines:?}");
        t
    }

    #[test]
    fn the_typed_reading_maps_every_fixture_as_the_value_reading() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude");
        let mut n = 0;
        for f in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                let text = std::fs::read_to_string(f.path()).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                assert!(!both(&lines).0.is_empty(), "{}", f.path().display());
                n += 1;
            }
        }
        assert!(n >= 8, "fixtures read: {n}");
    }

    #[test]
    fn a_line_the_shared_parse_rejects_is_read_as_before() {
        // A lone surrogate in a member the typed reading skips: the typed
        // reading takes the line, `Value` and mnemo-trail's parse do not.
        let l = r#"{"type":"user","uuid":"m7","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"\ud800 lone"}]}}"#;
        assert!(mnemo_trail::parse::parse_line(l).is_err());
        let mut typed = Mapper::new();
        typed.line(l, 1);
        let mut shared = Mapper::new();
        shared.line_parsed(l, None, 1);
        let t = typed.finish();
        assert_eq!(t.0.len(), 1, "{t:?}");
        assert_eq!(t, shared.finish());
    }

    #[test]
    fn odd_shapes_read_as_the_value_reading_does() {
        let cases = [
            // a derived struct would take an array member by member
            r#"["user","u0",null,false,false,{"content":"typed"}]"#,
            r#"{"type":"assistant","uuid":"a1","message":{"content":[{"type":"tool_use","id":"t1","name":"WebFetch","input":{"url":"https://e.x/\u00e9"}},{"type":"text","text":"ok"}]}}"#,
            r#"{"type":"user","uuid":"u1","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"page"}]}}"#,
            r#"{"type":"user","uuid":"u2","message":{"content":[{"type":"tool_result","tool_use_id":"nope"}]}}"#,
            r#"{"type":"user","uuid":"u3","message":{"content":"\u003ccommand-name\u003e/compact"}}"#,
            r#"{"type":"user","uuid":"u4","message":{"content":"  \u00e9t\u00e9 \"quoted\" words"}}"#,
            r#"{"type":"user","uuid":"u5","isMeta":"yes","message":{"content":"x"}}"#,
            r#"{"type":"user","uuid":"u6","message":{"content":[{"type":"text","text":7}]}}"#,
            r#"{"type":"user","uuid":"u7","message":{"content":[{"type":"image"},{"type":"document"},{"type":"odd"}]}}"#,
            r#"{"type":"user","uuid":"u8","message":{"content":{"a":1}}}"#,
            r#"{"type":"user","uuid":"u9","message":{"content":null}}"#,
            r#"{"type":"attachment","uuid":"at1","attachment":{"type":"file","filename":"f.md"}}"#,
            r#"{"type":"attachment","uuid":"at2","attachment":{"type":"mcp_resource","server":"srv","uri":"r://x"}}"#,
            r#"{"type":"attachment","uuid":"at3"}"#,
            r#"{"type":"user","uuid":"s1","isCompactSummary":true,"message":{"content":"summary"}}"#,
            r#"{"type":"user","uuid":"u10","uuid":"u11","message":{"content":"dup key"}}"#,
            r#"{"type":"assistant","message":{"content":"no uuid"},"promptId":"p1"}"#,
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b1","compactMetadata":{"preservedSegment":{"headUuid":"u1","tailUuid":"u4"}}}"#,
            r#"{"type":"user","uuid":"u12","promptId":"p2","message":{"content":"after"}}"#,
            r#"not json"#,
            r#"[1,2]"#,
            "",
            // what the shared parse must read as the others do
            "\u{c}{\"type\":\"user\",\"uuid\":\"ff\",\"message\":{\"content\":\"form feed\"}}",
            "\u{a0}",
            r#"{"type":"user","uuid":"m1","isMeta":1,"message":{"content":[{"type":"text","text":"t"},5,"s",{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x"}]}]}}"#,
            r#"{"type":"user","uuid":"m2","message":"not an object"}"#,
            r#"{"type":"assistant","uuid":"m3","message":{"content":[{"type":"tool_use","id":"t2","name":"WebFetch","input":"str"},{"type":"tool_use","id":"t3","name":"WebFetch","input":{"url":5}}]}}"#,
            r#"{"type":"user","uuid":"m4","message":{"content":[{"type":"tool_result","tool_use_id":"t2"},{"type":"tool_result","tool_use_id":"t3","content":"Exit code 1\nerr"}]}}"#,
            r#"{"type":"user","uuid":"\u006d5","promptId":7,"message":{"content":"                                                                    <command-name>/compact"}}"#,
            r#"{"type":"user","uuid":"m6","message":{"content":"x","content":[{"type":"text","text":"<local-command-stdout>"}]},"message":{"content":"last wins"}}"#,
            r#"{"type":"progress","uuid":"p9","promptId":"p3"}"#,
            r#"{"type":"system","subtype":"informational","uuid":"s9","content":"x"}"#,
            r#"{"type":"attachment","uuid":"at4","attachment":{"type":"hook_additional_context","hookName":"h","content":["x"]}}"#,
            r#"{"type":"attachment","uuid":"q1","attachment":{"type":"queued_command","prompt":"go on","commandMode":"prompt"}}"#,
            r#"{"type":"attachment","uuid":"q2","attachment":{"type":"queued_command","prompt":[{"type":"image"},{"type":"text","text":"<task-notification>"}],"commandMode":"task-notification"}}"#,
            r#"{"type":"attachment","uuid":"q3","attachment":{"type":"queued_command","prompt":"x","origin":{"kind":"channel","server":"s"},"isMeta":true}}"#,
            r#"{"type":"attachment","uuid":"q4","attachment":{"type":"queued_command","prompt":7,"origin":"human","isMeta":"no"}}"#,
            r#"{"type":"user","uuid":"o1","isMeta":true,"origin":{"kind":"peer"},"message":{"content":"from a peer"}}"#,
            r#"{"type":"user","uuid":"o2","origin":{"kind":"human"},"message":{"content":[{"type":"text","text":"typed"}]}}"#,
            r#"{"type":"user","uuid":"o3","origin":5,"message":{"content":"odd origin"}}"#,
            r#"{"type":"user","uuid":"o4","message":{"content":[{"type":"tool_result","tool_use_id":"t9","content":"{\"origin\": 1}"}]}}"#,
        ];
        let (entries, bad) = both(&cases);
        assert_eq!(bad, 2, "not json, and the line after a form feed");
        assert!(entries.iter().any(|e| e.step_id == "u1"), "{entries:?}");
        for c in &cases {
            both(&[c]);
        }
    }
}
