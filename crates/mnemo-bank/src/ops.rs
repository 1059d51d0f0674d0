//! The bank commands: gate (C1–C3), feature-complete (C4), sprint-close
//! (C5), compress (C6), trim (C7), handoff, doctor and init.
//!
//! mnemo-bank decides nothing: every command that writes loads the scrubber
//! (fail closed), takes the lock, recovers an interrupted commit, reads the
//! files the plan names, hands them to the pure plan of
//! [`mnemo_compress::plan`] (which computes every new file and scrubs what
//! it generated), and commits all files at once. A command that fails
//! writes nothing.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use mnemo_compress::gatelog;
use mnemo_compress::plan::{self, BankTexts, FileChange, FileText, GateRequest, PlanError};
use mnemo_compress::preflight::ArtifactType;
use mnemo_compress::render::{self, EntryKey, handoff_prompt};
use mnemo_compress::xref::RefId;
use mnemo_compress::{NextIds, XrefIndex};
use mnemo_guardian::decide::{EntryProvenance, check_compaction};
use mnemo_guardian::model::{Origin as GOrigin, Provenance as GProvenance, Trigger};
use mnemo_guardian::policy::Policy;
use mnemo_guardian_server::client::RemoteGuardian;
use mnemo_guardian_server::{posture, trace};
use mnemo_model::{Config, Format, SummaryRecord, parse_records};
use mnemo_score::Engine;
use mnemo_scrub::Scrubber;
use serde::Serialize;

pub use mnemo_compress::plan::{
    DroppedField, EntryOutcome, batch_feature, infer_agent, provenance_comment,
};

use crate::layout::{
    ACTIVE_CONTEXT, Bank, JOURNAL, LOCK_FILE, NEXT_ID, PROGRESS_LOG, TMP_DIR, XREF_INDEX, is_zz,
    zz_path,
};
use crate::txn::{self, BankLock, Change, Recovery, is_own_temp};
use crate::{BankError, Result};

/// Default wait for the bank lock.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(120);

fn scrubber() -> Result<&'static Scrubber> {
    Scrubber::default_rules().map_err(|e| BankError::Scrubber(e.to_string()))
}

fn clean(s: &Scrubber, text: &str) -> String {
    s.scrub(text).text
}

/// Takes the lock and recovers any interrupted commit.
pub fn open_locked(bank: &Bank, timeout: Duration) -> Result<(BankLock, Recovery)> {
    let lock = txn::lock(bank, timeout)?;
    let rec = txn::recover(bank, &lock)?;
    Ok((lock, rec))
}

/// Creates an empty bank at `root` (directories and the four files), never
/// replacing a file that exists. Returns the bank-relative paths created.
pub fn init_bank(root: &Path) -> Result<Vec<String>> {
    std::fs::create_dir_all(root).map_err(|e| BankError::io(root, e))?;
    let bank = Bank::new(root);
    let s = scrubber()?;
    let (lock, _) = open_locked(&bank, LOCK_TIMEOUT)?;
    let files = [
        (
            ACTIVE_CONTEXT,
            format!(
                "{}\n## {}\n\n",
                plan::ACTIVE_CONTEXT_NEW,
                crate::layout::COMPLETED_PHASES
            ),
        ),
        (PROGRESS_LOG, plan::PROGRESS_LOG_NEW.to_string()),
        (XREF_INDEX, XrefIndex::empty().render()),
        (NEXT_ID, NextIds::default().render()),
    ];
    let mut changes = Vec::new();
    for (rel, content) in files {
        if !bank.path(rel).exists() {
            changes.push(Change::Write {
                rel: rel.to_string(),
                content: clean(s, &content),
            });
        }
    }
    let dir = bank.path("_notes/archive");
    std::fs::create_dir_all(&dir).map_err(|e| BankError::io(&dir, e))?;
    txn::commit(&bank, &lock, &changes)
}

/// One summary input: its name (a path) and its text.
#[derive(Debug, Clone)]
pub struct Input {
    /// Name used in messages.
    pub name: String,
    /// The text.
    pub text: String,
}

/// Options of a gate.
#[derive(Debug, Clone)]
pub struct GateOptions {
    /// Phase label (`1`, `2a`).
    pub phase: String,
    /// Sending agents.
    pub from: Vec<String>,
    /// Receiving agents.
    pub to: Vec<String>,
    /// Planned phases of the feature.
    pub phases: Option<u32>,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Feature name (By Feature row of the index).
    pub feature: Option<String>,
    /// The Guardian's policy (in process).
    pub policy: Policy,
    /// A remote Guardian (`mnemo guard http`) to ask instead of deciding in
    /// process; when it gives no usable answer, `config.guardian_client`'s
    /// postures decide (default: nothing is compacted), and every
    /// consultation is a line of [`GUARDIAN_AUDIT`].
    pub guardian_url: Option<String>,
    /// TLS files for an `https://` `guardian_url`.
    pub guardian_tls: mnemo_guardian_server::client::ClientTls,
    /// A remote Guardian that speaks stdio (`mnemo guard stdio`): its
    /// command as argv (program first, no shell), run as a child process
    /// for the gate's session; exclusive with `guardian_url`, and fails
    /// closed the same way.
    pub guardian_cmd: Option<Vec<String>>,
    /// No note on stderr when the trace export of a consultation fails
    /// (the audit line's `trace_export` still says so).
    pub trace_quiet: bool,
    /// What triggered the compaction.
    pub trigger: Trigger,
    /// Lock wait.
    pub lock_timeout: Duration,
}

