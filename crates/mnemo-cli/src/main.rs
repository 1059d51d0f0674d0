//! `mnemo`: the command-line tool.
//!
//! This crate only parses arguments, reads and writes files at the edge, and
//! prints. Scoring, parsing and formatting live in the library crates; this
//! crate adds context and hints to their errors. It never panics on what a
//! user or a file controls, and never writes anything when a command fails.

mod config_cmd;
mod inline_cmd;
mod io_util;
mod score_cmd;
mod scrub_cmd;
mod stats_cmd;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Keeps the working memory of multi-agent coding workflows small,
/// prioritised, secret-free and provenance-safe.
#[derive(Debug, Parser)]
#[command(name = "mnemo", version, about, long_about = None, propagate_version = true)]
struct Cli {
    /// Configuration file (default: `mnemo.toml` found upward from the working directory).
    #[arg(long, global = true, value_name = "FILE", env = "MNEMO_CONFIG")]
    config: Option<PathBuf>,
    /// Memory bank root (default: `paths.bank` of the configuration, `.pantheon/memory-bank`).
    #[arg(long, global = true, value_name = "DIR")]
    bank: Option<PathBuf>,
    /// Print nothing but the command's output (no notes or progress on stderr).
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Score one summary, or every record of a markdown, JSON or YAML input.
    Score(score_cmd::ScoreArgs),
    /// Drop-in for Pantheon's compress-inline.py (modes score, compress, stats, batch).
    Inline(inline_cmd::InlineCmd),
    /// Redact secrets from a file or standard input (or list them with --audit).
    Scrub(scrub_cmd::ScrubArgs),
    /// Count tokens (o200k BPE), lines and characters of a text.
    Stats(stats_cmd::StatsArgs),
    /// Write the full default configuration to `mnemo.toml`.
    Init(config_cmd::InitArgs),
    /// Show or check the configuration in effect.
    #[command(subcommand)]
    Config(config_cmd::ConfigCmd),
}

/// Global options every command may use.
#[derive(Debug, Clone)]
pub struct Global {
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--bank`.
    #[allow(dead_code)]
    pub bank: Option<PathBuf>,
    /// `--quiet`.
    pub quiet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let global = Global {
        config: cli.config,
        bank: cli.bank,
        quiet: cli.quiet,
    };
    let result = match cli.command {
        Command::Score(args) => score_cmd::run(args, &global),
        Command::Inline(cmd) => inline_cmd::run(cmd, &global),
        Command::Scrub(args) => scrub_cmd::run(args, &global),
        Command::Stats(args) => stats_cmd::run(args, &global),
        Command::Init(args) => config_cmd::init(args, &global),
        Command::Config(cmd) => config_cmd::run(cmd, &global),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            report(&e);
            ExitCode::FAILURE
        }
    }
}

/// Prints an error and its causes on stderr, uv style.
fn report(e: &anyhow::Error) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "error: {e}");
    let mut hint = None;
    for cause in e.chain().skip(1) {
        match cause.downcast_ref::<io_util::Hint>() {
            Some(h) => hint = Some(h.0.clone()),
            None => {
                let _ = writeln!(err, "  caused by: {cause}");
            }
        }
    }
    if let Some(h) = hint {
        let _ = writeln!(err, "  hint: {h}");
    }
}
