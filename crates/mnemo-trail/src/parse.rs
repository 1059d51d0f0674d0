//! Transcript lines → host-neutral events (pure).
//!
//! Claude Code: `user` / `assistant` lines with `message.content` (a string
//! or `text` / `tool_use` / `tool_result` blocks); `isMeta` lines, a previous
//! compaction's summary (`isCompactSummary`) and the host's own command echo
//! (`<command-name>…`, `<local-command-stdout>…`) are not the user's words.
//! Codex CLI: `response_item` lines (or bare items) — `message`,
//! `function_call` / `custom_tool_call` / `local_shell_call` and their
//! `*_output` items; `compacted` starts a new region. OpenCode: one message a
//! line as its plugin API gives it (`{"info": {"role"}, "parts": [...]}`),
//! parts `text` and `tool` (`state.input`, `state.output`,
//! `state.metadata.exit`).
//!
//! A line is read by [`parse_line`] into a [`Line`]: typed, only the fields
//! the trail reads, its strings borrowed from the line where they hold no
//! escape; every other field and value is skipped without being built (no
//! `serde_json::Value` tree). A field of an unexpected shape reads as
//! missing, so a well-formed line never fails; [`Line::events`] then hands
//! its events to a callback, borrowing from the line.

use crate::json::{Lenient, List, Record, Scalar, StrOrValue, lenient_deserialize, record, skip};
use serde::de::MapAccess;
use std::borrow::Cow;

/// Which host wrote a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostKind {
    /// Claude Code JSONL.
    ClaudeCode,
    /// Codex CLI rollout JSONL.
    Codex,
    /// OpenCode messages (one `{info, parts}` object a line).
    OpenCode,
}

impl HostKind {
    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            HostKind::ClaudeCode => "claude-code",
            HostKind::Codex => "codex",
            HostKind::OpenCode => "opencode",
        }
    }
}

/// What a tool did to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileAction {
    /// Read.
    Read,
    /// Edited in place.
    Edited,
    /// Written (created or replaced).
    Written,
    /// Deleted.
    Deleted,
}

impl FileAction {
    /// Past-tense verb.
    pub fn as_str(self) -> &'static str {
        match self {
            FileAction::Read => "read",
            FileAction::Edited => "edited",
            FileAction::Written => "written",
            FileAction::Deleted => "deleted",
        }
    }
}

/// A tool call, normalised (borrowing from its line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call<'a> {
    /// A shell command.
    Command(Cow<'a, str>),
    /// File operations.
    Files(Vec<(Cow<'a, str>, FileAction)>),
    /// Anything else (not part of the trail).
    Other,
}

/// One event of a transcript (borrowing from its line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<'a> {
    /// The user's own words.
    UserText(&'a str),
    /// The assistant's prose.
    AssistantText(&'a str),
    /// A tool call (`id` links it to its result).
    Call {
        /// Call id.
        id: &'a str,
        /// What it does.
        call: Call<'a>,
    },
    /// A tool result.
    Result {
        /// Call id.
        id: &'a str,
        /// Exit status, when the host says it.
        exit: Option<i64>,
        /// The host marked the result as an error.
        is_error: bool,
        /// The first meaningful line of the output (at most 200 bytes).
        first_line: String,
    },
    /// A call and its result in one item (OpenCode's tool parts).
    CallResult {
        /// What it did.
        call: Call<'a>,
        /// Exit status.
        exit: Option<i64>,
        /// Marked as an error.
        is_error: bool,
        /// First meaningful line of the output.
        first_line: String,
    },
    /// The working directory of the session.
    Cwd(&'a str),
    /// A compaction happened here.
    Boundary,
}

/// `impl Lenient` for a [`Record`]: an object's fields, anything else empty.
macro_rules! record_types {
    ($($t:ident),* $(,)?) => {$(
        impl<'de> Lenient<'de> for $t<'de> {
            fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
                record(map)
            }
        }
        lenient_deserialize!($t);
    )*};
}

/// A message's or a tool result's content: a string or a list of blocks.
#[derive(Debug, Default)]
enum Content<'a> {
    #[default]
    None,
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

impl<'de> Lenient<'de> for Content<'de> {
    fn string(s: Cow<'de, str>) -> Self {
        Content::Text(s)
    }
    fn seq<A: serde::de::SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        let List(v) = List::<Block<'de>>::seq(seq)?;
        Ok(Content::Blocks(v.unwrap_or_default()))
    }
}

