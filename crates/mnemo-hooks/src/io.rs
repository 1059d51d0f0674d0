//! The hooks' I/O edge: read the hook input on stdin and the transcript it
//! points to, ask the in-process Guardian (which records the decision and
//! its chain entry in the session store), render the host's answer.

use super::{BlockStyle, HookOutput, Host, claude, codex, parse_hook_input, render};
use crate::collapse::{Collapser, Limits};
use mnemo_acs::model::{Origin, Provenance, Trigger, Verdict};
use mnemo_guardian::decide::{Decision, EntryProvenance, worst_pending_entry};
use mnemo_guardian::policy::Policy;
use mnemo_guardian::protocol::{
    Guardian, HostCompaction, HostPostCompaction, HostPostRecord, Transport, trigger_from_host,
};
use mnemo_guardian_store::open::{DynStore, GuardOptions, OpenError as ServeError, open_guardian};
use sha2::{Digest, Sha256};
use std::io::Read;

/// Largest hook input read from stdin.
pub const MAX_HOOK_INPUT: u64 = 1 << 20;
/// Longest transcript line read; a longer one is not read (fail closed).
pub const MAX_LINE: usize = 64 << 20;
/// How far before the last compaction boundary the reader looks for the
/// messages it preserved.
pub const LOOKBACK: u64 = 64 << 20;
/// Step id (and source id) of transcript content the hook could not read.
pub const UNREAD: &str = "mnemo:transcript-unread";

/// How long after the hook started an allow waits for Claude Code's
/// transcript to stop growing: the host appends queued lines every 100 ms
/// (`FLUSH_INTERVAL_MS` in 2.1.197), so every line queued before the hook
/// ran is in the file by then, with room for a loaded machine.
pub const SETTLE: std::time::Duration = std::time::Duration::from_millis(250);

/// The quiet time before a re-read transcript is judged again.
const REREAD_QUIET: std::time::Duration = std::time::Duration::from_millis(150);

/// Re-reads of a transcript that keeps growing before what is still
/// unwritten counts as untrusted (fail closed).
const MAX_SETTLE_ROUNDS: usize = 8;

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

/// Whether the Guardian's dry decision (nothing recorded) on a Claude Code
/// compaction of `entries` is an allow.
fn dry_allows(
    guardian: &mut Guardian<DynStore>,
    session_id: &str,
    trigger: Trigger,
    entries: &[EntryProvenance],
) -> bool {
    let probe = HostCompaction {
        session_id,
        agent_id: "claude-code",
        request_id: "dry-run",
        entries,
        after: &[],
        trigger,
    };
    guardian.dry_pre_compact_from_host(&probe).verdict == Verdict::Allow
}

/// Runs a PreCompact hook: hook JSON from `input`, transcript from its path.
/// A transcript that cannot be read counts as empty (the answer says so on stderr).
pub fn run_pre_compact(
    host: Host,
    style: BlockStyle,
    opts: &GuardOptions,
    input: impl Read,
) -> Result<HookRun, ServeError> {
    run_pre_compact_with(host, style, opts, input, &mut std::thread::sleep)
}

/// [`run_pre_compact`] with the wait for a Claude Code transcript the host
/// is still writing ([`SETTLE`]) done by `sleep` (tests count the waits).
pub fn run_pre_compact_with(
    host: Host,
    style: BlockStyle,
    opts: &GuardOptions,
    input: impl Read,
    sleep: &mut dyn FnMut(std::time::Duration),
) -> Result<HookRun, ServeError> {
    run_pre_compact_keep(host, style, opts, input, sleep, None)
}

