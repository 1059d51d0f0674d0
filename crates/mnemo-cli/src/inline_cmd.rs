//! `mnemo inline`: a drop-in for Pantheon's `compress-inline.py`.
//!
//! Same modes, flags and output bytes as the script, including its error line
//! for `batch` without `--files` and its per-file `ERROR —` lines.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use mnemo_inline::{
    BatchItem, Inline, InlineArgs, python_os_error, python_utf8_error, split_files,
};
use mnemo_scrub::{ReplacementStyle, Scrubber};

use crate::Global;
use crate::io_util::load_config;

/// The script's modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Preview the priority score as JSON.
    Score,
    /// Scrub, score and compress a text.
    Compress,
    /// Token estimate, lines and characters as JSON.
    Stats,
    /// Compress several files.
    Batch,
}

/// Arguments of `mnemo inline`.
#[derive(Debug, Args)]
pub struct InlineCmd {
    /// Mode.
    #[arg(value_enum)]
    mode: Mode,
    /// Text to process.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    text: String,
    /// Files, comma-separated (novelty for score/compress; the inputs of batch).
    #[arg(long, allow_hyphen_values = true)]
    files: Option<String>,
    /// Sending agent.
    #[arg(long = "from-agent", allow_hyphen_values = true)]
    from_agent: Option<String>,
    /// Receiving agent.
    #[arg(long = "to-agent", allow_hyphen_values = true)]
    to_agent: Option<String>,
    /// The text unblocks others (score mode).
    #[arg(long)]
    blocker: bool,
}

fn read_batch_item(path: &str) -> BatchItem {
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(content) => BatchItem::Read {
                name: Path::new(path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.to_string()),
                content,
            },
            Err(e) => BatchItem::Failed {
                path: path.to_string(),
                message: python_utf8_error(&e),
            },
        },
        Err(e) => BatchItem::Failed {
            path: path.to_string(),
            message: python_os_error(path, &e),
        },
    }
}

/// Runs `mnemo inline`.
pub fn run(cmd: InlineCmd, global: &Global) -> Result<ExitCode> {
    let (config, _) = load_config(global.config.as_deref())?;
    let inline = Inline::new(&config).context("cannot compile the scoring tables")?;
    // Fail closed: without the scrubber nothing is printed. Only the modes
    // that print text load it (score and stats print numbers only).
    let scrubber = match cmd.mode {
        Mode::Compress | Mode::Batch => {
            Some(Scrubber::default_rules().context("cannot load the secret-scrubbing rules")?)
        }
        Mode::Score | Mode::Stats => None,
    };
    let scrub = |s: &str| match scrubber {
        Some(scrubber) => scrubber.scrub_with(s, ReplacementStyle::Pantheon).text,
        None => s.to_string(),
    };
    let args = InlineArgs {
        text: &cmd.text,
        files: cmd.files.as_deref(),
        from_agent: cmd.from_agent.as_deref(),
        to_agent: cmd.to_agent.as_deref(),
        blocker: cmd.blocker,
    };
    let output = match cmd.mode {
        Mode::Score => inline.score(&args),
        Mode::Compress => inline.compress(&args, &scrub),
        Mode::Stats => Inline::stats(args.text),
        Mode::Batch => {
            let Some(files) = cmd.files.as_deref() else {
                let _ = writeln!(
                    std::io::stderr(),
                    "Error: --files is required for batch mode"
                );
                return Ok(ExitCode::from(1));
            };
            let items: Vec<BatchItem> = split_files(files)
                .into_iter()
                .map(read_batch_item)
                .collect();
            inline.batch(&items, &args, &scrub)
        }
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{output}").context("cannot write to standard output")?;
    Ok(ExitCode::SUCCESS)
}
