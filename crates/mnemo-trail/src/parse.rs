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

use serde_json::Value;

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

/// A tool call, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// A shell command.
    Command(String),
    /// File operations.
    Files(Vec<(String, FileAction)>),
    /// Anything else (not part of the trail).
    Other,
}

/// One event of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The user's own words.
    UserText(String),
    /// The assistant's prose.
    AssistantText(String),
    /// A tool call (`id` links it to its result).
    Call {
        /// Call id.
        id: String,
        /// What it does.
        call: Call,
    },
    /// A tool result.
    Result {
        /// Call id.
        id: String,
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
        call: Call,
        /// Exit status.
        exit: Option<i64>,
        /// Marked as an error.
        is_error: bool,
        /// First meaningful line of the output.
        first_line: String,
    },
    /// The working directory of the session.
    Cwd(String),
    /// A compaction happened here.
    Boundary,
}

/// Guesses the host from one parsed line.
pub fn detect(v: &Value) -> Option<HostKind> {
    if v.get("info").is_some() && v.get("parts").is_some() {
        return Some(HostKind::OpenCode);
    }
    match v.get("type").and_then(Value::as_str) {
        Some("response_item" | "session_meta" | "turn_context" | "event_msg" | "compacted") => {
            Some(HostKind::Codex)
        }
        Some("user" | "assistant") if v.get("message").is_some() => Some(HostKind::ClaudeCode),
        Some("message" | "function_call" | "function_call_output") => Some(HostKind::Codex),
        _ => None,
    }
}

/// The events of one parsed line.
pub fn events(host: HostKind, v: &Value, out: &mut Vec<Event>) {
    match host {
        HostKind::ClaudeCode => claude(v, out),
        HostKind::Codex => codex(v, out),
        HostKind::OpenCode => opencode(v, out),
    }
}

fn s(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
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

/// The text of a result's content: a string, or text blocks.
fn content_text(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(items)) => {
            let mut out = String::new();
            for b in items {
                if let Some(t) = s(b.get("text")) {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(t);
                }
            }
            out
        }
        _ => String::new(),
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
                let digits: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '-')
                    .collect();
                if let Ok(n) = digits.parse() {
                    return Some(n);
                }
            }
        }
    }
    None
}

fn file_call(name: &str, input: Option<&Value>) -> Call {
    let path = input
        .and_then(|i| {
            s(i.get("file_path"))
                .or(s(i.get("notebook_path")))
                .or(s(i.get("path")))
        })
        .map(str::to_string);
    let action = match name {
        "Read" => FileAction::Read,
        "Write" => FileAction::Written,
        "Edit" | "MultiEdit" | "NotebookEdit" => FileAction::Edited,
        _ => return Call::Other,
    };
    match path {
        Some(p) if !p.is_empty() => Call::Files(vec![(p, action)]),
        _ => Call::Other,
    }
}