/// [`run_pre_compact_with`] that, given `keep`, leaves the transcript it
/// read whole in `keep` ([`Kept`], [`read_transcript_keep`]) for the trail
/// to read without reading the file again, and feeds `keep.extractor`
/// (when given) from the same parse as the mapping where an allow is
/// expected (a manual compaction under `manual_override`; elsewhere the
/// extractor is dropped). Nothing is left when the transcript was read
/// line by line, or more than once (a transcript the host was still
/// writing: the trail then reads the file itself).
pub fn run_pre_compact_keep(
    host: Host,
    style: BlockStyle,
    opts: &GuardOptions,
    input: impl Read,
    sleep: &mut dyn FnMut(std::time::Duration),
    mut keep: Option<&mut Kept>,
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
    // The shared read costs the Guardian more than its own (mnemo-trail's
    // parser reads more members): it is taken where the Guardian is
    // expected to allow, and so the trail to be built, a manual
    // compaction under `manual_override`. Either read decides alike.
    let expect_allow =
        hook.trigger.as_deref() == Some("manual") && guardian.policy().manual_override;
    if let Some(k) = keep.as_deref_mut()
        && !expect_allow
    {
        k.extractor = None;
    }
    let started = std::time::Instant::now();
    let mut g = gather(host, opts, &hook, guardian.policy(), keep.as_deref_mut());
    let session_id = if hook.session_id.is_empty() {
        "unknown-session"
    } else {
        hook.session_id.as_str()
    };
    // Claude Code queues transcript lines and appends them on a timer
    // (FLUSH_INTERVAL_MS = 100 in 2.1.197): lines the host queued just
    // before PreCompact (the Read result of the request that overflowed)
    // can still be missing from the file. A deny stands on what was read
    // (more lines can only add taint or a user turn the recorded prompt
    // already stands for); an allow is only given on a transcript that
    // stopped growing [`SETTLE`] after the hook started, unless no line
    // still to come could turn it into a deny: the allow stands with the
    // most restrictive entry the policy knows appended last
    // ([`worst_pending_entry`]; e.g. a manual compaction under
    // `manual_override`, or `on_untrusted = "allow"`). Then the lines not
    // read yet still belong in the summary's lineage: PostCompact reads
    // the transcript again ([`run_post_compact_record`]).
    if host == Host::ClaudeCode
        && let Some(p) = hook.transcript_path.as_deref().filter(|p| !p.is_empty())
    {
        let path = std::path::Path::new(p);
        let trigger = trigger_from_host(hook.trigger.as_deref().unwrap_or("auto"));
        let mut rounds = 0;
        loop {
            let worst = if rounds == 0 {
                worst_pending_entry(guardian.policy())
            } else {
                None
            };
            // Either order of the two dry decisions takes the same way
            // (a deny of the entries read, or an allow that stands with
            // the worst entry appended, ends the wait); the one expected
            // to end it goes first, so that one dry decision is taken.
            match worst {
                Some(worst) if expect_allow => {
                    g.entries.push(worst);
                    let stands = dry_allows(&mut guardian, session_id, trigger, &g.entries);
                    g.entries.pop();
                    if stands || !dry_allows(&mut guardian, session_id, trigger, &g.entries) {
                        break;
                    }
                }
                worst => {
                    if !dry_allows(&mut guardian, session_id, trigger, &g.entries) {
                        break;
                    }
                    if let Some(worst) = worst {
                        g.entries.push(worst);
                        let stands = dry_allows(&mut guardian, session_id, trigger, &g.entries);
                        g.entries.pop();
                        if stands {
                            break;
                        }
                    }
                }
            }
            let quiet = if rounds == 0 { SETTLE } else { REREAD_QUIET };
            let since = if rounds == 0 { started } else { g.read_at };
            if let Some(left) = quiet.checked_sub(since.elapsed()) {
                sleep(left);
            }
            if file_len(path) == g.len {
                break;
            }
            rounds += 1;
            if rounds > MAX_SETTLE_ROUNDS {
                g.notes.push_str(&format!(
                    "mnemo guardian: transcript {p} kept growing for {rounds} reads; what the host had not written counts as untrusted ({UNREAD})\n"
                ));
                g.entries.push(unread());
                break;
            }
            g = gather(host, opts, &hook, guardian.policy(), None);
            if let Some(k) = keep.as_deref_mut() {
                // The trail reads the file itself: what it was fed, and
                // the bytes, are of an earlier read.
                k.whole = false;
                k.fed = false;
            }
        }
    }
    note.push_str(&g.notes);
    let Gathered {
        entries,
        bad,
        pending,
        ..
    } = g;
    let trigger = trigger_from_host(hook.trigger.as_deref().unwrap_or("auto"));
    // Codex's pre-turn compaction runs before the user's message of the
    // turn is written: that message comes after the region (re-grounding,
    // never summarised), so a deny ends on the turn the user ends it.
    let after: Vec<EntryProvenance> = match (&hook.turn_id, hook.trigger.as_deref()) {
        (Some(turn), Some("auto"))
            if host == Host::Codex
                && hook.agent_id.is_none()
                && pending.iter().any(|p| p == turn) =>
        {
            vec![crate::entry(
                format!("turn:{turn}"),
                vec![(Origin::UserInput, Some("codex:user".to_string()))],
            )]
        }
        _ => Vec::new(),
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
        after: &after,
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

/// What one read of the hook's transcript gave.
struct Gathered {
    entries: Vec<EntryProvenance>,
    bad: usize,
    pending: Vec<String>,
    notes: String,
    /// The transcript's length when it was read (`None`: no file).
    len: Option<u64>,
    read_at: std::time::Instant,
}

/// The transcript's length in bytes (`None` when it cannot be read).
fn file_len(path: &std::path::Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// Reads the transcript the hook input points to into the entries about to
/// be compacted (plus, for Claude Code, the prompt recorded at
/// UserPromptSubmit that stands for a line the host has not written yet).
fn gather(
    host: Host,
    opts: &GuardOptions,
    hook: &crate::HookInput,
    policy: &Policy,
    keep: Option<&mut Kept>,
) -> Gathered {
    let mut notes = String::new();
    let read_at = std::time::Instant::now();
    let Some(p) = hook.transcript_path.as_deref().filter(|p| !p.is_empty()) else {
        let g = Gathered {
            entries: Vec::new(),
            bad: 0,
            pending: Vec::new(),
            notes,
            len: None,
            read_at,
        };
        return g;
    };
    let path = std::path::Path::new(p);
    let len = file_len(path);
    let mut t = read_transcript_keep(
        host,
        path,
        MAX_LINE,
        LOOKBACK,
        Some((policy, Limits::default())),
        keep,
    );
    for why in &t.problems {
        notes.push_str(&format!(
            "mnemo guardian: cannot read transcript {p} whole ({why}); what was not read counts as untrusted ({UNREAD})\n"
        ));
    }
    if host == Host::ClaudeCode {
        crate::trail_hook::link_prior_compaction(
            opts,
            &hook.session_id,
            path,
            t.boundary,
            &mut t.entries,
        );
    }
    if t.folded > 0 {
        notes.push_str(&format!(
            "mnemo guardian: transcript {p}: the region to compact holds {} entries; {} of them were folded into collapsed entries ({}…) to keep memory bounded: the verdict, the earliest untrusted step and the last re-grounding are the whole region's, the decision's counts count a collapsed entry once\n",
            t.represented,
            t.folded,
            crate::collapse::COLLAPSED
        ));
    }
    let transcript_read = t.problems.is_empty();
    let mut entries = t.entries;
    // Claude Code writes transcript lines asynchronously: the reactive auto
    // compaction of the turn the user's message overflowed can run before
    // that message's line is written. The prompt recorded at
    // UserPromptSubmit (the user's own words, this very turn, no line of the
    // turn written yet) stands for that line, where the host puts it: last
    // in the region it compacts ([`crate::prompt`]). A manual /compact
    // never takes this path.
    if host == Host::ClaudeCode
        && hook.trigger.as_deref() == Some("auto")
        && transcript_read
        && let Some(pid) = hook.prompt_id.as_deref()
        && t.last_prompt_id.as_deref() != Some(pid)
        && crate::prompt::typed_prompt(opts, &hook.session_id, pid).is_some()
    {
        entries.push(crate::entry(
            format!("prompt:{pid}"),
            vec![(Origin::UserInput, Some("claude-code:user".to_string()))],
        ));
    }
    Gathered {
        entries,
        bad: t.bad,
        pending: t.pending_user_turns,
        notes,
        len,
        read_at,
    }
}

/// Result of one PostCompact recording.
#[derive(Debug, Clone)]
pub struct PostRecord {
    /// What the Guardian recorded (the summary's provenance and trust).
    pub record: HostPostRecord,
    /// The step id and chain hash (hex) it was recorded under; `None`
    /// when nothing was persisted (`--memory`, or a broken store).
    pub recorded: Option<(String, String)>,
    /// Notes for stderr.
    pub notes: String,
}

/// Records a host's compaction as `steps/postCompact` (PostCompact hook
/// input in `buf`): the summary is `agent_generated`, derived from the
/// provenance ids of the entries the last allowed PreCompact of the
/// session judged, so that trust carries across the compaction. Codex: the
/// summary's id is [`codex::summary_id`] of the last `compacted` line's
/// `message` (read from the end of the transcript); the next PreCompact
/// derives the summary in the transcript from the same id. A summary
/// whose line cannot be read gets an id no transcript names (its lineage
/// is then unknown: untrusted by default). Claude Code: `compact_summary`
/// (the caller's side; see `claude.rs`); the transcript is read again and
/// what it holds joins the lineage (an allow that no pending line could
/// turn answers before the host wrote every queued line; docs/guardian.md
/// "Which allows wait").
pub fn run_post_compact_record(
    host: Host,
    opts: &GuardOptions,
    buf: &[u8],
) -> Result<PostRecord, ServeError> {
    let hook = parse_hook_input(buf)
        .map_err(|e| ServeError::Config(format!("hook input on stdin is not valid JSON: {e}")))?;
    let mut notes = String::new();
    let (mut guardian, persistent) = match open_guardian(opts, Transport::Stdio, true) {
        Ok(g) => (g, !opts.memory),
        Err(
            e @ (ServeError::Policy { .. } | ServeError::PolicyRead { .. } | ServeError::Config(_)),
        ) => return Err(e),
        Err(e) => {
            notes.push_str(&format!(
                "mnemo guardian: session store unavailable, compaction not recorded: {e}\n"
            ));
            let memory = GuardOptions {
                memory: true,
                ..opts.clone()
            };
            (open_guardian(&memory, Transport::Stdio, true)?, false)
        }
    };
    let session_id = if hook.session_id.is_empty() {
        "unknown-session"
    } else {
        hook.session_id.as_str()
    };
    let request_id = fresh_request_id(session_id, 0);
    let (prefix, unknown) = match host {
        Host::ClaudeCode => ("claude-code", claude::PRIOR_COMPACTION),
        Host::Codex => ("codex", codex::PRIOR_COMPACTION),
    };
    let message = match (host, hook.transcript_path.as_deref()) {
        (Host::Codex, Some(p)) if !p.is_empty() => {
            match last_compacted_message(std::path::Path::new(p)) {
                Ok(Some(m)) => Some(m),
                Ok(None) => {
                    notes.push_str(&format!(
                        "mnemo guardian: no compacted line in {p}; the summary's lineage cannot be linked\n"
                    ));
                    None
                }
                Err(e) => {
                    notes.push_str(&format!(
                        "mnemo guardian: cannot read {p} ({e}); the summary's lineage cannot be linked\n"
                    ));
                    None
                }
            }
        }
        _ => None,
    };
    let summary_id = match (&message, host) {
        (Some(m), _) => codex::summary_id(m),
        // Claude Code's summary line is linked to this id by its place in
        // the transcript (trail_hook::Lineage), not by its text.
        (None, Host::ClaudeCode) => format!("{prefix}:summary:{request_id}"),
        (None, Host::Codex) => format!("{prefix}:summary:unlinked-{request_id}"),
    };
    // Claude Code: the transcript again. An allow that no pending line
    // could turn into a deny answers without waiting for the host's write
    // queue, so lines queued before PreCompact may be missing from what it
    // judged; by PostCompact they are written (and the boundary and summary
    // lines are not yet). What was compacted is a subset of what the region
    // holds now: the union of both is the summary's lineage.
    let transcript: Vec<Provenance> = match host {
        Host::ClaudeCode
            if hook
                .transcript_path
                .as_deref()
                .is_some_and(|p| !p.is_empty()) =>
        {
            let g = gather(host, opts, &hook, guardian.policy(), None);
            notes.push_str(&g.notes);
            g.entries.into_iter().flat_map(|e| e.provenance).collect()
        }
        _ => Vec::new(),
    };
    let (record, recorded) = guardian.post_compact_from_host(&HostPostCompaction {
        session_id,
        agent_id: prefix,
        request_id: &request_id,
        summary_id: &summary_id,
        summary_source: &format!("{prefix}:compact-summary"),
        unknown_lineage: unknown,
        transcript: &transcript,
    });
    let recorded = match recorded {
        Ok(_) if !persistent => None,
        Ok(hash) => Some((request_id, mnemo_acs::chain::to_hex(&hash))),
        Err(e) => {
            notes.push_str(&format!(
                "mnemo guardian: compaction not recorded: {}\n",
                e.message
            ));
            None
        }
    };
    if record.pre_compact.is_none() {
        notes.push_str(&format!("mnemo guardian: {}\n", record.reasoning));
    }
    Ok(PostRecord {
        record,
        recorded,
        notes,
    })
}

/// The `message` of the last Codex `compacted` line of a rollout, read
/// from the end (bounded by [`MAX_LINE`]).
pub fn last_compacted_message(path: &std::path::Path) -> std::io::Result<Option<String>> {
    use std::io::{BufRead, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    let Some(start) = last_boundary(&mut file, b"\"compacted\"", Host::Codex)? else {
        return Ok(None);
    };
    file.seek(SeekFrom::Start(start))?;
    let mut line = Vec::new();
    std::io::BufReader::new(&mut file)
        .take(MAX_LINE as u64)
        .read_until(b'\n', &mut line)?;
    let v: serde_json::Value = serde_json::from_slice(&line)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let payload = v.get("payload").unwrap_or(&v);
    Ok(payload
        .get("message")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string))
}

/// What was read of a transcript.
#[derive(Debug, Default)]
pub struct Transcript {
    /// The entries a compaction now would fold, oldest first; content that
    /// could not be read is an [`UNREAD`] entry (origin `external`) where it was.
    pub entries: Vec<EntryProvenance>,
    /// Lines that were not JSON.
    pub bad: usize,
    /// Why the transcript could not be read whole (empty when it was).
    pub problems: Vec<String>,
    /// Byte offset the forward read started at.
    pub start: u64,
    /// Byte offset of the last compaction boundary line, if any.
    pub boundary: Option<u64>,
    /// Codex: turns a user started whose message is not written yet
    /// ([`codex::Mapper::pending_user_turn`]).
    pub pending_user_turns: Vec<String>,
    /// Claude Code: `promptId` of the last line that carried one (the
    /// newest user turn written to the transcript).
    pub last_prompt_id: Option<String>,
    /// Transcript entries folded into collapsed entries (bounded memory,
    /// [`crate::collapse`]); 0 when nothing was.
    pub folded: usize,
    /// Transcript entries that `entries` stand for.
    pub represented: usize,
}

fn unread() -> EntryProvenance {
    crate::entry(
        UNREAD.to_string(),
        vec![(Origin::External, Some(UNREAD.to_string()))],
    )
}

enum AnyMapper {
    Claude(claude::Mapper),
    Codex(codex::Mapper),
}

impl AnyMapper {
    fn line(&mut self, line: &str, n: usize) {
        match self {
            AnyMapper::Claude(m) => m.line(line, n),
            AnyMapper::Codex(m) => m.line(line, n),
        }
    }

    fn collapse(&mut self, c: &mut Collapser<'_>) {
        match self {
            AnyMapper::Claude(m) => m.collapse(c),
            AnyMapper::Codex(m) => m.collapse(c),
        }
    }
}

/// Reads a transcript from its end: finds the last compaction boundary
/// (Claude Code `compact_boundary`, Codex `compacted`) scanning backwards,
/// then maps lines forward from there (Claude Code: from up to
/// [`LOOKBACK`] bytes before it, for the messages it preserved). Memory is
/// bounded by the longest line ([`MAX_LINE`]) and the entries of the region,
/// not by the file. Whatever cannot be read (the file, a line over the
/// limit, an I/O error, preserved messages not found) is an [`UNREAD`] entry,
/// so the policy treats it as untrusted: fail closed, with the reason.
///
/// This form holds every entry of the region; [`read_transcript_for`] (what
/// the hooks use) also folds long regions under the policy that decides.
pub fn read_transcript(host: Host, path: &std::path::Path) -> Transcript {
    read_transcript_with(host, path, MAX_LINE, LOOKBACK)
}

/// [`read_transcript`] in bounded memory whatever the region's length:
/// once the region holds [`Limits::default`] entries, runs the decision
/// does not read one by one are folded ([`crate::collapse`]) with trust as
/// `policy` decides it.
pub fn read_transcript_for(host: Host, path: &std::path::Path, policy: &Policy) -> Transcript {
    read_transcript_limits(
        host,
        path,
        MAX_LINE,
        LOOKBACK,
        Some((policy, Limits::default())),
    )
}

/// [`read_transcript`] with its limits given (tests use small ones).
pub fn read_transcript_with(
    host: Host,
    path: &std::path::Path,
    max_line: usize,
    lookback: u64,
) -> Transcript {
    read_transcript_limits(host, path, max_line, lookback, None)
}

/// The reader with every limit given: the longest line, the look-back
/// before the last boundary, and (optionally) collapsing under a policy.
pub fn read_transcript_limits(
    host: Host,
    path: &std::path::Path,
    max_line: usize,
    lookback: u64,
    collapse: Option<(&Policy, Limits)>,
) -> Transcript {
    read_transcript_keep(host, path, max_line, lookback, collapse, None)
}

/// Largest transcript read whole into memory (one read, one buffer of the
/// file's size, for the boundary scan, the Guardian's lines and the
/// trail); a larger one is read line by line in bounded memory, and the
/// trail reads it again.
pub const KEEP_MAX_BYTES: u64 = 16 << 20;

/// What one read of a transcript leaves for the trail
/// ([`read_transcript_keep`]).
#[derive(Debug, Default)]
pub struct Kept {
    /// The file as read whole (when [`Kept::whole`]): the trail reads its
    /// lines from here, not from the file again.
    pub bytes: Vec<u8>,
    /// Whether the last read read the file whole into `bytes`.
    pub whole: bool,
    /// Given, a Claude Code transcript read whole whose region starts at
    /// its first byte has each line parsed once, by mnemo-trail's parser,
    /// for the mapping ([`claude::Mapper::line_parsed`]) and for this
    /// extractor, which is fed every line of the file in order.
    pub extractor: Option<mnemo_trail::Extractor>,
    /// Whether the last read fed `extractor` every line of the file.
    pub fed: bool,
}

/// [`read_transcript_limits`] that reads a transcript of at most
/// [`KEEP_MAX_BYTES`] (and `max_line`) whole, once, into one buffer of its
/// size (into `keep.bytes` when given, for the trail), and maps its lines
/// from there; a larger one is read line by line. Given `keep` with an
/// extractor (Claude Code, region from the first byte), each line is
/// parsed once for the mapping and the extractor ([`Kept`]). Either way
/// the transcript read is the same.
pub fn read_transcript_keep(
    host: Host,
    path: &std::path::Path,
    max_line: usize,
    lookback: u64,
    collapse: Option<(&Policy, Limits)>,
    keep: Option<&mut Kept>,
) -> Transcript {
    let mut collapser = collapse.map(|(p, l)| Collapser::new(p, l));
    let mut t = Transcript::default();
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            t.problems.push(e.to_string());
            t.entries.push(unread());
            return t;
        }
    };
    let mut local = Vec::new();
    let (buf, extractor, mut kept_flags) = match keep {
        Some(k) => {
            k.whole = false;
            k.fed = false;
            (
                &mut k.bytes,
                k.extractor.as_mut(),
                Some((&mut k.whole, &mut k.fed)),
            )
        }
        None => (&mut local, None, None),
    };
    let whole = read_small(&mut file, buf, KEEP_MAX_BYTES.min(max_line as u64));
    let (pattern, lookback): (&[u8], u64) = match host {
        Host::ClaudeCode => (b"\"compact_boundary\"", lookback),
        Host::Codex => (b"\"compacted\"", 0),
    };
    let boundary = match whole {
        Some(bytes) => Ok(last_boundary_in(bytes, pattern, host)),
        None => last_boundary(&mut file, pattern, host),
    };
    let boundary = match boundary {
        Ok(b) => b,
        Err(e) => {
            t.problems
                .push(format!("looking for the last compaction: {e}"));
            t.entries.push(unread());
            return t;
        }
    };
    let start = match boundary {
        Some(b) if b > lookback => b - lookback,
        _ => 0,
    };
    t.start = start;
    t.boundary = boundary;
    let mut mapper = match host {
        Host::ClaudeCode => AnyMapper::Claude(claude::Mapper::new()),
        Host::Codex => AnyMapper::Codex(codex::Mapper::new()),
    };
    let mut problems = Vec::new();
    let mut lineno = 0usize;
    // Nothing is folded before the reader has passed the last boundary
    // (entries before it may be named as preserved by it).
    let fold_from = boundary.map_or(0, |b| b + 1);
    if let Some(bytes) = whole {
        if let Some(flags) = kept_flags.as_mut() {
            *flags.0 = true;
        }
        match (&mut mapper, extractor) {
            (AnyMapper::Claude(m), Some(x)) if start == 0 => {
                // Each line parsed once, for the mapping and the trail.
                let mut pos = 0usize;
                for raw in lines_of(bytes) {
                    pos += raw.len();
                    lineno += 1;
                    match std::str::from_utf8(raw) {
                        Ok(s) if !s.trim().is_empty() => match mnemo_trail::parse::parse_line(s) {
                            Ok(p) => {
                                m.line_parsed(s, Some(&p), lineno);
                                x.push_parsed_line(&p);
                            }
                            Err(_) => {
                                m.line_parsed(s, None, lineno);
                                x.push_bytes(raw);
                            }
                        },
                        Ok(_) => x.push_bytes(raw),
                        Err(_) => {
                            m.line("\u{0}", lineno);
                            x.push_bytes(raw);
                        }
                    }
                    if pos as u64 > fold_from
                        && let Some(c) = collapser.as_mut()
                    {
                        m.collapse(c);
                    }
                }
                if let Some(flags) = kept_flags.as_mut() {
                    *flags.1 = true;
                }
            }
            _ => {
                let start = start as usize;
                lineno += memchr::memchr_iter(b'\n', &bytes[..start]).count();
                let mut first = start > 0 && boundary != Some(start as u64);
                let mut pos = start;
                for raw in lines_of(&bytes[start..]) {
                    pos += raw.len();
                    lineno += 1;
                    if std::mem::take(&mut first) {
                        // The look-back starts inside a line: not a whole line.
                        continue;
                    }
                    match std::str::from_utf8(raw) {
                        Ok(s) => mapper.line(s, lineno),
                        Err(_) => mapper.line("\u{0}", lineno),
                    }
                    if pos as u64 > fold_from
                        && let Some(c) = collapser.as_mut()
                    {
                        mapper.collapse(c);
                    }
                }
            }
        }
    } else if let Err(e) = read_lines(
        &mut file,
        (start, boundary, fold_from, max_line),
        &mut lineno,
        &mut mapper,
        &mut collapser,
        &mut problems,
    ) {
        problems.push((usize::MAX, format!("read error after line {lineno}: {e}")));
    }
    let (mut entries, bad) = match mapper {
        AnyMapper::Claude(m) => {
            t.last_prompt_id = m.last_prompt_id().map(str::to_string);
            let missing = m.missing_preserved().len();
            let first_missing = m.missing_preserved().first().cloned();
            let (mut e, bad) = m.finish();
            if let Some(u) = first_missing {
                t.problems.push(format!(
                    "{missing} message(s) the last compaction preserved (first {u}) are not in the {} bytes before it",
                    if start > 0 { lookback.to_string() } else { "whole file".into() }
                ));
                e.insert(0, unread());
            }
            (e, bad)
        }
        AnyMapper::Codex(m) => {
            t.pending_user_turns = m.pending_user_turns();
            m.finish()
        }
    };
    if !problems.is_empty() {
        // Fail closed at the end (a re-grounding before it does not end it).
        entries.push(unread());
        t.problems.extend(problems.into_iter().map(|(_, why)| why));
    }
    if let Some(c) = &collapser {
        t.folded = c.stats().folded;
        t.represented = c.represented(&entries);
    } else {
        t.represented = entries.len();
    }
    t.entries = entries;
    t.bad = bad;
    t
}

/// The lines of `bytes`, each with its `\n` (the last one without, when
/// the bytes do not end with one), found with `memchr` (a byte-by-byte
/// `split_inclusive` cost ~2 M instructions on a 350 KB transcript).
pub fn lines_of(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        if pos >= bytes.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i + 1);
        let line = &bytes[pos..end];
        pos = end;
        Some(line)
    })
}

