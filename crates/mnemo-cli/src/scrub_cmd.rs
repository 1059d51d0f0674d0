//! `mnemo scrub`: redact secrets from a file or standard input.

use std::io::{BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use mnemo_scrub::{ReplacementStyle, Scrubber, StreamOptions};
use serde::Serialize;

// Structs rather than `json!` maps: their members print in this order
// (serde_json's own map sorts them).
#[derive(Serialize)]
struct FindingJson<'a> {
    #[serde(rename = "type")]
    rule: &'a str,
    start: usize,
    end: usize,
    line: usize,
    column: usize,
}

#[derive(Serialize)]
struct Findings<'a> {
    findings: Vec<FindingJson<'a>>,
}

#[derive(Serialize)]
struct RedactionJson<'a> {
    #[serde(rename = "type")]
    rule: &'a str,
    start: usize,
    end: usize,
    replacement: &'a str,
}

#[derive(Serialize)]
struct Scrubbed<'a> {
    text: &'a str,
    redactions: Vec<RedactionJson<'a>>,
}

/// JSON text of an output record (only string keys: cannot fail).
fn json_text<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

use crate::Global;
use crate::io_util::read_input;

/// Inputs up to this size are read whole (line numbers in audits); larger
/// ones are streamed in bounded memory.
const WHOLE_FILE_LIMIT: u64 = 16 * 1024 * 1024;

/// How redacted spans are rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Style {
    /// `[REDACTED:<rule-id>]`.
    Named,
    /// What Pantheon's scrub-secrets.py prints (`[REDACTED]`, `[AWS KEY REDACTED]`, …).
    Pantheon,
}

/// Arguments of `mnemo scrub`.
#[derive(Debug, Args)]
pub struct ScrubArgs {
    /// File to scrub (`-` or nothing: standard input).
    #[arg(value_name = "FILE", conflicts_with_all = ["input", "text"])]
    file: Option<PathBuf>,
    /// Same as FILE.
    #[arg(long, short, value_name = "FILE", conflicts_with = "text")]
    input: Option<PathBuf>,
    /// The text itself, instead of a file.
    #[arg(long, short, value_name = "TEXT", allow_hyphen_values = true)]
    text: Option<String>,
    /// JSON output: `{"text": …, "redactions": [{"type", "start", "end", "replacement"}]}`
    /// with byte offsets into the input (with --audit: the findings).
    #[arg(long)]
    json: bool,
    /// List findings (rule, line, column, byte range) without rewriting.
    #[arg(long)]
    audit: bool,
    /// Replacement style.
    #[arg(long, value_enum, default_value_t = Style::Named)]
    style: Style,
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let col = text
        .get(line_start..offset.min(text.len()))
        .map_or(1, |s| s.chars().count() + 1);
    (line, col)
}

