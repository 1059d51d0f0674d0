//! `mnemo hook install codex`: Codex CLI's hook configuration, merged (pure).
//!
//! Codex reads hooks from `config.toml` (`$CODEX_HOME/config.toml` for the
//! user, `<project>/.codex/config.toml` for a trusted project) under
//! `[hooks]`: `PreCompact = [{ matcher, hooks = [{ type = "command",
//! command }] }]` (an array of tables or an inline array). It runs a hook
//! only when it is trusted: `[hooks.state."<key>"] trusted_hash =
//! "sha256:…"` in the **user** config (project layers cannot write hook
//! state), where `<key>` is `<config path>:<event>:<group>:<handler>`
//! (`pre_compact`, indices 0-based) and the hash is SHA-256 over the JSON,
//! keys sorted, of `{event_name, matcher, hooks: [handler]}` with the
//! handler normalised (`timeout` defaults to 600, `async` to false). An
//! untrusted hook is skipped silently, so the hash must be exactly Codex's:
//! `crates/mnemo-cli/tests/e2e_codex.rs` checks it against the real
//! binary's `hooks/list`.
//!
//! The merge edits the document in place (`toml_edit`): every byte it does
//! not own stays. mnemo's own handlers (a command holding `hook codex
//! pre-compact` / `post-compact`) are updated where they are; missing ones
//! are appended as new groups at the end of the event's list, so the keys
//! (positions) of the user's hooks never move. Running it twice changes
//! nothing the second time.

use crate::install::InstallError;
use sha2::{Digest, Sha256};
use std::path::Path;
use toml_edit::{ArrayOfTables, DocumentMut, InlineTable, Item, Table, TableLike, Value};

/// A hook event mnemo installs for Codex.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodexEvent {
    /// `PreCompact`: the Guardian decides.
    PreCompact,
    /// `PostCompact`: the compaction and its lineage are recorded.
    PostCompact,
}

impl CodexEvent {
    /// The event's key under `[hooks]`.
    pub fn toml_key(self) -> &'static str {
        match self {
            CodexEvent::PreCompact => "PreCompact",
            CodexEvent::PostCompact => "PostCompact",
        }
    }

    /// The event's label in trust keys and hashes.
    pub fn label(self) -> &'static str {
        match self {
            CodexEvent::PreCompact => "pre_compact",
            CodexEvent::PostCompact => "post_compact",
        }
    }

    /// The `mnemo hook codex …` subcommand.
    pub fn mnemo_event(self) -> &'static str {
        match self {
            CodexEvent::PreCompact => "pre-compact",
            CodexEvent::PostCompact => "post-compact",
        }
    }
}

/// One hook handler to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexHook {
    /// The event.
    pub event: CodexEvent,
    /// The matcher (`manual` / `auto` for compaction; `None`: every trigger).
    pub matcher: Option<String>,
    /// The shell command.
    pub command: String,
}

/// A handler as Codex normalises it before hashing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    /// The command.
    pub command: String,
    /// Seconds (Codex: absent → 600, at least 1).
    pub timeout: u64,
    /// `async`.
    pub is_async: bool,
    /// `statusMessage`.
    pub status_message: Option<String>,
}

/// The trust state to record for one installed handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookState {
    /// `<config path>:<event>:<group>:<handler>`.
    pub key: String,
    /// `sha256:<hex>`.
    pub trusted_hash: String,
}

