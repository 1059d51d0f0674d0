//! `mnemo hook install <host>`: argument parsing and printing only; the
//! merge rules live in `mnemo_hooks::install`.

use anyhow::Context;
use clap::{Args, Subcommand};
use mnemo_hooks::install::{self, Change, Scope};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where and how to install (shared by every host).
#[derive(Debug, Clone, Args)]
pub struct Target {
    /// Install into the project's file (the default): under --dir.
    #[arg(long, conflicts_with = "user")]
    pub project: bool,
    /// Install into the user's file (under the home directory).
    #[arg(long)]
    pub user: bool,
    /// Print the file as it would be, and write nothing.
    #[arg(long)]
    pub print: bool,
    /// Project directory (default: the working directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

impl Target {
    fn scope(&self) -> Scope {
        if self.user {
            Scope::User
        } else {
            Scope::Project
        }
    }

    fn dir(&self) -> anyhow::Result<PathBuf> {
        match &self.dir {
            Some(d) => Ok(d.clone()),
            None => std::env::current_dir().context("cannot read the working directory"),
        }
    }
}

/// Options the installed hook commands get.
#[derive(Debug, Clone, Args)]
pub struct HookCommandArgs {
    /// The mnemo binary the hooks run (default: this binary's absolute
    /// path; `--bin mnemo` to find it on PATH when the hook runs).
    #[arg(long, value_name = "PATH")]
    pub bin: Option<String>,
    /// Guardian policy file the hooks pass on (--policy).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<String>,
    /// Session store the hooks pass on (--store).
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<String>,
}

impl HookCommandArgs {
    /// The binary and the options of every hook command.
    pub fn resolve(&self) -> anyhow::Result<(String, Vec<String>)> {
        let bin = match &self.bin {
            Some(b) => b.clone(),
            None => std::env::current_exe()
                .context("cannot find this binary's path (give --bin)")?
                .to_string_lossy()
                .into_owned(),
        };
        let mut extra = Vec::new();
        if let Some(p) = &self.policy {
            extra.extend(["--policy".to_string(), p.clone()]);
        }
        if let Some(s) = &self.store {
            extra.extend(["--store".to_string(), s.clone()]);
        }
        Ok((bin, extra))
    }
}

/// `mnemo hook install <host>`.
#[derive(Debug, Subcommand)]
pub enum InstallHost {
    /// Claude Code: `.claude/settings.json` (or `~/.claude/settings.json`
    /// with --user) gets PreCompact (matchers manual and auto), PostCompact,
    /// SessionStart (matcher compact) and UserPromptSubmit; every other key
    /// and hook is kept.
    ClaudeCode {
        /// Where.
        #[command(flatten)]
        target: Target,
        /// What the hooks run.
        #[command(flatten)]
        hook: HookCommandArgs,
    },
    /// Codex CLI: `config.toml` (`.codex/config.toml` of the project, or
    /// `$CODEX_HOME/config.toml` with --user) gets PreCompact and
    /// PostCompact (matchers manual and auto), and the user config their
    /// `[hooks.state]` trusted hashes (Codex skips an untrusted hook
    /// silently); every other key and hook is kept.
    Codex {
        /// Where.
        #[command(flatten)]
        target: Target,
        /// What the hooks run.
        #[command(flatten)]
        hook: HookCommandArgs,
    },
    /// OpenCode: the mnemo plugin in `plugin` of `opencode.json` (or
    /// `~/.config/opencode/opencode.json` with --user).
    Opencode {
        /// Where.
        #[command(flatten)]
        target: Target,
        /// The plugin reference: the package name (default `mnemo-opencode`)
        /// or a path to integrations/opencode/index.js.
        #[arg(long, value_name = "REF", default_value = install::OPENCODE_PLUGIN)]
        plugin: String,
    },
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Runs `mnemo hook install …`.
pub fn run(host: InstallHost, quiet: bool) -> anyhow::Result<ExitCode> {
    let (target, change, what) = match host {
        InstallHost::ClaudeCode { target, hook } => {
            let path =
                install::claude_settings_path(target.scope(), &target.dir()?, home().as_deref())?;
            let (bin, extra) = hook.resolve()?;
            let hooks = install::claude_hooks(&bin, &extra);
            let change =
                install::plan(&path, |t| install::merge_claude_settings(&path, t, &hooks))?;
            (
                target,
                change,
                "Claude Code hooks PreCompact (manual, auto), PostCompact, SessionStart (compact), UserPromptSubmit",
            )
        }
        InstallHost::Codex { target, hook } => return run_codex(&target, &hook, quiet),
        InstallHost::Opencode { target, plugin } => {
            let xdg = std::env::var_os("XDG_CONFIG_HOME")
                .filter(|x| !x.is_empty())
                .map(PathBuf::from);
            let path = install::opencode_config_path(
                target.scope(),
                &target.dir()?,
                home().as_deref(),
                xdg.as_deref(),
            )?;
            let change =
                install::plan(&path, |t| install::merge_opencode_config(&path, t, &plugin))?;
            (target, change, "the OpenCode plugin")
        }
    };
    finish(&target, &change, what, quiet)
}

/// `mnemo hook install codex`: the hooks go to the chosen config, their
/// trust to the user config (Codex reads `[hooks.state]` only there), so a
/// project installation changes two files. Both are planned before either
/// is written.
fn run_codex(target: &Target, hook: &HookCommandArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    use mnemo_hooks::install_codex as cx;
    let codex_home = std::env::var_os("CODEX_HOME")
        .filter(|c| !c.is_empty())
        .map(PathBuf::from);
    let user = cx::user_config_path(codex_home.as_deref(), home().as_deref())?;
    let (bin, extra) = hook.resolve()?;
    let hooks = cx::codex_hooks(&bin, &extra);
    let what = "Codex hooks PreCompact and PostCompact (manual, auto), trusted";
    let changes = match target.scope() {
        Scope::User => {
            let change = install::plan(&user, |t| {
                let (text, states) = cx::merge_codex_hooks(&user, t, &hooks)?;
                cx::merge_codex_trust(&user, Some(&text), &states)
            })?;
            vec![change]
        }
        Scope::Project => {
            let dir = target.dir()?;
            let project = cx::project_config_path(&dir);
            let mut states = Vec::new();
            let hooks_change = install::plan(&project, |t| {
                let (text, s) = cx::merge_codex_hooks(&project, t, &hooks)?;
                states = s;
                Ok(text)
            })?;
            let trust_change = install::plan(&user, |t| cx::merge_codex_trust(&user, t, &states))?;
            if !quiet && !cx::project_trusted(trust_change.before.as_deref(), &dir) {
                eprintln!(
                    "mnemo hook install: Codex loads {} only for a trusted project; trust it in Codex (or add [projects.\"{}\"] trust_level = \"trusted\" to {})",
                    project.display(),
                    std::path::absolute(&dir).unwrap_or(dir.clone()).display(),
                    user.display()
                );
            }
            vec![hooks_change, trust_change]
        }
    };
    if target.print && changes.len() > 1 {
        let mut o = std::io::stdout().lock();
        for c in &changes {
            writeln!(o, "# {}", c.path.display())?;
            o.write_all(c.after.as_bytes())?;
        }
        o.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    for c in &changes {
        finish(target, c, what, quiet)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints (`--print`) or writes a planned change, with a one-line report.
pub fn finish(
    target: &Target,
    change: &Change,
    what: &str,
    quiet: bool,
) -> anyhow::Result<ExitCode> {
    if target.print {
        let mut o = std::io::stdout().lock();
        o.write_all(change.after.as_bytes())?;
        o.flush()?;
        if !quiet {
            eprintln!(
                "mnemo hook install: {} would be {} (--print: nothing written)",
                shown(&change.path),
                state(change)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    install::write(change)?;
    if !quiet {
        println!(
            "{}: {} ({what})",
            shown(&change.path),
            match state(change) {
                "created" => "created",
                "updated" => "updated",
                _ => "already installed, unchanged",
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn state(change: &Change) -> &'static str {
    match (&change.before, change.changed()) {
        (None, _) => "created",
        (Some(_), true) => "updated",
        (Some(_), false) => "unchanged",
    }
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}
