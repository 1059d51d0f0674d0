//! `mnemo score`: score one summary, or every record of an input.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use mnemo_model::{Format, Hundredths, Matching, SummaryRecord, parse_records};
use mnemo_score::{Engine, Score, ScoreInput};
use serde::Serialize;

use crate::Global;
use crate::io_util::{hinted, load_config, read_input};

/// Keyword matching profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Profile {
    /// The configuration's matching mode (word-start by default).
    Mnemo,
    /// Pantheon's script: plain case-insensitive substring matching.
    Pantheon,
}

/// Input format, when it cannot be told from the file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// Pantheon's `## subtask_summary` markdown.
    Markdown,
    /// JSON object or array.
    Json,
    /// YAML mapping or sequence.
    Yaml,
}

/// Arguments of `mnemo score`.
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// Summary file: markdown, JSON or YAML, one record or a list (`-` for
    /// standard input).
    #[arg(value_name = "FILE", conflicts_with_all = ["input", "text"])]
    file: Option<PathBuf>,
    /// Same as FILE.
    #[arg(long, short, value_name = "FILE", conflicts_with = "text")]
    input: Option<PathBuf>,
    /// The summary text itself, instead of a file.
    #[arg(long, short, value_name = "TEXT", allow_hyphen_values = true)]
    text: Option<String>,
    /// Format of the file (default: from the file name, then the content).
    #[arg(long, value_enum)]
    format: Option<InputFormat>,
    /// Sending agent (default for records: their `from` or `agent`).
    #[arg(long, value_name = "AGENT")]
    from: Option<String>,
    /// Receiving (next) agent (default for records: their `to`).
    #[arg(long, value_name = "AGENT")]
    to: Option<String>,
    /// Files changed, comma-separated (with --text only).
    #[arg(long, value_name = "a,b", requires = "text")]
    files: Option<String>,
    /// The summary unblocks others (with --text only).
    #[arg(long, requires = "text")]
    blocker: bool,
    /// Keyword matching profile.
    #[arg(long, value_enum, default_value_t = Profile::Mnemo)]
    profile: Profile,
    /// JSON Lines output: one object per record.
    #[arg(long)]
    json: bool,
}

struct Scored {
    record: SummaryRecord,
    score: Score,
}

