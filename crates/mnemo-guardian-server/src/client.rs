//! A small client for a remote Guardian (`mnemo guard http` or `mnemo
//! guard stdio`), for callers such as mnemo's bank compaction configured
//! with a Guardian URL or command (the I/O edge). Two transports carry the
//! same protocol: HTTP (one HTTP/1.1 POST per request over `std::net`,
//! inside TLS (rustls) for `https://` URLs) and stdio (a Guardian command
//! run as a child process, Content-Length frames on its stdin and stdout,
//! one child per session: [`crate::stdio_client`]). Everything above the
//! exchange of one request for one response (signing, verification, the
//! session's sequence, the reading of the answers) is shared.
//!
//! [`RemoteGuardian::check_compaction`] gives a remote Guardian the same facts
//! as the in-process [`mnemo_guardian::check_compaction`]: in a fresh session it sends
//! `handshake/hello`, one `steps/memoryContextRetrieval` per entry (the entry's
//! provenance as results, so order and re-grounding survive), then
//! `steps/preCompact` over those steps. A `modify` answer to preCompact is
//! applied as `deny` with the reason code `modify_unsupported` (ACS §6.5: a
//! compaction has no content a MODIFY could rewrite, and compacting the
//! original would apply a decision the Guardian did not make).
//!
//! With [`RemoteGuardian::with_hmac`] every request is signed under the
//! per-session key of ACS §10 (HKDF-SHA256 of the secret, info = the
//! session id) and every response must carry a signature that verifies
//! under the same key. The ServerHello is read where the current standard
//! puts it (the top of `result`) or where v0.1.0 Guardians put it
//! (`result.payload`).

use crate::posture::{Consultation, Outcome, REFUSAL_CODES, Stage, failure_kind};
use mnemo_acs::model::{ACS_VERSION, Trigger, Verdict};
use mnemo_acs::sign;
use mnemo_guardian::decide::{Decision, EntryProvenance};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A client failure.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL is not `http(s)://host:port[/path]`.
    #[error("guardian URL {0}: expected http://host:port[/path] or https://host:port[/path]")]
    Url(String),
    /// The TLS configuration (CA or client certificate files) is unusable.
    #[error("guardian TLS: {0}")]
    Tls(#[from] crate::tls::TlsError),
    /// Network, or the pipes of a stdio Guardian.
    #[error("guardian {url}: {source}")]
    Io {
        /// URL, or the command of a stdio Guardian (in backquotes).
        url: String,
        /// Cause.
        source: std::io::Error,
    },
    /// Not an HTTP 200 JSON answer, or not a JSON-RPC frame over stdio.
    #[error("guardian {url}: {message}")]
    Protocol {
        /// URL, or the command of a stdio Guardian.
        url: String,
        /// What was wrong.
        message: String,
    },
    /// A JSON-RPC error answer.
    #[error("guardian {url}: error {code}: {message}")]
    Rpc {
        /// URL, or the command of a stdio Guardian.
        url: String,
        /// Code.
        code: i64,
        /// Message.
        message: String,
    },
    /// The stdio Guardian command is unusable (empty, or not split into
    /// words).
    #[error("guardian command: {0}")]
    Command(String),
    /// The stdio Guardian's program could not be started.
    #[error("guardian command: cannot run `{program}`: {}", spawn_reason(.source))]
    Spawn {
        /// The program (the command's first word).
        program: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The stdio Guardian exited (or closed its output) before it answered.
    #[error("guardian {url}: {what}{}", stderr_suffix(.stderr))]
    Exited {
        /// The command.
        url: String,
        /// What happened (exit status, the request left unanswered).
        what: String,
        /// The tail of its stderr.
        stderr: String,
    },
    /// The stdio Guardian did not answer within the timeout (it was
    /// killed).
    #[error("guardian {url}: no answer to {what} within {} s (the Guardian was stopped)", .timeout.as_secs_f64())]
    NoAnswer {
        /// The command.
        url: String,
        /// The request left unanswered (its method).
        what: String,
        /// The timeout.
        timeout: Duration,
    },
}

fn spawn_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "program not found".into(),
        std::io::ErrorKind::PermissionDenied => format!("not executable ({e})"),
        _ => e.to_string(),
    }
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        "; it wrote nothing on stderr".into()
    } else {
        format!("; its stderr ends: {stderr}")
    }
}

/// TLS files for an `https://` Guardian (all optional: without a CA the
/// system's roots are trusted; a client certificate needs both files).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTls {
    /// PEM file of the CAs to trust.
    pub ca: Option<std::path::PathBuf>,
    /// PEM client certificate chain.
    pub cert: Option<std::path::PathBuf>,
    /// PEM private key of `cert`.
    pub key: Option<std::path::PathBuf>,
}

