//! `mnemo init` and `mnemo config`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use mnemo_model::config::DEFAULT_CONFIG_TOML;

use crate::Global;
use crate::io_util::{CONFIG_FILE, config_relative, load_config, write_new_file};
use mnemo_model::Config;

/// Arguments of `mnemo init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Directory to write `mnemo.toml` into.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// Print the default configuration instead of writing it.
    #[arg(long)]
    print: bool,
}

/// `mnemo config` subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigCmd {
    /// Print the configuration in effect (defaults merged with mnemo.toml).
    Show,
    /// Validate the configuration and say which file it came from.
    Check,
}

/// Runs `mnemo init`: writes the full default configuration and an empty
/// memory bank, creating only what is missing (nothing is ever overwritten).
pub fn init(args: InitArgs, global: &Global) -> Result<ExitCode> {
    if args.print {
        std::io::stdout()
            .lock()
            .write_all(DEFAULT_CONFIG_TOML.as_bytes())
            .context("cannot write to standard output")?;
        return Ok(ExitCode::SUCCESS);
    }
    let path = args.dir.join(CONFIG_FILE);
    let mut notes = Vec::new();
    if path.exists() {
        notes.push(format!("kept {} as it is", path.display()));
    } else {
        write_new_file(&path, DEFAULT_CONFIG_TOML)?;
        notes.push(format!(
            "wrote {} (every table with its default; edit what your team needs)",
            path.display()
        ));
    }
    // The bank: --bank, else `paths.bank` of the configuration now in place.
    let config = Config::from_toml_str(
        &std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?,
        &path.display().to_string(),
    )
    .map_err(|e| anyhow::anyhow!("invalid configuration: {e}"))?;
    let bank = global
        .bank
        .clone()
        .unwrap_or_else(|| config_relative(Some(&path), &config.paths.bank));
    let created = mnemo_bank::init_bank(&bank)
        .with_context(|| format!("cannot create the memory bank in {}", bank.display()))?;
    if created.is_empty() {
        notes.push(format!(
            "kept the memory bank in {} as it is",
            bank.display()
        ));
    } else {
        notes.push(format!(
            "created the memory bank in {} ({})",
            bank.display(),
            created.join(", ")
        ));
    }
    if !global.quiet {
        let mut err = std::io::stderr().lock();
        for n in notes {
            let _ = writeln!(err, "{n}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `mnemo config …`.
pub fn run(cmd: ConfigCmd, global: &Global) -> Result<ExitCode> {
    let (config, path) = load_config(global.config.as_deref())?;
    let mut out = std::io::stdout().lock();
    match cmd {
        ConfigCmd::Show => {
            let text = toml::to_string(&config).context("cannot print the configuration")?;
            out.write_all(text.as_bytes())
        }
        ConfigCmd::Check => match path {
            Some(p) => writeln!(out, "ok: {} is valid", p.display()),
            None => writeln!(
                out,
                "ok: no {CONFIG_FILE} found upward from the working directory; built-in defaults in use"
            ),
        },
    }
    .context("cannot write to standard output")?;
    Ok(ExitCode::SUCCESS)
}
