//! The Guardian's HTTP/1.1 transport on `hyper` (the I/O edge).
//!
//! Shape: one single-threaded `tokio` runtime accepts connections and runs
//! `hyper` for each; a decider owns the [`Guardian`]. A connection's task
//! reads a request, checks its limits, parses the JSON and hands it to the
//! decider, which drains everything queued (up to [`MAX_BATCH`]) and
//! decides it in one store transaction (group commit, arrival order), then
//! answers each request through its own one-shot channel. `hyper` answers a
//! connection's pipelined requests one after another, in order.
//!
//! Where the decider runs is [`Decider`]: by default on a thread of its own
//! ([`Decider::Thread`]), so reading, parsing and writing (the runtime's
//! thread, most of it kernel time) overlap deciding and committing (the
//! decider's): one hand-off each way per batch, not per request (what one
//! turn of the runtime read goes to the decider in one message, and the
//! decider wakes the runtime once with the whole batch's answers). Or as a
//! task of the runtime ([`Decider::Task`], one thread for everything), or
//! on each connection's task ([`Decider::Inline`]: no hand-off, no batch,
//! a store transaction per request).
//!
//! A store that offers more handles ([`SessionStore::another`]:
//! PostgreSQL, a connection each) can be decided on several threads
//! ([`HttpLimits::deciders`], [`Decider::Thread`] only): [`flush_turns`]
//! then splits each turn by session id ([`shard`]), so a session's
//! requests are decided in arrival order by one thread, batches of
//! different sessions commit side by side, and between threads, as
//! between processes, the database's row locks keep a session consistent.
//!
//! Limits: a head larger than [`MAX_HEAD_BYTES`] is answered 431, a body longer than `max_request_bytes` 413 (before it is read
//! when it is declared), at most [`HttpLimits::max_connections`] connections
//! (more are answered 503), a connection idle for
//! [`HttpLimits::idle_timeout`] is closed. Memory is bounded in total, not
//! only per connection: each connection buffers at most one head and one
//! answer, and the bodies being read or decided share one budget of
//! [`HttpLimits::inflight_bytes`]; a request waits for its share
//! (backpressure: its connection is not read meanwhile).

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mnemo_guardian::protocol::{self, Guardian};
use mnemo_guardian::store::SessionStore;
use serde_json::Value;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::stats;

/// Most bytes of request line plus headers; a longer head is answered 431
/// (up to [`READ_BUFFER_BYTES`]; a head longer than that is cut off: the
/// connection is closed without an answer).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// `hyper`'s read (and write) buffer per connection.
pub const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Most requests decided in one store transaction.
pub const MAX_BATCH: usize = 256;

/// Decider threads by default for a store with more handles: one, which
/// decides every session's requests in one batch. More split the batches
/// by session (at 8 sessions four made 3.9 requests a transaction instead
/// of ~20) and pay off only when commits of different sessions overlap on
/// the database's disk and cores: compare with `MNEMO_GUARD_DECIDERS`
/// (bench/guardian/README.md).
pub const DECIDERS: usize = 1;

/// Where the HTTP server decides (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Decider {
    /// A thread of its own beside the runtime's thread (the default):
    /// batches, and deciding overlaps the connections' reads and writes.
    #[default]
    Thread,
    /// A task of the runtime: batches, one thread for everything.
    Task,
    /// Each connection's task decides its own request: no hand-off and no
    /// batch (a store transaction per request).
    Inline,
}

impl Decider {
    /// The decider named `thread`, `task` or `inline`.
    pub fn from_name(name: &str) -> Option<Decider> {
        match name {
            "thread" => Some(Decider::Thread),
            "task" => Some(Decider::Task),
            "inline" => Some(Decider::Inline),
            _ => None,
        }
    }
}

/// Limits of the HTTP server.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// Most concurrent connections; more are answered 503 and closed.
    pub max_connections: usize,
    /// A connection without any traffic this long is closed.
    pub idle_timeout: Duration,
    /// Most body bytes being read or decided at once, over all connections.
    pub inflight_bytes: usize,
    /// Where decisions run.
    pub decider: Decider,
    /// Decider threads ([`Decider::Thread`]) for a store that offers more
    /// handles ([`SessionStore::another`]: PostgreSQL), sessions sharded
    /// over them; any other store has one.
    pub deciders: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: 1024,
            idle_timeout: Duration::from_secs(60),
            inflight_bytes: 64 << 20,
            decider: Decider::default(),
            deciders: DECIDERS,
        }
    }
}

/// One request on its way to the decider.
struct Job {
    request: Value,
    reply: oneshot::Sender<Value>,
}