/// A tool result's content (Claude Code `tool_result.content`): a string
/// is summarised as it is read (its exit status and first meaningful line;
/// the text itself, often a long output, is never copied), text blocks are
/// kept.
#[derive(Debug, Default)]
enum ResultContent<'a> {
    #[default]
    None,
    Summary {
        exit: Option<i64>,
        first_line: String,
    },
    /// A string borrowed from the line, summarised when its events are
    /// read (a parse whose events are never read, or read later, does not
    /// pay for it).
    Text(&'a str),
    Blocks(Vec<Block<'a>>),
}

impl ResultContent<'_> {
    fn summary(text: &str) -> Self {
        ResultContent::Summary {
            exit: exit_in_text(text),
            first_line: first_meaningful_line(text),
        }
    }
}

impl<'de> Lenient<'de> for ResultContent<'de> {
    fn string(s: Cow<'de, str>) -> Self {
        match s {
            Cow::Borrowed(t) => ResultContent::Text(t),
            Cow::Owned(t) => ResultContent::summary(&t),
        }
    }
    fn transient(s: &str) -> Self {
        ResultContent::summary(s)
    }
    fn seq<A: serde::de::SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        let List(v) = List::<Block<'de>>::seq(seq)?;
        Ok(ResultContent::Blocks(v.unwrap_or_default()))
    }
}

/// A content block: Claude Code's `text` / `tool_use` / `tool_result`, a
/// Codex message's `input_text` / `output_text` (only `text` is read).
#[derive(Debug, Default)]
pub struct Block<'a> {
    kind: Scalar<'a>,
    text: Scalar<'a>,
    id: Scalar<'a>,
    name: Scalar<'a>,
    input: Input<'a>,
    tool_use_id: Scalar<'a>,
    is_error: Scalar<'a>,
    content: ResultContent<'a>,
}

impl<'de> Record<'de> for Block<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.kind = map.next_value()?,
            "text" => self.text = map.next_value()?,
            "id" => self.id = map.next_value()?,
            "name" => self.name = map.next_value()?,
            "input" => self.input = map.next_value()?,
            "tool_use_id" => self.tool_use_id = map.next_value()?,
            "is_error" => self.is_error = map.next_value()?,
            "content" => self.content = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// A tool's input (Claude Code `tool_use.input`, OpenCode `state.input`).
#[derive(Debug, Default)]
struct Input<'a> {
    command: Scalar<'a>,
    file_path: Scalar<'a>,
    notebook_path: Scalar<'a>,
    path: Scalar<'a>,
    file_path_camel: Scalar<'a>,
    /// A web fetch's URL (read for the Guardian's view, [`ClaudeBlock`]).
    url: Scalar<'a>,
}

impl<'de> Record<'de> for Input<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "command" => self.command = map.next_value()?,
            "file_path" => self.file_path = map.next_value()?,
            "notebook_path" => self.notebook_path = map.next_value()?,
            "path" => self.path = map.next_value()?,
            "filePath" => self.file_path_camel = map.next_value()?,
            "url" => self.url = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// Claude Code's `message`.
#[derive(Debug, Default)]
struct Message<'a> {
    content: Content<'a>,
}

impl<'de> Record<'de> for Message<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "content" => self.content = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// A Codex command (`command` or `cmd`): a string, or argv.
#[derive(Debug, Default)]
enum Cmd<'a> {
    /// No such key.
    #[default]
    Missing,
    Str(Cow<'a, str>),
    Argv(Vec<Scalar<'a>>),
    /// The key holds something else.
    Other,
}

impl<'de> Lenient<'de> for Cmd<'de> {
    fn string(s: Cow<'de, str>) -> Self {
        Cmd::Str(s)
    }
    fn boolean(_b: bool) -> Self {
        Cmd::Other
    }
    fn int(_n: i64) -> Self {
        Cmd::Other
    }
    fn uint(_n: u64) -> Self {
        Cmd::Other
    }
    fn float(_f: f64) -> Self {
        Cmd::Other
    }
    fn null() -> Self {
        Cmd::Other
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Cmd::Other)
    }
    fn seq<A: serde::de::SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        let List(v) = List::<Scalar<'de>>::seq(seq)?;
        Ok(Cmd::Argv(v.unwrap_or_default()))
    }
}

/// A Codex call's arguments (the JSON in `function_call.arguments`) or a
/// `local_shell_call`'s `action`.
#[derive(Debug, Default)]
struct Args<'a> {
    command: Cmd<'a>,
    cmd: Cmd<'a>,
    input: Scalar<'a>,
    patch: Scalar<'a>,
}

impl<'de> Record<'de> for Args<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "command" => self.command = map.next_value()?,
            "cmd" => self.cmd = map.next_value()?,
            "input" => self.input = map.next_value()?,
            "patch" => self.patch = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// `metadata` of a Codex output (`exit_code`) or an OpenCode tool state