/// Largest response accepted.
pub const MAX_RESPONSE: usize = 4 << 20;

/// A remote Guardian reached over HTTP(S) or stdio.
#[derive(Debug, Clone)]
pub struct RemoteGuardian {
    /// The URL, or the command in backquotes (for messages).
    url: String,
    timeout: Duration,
    hmac: Option<(String, Vec<u8>)>,
    transport: Transport,
}

/// How one request reaches the Guardian and its response comes back.
#[derive(Debug, Clone)]
enum Transport {
    Http(Http),
    Stdio(crate::stdio_client::StdioTarget),
}

/// An `http(s)://` Guardian.
#[derive(Debug, Clone)]
struct Http {
    host: String,
    path: String,
    /// `https://`: the TLS configuration (`None` until set: the system's
    /// roots are loaded per request).
    https: bool,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh random-looking RFC 4122 version-4 UUID (SHA-256 of time, process
/// id and a counter; unique, not secret).
pub fn new_uuid() -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seed = format!("{nanos}:{}:{n}", std::process::id());
    let mut b = mnemo_acs::chain::sha256(seed.as_bytes());
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = mnemo_acs::chain::to_hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// `http(s)://host:port[/path]` split into (HTTPS?, `host:port`, path, empty
/// when none is given); `None` for another scheme or a host without a port.
pub(crate) fn split_url(url: &str) -> Option<(bool, &str, &str)> {
    let (https, rest) = match url.strip_prefix("https://") {
        Some(rest) => (true, rest),
        None => (false, url.strip_prefix("http://")?),
    };
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    (!host.is_empty() && host.contains(':')).then_some((https, host, path))
}

impl RemoteGuardian {
    /// A client for `http://host:port[/path]` or `https://host:port[/path]`
    /// (timeout 5 s; HTTPS trusts the system's roots unless
    /// [`RemoteGuardian::with_tls`] names a CA).
    pub fn new(url: &str) -> Result<Self, ClientError> {
        let (https, host, path) = split_url(url).ok_or_else(|| ClientError::Url(url.into()))?;
        let path = if path.is_empty() { "/" } else { path };
        Ok(RemoteGuardian {
            url: url.into(),
            timeout: Duration::from_secs(5),
            hmac: None,
            transport: Transport::Http(Http {
                host: host.into(),
                path: path.into(),
                https,
                tls: None,
            }),
        })
    }

    /// A client for a Guardian that speaks stdio (`mnemo guard stdio`):
    /// `argv` (program first, no shell) is run as a child process per
    /// session, with the same timeout (5 s per answer) and the same
    /// protocol as over HTTP.
    pub fn command(argv: Vec<String>) -> Result<Self, ClientError> {
        let target = crate::stdio_client::StdioTarget::new(argv)?;
        Ok(RemoteGuardian {
            url: target.label().to_string(),
            timeout: Duration::from_secs(5),
            hmac: None,
            transport: Transport::Stdio(target),
        })
    }

    /// The transport's name as a ClientHello offers it (`http`, `stdio`).
    pub fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Http(_) => "http",
            Transport::Stdio(_) => "stdio",
        }
    }

    /// Ends the connection, if the transport keeps one (a stdio Guardian's
    /// child is stopped and reaped); the next request starts a new one.
    /// [`RemoteGuardian::check_compaction`] does this at its end.
    pub fn close(&self) {
        if let Transport::Stdio(t) = &self.transport {
            t.close();
        }
    }

    /// A client for `url` with the TLS files of `tls` (used for `https://`
    /// only; a client certificate without its key, or the reverse, is an
    /// error).
    pub fn connect(url: &str, tls: &ClientTls) -> Result<Self, ClientError> {
        let g = RemoteGuardian::new(url)?;
        if !matches!(&g.transport, Transport::Http(h) if h.https) || *tls == ClientTls::default() {
            return Ok(g);
        }
        let identity = match (&tls.cert, &tls.key) {
            (Some(c), Some(k)) => Some((c.as_path(), k.as_path())),
            (None, None) => None,
            _ => {
                return Err(ClientError::Tls(crate::tls::TlsError::Config(
                    "a client certificate needs both its certificate and its key file".into(),
                )));
            }
        };
        g.with_tls(tls.ca.as_deref(), identity)
    }

