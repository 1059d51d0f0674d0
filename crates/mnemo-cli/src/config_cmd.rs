//! `mnemo init` and `mnemo config`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use mnemo_model::config::DEFAULT_CONFIG_TOML;

use crate::Global;
use crate::io_util::{CONFIG_FILE, load_config, write_new_file};

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

/// Runs `mnemo init`: writes the full default configuration, never over an
/// existing file.
pub fn init(args: InitArgs, global: &Global) -> Result<ExitCode> {
    if args.print {
        std::io::stdout()
            .lock()
            .write_all(DEFAULT_CONFIG_TOML.as_bytes())
            .context("cannot write to standard output")?;
        return Ok(ExitCode::SUCCESS);
    }
    let path = args.dir.join(CONFIG_FILE);
    write_new_file(&path, DEFAULT_CONFIG_TOML)?;
    if !global.quiet {
        let _ = writeln!(
            std::io::stderr(),
            "wrote {} (every table with its default; edit what your team needs)",
            path.display()
        );
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
