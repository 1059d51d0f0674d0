//! `mnemo mcp` driven by a real client: the official MCP Python SDK runs
//! `crates/mnemo-mcp/tests/e2e/client.py` against the built binary
//! (initialize, tools/list, a call of every tool). Skipped, saying so, when
//! `python3 -c "import mcp"` fails. A second test speaks raw JSON-RPC and
//! checks that stdout carries MCP frames only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

fn python() -> String {
    std::env::var("MNEMO_TEST_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

fn sdk_installed(python: &str) -> bool {
    Command::new(python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn python_sdk_client_drives_every_tool() {
    let python = python();
    if !sdk_installed(&python) {
        mnemo_testkit::skip("the Python MCP SDK is not installed (pip install mcp==2.3.0)");
        return;
    }
    let binary = assert_cmd::cargo::cargo_bin("mnemo");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mnemo-mcp/tests/e2e/client.py");
    let work = tempfile::tempdir().unwrap();
    // The script gives the server its own MNEMO_HOME; HOME and XDG_DATA_HOME
    // point into the temp dir too, so nothing can reach the real home.
    let out = Command::new(&python)
        .arg(&script)
        .arg(&binary)
        .arg(work.path())
        .env("MNEMO_HOME", work.path().join("mnemo-home"))
        .env("HOME", work.path())
        .env("XDG_DATA_HOME", work.path().join("xdg"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "client.py failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(stdout.contains(" passed, 0 failed"), "stdout:\n{stdout}");
    println!("{}", stdout.trim());
}

/// Without any SDK: raw JSON-RPC lines in, and every line out is a JSON-RPC
/// frame (nothing else reaches stdout); the server exits when stdin closes.
#[test]
fn raw_stdio_frames_only() {
    use std::io::{Read, Write};
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::Duration;

    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("mnemo"))
        .arg("mcp")
        .current_dir(home.path())
        .env("MNEMO_HOME", home.path().join("mnemo-home"))
        .env("HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"\"unbalanced NEAR(","top_k":500}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memory_store","arguments":{"value":"raw frame test"}}}"#,
    ];
    let mut stdin = child.stdin.take().unwrap();
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    drop(stdin);
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        let _ = tx.send(out);
    });
    let Ok(out) = rx.recv_timeout(Duration::from_secs(30)) else {
        let _ = child.kill();
        panic!("mnemo mcp did not exit after stdin closed");
    };
    assert!(child.wait().unwrap().success());
    let frames: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a frame: {l:?}: {e}")))
        .collect();
    assert_eq!(frames.len(), 4, "{out}");
    assert!(frames.iter().all(|f| f["jsonrpc"] == "2.0"));
    // Answers may come in any order: find them by id.
    let by_id = |id: i64| {
        frames
            .iter()
            .find(|f| f["id"] == id)
            .unwrap_or_else(|| panic!("no answer to request {id}: {out}"))
    };
    assert_eq!(by_id(1)["result"]["serverInfo"]["name"], "mnemo");
    assert_eq!(by_id(2)["result"]["tools"].as_array().unwrap().len(), 10);
    assert_eq!(by_id(3)["result"]["isError"], true);
    assert!(
        by_id(3)["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("top_k")
    );
    assert_eq!(by_id(4)["result"]["structuredContent"]["status"], "stored");
}

/// Issue 13 item 6: a request of 16 MiB or more is answered with an error
/// (with its id, first or last in the object), not dropped; the server goes
/// on answering.
#[test]
fn an_oversized_request_is_answered_with_an_error() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::Duration;

    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("mnemo"))
        .arg("mcp")
        .current_dir(home.path())
        .env("MNEMO_HOME", home.path().join("mnemo-home"))
        .env("HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<serde_json::Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let v = serde_json::from_str(&line).unwrap_or(serde_json::Value::Null);
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let big = "a".repeat(16 * 1024 * 1024);
    let writer = std::thread::spawn(move || {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#.to_string(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
            // The id last, as the TypeScript SDK writes it.
            format!(r#"{{"method":"tools/call","params":{{"name":"scrub","arguments":{{"text":"{big}"}}}},"jsonrpc":"2.0","id":5}}"#),
            // The id first, and twice the limit.
            format!(r#"{{"jsonrpc":"2.0","id":"six","method":"tools/call","params":{{"name":"scrub","arguments":{{"text":"{big}{big}"}}}}}}"#),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#.to_string(),
        ];
        for l in lines {
            if writeln!(stdin, "{l}").is_err() {
                break;
            }
        }
        stdin
    });
    let mut answers = Vec::new();
    while answers.len() < 4 {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(v) => answers.push(v),
            Err(_) => {
                let _ = child.kill();
                let ids: Vec<_> = answers.iter().map(|a| a["id"].clone()).collect();
                panic!("no answer within 60 s; answered ids so far: {ids:?}");
            }
        }
    }
    drop(writer.join().unwrap());
    let _ = child.wait();
    let by_id = |id: serde_json::Value| {
        answers
            .iter()
            .find(|f| f["id"] == id)
            .unwrap_or_else(|| panic!("no answer to request {id}"))
            .clone()
    };
    for id in [serde_json::json!(5), serde_json::json!("six")] {
        let a = by_id(id);
        assert_eq!(a["error"]["code"], -32600, "{a}");
        let msg = a["error"]["message"].as_str().unwrap();
        assert!(msg.contains("16777216-byte limit"), "{msg}");
    }
    assert_eq!(
        by_id(serde_json::json!(7))["result"]["tools"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
}
