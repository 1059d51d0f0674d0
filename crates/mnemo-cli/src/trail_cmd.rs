//! `mnemo trail TRANSCRIPT`: the artifact trail of a host transcript
//! (files, commands and exit codes, constraints, decisions, open errors,
//! numbers), scrubbed, ranked and cut to a token budget. The extraction is
//! `mnemo-trail`'s; this module streams the file line by line into it
//! (bounded memory) and prints.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use mnemo_trail::parse::HostKind;
use mnemo_trail::{DEFAULT_BUDGET, Extractor, Trail};

use crate::Global;
use crate::io_util::hinted;

/// Which host wrote the transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HostArg {
    /// Detect from the lines.
    Auto,
    /// Claude Code JSONL.
    ClaudeCode,
    /// Codex CLI rollout JSONL.
    Codex,
    /// OpenCode messages, one `{info, parts}` object a line.
    Opencode,
}

/// Arguments of `mnemo trail`.
#[derive(Debug, Args)]
pub struct TrailArgs {
    /// The transcript (JSONL; `-` for standard input).
    #[arg(value_name = "TRANSCRIPT")]
    transcript: PathBuf,
    /// Token budget of the trail (o200k); facts that do not fit are counted.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BUDGET)]
    budget: usize,
    /// Which host wrote the transcript.
    #[arg(long, value_enum, default_value = "auto")]
    host: HostArg,
    /// A compaction summary to check the trail against: prints the facts it
    /// lost (the re-injection) instead of the trail; `--json` adds `check`.
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// JSON output: the trail with every fact (shown or not), sizes and counts.
    #[arg(long)]
    json: bool,
}

/// Reads a transcript into an extractor, one line at a time.
pub fn extract(path: &Path, host: Option<HostKind>, budget: usize) -> Result<Trail> {
    let reader: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(path).map_err(|e| {
            hinted(
                format!("cannot read the transcript {}: {e}", path.display()),
                "give the JSONL file the host names as transcript_path",
            )
        })?)
    };
    let mut r = BufReader::with_capacity(1 << 16, reader);
    let mut x = Extractor::new(host);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("cannot read the transcript {}", path.display()))?;
        if n == 0 {
            break;
        }
        x.push_bytes(&buf);
    }
    Ok(x.finish(budget)?)
}

/// Runs `mnemo trail`.
pub fn run(args: TrailArgs, global: &Global) -> Result<ExitCode> {
    let host = match args.host {
        HostArg::Auto => None,
        HostArg::ClaudeCode => Some(HostKind::ClaudeCode),
        HostArg::Codex => Some(HostKind::Codex),
        HostArg::Opencode => Some(HostKind::OpenCode),
    };
    let trail = extract(&args.transcript, host, args.budget)?;
    if !global.quiet && trail.bad_lines > 0 {
        eprintln!(
            "mnemo trail: {} of {} lines of {} are not JSON and were skipped",
            trail.bad_lines,
            trail.lines,
            args.transcript.display()
        );
    }
    let mut out = std::io::stdout().lock();
    match &args.summary {
        None if args.json => writeln!(out, "{}", serde_json::to_string(&trail)?)?,
        None => out.write_all(trail.text.as_bytes())?,
        Some(p) => {
            let summary = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read the summary {}", p.display()))?;
            let check = mnemo_trail::check(&trail, &summary)?;
            if !global.quiet && !check.summary_secrets.is_empty() {
                eprintln!(
                    "mnemo trail: the summary {} holds secrets ({})",
                    p.display(),
                    check.summary_secrets.join(", ")
                );
            }
            if args.json {
                // The trail's members in their order, then `check` (a
                // `Value` would sort them).
                #[derive(serde::Serialize)]
                struct WithCheck<'a, T: serde::Serialize, C: serde::Serialize> {
                    #[serde(flatten)]
                    trail: &'a T,
                    check: &'a C,
                }
                let v = serde_json::to_string(&WithCheck {
                    trail: &trail,
                    check: &check,
                })?;
                writeln!(out, "{v}")?;
            } else {
                out.write_all(check.reinject.as_bytes())?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