/// What a gate did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GateReport {
    /// The §9 confirmation line.
    pub confirmation: String,
    /// Entries compressed.
    pub entries: usize,
    /// Cross-refs newly added to the index.
    pub xrefs_added: usize,
    /// Records the preflight skipped, with reasons.
    pub skipped: Vec<String>,
    /// Budget flags (overflow, escalation, overrun).
    pub flags: Vec<String>,
    /// The C7 log line when the section went over its cap.
    pub trim: Option<String>,
    /// Files that changed (bank-relative).
    pub changed: Vec<String>,
    /// What recovery did first.
    pub recovery: Recovery,
    /// `## Completed Phases` entries: new, unchanged (same key and hash)
    /// and updated (same key, other hash); a re-run reports 0 new.
    pub upsert: mnemo_compress::completed::UpsertReport,
    /// The feature the By Feature rows were written under: `--feature`,
    /// else the records' own `feature` when they all name the same one.
    pub feature: Option<String>,
    /// Fields Layer 1 refused to promote (`src:line: field`), as `score`
    /// reports them.
    pub dropped: Vec<String>,
    /// The same fields, one record each (`gate --json`).
    pub dropped_fields: Vec<DroppedField>,
    /// CRITICAL entries compressed.
    pub critical: usize,
    /// HIGH entries compressed.
    pub high: usize,
    /// Every record of the batch, in input order: key, band, score, lines,
    /// tokens and what happened to it (`gate --json`).
    pub outcomes: Vec<EntryOutcome>,
    /// Set when the gate compacted without a decision of its remote
    /// Guardian (a posture `proceed`): the warning to print.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guardian_warning: Option<String>,
}

impl GateReport {
    /// What changed in `## Completed Phases`: `0 new entries, 3 unchanged`
    /// (`, 1 updated` when one was).
    pub fn change_line(&self) -> String {
        let u = self.upsert;
        let mut s = format!(
            "{} new entr{}, {} unchanged",
            u.added,
            if u.added == 1 { "y" } else { "ies" },
            u.skipped
        );
        if u.replaced > 0 {
            s.push_str(&format!(", {} updated", u.replaced));
        }
        s
    }
}

/// The Guardian's view of the records: each record is an entry; without
/// provenance (or without origins) it is the orchestrator's own (`system`).
pub fn entry_provenance(records: &[(String, SummaryRecord)]) -> Vec<EntryProvenance> {
    records
        .iter()
        .enumerate()
        .map(|(i, (src, r))| {
            let step = format!("{src}#{}", i + 1);
            match &r.provenance {
                Some(p) if !p.origins.is_empty() => EntryProvenance {
                    step_id: step.clone(),
                    provenance: p
                        .origins
                        .iter()
                        .map(|o| GProvenance::new(format!("{step}:{}", o.as_str()), *o, None))
                        .collect(),
                },
                _ => EntryProvenance::single(
                    step.clone(),
                    GProvenance::new(format!("{step}:system"), GOrigin::System, Some("mnemo")),
                ),
            }
        })
        .collect()
}

/// Layer 2 scrub of every text field of a record.
pub fn scrub_record(s: &Scrubber, r: &mut SummaryRecord) {
    plan::scrub_record(&|t: &str| clean(s, t), r);
}

fn check_args(phase: &str, date: &str, feature: Option<&str>) -> Result<()> {
    if !crate::layout::is_phase_label(phase) {
        return Err(BankError::Refused(format!(
            "phase {phase:?} cannot name a file: use letters, digits, `.`, `_`, `+` or `-`"
        )));
    }
    if !crate::layout::is_date(date) {
        return Err(BankError::Refused(format!(
            "date {date:?} is not YYYY-MM-DD"
        )));
    }
    if let Some(f) = feature
        && !crate::layout::is_feature_name(f)
    {
        return Err(BankError::Refused(format!(
            "feature {f:?} cannot name a directory"
        )));
    }
    Ok(())
}

/// Refuses a summary with a NUL byte (it is binary, or corrupt: written
/// raw, it would corrupt the progress log), naming its line and column.
pub fn check_text(name: &str, text: &str) -> Result<()> {
    if let Some(at) = text.find('\0') {
        let line = text[..at].matches('\n').count() + 1;
        let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
        return Err(BankError::invalid(
            name,
            Some(line),
            format!(
                "column {col}: NUL byte in a summary (binary or corrupt input); nothing was written"
            ),
        ));
    }
    Ok(())
}

