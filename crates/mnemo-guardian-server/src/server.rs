//! Transports (the I/O edge): the
//! Content-Length stdio server, an HTTP/1.1 keep-alive server (one event
//! loop that batches decisions), and the one-shot `check`.

use crate::framing::{self, Frame};
use crate::http;
use mio::{Events, Interest, Poll, Registry, Token};
use mnemo_guardian::protocol::{self, Guardian};
use mnemo_guardian::store::SessionStore;
pub use mnemo_guardian_store::open::{
    DynStore, GuardOptions, OpenError, default_store_path, load_policy, open_guardian, open_store,
};
use std::io::{self, BufRead, Read, Write};
use std::net::{TcpListener, ToSocketAddrs};
use std::time::{Duration, Instant};

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

/// Most requests decided in one store transaction.
const MAX_BATCH: usize = 256;

/// A connection idle this long is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

const LISTENER: Token = Token(usize::MAX);

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
    let listener = TcpListener::bind(addr)?;
    on_ready(listener.local_addr()?);
    serve_listener(g, listener)
}

/// One HTTP connection of the event loop.
struct Conn {
    stream: mio::net::TcpStream,
    rbuf: Vec<u8>,
    wbuf: Vec<u8>,
    wpos: usize,
    /// Close once `wbuf` is flushed (refusal, `Connection: close`, EOF).
    closing: bool,
    /// Registered for writable events (a flush hit a full socket).
    want_write: bool,
    last_active: Instant,
}

/// A response slot, in request order on its connection.
enum Slot {
    Ready {
        status: &'static str,
        content_type: &'static str,
        body: Vec<u8>,
        keep_alive: bool,
    },
    /// Decided in the batch, at this index.
    Decide { job: usize, keep_alive: bool },
}

