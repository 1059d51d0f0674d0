//! `mnemo hook decision`: the compaction decisions the PreCompact hook
//! recorded in the session store, newest first, for hosts that do not show
//! a hook's reason (`codex exec` prints only "hook: PreCompact Stopped").
//! The edge only: the store is read by `mnemo_guardian_store::read`, opened
//! read-only (nothing is created or migrated).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use mnemo_guardian::store::CompactionRecord;
use mnemo_guardian_store::GuardOptions;
use serde_json::json;

use crate::io_util::hinted;

/// Options of `mnemo hook decision`.
#[derive(Debug, Clone, Args)]
pub struct DecisionArgs {
    /// The host's session id (Codex prints it as `session id:`; Claude
    /// Code's is in its hook input). Default: every session's.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// The session store the hooks write: a SQLite file. Default:
    /// $MNEMO_STORE, else $MNEMO_HOME/guardian.sqlite3, else
    /// $XDG_DATA_HOME/mnemo/guardian.sqlite3, else
    /// ~/.local/share/mnemo/guardian.sqlite3 (as for the hooks).
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// How many decisions to print, newest first.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub last: u32,
    /// One JSON object a line instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `mnemo hook decision`.
pub fn run(args: &DecisionArgs) -> Result<ExitCode> {
    let path = mnemo_guardian_store::store_location(&GuardOptions {
        store: args.store.clone(),
        ..GuardOptions::default()
    });
    let shown = path.display().to_string();
    if mnemo_postgres::is_postgres_url(&shown) {
        return Err(hinted(
            format!(
                "the session store {} is a PostgreSQL database",
                mnemo_postgres::redact_url(&shown)
            ),
            "`mnemo hook decision` reads a SQLite store; in PostgreSQL the decisions are in the \
             guardian schema's compactions table",
        ));
    }
    if !path.is_file() {
        return Err(hinted(
            format!("no session store at {shown}"),
            "no hook has recorded a decision there: pass --store (or set MNEMO_STORE) to the \
             store your hooks were configured with",
        ));
    }
    let rows = mnemo_guardian_store::read::recent_compactions(
        &path,
        args.session.as_deref(),
        args.last as usize,
    )
    .map_err(|e| anyhow::anyhow!("cannot read the session store {shown}: {e}"))?;
    if rows.is_empty() {
        let whose = match &args.session {
            Some(s) => format!("for session {s}"),
            None => "for any session".to_string(),
        };
        eprintln!("mnemo: no compaction decision is recorded {whose} in {shown}");
        return Ok(ExitCode::FAILURE);
    }
    let mut out = std::io::stdout().lock();
    for (session, rec) in &rows {
        if args.json {
            writeln!(out, "{}", as_json(session, rec))?;
        } else {
            write!(out, "{}", as_text(session, rec))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn as_json(session: &str, rec: &CompactionRecord) -> serde_json::Value {
    json!({
        "session_id": session,
        "step_id": rec.step_id,
        "verdict": rec.verdict.as_str(),
        "entries": rec.entries.len(),
        "reasoning": rec.reasoning,
        "reason_codes": rec.reason_codes,
    })
}

fn as_text(session: &str, rec: &CompactionRecord) -> String {
    let mut o = format!(
        "session {session}: {} (preCompact {}, {} entries)\n",
        rec.verdict.as_str(),
        rec.step_id,
        rec.entries.len()
    );
    match &rec.reasoning {
        Some(r) if !r.is_empty() => o.push_str(&format!("  reasoning: {r}\n")),
        Some(_) => {}
        None => o.push_str("  reasoning: not kept (a store written before mnemo kept it)\n"),
    }
    if !rec.reason_codes.is_empty() {
        o.push_str(&format!(
            "  reason codes: {}\n",
            rec.reason_codes.join(", ")
        ));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_guardian::Verdict;

    #[test]
    fn text_names_the_verdict_reasoning_and_codes() {
        let rec = CompactionRecord {
            step_id: "r1".into(),
            entries: vec!["a".into(), "b".into()],
            verdict: Verdict::Deny,
            reasoning: Some("untrusted tool output; re-ground with a user message".into()),
            reason_codes: vec!["untrusted_content".into()],
        };
        let t = as_text("s1", &rec);
        assert_eq!(
            t,
            "session s1: deny (preCompact r1, 2 entries)\n  reasoning: untrusted tool output; re-ground with a user message\n  reason codes: untrusted_content\n"
        );
        let j = as_json("s1", &rec);
        assert_eq!(j["verdict"], "deny");
        assert_eq!(j["entries"], 2);
    }
}