/// Codex's trust hash of one handler of `event` under `matcher`.
pub fn trusted_hash(event: CodexEvent, matcher: Option<&str>, h: &Handler) -> String {
    // Keys in byte order, as serde_json writes a BTreeMap; absent options
    // are left out, as the TOML value Codex builds leaves them out.
    let mut handler = serde_json::Map::new();
    handler.insert("async".into(), serde_json::Value::Bool(h.is_async));
    handler.insert(
        "command".into(),
        serde_json::Value::String(h.command.clone()),
    );
    if let Some(m) = &h.status_message {
        handler.insert("statusMessage".into(), serde_json::Value::String(m.clone()));
    }
    handler.insert("timeout".into(), serde_json::Value::from(h.timeout.max(1)));
    handler.insert("type".into(), serde_json::Value::String("command".into()));
    let mut identity = serde_json::Map::new();
    identity.insert(
        "event_name".into(),
        serde_json::Value::String(event.label().into()),
    );
    identity.insert(
        "hooks".into(),
        serde_json::Value::Array(vec![serde_json::Value::Object(handler)]),
    );
    if let Some(m) = matcher {
        identity.insert("matcher".into(), serde_json::Value::String(m.into()));
    }
    let bytes = canonical(&serde_json::Value::Object(identity));
    let digest = Sha256::digest(bytes.as_bytes());
    let mut hex = String::with_capacity(71);
    hex.push_str("sha256:");
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

/// Compact JSON with object keys in byte order, whatever serde_json's map is.
fn canonical(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        serde_json::Value::String((*k).clone()),
                        canonical(&m[k.as_str()])
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        serde_json::Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(canonical).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// Codex's trust key of a handler in the config file at `source`.
pub fn hook_key(source: &Path, event: CodexEvent, group: usize, handler: usize) -> String {
    format!("{}:{}:{group}:{handler}", source.display(), event.label())
}

/// Whether a command is mnemo's own handler for `event`.
pub fn is_mnemo_command(command: &str, event: CodexEvent) -> bool {
    crate::install::is_mnemo_command(command, "codex", event.mnemo_event())
}

fn parse(file: &Path, text: &str) -> Result<DocumentMut, InstallError> {
    text.parse::<DocumentMut>().map_err(|e| {
        let (line, column) = match e.span() {
            Some(span) => line_col(text, span.start),
            None => (1, 1),
        };
        InstallError::Parse {
            file: file.to_path_buf(),
            format: "TOML",
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })
}

fn line_col(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count() + 1)
        .unwrap_or(1);
    (line, column)
}

fn shape(file: &Path, field: impl Into<String>, expected: &'static str) -> InstallError {
    InstallError::Shape {
        file: file.to_path_buf(),
        field: field.into(),
        expected,
    }
}

/// The `[hooks]` table of a document, created (implicit) when absent.
fn hooks_table<'d>(
    file: &Path,
    doc: &'d mut DocumentMut,
) -> Result<&'d mut dyn TableLike, InstallError> {
    if doc.get("hooks").is_none() {
        let mut t = Table::new();
        t.set_implicit(true);
        doc.insert("hooks", Item::Table(t));
    }
    doc.get_mut("hooks")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| shape(file, "hooks", "a table"))
}

/// What one handler table says, as Codex normalises it.
fn handler_of(t: &dyn TableLike) -> Option<Handler> {
    let command = t.get("command")?.as_str()?.to_string();
    let timeout = t
        .get("timeout")
        .or_else(|| t.get("timeoutSec"))
        .and_then(Item::as_integer)
        .map(|n| u64::try_from(n).unwrap_or(1))
        .unwrap_or(600);
    let is_async = t.get("async").and_then(Item::as_bool).unwrap_or(false);
    let status_message = t
        .get("statusMessage")
        .and_then(Item::as_str)
        .map(str::to_string);
    Some(Handler {
        command,
        timeout,
        is_async,
        status_message,
    })
}

/// Sets `command` in a handler table (keeping its other keys) and returns it normalised.
fn update_handler(t: &mut dyn TableLike, command: &str) -> Handler {
    if t.get("command").and_then(Item::as_str) != Some(command) {
        t.insert("command", toml_edit::value(command));
    }
    handler_of(t).unwrap_or(Handler {
        command: command.to_string(),
        timeout: 600,
        is_async: false,
        status_message: None,
    })
}