/// The line-by-line read of a transcript too large to read whole: the
/// lines from `start` (line numbers of the part before it counted, not
/// parsed), a line over `max_line` skipped and named in `problems`.
fn read_lines(
    file: &mut std::fs::File,
    (start, boundary, fold_from, max_line): (u64, Option<u64>, u64, usize),
    lineno: &mut usize,
    mapper: &mut AnyMapper,
    collapser: &mut Option<Collapser<'_>>,
    problems: &mut Vec<(usize, String)>,
) -> std::io::Result<()> {
    use std::io::{BufRead, Seek, SeekFrom};
    file.seek(SeekFrom::Start(0))?;
    let mut counter = std::io::BufReader::with_capacity(1 << 16, &mut *file);
    let mut left = start;
    while left > 0 {
        let buf = counter.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len().min(left as usize);
        *lineno += memchr::memchr_iter(b'\n', &buf[..n]).count();
        counter.consume(n);
        left -= n as u64;
    }
    drop(counter);
    file.seek(SeekFrom::Start(start))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, &mut *file);
    let mut line = Vec::new();
    let mut first = start > 0 && boundary != Some(start);
    let mut pos = start;
    loop {
        line.clear();
        let n = (&mut reader)
            .take(max_line as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        pos += n as u64;
        *lineno += 1;
        if line.len() > max_line && line.last() != Some(&b'\n') {
            // Skip the rest of the line without keeping it.
            loop {
                let buf = reader.fill_buf()?;
                if buf.is_empty() {
                    break;
                }
                match memchr::memchr(b'\n', buf) {
                    Some(i) => {
                        reader.consume(i + 1);
                        break;
                    }
                    None => {
                        let k = buf.len();
                        reader.consume(k);
                    }
                }
            }
            let at = *lineno;
            problems.push((at, format!("line {at} is over {max_line} bytes")));
            continue;
        }
        if std::mem::take(&mut first) {
            // The look-back starts inside a line: not a whole line.
            continue;
        }
        match std::str::from_utf8(&line) {
            Ok(s) => mapper.line(s, *lineno),
            Err(_) => mapper.line("\u{0}", *lineno),
        }
        if pos > fold_from
            && let Some(c) = collapser.as_mut()
        {
            mapper.collapse(c);
        }
    }
    Ok(())
}

