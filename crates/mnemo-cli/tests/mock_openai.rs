//! The mock OpenAI server the host e2e tests use (`tests/hosts/mock_openai.py`):
//! its Chat Completions stream (for OpenAI-compatible hosts such as
//! OpenCode) and its request log, checked over a plain socket. The
//! Responses API side is exercised by the real Codex CLI in `e2e_codex.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};

struct Mock(Child);

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn post(port: u16, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn chat_completions_stream_and_every_request_is_logged() {
    if !mnemo_testkit::require_command("python3", &["-c", "pass"], "the mock model server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port_file = dir.path().join("port");
    let log = dir.path().join("requests.jsonl");
    let _mock = Mock(
        Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/hosts/mock_openai.py"
            ))
            .arg(&port_file)
            .arg(&log)
            .spawn()
            .unwrap(),
    );
    let mut port = None;
    for _ in 0..100 {
        if let Ok(p) = std::fs::read_to_string(&port_file) {
            port = p.trim().parse::<u16>().ok();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let port = port.expect("the mock wrote its port");
    let body =
        r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hello there"}]}"#;
    let out = post(port, "/v1/chat/completions", body);
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(out.contains("text/event-stream"), "{out}");
    assert!(
        out.contains("\"object\": \"chat.completion.chunk\""),
        "{out}"
    );
    assert!(out.contains("OK: hello there"), "{out}");
    assert!(out.trim_end().ends_with("data: [DONE]"), "{out}");
    // A compaction prompt gets a summary.
    let body = r#"{"model":"m","stream":false,"messages":[{"role":"user","content":"Please create a summary of the conversation"}]}"#;
    let out = post(port, "/v1/chat/completions", body);
    assert!(out.contains("SUMMARY"), "{out}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged.lines().count(), 2);
    assert!(logged.contains("hello there"), "{logged}");
}
