//! The bank commands: `gate` (C1–C3), `feature-complete` (C4),
//! `sprint-close` (C5), `compress` (C6), `trim` (C7), `handoff`, `doctor`,
//! `history` and `restore`. The work is done by `mnemo-bank`; this module
//! parses arguments and prints one line (or the handoff block).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use mnemo_bank::layout::{is_date, today_utc};
use mnemo_bank::ops::{GateOptions, Input, LOCK_TIMEOUT};
use mnemo_bank::{Bank, git, ops};
use mnemo_guardian::model::Trigger;
use mnemo_guardian::policy::Policy;
use mnemo_model::Config;

use crate::Global;
use crate::io_util::{hinted, load_config, read_input};

/// Arguments of `mnemo gate`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// Phase label (`1`, `2a`).
    #[arg(long, value_name = "N")]
    phase: String,
    /// Sending agent(s), comma-separated.
    #[arg(long, value_name = "A")]
    from: String,
    /// Receiving (next) agent(s), comma-separated.
    #[arg(long, value_name = "B")]
    to: String,
    /// Planned phases of the feature (default: `budget.default_phases`).
    #[arg(long, value_name = "K")]
    phases: Option<u32>,
    /// Date of the gate (default: today, UTC).
    #[arg(long, value_name = "YYYY-MM-DD")]
    date: Option<String>,
    /// Feature name (adds a By Feature row to the cross-reference index).
    #[arg(long, value_name = "F")]
    feature: Option<String>,
    /// Who decides whether compaction is allowed.
    #[command(flatten)]
    guardian: GuardianArgs,
    /// Subtask summary files (markdown, JSON or YAML; `-` for standard input).
    #[arg(value_name = "SUMMARY", required_unless_present = "input")]
    summaries: Vec<PathBuf>,
    /// Same as SUMMARY (repeatable).
    #[arg(long, short, value_name = "FILE")]
    input: Vec<PathBuf>,
    /// Print one JSON object on standard output instead of the
    /// confirmation line: the figures, every entry (key, agent, band,
    /// score, lines, o200k tokens in and out, action), skipped inputs,
    /// dropped Layer 1 fields and flags (see docs/bank.md).
    #[arg(long)]
    json: bool,
}

/// The Guardian that `gate` and `compress` ask before compacting.
#[derive(Debug, Args)]
pub struct GuardianArgs {
    /// Guardian policy (TOML; default: the built-in policy).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Ask a remote Guardian (`mnemo guard http`) instead of deciding in
    /// process, e.g. `http://127.0.0.1:7717`; unreachable means nothing is compacted.
    #[arg(
        long,
        value_name = "URL",
        env = "MNEMO_GUARDIAN_URL",
        conflicts_with = "policy"
    )]
    guardian_url: Option<String>,
    /// Ask a Guardian that speaks stdio (`mnemo guard stdio`) instead of
    /// deciding in process: this command line, split into words as a POSIX
    /// shell would (quotes, backslashes; no expansion, no shell is run),
    /// e.g. "mnemo guard stdio --memory". It runs as a child process for the
    /// gate's session; one that cannot start, exits, or does not answer
    /// within 5 s means nothing is compacted.
    #[arg(
        long,
        value_name = "COMMAND",
        env = "MNEMO_GUARDIAN_CMD",
        conflicts_with_all = ["policy", "guardian_url"]
    )]
    guardian_cmd: Option<String>,
    /// For an `https://` --guardian-url: trust the CAs of this PEM file
    /// (default: the system's roots).
    #[arg(long, value_name = "FILE", env = "MNEMO_GUARDIAN_CA")]
    guardian_ca: Option<PathBuf>,
    /// For an `https://` --guardian-url that asks for one: this PEM client
    /// certificate (with --guardian-client-key).
    #[arg(long, value_name = "FILE", requires = "guardian_client_key")]
    guardian_client_cert: Option<PathBuf>,
    /// The PEM private key of --guardian-client-cert.
    #[arg(long, value_name = "FILE", requires = "guardian_client_cert")]
    guardian_client_key: Option<PathBuf>,
    /// When the remote Guardian's hello (--guardian-url or --guardian-cmd)
    /// gets no answer: `refuse` compacts
    /// nothing, `proceed` compacts unguarded, loudly (ACS 4.1; default:
    /// `[guardian_client] startup_posture` of mnemo.toml, else refuse).
    #[arg(long, value_name = "POSTURE", value_parser = ["refuse", "proceed"])]
    guardian_startup_posture: Option<String>,
    /// When the remote Guardian gives a later step no decision: `deny` compacts
    /// nothing, `proceed` compacts without one, loudly, unless the
    /// Guardian announced deny (ACS 6.4; default: `[guardian_client]
    /// on_decision_failure` of mnemo.toml, else deny).
    #[arg(long, value_name = "POSTURE", value_parser = ["deny", "proceed"])]
    guardian_on_decision_failure: Option<String>,
    /// After each remote consultation, export its ACS trace events (spans)
    /// by one OTLP/HTTP JSON POST to this endpoint, e.g.
    /// `http://127.0.0.1:4318` (path `/v1/traces` when none is given).
    /// Best effort within 300 ms: a sink that is down changes nothing but a
    /// note and the audit line's `trace_export` (default: `[guardian_client]
    /// trace_endpoint`, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
    /// OTEL_EXPORTER_OTLP_ENDPOINT).
    #[arg(long, value_name = "URL")]
    guardian_trace_endpoint: Option<String>,
    /// Sign every request to the remote Guardian under the per-session key
    /// of this secret label (ACS §10: HKDF-SHA256, info = the session id)
    /// and require signed answers; the secret is read from the variable
    /// --guardian-key-env names (default: `[guardian_client] hmac_key_id`).
    #[arg(long, value_name = "KEY_ID", requires = "guardian_key_env")]
    guardian_key_id: Option<String>,
    /// The environment variable holding the --guardian-key-id secret
    /// (never the secret itself on the command line; its encoding:
    /// `[guardian_client] hmac_key_encoding`, default utf8).
    #[arg(long, value_name = "VAR", requires = "guardian_key_id")]
    guardian_key_env: Option<String>,
}