    /// For `https://`: trusts the CAs of the PEM file `ca` (else the
    /// system's roots) and presents `identity` (certificate chain and key
    /// PEM files) when the Guardian asks for a client certificate.
    pub fn with_tls(
        mut self,
        ca: Option<&std::path::Path>,
        identity: Option<(&std::path::Path, &std::path::Path)>,
    ) -> Result<Self, ClientError> {
        let config = crate::tls::client_config(ca, identity)?;
        if let Transport::Http(h) = &mut self.transport {
            h.tls = Some(config);
        }
        Ok(self)
    }

    /// Signs every request with HMAC-SHA256 under the per-session key
    /// derived from `secret` (named by `key_id`), and requires every
    /// response to be signed under it.
    pub fn with_hmac(mut self, key_id: &str, secret: &[u8]) -> Self {
        self.hmac = Some((key_id.into(), secret.to_vec()));
        self
    }

    /// Sets the connect/read/write timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn io(&self, source: std::io::Error) -> ClientError {
        ClientError::Io {
            url: self.url.clone(),
            source,
        }
    }

    fn protocol(&self, message: impl Into<String>) -> ClientError {
        ClientError::Protocol {
            url: self.url.clone(),
            message: message.into(),
        }
    }

    /// Sends one JSON-RPC request (signed when configured); returns the
    /// response, whose signature is verified when a key is configured.
    pub fn call(&self, request: &Value) -> Result<Value, ClientError> {
        let mut request = request.clone();
        if let Some((id, secret)) = &self.hmac {
            sign::sign_request(&mut request, id, secret);
        }
        let resp = match &self.transport {
            Transport::Http(h) => self.post(h, &request)?,
            Transport::Stdio(t) => t.exchange(
                request.to_string().into_bytes(),
                request.get("id").unwrap_or(&Value::Null),
                request.get("method").and_then(Value::as_str).unwrap_or("?"),
                self.timeout,
                MAX_RESPONSE,
            )?,
        };
        if let Some((id, secret)) = &self.hmac {
            let session = request
                .pointer("/params/metadata/session_id")
                .and_then(Value::as_str)
                .unwrap_or("");
            sign::verify_response(&resp, session, &[(id.clone(), secret.clone())])
                .map_err(|e| self.protocol(format!("response signature: {e}")))?;
        }
        Ok(resp)
    }

    fn post(&self, h: &Http, request: &Value) -> Result<Value, ClientError> {
        let body = request.to_string();
        let addr = h
            .host
            .to_socket_addrs()
            .map_err(|e| self.io(e))?
            .next()
            .ok_or_else(|| self.protocol("cannot resolve host"))?;
        let stream = TcpStream::connect_timeout(&addr, self.timeout).map_err(|e| self.io(e))?;
        stream
            .set_read_timeout(Some(self.timeout))
            .map_err(|e| self.io(e))?;
        stream
            .set_write_timeout(Some(self.timeout))
            .map_err(|e| self.io(e))?;
        let _ = stream.set_nodelay(true);
        if !h.https {
            return self.exchange(h, stream, &body);
        }
        let config = match &h.tls {
            Some(c) => c.clone(),
            None => crate::tls::client_config(None, None)?,
        };
        let name = h
            .host
            .rsplit_once(':')
            .map_or(h.host.as_str(), |(host, _)| host);
        let name = name.trim_start_matches('[').trim_end_matches(']');
        let name = rustls::pki_types::ServerName::try_from(name.to_string())
            .map_err(|_| ClientError::Url(self.url.clone()))?;
        let conn = rustls::ClientConnection::new(config, name)
            .map_err(|e| self.protocol(format!("TLS: {e}")))?;
        self.exchange(h, rustls::StreamOwned::new(conn, stream), &body)
    }

    /// Writes one request on `stream` and reads its answer.
    fn exchange<S: Read + Write>(
        &self,
        h: &Http,
        mut stream: S,
        body: &str,
    ) -> Result<Value, ClientError> {
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            h.path,
            h.host,
            body.len()
        );
        stream.write_all(head.as_bytes()).map_err(|e| self.io(e))?;
        stream.write_all(body.as_bytes()).map_err(|e| self.io(e))?;
        stream.flush().map_err(|e| self.io(e))?;
        let mut reader = BufReader::new(stream.take(MAX_RESPONSE as u64));
        let mut status = String::new();
        reader.read_line(&mut status).map_err(|e| self.io(e))?;
        if status.split_whitespace().nth(1) != Some("200") {
            return Err(self.protocol(format!("HTTP status {}", status.trim())));
        }
        let mut len: Option<usize> = None;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).map_err(|e| self.io(e))? == 0 {
                return Err(self.protocol("connection closed in headers"));
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().ok();
            }
        }
        let len = len.ok_or_else(|| self.protocol("no Content-Length"))?;
        if len > MAX_RESPONSE {
            return Err(self.protocol("response too large"));
        }
        let mut buf = vec![0u8; len];
        reader.read_exact(&mut buf).map_err(|e| self.io(e))?;
        serde_json::from_slice(&buf).map_err(|e| self.protocol(format!("invalid JSON: {e}")))
    }

    fn call_ok(&self, request: &Value) -> Result<Value, ClientError> {
        let resp = self.call(request)?;
        if let Some(err) = resp.get("error") {
            return Err(ClientError::Rpc {
                url: self.url.clone(),
                code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            });
        }
        resp.get("result")
            .cloned()
            .ok_or_else(|| self.protocol("neither result nor error"))
    }

    /// Asks the remote Guardian whether `entries` (oldest first) may be
    /// compacted, in a fresh session (see the module documentation). Any
    /// failure is an error: the caller that wants the postures of ACS §4.1
    /// and §6.4 uses [`RemoteGuardian::consult`].
    pub fn check_compaction(
        &self,
        entries: &[EntryProvenance],
        trigger: Trigger,
    ) -> Result<Decision, ClientError> {
        match self.consult(entries, trigger).outcome {
            Outcome::Decided { decision, .. } => Ok(decision),
            Outcome::Refused { error } | Outcome::Failed { error, .. } => Err(error),
        }
    }

    /// Asks as [`RemoteGuardian::check_compaction`] does and says what was
    /// sent and what came back ([`crate::posture`]): the session, the
    /// request ids, the ServerHello's `on_decision_failure`, and a
    /// decision, a refusal of the session, or a failure at a named step
    /// (the first failure ends the session: nothing more is sent).
    pub fn consult(&self, entries: &[EntryProvenance], trigger: Trigger) -> Consultation {
        // One connection per session: a stdio Guardian's child ends with it.
        let _end = EndOnDrop(self);
        let mut c = Consultation {
            session_id: new_uuid(),
            time: mnemo_acs::time::format_rfc3339_ms(mnemo_acs::time::now_ms()),
            request_ids: Vec::with_capacity(entries.len() + 2),
            announced_failure_posture: None,
            outcome: Outcome::Failed {
                stage: Stage::Hello,
                received: "no_answer",
                error: self.protocol("not asked"),
            },
        };
        c.outcome = self.run_session(entries, trigger, &mut c);
        c
    }

    fn run_session(
        &self,
        entries: &[EntryProvenance],
        trigger: Trigger,
        c: &mut Consultation,
    ) -> Outcome {
        let session = c.session_id.clone();
        let envelope = |method: &str, payload: Value| -> (String, Value) {
            let rid = new_uuid();
            let req = json!({"jsonrpc": "2.0", "method": method, "id": rid, "params": {
                "acs_version": ACS_VERSION, "request_id": rid,
                "timestamp": mnemo_acs::time::format_rfc3339_ms(mnemo_acs::time::now_ms()),
                "metadata": {"agent_id": "mnemo", "session_id": session}, "payload": payload}});
            (rid, req)
        };
        let failed = |stage: Stage, error: ClientError| Outcome::Failed {
            stage,
            received: failure_kind(&error),
            error,
        };
        let (rid, hello) = envelope(
            "handshake/hello",
            json!({"acs_versions_supported": [ACS_VERSION],
                   "methods_implemented": ["steps/memoryContextRetrieval", "steps/preCompact"],
                   "transports_supported": [self.transport_name()], "provenance_producer": "deterministic"}),
        );
        c.request_ids.push(rid);
        let server_hello = match self.call_ok(&hello) {
            Ok(r) => r,
            // A refusal is a decision (ACS 4.1); any other failure leaves
            // the session to the startup posture.
            Err(error @ ClientError::Rpc { code, .. }) if REFUSAL_CODES.contains(&code) => {
                return Outcome::Refused { error };
            }
            Err(error) => return failed(Stage::Hello, error),
        };
        let Some(negotiated) = negotiated_version(&server_hello) else {
            return failed(
                Stage::Hello,
                self.protocol("handshake/hello: no ServerHello in the result"),
            );
        };
        if negotiated.split('.').next() != ACS_VERSION.split('.').next() {
            return Outcome::Refused {
                error: self.protocol(format!(
                    "handshake/hello: the Guardian negotiated ACS {negotiated}, this client speaks {ACS_VERSION}"
                )),
            };
        }
        c.announced_failure_posture = announced_failure_posture(&server_hello).map(str::to_string);
        let mut steps = Vec::with_capacity(entries.len());
        for e in entries {
            let results: Vec<Value> = e
                .provenance
                .iter()
                .map(|p| json!({"memory_id": e.step_id, "value": e.step_id, "provenance": p}))
                .collect();
            let (rid, req) = envelope(
                "steps/memoryContextRetrieval",
                json!({"memory_store": {"name": "mnemo-bank", "scope": "session"}, "results": results}),
            );
            c.request_ids.push(rid.clone());
            if let Err(error) = self.call_ok(&req) {
                return failed(Stage::Retrieval, error);
            }
            steps.push(rid);
        }
        let (rid, pre) = envelope(
            "steps/preCompact",
            json!({"entries_to_compact": steps, "triggered_by": trigger.as_str()}),
        );
        c.request_ids.push(rid);
        let r = match self.call_ok(&pre) {
            Ok(r) => r,
            Err(error) => return failed(Stage::PreCompact, error),
        };
        let received = match r.get("decision").and_then(Value::as_str) {
            Some(d @ ("allow" | "deny" | "modify" | "ask" | "defer")) => d.to_string(),
            // No usable decision: a decision failure (ACS 6.4).
            other => {
                return Outcome::Failed {
                    stage: Stage::PreCompact,
                    received: "malformed",
                    error: self.protocol(match other {
                        Some(d) => format!("steps/preCompact: unknown decision {d:?}"),
                        None => "steps/preCompact: a result with no decision".to_string(),
                    }),
                };
            }
        };
        let strings = |k: &str| -> Vec<String> {
            r.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let reasoning = r
            .get("reasoning")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut reason_codes = strings("reason_codes");
        let (verdict, reasoning) = match received.as_str() {
            "allow" => (Verdict::Allow, reasoning),
            // A compaction cannot apply a MODIFY (there is no content of the
            // step to rewrite): the client applies DENY and says so, with
            // the reason code of ACS §6.5, instead of compacting the
            // original as if the Guardian had allowed it.
            "modify" => {
                if !reason_codes.iter().any(|c| c == MODIFY_UNSUPPORTED) {
                    reason_codes.push(MODIFY_UNSUPPORTED.into());
                }
                (
                    Verdict::Deny,
                    format!(
                        "the Guardian answered modify, which a compaction cannot apply, so mnemo applied deny (ACS 6.5; received modify, applied deny): {reasoning}"
                    ),
                )
            }
            // deny; ask and defer, which a gate cannot pause for, are
            // applied as deny.
            _ => (Verdict::Deny, reasoning),
        };
        Outcome::Decided {
            received,
            decision: Decision {
                verdict,
                reasoning,
                reason_codes,
                cited_provenance_ids: strings("cited_provenance_ids"),
                policy_data: r.get("policy_data").cloned().unwrap_or(Value::Null),
                rule_id: "remote",
            },
        }
    }
}

