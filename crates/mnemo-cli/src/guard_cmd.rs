//! `mnemo guard …` and `mnemo hook …`: argument parsing and printing only.
//! The ACS Guardian itself (protocol, policy, store, adapters) lives in the
//! `mnemo-guardian` crate.

use clap::{Args, Subcommand, ValueEnum};
use mnemo_guardian::Transport;
use mnemo_guardian_server::server::{self, GuardOptions};
use mnemo_hooks::{BlockStyle, Host};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options shared by the Guardian commands.
#[derive(Debug, Clone, Args)]
pub struct GuardArgs {
    /// Guardian policy file (TOML); the built-in defaults when absent.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Session store: a SQLite file, or a PostgreSQL database
    /// (postgres://user:password@host:port/db) that several Guardians share.
    /// Default: $MNEMO_STORE, else $MNEMO_HOME/guardian.sqlite3,
    /// else $XDG_DATA_HOME/mnemo/guardian.sqlite3, else ~/.local/share/mnemo/guardian.sqlite3.
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
    /// Keep session state in memory only (nothing persists).
    #[arg(long, conflicts_with = "store")]
    pub memory: bool,
}

impl GuardArgs {
    pub(crate) fn options(&self) -> GuardOptions {
        GuardOptions {
            policy: self.policy.clone(),
            store: self.store.clone(),
            memory: self.memory,
        }
    }
}

/// `mnemo guard …`: the ACS Guardian for compaction.
#[derive(Debug, Subcommand)]
pub enum GuardCommand {
    /// Serve ACS JSON-RPC on stdin/stdout (Content-Length framing).
    Stdio {
        /// Policy and store.
        #[command(flatten)]
        opts: GuardArgs,
    },
    /// Serve ACS JSON-RPC over HTTP POST.
    Http {
        /// Address to listen on, e.g. 127.0.0.1:7717.
        #[arg(long, value_name = "ADDR")]
        listen: String,
        /// Serve HTTPS with this PEM certificate chain (leaf first); needs
        /// --tls-key.
        #[arg(long, value_name = "FILE", requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The PEM private key of --tls-cert.
        #[arg(long, value_name = "FILE", requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Require client certificates issued by a CA in this PEM file.
        #[arg(long, value_name = "FILE", requires = "tls_cert")]
        tls_client_ca: Option<PathBuf>,
        /// Policy and store.
        #[command(flatten)]
        opts: GuardArgs,
    },
    /// Answer one JSON-RPC request read from stdin on stdout (no handshake
    /// needed; session state persists between calls).
    ///
    /// Exit status: 0 when the answer is a result (an allow or a deny is an
    /// answer: read `decision` in it); 1 when it is a JSON-RPC error (a
    /// malformed request, a failed envelope check, an unknown method: the
    /// error object is still printed on stdout), or when no answer could be
    /// given at all (the reason on stderr).
    #[command(
        after_help = "Exit status: 0 for a result (allow or deny: a deny is an answer, not an error); 1 for a JSON-RPC error answer (printed on stdout) or when no answer could be given."
    )]
    Check {
        /// Policy and store.
        #[command(flatten)]
        opts: GuardArgs,
    },
}

/// `mnemo hook …`: adapters for agent hosts.
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Claude Code hooks (configure in .claude/settings.json).
    ClaudeCode {
        /// The hook event.
        #[command(subcommand)]
        event: HookEvent,
    },
    /// Codex CLI hooks.
    Codex {
        /// The hook event.
        #[command(subcommand)]
        event: HookEvent,
    },
    /// Write or merge a host's hook configuration (never dropping what is
    /// there; idempotent; --print shows it without writing).
    Install {
        /// The host.
        #[command(subcommand)]
        host: crate::install_cmd::InstallHost,
    },
    /// Print the compaction decisions the PreCompact hook recorded, newest
    /// first: verdict, reasoning (a deny's way out) and reason codes. For a
    /// host that does not show a hook's reason (`codex exec` prints only
    /// "hook: PreCompact Stopped"). Reads the store without changing it.
    #[command(
        after_help = "Exit status: 0 when a decision was printed; 1 when the store holds none for the session (or none at all), or cannot be read."
    )]
    Decision(crate::decision_cmd::DecisionArgs),
}

/// How a Claude Code hook blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BlockWith {
    /// Exit code 2 with the reason on stderr.
    ExitCode,
    /// Exit 0 with {"decision":"block","reason":…} on stdout (reason also on stderr).
    Json,
}

