//! # mnemo-mcp — mnemo's Model Context Protocol server
//!
//! This crate owns `mnemo mcp`: an MCP server on stdio, built on the official
//! Rust SDK (`rmcp`), and the memory store behind its memory tools.
//!
//! * Tools: `compress_inline` (Pantheon's inline compression, modes score,
//!   compress, stats and batch: the seed's §12), `scrub` (Layer 2 secret
//!   scrubbing, §13), and `memory_store`, `memory_search`, `memory_recall`,
//!   `memory_list`, `memory_forget`, `memory_stats` (see [`server`]).
//!   Input schemas are generated from the typed argument structs.
//! * The memory store ([`store`]): embedded SQLite with an FTS5 index, at
//!   `$MNEMO_HOME/memory.sqlite3`, else `$XDG_DATA_HOME/mnemo/`, else
//!   `~/.local/share/mnemo/`.
//!
//! What this crate must never do: persist text that has not passed the
//! scrubber (when the scrubber cannot run, nothing is written); write
//! anything to stdout but MCP frames (logs go to stderr); panic on anything
//! a request controls (bad arguments, odd query text, a broken database are
//! tool errors with `isError: true` and a clear message). It uses no
//! `unsafe`.

pub mod limit;
pub mod server;
pub mod store;

pub use server::{BankContext, MnemoServer, ServerError, StoreSource};
pub use store::{MemoryStore, SqliteStore, StoreError};
/// The async runtime the server runs on, for callers that start it.
pub use tokio;

use rmcp::ServiceExt;

/// Errors of a server run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP handshake failed.
    #[error("MCP initialization failed: {0}")]
    Initialize(String),
    /// The server task ended abnormally.
    #[error("the MCP server stopped abnormally: {0}")]
    Join(String),
}

/// Serves MCP on stdin/stdout until the client closes the connection.
pub async fn serve_stdio(server: MnemoServer) -> Result<(), ServeError> {
    let running = server
        .serve(stdio_transport())
        .await
        .map_err(|e| ServeError::Initialize(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Join(e.to_string()))?;
    Ok(())
}

/// stdin behind the message size limit ([`limit::limit_lines`]) and stdout:
/// the transport of `mnemo mcp`. Call it inside a Tokio runtime.
pub fn stdio_transport() -> (tokio::io::DuplexStream, tokio::io::Stdout) {
    (
        limit::limit_lines(tokio::io::stdin(), limit::MAX_MESSAGE_BYTES),
        tokio::io::stdout(),
    )
}
