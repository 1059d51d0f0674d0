//! # mnemo-hooks
//!
//! Host adapters of the compaction Guardian: the Claude Code and Codex CLI
//! PreCompact hooks.
//!
//! **Owns:** parsing the host's hook input and transcript, mapping transcript
//! content to ACS origins, and rendering the host's own answer — all pure
//! ([`claude`], [`codex`], [`render`]) — and the thin edge that reads stdin
//! and the transcript file and asks the Guardian in process ([`io`]); the
//! artifact trail at PreCompact, PostCompact and SessionStart
//! ([`trail_hook`], extraction in `mnemo-trail`).
//!
//! **Must never:** decide (the Guardian in `mnemo-guardian` decides); let a
//! broken store or an unreadable transcript turn a deny into an allow; write
//! anything to the host's stdout but the host's own answer format.

pub mod claude;
pub mod codex;
pub mod collapse;
pub mod install;
pub mod install_codex;
pub mod io;
pub mod prompt;
pub mod trail_hook;

use mnemo_acs::model::{Origin, Provenance, Verdict};
use mnemo_guardian::decide::{Decision, EntryProvenance};
use serde::Deserialize;

/// The PreCompact hook input both hosts send (unknown members ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct HookInput {
    /// Host session id.
    #[serde(default)]
    pub session_id: String,
    /// The conversation transcript (JSONL).
    #[serde(default)]
    pub transcript_path: Option<String>,
    /// Working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// `PreCompact`.
    #[serde(default)]
    pub hook_event_name: Option<String>,
    /// `manual` or `auto`.
    #[serde(default)]
    pub trigger: Option<String>,
    /// Claude Code: the text after `/compact`.
    #[serde(default)]
    pub custom_instructions: Option<String>,
    /// Claude Code: the id of the user turn the hook runs in (`promptId`
    /// of that turn's transcript lines).
    #[serde(default)]
    pub prompt_id: Option<String>,
    /// Claude Code `UserPromptSubmit`: the text submitted.
    #[serde(default)]
    pub prompt: Option<String>,
    /// Codex: turn id.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Codex: model.
    #[serde(default)]
    pub model: Option<String>,
    /// Codex: set for a subagent's hook.
    #[serde(default)]
    pub agent_id: Option<String>,
}

/// Parses a hook input.
pub fn parse_hook_input(bytes: &[u8]) -> Result<HookInput, serde_json::Error> {
    serde_json::from_slice(bytes)
}

/// The host whose format to answer in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// Claude Code.
    ClaudeCode,
    /// Codex CLI.
    Codex,
}

/// How Claude Code is told to block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlockStyle {
    /// Exit code 2, reason on stderr (default).
    #[default]
    ExitCode,
    /// Exit 0 with `{"decision":"block","reason":…}` on stdout (reason also on stderr).
    Json,
}

/// What the hook process prints and exits with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookOutput {
    /// Process exit code.
    pub exit_code: u8,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Renders a decision in the host's own hook format.
pub fn render(host: Host, style: BlockStyle, d: &Decision) -> HookOutput {
    if d.verdict != Verdict::Deny {
        return HookOutput {
            exit_code: 0,
            stdout: String::new(),
            stderr: String::new(),
        };
    }
    let reason = format!("mnemo guardian blocked compaction: {}", d.reasoning);
    match (host, style) {
        (Host::ClaudeCode, BlockStyle::ExitCode) => HookOutput {
            exit_code: 2,
            stdout: String::new(),
            stderr: format!("{reason}\n"),
        },
        (Host::ClaudeCode, BlockStyle::Json) => HookOutput {
            exit_code: 0,
            stdout: serde_json::json!({"decision": "block", "reason": reason}).to_string() + "\n",
            stderr: format!("{reason}\n"),
        },
        (Host::Codex, _) => HookOutput {
            exit_code: 0,
            // `codex exec` shows no stopReason: systemMessage says it too.
            stdout: serde_json::json!({"continue": false, "stopReason": reason, "systemMessage": reason})
                .to_string()
                + "\n",
            stderr: format!("{reason}\n"),
        },
    }
}

/// Origin and source id of a tool's result, by tool name: web fetches are
/// `retrieved` (source: the URL), web searches `external`, MCP tools
/// (`mcp__server__tool`) `tool_output` with the server as source id, any
/// other tool `tool_output` with its name.
pub fn tool_origin(name: &str, input: Option<&serde_json::Value>) -> (Origin, String) {
    tool_origin_url(
        name,
        input.and_then(|i| i.get("url")).and_then(|u| u.as_str()),
    )
}

/// [`tool_origin`] given the `url` member of the tool's input.
pub(crate) fn tool_origin_url(name: &str, url: Option<&str>) -> (Origin, String) {
    if name.eq_ignore_ascii_case("webfetch") || name.eq_ignore_ascii_case("web_fetch") {
        return (Origin::Retrieved, url.unwrap_or(name).to_string());
    }
    if name.eq_ignore_ascii_case("websearch") || name.eq_ignore_ascii_case("web_search") {
        return (Origin::External, "web_search".into());
    }
    if let Some(rest) = name.strip_prefix("mcp__") {
        let server = rest.split("__").next().unwrap_or(rest);
        return (Origin::ToolOutput, server.to_string());
    }
    (Origin::ToolOutput, name.to_string())
}

pub(crate) fn entry(step: String, items: Vec<(Origin, Option<String>)>) -> EntryProvenance {
    let provenance = items
        .into_iter()
        .enumerate()
        .map(|(k, (o, src))| Provenance {
            provenance_id: provenance_id(&step, k),
            origin: o,
            source_id: src,
            derived_from: Vec::new(),
        })
        .collect();
    EntryProvenance {
        step_id: step,
        provenance,
    }
}

/// `<step>#<k>`, the id of the `k`-th provenance node of a step.
fn provenance_id(step: &str, k: usize) -> String {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = k;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut id = String::with_capacity(step.len() + 1 + digits.len() - i);
    id.push_str(step);
    id.push('#');
    for &d in &digits[i..] {
        id.push(char::from(d));
    }
    id
}

/// Reads `T` (a derived struct) from a JSON object only: a derived struct
/// also takes an array, member by member in order, where the mappings
/// (`Value::get`) never found a member.
pub(crate) struct MapOnly<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData)).map(MapOnly)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn provenance_ids_are_step_hash_index() {
        for k in [0usize, 1, 9, 10, 99, 100, 12_345, usize::MAX] {
            assert_eq!(super::provenance_id("s-1", k), format!("s-1#{k}"));
        }
    }

    #[test]
    fn tool_origin_by_url_is_tool_origin_by_input() {
        let input = serde_json::json!({"url": "https://e.x/a"});
        for name in [
            "WebFetch",
            "web_fetch",
            "WEBFETCH",
            "WebSearch",
            "mcp__srv__t",
            "Bash",
            "web",
        ] {
            assert_eq!(
                super::tool_origin(name, Some(&input)),
                super::tool_origin_url(name, Some("https://e.x/a"))
            );
            assert_eq!(
                super::tool_origin(name, None),
                super::tool_origin_url(name, None)
            );
        }
    }
}