/// (`exit`).
#[derive(Debug, Default)]
struct Meta<'a> {
    exit_code: Scalar<'a>,
    exit: Scalar<'a>,
}

impl<'de> Record<'de> for Meta<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "exit_code" => self.exit_code = map.next_value()?,
            "exit" => self.exit = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// The JSON a Codex `*_output` may hold: `{"output": …, "metadata": {"exit_code": n}}`.
#[derive(Debug, Default)]
struct OutputDoc<'a> {
    /// Whether the output was a JSON object at all.
    object: bool,
    output: Scalar<'a>,
    metadata: Meta<'a>,
}

impl<'de> Record<'de> for OutputDoc<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "output" => self.output = map.next_value()?,
            "metadata" => self.metadata = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

impl<'de> Lenient<'de> for OutputDoc<'de> {
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut d: OutputDoc<'de> = record(map)?;
        d.object = true;
        Ok(d)
    }
}
lenient_deserialize!(OutputDoc);

/// A Codex response item (a `response_item`'s `payload`, or a bare item
/// line), and a `session_meta` / `turn_context` payload's `cwd`.
#[derive(Debug, Default)]
struct Item<'a> {
    kind: Scalar<'a>,
    role: Scalar<'a>,
    content: Content<'a>,
    name: Scalar<'a>,
    arguments: Scalar<'a>,
    call_id: Scalar<'a>,
    input: Scalar<'a>,
    action: Args<'a>,
    output: StrOrValue<'a>,
    cwd: Scalar<'a>,
}

impl<'de> Record<'de> for Item<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.kind = map.next_value()?,
            "role" => self.role = map.next_value()?,
            "content" => self.content = map.next_value()?,
            "name" => self.name = map.next_value()?,
            "arguments" => self.arguments = map.next_value()?,
            "call_id" => self.call_id = map.next_value()?,
            "input" => self.input = map.next_value()?,
            "action" => self.action = map.next_value()?,
            "output" => self.output = map.next_value()?,
            "cwd" => self.cwd = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// OpenCode `info` (`role`, `path.cwd`); `path` is a [`Meta`]-like record
/// with one field.
#[derive(Debug, Default)]
struct Info<'a> {
    role: Scalar<'a>,
    path: PathInfo<'a>,
}

impl<'de> Record<'de> for Info<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "role" => self.role = map.next_value()?,
            "path" => self.path = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
struct PathInfo<'a> {
    cwd: Scalar<'a>,
}

impl<'de> Record<'de> for PathInfo<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "cwd" => self.cwd = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// An OpenCode part (`text` or `tool`).
#[derive(Debug, Default)]
struct Part<'a> {
    kind: Scalar<'a>,
    synthetic: Scalar<'a>,
    text: Scalar<'a>,
    tool: Scalar<'a>,
    state: State<'a>,
}

impl<'de> Record<'de> for Part<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.kind = map.next_value()?,
            "synthetic" => self.synthetic = map.next_value()?,
            "text" => self.text = map.next_value()?,
            "tool" => self.tool = map.next_value()?,
            "state" => self.state = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// An OpenCode tool part's `state`.
#[derive(Debug, Default)]
struct State<'a> {
    input: Input<'a>,
    status: Scalar<'a>,
    metadata: Meta<'a>,
    output: Scalar<'a>,
    error: Scalar<'a>,
}

impl<'de> Record<'de> for State<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "input" => self.input = map.next_value()?,
            "status" => self.status = map.next_value()?,
            "metadata" => self.metadata = map.next_value()?,
            "output" => self.output = map.next_value()?,
            "error" => self.error = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// One transcript line of any of the three hosts: the fields the trail
/// reads, typed (see [`parse_line`]).
#[derive(Debug, Default)]
pub struct Line<'a> {
    /// `type`, `cwd` and a bare Codex item's fields.
    item: Item<'a>,
    subtype: Scalar<'a>,
    is_meta: Scalar<'a>,
    is_compact_summary: Scalar<'a>,
    message: Message<'a>,
    has_message: bool,
    payload: Item<'a>,
    has_payload: bool,
    info: Info<'a>,
    has_info: bool,
    parts: List<Part<'a>>,
    has_parts: bool,
    /// Claude Code `uuid` and `promptId` (the Guardian's view, [`Line::claude_view`]).
    uuid: Scalar<'a>,
    prompt_id: Scalar<'a>,
}

