//! The trail's side of `mnemo hook …`: the PreCompact trail options and the
//! PostCompact / SessionStart events (printing only; the work is
//! `mnemo_hooks::trail_hook`'s).

use crate::guard_cmd::HookEvent;
use clap::Args;
use mnemo_hooks::Host;
use mnemo_hooks::trail_hook::{run_post_compact, run_session_start};
use std::io::Write;
use std::process::ExitCode;

/// Trail options of a PreCompact hook.
#[derive(Debug, Clone, Args)]
pub struct TrailHookArgs {
    /// Token budget (o200k) of the trail handed to the compactor.
    #[arg(long, value_name = "N", default_value_t = mnemo_trail::DEFAULT_BUDGET)]
    pub trail_budget: usize,
    /// Only decide; hand no trail to the compactor.
    #[arg(long)]
    pub no_trail: bool,
}

impl TrailHookArgs {
    /// The budget, or `None` when the trail is off.
    pub fn budget(&self) -> Option<usize> {
        (!self.no_trail).then_some(self.trail_budget)
    }
}

/// Runs a PostCompact or SessionStart hook. Errors (bad hook input) exit
/// non-zero; they never block anything.
pub fn run_event(host: Host, event: HookEvent, quiet: bool) -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin().lock();
    let out = match event {
        HookEvent::PostCompact { opts } => run_post_compact(host, &opts.options(), stdin)?,
        HookEvent::SessionStart { opts } => {
            if host != Host::ClaudeCode {
                anyhow::bail!(
                    "session-start is a Claude Code hook; Codex gets the trail back at post-compact"
                );
            }
            run_session_start(&opts.options(), stdin)?
        }
        HookEvent::PreCompact { .. } => anyhow::bail!("pre-compact is handled by guard_cmd"),
        HookEvent::UserPromptSubmit { opts } => {
            if host != Host::ClaudeCode {
                anyhow::bail!("user-prompt-submit is a Claude Code hook");
            }
            // Never on stdout (the host would add it to the prompt) and
            // never a non-zero exit (exit 2 would drop the user's prompt).
            let notes = mnemo_hooks::prompt::run_user_prompt_submit(&opts.options(), stdin);
            if !quiet && !notes.is_empty() {
                eprint!("{notes}");
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
    if !out.stdout.is_empty() {
        let mut o = std::io::stdout().lock();
        o.write_all(out.stdout.as_bytes())?;
        o.flush()?;
    }
    if !quiet && !out.stderr.is_empty() {
        eprint!("{}", out.stderr);
    }
    Ok(ExitCode::SUCCESS)
}

/// True when the command line is `mnemo … hook claude-code
/// user-prompt-submit …`, whatever else it holds: that hook must never cost
/// the user their prompt, even when its own arguments are wrong.
pub fn is_user_prompt_hook(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    args.windows(3)
        .any(|w| w[0] == "hook" && w[1] == "claude-code" && w[2] == "user-prompt-submit")
}

/// The UserPromptSubmit hook's answer to arguments clap refused (or to
/// `--help`): the message on stderr, never on stdout (Claude Code would add
/// it to the prompt), and exit 0 (exit 2 would drop the user's prompt).
pub fn user_prompt_bad_args(e: &clap::Error) -> ExitCode {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{}", e.render());
    if e.use_stderr() {
        let _ = writeln!(
            err,
            "mnemo hook claude-code user-prompt-submit: nothing recorded; the prompt goes through (exit 0)"
        );
    }
    ExitCode::SUCCESS
}
