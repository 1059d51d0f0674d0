//! `mnemo hook install`: the hosts' hook configuration, merged into what is
//! there (pure) and written whole (a thin edge: [`plan`], [`write`]).
//!
//! * **Claude Code** — `.claude/settings.json` (project) or
//!   `~/.claude/settings.json` (user): `hooks.PreCompact` with both matchers
//!   (`manual`, `auto`), `hooks.PostCompact`, `hooks.SessionStart` with
//!   matcher `compact`, `hooks.UserPromptSubmit` ([`claude_hooks`],
//!   [`merge_claude_settings`]).
//! * **OpenCode** — `opencode.json` (project) or
//!   `~/.config/opencode/opencode.json` (user): the plugin reference in
//!   `plugin` ([`merge_opencode_config`]).
//!
//! Merging never drops a key, a hook or a matcher group that is there, keeps
//! the order of the file's keys, and is idempotent: an entry of ours (a
//! command running `mnemo hook <host> <event>`, recognised by
//! [`is_mnemo_command`]) is updated in place rather than added twice, also
//! when it sits in a group whose matcher covers every trigger (`""`, `"*"`
//! or none). A file that is not JSON, or whose `hooks` is not an object, is
//! an error naming the file (and line, column or field); nothing is written.

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where a host's configuration is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// The project's file, under the working directory (default).
    #[default]
    Project,
    /// The user's file, under the home directory.
    User,
}

/// Why an installation could not be planned or written.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The file is not valid JSON (or TOML).
    #[error("{}: not valid {format} at line {line}, column {column}: {message}; nothing written", file.display())]
    Parse {
        /// The file.
        file: PathBuf,
        /// `JSON` or `TOML`.
        format: &'static str,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// A member has the wrong type.
    #[error("{}: `{field}` must be {expected}; nothing written", file.display())]
    Shape {
        /// The file.
        file: PathBuf,
        /// Key path of the member, e.g. `hooks.PreCompact[0].hooks`.
        field: String,
        /// What it must be.
        expected: &'static str,
    },
    /// The file could not be read (or is not UTF-8).
    #[error("cannot read {}: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("cannot write {}: {source}", file.display())]
    Write {
        /// The file.
        file: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// `--user` without a home directory.
    #[error("no home directory (HOME is not set) for a --user installation")]
    NoHome,
}

/// A planned change to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file.
    pub path: PathBuf,
    /// Its text now (`None`: the file does not exist).
    pub before: Option<String>,
    /// Its text after the installation.
    pub after: String,
}

impl Change {
    /// Whether writing would change the file.
    pub fn changed(&self) -> bool {
        self.before.as_deref() != Some(self.after.as_str())
    }
}

/// Plans a change (edge: reads `path` when it exists; writes nothing).
pub fn plan(
    path: &Path,
    merge: impl FnOnce(Option<&str>) -> Result<String, InstallError>,
) -> Result<Change, InstallError> {
    let before = match std::fs::read(path) {
        Ok(b) => Some(String::from_utf8(b).map_err(|e| InstallError::Read {
            file: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(InstallError::Read {
                file: path.to_path_buf(),
                source: e,
            });
        }
    };
    let after = merge(before.as_deref())?;
    Ok(Change {
        path: path.to_path_buf(),
        before,
        after,
    })
}

/// Writes a change whole (edge): its directory is created when absent, the
/// text goes to a temporary file beside it, is synced and renamed over the
/// file (so a reader sees the old or the new file, never a part). Nothing
/// happens when the file would not change.
pub fn write(change: &Change) -> Result<(), InstallError> {
    use std::io::Write;
    if !change.changed() {
        return Ok(());
    }
    let err = |source| InstallError::Write {
        file: change.path.clone(),
        source,
    };
    let dir = match change.path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(err)?;
    let name = change
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "settings".into());
    let tmp = dir.join(format!(".{name}.mnemo-{}.tmp", std::process::id()));
    let r = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        if let Ok(meta) = std::fs::metadata(&change.path) {
            f.set_permissions(meta.permissions())?;
        }
        f.write_all(change.after.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &change.path)?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r.map_err(err)
}

/// A word for a POSIX shell: as is when it is made of safe characters,
/// single-quoted otherwise.
pub fn shell_word(s: &str) -> String {
    let safe = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The command line of a hook: `BIN hook HOST EVENT EXTRA…`, each word
/// quoted for the shell the host runs it with.
pub fn hook_command(bin: &str, host: &str, event: &str, extra: &[String]) -> String {
    let mut words = vec![shell_word(bin), "hook".into(), host.into(), event.into()];
    words.extend(extra.iter().map(|w| shell_word(w)));
    words.join(" ")
}

/// Whether a hook command is one of ours for `host` and `event`: its first
/// word is a program named `mnemo` (any directory, quoted or not) followed
/// by `hook HOST EVENT`.
pub fn is_mnemo_command(cmd: &str, host: &str, event: &str) -> bool {
    let words = shell_words(cmd, 4);
    let Some(bin) = words.first() else {
        return false;
    };
    let name = bin.rsplit('/').next().unwrap_or(bin);
    (name == "mnemo" || name.starts_with("mnemo."))
        && words.get(1).map(String::as_str) == Some("hook")
        && words.get(2).map(String::as_str) == Some(host)
        && words.get(3).map(String::as_str) == Some(event)
}

/// The first `max` words of a POSIX shell command line (single and double
/// quotes, backslash escapes; nothing is expanded).
fn shell_words(cmd: &str, max: usize) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = cmd.chars();
    while let Some(c) = chars.next() {
        if words.len() >= max {
            break;
        }
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                cur.push(n);
                            }
                        }
                        _ => cur.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word && words.len() < max {
        words.push(cur);
    }
    words
}