/// A decided batch on its way back to the runtime: each answer with the
/// channel of the request it answers.
type Answered = Vec<(oneshot::Sender<Value>, Value)>;

/// The requests the runtime read in its current turn, on their way to the
/// decider's thread: a connection's task queues its request here and the
/// first of a turn wakes [`flush_turns`], which runs after every task that
/// was ready before it (the runtime runs woken tasks in order), so it sends
/// what the whole turn read in one message: one wake-up of the decider's
/// thread a turn, not one a request.
struct Turn {
    queued: Mutex<Vec<Job>>,
    ready: tokio::sync::Notify,
    /// False once the decider's thread is gone.
    alive: AtomicBool,
}

/// How a connection's task reaches the decider.
enum Jobs<S: SessionStore> {
    Thread(Arc<Turn>),
    Task(mpsc::Sender<Job>),
    Inline(Arc<Mutex<Guardian<S>>>),
}

/// What every connection task shares.
struct Shared<S: SessionStore> {
    jobs: Jobs<S>,
    /// The in-flight body budget, in KiB.
    budget: Arc<Semaphore>,
    budget_kib: u32,
    max_body: usize,
}

/// Serves HTTP/1.1 JSON-RPC on `listener` until the process ends (or the
/// listener fails). `wrap` turns each accepted TCP stream into the stream
/// that `hyper` reads (the identity for plain HTTP, a TLS handshake for
/// HTTPS); it returns `None` to drop the connection.
pub fn serve<S, W, F, T>(
    g: Guardian<S>,
    listener: std::net::TcpListener,
    limits: HttpLimits,
    wrap: W,
) -> std::io::Result<()>
where
    S: SessionStore + Send + 'static,
    W: Fn(tokio::net::TcpStream) -> F + Send + Sync + 'static,
    F: std::future::Future<Output = Option<T>> + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let max_body = g.config().max_request_bytes;
    // The budget must admit the largest allowed body.
    let body_kib = u32::try_from(max_body.div_ceil(1024).saturating_add(1)).unwrap_or(u32::MAX / 2);
    let budget_kib = u32::try_from(limits.inflight_bytes.div_ceil(1024))
        .unwrap_or(u32::MAX / 2)
        .max(body_kib)
        .min(u32::try_from(Semaphore::MAX_PERMITS).unwrap_or(u32::MAX / 2));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    listener.set_nonblocking(true)?;
    stats::start_reporting();
    let wrap = Arc::new(wrap);
    rt.block_on(async move {
        let jobs = match limits.decider {
            Decider::Thread => {
                // More threads, each over another handle of the store (its
                // own connection), when it offers them.
                let mut others = Vec::new();
                while others.len() + 1 < limits.deciders {
                    match g.store().another() {
                        Some(Ok(s)) => others.push(g.sibling(s)),
                        Some(Err(e)) => return Err(std::io::Error::other(e.to_string())),
                        None => break,
                    }
                }
                let (done_tx, done_rx) = mpsc::unbounded_channel::<Answered>();
                let mut tx = Vec::with_capacity(1 + others.len());
                let (first, rx) = std::sync::mpsc::channel::<Vec<Job>>();
                tx.push(first);
                let done = done_tx.clone();
                std::thread::Builder::new()
                    .name("guard-decider".into())
                    .spawn(move || decide_thread(g, rx, done))?;
                for (i, o) in others.into_iter().enumerate() {
                    let (more, rx) = std::sync::mpsc::channel::<Vec<Job>>();
                    tx.push(more);
                    let done = done_tx.clone();
                    std::thread::Builder::new()
                        .name(format!("guard-decider-{}", i + 1))
                        .spawn(move || decide_thread(o, rx, done))?;
                }
                drop(done_tx);
                let turn = Arc::new(Turn {
                    queued: Mutex::new(Vec::new()),
                    ready: tokio::sync::Notify::new(),
                    alive: AtomicBool::new(true),
                });
                tokio::spawn(flush_turns(turn.clone(), tx));
                tokio::spawn(deliver(done_rx));
                Jobs::Thread(turn)
            }
            Decider::Task => {
                let (tx, rx) = mpsc::channel::<Job>(4 * MAX_BATCH);
                // The decider runs on this thread too: no cross-thread wake-ups.
                tokio::spawn(decide_loop(g, rx));
                Jobs::Task(tx)
            }
            Decider::Inline => Jobs::Inline(Arc::new(Mutex::new(g))),
        };
        let shared = Arc::new(Shared {
            jobs,
            budget: Arc::new(Semaphore::new(budget_kib as usize)),
            budget_kib,
            max_body,
        });
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let conns = Arc::new(Semaphore::new(limits.max_connections));
        loop {
            let stream = match listener.accept().await {
                Ok((s, _)) => s,
                // Out of descriptors, aborted handshakes …: try again shortly.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            };
            let Ok(permit) = conns.clone().try_acquire_owned() else {
                let _ = stream.try_write(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            };
            let _ = stream.set_nodelay(true);
            let shared = shared.clone();
            let wrap = wrap.clone();
            let idle = limits.idle_timeout;
            tokio::spawn(async move {
                // The handshake (TLS) counts against the idle timeout too.
                if let Ok(Some(io)) = tokio::time::timeout(idle, wrap(stream)).await {
                    serve_conn(io, shared, idle).await;
                }
                drop(permit);
            });
        }
    })
}

/// Owns the Guardian: decides whatever is queued, in one transaction. It
/// is a task of the same single-threaded runtime as the connections, so it
/// runs after every connection that was ready has queued its request (the
/// batch is what one turn of the runtime read, as in an event loop), and
/// the store's work blocks the runtime only while it decides.
async fn decide_loop<S: SessionStore>(mut g: Guardian<S>, mut rx: mpsc::Receiver<Job>) {
    let mut requests = Vec::with_capacity(MAX_BATCH);
    let mut replies = Vec::with_capacity(MAX_BATCH);
    while let Some(job) = rx.recv().await {
        requests.push(job.request);
        replies.push(job.reply);
        while requests.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => {
                    requests.push(job.request);
                    replies.push(job.reply);
                }
                Err(_) => break,
            }
        }
        let answers = decide_batch(&mut g, &requests);
        requests.clear();
        // A missing answer drops its sender: that request gets -32603.
        for (reply, answer) in replies.drain(..).zip(answers) {
            let _ = reply.send(answer);
        }
        replies.clear();
    }
}

