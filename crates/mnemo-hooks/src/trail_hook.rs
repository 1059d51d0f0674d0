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

use crate::io::{HookRun, Kept, MAX_HOOK_INPUT, run_pre_compact, run_pre_compact_keep};
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
pub(crate) fn file_stem(session: &str) -> String {
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

pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
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
        x.push_bytes(&buf);
    }
    x.finish(budget).map_err(|e| e.to_string())
}

/// The trail of a transcript the Guardian's read left in memory
/// ([`crate::io::read_transcript_keep`], at most
/// [`crate::io::KEEP_MAX_BYTES`]): the same trail as [`trail_of_file`] of
/// that file.
pub fn trail_of_bytes(bytes: &[u8], host: HostKind, budget: usize) -> Result<Trail, String> {
    let mut x = Extractor::new(Some(host));
    for line in crate::io::lines_of(bytes) {
        x.push_bytes(line);
    }
    x.finish(budget).map_err(|e| e.to_string())
}

/// The trail of what one read of the Guardian left ([`Kept`]): the
/// extractor it fed, the bytes it read whole, or else (`None`) nothing.
pub fn trail_of_read(kept: Kept, host: HostKind, budget: usize) -> Option<Result<Trail, String>> {
    match kept {
        Kept {
            fed: true,
            extractor: Some(x),
            ..
        } => Some(x.finish(budget).map_err(|e| e.to_string())),
        Kept {
            whole: true, bytes, ..
        } => Some(trail_of_bytes(&bytes, host, budget)),
        _ => None,
    }
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
    let Some(budget) = budget else {
        return run_pre_compact(host, style, opts, &buf[..]);
    };
    // A transcript the Guardian reads whole is read once for both (a
    // Claude Code one, where an allow is expected, parsed once for both).
    let mut kept = Kept {
        extractor: (host == Host::ClaudeCode).then(|| Extractor::new(Some(host_kind(host)))),
        ..Kept::default()
    };
    let mut run = run_pre_compact_keep(
        host,
        style,
        opts,
        &buf[..],
        &mut std::thread::sleep,
        Some(&mut kept),
    )?;
    if run.decision.verdict == Verdict::Deny {
        return Ok(run);
    }
    let hook = parse_hook_input(&buf).unwrap_or_default();
    let Some(path) = hook.transcript_path.as_deref().filter(|p| !p.is_empty()) else {
        return Ok(run);
    };
    let built = trail_of_read(kept, host_kind(host), budget)
        .unwrap_or_else(|| trail_of_file(Path::new(path), host_kind(host), budget));
    let trail = match built {
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

/// What a Claude Code PostCompact recorded, to link the summary the host
/// writes after it to its lineage (`<session>.lineage.json` in the trail
/// store).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lineage {
    /// Provenance id the summary was recorded under (`steps/postCompact`).
    pub summary_id: String,
    /// Length of the transcript when PostCompact ran: the host appends the
    /// boundary and the summary after it.
    pub transcript_len: u64,
}

fn lineage_file(opts: &GuardOptions, session: &str) -> PathBuf {
    trail_dir(opts).join(format!("{}.lineage.json", file_stem(session)))
}

/// The lineage kept by the last PostCompact of `session`, if any.
pub fn load_lineage(opts: &GuardOptions, session: &str) -> Option<Lineage> {
    if opts.memory {
        return None;
    }
    let bytes = std::fs::read(lineage_file(opts, session)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Keeps the lineage of a compaction for the next PreCompact.
pub fn save_lineage(opts: &GuardOptions, session: &str, l: &Lineage) -> std::io::Result<()> {
    let json = serde_json::to_vec(l).map_err(std::io::Error::other)?;
    write_whole(&lineage_file(opts, session), &json)
}

/// Claude Code: the summary of the last compaction (`isCompactSummary`,
/// lineage [`crate::claude::PRIOR_COMPACTION`]) is linked to the summary id
/// its PostCompact recorded, when that record is the one of this boundary:
/// the boundary starts at or after the transcript's length then, and no
/// other boundary lies between (a compaction PostCompact did not see).
/// Otherwise the lineage stays unknown (the policy's `unknown_lineage`).
/// Returns the summary id linked.
pub fn link_prior_compaction(
    opts: &GuardOptions,
    session: &str,
    transcript: &Path,
    boundary: Option<u64>,
    entries: &mut [mnemo_guardian::decide::EntryProvenance],
) -> Option<String> {
    let b = boundary?;
    let l = load_lineage(opts, session)?;
    if b < l.transcript_len
        || crate::io::claude_boundary_between(transcript, l.transcript_len, b).unwrap_or(true)
    {
        return None;
    }
    let mut linked = false;
    for p in entries.iter_mut().flat_map(|e| e.provenance.iter_mut()) {
        for d in &mut p.derived_from {
            if d == crate::claude::PRIOR_COMPACTION {
                *d = l.summary_id.clone();
                linked = true;
            }
        }
    }
    linked.then_some(l.summary_id)
}

/// Claude Code PostCompact: keeps the [`Lineage`] of the summary just
/// recorded (its id and the transcript's length now), when it was recorded
/// in a persistent store; a note on stderr when it cannot be kept.
fn claude_keep_lineage(
    opts: &GuardOptions,
    session: &str,
    input: &serde_json::Value,
    rec: &crate::io::PostRecord,
    notes: &mut String,
) {
    if rec.recorded.is_none() {
        return;
    }
    let path = str_of(input, "transcript_path");
    let len = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) => {
            notes.push_str(&format!(
                "mnemo guardian: cannot read {path} ({e}); the next summary's lineage stays unknown\n"
            ));
            return;
        }
    };
    let l = Lineage {
        summary_id: rec.record.summary.provenance_id.clone(),
        transcript_len: len,
    };
    if let Err(e) = save_lineage(opts, session, &l) {
        notes.push_str(&format!(
            "mnemo guardian: lineage not kept ({e}); the next summary's lineage stays unknown\n"
        ));
    }
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

/// Where the scrubber found secrets in a compaction summary: one line for
/// stderr naming each rule and the line it is on (never the secret), or
/// `None` when there is none. A scrubber that cannot be built says so
/// (fail closed: the summary counts as unchecked, not as clean).
pub fn summary_secrets_report(summary: &str) -> Option<String> {
    let scrubber = match mnemo_scrub::Scrubber::default_rules() {
        Ok(s) => s,
        Err(e) => {
            return Some(format!(
                "mnemo: the compaction summary was not scanned for secrets ({e})\n"
            ));
        }
    };
    let found = scrubber.find(summary);
    if found.is_empty() {
        return None;
    }
    let at: Vec<String> = found
        .iter()
        .map(|f| {
            let line = summary.as_bytes()[..f.start.min(summary.len())]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            format!("{} at line {line}", f.rule)
        })
        .collect();
    Some(format!(
        "mnemo: the compaction summary holds {} secret{} ({}); it is in the host's context now: rotate {}; mnemo re-injects none of it\n",
        found.len(),
        if found.len() == 1 { "" } else { "s" },
        at.join(", "),
        if found.len() == 1 { "it" } else { "them" },
    ))
}

/// PostCompact. Claude Code: scans `compact_summary` for secrets (reported
/// on stderr, whether or not a trail was kept), records the compaction as
/// `steps/postCompact` with the lineage of what it folded (linked to the
/// next summary line through [`Lineage`]), checks it against the stored
/// trail and keeps the check (prints nothing on stdout). Codex (no
/// summary): records the compaction likewise
/// ([`crate::io::run_post_compact_record`]), then answers the whole stored
/// trail as `systemMessage`.
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
    let summary = str_of(&v, "compact_summary");
    if host == Host::ClaudeCode
        && let Some(report) = summary_secrets_report(summary)
    {
        out.stderr.push_str(&report);
    }
    // The compaction and the lineage of what it folded, so that trust
    // carries across it (steps/postCompact).
    let rec = crate::io::run_post_compact_record(host, opts, &buf)?;
    out.stderr.push_str(&rec.notes);
    if host == Host::ClaudeCode {
        claude_keep_lineage(opts, session, &v, &rec, &mut out.stderr);
    }
    let Some(trail) = load_trail(opts, session) else {
        return Ok(out);
    };
    if host == Host::Codex {
        out.stdout = serde_json::json!({ "systemMessage": trail.text }).to_string() + "\n";
        return Ok(out);
    }
    let check =
        mnemo_trail::check(&trail, summary).map_err(|e| OpenError::Config(e.to_string()))?;
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