/// A JSON value that keeps the order of object keys (and duplicate keys)
/// as they are in the file.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Object(m) => m.iter_mut().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// The member `key` of an object, created as `empty` when absent
    /// (`None` when `self` is not an object).
    fn entry(&mut self, key: &str, empty: Json) -> Option<&mut Json> {
        let Json::Object(m) = self else {
            return None;
        };
        let at = match m.iter().rposition(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                m.push((key.to_string(), empty));
                m.len() - 1
            }
        };
        m.get_mut(at).map(|(_, v)| v)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(n)
                    .map(Json::Number)
                    .ok_or_else(|| E::custom("a number that is not finite"))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::String(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<Json, E> {
                Ok(Json::String(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element()? {
                    v.push(x);
                }
                Ok(Json::Array(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = map.next_entry::<String, Json>()? {
                    v.push((k, x));
                }
                Ok(Json::Object(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(t) => s.serialize_str(t),
            Json::Array(v) => {
                let mut q = s.serialize_seq(Some(v.len()))?;
                for x in v {
                    q.serialize_element(x)?;
                }
                q.end()
            }
            Json::Object(m) => {
                let mut q = s.serialize_map(Some(m.len()))?;
                for (k, x) in m {
                    q.serialize_entry(k, x)?;
                }
                q.end()
            }
        }
    }
}

/// Parses a JSON file's text; an empty (or blank) file is an empty object.
fn parse_json(file: &Path, text: Option<&str>) -> Result<Json, InstallError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(Json::Object(Vec::new()));
    };
    let v: Json = serde_json::from_str(text).map_err(|e| InstallError::Parse {
        file: file.to_path_buf(),
        format: "JSON",
        line: e.line(),
        column: e.column(),
        message: {
            // serde_json appends " at line L column C", said once already.
            let m = e.to_string();
            match m.rsplit_once(" at line ") {
                Some((head, _)) => head.to_string(),
                None => m,
            }
        },
    })?;
    if !matches!(v, Json::Object(_)) {
        return Err(InstallError::Shape {
            file: file.to_path_buf(),
            field: "(the whole file)".into(),
            expected: "an object",
        });
    }
    Ok(v)
}

fn render_json(v: &Json) -> String {
    // Serialising our own tree to a String cannot fail.
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

fn shape(file: &Path, field: String, expected: &'static str) -> InstallError {
    InstallError::Shape {
        file: file.to_path_buf(),
        field,
        expected,
    }
}

/// One hook to register in Claude Code's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeHook {
    /// `PreCompact`, `PostCompact`, `SessionStart`.
    pub event: &'static str,
    /// The matcher (`manual`, `auto`, `compact`), or `None` for every one.
    pub matcher: Option<&'static str>,
    /// The event's `mnemo hook claude-code <event>` name.
    pub mnemo_event: &'static str,
    /// The command line.
    pub command: String,
}

/// The hooks mnemo registers in Claude Code: PreCompact for both matchers
/// (`manual`, `auto`), PostCompact, SessionStart for `compact`, and
/// UserPromptSubmit (records the turn's prompt, [`crate::prompt`]). `bin`
/// is the mnemo binary, `extra` the options every hook gets (`--policy`,
/// `--store`).
pub fn claude_hooks(bin: &str, extra: &[String]) -> Vec<ClaudeHook> {
    let cmd = |e: &str| hook_command(bin, "claude-code", e, extra);
    vec![
        ClaudeHook {
            event: "PreCompact",
            matcher: Some("manual"),
            mnemo_event: "pre-compact",
            command: cmd("pre-compact"),
        },
        ClaudeHook {
            event: "PreCompact",
            matcher: Some("auto"),
            mnemo_event: "pre-compact",
            command: cmd("pre-compact"),
        },
        ClaudeHook {
            event: "PostCompact",
            matcher: None,
            mnemo_event: "post-compact",
            command: cmd("post-compact"),
        },
        ClaudeHook {
            event: "SessionStart",
            matcher: Some("compact"),
            mnemo_event: "session-start",
            command: cmd("session-start"),
        },
        ClaudeHook {
            event: "UserPromptSubmit",
            matcher: None,
            mnemo_event: "user-prompt-submit",
            command: cmd("user-prompt-submit"),
        },
    ]
}

fn covers_all(matcher: Option<&str>) -> bool {
    matches!(matcher, None | Some("") | Some("*"))
}

/// Merges `hooks` into the text of a Claude Code settings file (`None`: no
/// file yet) and returns the new text. See the module docs for the rules.
pub fn merge_claude_settings(
    file: &Path,
    existing: Option<&str>,
    hooks: &[ClaudeHook],
) -> Result<String, InstallError> {
    let mut root = parse_json(file, existing)?;
    let all = match root.entry("hooks", Json::Object(Vec::new())) {
        Some(a @ Json::Object(_)) => a,
        _ => return Err(shape(file, "hooks".into(), "an object")),
    };
    for h in hooks {
        let Some(Json::Array(groups)) = all.entry(h.event, Json::Array(Vec::new())) else {
            return Err(shape(file, format!("hooks.{}", h.event), "an array"));
        };
        // Check the shape of every group first, so that an error names it.
        for (i, g) in groups.iter().enumerate() {
            if !matches!(g, Json::Object(_)) {
                return Err(shape(
                    file,
                    format!("hooks.{}[{i}]", h.event),
                    "an object with `matcher` and `hooks`",
                ));
            }
            if let Some(m) = g.get("matcher")
                && !matches!(m, Json::String(_) | Json::Null)
            {
                return Err(shape(
                    file,
                    format!("hooks.{}[{i}].matcher", h.event),
                    "a string",
                ));
            }
            if let Some(list) = g.get("hooks")
                && !matches!(list, Json::Array(_))
            {
                return Err(shape(
                    file,
                    format!("hooks.{}[{i}].hooks", h.event),
                    "an array",
                ));
            }
        }
        let matcher_of = |g: &Json| g.get("matcher").and_then(Json::as_str).map(str::to_string);
        let ours = |g: &Json| -> Option<usize> {
            match g.get("hooks") {
                Some(Json::Array(list)) => list.iter().position(|c| {
                    c.get("command")
                        .and_then(Json::as_str)
                        .is_some_and(|cmd| is_mnemo_command(cmd, "claude-code", h.mnemo_event))
                }),
                _ => None,
            }
        };
        // Our command in the group of this matcher, or in one covering all.
        let found = groups.iter().position(|g| {
            let m = matcher_of(g);
            (m.as_deref() == h.matcher.or(Some("")) || covers_all(m.as_deref()))
                && ours(g).is_some()
        });
        let command = Json::Object(vec![
            ("type".into(), Json::String("command".into())),
            ("command".into(), Json::String(h.command.clone())),
        ]);
        match found {
            Some(gi) => {
                let g = &mut groups[gi];
                let ci = ours(g).unwrap_or(0);
                if let Some(Json::Array(list)) = g.get_mut("hooks")
                    && let Some(c) = list.get_mut(ci)
                {
                    let Json::Object(m) = c else { continue };
                    match m.iter_mut().rev().find(|(k, _)| k == "command") {
                        Some((_, v)) => *v = Json::String(h.command.clone()),
                        None => m.push(("command".into(), Json::String(h.command.clone()))),
                    }
                }
            }
            None => {
                // A group with exactly this matcher gets our command added;
                // otherwise a new group.
                let same = groups.iter().position(|g| {
                    let m = matcher_of(g);
                    match h.matcher {
                        Some(want) => m.as_deref() == Some(want),
                        None => covers_all(m.as_deref()),
                    }
                });
                match same {
                    Some(gi) => {
                        let g = &mut groups[gi];
                        if let Some(Json::Array(list)) = g.entry("hooks", Json::Array(Vec::new())) {
                            list.push(command);
                        }
                    }
                    None => {
                        let mut g = Vec::new();
                        if let Some(m) = h.matcher {
                            g.push(("matcher".into(), Json::String(m.into())));
                        }
                        g.push(("hooks".into(), Json::Array(vec![command])));
                        groups.push(Json::Object(g));
                    }
                }
            }
        }
    }
    Ok(render_json(&root))
}

/// The reference of mnemo's OpenCode plugin in `opencode.json` when none is
/// given (the npm package name of `integrations/opencode`).
pub const OPENCODE_PLUGIN: &str = "mnemo-opencode";

/// Whether an OpenCode plugin reference is mnemo's: the package name (with
/// or without a version), or a path into a directory `opencode` of
/// `integrations`, or a path ending in `mnemo-opencode…`.
pub fn is_mnemo_plugin(reference: &str) -> bool {
    let r = reference.trim();
    let name = r.strip_prefix("file:").unwrap_or(r);
    name == OPENCODE_PLUGIN
        || name.starts_with("mnemo-opencode@")
        || name.contains("integrations/opencode")
        || name
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .is_some_and(|last| last.starts_with("mnemo-opencode"))
}

/// Merges the plugin reference into the text of an `opencode.json`: adds
/// it to `plugin` (created when absent), replaces a different reference to
/// mnemo's plugin, keeps every other key and plugin.
pub fn merge_opencode_config(
    file: &Path,
    existing: Option<&str>,
    plugin: &str,
) -> Result<String, InstallError> {
    let mut root = parse_json(file, existing)?;
    if root.get("$schema").is_none() && existing.is_none_or(|t| t.trim().is_empty()) {
        root = Json::Object(vec![(
            "$schema".into(),
            Json::String("https://opencode.ai/config.json".into()),
        )]);
    }
    let Some(Json::Array(list)) = root.entry("plugin", Json::Array(Vec::new())) else {
        return Err(shape(file, "plugin".into(), "an array of strings"));
    };
    for (i, p) in list.iter().enumerate() {
        if !matches!(p, Json::String(_)) {
            return Err(shape(file, format!("plugin[{i}]"), "a string"));
        }
    }
    let mine: Vec<usize> = list
        .iter()
        .enumerate()
        .filter(|(_, p)| p.as_str().is_some_and(is_mnemo_plugin))
        .map(|(i, _)| i)
        .collect();
    match mine.first() {
        Some(&i) => list[i] = Json::String(plugin.to_string()),
        None => list.push(Json::String(plugin.to_string())),
    }
    Ok(render_json(&root))
}

/// The Claude Code settings file of a scope: `<dir>/.claude/settings.json`
/// or `<home>/.claude/settings.json`.
pub fn claude_settings_path(
    scope: Scope,
    dir: &Path,
    home: Option<&Path>,
) -> Result<PathBuf, InstallError> {
    Ok(match scope {
        Scope::Project => dir.join(".claude").join("settings.json"),
        Scope::User => home
            .ok_or(InstallError::NoHome)?
            .join(".claude")
            .join("settings.json"),
    })
}

/// OpenCode's configuration file of a scope: `<dir>/opencode.json` or
/// `$XDG_CONFIG_HOME/opencode/opencode.json` (default `~/.config`).
pub fn opencode_config_path(
    scope: Scope,
    dir: &Path,
    home: Option<&Path>,
    xdg_config: Option<&Path>,
) -> Result<PathBuf, InstallError> {
    Ok(match scope {
        Scope::Project => dir.join("opencode.json"),
        Scope::User => match xdg_config {
            Some(x) => x.join("opencode").join("opencode.json"),
            None => home
                .ok_or(InstallError::NoHome)?
                .join(".config")
                .join("opencode")
                .join("opencode.json"),
        },
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn file() -> &'static Path {
        Path::new("/p/.claude/settings.json")
    }

    fn hooks() -> Vec<ClaudeHook> {
        claude_hooks("mnemo", &[])
    }

    fn v(s: &str) -> serde_json::Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn a_new_file_gets_both_precompact_matchers_postcompact_and_sessionstart() {
        let out = merge_claude_settings(file(), None, &hooks()).unwrap();
        let j = v(&out);
        let pre = j["hooks"]["PreCompact"].as_array().unwrap();
        let matchers: Vec<&str> = pre.iter().map(|g| g["matcher"].as_str().unwrap()).collect();
        assert_eq!(matchers, ["manual", "auto"]);
        assert_eq!(
            pre[0]["hooks"][0]["command"],
            "mnemo hook claude-code pre-compact"
        );
        assert_eq!(pre[0]["hooks"][0]["type"], "command");
        assert_eq!(
            j["hooks"]["PostCompact"][0]["hooks"][0]["command"],
            "mnemo hook claude-code post-compact"
        );
        assert!(j["hooks"]["PostCompact"][0].get("matcher").is_none());
        assert_eq!(j["hooks"]["SessionStart"][0]["matcher"], "compact");
        assert_eq!(
            j["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            "mnemo hook claude-code session-start"
        );
        assert!(j["hooks"]["UserPromptSubmit"][0].get("matcher").is_none());
        assert_eq!(
            j["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"],
            "mnemo hook claude-code user-prompt-submit"
        );
    }

    #[test]
    fn existing_keys_hooks_and_their_order_are_kept_and_a_rerun_changes_nothing() {
        let before = r#"{
  "permissions": {"allow": ["Bash(ls:*)"]},
  "model": "opus",
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}],
    "PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "backup.sh", "timeout": 30}]}]
  },
  "env": {"A": "1"}
}"#;
        let once = merge_claude_settings(file(), Some(before), &hooks()).unwrap();
        let j = v(&once);
        assert_eq!(j["permissions"]["allow"][0], "Bash(ls:*)");
        assert_eq!(j["model"], "opus");
        assert_eq!(j["env"]["A"], "1");
        assert_eq!(
            j["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "audit.sh"
        );
        // The manual group keeps backup.sh and gains ours beside it.
        let manual = &j["hooks"]["PreCompact"][0];
        assert_eq!(manual["matcher"], "manual");
        assert_eq!(manual["hooks"][0]["command"], "backup.sh");
        assert_eq!(manual["hooks"][0]["timeout"], 30);
        assert_eq!(
            manual["hooks"][1]["command"],
            "mnemo hook claude-code pre-compact"
        );
        assert_eq!(j["hooks"]["PreCompact"][1]["matcher"], "auto");
        // Key order as in the file (serde_json's own map would sort them).
        let order: Vec<usize> = ["permissions", "model", "hooks", "env"]
            .iter()
            .map(|k| once.find(&format!("\"{k}\"")).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{once}");
        let twice = merge_claude_settings(file(), Some(&once), &hooks()).unwrap();
        assert_eq!(once, twice);
    }

    #[test]
    fn our_entry_is_updated_in_place_not_duplicated() {
        let before = r#"{"hooks": {"PreCompact": [
            {"matcher": "", "hooks": [{"type": "command", "command": "/usr/local/bin/mnemo hook claude-code pre-compact --policy old.toml"}]}
        ]}}"#;
        let h = claude_hooks("/opt/mnemo", &["--policy".into(), "new policy.toml".into()]);
        let out = merge_claude_settings(file(), Some(before), &h).unwrap();
        let j = v(&out);
        let pre = j["hooks"]["PreCompact"].as_array().unwrap();
        // The group with matcher "" covers manual and auto: no new groups.
        assert_eq!(pre.len(), 1, "{out}");
        assert_eq!(
            pre[0]["hooks"][0]["command"],
            "/opt/mnemo hook claude-code pre-compact --policy 'new policy.toml'"
        );
        assert_eq!(pre[0]["hooks"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn bad_json_names_the_file_line_and_column() {
        let e = merge_claude_settings(file(), Some("{\n  \"hooks\": {,\n}"), &hooks()).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("/p/.claude/settings.json: not valid JSON at line 2"),
            "{msg}"
        );
        assert!(msg.contains("nothing written"), "{msg}");
    }

    #[test]
    fn wrong_shapes_name_the_field() {
        for (text, field) in [
            (r#"[1]"#, "(the whole file)"),
            (r#"{"hooks": []}"#, "`hooks`"),
            (r#"{"hooks": {"PreCompact": {}}}"#, "`hooks.PreCompact`"),
            (r#"{"hooks": {"PreCompact": [3]}}"#, "`hooks.PreCompact[0]`"),
            (
                r#"{"hooks": {"PreCompact": [{"matcher": "auto", "hooks": {}}]}}"#,
                "`hooks.PreCompact[0].hooks`",
            ),
        ] {
            let e = merge_claude_settings(file(), Some(text), &hooks()).unwrap_err();
            assert!(e.to_string().contains(field), "{text}: {e}");
        }
    }

    #[test]
    fn an_empty_file_is_an_empty_object() {
        let out = merge_claude_settings(file(), Some("  \n"), &hooks()).unwrap();
        assert!(v(&out)["hooks"]["PreCompact"].is_array());
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("/usr/bin/mnemo"), "/usr/bin/mnemo");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
    }

    #[test]
    fn our_commands_are_recognised_by_program_and_event() {
        assert!(is_mnemo_command(
            "mnemo hook claude-code pre-compact",
            "claude-code",
            "pre-compact"
        ));
        assert!(is_mnemo_command(
            "'/a b/mnemo' hook claude-code pre-compact --memory",
            "claude-code",
            "pre-compact"
        ));
        assert!(is_mnemo_command(
            r#""/a b/mnemo" hook claude-code pre-compact 2>>log"#,
            "claude-code",
            "pre-compact"
        ));
        assert!(!is_mnemo_command(
            "mnemo hook claude-code post-compact",
            "claude-code",
            "pre-compact"
        ));
        assert!(!is_mnemo_command(
            "mnemonic hook claude-code pre-compact",
            "claude-code",
            "pre-compact"
        ));
        assert!(!is_mnemo_command(
            "mnemo hook codex pre-compact",
            "claude-code",
            "pre-compact"
        ));
        assert!(!is_mnemo_command("", "claude-code", "pre-compact"));
    }

    #[test]
    fn opencode_plugin_is_added_once_and_other_keys_kept() {
        let f = Path::new("/p/opencode.json");
        let before = r#"{"$schema": "https://opencode.ai/config.json", "model": "x/y", "plugin": ["other-plugin"]}"#;
        let once = merge_opencode_config(f, Some(before), OPENCODE_PLUGIN).unwrap();
        let j = v(&once);
        assert_eq!(j["model"], "x/y");
        assert_eq!(
            j["plugin"],
            serde_json::json!(["other-plugin", "mnemo-opencode"])
        );
        let twice = merge_opencode_config(f, Some(&once), OPENCODE_PLUGIN).unwrap();
        assert_eq!(once, twice);
        // A path form replaces the package form (one reference to mnemo's plugin).
        let path =
            merge_opencode_config(f, Some(&once), "/src/mnemo/integrations/opencode/index.js")
                .unwrap();
        assert_eq!(
            v(&path)["plugin"],
            serde_json::json!(["other-plugin", "/src/mnemo/integrations/opencode/index.js"])
        );
        let fresh = merge_opencode_config(f, None, OPENCODE_PLUGIN).unwrap();
        assert_eq!(v(&fresh)["$schema"], "https://opencode.ai/config.json");
        assert_eq!(v(&fresh)["plugin"], serde_json::json!(["mnemo-opencode"]));
        let e = merge_opencode_config(f, Some(r#"{"plugin": "x"}"#), OPENCODE_PLUGIN).unwrap_err();
        assert!(e.to_string().contains("`plugin`"), "{e}");
        let e = merge_opencode_config(f, Some(r#"{"plugin": [1]}"#), OPENCODE_PLUGIN).unwrap_err();
        assert!(e.to_string().contains("`plugin[0]`"), "{e}");
    }

    #[test]
    fn write_creates_the_directory_and_skips_an_unchanged_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".claude/settings.json");
        let c = plan(&p, |t| merge_claude_settings(&p, t, &hooks())).unwrap();
        assert!(c.before.is_none() && c.changed());
        write(&c).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), c.after);
        let again = plan(&p, |t| merge_claude_settings(&p, t, &hooks())).unwrap();
        assert!(!again.changed());
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(d.path().join(".claude"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["settings.json"]);
    }
}