impl GuardianArgs {
    /// `--guardian-cmd` as argv: the `shlex` crate's POSIX word splitting
    /// (quotes and backslashes, nothing expanded), so a path with a space
    /// can be quoted and no shell ever runs.
    fn guardian_cmd(&self) -> Result<Option<Vec<String>>> {
        let Some(line) = &self.guardian_cmd else {
            return Ok(None);
        };
        let Some(argv) = shlex::split(line) else {
            bail!("--guardian-cmd {line:?}: unbalanced quotes or a trailing backslash");
        };
        if argv.is_empty() {
            bail!("--guardian-cmd is empty: expected a program and its arguments");
        }
        Ok(Some(argv))
    }

    /// The flags' postures over the configuration's.
    fn postures(&self, config: &mut mnemo_model::Config) {
        use mnemo_model::config::{FailurePosture, StartupPosture};
        let c = &mut config.guardian_client;
        match self.guardian_startup_posture.as_deref() {
            Some("proceed") => c.startup_posture = StartupPosture::Proceed,
            Some(_) => c.startup_posture = StartupPosture::Refuse,
            None => {}
        }
        match self.guardian_on_decision_failure.as_deref() {
            Some("proceed") => c.on_decision_failure = FailurePosture::Proceed,
            Some(_) => c.on_decision_failure = FailurePosture::Deny,
            None => {}
        }
        if let Some(url) = &self.guardian_trace_endpoint {
            c.trace_endpoint = Some(url.clone());
        }
        if let (Some(id), Some(env)) = (&self.guardian_key_id, &self.guardian_key_env) {
            c.hmac_key_id = Some(id.clone());
            c.hmac_key_env = Some(env.clone());
        }
    }

    fn tls(&self) -> mnemo_guardian_server::client::ClientTls {
        mnemo_guardian_server::client::ClientTls {
            ca: self.guardian_ca.clone(),
            cert: self.guardian_client_cert.clone(),
            key: self.guardian_client_key.clone(),
        }
    }
}

/// Arguments of `mnemo compress`.
#[derive(Debug, Args)]
pub struct CompressArgs {
    /// Phase label of the compressed entries.
    #[arg(long, value_name = "N", default_value = "0")]
    phase: String,
    /// Sending agent(s), comma-separated (default: from the records).
    #[arg(long, value_name = "A")]
    from: Option<String>,
    /// Receiving agent(s), comma-separated.
    #[arg(long, value_name = "B")]
    to: Option<String>,
    /// Planned phases of the feature.
    #[arg(long, value_name = "K")]
    phases: Option<u32>,
    /// Date (default: today, UTC).
    #[arg(long, value_name = "YYYY-MM-DD")]
    date: Option<String>,
    /// Feature name.
    #[arg(long, value_name = "F")]
    feature: Option<String>,
    /// Who decides whether compaction is allowed.
    #[command(flatten)]
    guardian: GuardianArgs,
    /// Further summary files to compress besides those in `.tmp/`.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Same as FILE (repeatable).
    #[arg(long, short, value_name = "FILE")]
    input: Vec<PathBuf>,
}

