//! `mnemo mcp`: the MCP server on stdio.
//!
//! Standard output carries MCP frames only; the one startup note goes to
//! stderr (and not at all with `--quiet`). A client that closes standard
//! input, even before its first message, ends the server normally (exit 0).

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use mnemo_mcp::{BankContext, MnemoServer, StoreSource, store};

use crate::Global;
use crate::io_util::{config_relative, load_config};

/// Runs `mnemo mcp` until the client closes standard input.
pub fn run(global: &Global) -> Result<ExitCode> {
    let (config, config_path) = load_config(global.config.as_deref())?;
    // Without a data directory the memory tools answer with that error; the
    // other tools still work.
    // A team shares one PostgreSQL database: MNEMO_STORE=postgres://… (the
    // Guardian's variable too) puts the memory store there. Any other
    // value names the Guardian's SQLite file and is not ours.
    let pg_url = std::env::var("MNEMO_STORE")
        .ok()
        .filter(|u| mnemo_postgres::is_postgres_url(u));
    let db = store::default_db_path();
    let source = match (&pg_url, &db) {
        (Some(url), _) => StoreSource::Ready(std::sync::Arc::new(
            store::postgres::PostgresMemoryStore::open(url)
                .with_context(|| format!("MNEMO_STORE={}", mnemo_postgres::redact_url(url)))?,
        )),
        (None, Ok(path)) => StoreSource::Path(path.clone()),
        (None, Err(_)) => StoreSource::Unavailable,
    };
    let bank = BankContext {
        root: global
            .bank
            .clone()
            .unwrap_or_else(|| config_relative(config_path.as_deref(), &config.paths.bank)),
        learnings: config_relative(config_path.as_deref(), &config.paths.learnings),
        config: config.clone(),
        policy: mnemo_guardian::Policy::default(),
    };
    let server = MnemoServer::new(&config, source)
        .context("cannot start the MCP server")?
        .with_bank(bank);
    if !global.quiet {
        let where_ = match (&pg_url, &db) {
            (Some(url), _) => mnemo_postgres::redact_url(url),
            (None, Ok(p)) => p.display().to_string(),
            (None, Err(e)) => e.to_string(),
        };
        let _ = writeln!(
            std::io::stderr(),
            "mnemo mcp: serving MCP on stdio (memory store: {where_})"
        );
    }
    let runtime = mnemo_mcp::tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        match rmcp::ServiceExt::serve(server, rmcp::transport::stdio()).await {
            Ok(running) => running
                .waiting()
                .await
                .map(|_| ())
                .map_err(|e| anyhow!("MCP server: the server stopped abnormally: {e}")),
            // The client went away before or during the handshake: nothing
            // was asked, nothing failed.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => Ok(()),
            Err(e) => Err(anyhow!("MCP server: initialization failed: {e}")),
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
