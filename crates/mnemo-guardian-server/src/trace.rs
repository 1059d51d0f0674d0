//! The client's ACS Trace events (ACS Trace, "Trace events"): after a
//! consultation, one OTLP/HTTP JSON `ExportTraceServiceRequest` with a span
//! per step the client sent (`acs.session` for the handshake,
//! `acs.memory.retrieval` per retrieval, `acs.compact` for preCompact),
//! the Guardian's verdict as an `acs.decision` span event on the
//! preCompact span, a step without a usable decision as an
//! `acs.decision.failure` event (`acs.failure.class`, `.posture`,
//! `.reported_by`, `.detail`), and what mnemo applied (`mnemo.received`,
//! `mnemo.applied`, `mnemo.reason_codes`).
//!
//! A MODIFY the gate cannot apply, applied as DENY (§6.5), is **not** a
//! decision failure (its outcome is defined): it is the `acs.decision`
//! event (`modify`) plus a `mnemo.decision.substitution` event (received
//! modify, applied deny, `modify_unsupported`).
//!
//! [`spans`] is pure (the JSON from the consultation and the clock
//! readings); [`export`] is the edge: one HTTP/1.1 POST within a total
//! deadline. Export is best effort: its result is only reported, it never
//! changes what was applied (Trace events MUST NOT block enforcement).

use crate::posture::{Applied, AppliedAs, Consultation, Outcome, Stage};
use mnemo_guardian::decide::EntryProvenance;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The default total deadline of one export (connect, write, read).
pub const EXPORT_TIMEOUT: Duration = Duration::from_millis(300);

/// A trace export failure.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The endpoint is not `http://host:port[/path]`.
    #[error("trace endpoint {0}: expected http://host:port[/path]")]
    Url(String),
    /// Network failure (refused, unreachable, timed out).
    #[error("trace endpoint {url}: {source}")]
    Io {
        /// The endpoint.
        url: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The collector answered, but not with a 2xx status.
    #[error("trace endpoint {url}: {message}")]
    Status {
        /// The endpoint.
        url: String,
        /// The status line or what was wrong.
        message: String,
    },
    /// The deadline passed.
    #[error("trace endpoint {url}: no answer within {} ms", .timeout.as_millis())]
    Timeout {
        /// The endpoint.
        url: String,
        /// The deadline.
        timeout: Duration,
    },
}

/// An OTLP/HTTP traces endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEndpoint {
    url: String,
    host: String,
    path: String,
}

impl TraceEndpoint {
    /// `http://host:port[/path]` used as given (the form of
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); with no path, `/v1/traces`.
    pub fn traces(url: &str) -> Result<Self, TraceError> {
        // Plain http only: an https:// endpoint is unusable here.
        let (host, path) = match crate::client::split_url(url) {
            Some((false, host, path)) => (host, path),
            _ => return Err(TraceError::Url(url.into())),
        };
        let path = if path.is_empty() || path == "/" {
            "/v1/traces".to_string()
        } else {
            path.to_string()
        };
        Ok(TraceEndpoint {
            url: format!("http://{host}{path}"),
            host: host.into(),
            path,
        })
    }

    /// A base endpoint (the form of `OTEL_EXPORTER_OTLP_ENDPOINT`):
    /// `/v1/traces` is appended to its path.
    pub fn base(url: &str) -> Result<Self, TraceError> {
        let trimmed = url.trim_end_matches('/');
        let e = TraceEndpoint::traces(trimmed)?;
        if e.path == "/v1/traces" {
            return Ok(e);
        }
        TraceEndpoint::traces(&format!("{trimmed}/v1/traces"))
    }

    /// The full URL the spans are POSTed to.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Where a trace endpoint came from, strongest first: the flag, mnemo.toml,
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as given),
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended). `get` reads an
/// environment variable (empty counts as unset).
pub fn resolve_endpoint(
    flag: Option<&str>,
    config: Option<&str>,
    get: impl Fn(&str) -> Option<String>,
) -> Option<Result<TraceEndpoint, TraceError>> {
    let set = |s: Option<&str>| s.map(str::trim).filter(|s| !s.is_empty()).map(String::from);
    if let Some(u) = set(flag).or_else(|| set(config)) {
        return Some(TraceEndpoint::traces(&u));
    }
    if let Some(u) = set(get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").as_deref()) {
        return Some(TraceEndpoint::traces(&u));
    }
    set(get("OTEL_EXPORTER_OTLP_ENDPOINT").as_deref()).map(|u| TraceEndpoint::base(&u))
}

