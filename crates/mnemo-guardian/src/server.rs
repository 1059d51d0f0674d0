//! Transports and start-up (the I/O edge): policy and store loading, the
//! Content-Length stdio server, a small HTTP/1.1 keep-alive server (one thread
//! per connection), and the one-shot `check`.

use crate::framing::{self, Frame};
use crate::policy::{Policy, PolicyError};
use crate::protocol::{self, Guardian, GuardianConfig, Transport};
use crate::sqlite::SqliteStore;
use crate::store::{MemoryStore, SessionStore, StoreError};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// A start-up or transport failure.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The policy file could not be read.
    #[error("policy file {path}: {source}")]
    PolicyRead {
        /// File.
        path: PathBuf,
        /// Cause.
        source: io::Error,
    },
    /// The policy file is invalid.
    #[error("policy file {path}: {source}")]
    Policy {
        /// File.
        path: PathBuf,
        /// Cause.
        source: PolicyError,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// I/O.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// Configuration.
    #[error("{0}")]
    Config(String),
}

/// A boxed, sendable store.
pub type DynStore = Box<dyn SessionStore + Send>;

/// Options shared by `mnemo guard …` and the hooks.
#[derive(Debug, Clone, Default)]
pub struct GuardOptions {
    /// Policy TOML file (defaults when absent).
    pub policy: Option<PathBuf>,
    /// Store file (default [`default_store_path`]).
    pub store: Option<PathBuf>,
    /// Keep state in memory only.
    pub memory: bool,
}

/// Loads a policy file, or the defaults.
pub fn load_policy(path: Option<&Path>) -> Result<Policy, ServeError> {
    let Some(path) = path else {
        return Ok(Policy::default());
    };
    let text = std::fs::read_to_string(path).map_err(|source| ServeError::PolicyRead {
        path: path.into(),
        source,
    })?;
    Policy::from_toml(&text).map_err(|source| ServeError::Policy {
        path: path.into(),
        source,
    })
}

/// `$MNEMO_HOME/guardian.sqlite3`, else `$XDG_DATA_HOME/mnemo/guardian.sqlite3`,
/// else `~/.local/share/mnemo/guardian.sqlite3`, else `./.mnemo/guardian.sqlite3`.
pub fn default_store_path() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(h) = env("MNEMO_HOME") {
        return h.join("guardian.sqlite3");
    }
    if let Some(x) = env("XDG_DATA_HOME") {
        return x.join("mnemo").join("guardian.sqlite3");
    }
    if let Some(home) = env("HOME") {
        return home
            .join(".local")
            .join("share")
            .join("mnemo")
            .join("guardian.sqlite3");
    }
    PathBuf::from(".mnemo").join("guardian.sqlite3")
}

/// Opens the store the options name.
pub fn open_store(opts: &GuardOptions) -> Result<DynStore, ServeError> {
    if opts.memory {
        return Ok(Box::new(MemoryStore::new()));
    }
    let path = opts.store.clone().unwrap_or_else(default_store_path);
    Ok(Box::new(SqliteStore::open(&path)?))
}

/// Builds a Guardian: policy, HMAC key (from the environment variable the
/// policy names), store.
pub fn open_guardian(
    opts: &GuardOptions,
    transport: Transport,
    one_shot: bool,
) -> Result<Guardian<DynStore>, ServeError> {
    let policy = load_policy(opts.policy.as_deref())?;
    let mut config = GuardianConfig::from_policy(&policy);
    config.transport = transport;
    if one_shot {
        config.require_handshake = false;
    }
    if let Some(var) = &policy.guardian.hmac_key_env {
        let key = std::env::var(var)
            .ok()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                ServeError::Config(format!(
                    "policy guardian.hmac_key_env names {var}, which is not set"
                ))
            })?;
        let id = policy
            .guardian
            .hmac_key_id
            .clone()
            .unwrap_or_else(|| "default".into());
        config.hmac_keys.push((id, key.into_bytes()));
    }
    let store = open_store(opts)?;
    Ok(Guardian::new(policy, config, store))
}

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

/// Most requests decided in one store transaction.
const MAX_BATCH: usize = 256;