/// The whole file in `buf` when it is at most `max` bytes long (`None`:
/// longer, or it could not be read whole: the caller reads it line by line).
fn read_small<'b>(file: &mut std::fs::File, buf: &'b mut Vec<u8>, max: u64) -> Option<&'b [u8]> {
    use std::io::{Seek, SeekFrom};
    let len = file.metadata().ok()?.len();
    if len > max {
        return None;
    }
    buf.clear();
    buf.reserve_exact(len as usize + 1);
    let ok = file.by_ref().take(max + 1).read_to_end(buf).is_ok() && buf.len() as u64 <= max;
    if !ok {
        file.seek(SeekFrom::Start(0)).ok()?;
        return None;
    }
    Some(&buf[..])
}

/// Whether a Claude Code `compact_boundary` line starts in `from..to` of
/// the file (a range over 64 MiB counts as holding one: not scanned).
pub fn claude_boundary_between(
    path: &std::path::Path,
    from: u64,
    to: u64,
) -> std::io::Result<bool> {
    use std::io::{Seek, SeekFrom};
    if to <= from {
        return Ok(false);
    }
    if to - from > 64 << 20 {
        return Ok(true);
    }
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(from))?;
    let mut buf = vec![0u8; (to - from) as usize];
    f.read_exact(&mut buf)?;
    Ok(memchr::memmem::find(&buf, b"\"compact_boundary\"").is_some())
}