/// The facts of a consultation that [`spans`] needs besides the
/// consultation and its resolution.
#[derive(Debug, Clone, Copy)]
pub struct TraceInput<'a> {
    /// The Guardian (URL or `stdio: COMMAND`): `acs.evaluator`.
    pub guardian: &'a str,
    /// The entries asked about (one retrieval each).
    pub entries: &'a [EntryProvenance],
    /// `acs.compact.triggered_by`.
    pub triggered_by: &'a str,
    /// When the consultation began and ended (Unix nanoseconds).
    pub start_ns: u128,
    /// End.
    pub end_ns: u128,
}

/// 32 hex digits: the trace id of a session.
pub fn trace_id(session_id: &str) -> String {
    let h = mnemo_acs::chain::sha256(format!("trace:{session_id}").as_bytes());
    mnemo_acs::chain::to_hex(&h)[..32].to_string()
}

/// 16 hex digits: the span id of a request of a session.
pub fn span_id(session_id: &str, request_id: &str) -> String {
    let h = mnemo_acs::chain::sha256(format!("span:{session_id}:{request_id}").as_bytes());
    mnemo_acs::chain::to_hex(&h)[..16].to_string()
}

fn attr(key: &str, value: Value) -> Value {
    let v = match value {
        Value::Bool(b) => json!({"boolValue": b}),
        Value::Number(n) => match n.as_i64() {
            Some(i) => json!({"intValue": i.to_string()}),
            None => json!({"doubleValue": n}),
        },
        Value::Array(a) => {
            let values: Vec<Value> = a
                .into_iter()
                .map(|x| match x {
                    Value::String(s) => json!({"stringValue": s}),
                    other => json!({"stringValue": other.to_string()}),
                })
                .collect();
            json!({"arrayValue": {"values": values}})
        }
        Value::String(s) => json!({"stringValue": s}),
        other => json!({"stringValue": other.to_string()}),
    };
    json!({"key": key, "value": v})
}

fn attrs(pairs: Vec<(&str, Value)>) -> Vec<Value> {
    pairs.into_iter().map(|(k, v)| attr(k, v)).collect()
}

/// The `acs.failure.class` of a failed exchange (what the audit log calls
/// `received`), at `stage`.
fn failure_class(stage: Stage, received: &str) -> &'static str {
    if stage == Stage::Hello {
        return "handshake_failure";
    }
    match received {
        "no_answer" => "timeout",
        "error" => "guardian_error",
        "bad_signature" => "signature_invalid",
        "not_json" | "http_error" | "malformed" => "malformed_response",
        _ => "other",
    }
}