/// Refuses a summary over `budget.max_summary_bytes`.
pub fn check_size(name: &str, len: u64, limit: u64) -> Result<()> {
    if len > limit {
        return Err(BankError::Refused(format!(
            "{name}: the summary is {len} bytes, over the limit of {limit} bytes (`budget.max_summary_bytes` in mnemo.toml); nothing was written"
        )));
    }
    Ok(())
}

/// Parses the inputs into records (errors name the file and line).
pub fn parse_inputs(inputs: &[Input]) -> Result<Vec<(String, SummaryRecord)>> {
    let mut out = Vec::new();
    for i in inputs {
        check_text(&i.name, &i.text)?;
        let format = Format::detect(&i.text, Some(&i.name));
        for r in parse_records(&i.text, &i.name, format)? {
            // An escaped NUL (`\u0000` in JSON, `\0` / `\x00` in YAML).
            if serde_json::to_string(&r).is_ok_and(|j| j.contains("\\u0000")) {
                let line = ["\\u0000", "\\x00", "\\0"]
                    .iter()
                    .filter_map(|esc| i.text.find(esc))
                    .min()
                    .map(|at| i.text[..at].matches('\n').count() + 1);
                return Err(BankError::invalid(
                    &i.name,
                    line,
                    "a field holds a NUL character (an escaped `\\u0000`); nothing was written",
                ));
            }
            out.push((i.name.clone(), r));
        }
    }
    Ok(out)
}

/// The bank's files as a plan reads them. A file that cannot be read is
/// kept as its error, given only when the plan needs that file.
struct Read {
    texts: BankTexts,
    errors: HashMap<String, BankError>,
}

fn read_texts(bank: &Bank, rels: &[String]) -> Result<Read> {
    let mut r = Read {
        texts: BankTexts::new(),
        errors: HashMap::new(),
    };
    for rel in rels {
        if plan::reads_tail(rel) {
            match read_log_tail(bank, rel) {
                Ok(t) => r.texts.insert(rel.clone(), t),
                Err(e) => {
                    r.texts.insert(rel.clone(), FileText::Unreadable);
                    r.errors.insert(rel.clone(), e);
                }
            }
            continue;
        }
        match bank.read(rel) {
            Ok(Some(t)) => r.texts.insert(rel.clone(), FileText::Text(t)),
            Ok(None) => r.texts.insert(rel.clone(), FileText::Absent),
            Err(e) => {
                r.texts.insert(rel.clone(), FileText::Unreadable);
                r.errors.insert(rel.clone(), e);
            }
        }
    }
    Ok(r)
}

/// An append-only file read from its end, or whole when its end is not
/// enough ([`gatelog::tail_suffices`]).
fn read_log_tail(bank: &Bank, rel: &str) -> Result<FileText> {
    let path = bank.path(rel);
    match txn::read_tail(&path, gatelog::TAIL_BYTES) {
        Ok((len, text)) if gatelog::tail_suffices(len, &text) => Ok(FileText::Tail { len, text }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileText::Absent),
        // Read whole (with the bank's own errors: a directory, bad UTF-8).
        _ => Ok(bank.read(rel)?.map_or(FileText::Absent, FileText::Text)),
    }
}

impl Read {
    fn error(&mut self, bank: &Bank, e: PlanError) -> BankError {
        match e {
            PlanError::Invalid { rel, message } => {
                BankError::invalid(bank.path(&rel), None, message)
            }
            PlanError::Unreadable { rel } => self.errors.remove(&rel).unwrap_or_else(|| {
                BankError::Refused(format!("{}: could not be read", bank.path(&rel).display()))
            }),
            e @ PlanError::NotRead { .. } => BankError::Refused(e.to_string()),
        }
    }
}

fn to_change(c: FileChange) -> Change {
    match c {
        FileChange::Write { rel, content } => Change::Write { rel, content },
        FileChange::Delete { rel } => Change::Delete { rel },
        FileChange::Append { rel, content } => Change::Append { rel, content },
    }
}

/// The remote Guardian of `opts` (HTTP(S) or stdio), if one is
/// configured, with the name the audit record gives it (the URL, or
/// `stdio: ` and the command); a command wins over a URL (the CLI makes
/// them exclusive).
#[allow(clippy::type_complexity)]
fn remote_guardian(
    opts: &GateOptions,
) -> Option<(
    String,
    std::result::Result<RemoteGuardian, mnemo_guardian_server::client::ClientError>,
)> {
    match (&opts.guardian_cmd, &opts.guardian_url) {
        (Some(argv), _) => Some((
            format!("stdio: {}", argv.join(" ")),
            RemoteGuardian::command(argv.clone()),
        )),
        (None, Some(url)) => Some((
            url.clone(),
            RemoteGuardian::connect(url, &opts.guardian_tls),
        )),
        (None, None) => None,
    }
}