/// Byte offset of the start of the last line holding `pattern` (not
/// escaped inside a string) that is a compaction line of the host.
fn last_boundary(
    file: &mut std::fs::File,
    pattern: &[u8],
    host: Host,
) -> std::io::Result<Option<u64>> {
    use std::io::{Seek, SeekFrom};
    let len = file.metadata()?.len();
    let finder = memchr::memmem::Finder::new(pattern);
    let mut end = len;
    let mut buf = vec![0u8; (BOUNDARY_CHUNK.min(len) as usize) + pattern.len()];
    while end > 0 {
        let begin = end.saturating_sub(BOUNDARY_CHUNK);
        // Overlap the next chunk by the pattern's length.
        let stop = (end + pattern.len() as u64).min(len);
        let n = (stop - begin) as usize;
        file.seek(SeekFrom::Start(begin))?;
        file.read_exact(&mut buf[..n])?;
        let hay = &buf[..n];
        let mut found: Vec<usize> = finder.find_iter(hay).collect();
        found.retain(|&i| (begin + i as u64) < end);
        for &i in found.iter().rev() {
            if i > 0 && hay[i - 1] == b'\\' {
                continue;
            }
            let at = begin + i as u64;
            let line_start = line_start(file, at)?;
            if is_boundary_line(file, line_start, host)? {
                return Ok(Some(line_start));
            }
        }
        end = begin;
    }
    Ok(None)
}