/// The `ExportTraceServiceRequest` (OTLP/HTTP JSON) of one consultation
/// and what the client applied (pure).
pub fn spans(c: &Consultation, applied: &Applied, input: &TraceInput<'_>) -> Value {
    let trace = trace_id(&c.session_id);
    let start = input.start_ns.to_string();
    let end = input.end_ns.max(input.start_ns).to_string();
    let session = c.session_id.as_str();
    let ids = &c.request_ids;
    let hello_rid = ids.first().map(String::as_str).unwrap_or("");
    let root = span_id(session, hello_rid);
    let applied_name = applied.applied.as_str();
    let posture = match applied.applied {
        AppliedAs::ProceededUnguarded => "proceed",
        _ => "deny",
    };
    let failure_event = |stage: Stage, received: &str| {
        let class = failure_class(stage, received);
        json!({
            "timeUnixNano": end,
            "name": "acs.decision.failure",
            "attributes": attrs(vec![
                ("acs.failure.class", json!(class)),
                ("acs.failure.posture", json!(posture)),
                ("acs.failure.reported_by", json!("observed_agent")),
                ("acs.failure.detail", json!(format!(
                    "no usable answer to {} ({received}); mnemo applied {applied_name}",
                    stage.method()
                ))),
            ]),
        })
    };
    let outcome_attrs = || {
        let received = applied
            .record()
            .get("received")
            .cloned()
            .unwrap_or(Value::Null);
        vec![
            ("mnemo.received", json!(received)),
            ("mnemo.applied", json!(applied_name)),
            ("mnemo.event", json!(applied.event)),
            ("mnemo.reason_codes", json!(applied.reason_codes)),
        ]
    };
    let span = |rid: &str,
                parent: Option<&str>,
                name: &str,
                mut a: Vec<(&str, Value)>,
                events: Vec<Value>| {
        let mut base = vec![
            ("acs.session.id", json!(session)),
            ("acs.request_id", json!(rid)),
        ];
        base.append(&mut a);
        let mut s = json!({
            "traceId": trace,
            "spanId": span_id(session, rid),
            "name": name,
            "kind": 3,
            "startTimeUnixNano": start,
            "endTimeUnixNano": end,
            "attributes": attrs(base),
            "events": events,
            "status": {},
        });
        if let (Some(p), Value::Object(m)) = (parent, &mut s) {
            m.insert("parentSpanId".into(), json!(p));
        }
        s
    };

    // Which requests were sent: hello, retrievals, and preCompact if reached.
    let reached_pre = matches!(
        c.outcome,
        Outcome::Decided { .. }
            | Outcome::Failed {
                stage: Stage::PreCompact,
                ..
            }
    );
    let retrieval_ids: &[String] = match ids.len() {
        0 | 1 => &[],
        n if reached_pre => &ids[1..n - 1],
        n => &ids[1..n],
    };

    let mut out = Vec::new();
    let mut session_attrs = vec![("acs.evaluator", json!(input.guardian))];
    let mut session_events = Vec::new();
    match &c.outcome {
        Outcome::Failed {
            stage: Stage::Hello,
            received,
            ..
        } => {
            session_attrs.extend(outcome_attrs());
            session_events.push(failure_event(Stage::Hello, received));
        }
        Outcome::Refused { .. } => {
            session_attrs.extend(outcome_attrs());
            session_events.push(json!({
                "timeUnixNano": end, "name": "mnemo.session.refused",
                "attributes": attrs(vec![("mnemo.applied", json!(applied_name))]),
            }));
        }
        _ => {}
    }
    out.push(span(
        hello_rid,
        None,
        "acs.session",
        session_attrs,
        session_events,
    ));

    for (i, rid) in retrieval_ids.iter().enumerate() {
        let count = input.entries.get(i).map_or(0, |e| e.provenance.len());
        let mut events = Vec::new();
        let mut a = vec![
            ("acs.memory_store.name", json!("mnemo-bank")),
            ("acs.results.count", json!(count)),
        ];
        if let Outcome::Failed {
            stage: Stage::Retrieval,
            received,
            ..
        } = &c.outcome
            && i + 1 == retrieval_ids.len()
        {
            a.extend(outcome_attrs());
            events.push(failure_event(Stage::Retrieval, received));
        }
        out.push(span(rid, Some(&root), "acs.memory.retrieval", a, events));
    }

    if reached_pre && let Some(rid) = ids.last() {
        let mut a = vec![
            ("acs.compact.entry_count", json!(input.entries.len())),
            ("acs.compact.triggered_by", json!(input.triggered_by)),
        ];
        a.extend(outcome_attrs());
        let mut events = Vec::new();
        match &c.outcome {
            Outcome::Decided { received, decision } => {
                let mut d = vec![
                    ("acs.decision", json!(received)),
                    ("acs.evaluator", json!(input.guardian)),
                    ("acs.reason_codes", json!(decision.reason_codes)),
                ];
                if !decision.reasoning.is_empty() {
                    d.push(("acs.reasoning", json!(decision.reasoning)));
                }
                if !decision.cited_provenance_ids.is_empty() {
                    d.push((
                        "acs.cited_provenance_ids",
                        json!(decision.cited_provenance_ids),
                    ));
                }
                events.push(
                    json!({"timeUnixNano": end, "name": "acs.decision", "attributes": attrs(d)}),
                );
                if received.as_str() != applied_name {
                    events.push(json!({
                        "timeUnixNano": end,
                        "name": "mnemo.decision.substitution",
                        "attributes": attrs(vec![
                            ("mnemo.received", json!(received)),
                            ("mnemo.applied", json!(applied_name)),
                            ("mnemo.reason_codes", json!(applied.reason_codes)),
                        ]),
                    }));
                }
            }
            Outcome::Failed { received, .. } => {
                events.push(failure_event(Stage::PreCompact, received));
            }
            Outcome::Refused { .. } => {}
        }
        out.push(span(rid, Some(&root), "acs.compact", a, events));
    }

    json!({"resourceSpans": [{
        "resource": {"attributes": attrs(vec![
            ("service.name", json!("mnemo")),
            ("service.version", json!(env!("CARGO_PKG_VERSION"))),
        ])},
        "scopeSpans": [{
            "scope": {"name": "mnemo-guardian-client", "version": env!("CARGO_PKG_VERSION")},
            "spans": out,
        }],
    }]})
}