/// Serves HTTP/1.1 JSON-RPC on an already bound listener, on this thread.
///
/// One event loop (epoll via `mio`) owns every connection and the Guardian:
/// each turn reads what all ready connections sent, decides every complete
/// request of the turn in one store transaction (group commit, arrival
/// order), then writes the answers in each connection's request order. No
/// thread hand-offs, so the tail latency is one turn; a client that does not
/// read its answers stops being read (bounded buffers).
pub fn serve_listener(mut g: Guardian<DynStore>, listener: TcpListener) -> Result<(), ServeError> {
    listener.set_nonblocking(true)?;
    let mut listener = mio::net::TcpListener::from_std(listener);
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let max_body = g.config().max_request_bytes;
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut events = Events::with_capacity(1024);
    let mut again: Vec<usize> = Vec::new();
    let mut touched: Vec<usize> = Vec::new();
    let mut slots: Vec<(usize, Vec<Slot>)> = Vec::new();
    let mut jobs: Vec<serde_json::Value> = Vec::new();
    let mut last_sweep = Instant::now();
    let mut scratch = vec![0u8; 64 * 1024];
    loop {
        let timeout = if again.is_empty() {
            Duration::from_secs(1)
        } else {
            Duration::ZERO
        };
        match poll.poll(&mut events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        }
        touched.clear();
        touched.append(&mut again);
        for ev in events.iter() {
            if ev.token() == LISTENER {
                accept_all(&listener, &poll, &mut conns, &mut free)?;
            } else {
                touched.push(ev.token().0);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        // Read and parse.
        for &t in &touched {
            let Some(Some(c)) = conns.get_mut(t) else {
                continue;
            };
            let mut list = Vec::new();
            let more = c.read_requests(&mut scratch, max_body, &mut jobs, &mut list);
            if more {
                again.push(t);
            }
            if !list.is_empty() {
                slots.push((t, list));
            }
        }
        // Decide, one transaction per batch.
        let mut answers: Vec<serde_json::Value> = Vec::with_capacity(jobs.len());
        for chunk in jobs.chunks(MAX_BATCH) {
            answers.extend(g.handle_batch(chunk));
        }
        jobs.clear();
        // Answer, in request order per connection.
        for (t, list) in slots.drain(..) {
            let Some(Some(c)) = conns.get_mut(t) else {
                continue;
            };
            for slot in list {
                match slot {
                    Slot::Ready {
                        status,
                        content_type,
                        body,
                        keep_alive,
                    } => http::write_response(&mut c.wbuf, status, content_type, &body, keep_alive),
                    Slot::Decide { job, keep_alive } => {
                        let body = answers
                            .get(job)
                            .map(protocol::encode_response)
                            .unwrap_or_else(|| error_bytes(-32603, "guardian unavailable"));
                        http::write_response(
                            &mut c.wbuf,
                            "200 OK",
                            "application/json",
                            &body,
                            keep_alive,
                        );
                    }
                }
            }
        }
        // Flush; close what is done.
        for &t in &touched {
            let Some(Some(c)) = conns.get_mut(t) else {
                continue;
            };
            let keep = c.flush(poll.registry(), Token(t));
            if !keep {
                close(&mut conns, &mut free, poll.registry(), t);
            }
        }
        if last_sweep.elapsed() >= Duration::from_secs(1) {
            last_sweep = Instant::now();
            for t in 0..conns.len() {
                if conns[t]
                    .as_ref()
                    .is_some_and(|c| c.last_active.elapsed() >= IDLE_TIMEOUT)
                {
                    close(&mut conns, &mut free, poll.registry(), t);
                }
            }
        }
    }
}

fn accept_all(
    listener: &mio::net::TcpListener,
    poll: &Poll,
    conns: &mut Vec<Option<Conn>>,
    free: &mut Vec<usize>,
) -> io::Result<()> {
    loop {
        let (mut stream, _) = match listener.accept() {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // Out of descriptors, aborted handshakes …: try again on the next event.
            Err(_) => return Ok(()),
        };
        let open = conns.len() - free.len();
        if open >= MAX_CONNECTIONS {
            let _ = stream.write(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            continue;
        }
        let _ = stream.set_nodelay(true);
        let t = free.pop().unwrap_or_else(|| {
            conns.push(None);
            conns.len() - 1
        });
        if poll
            .registry()
            .register(&mut stream, Token(t), Interest::READABLE)
            .is_err()
        {
            free.push(t);
            continue;
        }
        conns[t] = Some(Conn {
            stream,
            rbuf: Vec::new(),
            wbuf: Vec::new(),
            wpos: 0,
            closing: false,
            want_write: false,
            last_active: Instant::now(),
        });
    }
}

fn close(conns: &mut [Option<Conn>], free: &mut Vec<usize>, registry: &Registry, t: usize) {
    if let Some(mut c) = conns.get_mut(t).and_then(Option::take) {
        let _ = registry.deregister(&mut c.stream);
        let _ = c.stream.shutdown(std::net::Shutdown::Write);
        free.push(t);
    }
}

impl Conn {
    /// Reads what is available and turns every complete request into a
    /// slot. Returns whether the connection must be visited again without
    /// a new event (its read stopped at the buffer limit).
    fn read_requests(
        &mut self,
        scratch: &mut [u8],
        max_body: usize,
        jobs: &mut Vec<serde_json::Value>,
        slots: &mut Vec<Slot>,
    ) -> bool {
        // Answers not yet taken by the client: read nothing more until they are.
        if self.closing || self.wpos < self.wbuf.len() {
            return false;
        }
        let limit = http::MAX_HEAD_BYTES + max_body + 4096;
        let mut more = false;
        let mut eof = false;
        loop {
            if self.rbuf.len() >= limit {
                more = true;
                break;
            }
            let want = (limit - self.rbuf.len()).min(scratch.len());
            match self.stream.read(&mut scratch[..want]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    self.rbuf.extend_from_slice(&scratch[..n]);
                    self.last_active = Instant::now();
                }
                Err(e) => match e.kind() {
                    io::ErrorKind::WouldBlock => break,
                    io::ErrorKind::Interrupted => continue,
                    _ => {
                        eof = true;
                        break;
                    }
                },
            }
        }
        let mut off = 0;
        loop {
            match http::parse(&self.rbuf[off..], max_body) {
                http::Parsed::Incomplete => {
                    if self.rbuf.len() - off >= limit {
                        // Only blank lines or an endless head: give up.
                        slots.push(text(
                            "400 Bad Request",
                            "request does not end".into(),
                            false,
                        ));
                        self.closing = true;
                    }
                    break;
                }
                http::Parsed::Refused(r) => {
                    slots.push(if r.declared.is_some() {
                        json(r.status, error_bytes(-32600, &r.reason), false)
                    } else {
                        text(r.status, r.reason, false)
                    });
                    self.closing = true;
                    break;
                }
                http::Parsed::Request { request, consumed } => {
                    let body = &self.rbuf[off + request.body.start..off + request.body.end];
                    off += consumed;
                    let keep_alive = request.keep_alive;
                    if request.method == "GET"
                        && (request.path == "/health" || request.path == "/healthz")
                    {
                        slots.push(text("200 OK", "ok".into(), keep_alive));
                    } else if request.method != "POST" {
                        slots.push(text(
                            "405 Method Not Allowed",
                            "POST JSON-RPC requests".into(),
                            false,
                        ));
                        self.closing = true;
                        break;
                    } else {
                        match protocol::parse_request(body, max_body) {
                            Ok(v) => {
                                jobs.push(v);
                                slots.push(Slot::Decide {
                                    job: jobs.len() - 1,
                                    keep_alive,
                                });
                            }
                            Err(resp) => slots.push(json(
                                "200 OK",
                                protocol::encode_response(&resp),
                                keep_alive,
                            )),
                        }
                    }
                    if !keep_alive {
                        self.closing = true;
                        break;
                    }
                }
            }
        }
        if self.closing {
            self.rbuf.clear();
        } else {
            self.rbuf.drain(..off);
        }
        if eof {
            self.closing = true;
        }
        more && !self.closing
    }

    /// Writes what it can. Returns false when the connection is finished.
    fn flush(&mut self, registry: &Registry, token: Token) -> bool {
        while self.wpos < self.wbuf.len() {
            match self.stream.write(&self.wbuf[self.wpos..]) {
                Ok(0) => return false,
                Ok(n) => {
                    self.wpos += n;
                    self.last_active = Instant::now();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !self.want_write {
                        self.want_write = true;
                        return registry
                            .reregister(
                                &mut self.stream,
                                token,
                                Interest::READABLE | Interest::WRITABLE,
                            )
                            .is_ok();
                    }
                    return true;
                }
                Err(_) => return false,
            }
        }
        self.wbuf.clear();
        self.wpos = 0;
        if self.closing {
            return false;
        }
        if self.want_write {
            self.want_write = false;
            return registry
                .reregister(&mut self.stream, token, Interest::READABLE)
                .is_ok();
        }
        true
    }
}

fn json(status: &'static str, body: Vec<u8>, keep_alive: bool) -> Slot {
    Slot::Ready {
        status,
        content_type: "application/json",
        body,
        keep_alive,
    }
}

fn text(status: &'static str, reason: String, keep_alive: bool) -> Slot {
    Slot::Ready {
        status,
        content_type: "text/plain",
        body: reason.into_bytes(),
        keep_alive,
    }
}