/// Finds mnemo's handler for `event` in the groups with `matcher`; updates
/// its command; returns (group, handler, normalised handler).
fn find_and_update(
    file: &Path,
    groups: &mut Item,
    field: &str,
    hook: &CodexHook,
) -> Result<Option<(usize, usize, Handler)>, InstallError> {
    let n = match groups {
        Item::ArrayOfTables(a) => a.len(),
        Item::Value(Value::Array(a)) => a.len(),
        _ => return Err(shape(file, field, "an array of matcher groups")),
    };
    for g in 0..n {
        let group: &mut dyn TableLike = match groups {
            Item::ArrayOfTables(a) => match a.get_mut(g) {
                Some(t) => t,
                None => continue,
            },
            Item::Value(Value::Array(a)) => match a.get_mut(g) {
                Some(Value::InlineTable(t)) => t,
                _ => {
                    return Err(shape(
                        file,
                        format!("{field}[{g}]"),
                        "a table (matcher group)",
                    ));
                }
            },
            _ => continue,
        };
        let matcher = group.get("matcher").and_then(Item::as_str);
        if matcher != hook.matcher.as_deref() {
            continue;
        }
        let Some(handlers) = group.get_mut("hooks") else {
            continue;
        };
        let count = match handlers {
            Item::ArrayOfTables(a) => a.len(),
            Item::Value(Value::Array(a)) => a.len(),
            _ => {
                return Err(shape(
                    file,
                    format!("{field}[{g}].hooks"),
                    "an array of handlers",
                ));
            }
        };
        for h in 0..count {
            let t: &mut dyn TableLike = match handlers {
                Item::ArrayOfTables(a) => match a.get_mut(h) {
                    Some(t) => t,
                    None => continue,
                },
                Item::Value(Value::Array(a)) => match a.get_mut(h) {
                    Some(Value::InlineTable(t)) => t,
                    _ => continue,
                },
                _ => continue,
            };
            let ours = t
                .get("command")
                .and_then(Item::as_str)
                .is_some_and(|c| is_mnemo_command(c, hook.event));
            if ours {
                return Ok(Some((g, h, update_handler(t, &hook.command))));
            }
        }
    }
    Ok(None)
}

/// Appends a new group holding `hook`; returns its index.
fn append_group(groups: &mut Item, hook: &CodexHook) -> usize {
    match groups {
        Item::Value(Value::Array(a)) => {
            let mut handler = InlineTable::new();
            handler.insert("type", "command".into());
            handler.insert("command", hook.command.as_str().into());
            let mut handlers = toml_edit::Array::new();
            handlers.push(Value::InlineTable(handler));
            let mut group = InlineTable::new();
            if let Some(m) = &hook.matcher {
                group.insert("matcher", m.as_str().into());
            }
            group.insert("hooks", Value::Array(handlers));
            a.push(Value::InlineTable(group));
            a.len() - 1
        }
        _ => {
            if !matches!(groups, Item::ArrayOfTables(_)) {
                *groups = Item::ArrayOfTables(ArrayOfTables::new());
            }
            let mut handler = Table::new();
            handler.insert("type", toml_edit::value("command"));
            handler.insert("command", toml_edit::value(hook.command.as_str()));
            let mut handlers = ArrayOfTables::new();
            handlers.push(handler);
            let mut group = Table::new();
            if let Some(m) = &hook.matcher {
                group.insert("matcher", toml_edit::value(m.as_str()));
            }
            group.insert("hooks", Item::ArrayOfTables(handlers));
            match groups {
                Item::ArrayOfTables(a) => {
                    a.push(group);
                    a.len() - 1
                }
                _ => 0,
            }
        }
    }
}

/// Merges mnemo's `hooks` into the Codex config at `file` (its text
/// `existing`, `None` when the file does not exist). Returns the new text
/// and the trust state of each installed handler (keys name `file`, which
/// should be absolute, as Codex prints it).
pub fn merge_codex_hooks(
    file: &Path,
    existing: Option<&str>,
    hooks: &[CodexHook],
) -> Result<(String, Vec<HookState>), InstallError> {
    let mut doc = parse(file, existing.unwrap_or(""))?;
    let mut states = Vec::new();
    {
        let table = hooks_table(file, &mut doc)?;
        for hook in hooks {
            let key = hook.event.toml_key();
            let field = format!("hooks.{key}");
            if table.get(key).is_none() {
                table.insert(key, Item::ArrayOfTables(ArrayOfTables::new()));
            }
            let groups = table
                .get_mut(key)
                .ok_or_else(|| shape(file, field.clone(), "an array of matcher groups"))?;
            let (g, h, handler) = match find_and_update(file, groups, &field, hook)? {
                Some(found) => found,
                None => {
                    if !matches!(
                        groups,
                        Item::ArrayOfTables(_) | Item::Value(Value::Array(_))
                    ) {
                        return Err(shape(file, field, "an array of matcher groups"));
                    }
                    let g = append_group(groups, hook);
                    (
                        g,
                        0,
                        Handler {
                            command: hook.command.clone(),
                            timeout: 600,
                            is_async: false,
                            status_message: None,
                        },
                    )
                }
            };
            states.push(HookState {
                key: hook_key(file, hook.event, g, h),
                trusted_hash: trusted_hash(hook.event, hook.matcher.as_deref(), &handler),
            });
        }
    }
    Ok((doc.to_string(), states))
}