/// POSTs `body` to `endpoint` within `timeout` in all (connect, write,
/// read of the status line); a 2xx status is success.
pub fn export(endpoint: &TraceEndpoint, body: &Value, timeout: Duration) -> Result<(), TraceError> {
    let deadline = Instant::now() + timeout;
    let url = endpoint.url.clone();
    let io = |source: std::io::Error| {
        if matches!(
            source.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) {
            TraceError::Timeout {
                url: url.clone(),
                timeout,
            }
        } else {
            TraceError::Io {
                url: url.clone(),
                source,
            }
        }
    };
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(TraceError::Timeout {
                url: url.clone(),
                timeout,
            })
    };
    let addr = endpoint
        .host
        .to_socket_addrs()
        .map_err(io)?
        .next()
        .ok_or_else(|| TraceError::Status {
            url: url.clone(),
            message: "cannot resolve host".into(),
        })?;
    let mut stream = TcpStream::connect_timeout(&addr, left()?).map_err(io)?;
    let payload = body.to_string();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        endpoint.path,
        endpoint.host,
        payload.len()
    );
    stream.set_write_timeout(Some(left()?)).map_err(io)?;
    stream.write_all(head.as_bytes()).map_err(io)?;
    stream.write_all(payload.as_bytes()).map_err(io)?;
    stream.flush().map_err(io)?;
    stream.set_read_timeout(Some(left()?)).map_err(io)?;
    let mut reader = BufReader::new(stream.take(4096));
    let mut status = String::new();
    reader.read_line(&mut status).map_err(io)?;
    let code = status.split_whitespace().nth(1).unwrap_or("");
    if code.len() == 3 && code.starts_with('2') {
        Ok(())
    } else if status.is_empty() {
        Err(TraceError::Status {
            url,
            message: "the connection closed with no answer".into(),
        })
    } else {
        Err(TraceError::Status {
            url,
            message: format!("HTTP status {}", status.trim()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientError;
    use crate::posture::{Postures, apply};
    use mnemo_acs::model::Verdict;
    use mnemo_guardian::decide::Decision;

    fn decided(received: &str, verdict: Verdict, codes: &[&str]) -> Consultation {
        Consultation {
            session_id: "sess-1".into(),
            time: "t".into(),
            request_ids: vec!["h".into(), "r1".into(), "r2".into(), "p".into()],
            announced_failure_posture: None,
            outcome: Outcome::Decided {
                received: received.into(),
                decision: Decision {
                    verdict,
                    reasoning: "because".into(),
                    reason_codes: codes.iter().map(|s| s.to_string()).collect(),
                    cited_provenance_ids: vec![],
                    policy_data: Value::Null,
                    rule_id: "remote",
                },
            },
        }
    }

    fn entries() -> Vec<EntryProvenance> {
        (0..2)
            .map(|i| EntryProvenance {
                step_id: format!("e{i}"),
                provenance: vec![],
            })
            .collect()
    }

    fn input(e: &[EntryProvenance]) -> TraceInput<'_> {
        TraceInput {
            guardian: "http://127.0.0.1:1",
            entries: e,
            triggered_by: "manual",
            start_ns: 1_000,
            end_ns: 2_000,
        }
    }

    fn all_spans(v: &Value) -> Vec<Value> {
        v.pointer("/resourceSpans/0/scopeSpans/0/spans")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    fn get<'a>(attrs: &'a Value, key: &str) -> Option<&'a Value> {
        attrs
            .as_array()?
            .iter()
            .find(|a| a["key"] == key)
            .map(|a| &a["value"])
    }

    #[test]
    fn an_allow_gives_session_retrievals_and_compact_with_the_decision() {
        let c = decided("allow", Verdict::Allow, &["ok"]);
        let a = apply(&c, Postures::default());
        let e = entries();
        let v = spans(&c, &a, &input(&e));
        let s = all_spans(&v);
        let names: Vec<&str> = s.iter().filter_map(|x| x["name"].as_str()).collect();
        assert_eq!(
            names,
            [
                "acs.session",
                "acs.memory.retrieval",
                "acs.memory.retrieval",
                "acs.compact"
            ]
        );
        for x in &s {
            assert_eq!(x["traceId"].as_str().map(str::len), Some(32));
            assert_eq!(x["traceId"], json!(trace_id("sess-1")));
            assert_eq!(x["spanId"].as_str().map(str::len), Some(16));
            assert!(
                x["traceId"]
                    .as_str()
                    .is_some_and(|t| t.chars().all(|c| c.is_ascii_hexdigit()))
            );
            assert_eq!(x["startTimeUnixNano"], "1000");
            assert_eq!(x["endTimeUnixNano"], "2000");
            assert_eq!(
                get(&x["attributes"], "acs.session.id"),
                Some(&json!({"stringValue": "sess-1"}))
            );
        }
        assert_eq!(s[1]["parentSpanId"], s[0]["spanId"]);
        assert_eq!(s[3]["spanId"], json!(span_id("sess-1", "p")));
        let pre = &s[3];
        assert_eq!(
            get(&pre["attributes"], "acs.request_id"),
            Some(&json!({"stringValue": "p"}))
        );
        assert_eq!(
            get(&pre["attributes"], "acs.compact.entry_count"),
            Some(&json!({"intValue": "2"}))
        );
        assert_eq!(
            get(&pre["attributes"], "mnemo.applied"),
            Some(&json!({"stringValue": "allow"}))
        );
        assert_eq!(
            get(&pre["attributes"], "mnemo.reason_codes"),
            Some(&json!({"arrayValue": {"values": [{"stringValue": "ok"}]}}))
        );
        let ev = &pre["events"][0];
        assert_eq!(ev["name"], "acs.decision");
        assert_eq!(
            get(&ev["attributes"], "acs.decision"),
            Some(&json!({"stringValue": "allow"}))
        );
        assert_eq!(
            get(&ev["attributes"], "acs.reasoning"),
            Some(&json!({"stringValue": "because"}))
        );
        assert_eq!(pre["events"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            v["resourceSpans"][0]["scopeSpans"][0]["scope"]["name"],
            "mnemo-guardian-client"
        );
    }

    #[test]
    fn a_modify_applied_as_deny_is_a_substitution_not_a_decision_failure() {
        let c = decided("modify", Verdict::Deny, &["modify_unsupported"]);
        let a = apply(&c, Postures::default());
        let e = entries();
        let v = spans(&c, &a, &input(&e));
        let text = v.to_string();
        assert!(!text.contains("acs.decision.failure"), "{text}");
        let s = all_spans(&v);
        let pre = &s[3];
        let names: Vec<&str> = pre["events"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(names, ["acs.decision", "mnemo.decision.substitution"]);
        let sub = &pre["events"][1]["attributes"];
        assert_eq!(
            get(sub, "mnemo.received"),
            Some(&json!({"stringValue": "modify"}))
        );
        assert_eq!(
            get(sub, "mnemo.applied"),
            Some(&json!({"stringValue": "deny"}))
        );
        assert!(
            get(sub, "mnemo.reason_codes")
                .is_some_and(|x| x.to_string().contains("modify_unsupported"))
        );
    }

    #[test]
    fn a_failure_is_a_decision_failure_event_on_its_step() {
        let mut c = decided("allow", Verdict::Allow, &[]);
        c.outcome = Outcome::Failed {
            stage: Stage::PreCompact,
            received: "no_answer",
            error: ClientError::Protocol {
                url: "u".into(),
                message: "connection closed in headers".into(),
            },
        };
        let a = apply(&c, Postures::default());
        let e = entries();
        let s = all_spans(&spans(&c, &a, &input(&e)));
        let ev = &s[3]["events"][0];
        assert_eq!(ev["name"], "acs.decision.failure");
        assert_eq!(
            get(&ev["attributes"], "acs.failure.class"),
            Some(&json!({"stringValue": "timeout"}))
        );
        assert_eq!(
            get(&ev["attributes"], "acs.failure.posture"),
            Some(&json!({"stringValue": "deny"}))
        );
        assert_eq!(
            get(&ev["attributes"], "acs.failure.reported_by"),
            Some(&json!({"stringValue": "observed_agent"}))
        );
        // At the hello: a handshake failure on the session span, no steps.
        c.request_ids.truncate(1);
        c.outcome = Outcome::Failed {
            stage: Stage::Hello,
            received: "unreachable",
            error: ClientError::Url("x".into()),
        };
        let a = apply(&c, Postures::default());
        let s = all_spans(&spans(&c, &a, &input(&e)));
        assert_eq!(s.len(), 1);
        assert_eq!(
            get(&s[0]["events"][0]["attributes"], "acs.failure.class"),
            Some(&json!({"stringValue": "handshake_failure"}))
        );
    }

    #[test]
    fn endpoints_resolve_in_order_and_take_the_traces_path() {
        let none = |_: &str| None;
        assert_eq!(resolve_endpoint(None, None, none).map(|r| r.is_ok()), None);
        let env = |k: &str| match k {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://h:1".to_string()),
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" => Some("http://h:2/custom".to_string()),
            _ => None,
        };
        let url = |r: Option<Result<TraceEndpoint, TraceError>>| {
            r.and_then(Result::ok).map(|e| e.url().to_string())
        };
        assert_eq!(
            url(resolve_endpoint(
                Some("http://f:3"),
                Some("http://c:4"),
                env
            ))
            .as_deref(),
            Some("http://f:3/v1/traces")
        );
        assert_eq!(
            url(resolve_endpoint(None, Some("http://c:4"), env)).as_deref(),
            Some("http://c:4/v1/traces")
        );
        assert_eq!(
            url(resolve_endpoint(None, None, env)).as_deref(),
            Some("http://h:2/custom")
        );
        let base =
            |k: &str| (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://h:1/otel/".to_string());
        assert_eq!(
            url(resolve_endpoint(None, None, base)).as_deref(),
            Some("http://h:1/otel/v1/traces")
        );
        assert!(matches!(
            resolve_endpoint(Some("ftp://x"), None, none),
            Some(Err(TraceError::Url(_)))
        ));
    }

    #[test]
    fn export_to_a_closed_port_fails_quickly() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(9);
        let e = TraceEndpoint::traces(&format!("http://127.0.0.1:{port}")).ok();
        let t = Instant::now();
        let r = e.map(|e| export(&e, &json!({}), EXPORT_TIMEOUT));
        assert!(matches!(r, Some(Err(_))), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}