/// `g.handle_batch`, counted in the histograms when they are on.
fn decide_batch<S: SessionStore>(g: &mut Guardian<S>, requests: &[Value]) -> Vec<Value> {
    let Some(st) = stats::get() else {
        return g.handle_batch(requests);
    };
    let t = Instant::now();
    let answers = g.handle_batch(requests);
    st.batch(requests.len(), stats::micros(t));
    answers
}

/// Sends each turn's requests to the decider's thread (see [`Turn`]);
/// with several, each request to the one its session hashes to
/// ([`shard`]). When a thread is gone, marks the turn dead and drops what
/// is queued (each of those requests is answered -32603).
async fn flush_turns(turn: Arc<Turn>, to_deciders: Vec<std::sync::mpsc::Sender<Vec<Job>>>) {
    let n = to_deciders.len();
    'turns: loop {
        turn.ready.notified().await;
        let batch = match turn.queued.lock() {
            Ok(mut queued) => std::mem::take(&mut *queued),
            Err(_) => break,
        };
        if batch.is_empty() {
            continue;
        }
        if let Some(st) = stats::get() {
            st.turn_size.record(batch.len() as u64);
        }
        if n <= 1 {
            match to_deciders.first() {
                Some(to) if to.send(batch).is_ok() => continue,
                _ => break,
            }
        }
        let mut parts: Vec<Vec<Job>> = (0..n).map(|_| Vec::new()).collect();
        for job in batch {
            parts[shard(&job.request, n)].push(job);
        }
        for (to, part) in to_deciders.iter().zip(parts) {
            if !part.is_empty() && to.send(part).is_err() {
                break 'turns;
            }
        }
    }
    turn.alive.store(false, Ordering::Relaxed);
    if let Ok(mut queued) = turn.queued.lock() {
        queued.clear();
    }
}

/// The decider on a thread of its own: blocks until a turn's requests
/// arrive, takes every turn queued meanwhile too, decides them in
/// transactions of up to [`MAX_BATCH`] and sends each transaction's
/// answers back in one message, so the runtime is woken once a batch (a
/// wake-up from another thread is a system call when the runtime sleeps),
/// not once a request. Ends when the runtime is gone.
fn decide_thread<S: SessionStore>(
    mut g: Guardian<S>,
    rx: std::sync::mpsc::Receiver<Vec<Job>>,
    done: mpsc::UnboundedSender<Answered>,
) {
    let mut requests = Vec::with_capacity(MAX_BATCH);
    let mut replies = Vec::with_capacity(MAX_BATCH);
    let mut pending = std::collections::VecDeque::new();
    while let Ok(turn) = rx.recv() {
        pending.extend(turn);
        while let Ok(turn) = rx.try_recv() {
            pending.extend(turn);
        }
        while !pending.is_empty() {
            for job in pending.drain(..pending.len().min(MAX_BATCH)) {
                requests.push(job.request);
                replies.push(job.reply);
            }
            let answers = decide_batch(&mut g, &requests);
            requests.clear();
            // A missing answer drops its sender: that request gets -32603.
            let answered: Answered = replies.drain(..).zip(answers).collect();
            if done.send(answered).is_err() {
                return;
            }
        }
    }
}