/// Arguments of `mnemo feature-complete`.
#[derive(Debug, Args)]
pub struct FeatureArgs {
    /// The feature that is complete.
    #[arg(long, value_name = "F")]
    feature: String,
    /// Date (default: today, UTC).
    #[arg(long, value_name = "YYYY-MM-DD")]
    date: Option<String>,
}

/// Arguments of `mnemo sprint-close` and `mnemo trim`.
#[derive(Debug, Args)]
pub struct DateArgs {
    /// Date (default: today, UTC); names the archive files.
    #[arg(long, value_name = "YYYY-MM-DD")]
    date: Option<String>,
}

/// Arguments of `mnemo handoff`.
#[derive(Debug, Args)]
pub struct HandoffArgs {
    /// The phase whose ZZ artifact is handed off.
    #[arg(long, value_name = "N")]
    phase: String,
    /// Feature whose learnings are injected.
    #[arg(long, value_name = "F")]
    feature: Option<String>,
}

/// Arguments of `mnemo doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {}

/// Arguments of `mnemo history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// A bank file.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

/// Arguments of `mnemo restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A bank file.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The git revision to restore it from.
    #[arg(long = "to", value_name = "REV")]
    rev: String,
}

fn setup(global: &Global) -> Result<(Config, Bank)> {
    let (config, path) = load_config(global.config.as_deref())?;
    let root = global
        .bank
        .clone()
        .unwrap_or_else(|| crate::io_util::config_relative(path.as_deref(), &config.paths.bank));
    Ok((config, Bank::new(root)))
}

fn date_or_today(date: Option<String>) -> Result<String> {
    match date {
        Some(d) if is_date(d.trim()) => Ok(d.trim().to_string()),
        Some(d) => Err(hinted(
            format!("--date {d:?} is not a date"),
            "write it as YYYY-MM-DD",
        )),
        None => Ok(today_utc()),
    }
}

fn load_policy(path: Option<&Path>) -> Result<Policy> {
    let Some(p) = path else {
        return Ok(Policy::default());
    };
    let text =
        std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
    Policy::from_toml(&text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))
}

fn agents(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect()
}

/// Reads one summary in bounded memory: a file over `limit` bytes is
/// refused from its size, standard input after `limit + 1` bytes.
fn read_summary(path: &Path, limit: u64) -> Result<Input> {
    let too_big = |e: mnemo_bank::BankError| {
        hinted(
            e,
            "a subtask summary is a few KiB: give the agent's summary, not its raw output, or raise `budget.max_summary_bytes` in mnemo.toml",
        )
    };
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(std::io::stdin().lock(), limit.saturating_add(1)),
            &mut buf,
        )
        .context("cannot read standard input")?;
        ops::check_size("<stdin>", buf.len() as u64, limit).map_err(too_big)?;
        let text = String::from_utf8(buf).map_err(|e| {
            anyhow::anyhow!(
                "<stdin>: not valid UTF-8 (byte {} is not part of a UTF-8 character)",
                e.utf8_error().valid_up_to()
            )
        })?;
        return Ok(Input {
            name: "<stdin>".into(),
            text,
        });
    }
    if let Ok(m) = std::fs::metadata(path)
        && m.is_file()
    {
        ops::check_size(&path.display().to_string(), m.len(), limit).map_err(too_big)?;
    }
    read_input(path).map(|(text, name)| Input { name, text })
}

