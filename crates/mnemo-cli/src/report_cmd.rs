//! `mnemo report [--out FILE] [--open] [--json]`: reads the bank and, when
//! there is one, the Guardian's session store, and prints (or writes) the
//! report that `mnemo-report` computes. Nothing in the bank or the store is
//! changed: the store is opened read-only.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use mnemo_bank::Bank;
use mnemo_bank::layout::{ACTIVE_CONTEXT, PROGRESS_LOG, XREF_INDEX};
use mnemo_guardian::policy::Policy;
use mnemo_report::{BankFiles, CompactionRow, SessionRows, StepRow, StoreDump};
use mnemo_score::Engine;
use mnemo_scrub::Scrubber;

use crate::Global;
use crate::io_util::{config_relative, hinted, load_config};

/// `mnemo report` arguments.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Write the report to FILE (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Open the written page in a browser (`$BROWSER`, else `xdg-open`).
    #[arg(long)]
    pub open: bool,
    /// The report's data as JSON instead of HTML.
    #[arg(long)]
    pub json: bool,
    /// Guardian session store (default: $MNEMO_HOME/guardian.sqlite3, as `mnemo guard`).
    #[arg(long, value_name = "FILE")]
    pub store: Option<PathBuf>,
    /// Leave the Guardian's store out of the report.
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// Guardian policy TOML used to classify steps as trusted and re-grounding.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

/// Reads every file of the bank the report uses.
pub fn read_bank(bank: &Bank) -> Result<BankFiles> {
    let read = |rel: &str| {
        bank.read(rel)
            .with_context(|| format!("cannot read {}", bank.path(rel).display()))
    };
    let mut files = BankFiles {
        active_context: read(ACTIVE_CONTEXT)?,
        progress_log: read(PROGRESS_LOG)?,
        xref_index: read(XREF_INDEX)?,
        gate_log: read(mnemo_report::GATE_LOG)?,
        ..BankFiles::default()
    };
    for (dir, prefix, suffix, out) in [
        (".tmp", "ZZ-phase", "-context.md", &mut files.zz),
        (
            "_notes/archive",
            "",
            "-compressed-entries.md",
            &mut files.archives,
        ),
    ] {
        let names = match std::fs::read_dir(bank.path(dir)) {
            Ok(d) => d
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
                .collect::<Vec<_>>(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("cannot list {}", bank.path(dir).display())));
            }
        };
        let mut names = names;
        names.sort();
        for n in names {
            let rel = format!("{dir}/{n}");
            if let Some(text) = read(&rel)? {
                out.push((rel, text));
            }
        }
    }
    Ok(files)
}

/// Reads the store's sessions and classifies each step under `policy`.
pub fn read_store(path: &Path, policy: &Policy) -> Result<StoreDump> {
    let sessions = mnemo_guardian_store::read::read_sessions(path)
        .with_context(|| format!("cannot read the Guardian store {}", path.display()))?;
    let sessions = sessions
        .into_iter()
        .map(|s| SessionRows {
            session_id: s.session_id,
            steps: s
                .steps
                .into_iter()
                .map(|(st, timestamp)| {
                    let trusts: Vec<Option<mnemo_guardian::policy::Trust>> = st
                        .provenance
                        .iter()
                        .map(|p| policy.fixed_trust(p.origin, p.source_id.as_deref()))
                        .collect();
                    let trust = if trusts.is_empty() {
                        None
                    } else if trusts.contains(&None) {
                        Some("lineage".to_string())
                    } else {
                        trusts
                            .iter()
                            .flatten()
                            .min()
                            .map(|t| t.as_str().to_string())
                    };
                    let regrounding = !st.provenance.is_empty()
                        && trust.as_deref() == Some("trusted")
                        && st
                            .provenance
                            .iter()
                            .all(|p| policy.regrounding.contains(&p.origin));
                    StepRow {
                        seq: st.seq,
                        step_id: st.step_id,
                        method: st.method,
                        timestamp,
                        origins: st
                            .provenance
                            .iter()
                            .map(|p| p.origin.as_str().to_string())
                            .collect(),
                        trust,
                        regrounding,
                    }
                })
                .collect(),
            compactions: s
                .compactions
                .into_iter()
                .map(|c| CompactionRow {
                    step_id: c.step_id,
                    entries: c.entries,
                    verdict: c.verdict.as_str().to_string(),
                    reasoning: c.reasoning,
                    reason_codes: c.reason_codes,
                })
                .collect(),
        })
        .collect();
    Ok(StoreDump { sessions })
}

/// `mnemo report`.
pub fn run(args: ReportArgs, global: &Global) -> Result<ExitCode> {
    let (config, cfg_path) = load_config(global.config.as_deref())?;
    let root = global
        .bank
        .clone()
        .unwrap_or_else(|| config_relative(cfg_path.as_deref(), &config.paths.bank));
    let bank = Bank::new(root);
    bank.require().map_err(|e| {
        hinted(
            e.to_string(),
            "`mnemo gate` creates a bank; `--bank DIR` names another one",
        )
    })?;
    let files = read_bank(&bank)?;
    let store_path = match (&args.store, args.no_store) {
        (_, true) => None,
        (Some(p), false) => Some(p.clone()),
        (None, false) => Some(mnemo_guardian_store::default_store_path()),
    };
    let store = match store_path {
        // An explicit --store must exist; the default store is optional.
        Some(p) if p.is_file() => {
            let policy = mnemo_guardian_store::load_policy(args.policy.as_deref())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Some(read_store(&p, &policy)?)
        }
        Some(p) if args.store.is_some() => {
            anyhow::bail!("the Guardian store {} does not exist", p.display())
        }
        _ => None,
    };
    let engine = Engine::new(&config).map_err(|e| anyhow::anyhow!("{e}"))?;
    let scrubber = Scrubber::default_rules().map_err(|e| {
        anyhow::anyhow!("the scrubber cannot load its rules ({e}); nothing written")
    })?;
    let report = mnemo_report::build(&files, store.as_ref(), &config, &engine, scrubber);
    let text = if args.json {
        mnemo_report::to_json(&report)
    } else {
        mnemo_report::to_html(&report)
    };
    let target = match (&args.out, args.open) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => Some(std::env::temp_dir().join(format!(
            "mnemo-report-{}.{}",
            std::process::id(),
            if args.json { "json" } else { "html" }
        ))),
        (None, false) => None,
    };
    match &target {
        Some(p) => write_atomic(p, &text)?,
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(text.as_bytes())
                .context("cannot write to standard output")?;
        }
    }
    if let Some(p) = &target {
        if !global.quiet {
            eprintln!(
                "report: {} ({} bytes, {} entries, {} phases)",
                p.display(),
                text.len(),
                report.totals.entries,
                report.totals.phases
            );
        }
        if args.open {
            open_in_browser(p)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let tmp = dir.join(format!(".{name}.mnemo-{}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow::Error::new(e).context(format!("cannot write {}", path.display())));
    }
    Ok(())
}

fn open_in_browser(path: &Path) -> Result<()> {
    let browser = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| "xdg-open".into());
    std::process::Command::new(&browser)
        .arg(path)
        .stdin(std::process::Stdio::null())
        .spawn()
        .map(drop)
        .map_err(|e| {
            hinted(
                format!("cannot start {browser}: {e}"),
                "set $BROWSER, or open the file yourself",
            )
        })
}