/// Records `states` as `[hooks.state."<key>"] trusted_hash = …` in the
/// user config `file` (text `existing`), keeping every other key (an
/// `enabled = false` the user set stays).
pub fn merge_codex_trust(
    file: &Path,
    existing: Option<&str>,
    states: &[HookState],
) -> Result<String, InstallError> {
    let mut doc = parse(file, existing.unwrap_or(""))?;
    let table = hooks_table(file, &mut doc)?;
    if table.get("state").is_none() {
        let mut t = Table::new();
        t.set_implicit(true);
        table.insert("state", Item::Table(t));
    }
    let state = table
        .get_mut("state")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| shape(file, "hooks.state", "a table"))?;
    for s in states {
        match state.get_mut(&s.key) {
            Some(item) => {
                let entry = item
                    .as_table_like_mut()
                    .ok_or_else(|| shape(file, format!("hooks.state.\"{}\"", s.key), "a table"))?;
                if entry.get("trusted_hash").and_then(Item::as_str) != Some(&s.trusted_hash) {
                    entry.insert("trusted_hash", toml_edit::value(s.trusted_hash.as_str()));
                }
            }
            None => {
                let mut t = Table::new();
                t.insert("trusted_hash", toml_edit::value(s.trusted_hash.as_str()));
                state.insert(&s.key, Item::Table(t));
            }
        }
    }
    Ok(doc.to_string())
}

/// The handlers mnemo installs: PreCompact for both triggers (`manual`,
/// `auto`) and PostCompact for both, running `pre` and `post` (full shell
/// commands).
pub fn default_hooks(pre: &str, post: &str) -> Vec<CodexHook> {
    let mut v = Vec::new();
    for (event, command) in [
        (CodexEvent::PreCompact, pre),
        (CodexEvent::PostCompact, post),
    ] {
        for m in ["manual", "auto"] {
            v.push(CodexHook {
                event,
                matcher: Some(m.to_string()),
                command: command.to_string(),
            });
        }
    }
    v
}

/// mnemo's Codex handlers running `bin hook codex pre-compact|post-compact EXTRA…`.
pub fn codex_hooks(bin: &str, extra: &[String]) -> Vec<CodexHook> {
    default_hooks(
        &crate::install::hook_command(bin, "codex", "pre-compact", extra),
        &crate::install::hook_command(bin, "codex", "post-compact", extra),
    )
}

/// The user config: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`.
pub fn user_config_path(
    codex_home: Option<&Path>,
    home: Option<&Path>,
) -> Result<std::path::PathBuf, InstallError> {
    let base = match codex_home {
        Some(c) => c.to_path_buf(),
        None => home.ok_or(InstallError::NoHome)?.join(".codex"),
    };
    Ok(absolute(&base.join("config.toml")))
}

/// The project config: `<dir>/.codex/config.toml`.
pub fn project_config_path(dir: &Path) -> std::path::PathBuf {
    absolute(&dir.join(".codex").join("config.toml"))
}