/// Runs `mnemo score`.
pub fn run(args: ScoreArgs, global: &Global) -> Result<ExitCode> {
    let (config, _) = load_config(global.config.as_deref())?;
    let engine = match args.profile {
        Profile::Mnemo => Engine::new(&config),
        Profile::Pantheon => Engine::with_matching(&config, Matching::Substring),
    }
    .context("cannot compile the scoring tables")?;

    let path = args.file.as_ref().or(args.input.as_ref());
    if args.format.is_some() && path.is_none() {
        bail!(hinted(
            "--format applies to a file",
            "give the file (`-` for standard input) with --format"
        ));
    }
    let (records, source) = match (&args.text, path) {
        (Some(text), None) => {
            let record = SummaryRecord {
                summary: text.clone(),
                files_changed: args
                    .files
                    .as_deref()
                    .map(mnemo_model::record::split_file_list)
                    .unwrap_or_default(),
                unblocks: args.blocker,
                ..Default::default()
            };
            (vec![record], None)
        }
        (None, Some(path)) => {
            let (text, name) = read_input(path)?;
            let format = match args.format {
                Some(InputFormat::Markdown) => Format::Markdown,
                Some(InputFormat::Json) => Format::Json,
                Some(InputFormat::Yaml) => Format::Yaml,
                None => Format::detect(&text, (name != "<stdin>").then_some(name.as_str())),
            };
            let records = parse_records(&text, &name, format).map_err(|e| {
                hinted(
                    e,
                    "a summary is a `## subtask_summary` markdown block, a JSON or a YAML object with at least `summary`; see examples/",
                )
            })?;
            (records, Some(name))
        }
        _ => bail!(hinted(
            "nothing to score",
            "give a summary file (`-` for standard input), or the text with --text"
        )),
    };

    let scored: Vec<Scored> = records
        .into_iter()
        .map(|record| {
            let text = record.scoring_text();
            let from = args.from.as_deref().or(record.sender());
            let to = args.to.as_deref().or(record.to.as_deref());
            let score = engine.score(&ScoreInput {
                text: &text,
                files: record.files_changed.len(),
                from,
                to,
                unblocks: record.unblocks,
                has_blockers: record.has_blockers(),
            });
            Scored { record, score }
        })
        .collect();

    if !global.quiet {
        let mut err = std::io::stderr().lock();
        for (i, s) in scored.iter().enumerate() {
            for d in &s.record.dropped {
                let at = match (&source, d.line) {
                    (Some(src), Some(line)) => format!("{src}:{line}"),
                    (Some(src), None) => format!("{src} record {}", i + 1),
                    (None, _) => format!("record {}", i + 1),
                };
                let _ = writeln!(
                    err,
                    "note: {at}: field `{}` dropped (only metadata is promoted: Layer 1)",
                    d.name
                );
            }
        }
    }

    let mut out = std::io::stdout().lock();
    if args.json {
        for (i, s) in scored.iter().enumerate() {
            let line = serde_json::to_string(&json_line(&engine, i, s))
                .context("cannot encode a score")?;
            writeln!(out, "{line}").context("cannot write to standard output")?;
        }
    } else {
        write_table(&mut out, &engine, &scored).context("cannot write to standard output")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One `score --json` line. A struct rather than a `json!` map, so the
/// members print in this order (serde_json's own map sorts them).
#[derive(Serialize)]
struct JsonLine<'a> {
    record: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    phase: Option<&'a str>,
    score: f64,
    band: &'static str,
    impact: f64,
    risk: f64,
    novelty: f64,
    blockers: f64,
    downstream: f64,
    keywords_found: Vec<&'a str>,
    explain: Pairs,
    score_exact: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dropped: Vec<&'a str>,
}

/// Named members in the engine's order, as one JSON object.
struct Pairs(Vec<(&'static str, String)>);

impl Serialize for Pairs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

fn h(v: Hundredths) -> f64 {
    v.as_f64()
}

fn json_line<'a>(engine: &'a Engine, index: usize, s: &'a Scored) -> JsonLine<'a> {
    let score = &s.score;
    JsonLine {
        record: index + 1,
        agent: s.record.agent.as_deref(),
        phase: s.record.phase.as_deref(),
        score: score.total.as_f64_rounded(),
        band: score.band.as_str(),
        impact: h(score.impact),
        risk: h(score.risk),
        novelty: h(score.novelty),
        blockers: h(score.blockers),
        downstream: h(score.downstream),
        keywords_found: score
            .keywords
            .iter()
            .filter_map(|&i| engine.keywords().get(i))
            .map(|k| k.keyword.as_str())
            .collect(),
        explain: Pairs(engine.explain(score)),
        score_exact: format!(
            "{}.{:04}",
            score.total.ten_thousandths() / 10_000,
            score.total.ten_thousandths() % 10_000
        ),
        dropped: s.record.dropped.iter().map(|d| d.name.as_str()).collect(),
    }
}

fn write_table(out: &mut impl Write, engine: &Engine, scored: &[Scored]) -> std::io::Result<()> {
    let rows: Vec<[String; 10]> = scored
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let sc = &s.score;
            let agent = s.record.agent.clone().unwrap_or_else(|| "-".into());
            let phase = s.record.phase.clone().unwrap_or_else(|| "-".into());
            let keywords: Vec<&str> = sc
                .keywords
                .iter()
                .filter_map(|&k| engine.keywords().get(k))
                .map(|k| k.keyword.as_str())
                .collect();
            [
                (i + 1).to_string(),
                format!("{agent}/{phase}"),
                sc.total.to_string(),
                sc.band.to_string(),
                sc.impact.to_string(),
                sc.risk.to_string(),
                sc.novelty.to_string(),
                sc.blockers.to_string(),
                sc.downstream.to_string(),
                if keywords.is_empty() {
                    "-".into()
                } else {
                    keywords.join(", ")
                },
            ]
        })
        .collect();
    let header = [
        "#",
        "agent/phase",
        "score",
        "band",
        "impact",
        "risk",
        "novelty",
        "blockers",
        "downstream",
        "keywords",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let n = cells.len();
        cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i + 1 == n {
                    c.to_string()
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    writeln!(out, "{}", line(header.to_vec()))?;
    for row in &rows {
        writeln!(out, "{}", line(row.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}