fn inputs(paths: &[PathBuf], global: &Global, limit: u64) -> Result<Vec<Input>> {
    let show =
        paths.len() >= crate::progress::MANY_INPUTS && crate::progress::wanted(global.quiet, false);
    let bar = crate::progress::items(show, paths.len(), "reading summaries".to_string());
    let read = paths
        .iter()
        .map(|p| {
            let r = read_summary(p, limit);
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    read
}

/// Runs a bank command under a spinner when it works on many inputs.
fn under_spinner<T>(global: &Global, n: usize, what: &str, f: impl FnOnce() -> T) -> T {
    let show = n >= crate::progress::MANY_INPUTS && crate::progress::wanted(global.quiet, false);
    let bar = crate::progress::spinner(show, format!("{what} {n} summaries"));
    let r = f();
    bar.finish_and_clear();
    r
}

fn say(global: &Global, lines: &[String]) {
    if global.quiet {
        return;
    }
    let mut err = std::io::stderr().lock();
    for l in lines {
        let _ = writeln!(err, "note: {l}");
    }
}

fn out(line: &str) -> Result<ExitCode> {
    let mut o = std::io::stdout().lock();
    writeln!(o, "{line}").context("cannot write to standard output")?;
    Ok(ExitCode::SUCCESS)
}

fn report_gate(global: &Global, r: &ops::GateReport) -> Vec<String> {
    // Compacted without a Guardian's decision: said even under --quiet.
    if let Some(w) = &r.guardian_warning {
        let _ = writeln!(std::io::stderr().lock(), "warning: {w}");
    }
    let mut notes = r.dropped.clone();
    notes.extend(r.skipped.iter().cloned());
    notes.extend(r.flags.iter().cloned());
    notes.extend(r.trim.iter().cloned());
    if r.recovery.rolled_forward > 0 || r.recovery.rolled_back > 0 {
        notes.push(format!(
            "recovered an interrupted commit ({} ops finished, {} staged files rolled back)",
            r.recovery.rolled_forward, r.recovery.rolled_back
        ));
    }
    notes.extend(recovery_notes(&r.recovery));
    say(global, &notes);
    notes
}

/// What a rollback during recovery means for the user.
fn recovery_notes(r: &mnemo_bank::Recovery) -> Vec<String> {
    r.rolled_back_commit
        .iter()
        .map(|why| {
            format!(
                "an interrupted commit could not be finished ({why}); it was rolled back and the bank is as it was before it (run that command again once the file is fixed)"
            )
        })
        .collect()
}

/// `mnemo gate`.
pub fn gate(args: GateArgs, global: &Global) -> Result<ExitCode> {
    let (mut config, bank) = setup(global)?;
    args.guardian.postures(&mut config);
    if args.phases == Some(0) {
        bail!("--phases must be at least 1");
    }
    let feature_given = args.feature.is_some();
    let opts = GateOptions {
        phase: args.phase,
        from: agents(&args.from),
        to: agents(&args.to),
        phases: args.phases,
        date: date_or_today(args.date)?,
        feature: args.feature,
        policy: load_policy(args.guardian.policy.as_deref())?,
        guardian_tls: args.guardian.tls(),
        guardian_cmd: args.guardian.guardian_cmd()?,
        guardian_url: args.guardian.guardian_url,
        trace_quiet: global.quiet,
        trigger: Trigger::FrameworkInitiated,
        lock_timeout: LOCK_TIMEOUT,
    };
    let paths: Vec<PathBuf> = args.summaries.into_iter().chain(args.input).collect();
    let inputs = inputs(&paths, global, config.budget.max_summary_bytes)?;
    let r = under_spinner(global, inputs.len(), "gating", || {
        ops::gate(&bank, &config, &opts, &inputs)
    })?;
    let mut notes = report_gate(global, &r);
    notes.clear();
    notes.push(r.change_line());
    if !feature_given && let Some(f) = &r.feature {
        notes.push(format!("feature {f} (from the records)"));
    }
    say(global, &notes);
    if args.json {
        let mut r = r;
        for o in &mut r.outcomes {
            o.count_tokens();
        }
        let v = gate_json(&opts, &r);
        let text = serde_json::to_string(&v).context("cannot encode the gate report")?;
        return out(&text);
    }
    out(&r.confirmation)
}

/// A score in ten-thousandths as `score --json` prints it: rounded half
/// up to two decimals.
fn score_number(ten_thousandths: u32) -> f64 {
    f64::from(ten_thousandths.saturating_add(50) / 100) / 100.0
}

// `gate --json` as structs rather than `json!` maps: the members print in
// this order (serde_json's own map sorts them).
#[derive(serde::Serialize)]
struct GateJson<'a> {
    confirmation: &'a str,
    phase: &'a str,
    date: &'a str,
    feature: Option<&'a str>,
    compressed: usize,
    critical: usize,
    high: usize,
    xrefs_added: usize,
    upsert: UpsertJson,
    tokens: TokensJson,
    entries: Vec<EntryJson<'a>>,
    skipped: &'a [String],
    dropped: &'a [ops::DroppedField],
    flags: &'a [String],
    trim: Option<&'a str>,
    changed: &'a [String],
    /// Set when the gate compacted without its remote Guardian's decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    guardian_warning: Option<&'a str>,
}

#[derive(serde::Serialize)]
struct UpsertJson {
    new: usize,
    unchanged: usize,
    updated: usize,
}

#[derive(serde::Serialize)]
struct TokensJson {
    #[serde(rename = "in")]
    tokens_in: usize,
    #[serde(rename = "out")]
    tokens_out: usize,
}

#[derive(serde::Serialize)]
struct EntryJson<'a> {
    key: Option<&'a str>,
    source: &'a str,
    agent: &'a str,
    phase: &'a str,
    band: Option<&'static str>,
    score: Option<f64>,
    lines: Option<f64>,
    tokens_in: Option<usize>,
    tokens_out: Option<usize>,
    action: &'static str,
    reason: Option<&'a str>,
}

