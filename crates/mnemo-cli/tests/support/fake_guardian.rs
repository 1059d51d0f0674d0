//! A fake ACS Guardian on loopback and the `mnemo gate --guardian-url`
//! harness shared by the client tests (`guardian_posture.rs`,
//! `guardian_trace.rs`): the fake answers each method as the test says and
//! keeps every request; `gate` runs the real binary on a temporary bank
//! with no Guardian or OTLP variables of the environment leaking in.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::{Value, json};

/// How the fake answers one request: a JSON-RPC `result`, an `error`, a
/// raw HTTP response, or nothing (the connection is held until the client
/// gives up).
#[derive(Clone)]
pub enum Answer {
    Result(Value),
    Error(i64),
    Raw(&'static str),
    Silent,
}

pub fn hello() -> Answer {
    Answer::Result(json!({"negotiated_version": "0.1.0",
        "methods_evaluated": ["steps/memoryContextRetrieval", "steps/preCompact"]}))
}

pub fn allow() -> Answer {
    Answer::Result(json!({"type": "final", "decision": "allow", "reasoning": "fake: allow"}))
}

/// A fake Guardian on loopback: `answer(method)` for each request; every
/// request it received is kept.
pub struct Fake {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Value>>>,
}

impl Fake {
    pub fn start(answer: impl Fn(&str) -> Answer + Send + Sync + 'static) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/acs", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let answer = Arc::new(answer);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, answer) = (log.clone(), answer.clone());
                std::thread::spawn(move || serve(stream, &log, answer.as_ref()));
            }
        });
        Fake { url, seen }
    }

    pub fn methods(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|r| r["method"].as_str().unwrap_or("?").to_string())
            .collect()
    }

    pub fn request_ids(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|r| r["params"]["request_id"].as_str().unwrap().to_string())
            .collect()
    }
}

/// One HTTP/1.1 request read from `stream`: its request line and its body
/// (`Content-Length` bytes); `None` when the peer closes before the end.
pub fn read_request(stream: &TcpStream) -> Option<(String, Vec<u8>)> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut first = String::new();
    if reader.read_line(&mut first).unwrap_or(0) == 0 {
        return None;
    }
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some((first.trim_end().to_string(), body))
}

pub fn serve(stream: TcpStream, log: &Mutex<Vec<Value>>, answer: &dyn Fn(&str) -> Answer) {
    let Some((_, body)) = read_request(&stream) else {
        return;
    };
    let req: Value = serde_json::from_slice(&body).unwrap();
    log.lock().unwrap().push(req.clone());
    let method = req["method"].as_str().unwrap_or("");
    let id = req["id"].clone();
    let mut stream = stream;
    let raw = match answer(method) {
        Answer::Silent => {
            // Hold it: the client's read timeout (5 s) ends the exchange.
            std::thread::sleep(Duration::from_secs(8));
            return;
        }
        Answer::Raw(r) => r.to_string(),
        Answer::Result(mut r) => {
            r["request_id"] = req["params"]["request_id"].clone();
            let b = json!({"jsonrpc": "2.0", "id": id, "result": r}).to_string();
            http(&b)
        }
        Answer::Error(code) => {
            let b = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": code, "message": "fake: error"}})
            .to_string();
            http(&b)
        }
    };
    let _ = stream.write_all(raw.as_bytes());
}

pub fn http(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

pub fn free_url() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}")
}

pub struct Run {
    pub code: i32,
    pub stderr: String,
}

pub fn gate(dir: &Path, url: &str, extra: &[&str]) -> Run {
    gate_env(dir, url, extra, &[])
}

pub fn gate_env(dir: &Path, url: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
    std::fs::write(
        dir.join("summary.json"),
        r#"{"agent": "hermes", "summary": "Added POST /api/v1/orders returning 201", "status": "complete"}"#,
    )
    .unwrap();
    let config = dir.join("mnemo.toml");
    let mut cmd = Command::cargo_bin("mnemo").unwrap();
    cmd.current_dir(dir)
        .env_remove("MNEMO_CONFIG")
        .env_remove("MNEMO_GUARDIAN_URL")
        .env_remove("MNEMO_GUARDIAN_CA")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .envs(env.iter().copied());
    if config.exists() {
        cmd.args(["--config", "mnemo.toml"]);
    }
    let out = cmd
        .args(["--bank", "bank", "gate", "--phase", "1", "--from", "hermes"])
        .args(["--to", "aphrodite", "--date", "2026-11-30"])
        .args(["--guardian-url", url])
        .args(extra)
        .arg("summary.json")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn compacted(dir: &Path) -> bool {
    dir.join("bank/01-active-context.md").exists()
}

/// The bank's files other than the lock (which every locked command
/// creates).
pub fn bank_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.join("bank")];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(dir.join("bank"))
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if rel != ".tmp/compress.lock" {
                    out.push(rel);
                }
            }
        }
    }
    out.sort();
    out
}

pub fn audit(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("bank/_xref/guardian-audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A refused gate writes its audit line and nothing else.
pub fn assert_only_the_audit_line(dir: &Path) {
    assert!(!compacted(dir));
    assert_eq!(bank_files(dir), ["_xref/guardian-audit.jsonl"]);
}
