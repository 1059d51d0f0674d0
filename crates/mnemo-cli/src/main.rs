//! `mnemo`: the command-line tool.
//!
//! This crate only parses arguments, reads and writes files at the edge, and
//! prints. Scoring, parsing and formatting live in the library crates; this
//! crate adds context and hints to their errors. It never panics on what a
//! user or a file controls, and never writes anything when a command fails.

mod bank_cmd;
mod config_cmd;
mod decision_cmd;
mod guard_cmd;
mod hook_trail_cmd;
mod inline_cmd;
mod install_cmd;
mod io_util;
mod mcp_cmd;
mod progress;
mod report_cmd;
mod score_cmd;
mod scrub_cmd;
mod stats_cmd;
mod trail_cmd;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The C library's allocator for one-shot commands, mimalloc for the
/// servers (`guard http`, `guard stdio`: decided before `main` from the
/// command line, or switched by `use_mimalloc` before they serve):
/// mimalloc saves `guard http` ~25k of ~170k instructions a request, and
/// costs a hook ~0.5-1 ms (transparent huge pages, more page faults, its
/// exit purge). See mnemo-alloc and bench/guardian/README.md.
#[global_allocator]
static ALLOCATOR: mnemo_alloc::Switch = mnemo_alloc::Switch;

/// mnemo keeps the working memory of multi-agent coding workflows small,
/// prioritised, secret-free and provenance-safe.
///
/// Agents finish a phase and return summaries: `mnemo gate` scores them,
/// compresses them to a line budget and writes them into a markdown memory
/// bank in the repository, and `mnemo handoff` prints what the next agent
/// reads. A Guardian (`mnemo guard`, `mnemo hook`) decides whether a
/// compaction may happen at all, so untrusted content is never laundered
/// into trusted summaries. `mnemo inline` is a drop-in for Pantheon's
/// compress-inline.py, `mnemo mcp` an MCP server.
#[derive(Debug, Parser)]
#[command(
    name = "mnemo",
    version,
    about = "mnemo keeps the working memory of multi-agent coding workflows small, prioritised, secret-free and provenance-safe.",
    long_about,
    propagate_version = true,
    after_help = "Start with `mnemo gate` (a batch of summaries into the bank) and `mnemo handoff`; \
`mnemo <command> --help` describes each command."
)]
struct Cli {
    /// Configuration file (default: `mnemo.toml` found upward from the working directory).
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "MNEMO_CONFIG",
        help_heading = "Global options"
    )]
    config: Option<PathBuf>,
    /// Memory bank root (default: `paths.bank` of the configuration, `.pantheon/memory-bank`).
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        help_heading = "Global options"
    )]
    bank: Option<PathBuf>,
    /// Print nothing but the command's output (no notes or progress on stderr).
    #[arg(long, short, global = true, help_heading = "Global options")]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Score one summary, or every record of a markdown, JSON or YAML input.
    Score(score_cmd::ScoreArgs),
    /// Drop-in for Pantheon's compress-inline.py (score, compress, stats, batch) and scrub-secrets.py (scrub).
    Inline(inline_cmd::InlineCmd),
    /// Redact secrets from a file or standard input (or list them with --audit).
    Scrub(scrub_cmd::ScrubArgs),
    /// Count tokens (o200k BPE), lines and characters of a text.
    Stats(stats_cmd::StatsArgs),
    /// Write the full default configuration to `mnemo.toml` and an empty memory bank.
    Init(config_cmd::InitArgs),
    /// Show or check the configuration in effect.
    #[command(subcommand)]
    Config(config_cmd::ConfigCmd),
    /// C1–C3 phase gate: compress a batch of summaries into the memory bank.
    Gate(bank_cmd::GateArgs),
    /// C4: record a completed feature's plan and clean its `.tmp/` artifacts.
    FeatureComplete(bank_cmd::FeatureArgs),
    /// C5: sprint close (bulk clean-up, cross-ref archive, unresolved items flagged).
    SprintClose(bank_cmd::DateArgs),
    /// C6: compress the subtask summaries waiting in `.tmp/`.
    Compress(bank_cmd::CompressArgs),
    /// C7: trim `## Completed Phases` to its cap, archiving what is removed.
    Trim(bank_cmd::DateArgs),
    /// Print the next agent's prompt block (learnings + ZZ artifact).
    Handoff(bank_cmd::HandoffArgs),
    /// Check the bank, finish interrupted commits, clean stale temp files.
    Doctor(bank_cmd::DoctorArgs),
    /// Git history of a bank file.
    History(bank_cmd::HistoryArgs),
    /// Restore a bank file from git (refuses to destroy uncommitted changes).
    Restore(bank_cmd::RestoreArgs),
    /// MCP server on stdio (exits 0 when the client closes standard input).
    Mcp,
    /// The ACS Guardian for compaction: stdio server, HTTP server, or one request.
    #[command(subcommand)]
    Guard(guard_cmd::GuardCommand),
    /// Host adapters for the Guardian (Claude Code, Codex CLI hooks).
    #[command(subcommand)]
    Hook(guard_cmd::HookCommand),
    /// A picture of the memory: one self-contained HTML page (or `--json`) of the bank and the Guardian's sessions.
    Report(report_cmd::ReportArgs),
    /// The artifact trail of a host transcript: files, commands and exit codes, constraints, decisions, open errors, numbers.
    Trail(trail_cmd::TrailArgs),
}