/// `gate --json`: one object (the CLI contract in docs/bank.md).
fn gate_json<'a>(opts: &'a GateOptions, r: &'a ops::GateReport) -> GateJson<'a> {
    let entries = r
        .outcomes
        .iter()
        .map(|o| EntryJson {
            key: o.key.as_deref(),
            source: &o.source,
            agent: &o.agent,
            phase: &o.phase,
            band: o.band.map(|b| b.as_str()),
            score: o.score.map(score_number),
            lines: o.lines.map(|l| f64::from(l.0) / 2.0),
            tokens_in: o.tokens_in,
            tokens_out: o.tokens_out,
            action: o.action.as_str(),
            reason: o.reason.as_deref(),
        })
        .collect();
    let sum = |f: fn(&ops::EntryOutcome) -> Option<usize>| -> usize {
        r.outcomes.iter().filter_map(f).sum()
    };
    GateJson {
        confirmation: &r.confirmation,
        phase: &opts.phase,
        date: &opts.date,
        feature: r.feature.as_deref(),
        compressed: r.entries,
        critical: r.critical,
        high: r.high,
        xrefs_added: r.xrefs_added,
        upsert: UpsertJson {
            new: r.upsert.added,
            unchanged: r.upsert.skipped,
            updated: r.upsert.replaced,
        },
        tokens: TokensJson {
            tokens_in: sum(|o| o.tokens_in),
            tokens_out: sum(|o| if o.key.is_some() { o.tokens_out } else { None }),
        },
        entries,
        skipped: &r.skipped,
        dropped: &r.dropped_fields,
        flags: &r.flags,
        trim: r.trim.as_deref(),
        changed: &r.changed,
        guardian_warning: r.guardian_warning.as_deref(),
    }
}

/// `mnemo compress` (C6).
pub fn compress(args: CompressArgs, global: &Global) -> Result<ExitCode> {
    let (mut config, bank) = setup(global)?;
    args.guardian.postures(&mut config);
    bank.require()?;
    let opts = GateOptions {
        phase: args.phase,
        from: args.from.as_deref().map(agents).unwrap_or_default(),
        to: args.to.as_deref().map(agents).unwrap_or_default(),
        phases: args.phases,
        date: date_or_today(args.date)?,
        feature: args.feature,
        policy: load_policy(args.guardian.policy.as_deref())?,
        guardian_tls: args.guardian.tls(),
        guardian_cmd: args.guardian.guardian_cmd()?,
        guardian_url: args.guardian.guardian_url,
        trace_quiet: global.quiet,
        trigger: Trigger::Manual,
        lock_timeout: LOCK_TIMEOUT,
    };
    let paths: Vec<PathBuf> = args.files.into_iter().chain(args.input).collect();
    let inputs = inputs(&paths, global, config.budget.max_summary_bytes)?;
    let (r, flags) = under_spinner(global, inputs.len(), "compressing", || {
        ops::compress(&bank, &config, &opts, &inputs)
    })?;
    report_gate(global, &r);
    say(global, &flags);
    out(&r.confirmation)
}