/// The HMAC secret `[guardian_client]` names (`hmac_key_id`, read from the
/// environment variable `hmac_key_env`, decoded as `hmac_key_encoding`):
/// `None` when no key is configured. A half-configured key, an unset
/// variable or a secret that does not decode is a usage error naming the
/// key: nothing is asked and nothing compacted.
fn client_hmac(config: &Config) -> Result<Option<(String, Vec<u8>)>> {
    use mnemo_model::config::KeyEncoding;
    let c = &config.guardian_client;
    let refused = |m: String| BankError::Refused(format!("{m}; nothing was compacted"));
    let (id, env) = match (&c.hmac_key_id, &c.hmac_key_env) {
        (None, None) => return Ok(None),
        (Some(id), Some(env)) => (id, env),
        (Some(_), None) => {
            return Err(refused(
                "guardian_client.hmac_key_id needs guardian_client.hmac_key_env (the \
                 environment variable that holds the secret)"
                    .into(),
            ));
        }
        (None, Some(_)) => {
            return Err(refused(
                "guardian_client.hmac_key_env needs guardian_client.hmac_key_id (the label \
                 the Guardian knows the secret by)"
                    .into(),
            ));
        }
    };
    let text = std::env::var(env)
        .ok()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            refused(format!(
                "guardian_client.hmac_key_env names {env}, which is not set"
            ))
        })?;
    let encoding = c.hmac_key_encoding.unwrap_or(KeyEncoding::Utf8);
    let bytes = match encoding {
        KeyEncoding::Utf8 => Some(text.into_bytes()),
        KeyEncoding::Base64 => mnemo_guardian::sign::base64_decode(text.trim()),
        KeyEncoding::Hex => mnemo_guardian::sign::hex_decode(text.trim()),
    };
    match bytes.filter(|b| !b.is_empty()) {
        Some(b) => Ok(Some((id.clone(), b))),
        None => Err(refused(format!(
            "{env} (guardian_client.hmac_key_env) is not valid {}",
            match encoding {
                KeyEncoding::Utf8 => "utf8",
                KeyEncoding::Base64 => "base64",
                KeyEncoding::Hex => "hex",
            }
        ))),
    }
}

/// The deployment's own audit log of the gate's remote Guardian client:
/// one JSON line per gate that asked a remote Guardian (ACS §4.1, §6.4,
/// §6.5: what was received, what was applied and why).
pub const GUARDIAN_AUDIT: &str = "_xref/guardian-audit.jsonl";

/// What asking the Guardian gave.
struct Asked {
    /// The audit record (a remote Guardian was asked), before `compacted`.
    record: Option<serde_json::Value>,
    /// The warning of a gate that goes ahead without a decision.
    warning: Option<String>,
    /// Whether the compaction may go ahead.
    result: Result<()>,
}

fn postures(config: &Config) -> posture::Postures {
    use mnemo_model::config::{FailurePosture, StartupPosture};
    posture::Postures {
        startup: match config.guardian_client.startup_posture {
            StartupPosture::Refuse => posture::StartupPosture::Refuse,
            StartupPosture::Proceed => posture::StartupPosture::Proceed,
        },
        on_decision_failure: match config.guardian_client.on_decision_failure {
            FailurePosture::Deny => posture::FailurePosture::Deny,
            FailurePosture::Proceed => posture::FailurePosture::Proceed,
        },
    }
}

fn denied(decision: mnemo_guardian::decide::Decision) -> BankError {
    BankError::Denied {
        reasoning: decision.reasoning,
        codes: decision.reason_codes.join(", "),
    }
}

/// Asks the Guardian (in process or remote) before compacting anything. A
/// remote Guardian's answer, or its silence, is resolved by the postures
/// of `[guardian_client]` ([`posture::apply`]) and gives an audit record.
fn ask_guardian(config: &Config, opts: &GateOptions, records: &[(String, SummaryRecord)]) -> Asked {
    let entries = entry_provenance(records);
    let Some((url, remote)) = remote_guardian(opts) else {
        let decision = check_compaction(&opts.policy, &entries, opts.trigger);
        return Asked {
            record: None,
            warning: None,
            result: if decision.allowed() {
                Ok(())
            } else {
                Err(denied(decision))
            },
        };
    };
    // A URL or TLS files that cannot be used ask nobody: a usage error.
    let g = match remote {
        Ok(g) => g,
        Err(e) => {
            return Asked {
                record: None,
                warning: None,
                result: Err(BankError::Refused(format!(
                    "cannot ask the Guardian, so nothing was compacted: {e}"
                ))),
            };
        }
    };
    // Signed requests, verified responses (ACS §10) when a key is named.
    let g = match client_hmac(config) {
        Ok(Some((id, key))) => g.with_hmac(&id, &key),
        Ok(None) => g,
        Err(e) => {
            return Asked {
                record: None,
                warning: None,
                result: Err(e),
            };
        }
    };
    let start_ns = now_ns();
    let consultation = g.consult(&entries, opts.trigger);
    let applied = posture::apply(&consultation, postures(config));
    let mut record = serde_json::json!({
        "version": 1,
        "guardian": url,
        "phase": opts.phase,
        "date": opts.date,
    });
    if let (serde_json::Value::Object(m), serde_json::Value::Object(a)) =
        (&mut record, applied.record())
    {
        m.extend(a.clone());
    }
    // Trace events are best effort and never block enforcement: what the
    // export gives is only noted, the outcome below is the applied one.
    let input = trace::TraceInput {
        guardian: &url,
        entries: &entries,
        triggered_by: opts.trigger.as_str(),
        start_ns,
        end_ns: now_ns(),
    };
    if let Some(export) = export_trace(config, &consultation, &applied, &input)
        && let serde_json::Value::Object(m) = &mut record
    {
        if !opts.trace_quiet && export != "sent" {
            eprintln!(
                "mnemo: note: the Guardian trace was not exported ({export}); the decision stands"
            );
        }
        m.insert("trace_export".into(), serde_json::json!(export));
    }
    // A remote Guardian's words reach the terminal scrubbed, as they reach
    // the audit line and the trace (its reasoning is its own text).
    let scrubbed = |t: String| match scrubber() {
        Ok(s) => clean(s, &t),
        Err(_) => "(not shown: the scrubber could not be built)".to_string(),
    };
    let (warning, result) = match (applied.applied, consultation.outcome) {
        (posture::AppliedAs::Allow, _) => (None, Ok(())),
        (posture::AppliedAs::ProceededUnguarded, _) => (Some(scrubbed(applied.message)), Ok(())),
        (posture::AppliedAs::Deny, posture::Outcome::Decided { mut decision, .. }) => {
            decision.reasoning = scrubbed(decision.reasoning);
            decision.reason_codes = decision.reason_codes.into_iter().map(scrubbed).collect();
            (None, Err(denied(decision)))
        }
        (posture::AppliedAs::Deny, _) => (None, Err(BankError::Refused(scrubbed(applied.message)))),
    };
    Asked {
        record: Some(record),
        warning,
        result,
    }
}

fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Exports the consultation's trace events when an endpoint is configured
/// (`[guardian_client] trace_endpoint` or the flag, else the OTLP
/// environment variables): `Some("sent")`, `Some("failed: ...")`, or
/// `None` with no endpoint.
fn export_trace(
    config: &Config,
    consultation: &posture::Consultation,
    applied: &posture::Applied,
    input: &trace::TraceInput<'_>,
) -> Option<String> {
    let endpoint = trace::resolve_endpoint(
        None,
        config.guardian_client.trace_endpoint.as_deref(),
        |k| std::env::var(k).ok(),
    )?;
    // What leaves the machine passes the scrubber, as the audit line does
    // (a remote Guardian's reasoning is its own text).
    let scrub = match scrubber() {
        Ok(s) => s,
        Err(e) => return Some(format!("failed: not exported: {e}")),
    };
    let sent = endpoint.and_then(|e| {
        let mut body = trace::spans(consultation, applied, input);
        scrub_strings(scrub, &mut body);
        trace::export(&e, &body, trace::EXPORT_TIMEOUT)
    });
    Some(match sent {
        Ok(()) => "sent".to_string(),
        Err(e) => format!("failed: {e}"),
    })
}

/// Scrubs every string of `v` on its own, so that a redaction cannot break
/// the JSON.
fn scrub_strings(s: &Scrubber, v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(t) => *t = clean(s, t),
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| scrub_strings(s, x)),
        serde_json::Value::Object(m) => m.values_mut().for_each(|x| scrub_strings(s, x)),
        _ => {}
    }
}

/// The audit line of `record` (every string scrubbed on its own, so a
/// redaction cannot break the JSON), with `compacted` and, for a gate that
/// failed after the Guardian was asked, its error.
fn audit_change(s: &Scrubber, record: &serde_json::Value, gate_error: Option<&str>) -> Change {
    let mut v = record.clone();
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("compacted".into(), serde_json::json!(gate_error.is_none()));
        if let Some(e) = gate_error {
            m.insert("gate_error".into(), serde_json::json!(e));
        }
    }
    scrub_strings(s, &mut v);
    Change::Append {
        rel: GUARDIAN_AUDIT.to_string(),
        content: format!("{v}\n"),
    }
}

/// The audit line of a gate that compacts nothing, alone in its own
/// commit (journaled like every write); the gate still fails with `err`,
/// and if the line cannot be written the error says so too.
fn record_only(
    bank: &Bank,
    s: &Scrubber,
    opts: &GateOptions,
    record: &serde_json::Value,
    err: BankError,
) -> BankError {
    let refused = matches!(err, BankError::Denied { .. })
        || record.get("applied").and_then(serde_json::Value::as_str) == Some("deny");
    let gate_error = if refused {
        "nothing was compacted (applied deny)".to_string()
    } else {
        err.to_string()
    };
    let written = std::fs::create_dir_all(bank.root())
        .map_err(|e| BankError::io(bank.root(), e))
        .and_then(|()| open_locked(bank, opts.lock_timeout))
        .and_then(|(lock, _)| {
            txn::commit(bank, &lock, &[audit_change(s, record, Some(&gate_error))])
        });
    match written {
        Ok(_) => err,
        Err(e) => BankError::Refused(format!(
            "{err}; and the Guardian audit log {} could not be written: {e}",
            bank.path(GUARDIAN_AUDIT).display()
        )),
    }
}