/// Which decider thread decides `request`: by its session id (FNV-1a), so
/// that a session's requests are decided by one thread, in arrival order,
/// and threads never wait on each other's row locks; a request without one
/// goes to the first.
fn shard(request: &Value, n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    let Some(session) = request
        .get("params")
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("session_id"))
        .and_then(Value::as_str)
    else {
        return 0;
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in session.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (h % n as u64) as usize
}

/// Hands each answer of a batch decided on the decider's thread to its
/// connection's task (wake-ups within the runtime's thread).
async fn deliver(mut done: mpsc::UnboundedReceiver<Answered>) {
    while let Some(batch) = done.recv().await {
        for (reply, answer) in batch {
            let _ = reply.send(answer);
        }
    }
}

async fn serve_conn<T, S>(io: T, shared: Arc<Shared<S>>, idle: Duration)
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: SessionStore + Send + 'static,
{
    let start = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let io = TokioIo::new(Activity {
        inner: io,
        start,
        last: last.clone(),
        stats: stats::get(),
        read_at: None,
    });
    let svc = hyper::service::service_fn(move |req| answer(req, shared.clone()));
    let conn = hyper::server::conn::http1::Builder::new()
        .max_buf_size(READ_BUFFER_BYTES)
        // Not `pipeline_flush`: with it, hyper never flushes the 400 it
        // writes for a malformed request (the bad bytes stay unread).
        .keep_alive(true)
        .serve_connection(io, svc);
    tokio::pin!(conn);
    loop {
        let since = Duration::from_millis(last.load(Ordering::Relaxed));
        let quiet = start.elapsed().saturating_sub(since);
        if quiet >= idle {
            return; // dropping the connection closes it
        }
        match tokio::time::timeout(idle - quiet, conn.as_mut()).await {
            Ok(_) => return,
            Err(_) => continue,
        }
    }
}

/// A stream that notes when bytes last moved (for the idle timeout).
struct Activity<T> {
    inner: T,
    start: Instant,
    last: Arc<AtomicU64>,
    /// The histograms, when on; then `read_at` is when the first byte of
    /// the request being answered was read.
    stats: Option<&'static stats::Stats>,
    read_at: Option<Instant>,
}

impl<T> Activity<T> {
    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(ms, Ordering::Relaxed);
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Activity<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.touch();
            if self.stats.is_some() && self.read_at.is_none() {
                self.read_at = Some(Instant::now());
            }
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Activity<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
            if let (Some(st), Some(t)) = (self.stats, self.read_at.take()) {
                st.request.record(stats::micros(t));
            }
        }
        r
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

type Answer = Response<Full<Bytes>>;

fn respond(status: StatusCode, content_type: &'static str, body: Vec<u8>, close: bool) -> Answer {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if close {
        h.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    r
}

fn error_bytes(code: i64, message: &str) -> Vec<u8> {
    let v = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    serde_json::to_vec(&v).unwrap_or_default()
}