/// `mnemo feature-complete` (C4).
pub fn feature_complete(args: FeatureArgs, global: &Global) -> Result<ExitCode> {
    let (_, bank) = setup(global)?;
    let line = ops::feature_complete(
        &bank,
        &args.feature,
        &date_or_today(args.date)?,
        LOCK_TIMEOUT,
    )?;
    out(&line)
}

/// `mnemo sprint-close` (C5).
pub fn sprint_close(args: DateArgs, global: &Global) -> Result<ExitCode> {
    let (_, bank) = setup(global)?;
    let (line, flags) = ops::sprint_close(&bank, &date_or_today(args.date)?, LOCK_TIMEOUT)?;
    say(global, &flags);
    out(&line)
}

/// `mnemo trim` (C7).
pub fn trim(args: DateArgs, global: &Global) -> Result<ExitCode> {
    let (config, bank) = setup(global)?;
    let line = ops::trim(&bank, &config, &date_or_today(args.date)?, LOCK_TIMEOUT)?;
    out(&line)
}

/// `mnemo handoff`.
pub fn handoff(args: HandoffArgs, global: &Global) -> Result<ExitCode> {
    let (config, bank) = setup(global)?;
    let block = ops::handoff(
        &bank,
        Path::new(&config.paths.learnings),
        &args.phase,
        args.feature.as_deref(),
        LOCK_TIMEOUT,
    )?;
    let mut o = std::io::stdout().lock();
    o.write_all(block.as_bytes())
        .context("cannot write to standard output")?;
    Ok(ExitCode::SUCCESS)
}

/// `mnemo doctor`.
pub fn doctor(_args: DoctorArgs, global: &Global) -> Result<ExitCode> {
    let (_, bank) = setup(global)?;
    let r = ops::doctor(&bank, LOCK_TIMEOUT)?;
    let mut notes: Vec<String> = r.problems.iter().map(|p| format!("problem: {p}")).collect();
    notes.extend(
        r.foreign
            .iter()
            .map(|f| format!("{f}: unrecognised .tmp artifact, left in place")),
    );
    notes.extend(
        r.pending
            .iter()
            .map(|f| format!("{f}: artifact waiting for compression")),
    );
    notes.extend(
        r.recovery
            .other_tmp
            .iter()
            .map(|f| format!("{f}: *.tmp file that is not mnemo's, left in place")),
    );
    notes.extend(recovery_notes(&r.recovery));
    {
        // Problems are printed even with --quiet.
        let mut err = std::io::stderr().lock();
        for n in &notes {
            if !global.quiet || n.starts_with("problem: ") {
                let _ = writeln!(err, "{n}");
            }
        }
    }
    out(&r.line())?;
    Ok(if r.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Words git's failures for a bank file as mnemo errors: a file outside any
/// git repository, or in a directory that does not exist, says so with a
/// hint instead of git's raw `fatal:` line.
fn git_error(file: &Path, e: mnemo_bank::BankError) -> anyhow::Error {
    let text = e.to_string();
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return hinted(
            format!("{}: no such directory", dir.display()),
            "check the path of the bank file",
        );
    }
    if text.contains("not a git repository") {
        return hinted(
            format!(
                "{}: not inside a git repository, so it has no history",
                file.display()
            ),
            "mnemo keeps the bank's history in git: commit the bank in the project's repository (`git add .pantheon/memory-bank && git commit`), then ask again",
        );
    }
    if text.starts_with("cannot run git") {
        return hinted(
            "git is not installed",
            "install git; history and restore use it",
        );
    }
    anyhow::Error::new(e)
}

/// `mnemo history FILE`.
pub fn history(args: HistoryArgs, _global: &Global) -> Result<ExitCode> {
    let revs = git::history(&args.file).map_err(|e| git_error(&args.file, e))?;
    let mut o = std::io::stdout().lock();
    for r in &revs {
        writeln!(o, "{} {} {}", r.rev, r.date, r.subject)
            .context("cannot write to standard output")?;
    }
    writeln!(o, "{}: {} revisions", args.file.display(), revs.len())
        .context("cannot write to standard output")?;
    Ok(ExitCode::SUCCESS)
}

/// `mnemo restore FILE --to REV`.
pub fn restore(args: RestoreArgs, global: &Global) -> Result<ExitCode> {
    let (_, bank) = setup(global)?;
    let line = git::restore(&bank, &args.file, &args.rev, LOCK_TIMEOUT)
        .map_err(|e| git_error(&args.file, e))?;
    out(&line)
}