/// A Guardian shared by connection threads behind a mutex.
pub type SharedGuardian = Arc<Mutex<Guardian<DynStore>>>;

/// How connection threads reach the one Guardian.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpMode {
    /// One decider thread owns the Guardian; connections queue requests to it
    /// in arrival order (fair under load: bounded tail latency).
    #[default]
    Queue,
    /// Connection threads take turns on a mutex (no hand-off, unfair under load).
    Mutex,
}

struct Job {
    req: serde_json::Value,
    reply: mpsc::SyncSender<serde_json::Value>,
}

#[derive(Clone)]
enum Decider {
    Queue(mpsc::SyncSender<Job>),
    Mutex(SharedGuardian),
}

impl Decider {
    fn decide(&self, req: serde_json::Value, slot: &mut Option<ReplySlot>) -> serde_json::Value {
        match self {
            Decider::Mutex(g) => match g.lock() {
                Ok(mut guard) => guard.handle_value(&req),
                Err(p) => p.into_inner().handle_value(&req),
            },
            Decider::Queue(tx) => {
                let slot = slot.get_or_insert_with(|| {
                    let (t, r) = mpsc::sync_channel(1);
                    ReplySlot { tx: t, rx: r }
                });
                let id = req.get("id").cloned().unwrap_or(serde_json::Value::Null);
                if tx
                    .send(Job {
                        req,
                        reply: slot.tx.clone(),
                    })
                    .is_err()
                {
                    return internal_error(id);
                }
                slot.rx.recv().unwrap_or_else(|_| internal_error(id))
            }
        }
    }
}

struct ReplySlot {
    tx: mpsc::SyncSender<serde_json::Value>,
    rx: mpsc::Receiver<serde_json::Value>,
}

fn internal_error(id: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "guardian unavailable"}})
}

/// Binds `addr` and serves HTTP POST JSON-RPC forever (one thread per connection).
pub fn serve_http(
    g: Guardian<DynStore>,
    addr: &str,
    on_ready: impl FnOnce(std::net::SocketAddr),
) -> Result<(), ServeError> {
    let addr = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| ServeError::Config(format!("cannot resolve {addr}")))?;
    let listener = TcpListener::bind(addr)?;
    on_ready(listener.local_addr()?);
    serve_listener(g, listener, HttpMode::default())
}