fn claude(v: &Value, out: &mut Vec<Event>) {
    let kind = s(v.get("type")).unwrap_or("");
    if kind == "system" && s(v.get("subtype")) == Some("compact_boundary") {
        out.push(Event::Boundary);
        return;
    }
    if kind != "user" && kind != "assistant" {
        return;
    }
    if let Some(cwd) = s(v.get("cwd")) {
        out.push(Event::Cwd(cwd.to_string()));
    }
    let meta = v.get("isMeta").and_then(Value::as_bool).unwrap_or(false)
        || v.get("isCompactSummary")
            .and_then(Value::as_bool)
            .unwrap_or(false);
    let content = v.get("message").and_then(|m| m.get("content"));
    let text_event = |t: &str| {
        if kind == "user" {
            if meta || host_text(t) {
                None
            } else {
                Some(Event::UserText(t.to_string()))
            }
        } else {
            Some(Event::AssistantText(t.to_string()))
        }
    };
    match content {
        Some(Value::String(t)) => out.extend(text_event(t)),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                match s(b.get("type")) {
                    Some("text") => {
                        if let Some(t) = s(b.get("text")) {
                            out.extend(text_event(t));
                        }
                    }
                    Some("tool_use") => {
                        let id = s(b.get("id")).unwrap_or("").to_string();
                        let name = s(b.get("name")).unwrap_or("");
                        let input = b.get("input");
                        let call = if name == "Bash" {
                            match input.and_then(|i| s(i.get("command"))) {
                                Some(c) => Call::Command(c.to_string()),
                                None => Call::Other,
                            }
                        } else {
                            file_call(name, input)
                        };
                        out.push(Event::Call { id, call });
                    }
                    Some("tool_result") => {
                        let id = s(b.get("tool_use_id")).unwrap_or("").to_string();
                        let is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                        let text = content_text(b.get("content"));
                        let exit = exit_in_text(&text);
                        out.push(Event::Result {
                            id,
                            exit,
                            is_error,
                            first_line: first_meaningful_line(&text),
                        });
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// The command a Codex shell call runs: `["bash", "-lc", X]` is X.
fn codex_command(args: &Value) -> Option<String> {
    let c = args.get("command").or(args.get("cmd"))?;
    match c {
        Value::String(t) => Some(t.clone()),
        Value::Array(parts) => {
            let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            match parts.as_slice() {
                [sh, flag, script] if sh.ends_with("sh") && flag.starts_with('-') => {
                    Some((*script).to_string())
                }
                _ => Some(parts.join(" ")),
            }
        }
        _ => None,
    }
}

/// Files of an `apply_patch` body.
fn patch_files(body: &str) -> Vec<(String, FileAction)> {
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
        files.push((p.trim().to_string(), a));
    }
    files
}

/// A shell command that only shows a file (`cat f`, `sed -n '1,80p' f`, …):
/// the file it reads.
pub fn read_only_file(cmd: &str) -> Option<String> {
    let cmd = cmd.trim();
    if cmd.contains(['|', ';', '&', '>', '<', '`', '$', '\n']) {
        return None;
    }
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let (first, rest) = words.split_first()?;
    if !matches!(
        *first,
        "cat" | "sed" | "head" | "tail" | "nl" | "less" | "bat"
    ) {
        return None;
    }
    if *first == "sed" && rest.first().is_none_or(|w| *w != "-n") {
        return None;
    }
    let last = *rest.last()?;
    if last.starts_with('-') || last.starts_with('\'') || last.starts_with('"') {
        return None;
    }
    Some(last.to_string())
}

fn codex(v: &Value, out: &mut Vec<Event>) {
    let item = match s(v.get("type")) {
        Some("response_item") => match v.get("payload") {
            Some(p) => p,
            None => return,
        },
        Some("compacted") => {
            out.push(Event::Boundary);
            return;
        }
        Some("session_meta" | "turn_context") => {
            if let Some(cwd) = v.get("payload").and_then(|p| s(p.get("cwd"))) {
                out.push(Event::Cwd(cwd.to_string()));
            }
            return;
        }
        Some("event_msg") => return,
        _ => v,
    };
    let id = || s(item.get("call_id")).unwrap_or("").to_string();
    match s(item.get("type")).unwrap_or("") {
        "message" => {
            let role = s(item.get("role")).unwrap_or("");
            if let Some(blocks) = item.get("content").and_then(Value::as_array) {
                for b in blocks {
                    let Some(t) = s(b.get("text")) else { continue };
                    match role {
                        "user" if !host_text(t) => out.push(Event::UserText(t.to_string())),
                        "assistant" => out.push(Event::AssistantText(t.to_string())),
                        _ => {}
                    }
                }
            }
        }
        "function_call" => {
            let name = s(item.get("name")).unwrap_or("");
            let args: Value = s(item.get("arguments"))
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or(Value::Null);
            let call = match name {
                "shell" | "shell_command" | "exec_command" | "container.exec" => {
                    shell_call(codex_command(&args))
                }
                "apply_patch" => Call::Files(patch_files(
                    s(args.get("input")).or(s(args.get("patch"))).unwrap_or(""),
                )),
                _ => Call::Other,
            };
            out.push(Event::Call { id: id(), call });
        }
        "custom_tool_call" => {
            let call = match s(item.get("name")) {
                Some("apply_patch") => Call::Files(patch_files(s(item.get("input")).unwrap_or(""))),
                _ => Call::Other,
            };
            out.push(Event::Call { id: id(), call });
        }
        "local_shell_call" => {
            let call = match item.get("action") {
                Some(a) => shell_call(codex_command(a)),
                None => Call::Other,
            };
            out.push(Event::Call { id: id(), call });
        }
        t if t.ends_with("_output") => {
            let raw = match item.get("output") {
                Some(Value::String(t)) => t.clone(),
                Some(o) => o.to_string(),
                None => String::new(),
            };
            // `{"output": …, "metadata": {"exit_code": n}}` or plain text.
            let (text, exit) = match serde_json::from_str::<Value>(&raw) {
                Ok(Value::Object(m)) => {
                    let exit = m
                        .get("metadata")
                        .and_then(|md| md.get("exit_code"))
                        .and_then(Value::as_i64);
                    let text = s(m.get("output")).unwrap_or("").to_string();
                    (text, exit)
                }
                _ => {
                    let exit = exit_in_text(&raw);
                    (raw, exit)
                }
            };
            out.push(Event::Result {
                id: id(),
                exit,
                is_error: exit.is_some_and(|e| e != 0),
                first_line: first_meaningful_line(&text),
            });
        }
        _ => {}
    }
}

fn shell_call(cmd: Option<String>) -> Call {
    match cmd {
        Some(c) => match read_only_file(&c) {
            Some(f) => Call::Files(vec![(f, FileAction::Read)]),
            None => Call::Command(c),
        },
        None => Call::Other,
    }
}

fn opencode(v: &Value, out: &mut Vec<Event>) {
    let role = v.get("info").and_then(|i| s(i.get("role"))).unwrap_or("");
    if let Some(cwd) = v
        .get("info")
        .and_then(|i| i.get("path"))
        .and_then(|p| s(p.get("cwd")))
    {
        out.push(Event::Cwd(cwd.to_string()));
    }
    let Some(parts) = v.get("parts").and_then(Value::as_array) else {
        return;
    };
    for p in parts {
        match s(p.get("type")) {
            Some("text") => {
                if p.get("synthetic").and_then(Value::as_bool).unwrap_or(false) {
                    continue;
                }
                let Some(t) = s(p.get("text")) else { continue };
                match role {
                    "user" if !host_text(t) => out.push(Event::UserText(t.to_string())),
                    "assistant" => out.push(Event::AssistantText(t.to_string())),
                    _ => {}
                }
            }
            Some("tool") => {
                let tool = s(p.get("tool")).unwrap_or("");
                let state = p.get("state");
                let input = state.and_then(|st| st.get("input"));
                let path = input
                    .and_then(|i| s(i.get("filePath")).or(s(i.get("file_path"))))
                    .map(str::to_string);
                let call = match (tool, path) {
                    ("bash", _) => match input.and_then(|i| s(i.get("command"))) {
                        Some(c) => Call::Command(c.to_string()),
                        None => Call::Other,
                    },
                    ("read", Some(p)) => Call::Files(vec![(p, FileAction::Read)]),
                    ("write", Some(p)) => Call::Files(vec![(p, FileAction::Written)]),
                    ("edit" | "patch", Some(p)) => Call::Files(vec![(p, FileAction::Edited)]),
                    _ => Call::Other,
                };
                let status = state.and_then(|st| s(st.get("status"))).unwrap_or("");
                let exit = state
                    .and_then(|st| st.get("metadata"))
                    .and_then(|m| m.get("exit"))
                    .and_then(Value::as_i64);
                let output = state
                    .and_then(|st| s(st.get("output")).or(s(st.get("error"))))
                    .unwrap_or("");
                let is_error = status == "error" || exit.is_some_and(|e| e != 0);
                let exit = match (exit, &call) {
                    (None, Call::Command(_)) if status == "error" => Some(1),
                    (e, _) => e,
                };
                out.push(Event::CallResult {
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