impl<'de> Record<'de> for Line<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "subtype" => self.subtype = map.next_value()?,
            "isMeta" => self.is_meta = map.next_value()?,
            "isCompactSummary" => self.is_compact_summary = map.next_value()?,
            "message" => {
                self.has_message = true;
                self.message = map.next_value()?;
            }
            "payload" => {
                self.has_payload = true;
                self.payload = map.next_value()?;
            }
            "info" => {
                self.has_info = true;
                self.info = map.next_value()?;
            }
            "parts" => {
                self.has_parts = true;
                self.parts = map.next_value()?;
            }
            "uuid" => self.uuid = map.next_value()?,
            "promptId" => self.prompt_id = map.next_value()?,
            _ => self.item.field(key, map)?,
        }
        Ok(())
    }
}

record_types!(
    Block, Input, Message, Args, Meta, Item, Info, PathInfo, Part, State, Line
);
lenient_deserialize!(Content, ResultContent, Cmd);

/// Reads one transcript line (trimmed JSON text). Fails only when the line
/// is not JSON.
pub fn parse_line(line: &str) -> Result<Line<'_>, serde_json::Error> {
    serde_json::from_str(line)
}

impl Line<'_> {
    /// Guesses the host from the line.
    pub fn host(&self) -> Option<HostKind> {
        if self.has_info && self.has_parts {
            return Some(HostKind::OpenCode);
        }
        match self.item.kind.as_str() {
            Some("response_item" | "session_meta" | "turn_context" | "event_msg" | "compacted") => {
                Some(HostKind::Codex)
            }
            Some("user" | "assistant") if self.has_message => Some(HostKind::ClaudeCode),
            Some("message" | "function_call" | "function_call_output") => Some(HostKind::Codex),
            _ => None,
        }
    }

    /// Hands the events of the line, read as `host` wrote it, to `f` in
    /// transcript order.
    pub fn events(&self, host: HostKind, f: &mut impl FnMut(Event<'_>)) {
        match host {
            HostKind::ClaudeCode => self.claude(f),
            HostKind::Codex => self.codex(f),
            HostKind::OpenCode => self.opencode(f),
        }
    }
}

/// A Claude Code line's `message.content`, as the Guardian's adapter
/// reads it ([`Line::claude_content`]).
#[derive(Debug, Clone, Copy)]
pub enum ClaudeContent<'l> {
    /// Missing, or neither a string nor an array.
    None,
    /// A string.
    Text(&'l str),
    /// An array of blocks (an element that is not an object is a block
    /// with no member).
    Blocks(&'l [Block<'l>]),
}

/// The members of a line the Guardian's Claude Code adapter (mnemo-hooks)
/// reads, from the same parse as the trail's events, so that a hook reads
/// and parses each line once for both. Each reads as a
/// `serde_json::Value` `get` / `as_str` / `as_bool` chain does: a member
/// of another shape is missing.
impl<'a> Line<'a> {
    /// `type`.
    pub fn kind(&self) -> Option<&str> {
        self.item.kind.as_str()
    }
    /// `subtype`.
    pub fn subtype(&self) -> Option<&str> {
        self.subtype.as_str()
    }
    /// `uuid`.
    pub fn uuid(&self) -> Option<&str> {
        self.uuid.as_str()
    }
    /// `promptId`.
    pub fn prompt_id(&self) -> Option<&str> {
        self.prompt_id.as_str()
    }
    /// `isMeta`.
    pub fn is_meta(&self) -> Option<bool> {
        self.is_meta.as_bool()
    }
    /// `isCompactSummary`.
    pub fn is_compact_summary(&self) -> Option<bool> {
        self.is_compact_summary.as_bool()
    }
    /// `message.content`.
    pub fn claude_content(&self) -> ClaudeContent<'_> {
        match &self.message.content {
            Content::None => ClaudeContent::None,
            Content::Text(t) => ClaudeContent::Text(t),
            Content::Blocks(b) => ClaudeContent::Blocks(b),
        }
    }
}

impl Block<'_> {
    /// `type`.
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_str()
    }
    /// `id`.
    pub fn id(&self) -> Option<&str> {
        self.id.as_str()
    }
    /// `name`.
    pub fn name(&self) -> Option<&str> {
        self.name.as_str()
    }
    /// `tool_use_id`.
    pub fn tool_use_id(&self) -> Option<&str> {
        self.tool_use_id.as_str()
    }
    /// `text`.
    pub fn text(&self) -> Option<&str> {
        self.text.as_str()
    }
    /// `input.url`.
    pub fn input_url(&self) -> Option<&str> {
        self.input.url.as_str()
    }
}

/// Text that the host wrote into a user line, not the user.
fn host_text(t: &str) -> bool {
    let t = t.trim_start();
    t.starts_with("<command-name>")
        || t.starts_with("<command-message>")
        || t.starts_with("<local-command-stdout>")
        || t.starts_with("<local-command-stderr>")
        || t.starts_with("Caveat: The messages below")
        || t.starts_with("[Request interrupted")
        || t.starts_with("<system-reminder>")
        || t.starts_with("<environment_context>")
        || t.starts_with("<user_instructions>")
        || t.starts_with("# AGENTS.md")
        || t.starts_with("<INSTRUCTIONS>")
}