/// C1–C3: compress a batch of summaries into the bank and write the ZZ
/// artifact. `extra` changes (e.g. C6's deletions of compressed `.tmp/`
/// artifacts) land in the same commit.
pub fn gate(
    bank: &Bank,
    config: &Config,
    opts: &GateOptions,
    inputs: &[Input],
) -> Result<GateReport> {
    gate_with(bank, config, opts, inputs, &[])
}

/// Read → plan → commit: the decisions are [`plan::prepare`] and
/// [`plan::plan_gate`]'s.
fn gate_with(
    bank: &Bank,
    config: &Config,
    opts: &GateOptions,
    inputs: &[Input],
    extra: &[Change],
) -> Result<GateReport> {
    check_args(&opts.phase, &opts.date, opts.feature.as_deref())?;
    for i in inputs {
        check_size(
            &i.name,
            i.text.len() as u64,
            config.budget.max_summary_bytes,
        )?;
    }
    let s = scrubber()?;
    let scrub = |t: &str| clean(s, t);
    let prepared = plan::prepare(
        config,
        opts.feature.as_deref(),
        &opts.from,
        parse_inputs(inputs)?,
        &scrub,
    );
    check_args(&opts.phase, &opts.date, prepared.feature.as_deref())?;
    let asked = ask_guardian(config, opts, &prepared.records);
    if let Err(e) = asked.result {
        return Err(match &asked.record {
            Some(r) => record_only(bank, s, opts, r, e),
            None => e,
        });
    }
    let audit = asked.record.as_ref().map(|r| audit_change(s, r, None));
    match gate_commit(bank, config, opts, extra, prepared, audit) {
        Ok(mut r) => {
            r.guardian_warning = asked.warning;
            Ok(r)
        }
        // Asked, then failed for another reason: the consultation is still
        // recorded.
        Err(e) => Err(match &asked.record {
            Some(r) => record_only(bank, s, opts, r, e),
            None => e,
        }),
    }
}

/// The plan and commit of an allowed gate (with the audit line, when a
/// remote Guardian was asked, in the same commit).
fn gate_commit(
    bank: &Bank,
    config: &Config,
    opts: &GateOptions,
    extra: &[Change],
    prepared: plan::Prepared,
    audit: Option<Change>,
) -> Result<GateReport> {
    let s = scrubber()?;
    let scrub = |t: &str| clean(s, t);
    let engine = Engine::new(config).map_err(|e| BankError::Refused(e.to_string()))?;
    std::fs::create_dir_all(bank.root()).map_err(|e| BankError::io(bank.root(), e))?;
    let (lock, recovery) = open_locked(bank, opts.lock_timeout)?;

    let mut read = read_texts(bank, &plan::gate_reads(&opts.phase, &opts.date))?;
    let planned = plan::plan_gate(
        &GateRequest {
            config,
            engine: &engine,
            phase: &opts.phase,
            from: &opts.from,
            to: &opts.to,
            phases: opts.phases,
            date: &opts.date,
            feature: prepared.feature.as_deref(),
            records: &prepared.records,
        },
        &read.texts,
        &scrub,
    )
    .map_err(|e| read.error(bank, e))?;
    let mut changes: Vec<Change> = planned.changes.into_iter().map(to_change).collect();
    // Artifacts with a skipped record stay where they are.
    changes.extend(
        extra
            .iter()
            .filter(|c| match c {
                Change::Delete { rel } => !planned
                    .skipped_sources
                    .contains(bank.path(rel).display().to_string().as_str()),
                Change::Write { .. } | Change::Append { .. } => true,
            })
            .cloned(),
    );
    changes.extend(audit);
    let changed = txn::commit(bank, &lock, &changes)?;
    let o = planned.outcome;
    Ok(GateReport {
        confirmation: o.confirmation,
        entries: o.entries,
        xrefs_added: o.xrefs_added,
        skipped: o.skipped,
        flags: o.flags,
        trim: o.trim,
        changed,
        recovery,
        upsert: o.upsert,
        feature: prepared.feature,
        dropped: prepared.dropped.iter().map(DroppedField::message).collect(),
        dropped_fields: prepared.dropped,
        critical: o.critical,
        high: o.high,
        outcomes: o.outcomes,
        guardian_warning: None,
    })
}

/// C7 on its own: trims `## Completed Phases` when over the cap. Returns the
/// one-line report.
pub fn trim(bank: &Bank, config: &Config, date: &str, timeout: Duration) -> Result<String> {
    check_args("trim", date, None)?;
    bank.require()?;
    let s = scrubber()?;
    let (lock, _) = open_locked(bank, timeout)?;
    let mut read = read_texts(bank, &plan::trim_reads(date))?;
    let (changes, line) = plan::plan_trim_only(config, date, &read.texts, &|t: &str| clean(s, t))
        .map_err(|e| read.error(bank, e))?;
    if !changes.is_empty() {
        let changes: Vec<Change> = changes.into_iter().map(to_change).collect();
        txn::commit(bank, &lock, &changes)?;
    }
    Ok(line)
}