/// Runs `mnemo scrub`.
pub fn run(args: ScrubArgs, global: &Global) -> Result<ExitCode> {
    let scrubber = Scrubber::default_rules().context("cannot load the secret-scrubbing rules")?;
    let style = match args.style {
        Style::Named => ReplacementStyle::Named,
        Style::Pantheon => ReplacementStyle::Pantheon,
    };
    if let Some(text) = &args.text {
        return scrub_text(scrubber, text, style, &args, global);
    }
    let path = args
        .file
        .clone()
        .or_else(|| args.input.clone())
        .unwrap_or_else(|| PathBuf::from("-"));
    let is_stdin = path.as_os_str() == "-";
    let size = if is_stdin {
        None
    } else {
        Some(
            std::fs::metadata(&path)
                .with_context(|| format!("cannot read {}", path.display()))?
                .len(),
        )
    };
    let whole = args.json || (args.audit && size.is_some_and(|s| s <= WHOLE_FILE_LIMIT));
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());

    if whole {
        let (text, name) = read_input(&path)?;
        if args.audit {
            let findings = scrubber.find(&text);
            if args.json {
                let list: Vec<_> = findings
                    .iter()
                    .map(|f| {
                        let (line, column) = line_col(&text, f.start);
                        FindingJson {
                            rule: &f.rule,
                            start: f.start,
                            end: f.end,
                            line,
                            column,
                        }
                    })
                    .collect();
                writeln!(out, "{}", json_text(&Findings { findings: list }))?;
            } else {
                for f in &findings {
                    let (line, col) = line_col(&text, f.start);
                    writeln!(
                        out,
                        "{name}:{line}:{col}: {} (bytes {}..{})",
                        f.rule, f.start, f.end
                    )?;
                }
            }
            report_count(global, findings.len(), "finding");
        } else {
            let scrubbed = scrubber.scrub_with(&text, style);
            let redactions: Vec<_> = scrubbed
                .redactions
                .iter()
                .map(|r| RedactionJson {
                    rule: &r.rule,
                    start: r.start,
                    end: r.end,
                    replacement: &r.replacement,
                })
                .collect();
            writeln!(
                out,
                "{}",
                json_text(&Scrubbed {
                    text: &scrubbed.text,
                    redactions
                })
            )?;
            report_count(global, scrubbed.redactions.len(), "redaction");
        }
        out.flush().context("cannot write to standard output")?;
        return Ok(ExitCode::SUCCESS);
    }

    // Streaming: bounded memory whatever the input size.
    let large = size.filter(|&s| s >= crate::progress::LARGE_FILE);
    let bar = crate::progress::bytes(
        large.is_some() && crate::progress::wanted(global.quiet, args.json),
        large.unwrap_or(0),
        format!("scrubbing {}", path.display()),
    );
    let reader: Box<dyn Read> = if is_stdin {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(
            bar.wrap_read(
                std::fs::File::open(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?,
            ),
        )
    };
    let options = StreamOptions {
        style,
        ..StreamOptions::default()
    };
    let name = if is_stdin {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let mut count = 0usize;
    let guard = ClearOnDrop(bar);
    if args.audit {
        let mut lines: Vec<String> = Vec::new();
        scrubber
            .scrub_stream_with(reader, std::io::sink(), &options, |r| {
                count += 1;
                lines.push(format!("{name}: {} (bytes {}..{})", r.rule, r.start, r.end));
            })
            .with_context(|| format!("cannot scrub {name}"))?;
        guard.0.finish_and_clear();
        for l in lines {
            writeln!(out, "{l}")?;
        }
        report_count(global, count, "finding");
    } else {
        scrubber
            .scrub_stream_with(reader, &mut out, &options, |_| count += 1)
            .with_context(|| format!("cannot scrub {name}"))?;
        guard.0.finish_and_clear();
        report_count(global, count, "redaction");
    }
    out.flush().context("cannot write to standard output")?;
    Ok(ExitCode::SUCCESS)
}

/// `--text`: a literal text, scrubbed whole.
fn scrub_text(
    scrubber: &Scrubber,
    text: &str,
    style: ReplacementStyle,
    args: &ScrubArgs,
    global: &Global,
) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if args.audit {
        let findings = scrubber.find(text);
        for f in &findings {
            let (line, col) = line_col(text, f.start);
            if args.json {
                writeln!(
                    out,
                    "{}",
                    json_text(&FindingJson {
                        rule: &f.rule,
                        start: f.start,
                        end: f.end,
                        line,
                        column: col
                    })
                )?;
            } else {
                writeln!(
                    out,
                    "<text>:{line}:{col}: {} (bytes {}..{})",
                    f.rule, f.start, f.end
                )?;
            }
        }
        report_count(global, findings.len(), "finding");
    } else {
        let scrubbed = scrubber.scrub_with(text, style);
        if args.json {
            let redactions: Vec<_> = scrubbed
                .redactions
                .iter()
                .map(|r| RedactionJson {
                    rule: &r.rule,
                    start: r.start,
                    end: r.end,
                    replacement: &r.replacement,
                })
                .collect();
            writeln!(
                out,
                "{}",
                json_text(&Scrubbed {
                    text: &scrubbed.text,
                    redactions
                })
            )?;
        } else {
            out.write_all(scrubbed.text.as_bytes())?;
        }
        report_count(global, scrubbed.redactions.len(), "redaction");
    }
    out.flush().context("cannot write to standard output")?;
    Ok(ExitCode::SUCCESS)
}

/// Clears a progress bar when the work ends, however it ends.
struct ClearOnDrop(indicatif::ProgressBar);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

fn report_count(global: &Global, n: usize, what: &str) {
    if !global.quiet {
        let s = if n == 1 { "" } else { "s" };
        let _ = writeln!(std::io::stderr(), "{n} {what}{s}");
    }
}