/// Exit status and first meaningful line of a result's content: a string
/// (summarised when read), or its blocks' texts, one a line.
fn result_of(c: &ResultContent<'_>) -> (Option<i64>, String) {
    match c {
        ResultContent::Summary { exit, first_line } => (*exit, first_line.clone()),
        ResultContent::Text(t) => (exit_in_text(t), first_meaningful_line(t)),
        ResultContent::Blocks(items) => {
            let mut out = String::new();
            for t in items.iter().filter_map(|b| b.text.as_str()) {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(t);
            }
            (exit_in_text(&out), first_meaningful_line(&out))
        }
        ResultContent::None => (None, String::new()),
    }
}

/// The first line of an output that says something (at most 200 bytes).
pub fn first_meaningful_line(text: &str) -> String {
    for l in text.lines() {
        let t = l.trim();
        if t.is_empty()
            || t.starts_with("Exit code")
            || t.starts_with("Wall time")
            || t.starts_with("Chunk ID")
            || t.starts_with("Process exited")
            || t.starts_with("Original token count")
            || t == "Output:"
        {
            continue;
        }
        return cut(t, 200);
    }
    String::new()
}

/// `text` cut to at most `max` bytes on a char boundary, with `…` when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// `Exit code N` (Claude Code, Codex `shell_command`) or `Process exited with
/// code N` (Codex `exec_command`) on a line of its own near the top.
fn exit_in_text(text: &str) -> Option<i64> {
    for l in text.lines().take(6) {
        let t = l.trim();
        for p in ["Exit code: ", "Exit code ", "Process exited with code "] {
            if let Some(rest) = t.strip_prefix(p) {
                let end = rest
                    .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                    .unwrap_or(rest.len());
                if let Ok(n) = rest[..end].parse() {
                    return Some(n);
                }
            }
        }
    }
    None
}

fn file_call<'a>(name: &str, input: &'a Input<'_>) -> Call<'a> {
    let path = input
        .file_path
        .as_str()
        .or(input.notebook_path.as_str())
        .or(input.path.as_str());
    let action = match name {
        "Read" => FileAction::Read,
        "Write" => FileAction::Written,
        "Edit" | "MultiEdit" | "NotebookEdit" => FileAction::Edited,
        _ => return Call::Other,
    };
    match path {
        Some(p) if !p.is_empty() => Call::Files(vec![(Cow::Borrowed(p), action)]),
        _ => Call::Other,
    }
}

/// The command a Codex shell call runs: `["bash", "-lc", X]` is X.
fn codex_command<'a>(args: &'a Args<'_>) -> Option<Cow<'a, str>> {
    let c = match &args.command {
        Cmd::Missing => &args.cmd,
        c => c,
    };
    match c {
        Cmd::Str(t) => Some(Cow::Borrowed(t)),
        Cmd::Argv(parts) => {
            let parts: Vec<&str> = parts.iter().filter_map(Scalar::as_str).collect();
            match parts.as_slice() {
                [sh, flag, script] if sh.ends_with("sh") && flag.starts_with('-') => {
                    Some(Cow::Borrowed(*script))
                }
                _ => Some(Cow::Owned(parts.join(" "))),
            }
        }
        Cmd::Missing | Cmd::Other => None,
    }
}

/// Files of an `apply_patch` body.
fn patch_files(body: &str) -> Vec<(Cow<'_, str>, FileAction)> {
    let mut files = Vec::new();
    for l in body.lines() {
        let l = l.trim_end();
        let (p, a) = if let Some(p) = l.strip_prefix("*** Update File: ") {
            (p, FileAction::Edited)
        } else if let Some(p) = l.strip_prefix("*** Add File: ") {
            (p, FileAction::Written)
        } else if let Some(p) = l.strip_prefix("*** Delete File: ") {
            (p, FileAction::Deleted)
        } else if let Some(p) = l.strip_prefix("*** Move to: ") {
            (p, FileAction::Written)
        } else {
            continue;
        };
        files.push((Cow::Borrowed(p.trim()), a));
    }
    files
}

