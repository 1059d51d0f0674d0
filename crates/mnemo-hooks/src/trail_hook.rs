//! The artifact trail at the hosts' compaction hooks (SPEC §7), an I/O edge
//! beside [`crate::io`]:
//!
//! * **PreCompact** — after the Guardian allowed, the trail of the transcript
//!   (`mnemo-trail`) goes to the host's summariser: Claude Code adds a
//!   hook's stdout on exit 0 to the compaction instructions (plain text: a
//!   JSON object would not reach them); Codex takes `systemMessage`. Each
//!   trail is kept in the trail store.
//! * **PostCompact** (Claude Code, `compact_summary`) — which trail facts the
//!   summary kept; the lost ones are kept for SessionStart; secrets in the
//!   summary are reported on stderr.
//! * **SessionStart** (`source: "compact"`) — returns the lost facts (or,
//!   when no PostCompact check ran, the whole trail) as
//!   `hookSpecificOutput.additionalContext` beside `"hookEventName":
//!   "SessionStart"` (without it Claude Code drops the context silently).
//! * **Codex PostCompact** has no summary: it answers the whole trail as
//!   `systemMessage` (see docs/trail.md for what that can and cannot do).
//!
//! The trail store is a directory beside the session store
//! (`<store>.trails/`, by default `$MNEMO_HOME/guardian.sqlite3.trails/`):
//! `<session>.json` is the last PreCompact's trail, `<session>.check.json`
//! the last PostCompact's check. Files are written whole (temporary file,
//! rename). A trail that cannot be built or stored never changes the
//! Guardian's decision; the hook says so on stderr.

use crate::io::{HookRun, MAX_HOOK_INPUT, run_pre_compact};
use crate::{BlockStyle, Host, parse_hook_input};
use mnemo_acs::model::Verdict;
use mnemo_guardian_store::open::{GuardOptions, OpenError, default_store_path};
use mnemo_trail::parse::HostKind;
use mnemo_trail::{Check, Extractor, Trail};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Where trails are kept for a Guardian configuration.
pub fn trail_dir(opts: &GuardOptions) -> PathBuf {
    let store = opts.store.clone().unwrap_or_else(default_store_path);
    let mut name = store
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".trails");
    store.with_file_name(name)
}

/// A session id as a file name: anything but `[A-Za-z0-9._-]` becomes `_`.
fn file_stem(session: &str) -> String {
    let s: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match s.trim_start_matches('.') {
        "" => "unknown-session".to_string(),
        t => t.to_string(),
    }
}

fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Builds the trail of a transcript file, one line at a time, in bounded
/// memory: the whole file is read (the extractor streams), and a line longer
/// than [`crate::io::MAX_LINE`] is skipped, as the Guardian's reader does.
pub fn trail_of_file(path: &Path, host: HostKind, budget: usize) -> Result<Trail, String> {
    let f =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut r = BufReader::with_capacity(1 << 16, f);
    let mut x = Extractor::new(Some(host));
    let mut buf = Vec::new();
    let cap = crate::io::MAX_LINE as u64 + 1;
    let read_err = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    loop {
        buf.clear();
        let n = r
            .by_ref()
            .take(cap)
            .read_until(b'\n', &mut buf)
            .map_err(read_err)?;
        if n == 0 {
            break;
        }
        if buf.len() as u64 >= cap && buf.last() != Some(&b'\n') {
            // Too long: drop the rest of this line without keeping it.
            let mut sink = Vec::new();
            loop {
                sink.clear();
                let m = r
                    .by_ref()
                    .take(1 << 16)
                    .read_until(b'\n', &mut sink)
                    .map_err(read_err)?;
                if m == 0 || sink.last() == Some(&b'\n') {
                    break;
                }
            }
            continue;
        }
        x.push_line(&String::from_utf8_lossy(&buf));
    }
    x.finish(budget).map_err(|e| e.to_string())
}

fn host_kind(host: Host) -> HostKind {
    match host {
        Host::ClaudeCode => HostKind::ClaudeCode,
        Host::Codex => HostKind::Codex,
    }
}

/// PreCompact with the trail: the Guardian decides (as [`run_pre_compact`]);
/// when it allows, the trail is printed in the host's format and stored.
/// `budget: None` leaves the trail out (the plain Guardian hook).
pub fn run_pre_compact_with_trail(
    host: Host,
    style: BlockStyle,
    opts: &GuardOptions,
    input: impl Read,
    budget: Option<usize>,
) -> Result<HookRun, OpenError> {
    let mut buf = Vec::new();
    input.take(MAX_HOOK_INPUT).read_to_end(&mut buf)?;
    let mut run = run_pre_compact(host, style, opts, &buf[..])?;
    let Some(budget) = budget else {
        return Ok(run);
    };
    if run.decision.verdict == Verdict::Deny {
        return Ok(run);
    }
    let hook = parse_hook_input(&buf).unwrap_or_default();
    let Some(path) = hook.transcript_path.as_deref().filter(|p| !p.is_empty()) else {
        return Ok(run);
    };
    let trail = match trail_of_file(Path::new(path), host_kind(host), budget) {
        Ok(t) => t,
        Err(e) => {
            run.output
                .stderr
                .push_str(&format!("mnemo trail: no trail for the compactor: {e}\n"));
            return Ok(run);
        }
    };
    if trail.shown == 0 {
        return Ok(run);
    }
    match host {
        Host::ClaudeCode => run.output.stdout.push_str(&trail.text),
        Host::Codex => {
            run.output.stdout =
                serde_json::json!({ "systemMessage": trail.text }).to_string() + "\n";
        }
    }
    if !opts.memory {
        let file = trail_dir(opts).join(format!("{}.json", file_stem(&hook.session_id)));
        let json = serde_json::to_vec(&trail).unwrap_or_default();
        if let Err(e) = write_whole(&file, &json) {
            run.output.stderr.push_str(&format!(
                "mnemo trail: trail not kept in {}: {e}\n",
                file.display()
            ));
        }
    }
    Ok(run)
}