/// An absolute path without resolving links (as Codex prints config paths).
fn absolute(p: &Path) -> std::path::PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Whether the user config trusts the project at `dir` (`[projects."<dir>"]
/// trust_level = "trusted"`); Codex loads a project's `.codex/config.toml`
/// only then.
pub fn project_trusted(user_config: Option<&str>, dir: &Path) -> bool {
    let Some(text) = user_config else {
        return false;
    };
    let Ok(doc) = text.parse::<DocumentMut>() else {
        return false;
    };
    let dir = absolute(dir);
    let key = dir.display().to_string();
    doc.get("projects")
        .and_then(|p| p.get(&key))
        .and_then(|t| t.get("trust_level"))
        .and_then(Item::as_str)
        == Some("trusted")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn hooks() -> Vec<CodexHook> {
        default_hooks(
            "mnemo hook codex pre-compact",
            "mnemo hook codex post-compact",
        )
    }

    #[test]
    fn hash_is_codexs_for_a_known_handler() {
        // Printed by the real Codex CLI 0.171.0 (`codex app-server`,
        // `hooks/list` → currentHash) for this handler in a user config.
        let h = Handler {
            command: "/bin/echo hi".into(),
            timeout: 600,
            is_async: false,
            status_message: None,
        };
        assert_eq!(
            trusted_hash(CodexEvent::PreCompact, Some("manual"), &h),
            "sha256:b09cb72820675b937dad0e1a2beb3640ed59e50bd6ad4a092e1c5ae95e11a744"
        );
    }

    #[test]
    fn empty_file_gets_four_groups_and_their_keys() {
        let file = Path::new("/h/.codex/config.toml");
        let (text, states) = merge_codex_hooks(file, None, &hooks()).unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap();
        let pre = v["hooks"]["PreCompact"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["matcher"].as_str(), Some("manual"));
        assert_eq!(pre[1]["matcher"].as_str(), Some("auto"));
        assert_eq!(
            pre[1]["hooks"][0]["command"].as_str(),
            Some("mnemo hook codex pre-compact")
        );
        assert_eq!(v["hooks"]["PostCompact"].as_array().unwrap().len(), 2);
        let keys: Vec<&str> = states.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "/h/.codex/config.toml:pre_compact:0:0",
                "/h/.codex/config.toml:pre_compact:1:0",
                "/h/.codex/config.toml:post_compact:0:0",
                "/h/.codex/config.toml:post_compact:1:0",
            ]
        );
        assert!(states.iter().all(|s| s.trusted_hash.starts_with("sha256:")));
        assert_ne!(states[0].trusted_hash, states[1].trusted_hash);
    }

    #[test]
    fn existing_keys_and_hooks_are_kept_and_ours_appended_after_them() {
        let file = Path::new("/h/config.toml");
        let before = "# my config\nmodel = \"o3\" # keep\n\n[[hooks.PreCompact]]\nmatcher = \"auto\"\n[[hooks.PreCompact.hooks]]\ntype = \"command\"\ncommand = \"/usr/bin/logger compact\"\n\n[hooks.state.\"/h/config.toml:pre_compact:0:0\"]\ntrusted_hash = \"sha256:theirs\"\n\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n";
        let (text, states) = merge_codex_hooks(file, Some(before), &hooks()).unwrap();
        let text = merge_codex_trust(file, Some(&text), &states).unwrap();
        assert!(
            text.starts_with("# my config\nmodel = \"o3\" # keep\n"),
            "{text}"
        );
        let v: toml::Value = toml::from_str(&text).unwrap();
        let pre = v["hooks"]["PreCompact"].as_array().unwrap();
        assert_eq!(pre.len(), 3);
        assert_eq!(
            pre[0]["hooks"][0]["command"].as_str(),
            Some("/usr/bin/logger compact")
        );
        assert_eq!(states[0].key, "/h/config.toml:pre_compact:1:0");
        assert_eq!(states[1].key, "/h/config.toml:pre_compact:2:0");
        let state = v["hooks"]["state"].as_table().unwrap();
        assert_eq!(
            state["/h/config.toml:pre_compact:0:0"]["trusted_hash"].as_str(),
            Some("sha256:theirs")
        );
        assert_eq!(state.len(), 5);
        assert_eq!(v["projects"]["/p"]["trust_level"].as_str(), Some("trusted"));
    }

    #[test]
    fn a_second_run_changes_nothing() {
        let file = Path::new("/h/config.toml");
        let (once, s1) = merge_codex_hooks(file, Some("model = \"x\"\n"), &hooks()).unwrap();
        let once = merge_codex_trust(file, Some(&once), &s1).unwrap();
        let (twice, s2) = merge_codex_hooks(file, Some(&once), &hooks()).unwrap();
        let twice = merge_codex_trust(file, Some(&twice), &s2).unwrap();
        assert_eq!(once, twice);
        assert_eq!(s1, s2);
    }

    #[test]
    fn a_changed_command_is_updated_in_place_and_rehashed() {
        let file = Path::new("/h/config.toml");
        let (once, s1) = merge_codex_hooks(file, None, &hooks()).unwrap();
        let once = merge_codex_trust(file, Some(&once), &s1).unwrap();
        let new = default_hooks(
            "mnemo hook codex pre-compact --policy /p.toml",
            "mnemo hook codex post-compact --policy /p.toml",
        );
        let (twice, s2) = merge_codex_hooks(file, Some(&once), &new).unwrap();
        let twice = merge_codex_trust(file, Some(&twice), &s2).unwrap();
        let v: toml::Value = toml::from_str(&twice).unwrap();
        assert_eq!(v["hooks"]["PreCompact"].as_array().unwrap().len(), 2);
        assert_eq!(s1[0].key, s2[0].key);
        assert_ne!(s1[0].trusted_hash, s2[0].trusted_hash);
        assert_eq!(
            v["hooks"]["state"][s2[0].key.as_str()]["trusted_hash"].as_str(),
            Some(s2[0].trusted_hash.as_str())
        );
    }

    #[test]
    fn inline_arrays_and_custom_timeouts_are_respected() {
        let file = Path::new("/h/config.toml");
        let before = "[hooks]\nPreCompact = [{ matcher = \"manual\", hooks = [{ type = \"command\", command = \"mnemo hook codex pre-compact\", timeout = 30 }] }]\n";
        let (text, states) = merge_codex_hooks(file, Some(before), &hooks()).unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap();
        let pre = v["hooks"]["PreCompact"].as_array().unwrap();
        assert_eq!(pre.len(), 2, "{text}");
        assert_eq!(pre[0]["hooks"][0]["timeout"].as_integer(), Some(30));
        let with30 = Handler {
            command: "mnemo hook codex pre-compact".into(),
            timeout: 30,
            is_async: false,
            status_message: None,
        };
        assert_eq!(
            states[0].trusted_hash,
            trusted_hash(CodexEvent::PreCompact, Some("manual"), &with30)
        );
    }

    #[test]
    fn our_commands_are_recognised_by_their_words() {
        let hooks = codex_hooks(
            "/opt/my bin/mnemo",
            &["--policy".into(), "/p q.toml".into()],
        );
        assert_eq!(
            hooks[0].command,
            "'/opt/my bin/mnemo' hook codex pre-compact --policy '/p q.toml'"
        );
        assert!(is_mnemo_command(&hooks[0].command, CodexEvent::PreCompact));
        assert!(!is_mnemo_command(
            &hooks[0].command,
            CodexEvent::PostCompact
        ));
        assert!(!is_mnemo_command(
            "echo hook codex pre-compact",
            CodexEvent::PreCompact
        ));
    }

    #[test]
    fn project_trust_is_read_from_the_user_config() {
        let text = "[projects.\"/w/p\"]\ntrust_level = \"trusted\"\n";
        assert!(project_trusted(Some(text), Path::new("/w/p")));
        assert!(!project_trusted(Some(text), Path::new("/w/q")));
        assert!(!project_trusted(None, Path::new("/w/p")));
    }

    #[test]
    fn bad_toml_names_the_file_and_line() {
        let file = Path::new("/h/config.toml");
        let e = merge_codex_hooks(file, Some("model = \"x\"\n[hooks\n"), &hooks()).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("/h/config.toml: not valid TOML at line 2, column"),
            "{msg}"
        );
        assert!(msg.ends_with("nothing written"), "{msg}");
    }

    #[test]
    fn a_hooks_key_that_is_not_a_table_is_refused() {
        let file = Path::new("/h/config.toml");
        let e = merge_codex_hooks(file, Some("hooks = 3\n"), &hooks()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/h/config.toml: `hooks` must be a table; nothing written"
        );
        let e =
            merge_codex_hooks(file, Some("[hooks]\nPreCompact = \"x\"\n"), &hooks()).unwrap_err();
        assert!(e.to_string().contains("hooks.PreCompact"), "{e}");
    }
}