/// How much of the file [`last_boundary`] scans at a time, from the end.
const BOUNDARY_CHUNK: u64 = 1 << 20;

/// [`last_boundary`] of a file read whole into `bytes` (at most
/// [`KEEP_MAX_BYTES`], under [`MAX_LINE`]): the same scan, chunk by chunk
/// from the end, on the bytes in memory.
fn last_boundary_in(bytes: &[u8], pattern: &[u8], host: Host) -> Option<u64> {
    let chunk = BOUNDARY_CHUNK as usize;
    let len = bytes.len();
    let finder = memchr::memmem::Finder::new(pattern);
    let mut end = len;
    while end > 0 {
        let begin = end.saturating_sub(chunk);
        let stop = (end + pattern.len()).min(len);
        let hay = &bytes[begin..stop];
        let found: Vec<usize> = finder.find_iter(hay).filter(|&i| begin + i < end).collect();
        for &i in found.iter().rev() {
            if i > 0 && hay[i - 1] == b'\\' {
                continue;
            }
            let at = begin + i;
            let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |j| j + 1);
            let line = &bytes[start..];
            let line = memchr::memchr(b'\n', line).map_or(line, |j| &line[..=j]);
            if is_boundary_bytes(line, host) {
                return Some(start as u64);
            }
        }
        end = begin;
    }
    None
}