/// §15: the next agent's prompt block (learnings + ZZ artifact).
pub fn handoff(
    bank: &Bank,
    learnings_root: &Path,
    phase: &str,
    feature: Option<&str>,
    timeout: Duration,
) -> Result<String> {
    check_args(phase, "2000-01-01", feature)?;
    bank.require()?;
    let s = scrubber()?;
    let (_lock, _) = open_locked(bank, timeout)?;
    let rel = zz_path(phase);
    let zz = bank.read(&rel)?.ok_or_else(|| {
        BankError::invalid(
            bank.path(&rel),
            None,
            format!("no ZZ artifact for phase {phase} (run `mnemo gate --phase {phase}` first)"),
        )
    })?;
    let learnings = match feature {
        Some(f) => {
            let p = learnings_root.join(f).join("learnings.md");
            match std::fs::read_to_string(&p) {
                Ok(t) => Some(t),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(BankError::io(p, e)),
            }
        }
        None => None,
    };
    Ok(clean(
        s,
        &handoff_prompt(learnings.as_deref(), phase, None, &zz),
    ))
}

/// What `doctor` found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DoctorReport {
    /// Recovery done first.
    pub recovery: Recovery,
    /// Files checked.
    pub files_checked: usize,
    /// Problems (`file:line: what`).
    pub problems: Vec<String>,
    /// Unrecognised `.tmp/` artifacts (left in place).
    pub foreign: Vec<String>,
    /// Recognised artifacts waiting in `.tmp/`.
    pub pending: Vec<String>,
}

impl DoctorReport {
    /// The one-line report.
    pub fn line(&self) -> String {
        let r = &self.recovery;
        format!(
            "{}: {} files checked, {} problems, {} journal ops finished, {} staged files rolled back, {} other *.tmp files left in place, {} unrecognised .tmp artifacts",
            if self.problems.is_empty() {
                "Bank OK"
            } else {
                "Bank has problems"
            },
            self.files_checked,
            self.problems.len(),
            r.rolled_forward,
            r.rolled_back,
            r.other_tmp.len(),
            self.foreign.len()
        )
    }
}