/// A host hook event.
#[derive(Debug, Subcommand)]
pub enum HookEvent {
    /// PreCompact: read the hook input on stdin and the transcript it names,
    /// and block compaction that would fold untrusted content into a summary.
    PreCompact {
        /// Policy, and the session store the decision is recorded in.
        #[command(flatten)]
        opts: GuardArgs,
        /// Claude Code only: how to block.
        #[arg(long, value_enum, default_value = "exit-code")]
        block_with: BlockWith,
        /// Trail options (what the compactor is handed when allowed).
        #[command(flatten)]
        trail: crate::hook_trail_cmd::TrailHookArgs,
    },
    /// PostCompact: check the summary against the trail kept at PreCompact
    /// (Claude Code), or hand the trail back (Codex, `systemMessage`).
    PostCompact {
        /// The session store the trails are kept beside.
        #[command(flatten)]
        opts: GuardArgs,
    },
    /// SessionStart (Claude Code): after a compaction, return the trail
    /// facts the summary lost as additional context.
    SessionStart {
        /// The session store the trails are kept beside.
        #[command(flatten)]
        opts: GuardArgs,
    },
    /// UserPromptSubmit (Claude Code): record the submitted prompt (its
    /// turn id and whether it is the user's own words, never its text) so
    /// that an auto compaction of that turn counts it before the host has
    /// written it to the transcript. Prints nothing, always exits 0.
    UserPromptSubmit {
        /// The session store the record is kept beside.
        #[command(flatten)]
        opts: GuardArgs,
    },
}

/// Runs `mnemo guard …`.
pub fn run_guard(cmd: GuardCommand, quiet: bool) -> anyhow::Result<ExitCode> {
    match cmd {
        GuardCommand::Stdio { opts } => {
            // A long-running server: mimalloc from here on (mnemo-alloc).
            mnemo_alloc::use_mimalloc();
            let mut g = server::open_guardian(&opts.options(), Transport::Stdio, false)?;
            let stdin = std::io::stdin();
            let mut input = stdin.lock();
            let stdout = std::io::stdout();
            let mut output = stdout.lock();
            server::serve_stdio(&mut g, &mut input, &mut output)?;
        }
        GuardCommand::Http {
            listen,
            tls_cert,
            tls_key,
            tls_client_ca,
            opts,
        } => {
            // A long-running server: mimalloc from here on (mnemo-alloc).
            mnemo_alloc::use_mimalloc();
            let g = server::open_guardian(&opts.options(), Transport::Http, false)?;
            match (tls_cert, tls_key) {
                (Some(cert), Some(key)) => {
                    let tls = mnemo_guardian_server::tls::ServerTls {
                        cert,
                        key,
                        client_ca: tls_client_ca,
                    };
                    server::serve_https(g, &listen, &tls, |addr| {
                        if !quiet {
                            eprintln!("mnemo guard: listening on https://{addr}");
                        }
                    })?;
                }
                _ => server::serve_http(g, &listen, |addr| {
                    if !quiet {
                        eprintln!("mnemo guard: listening on http://{addr}");
                    }
                })?,
            }
        }
        GuardCommand::Check { opts } => {
            let mut g = server::open_guardian(&opts.options(), Transport::Stdio, true)?;
            let reply = server::check_once(&mut g, std::io::stdin().lock())?;
            let mut out = std::io::stdout().lock();
            out.write_all(&reply)?;
            out.write_all(b"\n")?;
            out.flush()?;
            if is_error_answer(&reply) {
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// True when a JSON-RPC answer is an error object (`"error"` beside
/// `"id"`, no `"result"`); an answer that is not JSON counts as an error.
fn is_error_answer(reply: &[u8]) -> bool {
    match serde_json::from_slice::<serde_json::Value>(reply) {
        Ok(v) => v.get("error").is_some() || v.get("result").is_none(),
        Err(_) => true,
    }
}

/// Runs `mnemo hook …`. Errors (unreadable hook input, bad policy) exit
/// non-zero without blocking, so a broken hook never blocks a host forever.
pub fn run_hook(cmd: HookCommand, quiet: bool) -> anyhow::Result<ExitCode> {
    let (host, event) = match cmd {
        HookCommand::ClaudeCode { event } => (Host::ClaudeCode, event),
        HookCommand::Codex { event } => (Host::Codex, event),
        HookCommand::Install { host } => return crate::install_cmd::run(host, quiet),
        HookCommand::Decision(args) => return crate::decision_cmd::run(&args),
    };
    let (opts, block_with, trail) = match event {
        HookEvent::PreCompact {
            opts,
            block_with,
            trail,
        } => (opts, block_with, trail),
        other => return crate::hook_trail_cmd::run_event(host, other, quiet),
    };
    let style = match block_with {
        BlockWith::ExitCode => BlockStyle::ExitCode,
        BlockWith::Json => BlockStyle::Json,
    };
    let run = mnemo_hooks::trail_hook::run_pre_compact_with_trail(
        host,
        style,
        &opts.options(),
        std::io::stdin().lock(),
        trail.budget(),
    )?;
    let out = run.output;
    if !out.stdout.is_empty() {
        let mut o = std::io::stdout().lock();
        o.write_all(out.stdout.as_bytes())?;
        o.flush()?;
    }
    // A block's reason is part of the host protocol; only notes are quiet-able.
    if !out.stderr.is_empty() && (!quiet || run.decision.verdict == mnemo_guardian::Verdict::Deny) {
        eprint!("{}", out.stderr);
    }
    Ok(ExitCode::from(out.exit_code))
}