/// Serves on an already bound listener.
pub fn serve_listener(
    g: Guardian<DynStore>,
    listener: TcpListener,
    mode: HttpMode,
) -> Result<(), ServeError> {
    let max_body = g.config().max_request_bytes;
    let decider = match mode {
        HttpMode::Mutex => Decider::Mutex(Arc::new(Mutex::new(g))),
        HttpMode::Queue => {
            let (tx, rx) = mpsc::sync_channel::<Job>(MAX_CONNECTIONS);
            let mut g = g;
            std::thread::Builder::new()
                .name("guard-decider".into())
                .spawn(move || {
                    // Group commit: whatever queued up while the last batch
                    // ran is decided in one store transaction, in arrival order.
                    let mut jobs: Vec<Job> = Vec::with_capacity(MAX_BATCH);
                    while let Ok(first) = rx.recv() {
                        jobs.push(first);
                        while jobs.len() < MAX_BATCH {
                            match rx.try_recv() {
                                Ok(j) => jobs.push(j),
                                Err(_) => break,
                            }
                        }
                        let reqs: Vec<serde_json::Value> =
                            jobs.iter_mut().map(|j| j.req.take()).collect();
                        let resps = g.handle_batch(&reqs);
                        for (job, resp) in jobs.drain(..).zip(resps) {
                            let _ = job.reply.send(resp);
                        }
                    }
                })?;
            Decider::Queue(tx)
        }
    };
    let active = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if active.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
            let mut s = stream;
            let _ = s.write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            continue;
        }
        active.fetch_add(1, Ordering::Relaxed);
        let d = decider.clone();
        let active2 = Arc::clone(&active);
        let spawned = std::thread::Builder::new()
            .name("guard-http".into())
            .spawn(move || {
                let _ = handle_connection(&d, max_body, stream);
                active2.fetch_sub(1, Ordering::Relaxed);
            });
        if spawned.is_err() {
            active.fetch_sub(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

const MAX_HTTP_HEADER_BYTES: usize = 16 * 1024;

fn handle_connection(d: &Decider, max_body: usize, stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(16 * 1024, stream);
    let mut slot: Option<ReplySlot> = None;
    let mut out = Vec::with_capacity(1024);
    loop {
        // Request line (skip stray blank lines between requests).
        let mut line = String::new();
        let mut header_bytes = 0usize;
        loop {
            line.clear();
            let n = read_http_line(&mut reader, &mut line)?;
            if n == 0 {
                return Ok(());
            }
            header_bytes += n;
            if !line.trim().is_empty() || header_bytes > MAX_HTTP_HEADER_BYTES {
                break;
            }
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let version = parts.next().unwrap_or("").to_string();
        let mut content_length: Option<u64> = None;
        let mut keep_alive = version == "HTTP/1.1";
        let mut bad = version.is_empty() || !version.starts_with("HTTP/1.");
        let mut chunked = false;
        loop {
            let mut h = String::new();
            let n = read_http_line(&mut reader, &mut h)?;
            if n == 0 {
                return Ok(());
            }
            header_bytes += n;
            if header_bytes > MAX_HTTP_HEADER_BYTES {
                respond(
                    &mut writer,
                    &mut out,
                    "431 Request Header Fields Too Large",
                    "text/plain",
                    b"headers too large",
                    false,
                )?;
                return Ok(());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let Some((name, value)) = h.split_once(':') else {
                bad = true;
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                match value.parse::<u64>() {
                    Ok(n) => content_length = Some(n),
                    Err(_) => bad = true,
                }
            } else if name.eq_ignore_ascii_case("connection") {
                if value.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if value.eq_ignore_ascii_case("keep-alive") {
                    keep_alive = true;
                }
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = true;
            }
        }
        if bad || chunked {
            respond(
                &mut writer,
                &mut out,
                "400 Bad Request",
                "text/plain",
                b"bad request",
                false,
            )?;
            return Ok(());
        }
        if method == "GET" && (path == "/health" || path == "/healthz") {
            respond(
                &mut writer,
                &mut out,
                "200 OK",
                "text/plain",
                b"ok",
                keep_alive,
            )?;
            if !keep_alive {
                return Ok(());
            }
            continue;
        }
        if method != "POST" {
            respond(
                &mut writer,
                &mut out,
                "405 Method Not Allowed",
                "text/plain",
                b"POST JSON-RPC requests",
                false,
            )?;
            return Ok(());
        }
        let len = content_length.unwrap_or(0);
        if len > max_body as u64 {
            // Never allocate the claimed length; answer and close.
            let body = error_bytes(
                -32600,
                &format!("request too large ({len} bytes, max {max_body})"),
            );
            respond(
                &mut writer,
                &mut out,
                "413 Payload Too Large",
                "application/json",
                &body,
                false,
            )?;
            return Ok(());
        }
        let mut body = vec![0u8; len as usize];
        reader.read_exact(&mut body)?;
        // Parse and serialise outside the lock; only the decision holds it.
        let reply = match protocol::parse_request(&body, max_body) {
            Ok(req) => protocol::encode_response(&d.decide(req, &mut slot)),
            Err(resp) => protocol::encode_response(&resp),
        };
        respond(
            &mut writer,
            &mut out,
            "200 OK",
            "application/json",
            &reply,
            keep_alive,
        )?;
        if !keep_alive {
            return Ok(());
        }
    }
}

fn read_http_line<R: BufRead>(r: &mut R, line: &mut String) -> io::Result<usize> {
    let mut buf = Vec::new();
    let n = r
        .by_ref()
        .take(MAX_HTTP_HEADER_BYTES as u64 + 1)
        .read_until(b'\n', &mut buf)?;
    line.push_str(&String::from_utf8_lossy(&buf));
    Ok(n)
}

fn respond(
    w: &mut TcpStream,
    out: &mut Vec<u8>,
    status: &str,
    ctype: &str,
    body: &[u8],
    keep_alive: bool,
) -> io::Result<()> {
    out.clear();
    let _ = write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
        body.len(),
        if keep_alive { "keep-alive" } else { "close" }
    );
    out.extend_from_slice(body);
    w.write_all(out)
}