fn split_cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut esc = false;
    for c in t.chars() {
        if esc {
            cur.push(c);
            esc = false;
        } else if c == '\\' {
            cur.push(c);
            esc = true;
        } else if c == '|' {
            cells.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    cells.push(cur.trim().to_string());
    cells
}

fn check_index(path: &Path, text: &str, problems: &mut Vec<String>) {
    let mut in_table: Option<(String, usize)> = None;
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut heading = String::new();
    for (n, line) in text.lines().enumerate() {
        let ln = n + 1;
        let t = line.trim();
        if let Some(h) = t.strip_prefix("## ") {
            heading = h.trim().to_string();
            in_table = None;
            continue;
        }
        if !t.starts_with('|') {
            in_table = None;
            continue;
        }
        let cells = split_cells(t);
        match &in_table {
            None => in_table = Some((heading.clone(), cells.len())),
            Some((_, width)) => {
                if cells
                    .iter()
                    .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
                {
                    continue;
                }
                let first = cells.first().map(String::as_str).unwrap_or_default();
                if first.starts_with("_(") {
                    continue;
                }
                if cells.len() > *width {
                    problems.push(format!(
                        "{}:{ln}: table row has {} cells, its header has {width}",
                        path.display(),
                        cells.len()
                    ));
                }
                let by_entity = heading.eq_ignore_ascii_case("By Entity");
                let decisions = heading.eq_ignore_ascii_case("Decision Links");
                if by_entity || decisions {
                    match RefId::parse(first) {
                        Ok(id) => {
                            if let Some(prev) = seen.insert(id.to_string(), ln) {
                                problems.push(format!(
                                    "{}:{ln}: id {id} is also used on line {prev}",
                                    path.display()
                                ));
                            }
                        }
                        Err(e) => problems.push(format!("{}:{ln}: {e}", path.display())),
                    }
                }
            }
        }
    }
}

/// Validates the bank, finishes or rolls back an interrupted commit, removes
/// mnemo's own orphaned temp files, and reports other `*.tmp` files and
/// unrecognised `.tmp/` artifacts (left in place). A journal that can be
/// neither finished nor undone is a problem with a hint. Writes nothing
/// else.
pub fn doctor(bank: &Bank, timeout: Duration) -> Result<DoctorReport> {
    bank.require()?;
    let lock = txn::lock(bank, timeout)?;
    let mut rep = DoctorReport::default();
    match txn::recover(bank, &lock) {
        Ok(r) => rep.recovery = r,
        // A journal that can be neither finished nor undone: say what to do.
        Err(e) => rep.problems.push(match e.hint() {
            Some(h) => format!("{e} (hint: {h})"),
            None => e.to_string(),
        }),
    }
    for rel in [ACTIVE_CONTEXT, PROGRESS_LOG, XREF_INDEX] {
        let path = bank.path(rel);
        match bank.read(rel) {
            Err(e) => rep.problems.push(e.to_string()),
            Ok(None) => rep.problems.push(format!(
                "{}: missing (the next gate creates it)",
                path.display()
            )),
            Ok(Some(text)) => {
                rep.files_checked += 1;
                if let Err(m) = txn::validate(rel, &text) {
                    rep.problems.push(format!("{}: {m}", path.display()));
                }
                if rel == XREF_INDEX {
                    check_index(&path, &text, &mut rep.problems);
                }
                if rel == ACTIVE_CONTEXT {
                    let mut keys: HashMap<EntryKey, usize> = HashMap::new();
                    for (n, line) in text.lines().enumerate() {
                        if let Some((k, _)) = render::parse_marker(line)
                            && let Some(prev) = keys.insert(k.clone(), n + 1)
                        {
                            rep.problems.push(format!(
                                "{}:{}: entry {} is also on line {prev}",
                                path.display(),
                                n + 1,
                                k.render()
                            ));
                        }
                    }
                }
            }
        }
    }
    match bank.read(NEXT_ID) {
        Err(e) => rep.problems.push(e.to_string()),
        Ok(None) => {}
        Ok(Some(t)) => {
            rep.files_checked += 1;
            if let Err(e) = NextIds::parse(&t) {
                rep.problems
                    .push(format!("{}: {e}", bank.path(NEXT_ID).display()));
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(bank.path(TMP_DIR)) {
        let mut names: Vec<String> = rd
            .filter_map(std::result::Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let rel = format!("{TMP_DIR}/{name}");
            if rel == LOCK_FILE || rel == JOURNAL || is_own_temp(&name) || is_zz(&name) {
                continue;
            }
            match ArtifactType::from_file_name(&name) {
                Some(ArtifactType::Unrecognized) | None => rep.foreign.push(rel),
                Some(_) => rep.pending.push(rel),
            }
        }
    }
    Ok(rep)
}

fn tmp_artifacts(bank: &Bank) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(bank.path(TMP_DIR))
        .map(|rd| {
            rd.filter_map(std::result::Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// C4: records the plan of a completed feature in `## Completed Plans`
/// (key: date + feature, §17) and removes the feature's PLAN artifacts and
/// the ZZ artifacts from `.tmp/`.
pub fn feature_complete(
    bank: &Bank,
    feature: &str,
    date: &str,
    timeout: Duration,
) -> Result<String> {
    check_args("plan", date, Some(feature))?;
    bank.require()?;
    let s = scrubber()?;
    let (lock, _) = open_locked(bank, timeout)?;
    let names = tmp_artifacts(bank);
    let active = bank.read(ACTIVE_CONTEXT)?;
    let (changes, line) =
        plan::plan_feature_complete(feature, date, &names, active.as_deref(), &|t: &str| {
            clean(s, t)
        });
    let changes: Vec<Change> = changes.into_iter().map(to_change).collect();
    txn::commit(bank, &lock, &changes)?;
    Ok(line)
}

/// C5: bulk clean-up of `.tmp/` (compressible artifacts archived and
/// removed, DISC `DISCARD` deleted, the rest flagged and left), a snapshot
/// of the cross-reference index archived, unresolved entries flagged.
/// Returns the one-line report and the flags.
pub fn sprint_close(bank: &Bank, date: &str, timeout: Duration) -> Result<(String, Vec<String>)> {
    check_args("close", date, None)?;
    bank.require()?;
    let s = scrubber()?;
    let (lock, _) = open_locked(bank, timeout)?;
    let names = tmp_artifacts(bank);
    let mut read = read_texts(bank, &plan::sprint_close_reads(date, &names, &is_own_temp))?;
    let (changes, line, flags) =
        plan::plan_sprint_close(date, &names, &is_own_temp, &read.texts, &|t: &str| {
            clean(s, t)
        })
        .map_err(|e| read.error(bank, e))?;
    let changes: Vec<Change> = changes.into_iter().map(to_change).collect();
    txn::commit(bank, &lock, &changes)?;
    Ok((line, flags))
}

/// C6: compresses the subtask summaries waiting in `.tmp/` (and any given
/// files) through the gate, removing the compressed `.tmp/` artifacts in
/// the same commit. Other artifacts are reported and left.
pub fn compress(
    bank: &Bank,
    config: &Config,
    opts: &GateOptions,
    files: &[Input],
) -> Result<(GateReport, Vec<String>)> {
    let mut inputs = files.to_vec();
    let mut deletes = Vec::new();
    let (take, flags) = plan::plan_compress_inputs(&tmp_artifacts(bank), &is_own_temp);
    for rel in take {
        if let Some(text) = bank.read(&rel)? {
            inputs.push(Input {
                name: bank.path(&rel).display().to_string(),
                text,
            });
            deletes.push(Change::Delete { rel });
        }
    }
    if inputs.is_empty() {
        return Err(BankError::Refused(format!(
            "{}: nothing to compress (no subtask summaries in .tmp/ and no files given)",
            bank.path(TMP_DIR).display()
        )));
    }
    let report = gate_with(bank, config, opts, inputs.as_slice(), &deletes)?;
    Ok((report, flags))
}
