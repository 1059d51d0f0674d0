//! The hooks' I/O edge: read the hook input on stdin and the transcript it
//! points to, decide with the in-process API, render the host's answer.

use super::{BlockStyle, HookOutput, Host, claude, codex, parse_hook_input, render};
use crate::decide::{Decision, check_compaction};
use crate::protocol::trigger_from_host;
use crate::server::{GuardOptions, ServeError, load_policy};
use std::io::Read;

/// Largest hook input read from stdin.
pub const MAX_HOOK_INPUT: u64 = 1 << 20;
/// Largest transcript read.
pub const MAX_TRANSCRIPT: u64 = 512 << 20;

/// Result of one hook run.
#[derive(Debug, Clone)]
pub struct HookRun {
    /// What to print and exit with.
    pub output: HookOutput,
    /// The decision taken.
    pub decision: Decision,
    /// Entries found in the transcript.
    pub entries: usize,
    /// Transcript lines that did not parse.
    pub bad_lines: usize,
}

/// Runs a PreCompact hook: hook JSON from `input`, transcript from its path.
/// A transcript that cannot be read counts as empty (the answer says so on stderr).
pub fn run_pre_compact(
    host: Host,
    style: BlockStyle,
    opts: &GuardOptions,
    input: impl Read,
) -> Result<HookRun, ServeError> {
    let policy = load_policy(opts.policy.as_deref())?;
    let mut buf = Vec::new();
    input.take(MAX_HOOK_INPUT).read_to_end(&mut buf)?;
    let hook = parse_hook_input(&buf)
        .map_err(|e| ServeError::Config(format!("hook input on stdin is not valid JSON: {e}")))?;
    let mut note = String::new();
    let text = match hook.transcript_path.as_deref() {
        Some(p) if !p.is_empty() => match std::fs::File::open(p) {
            Ok(f) => {
                let mut s = String::new();
                match f.take(MAX_TRANSCRIPT).read_to_string(&mut s) {
                    Ok(_) => s,
                    Err(e) => {
                        note = format!("mnemo guardian: cannot read transcript {p}: {e}\n");
                        String::new()
                    }
                }
            }
            Err(e) => {
                note = format!("mnemo guardian: cannot read transcript {p}: {e}\n");
                String::new()
            }
        },
        _ => String::new(),
    };
    let (entries, bad) = match host {
        Host::ClaudeCode => claude::transcript_entries(&text),
        Host::Codex => codex::transcript_entries(&text),
    };
    let trigger = trigger_from_host(hook.trigger.as_deref().unwrap_or("auto"));
    let decision = check_compaction(&policy, &entries, trigger);
    let mut output = render(host, style, &decision);
    output.stderr.insert_str(0, &note);
    Ok(HookRun {
        output,
        decision,
        entries: entries.len(),
        bad_lines: bad,
    })
}
