//! `mnemo stats`: real BPE token counts beside lines and characters.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use mnemo_inline::python_line_count;
use mnemo_tokens::{count_o200k, estimate};

use crate::Global;
use crate::io_util::{hinted, read_input};

/// Arguments of `mnemo stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The file to measure (`-` for standard input).
    #[arg(value_name = "FILE", conflicts_with_all = ["input", "text"])]
    file: Option<PathBuf>,
    /// Same as FILE.
    #[arg(long, short, value_name = "FILE", conflicts_with = "text")]
    input: Option<PathBuf>,
    /// The text itself, instead of a file.
    #[arg(long, short, value_name = "TEXT", allow_hyphen_values = true)]
    text: Option<String>,
    /// JSON output.
    #[arg(long)]
    json: bool,
}

/// Runs `mnemo stats`.
pub fn run(args: StatsArgs, _global: &Global) -> Result<ExitCode> {
    let text = match (args.text, args.file.as_ref().or(args.input.as_ref())) {
        (Some(t), None) => t,
        (None, Some(path)) => read_input(path)?.0,
        _ => bail!(hinted(
            "nothing to measure",
            "give a file (`-` for standard input), or the text with --text"
        )),
    };
    let tokens = count_o200k(&text)?;
    let estimate = estimate(&text);
    let lines = python_line_count(&text);
    let chars = text.chars().count();
    let bytes = text.len();
    let mut out = std::io::stdout().lock();
    if args.json {
        // A struct, not `json!`: its members print in this order.
        #[derive(serde::Serialize)]
        struct Stats {
            tokens: usize,
            encoding: &'static str,
            tokens_estimate: usize,
            lines: usize,
            chars: usize,
            bytes: usize,
        }
        let v = serde_json::to_string(&Stats {
            tokens,
            encoding: "o200k_base",
            tokens_estimate: estimate,
            lines,
            chars,
            bytes,
        })
        .context("cannot encode the stats")?;
        writeln!(out, "{v}")
    } else {
        writeln!(
            out,
            "tokens     {tokens} (o200k_base)\nestimate   {estimate} (characters / 4)\nlines      {lines}\nchars      {chars}\nbytes      {bytes}"
        )
    }
    .context("cannot write to standard output")?;
    Ok(ExitCode::SUCCESS)
}