/// A shell command that only shows a file (`cat f`, `sed -n '1,80p' f`, …):
/// the file it reads.
pub fn read_only_file(cmd: &str) -> Option<&str> {
    let cmd = cmd.trim();
    if cmd.contains(['|', ';', '&', '>', '<', '`', '$', '\n']) {
        return None;
    }
    let mut words = cmd.split_whitespace();
    let first = words.next()?;
    if !matches!(
        first,
        "cat" | "sed" | "head" | "tail" | "nl" | "less" | "bat"
    ) {
        return None;
    }
    let mut rest = words.peekable();
    if first == "sed" && rest.peek().is_none_or(|w| *w != "-n") {
        return None;
    }
    let last = rest.last()?;
    if last.starts_with('-') || last.starts_with('\'') || last.starts_with('"') {
        return None;
    }
    Some(last)
}

fn shell_call(cmd: Option<Cow<'_, str>>) -> Call<'_> {
    let Some(c) = cmd else {
        return Call::Other;
    };
    match c {
        Cow::Borrowed(b) => match read_only_file(b) {
            Some(f) => Call::Files(vec![(Cow::Borrowed(f), FileAction::Read)]),
            None => Call::Command(Cow::Borrowed(b)),
        },
        Cow::Owned(o) => match read_only_file(&o) {
            Some(f) => Call::Files(vec![(Cow::Owned(f.to_string()), FileAction::Read)]),
            None => Call::Command(Cow::Owned(o)),
        },
    }
}

impl Line<'_> {
    fn claude(&self, f: &mut impl FnMut(Event<'_>)) {
        let kind = self.item.kind.as_str().unwrap_or("");
        if kind == "system" && self.subtype.as_str() == Some("compact_boundary") {
            f(Event::Boundary);
            return;
        }
        if kind != "user" && kind != "assistant" {
            return;
        }
        if let Some(cwd) = self.item.cwd.as_str() {
            f(Event::Cwd(cwd));
        }
        let meta = self.is_meta.as_bool().unwrap_or(false)
            || self.is_compact_summary.as_bool().unwrap_or(false);
        let say = |t: &str, f: &mut dyn FnMut(Event<'_>)| {
            if kind == "user" {
                if !meta && !host_text(t) {
                    f(Event::UserText(t));
                }
            } else {
                f(Event::AssistantText(t));
            }
        };
        match &self.message.content {
            Content::Text(t) => say(t, f),
            Content::Blocks(blocks) => {
                for b in blocks {
                    match b.kind.as_str() {
                        Some("text") => {
                            if let Some(t) = b.text.as_str() {
                                say(t, f);
                            }
                        }
                        Some("tool_use") => {
                            let id = b.id.as_str().unwrap_or("");
                            let name = b.name.as_str().unwrap_or("");
                            let call = if name == "Bash" {
                                match b.input.command.as_str() {
                                    Some(c) => Call::Command(Cow::Borrowed(c)),
                                    None => Call::Other,
                                }
                            } else {
                                file_call(name, &b.input)
                            };
                            f(Event::Call { id, call });
                        }
                        Some("tool_result") => {
                            let (exit, first_line) = result_of(&b.content);
                            f(Event::Result {
                                id: b.tool_use_id.as_str().unwrap_or(""),
                                exit,
                                is_error: b.is_error.as_bool().unwrap_or(false),
                                first_line,
                            });
                        }
                        _ => {}
                    }
                }
            }
            Content::None => {}
        }
    }

    fn codex(&self, f: &mut impl FnMut(Event<'_>)) {
        let item = match self.item.kind.as_str() {
            Some("response_item") if self.has_payload => &self.payload,
            Some("response_item") | Some("event_msg") => return,
            Some("compacted") => {
                f(Event::Boundary);
                return;
            }
            Some("session_meta" | "turn_context") => {
                if let Some(cwd) = self.payload.cwd.as_str() {
                    f(Event::Cwd(cwd));
                }
                return;
            }
            _ => &self.item,
        };
        let id = item.call_id.as_str().unwrap_or("");
        match item.kind.as_str().unwrap_or("") {
            "message" => {
                let role = item.role.as_str().unwrap_or("");
                if let Content::Blocks(blocks) = &item.content {
                    for t in blocks.iter().filter_map(|b| b.text.as_str()) {
                        match role {
                            "user" if !host_text(t) => f(Event::UserText(t)),
                            "assistant" => f(Event::AssistantText(t)),
                            _ => {}
                        }
                    }
                }
            }
            "function_call" => {
                let args: Args<'_> = item
                    .arguments
                    .as_str()
                    .and_then(|a| serde_json::from_str(a).ok())
                    .unwrap_or_default();
                let call = match item.name.as_str().unwrap_or("") {
                    "shell" | "shell_command" | "exec_command" | "container.exec" => {
                        shell_call(codex_command(&args))
                    }
                    "apply_patch" => Call::Files(patch_files(
                        args.input.as_str().or(args.patch.as_str()).unwrap_or(""),
                    )),
                    _ => Call::Other,
                };
                f(Event::Call { id, call });
            }
            "custom_tool_call" => {
                let call = match item.name.as_str() {
                    Some("apply_patch") => {
                        Call::Files(patch_files(item.input.as_str().unwrap_or("")))
                    }
                    _ => Call::Other,
                };
                f(Event::Call { id, call });
            }
            "local_shell_call" => {
                let call = shell_call(codex_command(&item.action));
                f(Event::Call { id, call });
            }
            t if t.ends_with("_output") => {
                let raw: Cow<'_, str> = match &item.output {
                    StrOrValue::Str(t) => Cow::Borrowed(t),
                    StrOrValue::Value(o) => Cow::Owned(o.to_string()),
                    StrOrValue::Missing => Cow::Borrowed(""),
                };
                // `{"output": …, "metadata": {"exit_code": n}}` or plain text.
                let (text, exit) = match serde_json::from_str::<OutputDoc<'_>>(&raw) {
                    Ok(d) if d.object => {
                        let exit = d.metadata.exit_code.as_i64();
                        (first_meaningful_line(d.output.as_str().unwrap_or("")), exit)
                    }
                    _ => (first_meaningful_line(&raw), exit_in_text(&raw)),
                };
                f(Event::Result {
                    id,
                    exit,
                    is_error: exit.is_some_and(|e| e != 0),
                    first_line: text,
                });
            }
            _ => {}
        }
    }

    fn opencode(&self, f: &mut impl FnMut(Event<'_>)) {
        let role = self.info.role.as_str().unwrap_or("");
        if let Some(cwd) = self.info.path.cwd.as_str() {
            f(Event::Cwd(cwd));
        }
        let Some(parts) = &self.parts.0 else {
            return;
        };
        for p in parts {
            match p.kind.as_str() {
                Some("text") => {
                    if p.synthetic.as_bool().unwrap_or(false) {
                        continue;
                    }
                    let Some(t) = p.text.as_str() else { continue };
                    match role {
                        "user" if !host_text(t) => f(Event::UserText(t)),
                        "assistant" => f(Event::AssistantText(t)),
                        _ => {}
                    }
                }
                Some("tool") => {
                    let tool = p.tool.as_str().unwrap_or("");
                    let st = &p.state;
                    let path = st
                        .input
                        .file_path_camel
                        .as_str()
                        .or(st.input.file_path.as_str())
                        .map(Cow::Borrowed);
                    let call = match (tool, path) {
                        ("bash", _) => match st.input.command.as_str() {
                            Some(c) => Call::Command(Cow::Borrowed(c)),
                            None => Call::Other,
                        },
                        ("read", Some(p)) => Call::Files(vec![(p, FileAction::Read)]),
                        ("write", Some(p)) => Call::Files(vec![(p, FileAction::Written)]),
                        ("edit" | "patch", Some(p)) => Call::Files(vec![(p, FileAction::Edited)]),
                        _ => Call::Other,
                    };
                    let status = st.status.as_str().unwrap_or("");
                    let exit = st.metadata.exit.as_i64();
                    let output = st.output.as_str().or(st.error.as_str()).unwrap_or("");
                    let is_error = status == "error" || exit.is_some_and(|e| e != 0);
                    let exit = match (exit, &call) {
                        (None, Call::Command(_)) if status == "error" => Some(1),
                        (e, _) => e,
                    };
                    f(Event::CallResult {
                        call,
                        exit,
                        is_error,
                        first_line: first_meaningful_line(output),
                    });
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_of(host: HostKind, line: &str) -> Vec<String> {
        let mut out = Vec::new();
        match parse_line(line) {
            Ok(l) => l.events(host, &mut |e| out.push(format!("{e:?}"))),
            Err(e) => out.push(format!("error: {e}")),
        }
        out
    }

    #[test]
    fn unescaped_texts_are_borrowed_from_the_line() {
        let line = r#"{"type":"user","cwd":"/r","message":{"content":[{"type":"text","text":"Never push to main."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cargo test -p x"}}]}}"#;
        let l = parse_line(line).unwrap_or_default();
        let range = line.as_bytes().as_ptr_range();
        let mut seen = 0;
        l.events(HostKind::ClaudeCode, &mut |e| {
            let s: &str = match &e {
                Event::Cwd(s) | Event::UserText(s) => s,
                Event::Call {
                    call: Call::Command(c),
                    ..
                } => c,
                other => panic!("unexpected {other:?}"),
            };
            assert!(range.contains(&s.as_ptr()), "{s} was copied");
            seen += 1;
        });
        assert_eq!(seen, 3);
    }

    #[test]
    fn each_host_gives_its_events() {
        let claude = events_of(
            HostKind::ClaudeCode,
            r#"{"type":"user","isMeta":false,"message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"Exit code 2"},{"type":"text","text":"error: boom"}]}]}}"#,
        );
        assert_eq!(
            claude,
            [r#"Result { id: "t1", exit: Some(2), is_error: true, first_line: "error: boom" }"#]
        );
        let codex = events_of(
            HostKind::Codex,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","call_id":"c1","arguments":"{\"command\":[\"bash\",\"-lc\",\"sed -n 1,80p src/lib.rs\"]}"}}"#,
        );
        assert_eq!(
            codex,
            [r#"Call { id: "c1", call: Files([("src/lib.rs", Read)]) }"#]
        );
        let out = events_of(
            HostKind::Codex,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"\\nfailed: 3 tests\\n\",\"metadata\":{\"exit_code\":101}}"}}"#,
        );
        assert_eq!(
            out,
            [
                r#"Result { id: "c1", exit: Some(101), is_error: true, first_line: "failed: 3 tests" }"#
            ]
        );
        // An output that is not a string is read as its JSON text.
        let out = events_of(
            HostKind::Codex,
            r#"{"type":"function_call_output","call_id":"c2","output":["Exit code 3"]}"#,
        );
        assert_eq!(
            out,
            [
                r#"Result { id: "c2", exit: None, is_error: false, first_line: "[\"Exit code 3\"]" }"#
            ]
        );
        let opencode = events_of(
            HostKind::OpenCode,
            r#"{"info":{"role":"assistant","path":{"cwd":"/r"}},"parts":[{"type":"tool","tool":"bash","state":{"status":"error","input":{"command":"npm test"},"error":"boom"}},{"type":"text","text":"We chose vitest.","synthetic":false}]}"#,
        );
        assert_eq!(
            opencode,
            [
                r#"Cwd("/r")"#,
                r#"CallResult { call: Command("npm test"), exit: Some(1), is_error: true, first_line: "boom" }"#,
                r#"AssistantText("We chose vitest.")"#,
            ]
        );
    }

    #[test]
    fn fields_of_the_wrong_shape_read_as_missing() {
        for line in [
            r#"{"type":"user","message":7}"#,
            r#"{"type":"user","message":{"content":{"a":1}}}"#,
            r#"{"type":"user","message":{"content":[null,7,"s",[1]]}}"#,
            r#"{"type":["user"],"message":{"content":"hi there you"}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":"ls"}]}}"#,
        ] {
            let l = parse_line(line);
            assert!(l.is_ok(), "{line}");
            let mut n = 0;
            if let Ok(l) = l {
                l.events(HostKind::ClaudeCode, &mut |e| {
                    assert!(
                        matches!(
                            e,
                            Event::Call {
                                call: Call::Other,
                                ..
                            }
                        ),
                        "{e:?}"
                    );
                    n += 1;
                });
            }
            assert!(n <= 1, "{line}");
        }
        // `command` holds a number: Codex does not fall back to `cmd`.
        let e = events_of(
            HostKind::Codex,
            r#"{"type":"function_call","name":"shell","call_id":"a","arguments":"{\"command\":5,\"cmd\":\"ls\"}"}"#,
        );
        assert_eq!(e, [r#"Call { id: "a", call: Other }"#]);
    }

    #[test]
    fn what_the_trail_skips_is_never_built() {
        // Nesting far deeper than a `Value` may hold, and a number out of
        // f64's range, in fields the trail does not read: the line is read
        // (skipping is iterative: no stack to overflow).
        let deep = format!(
            r#"{{"type":"user","deep":{}{},"n":1e400,"message":{{"content":"Never go deep."}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(
            events_of(HostKind::ClaudeCode, &deep),
            [r#"UserText("Never go deep.")"#]
        );
        assert!(parse_line("{\"type\":\"user\",\"message\":").is_err());
    }

    #[test]
    fn hosts_are_detected_from_the_keys_present() {
        let host = |s: &str| parse_line(s).ok().and_then(|l| l.host());
        assert_eq!(
            host(r#"{"info":null,"parts":null}"#),
            Some(HostKind::OpenCode)
        );
        assert_eq!(
            host(r#"{"type":"user","message":null}"#),
            Some(HostKind::ClaudeCode)
        );
        assert_eq!(host(r#"{"type":"user"}"#), None);
        assert_eq!(host(r#"{"type":"compacted"}"#), Some(HostKind::Codex));
        assert_eq!(
            host(r#"{"type":"function_call_output"}"#),
            Some(HostKind::Codex)
        );
        assert_eq!(host("[1,2]"), None);
    }
}
