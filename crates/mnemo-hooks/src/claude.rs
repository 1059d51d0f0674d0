//! Claude Code transcripts (JSONL): which entries a PreCompact is about to
//! compact, and their origins (pure).
//!
//! Lines of type `user` / `assistant` carry `message.content` (a string or
//! blocks `text`, `tool_use`, `tool_result`, `thinking`…). User text is
//! `user_input`; `isMeta` lines are `system`; a previous compaction's summary
//! (`isCompactSummary`) is `agent_generated` with an unknown lineage; tool
//! results take their origin from the tool's name ([`super::tool_origin`]);
//! assistant text is `agent_generated`. Only lines after the last
//! `compact_boundary` are about to be compacted.
//!
//! Each line is first read with a typed, borrowing parser that skips the
//! large members (tool outputs, text) without building them; a line it
//! rejects is read again leniently as a `serde_json::Value`, so an odd line
//! is never silently dropped if it is JSON at all.

use super::{entry, tool_origin};
use mnemo_acs::model::Origin;
use mnemo_guardian::decide::EntryProvenance;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;

/// Provenance id standing for a previous compaction's unknown lineage.
pub const PRIOR_COMPACTION: &str = "claude-code:prior-compaction";

/// What the mapping needs from one line.
#[derive(Debug, Default)]
struct Facts<'a> {
    kind: Cow<'a, str>,
    uuid: Option<Cow<'a, str>>,
    compact_boundary: bool,
    is_meta: bool,
    is_summary: bool,
    content: Content<'a>,
}

#[derive(Debug, Default)]
enum Content<'a> {
    #[default]
    None,
    Text,
    Blocks(Vec<Block<'a>>),
}

#[derive(Debug, Default, Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<Input>,
}

#[derive(Debug, Default, Deserialize)]
struct Input {
    #[serde(default)]
    url: Option<String>,
}

#[derive(Deserialize)]
struct TypedLine<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    subtype: Option<Cow<'a, str>>,
    #[serde(rename = "isMeta", default)]
    is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    is_summary: Option<bool>,
    #[serde(borrow, default)]
    message: Option<TypedMessage<'a>>,
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
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Content::Text)
            }
            fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text)
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
    let t: TypedLine<'_> = serde_json::from_str(line).ok()?;
    Some(Facts {
        kind: t.kind.unwrap_or(Cow::Borrowed("")),
        uuid: t.uuid,
        compact_boundary: t.subtype.as_deref() == Some("compact_boundary"),
        is_meta: t.is_meta.unwrap_or(false),
        is_summary: t.is_summary.unwrap_or(false),
        content: t.message.map(|m| m.content).unwrap_or_default(),
    })
}

fn lenient(v: &Value) -> Facts<'static> {
    let s = |x: Option<&Value>| x.and_then(Value::as_str).map(|s| Cow::Owned(s.to_string()));
    let content = match v.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(_)) => Content::Text,
        Some(Value::Array(items)) => Content::Blocks(
            items
                .iter()
                .map(|b| Block {
                    kind: s(b.get("type")),
                    id: s(b.get("id")),
                    name: s(b.get("name")),
                    tool_use_id: s(b.get("tool_use_id")),
                    input: Some(Input {
                        url: b
                            .get("input")
                            .and_then(|i| i.get("url"))
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    }),
                })
                .collect(),
        ),
        _ => Content::None,
    };
    Facts {
        kind: s(v.get("type")).unwrap_or(Cow::Borrowed("")),
        uuid: s(v.get("uuid")),
        compact_boundary: v.get("subtype").and_then(Value::as_str) == Some("compact_boundary"),
        is_meta: v.get("isMeta").and_then(Value::as_bool).unwrap_or(false),
        is_summary: v
            .get("isCompactSummary")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        content,
    }
}

/// The entries of a transcript that a compaction now would fold, oldest first,
/// and the number of lines that did not parse.
pub fn transcript_entries(jsonl: &str) -> (Vec<EntryProvenance>, usize) {
    let mut entries = Vec::new();
    let mut bad = 0usize;
    // tool_use id → (tool name, URL of a web fetch)
    let mut tools: HashMap<String, (String, Option<String>)> = HashMap::new();
    for (i, line) in jsonl.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let facts = match typed(line) {
            Some(f) => f,
            None => match serde_json::from_str::<Value>(line) {
                Ok(v) => lenient(&v),
                Err(_) => {
                    bad += 1;
                    continue;
                }
            },
        };
        let step = facts
            .uuid
            .as_deref()
            .map(str::to_string)
            .unwrap_or_else(|| format!("line-{}", i + 1));
        match facts.kind.as_ref() {
            "system" if facts.compact_boundary => entries.clear(),
            "user" => {
                let text_origin = if facts.is_meta {
                    Origin::System
                } else {
                    Origin::UserInput
                };
                let mut items: Vec<(Origin, Option<String>)> = Vec::new();
                match &facts.content {
                    Content::Text if facts.is_summary => items.push((Origin::AgentGenerated, None)),
                    Content::Text => items.push((text_origin, Some("claude-code:user".into()))),
                    Content::Blocks(blocks) => {
                        for b in blocks {
                            match b.kind.as_deref() {
                                Some("tool_result") => {
                                    let id = b.tool_use_id.as_deref().unwrap_or("");
                                    let (o, src) = match tools.get(id) {
                                        Some((name, url)) => {
                                            let input = url
                                                .as_ref()
                                                .map(|u| serde_json::json!({ "url": u }));
                                            tool_origin(name, input.as_ref())
                                        }
                                        None => (Origin::ToolOutput, "unknown-tool".into()),
                                    };
                                    items.push((o, Some(src)));
                                }
                                Some("text") if facts.is_summary => {
                                    items.push((Origin::AgentGenerated, None))
                                }
                                Some("text" | "image" | "document") => {
                                    items.push((text_origin, Some("claude-code:user".into())));
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
                    }
                    entries.push(e);
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
                                        let url = b.input.as_ref().and_then(|i| i.url.clone());
                                        tools.insert(id.to_string(), (name.to_string(), url));
                                    }
                                }
                                Some("text") => items.push((Origin::AgentGenerated, None)),
                                _ => {}
                            }
                        }
                    }
                    Content::Text => items.push((Origin::AgentGenerated, None)),
                    Content::None => {}
                }
                if !items.is_empty() {
                    entries.push(entry(step, items));
                }
            }
            _ => {}
        }
    }
    (entries, bad)
}