async fn answer<S: SessionStore>(
    req: Request<Incoming>,
    shared: Arc<Shared<S>>,
) -> Result<Answer, Infallible> {
    let head: usize = req.method().as_str().len()
        + uri_len(req.uri())
        + req
            .headers()
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 4)
            .sum::<usize>();
    if head > MAX_HEAD_BYTES {
        return Ok(respond(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "text/plain",
            b"headers too large".to_vec(),
            true,
        ));
    }
    let path = req.uri().path();
    if req.method() == Method::GET && (path == "/health" || path == "/healthz") {
        return Ok(respond(StatusCode::OK, "text/plain", b"ok".to_vec(), false));
    }
    if req.method() != Method::POST {
        return Ok(respond(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            b"POST JSON-RPC requests".to_vec(),
            true,
        ));
    }
    let max = shared.max_body;
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let too_large = |len: String| {
        respond(
            StatusCode::PAYLOAD_TOO_LARGE,
            "application/json",
            error_bytes(
                -32600,
                &format!("request too large ({len} bytes, max {max})"),
            ),
            true,
        )
    };
    if let Some(len) = declared
        && len > max as u64
    {
        return Ok(too_large(len.to_string()));
    }
    // A chunked body may be as large as allowed: reserve that much.
    let expect = declared.map_or(max, |n| n as usize);
    let kib = u32::try_from(expect.div_ceil(1024).saturating_add(1))
        .unwrap_or(u32::MAX)
        .min(shared.budget_kib);
    let waited = stats::get().map(|st| (st, Instant::now()));
    let Ok(permit) = shared.budget.clone().acquire_many_owned(kib).await else {
        return Ok(unavailable());
    };
    if let Some((st, t)) = waited {
        st.budget.record(stats::micros(t));
    }
    let body = match Limited::new(req.into_body(), max).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Ok(too_large(format!("more than {max}")));
        }
        Err(_) => {
            return Ok(respond(
                StatusCode::BAD_REQUEST,
                "text/plain",
                b"unreadable body".to_vec(),
                true,
            ));
        }
    };
    let reply = match protocol::parse_request(&body, max) {
        Ok(request) => {
            drop(body);
            let handed = stats::get().map(|st| (st, Instant::now()));
            let answer = match &shared.jobs {
                // Never contended: every connection's task runs on the
                // runtime's one thread. A decision that panicked poisons
                // the lock: the Guardian is unavailable then, as when the
                // decider task or thread ends.
                Jobs::Inline(g) => match g.lock() {
                    Ok(mut g) => Some(g.handle_value(&request)),
                    Err(_) => return Ok(unavailable()),
                },
                Jobs::Thread(turn) => {
                    if !turn.alive.load(Ordering::Relaxed) {
                        return Ok(unavailable());
                    }
                    let (reply, rx) = oneshot::channel();
                    let first = match turn.queued.lock() {
                        Ok(mut queued) => {
                            queued.push(Job { request, reply });
                            queued.len() == 1
                        }
                        Err(_) => return Ok(unavailable()),
                    };
                    if first {
                        turn.ready.notify_one();
                    }
                    rx.await.ok()
                }
                Jobs::Task(jobs) => {
                    let (reply, rx) = oneshot::channel();
                    if jobs.send(Job { request, reply }).await.is_err() {
                        return Ok(unavailable());
                    }
                    rx.await.ok()
                }
            };
            if let Some((st, t)) = handed {
                st.decide.record(stats::micros(t));
            }
            match answer {
                Some(v) => protocol::encode_response(&v),
                None => error_bytes(-32603, "guardian unavailable"),
            }
        }
        Err(resp) => protocol::encode_response(&resp),
    };
    drop(permit);
    Ok(respond(StatusCode::OK, "application/json", reply, false))
}

/// The length of a request target as written (`Uri::to_string` without
/// building the string: an allocation a request).
fn uri_len(uri: &hyper::Uri) -> usize {
    uri.scheme_str().map_or(0, |s| s.len() + 3)
        + uri.authority().map_or(0, |a| a.as_str().len())
        + uri.path().len()
        + uri.query().map_or(0, |q| q.len() + 1)
}

fn unavailable() -> Answer {
    respond(
        StatusCode::SERVICE_UNAVAILABLE,
        "application/json",
        error_bytes(-32603, "guardian unavailable"),
        true,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn req(session: &str) -> serde_json::Value {
        json!({"jsonrpc": "2.0", "method": "steps/userMessage", "id": 1,
               "params": {"metadata": {"session_id": session}}})
    }

    /// A session always goes to the same decider, sessions spread over all
    /// of them, and a request without a session goes to the first.
    #[test]
    fn shard_keeps_a_session_on_one_decider_and_spreads_sessions() {
        let mut used = [0usize; 4];
        for i in 0..400 {
            let s = format!("7c9e6679-{i:04}-40de-944b-e07fc1f90ae7");
            let k = super::shard(&req(&s), 4);
            assert_eq!(k, super::shard(&req(&s), 4), "{s}");
            assert!(k < 4);
            used[k] += 1;
        }
        assert!(used.iter().all(|&n| n >= 50), "{used:?}");
        assert_eq!(super::shard(&json!({"id": 1}), 4), 0);
        assert_eq!(
            super::shard(&json!({"params": {"metadata": {"session_id": 7}}}), 4),
            0
        );
        assert_eq!(super::shard(&req("anything"), 1), 0);
    }

    #[test]
    fn uri_len_is_the_length_of_the_written_target() {
        for t in ["/", "/x?y=1", "http://h:1/a?b", "h:80", "*", "http://h"] {
            let Ok(u) = t.parse::<hyper::Uri>() else {
                panic!("{t}")
            };
            assert_eq!(super::uri_len(&u), u.to_string().len(), "{t}");
        }
    }
}
