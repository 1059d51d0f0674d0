//! `mnemo gate --guardian-url` exports its ACS trace events (OTLP/HTTP
//! JSON) to a trace endpoint, best effort: a live collector receives the
//! spans with the decision received and applied; a closed port, a
//! collector that never answers, or one that answers 500 changes nothing
//! in the gate's outcome (allow compacts, deny writes only the audit
//! line), within the export's deadline, and the audit line's
//! `trace_export` says it failed (ACS Trace: trace events MUST NOT block
//! enforcement).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::{Value, json};

#[path = "support/fake_guardian.rs"]
mod fake_guardian;
use fake_guardian::*;

fn deny() -> Answer {
    Answer::Result(
        json!({"type": "final", "decision": "deny", "reasoning": "fake: deny",
        "reason_codes": ["fake_rule"]}),
    )
}

fn modify() -> Answer {
    Answer::Result(json!({"type": "final", "decision": "modify", "reasoning": "fake: modify"}))
}

fn guardian(decision: fn() -> Answer) -> Fake {
    Fake::start(move |m| {
        if m == "handshake/hello" {
            hello()
        } else if m == "steps/preCompact" {
            decision()
        } else {
            allow()
        }
    })
}

/// How the fake collector behaves.
#[derive(Clone, Copy, PartialEq)]
enum Sink {
    /// Records the POST, answers 200.
    Live,
    /// Reads the request, never answers (holds the connection).
    Silent,
    /// Answers 500.
    Error,
}

/// A fake OTLP/HTTP collector: the (path, JSON body) of every POST.
struct Collector {
    url: String,
    posts: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Collector {
    fn start(sink: Sink) -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let posts = Arc::new(Mutex::new(Vec::new()));
        let log = posts.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let log = log.clone();
                std::thread::spawn(move || collect(stream, &log, sink));
            }
        });
        Collector { url, posts }
    }

    fn posts(&self) -> Vec<(String, Value)> {
        self.posts.lock().unwrap().clone()
    }
}

fn collect(stream: TcpStream, log: &Mutex<Vec<(String, Value)>>, sink: Sink) {
    let Some((first, body)) = read_request(&stream) else {
        return;
    };
    let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    log.lock().unwrap().push((path, v));
    let mut stream = stream;
    match sink {
        Sink::Live => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
        }
        Sink::Error => {
            let _ = stream.write_all(
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
        Sink::Silent => std::thread::sleep(Duration::from_secs(10)),
    }
}

fn attr<'a>(attrs: &'a Value, key: &str) -> Option<&'a Value> {
    attrs
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn string(attrs: &Value, key: &str) -> Option<String> {
    attr(attrs, key)?["stringValue"]
        .as_str()
        .map(str::to_string)
}

