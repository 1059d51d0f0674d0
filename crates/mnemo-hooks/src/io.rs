//! The hooks' I/O edge: read the hook input on stdin and the transcript it
//! points to, ask the in-process Guardian (which records the decision and
//! its chain entry in the session store), render the host's answer.

use super::{BlockStyle, HookOutput, Host, claude, codex, parse_hook_input, render};
use mnemo_guardian::decide::Decision;
use mnemo_guardian::protocol::{HostCompaction, Transport, trigger_from_host};
use mnemo_guardian_store::open::{GuardOptions, OpenError as ServeError, open_guardian};
use sha2::{Digest, Sha256};
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
    /// The step id the decision was recorded under, with its chain hash
    /// (hex); `None` when the store could not record it.
    pub recorded: Option<(String, String)>,
}

/// Runs a PreCompact hook: hook JSON from `input`, transcript from its path.
/// A transcript that cannot be read counts as empty (the answer says so on stderr).
pub fn run_pre_compact(
    host: Host,
    style: BlockStyle,
    opts: &GuardOptions,
    input: impl Read,
) -> Result<HookRun, ServeError> {
    let mut buf = Vec::new();
    input.take(MAX_HOOK_INPUT).read_to_end(&mut buf)?;
    let hook = parse_hook_input(&buf)
        .map_err(|e| ServeError::Config(format!("hook input on stdin is not valid JSON: {e}")))?;
    // Bad input and a policy error stop here, before the store is opened
    // (exit non-zero, nothing blocked, nothing written); a store that cannot
    // be opened only loses the record, never the decision.
    let mut note = String::new();
    let (mut guardian, persistent) = match open_guardian(opts, Transport::Stdio, true) {
        Ok(g) => (g, !opts.memory),
        Err(
            e @ (ServeError::Policy { .. } | ServeError::PolicyRead { .. } | ServeError::Config(_)),
        ) => {
            return Err(e);
        }
        Err(e) => {
            note.push_str(&format!(
                "mnemo guardian: session store unavailable, decision not recorded: {e}\n"
            ));
            let memory = GuardOptions {
                memory: true,
                ..opts.clone()
            };
            (open_guardian(&memory, Transport::Stdio, true)?, false)
        }
    };
    let text = match hook.transcript_path.as_deref() {
        Some(p) if !p.is_empty() => read_transcript(p).unwrap_or_else(|e| {
            note.push_str(&format!(
                "mnemo guardian: cannot read transcript {p}: {e}\n"
            ));
            String::new()
        }),
        _ => String::new(),
    };
    let (entries, bad) = match host {
        Host::ClaudeCode => claude::transcript_entries(&text),
        Host::Codex => codex::transcript_entries(&text),
    };
    let trigger = trigger_from_host(hook.trigger.as_deref().unwrap_or("auto"));
    let session_id = if hook.session_id.is_empty() {
        "unknown-session"
    } else {
        hook.session_id.as_str()
    };
    let request_id = fresh_request_id(session_id, entries.len());
    let (decision, recorded) = guardian.pre_compact_from_host(&HostCompaction {
        session_id,
        agent_id: match host {
            Host::ClaudeCode => "claude-code",
            Host::Codex => "codex",
        },
        request_id: &request_id,
        entries: &entries,
        trigger,
    });
    let recorded = match recorded {
        Ok(_) if !persistent => None,
        Ok(hash) => Some((request_id, mnemo_acs::chain::to_hex(&hash))),
        Err(e) => {
            note.push_str(&format!(
                "mnemo guardian: decision not recorded: {}\n",
                e.message
            ));
            None
        }
    };
    let mut output = render(host, style, &decision);
    output.stderr.insert_str(0, &note);
    Ok(HookRun {
        output,
        decision,
        entries: entries.len(),
        bad_lines: bad,
        recorded,
    })
}

/// The transcript, at most [`MAX_TRANSCRIPT`] bytes of it.
fn read_transcript(path: &str) -> std::io::Result<String> {
    let mut s = String::new();
    std::fs::File::open(path)?
        .take(MAX_TRANSCRIPT)
        .read_to_string(&mut s)?;
    Ok(s)
}

/// A fresh UUID-shaped id (version 4 layout) for one hook decision, from
/// the session, the clock, the process id and a per-process counter.
fn fresh_request_id(session: &str, entries: usize) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut h = Sha256::new();
    h.update(session.as_bytes());
    h.update(nanos.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    h.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    h.update((entries as u64).to_le_bytes());
    let mut b: mnemo_acs::chain::Hash = h.finalize().into();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let x = mnemo_acs::chain::to_hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &x[..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..32]
    )
}
