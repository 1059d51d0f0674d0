//! Transports (the I/O edge): the
//! Content-Length stdio server, the HTTP/1.1 server ([`crate::http`], on
//! `hyper`, batching decisions), and the one-shot `check`.

use crate::framing::{self, Frame};
use mnemo_guardian::protocol::Guardian;
use mnemo_guardian::store::SessionStore;
pub use mnemo_guardian_store::open::{
    DynStore, GuardOptions, OpenError, default_store_path, load_policy, open_guardian, open_store,
};
use std::io::{self, BufRead, Read, Write};
use std::net::{TcpListener, ToSocketAddrs};

/// A start-up or transport failure (opening the Guardian, or I/O).
pub type ServeError = OpenError;

/// Serves Content-Length framed JSON-RPC until end of input.
pub fn serve_stdio<S: SessionStore, R: BufRead, W: Write>(
    g: &mut Guardian<S>,
    input: &mut R,
    output: &mut W,
) -> io::Result<()> {
    let max = g.config().max_request_bytes;
    loop {
        let reply = match framing::read_frame(input, max)? {
            Frame::Eof => return Ok(()),
            Frame::Body(b) => g.handle(&b),
            Frame::TooLarge(n) => {
                error_bytes(-32600, &format!("request too large ({n} bytes, max {max})"))
            }
            Frame::Malformed(why) => error_bytes(-32700, &format!("malformed frame: {why}")),
        };
        framing::write_frame(output, &reply)?;
    }
}

fn error_bytes(code: i64, message: &str) -> Vec<u8> {
    let v = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    serde_json::to_vec(&v).unwrap_or_default()
}

/// Answers one request read from `input` (at most the configured size).
pub fn check_once<S: SessionStore, R: Read>(g: &mut Guardian<S>, input: R) -> io::Result<Vec<u8>> {
    let max = g.config().max_request_bytes;
    let mut buf = Vec::new();
    input.take(max as u64 + 1).read_to_end(&mut buf)?;
    Ok(g.handle(&buf))
}

/// Most concurrent HTTP connections; more are answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 1024;

pub use crate::http::{Decider, HttpLimits};

/// The environment variable that picks the HTTP server's decider for
/// [`serve_http`], [`serve_https`] and [`serve_listener`]: `thread` (the
/// default), `task` or `inline` (see [`Decider`]; for comparing the shapes
/// with one binary). Any other value is refused at start-up.
pub const DECIDER_ENV: &str = "MNEMO_HTTP_DECIDER";

/// The environment variable that sets [`HttpLimits::deciders`]: decider
/// threads of a PostgreSQL store, sessions sharded over them, a connection
/// each (1 to 64, default 1). Any other value is refused at start-up.
pub const DECIDERS_ENV: &str = "MNEMO_GUARD_DECIDERS";

/// The default limits with the decider of [`DECIDER_ENV`] and the decider
/// threads of [`DECIDERS_ENV`], when they are set.
pub fn limits_from_env() -> Result<HttpLimits, ServeError> {
    let mut limits = HttpLimits::default();
    if let Ok(name) = std::env::var(DECIDER_ENV) {
        limits.decider = Decider::from_name(&name).ok_or_else(|| {
            ServeError::Config(format!(
                "{DECIDER_ENV}={name}: expected thread, task or inline"
            ))
        })?;
    }
    if let Some(v) = std::env::var_os(DECIDERS_ENV) {
        limits.deciders = v
            .to_str()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|n| (1..=64).contains(n))
            .ok_or_else(|| {
                ServeError::Config(format!(
                    "{DECIDERS_ENV}={}: a number of decider threads from 1 to 64",
                    v.to_string_lossy()
                ))
            })?;
    }
    Ok(limits)
}

/// Binds `addr` and serves HTTP POST JSON-RPC until the process ends.
pub fn serve_http(
    g: Guardian<DynStore>,
    addr: &str,
    on_ready: impl FnOnce(std::net::SocketAddr),
) -> Result<(), ServeError> {
    let addr = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| ServeError::Config(format!("cannot resolve {addr}")))?;
    let limits = limits_from_env()?;
    let listener = TcpListener::bind(addr)?;
    on_ready(listener.local_addr()?);
    serve_listener_with(g, listener, limits)
}

/// Serves HTTP/1.1 JSON-RPC on an already bound listener (see
/// [`crate::http`]: `hyper` on one `tokio` thread, one decider thread that
/// decides whatever is queued in one store transaction; the decider of
/// [`DECIDER_ENV`] when it is set).
pub fn serve_listener(g: Guardian<DynStore>, listener: TcpListener) -> Result<(), ServeError> {
    serve_listener_with(g, listener, limits_from_env()?)
}

/// Binds `addr` and serves HTTPS (TLS with the files of `tls`) until the
/// process ends. The certificate files are read before binding, so a bad
/// file is reported at start-up.
pub fn serve_https(
    g: Guardian<DynStore>,
    addr: &str,
    tls: &crate::tls::ServerTls,
    on_ready: impl FnOnce(std::net::SocketAddr),
) -> Result<(), ServeError> {
    let config = tls
        .config()
        .map_err(|e| ServeError::Config(e.to_string()))?;
    let limits = limits_from_env()?;
    let addr = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| ServeError::Config(format!("cannot resolve {addr}")))?;
    let listener = TcpListener::bind(addr)?;
    on_ready(listener.local_addr()?);
    serve_tls_listener(g, listener, config, limits)
}

/// Serves HTTPS on an already bound listener with a rustls configuration.
/// A failed handshake drops that connection only.
pub fn serve_tls_listener(
    g: Guardian<DynStore>,
    listener: TcpListener,
    config: std::sync::Arc<rustls::ServerConfig>,
    limits: HttpLimits,
) -> Result<(), ServeError> {
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    crate::http::serve(g, listener, limits, move |s| {
        let accept = acceptor.accept(s);
        async move { accept.await.ok() }
    })?;
    Ok(())
}

/// [`serve_listener`] with explicit limits.
pub fn serve_listener_with(
    g: Guardian<DynStore>,
    listener: TcpListener,
    limits: HttpLimits,
) -> Result<(), ServeError> {
    crate::http::serve(g, listener, limits, |s| async move { Some(s) })?;
    Ok(())
}