fn spans(body: &Value) -> Vec<Value> {
    body["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_live_collector_receives_the_decision_received_and_applied() {
    let collector = Collector::start(Sink::Live);
    for (decision, received, applied, compacts) in [
        (allow as fn() -> Answer, "allow", "allow", true),
        (deny, "deny", "deny", false),
        (modify, "modify", "deny", false),
    ] {
        let before = collector.posts().len();
        let fake = guardian(decision);
        let dir = tempfile::tempdir().unwrap();
        let r = gate(
            dir.path(),
            &fake.url,
            &["--guardian-trace-endpoint", &collector.url],
        );
        assert_eq!(r.code == 0, compacts, "{received}: {}", r.stderr);
        assert_eq!(compacted(dir.path()), compacts);
        if !compacts {
            assert_only_the_audit_line(dir.path());
        }
        let a = &audit(dir.path())[0];
        assert_eq!(a["trace_export"], "sent", "{a}");
        assert!(!r.stderr.contains("not exported"), "{}", r.stderr);
        let posts = collector.posts();
        assert_eq!(posts.len(), before + 1, "one POST per consultation");
        let (path, body) = &posts[before];
        assert_eq!(path, "/v1/traces");
        let s = spans(body);
        let names: Vec<&str> = s.iter().filter_map(|x| x["name"].as_str()).collect();
        assert_eq!(
            names,
            ["acs.session", "acs.memory.retrieval", "acs.compact"]
        );
        let sent = fake.request_ids();
        let session = a["session_id"].as_str().unwrap();
        for (span, rid) in s.iter().zip(&sent) {
            assert_eq!(
                string(&span["attributes"], "acs.session.id").as_deref(),
                Some(session)
            );
            assert_eq!(
                string(&span["attributes"], "acs.request_id").as_deref(),
                Some(rid.as_str())
            );
            assert_eq!(span["traceId"].as_str().map(str::len), Some(32));
            assert_eq!(span["spanId"].as_str().map(str::len), Some(16));
            assert!(
                span["startTimeUnixNano"]
                    .as_str()
                    .is_some_and(|t| t.parse::<u128>().is_ok())
            );
        }
        let pre = &s[2];
        assert_eq!(
            string(&pre["attributes"], "mnemo.received").as_deref(),
            Some(received)
        );
        assert_eq!(
            string(&pre["attributes"], "mnemo.applied").as_deref(),
            Some(applied)
        );
        let events: Vec<&str> = pre["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["name"].as_str())
            .collect();
        let d = &pre["events"][0]["attributes"];
        assert_eq!(events[0], "acs.decision");
        assert_eq!(string(d, "acs.decision").as_deref(), Some(received));
        assert_eq!(
            string(d, "acs.evaluator").as_deref(),
            Some(fake.url.as_str())
        );
        if received == "modify" {
            // A defined substitution, not a decision failure (ACS 6.5).
            assert_eq!(events, ["acs.decision", "mnemo.decision.substitution"]);
            assert!(!body.to_string().contains("acs.decision.failure"));
            assert!(
                attr(&pre["events"][1]["attributes"], "mnemo.reason_codes")
                    .is_some_and(|v| v.to_string().contains("modify_unsupported"))
            );
        } else {
            assert_eq!(events, ["acs.decision"]);
        }
    }
}

#[test]
fn a_sink_that_is_down_slow_or_failing_changes_no_outcome() {
    let silent = Collector::start(Sink::Silent);
    let failing = Collector::start(Sink::Error);
    for (sink, url, why) in [
        ("closed port", free_url(), "failed: "),
        ("silent", silent.url.clone(), "no answer within 300 ms"),
        ("500", failing.url.clone(), "HTTP status HTTP/1.1 500"),
    ] {
        for (decision, compacts) in [(allow as fn() -> Answer, true), (deny, false)] {
            let fake = guardian(decision);
            let dir = tempfile::tempdir().unwrap();
            let t = Instant::now();
            let r = gate(dir.path(), &fake.url, &["--guardian-trace-endpoint", &url]);
            let took = t.elapsed();
            assert_eq!(r.code == 0, compacts, "{sink}: {}", r.stderr);
            assert_eq!(compacted(dir.path()), compacts, "{sink}");
            if !compacts {
                assert_only_the_audit_line(dir.path());
            }
            let a = &audit(dir.path())[0];
            let export = a["trace_export"].as_str().unwrap_or("");
            assert!(
                export.starts_with("failed: ") && export.contains(why),
                "{sink}: {a}"
            );
            assert_eq!(a["applied"], if compacts { "allow" } else { "deny" });
            assert!(
                r.stderr.contains("the Guardian trace was not exported"),
                "{sink}: {}",
                r.stderr
            );
            // The export's deadline (300 ms, named in the audit line above)
            // bounds the cost: the gate never waits for the silent sink's
            // 10 s (a loose bound, so that a loaded CI machine cannot trip
            // it; the 300 ms is the audit line's to show).
            assert!(took < Duration::from_secs(8), "{sink}: {took:?}");
        }
    }
    // --quiet silences the note, not the audit line.
    let fake = guardian(allow);
    let dir = tempfile::tempdir().unwrap();
    let r = gate(
        dir.path(),
        &fake.url,
        &["--guardian-trace-endpoint", &free_url()],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::cargo_bin("mnemo").unwrap();
    std::fs::write(
        dir.path().join("summary.json"),
        r#"{"agent": "hermes", "summary": "Added POST /api/v1/orders returning 201", "status": "complete"}"#,
    )
    .unwrap();
    let out = cmd
        .current_dir(dir.path())
        .env_remove("MNEMO_CONFIG")
        .args([
            "--quiet", "--bank", "bank", "gate", "--phase", "1", "--from", "hermes",
        ])
        .args([
            "--to",
            "aphrodite",
            "--date",
            "2026-11-30",
            "--guardian-url",
            &fake.url,
        ])
        .args(["--guardian-trace-endpoint", &free_url(), "summary.json"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("not exported"));
    assert!(
        audit(dir.path())[0]["trace_export"]
            .as_str()
            .unwrap_or("")
            .starts_with("failed: ")
    );
}

#[test]
fn the_endpoint_comes_from_mnemo_toml_then_the_otel_environment() {
    let collector = Collector::start(Sink::Live);
    let fake = guardian(allow);
    // mnemo.toml's [guardian_client] trace_endpoint.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mnemo.toml"),
        format!(
            "[guardian_client]\ntrace_endpoint = \"{}\"\n",
            collector.url
        ),
    )
    .unwrap();
    let r = gate(dir.path(), &fake.url, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(audit(dir.path())[0]["trace_export"], "sent");
    assert_eq!(collector.posts().len(), 1);
    // The flag wins over mnemo.toml.
    let other = Collector::start(Sink::Live);
    let r = gate(
        dir.path(),
        &fake.url,
        &["--guardian-trace-endpoint", &other.url],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!((collector.posts().len(), other.posts().len()), (1, 1));
    // The OTEL environment: the base endpoint gets /v1/traces, the traces
    // endpoint is used as given and wins over the base; mnemo.toml wins
    // over both.
    let envd = tempfile::tempdir().unwrap();
    let base = Collector::start(Sink::Live);
    let traces = Collector::start(Sink::Live);
    let r = gate_env(
        envd.path(),
        &fake.url,
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &base.url)],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(base.posts()[0].0, "/v1/traces");
    let traces_url = format!("{}/custom/traces", traces.url);
    let r = gate_env(
        envd.path(),
        &fake.url,
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &base.url),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &traces_url),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(base.posts().len(), 1);
    assert_eq!(traces.posts()[0].0, "/custom/traces");
    let r = gate_env(
        dir.path(),
        &fake.url,
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &base.url)],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!((collector.posts().len(), base.posts().len()), (2, 1));
    // No endpoint anywhere: no export, no trace_export field.
    let plain = tempfile::tempdir().unwrap();
    let r = gate(plain.path(), &fake.url, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(audit(plain.path())[0].get("trace_export").is_none());
}

/// What leaves the machine passes the scrubber: a remote Guardian's
/// reasoning that holds a secret reaches the collector, the audit line and
/// the terminal redacted.
#[test]
fn the_exported_trace_is_scrubbed() {
    let secret = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8");
    let reasoning = format!("denied; the token {secret} was seen");
    let collector = Collector::start(Sink::Live);
    let fake = Fake::start(move |m| match m {
        "handshake/hello" => hello(),
        "steps/preCompact" => Answer::Result(json!({"type": "final", "decision": "deny",
            "reasoning": reasoning.clone(), "reason_codes": ["fake_rule"]})),
        _ => allow(),
    });
    let dir = tempfile::tempdir().unwrap();
    let r = gate(
        dir.path(),
        &fake.url,
        &["--guardian-trace-endpoint", &collector.url],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let posts = collector.posts();
    assert_eq!(posts.len(), 1, "{posts:?}");
    let body = posts[0].1.to_string();
    assert!(
        !body.contains(&secret),
        "the secret left the machine: {body}"
    );
    assert!(body.contains("[REDACTED:"), "{body}");
    let audit_text =
        std::fs::read_to_string(dir.path().join("bank/_xref/guardian-audit.jsonl")).unwrap();
    assert!(!audit_text.contains(&secret), "{audit_text}");
    assert!(
        !r.stderr.contains(&secret) && r.stderr.contains("[REDACTED:"),
        "{}",
        r.stderr
    );
}