/// Closes the client's connection when dropped.
struct EndOnDrop<'a>(&'a RemoteGuardian);

impl Drop for EndOnDrop<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The failure posture a ServerHello announces: `on_decision_failure`, or
/// `on_timeout` (its v0.1.0 name), at the top of `result` or under
/// `result.payload`.
pub fn announced_failure_posture(result: &Value) -> Option<&str> {
    fn at(v: &Value) -> Option<&str> {
        v.get("on_decision_failure")
            .or_else(|| v.get("on_timeout"))
            .and_then(Value::as_str)
    }
    at(result).or_else(|| at(result.get("payload")?))
}

/// The reason code a client adds when it applies DENY in place of a MODIFY
/// it cannot apply (ACS §6.5).
pub const MODIFY_UNSUPPORTED: &str = "modify_unsupported";

/// The `negotiated_version` of a `handshake/hello` result: at the top of
/// `result` (the current standard and its reference clients) or under
/// `result.payload` (v0.1.0 Guardians, mnemo's before this change).
pub fn negotiated_version(result: &Value) -> Option<&str> {
    result
        .get("negotiated_version")
        .or_else(|| result.get("payload")?.get("negotiated_version"))
        .and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_hello_is_read_in_both_shapes() {
        let top = json!({"negotiated_version": "0.1.0", "methods_evaluated": []});
        let nested = json!({"type": "final", "decision": "allow", "payload": {"negotiated_version": "0.1.2"}});
        let both =
            json!({"negotiated_version": "0.1.0", "payload": {"negotiated_version": "0.1.0"}});
        assert_eq!(negotiated_version(&top), Some("0.1.0"));
        assert_eq!(negotiated_version(&nested), Some("0.1.2"));
        assert_eq!(negotiated_version(&both), Some("0.1.0"));
        assert_eq!(negotiated_version(&json!({"decision": "allow"})), None);
    }
}