/// What a PostCompact / SessionStart hook prints and exits with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventOutput {
    /// Standard output (the host's format).
    pub stdout: String,
    /// Notes for stderr.
    pub stderr: String,
    /// The check of the summary, when one ran.
    pub check: Option<Check>,
}

fn load_trail(opts: &GuardOptions, session: &str) -> Option<Trail> {
    let file = trail_dir(opts).join(format!("{}.json", file_stem(session)));
    let bytes = std::fs::read(file).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn read_input(input: impl Read) -> Result<serde_json::Value, OpenError> {
    let mut buf = Vec::new();
    input.take(MAX_HOOK_INPUT).read_to_end(&mut buf)?;
    serde_json::from_slice(&buf)
        .map_err(|e| OpenError::Config(format!("hook input on stdin is not valid JSON: {e}")))
}

fn str_of<'a>(v: &'a serde_json::Value, k: &str) -> &'a str {
    v.get(k).and_then(serde_json::Value::as_str).unwrap_or("")
}

/// PostCompact. Claude Code: checks `compact_summary` against the stored
/// trail and keeps the check for SessionStart (prints nothing on stdout).
/// Codex (no summary): records the compaction as `steps/postCompact` with
/// the lineage of what it folded ([`crate::io::run_post_compact_record`]),
/// then answers the whole stored trail as `systemMessage`.
pub fn run_post_compact(
    host: Host,
    opts: &GuardOptions,
    input: impl Read,
) -> Result<EventOutput, OpenError> {
    let mut buf = Vec::new();
    input.take(MAX_HOOK_INPUT).read_to_end(&mut buf)?;
    let v = read_input(&buf[..])?;
    let session = str_of(&v, "session_id");
    let mut out = EventOutput {
        stdout: String::new(),
        stderr: String::new(),
        check: None,
    };
    if host == Host::Codex {
        // The compaction and the lineage of what it folded, so that trust
        // carries across it (steps/postCompact).
        let rec = crate::io::run_post_compact_record(host, opts, &buf)?;
        out.stderr.push_str(&rec.notes);
    }
    let Some(trail) = load_trail(opts, session) else {
        return Ok(out);
    };
    if host == Host::Codex {
        out.stdout = serde_json::json!({ "systemMessage": trail.text }).to_string() + "\n";
        return Ok(out);
    }
    let summary = str_of(&v, "compact_summary");
    let check =
        mnemo_trail::check(&trail, summary).map_err(|e| OpenError::Config(e.to_string()))?;
    if !check.summary_secrets.is_empty() {
        out.stderr.push_str(&format!(
            "mnemo trail: the compaction summary holds secrets ({}); they are not re-injected\n",
            check.summary_secrets.join(", ")
        ));
    }
    let file = trail_dir(opts).join(format!("{}.check.json", file_stem(session)));
    if let Err(e) = write_whole(&file, &serde_json::to_vec(&check).unwrap_or_default()) {
        out.stderr.push_str(&format!(
            "mnemo trail: check not kept in {}: {e}\n",
            file.display()
        ));
    }
    out.check = Some(check);
    Ok(out)
}

/// SessionStart (Claude Code). With `source: "compact"`: the facts the
/// summary lost (from PostCompact's check), or the whole trail when no
/// check ran, as `hookSpecificOutput.additionalContext`. Other sources:
/// nothing.
pub fn run_session_start(opts: &GuardOptions, input: impl Read) -> Result<EventOutput, OpenError> {
    let v = read_input(input)?;
    let session = str_of(&v, "session_id");
    let mut out = EventOutput {
        stdout: String::new(),
        stderr: String::new(),
        check: None,
    };
    if str_of(&v, "source") != "compact" {
        return Ok(out);
    }
    let dir = trail_dir(opts);
    let check: Option<Check> =
        std::fs::read(dir.join(format!("{}.check.json", file_stem(session))))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
    let context = match &check {
        Some(c) => c.reinject.clone(),
        None => match load_trail(opts, session) {
            Some(t) if t.shown > 0 => t.text,
            _ => String::new(),
        },
    };
    if !context.is_empty() {
        out.stdout = serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": context,
            }
        })
        .to_string()
            + "\n";
    }
    out.check = check;
    Ok(out)
}