/// `mnemo hook …`, which the hosts run at every compaction: the parser of
/// the hook commands alone (with the global options), not of every
/// command. A command line it does not take whole (`--help`, `--version`,
/// any error) goes to [`Cli`], which answers as it always does.
#[derive(Debug, Parser)]
#[command(name = "mnemo", version)]
struct HookCli {
    #[arg(long, global = true, env = "MNEMO_CONFIG")]
    config: Option<PathBuf>,
    #[arg(long, global = true)]
    bank: Option<PathBuf>,
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: HookOnly,
}

#[derive(Debug, Subcommand)]
enum HookOnly {
    #[command(subcommand)]
    Hook(guard_cmd::HookCommand),
}

/// Global options every command may use.
#[derive(Debug, Clone)]
pub struct Global {
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--bank`.
    pub bank: Option<PathBuf>,
    /// `--quiet`.
    pub quiet: bool,
}

fn main() -> ExitCode {
    // Most runs are one-shot (hooks above all): glibc's malloc keeps its
    // large buffers' pages instead of mapping fresh ones (mnemo-alloc).
    mnemo_alloc::tune_c_malloc_for_one_shot();
    // `mnemo inline …` takes the scripts' own command line: no clap, no
    // configuration, so that the drop-in starts as fast as the binary can.
    if std::env::args_os().nth(1).is_some_and(|a| a == "inline") {
        return inline_cmd::run_raw(std::env::args_os().skip(2).collect());
    }
    if std::env::args_os().nth(1).is_some_and(|a| a == "hook")
        && let Ok(HookCli {
            command: HookOnly::Hook(cmd),
            quiet,
            ..
        }) = parse_and_leak::<HookCli, _>(std::env::args_os())
    {
        return finish(guard_cmd::run_hook(cmd, quiet));
    }
    let cli = match parse_and_leak::<Cli, _>(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) if hook_trail_cmd::is_user_prompt_hook(std::env::args_os()) => {
            return hook_trail_cmd::user_prompt_bad_args(&e);
        }
        Err(e) => {
            // --help and --version print to stdout; a closed pipe is fine.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let global = Global {
        config: cli.config,
        bank: cli.bank,
        quiet: cli.quiet,
    };
    let result = match cli.command {
        Command::Score(args) => score_cmd::run(args, &global),
        Command::Inline(cmd) => Ok(inline_cmd::run(cmd)),
        Command::Scrub(args) => scrub_cmd::run(args, &global),
        Command::Stats(args) => stats_cmd::run(args, &global),
        Command::Init(args) => config_cmd::init(args, &global),
        Command::Config(cmd) => config_cmd::run(cmd, &global),
        Command::Gate(args) => bank_cmd::gate(args, &global),
        Command::FeatureComplete(args) => bank_cmd::feature_complete(args, &global),
        Command::SprintClose(args) => bank_cmd::sprint_close(args, &global),
        Command::Compress(args) => bank_cmd::compress(args, &global),
        Command::Trim(args) => bank_cmd::trim(args, &global),
        Command::Handoff(args) => bank_cmd::handoff(args, &global),
        Command::Doctor(args) => bank_cmd::doctor(args, &global),
        Command::History(args) => bank_cmd::history(args, &global),
        Command::Restore(args) => bank_cmd::restore(args, &global),
        Command::Mcp => mcp_cmd::run(&global),
        Command::Guard(cmd) => guard_cmd::run_guard(cmd, global.quiet),
        Command::Hook(cmd) => guard_cmd::run_hook(cmd, global.quiet),
        Command::Report(args) => report_cmd::run(args, &global),
        Command::Trail(args) => trail_cmd::run(args, &global),
    };
    finish(result)
}

/// `P::try_parse_from(args)`, except that clap's `Command` and the matches
/// are leaked, not dropped: the process is one command and exits after it,
/// and dropping the `Command` (every argument's names, help and settings)
/// was ~170k of the ~880k instructions of `mnemo --version`. Errors are
/// formatted with the same command, as `try_parse` formats them.
fn parse_and_leak<P, I>(args: I) -> Result<P, clap::Error>
where
    P: Parser,
    I: IntoIterator,
    I::Item: Into<std::ffi::OsString> + Clone,
{
    let mut cmd = P::command();
    let parsed = match cmd.try_get_matches_from_mut(args) {
        Ok(mut matches) => {
            let p = P::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut cmd));
            std::mem::forget(matches);
            p
        }
        Err(e) => Err(e),
    };
    std::mem::forget(cmd);
    parsed
}

/// The exit code of a command's result (its error printed).
fn finish(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        // A reader that went away (`mnemo stats … | head -1`) ends the
        // command quietly, as it ends other Unix tools.
        Err(e) if io_util::is_broken_pipe(&e) => ExitCode::SUCCESS,
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
    // The bank's errors know what to do about them.
    if let Some(b) = e
        .chain()
        .find_map(|c| c.downcast_ref::<mnemo_bank::BankError>())
    {
        hint = b.hint();
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// What the whole parser makes of a hook command line, and what the
    /// hook parser makes of it (`None`: it does not take it).
    fn both(args: &[&str]) -> (Option<String>, Option<String>) {
        let full = match parse_and_leak::<Cli, _>(args) {
            Ok(Cli {
                command: Command::Hook(c),
                quiet,
                ..
            }) => Some(format!("{c:?} quiet={quiet}")),
            _ => None,
        };
        let hook = match parse_and_leak::<HookCli, _>(args) {
            Ok(HookCli {
                command: HookOnly::Hook(c),
                quiet,
                ..
            }) => Some(format!("{c:?} quiet={quiet}")),
            Err(_) => None,
        };
        (full, hook)
    }

    /// mnemo-alloc decides before `main` whether the process is a server
    /// (mimalloc from its first block): its reading of the command line
    /// agrees with clap's on every line clap takes.
    #[test]
    fn the_allocator_finds_the_servers_as_clap_does() {
        for line in [
            "mnemo guard http --listen 127.0.0.1:7717",
            "mnemo --quiet guard http --listen a --memory",
            "mnemo -q --config c.toml --bank b guard stdio",
            "mnemo --config=c.toml guard -q http --listen a",
            "mnemo guard --bank b stdio --memory",
            "mnemo guard check --memory",
            "mnemo hook claude-code pre-compact --memory",
            "mnemo hook codex pre-compact --memory --no-trail",
            "mnemo trail t.jsonl",
            "mnemo scrub f.txt",
            "mnemo mcp",
            "mnemo --bank b gate --phase 1 --from a --to b s.md",
        ] {
            let args: Vec<&str> = line.split(' ').collect();
            let clap = match Cli::try_parse_from(&args) {
                Ok(Cli {
                    command: Command::Guard(g),
                    ..
                }) => matches!(
                    g,
                    guard_cmd::GuardCommand::Http { .. } | guard_cmd::GuardCommand::Stdio { .. }
                ),
                Ok(_) => false,
                Err(e) => panic!("{line}: {e}"),
            };
            let ours = mnemo_alloc::is_server_command(args[1..].iter().map(|a| a.as_bytes()));
            assert_eq!(ours, clap, "{line}");
        }
    }

    #[test]
    fn leaking_the_parser_answers_as_clap_does() {
        for line in [
            "mnemo --version",
            "mnemo --help",
            "mnemo gate --help",
            "mnemo",
            "mnemo nosuch",
            "mnemo gate --phase x",
            "mnemo trail",
            "mnemo --quiet scrub --nosuch",
            "mnemo hook claude-code pre-compact --memory --store s",
            "mnemo guard http --listen 127.0.0.1:1 --tls-cert c",
            "mnemo scrub -q f.txt",
        ] {
            let args: Vec<&str> = line.split(' ').collect();
            let ours = parse_and_leak::<Cli, _>(args.clone());
            let clap = Cli::try_parse_from(args);
            match (ours, clap) {
                (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{line}"),
                (Err(a), Err(b)) => {
                    assert_eq!(a.kind(), b.kind(), "{line}");
                    assert_eq!(a.exit_code(), b.exit_code(), "{line}");
                    assert_eq!(a.render().to_string(), b.render().to_string(), "{line}");
                }
                (a, b) => panic!("{line}: {:?} vs {:?}", a.is_ok(), b.is_ok()),
            }
        }
    }

    #[test]
    fn the_hook_parser_reads_hook_lines_as_the_whole_parser() {
        HookCli::command().debug_assert();
        for line in [
            "mnemo hook claude-code pre-compact --memory",
            "mnemo hook claude-code pre-compact --memory --no-trail -q",
            "mnemo hook claude-code pre-compact --block-with json --trail-budget 900",
            "mnemo hook codex pre-compact --memory --policy p.toml",
            "mnemo hook --quiet codex post-compact",
            "mnemo hook claude-code post-compact --store /tmp/x.sqlite3",
            "mnemo hook claude-code session-start",
            "mnemo hook claude-code user-prompt-submit",
            "mnemo hook install claude-code --print",
            "mnemo hook codex pre-compact --config c.toml --bank b",
        ] {
            let args: Vec<&str> = line.split(' ').collect();
            let (full, hook) = both(&args);
            assert!(full.is_some(), "{line}");
            assert_eq!(full, hook, "{line}");
        }
        // what the hook parser refuses goes to the whole parser
        for line in [
            "mnemo hook --help",
            "mnemo hook claude-code pre-compact --help",
            "mnemo hook --version",
            "mnemo hook claude-code pre-compact --no-such-flag",
            "mnemo hook claude-code user-prompt-submit --bad",
            "mnemo hook",
        ] {
            let args: Vec<&str> = line.split(' ').collect();
            assert_eq!(both(&args), (None, None), "{line}");
        }
    }
}