fn line_start(file: &mut std::fs::File, at: u64) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut pos = at;
    let mut buf = vec![0u8; 64 << 10];
    while pos > 0 {
        let begin = pos.saturating_sub(buf.len() as u64);
        let n = (pos - begin) as usize;
        file.seek(SeekFrom::Start(begin))?;
        file.read_exact(&mut buf[..n])?;
        if let Some(i) = memchr::memrchr(b'\n', &buf[..n]) {
            return Ok(begin + i as u64 + 1);
        }
        if at - begin > MAX_LINE as u64 {
            break;
        }
        pos = begin;
    }
    Ok(pos)
}

fn is_boundary_line(file: &mut std::fs::File, start: u64, host: Host) -> std::io::Result<bool> {
    use std::io::{BufRead, Seek, SeekFrom};
    file.seek(SeekFrom::Start(start))?;
    let mut line = Vec::new();
    std::io::BufReader::new(&mut *file)
        .take(MAX_LINE as u64)
        .read_until(b'\n', &mut line)?;
    Ok(is_boundary_bytes(&line, host))
}

/// Whether a line is a compaction line of the host (Claude Code: `system`
/// / `compact_boundary`; Codex: `compacted`).
fn is_boundary_bytes(line: &[u8], host: Host) -> bool {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(rename = "type", borrow, default)]
        kind: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow, default)]
        subtype: Option<std::borrow::Cow<'a, str>>,
    }
    let Ok(h) = serde_json::from_slice::<Head<'_>>(line) else {
        return false;
    };
    match host {
        Host::ClaudeCode => {
            h.kind.as_deref() == Some("system") && h.subtype.as_deref() == Some("compact_boundary")
        }
        Host::Codex => h.kind.as_deref() == Some("compacted"),
    }
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
