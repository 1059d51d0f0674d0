//! The SQLite store across processes, the stdio framing server, the HTTP
//! server and the one-shot check: malformed or huge requests never crash.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{Guardian, GuardianConfig, MemoryStore, Policy, Transport};
use mnemo_guardian_server::server::{self, Decider, GuardOptions};
use mnemo_guardian_store::SqliteStore;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Cursor, Read, Write};
use std::net::TcpStream;

const SESSION: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

fn req(rid: u32, method: &str, payload: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "id": rid, "params": {
        "acs_version": "0.1.0", "request_id": format!("00000000-0000-4000-8000-{rid:012}"),
        "timestamp": mnemo_guardian::time::format_rfc3339_ms(mnemo_guardian::time::now_ms()),
        "metadata": {"agent_id": "a", "session_id": SESSION}, "payload": payload}})
}

fn tool(rid: u32) -> Value {
    req(
        rid,
        "steps/toolCallResult",
        json!({"tool": {"name": "Bash"}, "exit_status": "success",
        "outputs": [{"value": "x", "provenance": {"provenance_id": format!("p{rid}"), "origin": "tool_output"}}]}),
    )
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mnemo-guard-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn sqlite_state_persists_between_one_shot_checks() {
    let dir = tmpdir("sqlite");
    let opts = GuardOptions {
        policy: None,
        store: Some(dir.join("g.sqlite3")),
        memory: false,
    };
    let once = |body: &Value| -> Value {
        let mut g = server::open_guardian(&opts, Transport::Stdio, true).unwrap();
        serde_json::from_slice(&server::check_once(&mut g, body.to_string().as_bytes()).unwrap())
            .unwrap()
    };
    let t = tool(1);
    assert_eq!(once(&t)["result"]["decision"], "allow"); // no handshake needed
    assert_eq!(once(&t)["error"]["code"], -32005); // replay seen by a new process
    let pre = req(
        2,
        "steps/preCompact",
        json!({"entries_to_compact": [t["params"]["request_id"]], "triggered_by": "size_threshold"}),
    );
    let r = once(&pre);
    assert_eq!(r["result"]["decision"], "deny", "{r}");
    let pre = req(
        3,
        "steps/preCompact",
        json!({"entries_to_compact": [t["params"]["request_id"]], "triggered_by": "manual"}),
    );
    assert_eq!(once(&pre)["result"]["decision"], "allow");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sqlite_in_memory_store_works_like_memory_store() {
    let mut g = Guardian::new(
        Policy::default(),
        GuardianConfig {
            require_handshake: false,
            ..GuardianConfig::default()
        },
        SqliteStore::open_in_memory().unwrap(),
    );
    let t = tool(10);
    let r: Value = serde_json::from_slice(&g.handle(t.to_string().as_bytes())).unwrap();
    assert_eq!(r["result"]["decision"], "allow");
    let r: Value = serde_json::from_slice(&g.handle(t.to_string().as_bytes())).unwrap();
    assert_eq!(r["error"]["code"], -32005);
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut v = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    v.extend_from_slice(body);
    v
}

fn read_frames(out: &[u8]) -> Vec<Value> {
    let mut c = Cursor::new(out.to_vec());
    let mut v = Vec::new();
    while let Ok(mnemo_guardian_server::framing::Frame::Body(b)) =
        mnemo_guardian_server::framing::read_frame(&mut c, 1 << 20)
    {
        v.push(serde_json::from_slice(&b).unwrap());
    }
    v
}

#[test]
fn stdio_survives_malformed_and_huge_frames() {
    let mut g = Guardian::new(
        Policy::default(),
        GuardianConfig {
            max_request_bytes: 4096,
            ..GuardianConfig::default()
        },
        MemoryStore::new(),
    );
    let hello = req(
        1,
        "handshake/hello",
        json!({"acs_versions_supported": ["0.1.0"], "methods_implemented": ["steps/toolCallResult"],
        "transports_supported": ["stdio"], "provenance_producer": "deterministic"}),
    );
    let mut input = frame(hello.to_string().as_bytes());
    input.extend(b"Content-Length: 99999999999\r\n\r\n"); // claims far more than max; stream ends
    let mut input2 = frame(b"{garbage");
    input2.extend(b"Content-Type: nothing\r\n\r\n"); // no length
    input2.extend(frame(&vec![b' '; 10_000])); // too large, skipped
    input2.extend(frame(tool(2).to_string().as_bytes()));
    let mut out = Vec::new();
    server::serve_stdio(&mut g, &mut Cursor::new(input), &mut out).unwrap();
    let r = read_frames(&out);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0]["result"]["payload"]["selected_transport"], "stdio");
    assert_eq!(
        r[1]["error"]["code"], -32600,
        "an unbelievable length is answered"
    );
    let mut out = Vec::new();
    server::serve_stdio(&mut g, &mut Cursor::new(input2), &mut out).unwrap();
    let r = read_frames(&out);
    let codes: Vec<Value> = r.iter().map(|x| x["error"]["code"].clone()).collect();
    assert_eq!(codes[..3], [json!(-32700), json!(-32700), json!(-32600)]);
    assert_eq!(r[3]["result"]["decision"], "allow");
}

fn hello_guardian() -> (Guardian<MemoryStore>, Vec<u8>) {
    let g = Guardian::new(
        Policy::default(),
        GuardianConfig {
            max_request_bytes: 4096,
            ..GuardianConfig::default()
        },
        MemoryStore::new(),
    );
    let hello = req(
        1,
        "handshake/hello",
        json!({"acs_versions_supported": ["0.1.0"], "methods_implemented": ["steps/toolCallResult"],
        "transports_supported": ["stdio"], "provenance_producer": "deterministic"}),
    );
    (g, frame(hello.to_string().as_bytes()))
}

/// Issue 13 item 7: a frame with `Content-Length: -5` and its body cost
/// one error answer, not the next two frames.
#[test]
fn stdio_resynchronises_after_a_negative_length() {
    let (mut g, mut input) = hello_guardian();
    input.extend(b"Content-Length: -5\r\n\r\n");
    input.extend(tool(3).to_string().as_bytes()); // its body, no line end
    input.extend(frame(tool(4).to_string().as_bytes()));
    input.extend(frame(tool(5).to_string().as_bytes()));
    // Pretty-printed junk with line ends between frames is skipped too.
    input.extend(b"{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 9\n}\n");
    input.extend(frame(tool(6).to_string().as_bytes()));
    let mut out = Vec::new();
    server::serve_stdio(&mut g, &mut Cursor::new(input), &mut out).unwrap();
    let r = read_frames(&out);
    assert_eq!(r.len(), 5, "{r:?}");
    assert_eq!(r[1]["error"]["code"], -32700);
    assert!(r[1]["error"]["message"].as_str().unwrap().contains("-5"));
    for (i, id) in [(2, 4), (3, 5), (4, 6)] {
        assert_eq!(r[i]["id"], id, "{r:?}");
        assert_eq!(r[i]["result"]["decision"], "allow", "{r:?}");
    }
}

/// Issue 13 item 7: `Content-Length: 10^12` on an open stream is answered at
/// once (the client does not wait for an answer that needs a terabyte), and
/// the next frame is answered too.
#[test]
fn stdio_answers_an_unbelievable_length_without_waiting() {
    use std::sync::mpsc;
    use std::time::Duration;
    let (mut g, hello) = hello_guardian();
    let (reader, mut writer) = std::io::pipe().unwrap();
    let (out_r, out_w) = std::io::pipe().unwrap();
    std::thread::spawn(move || {
        let mut out_w = out_w;
        let _ = server::serve_stdio(&mut g, &mut BufReader::new(reader), &mut out_w);
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(out_r);
        while let Ok(mnemo_guardian_server::framing::Frame::Body(b)) =
            mnemo_guardian_server::framing::read_frame(&mut r, 1 << 20)
        {
            if tx
                .send(serde_json::from_slice::<Value>(&b).unwrap())
                .is_err()
            {
                break;
            }
        }
    });
    writer.write_all(&hello).unwrap();
    writer
        .write_all(b"Content-Length: 1000000000000\r\n\r\n")
        .unwrap();
    writer.flush().unwrap();
    let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(first["result"]["payload"]["selected_transport"], "stdio");
    let answer = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the 10^12 claim must be answered while the stream stays open");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    writer
        .write_all(&frame(tool(7).to_string().as_bytes()))
        .unwrap();
    writer.flush().unwrap();
    let next = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(next["id"], 7);
    assert_eq!(next["result"]["decision"], "allow", "{next}");
    drop(writer);
}

fn http_roundtrip(
    stream: &mut TcpStream,
    reader: &mut BufReader<TcpStream>,
    body: &[u8],
) -> (String, Vec<u8>) {
    write!(stream, "POST /acs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len()).unwrap();
    stream.write_all(body).unwrap();
    read_response(reader)
}

fn read_response(reader: &mut BufReader<TcpStream>) -> (String, Vec<u8>) {
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).unwrap();
        if h.trim().is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).unwrap();
    (status.trim().to_string(), body)
}

#[test]
fn http_keep_alive_and_bad_requests() {
    let policy = Policy::default();
    let mut config = GuardianConfig::from_policy(&policy);
    config.transport = Transport::Http;
    config.max_request_bytes = 8192;
    let g: server::DynStore = Box::new(MemoryStore::new());
    let guardian = Guardian::new(policy, config, g);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || server::serve_listener(guardian, listener));

    let mut s = TcpStream::connect(addr).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let hello = req(
        100,
        "handshake/hello",
        json!({"acs_versions_supported": ["0.1.0"], "methods_implemented": ["steps/toolCallResult"],
        "transports_supported": ["http"], "provenance_producer": "deterministic"}),
    );
    let (st, body) = http_roundtrip(&mut s, &mut r, hello.to_string().as_bytes());
    assert_eq!(st, "HTTP/1.1 200 OK");
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["result"]["payload"]["selected_transport"], "http");
    // Same connection, second request.
    let (_, body) = http_roundtrip(&mut s, &mut r, tool(101).to_string().as_bytes());
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["result"]["decision"], "allow");
    let (_, body) = http_roundtrip(&mut s, &mut r, b"not json");
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["code"], -32700);
    // Huge claimed length: 413 without reading or allocating it.
    let mut s2 = TcpStream::connect(addr).unwrap();
    let mut r2 = BufReader::new(s2.try_clone().unwrap());
    write!(
        s2,
        "POST / HTTP/1.1\r\nContent-Length: 1000000000000\r\n\r\n"
    )
    .unwrap();
    let (st, body) = read_response(&mut r2);
    assert!(st.contains("413"), "{st}");
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["code"], -32600);
    // Past any body length hyper can carry: refused before any body is read.
    let mut s2 = TcpStream::connect(addr).unwrap();
    let mut r2 = BufReader::new(s2.try_clone().unwrap());
    write!(
        s2,
        "POST / HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n"
    )
    .unwrap();
    let (st, _) = read_response(&mut r2);
    assert!(["400", "413", "431"].iter().any(|c| st.contains(c)), "{st}");
    // A chunked body over the limit: 413 once the limit is passed.
    let mut s2 = TcpStream::connect(addr).unwrap();
    let mut r2 = BufReader::new(s2.try_clone().unwrap());
    write!(s2, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
    for _ in 0..3 {
        write!(s2, "1000\r\n{}\r\n", "x".repeat(4096)).unwrap();
    }
    let (st, _) = read_response(&mut r2);
    assert!(st.contains("413"), "{st}");
    // A head over the limit: 431.
    let mut s2 = TcpStream::connect(addr).unwrap();
    let mut r2 = BufReader::new(s2.try_clone().unwrap());
    let _ = write!(
        s2,
        "POST / HTTP/1.1\r\nX-Big: {}\r\nContent-Length: 2\r\n\r\n{{}}",
        "a".repeat(mnemo_guardian_server::http::MAX_HEAD_BYTES + 10)
    );
    let (st, _) = read_response(&mut r2);
    assert!(st.contains("431"), "{st}");
    // Garbage request line.
    let mut s3 = TcpStream::connect(addr).unwrap();
    let mut r3 = BufReader::new(s3.try_clone().unwrap());
    s3.write_all(b"\x00\x01\x02 garbage\r\n\r\n").unwrap();
    let (st, _) = read_response(&mut r3);
    assert!(st.contains("400"), "{st}");
    // Health.
    let mut s4 = TcpStream::connect(addr).unwrap();
    let mut r4 = BufReader::new(s4.try_clone().unwrap());
    s4.write_all(b"GET /health HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut r4).1, b"ok");
    // The server still answers after all that.
    let (_, body) = http_roundtrip(&mut s, &mut r, tool(102).to_string().as_bytes());
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["result"]["decision"], "allow");
}

#[test]
fn policy_file_errors_name_the_file_and_key() {
    let dir = tmpdir("policy");
    let p = dir.join("policy.toml");
    std::fs::write(&p, "[compaction]\non_untrusted = \"sometimes\"\n").unwrap();
    let opts = GuardOptions {
        policy: Some(p),
        store: None,
        memory: true,
    };
    let e = server::open_guardian(&opts, Transport::Stdio, true)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("policy.toml") && e.contains("compaction.on_untrusted"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every shape of the HTTP server's decider (each must answer alike).
const DECIDERS: [Decider; 3] = [Decider::Thread, Decider::Task, Decider::Inline];

fn http_server(store: server::DynStore) -> std::net::SocketAddr {
    http_server_with(store, Decider::default())
}

fn http_server_with(store: server::DynStore, decider: Decider) -> std::net::SocketAddr {
    let policy = Policy::default();
    let mut config = GuardianConfig::from_policy(&policy);
    config.transport = Transport::Http;
    config.require_handshake = false;
    config.max_request_bytes = 64 * 1024;
    let guardian = Guardian::new(policy, config, store);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = server::HttpLimits {
        decider,
        ..server::HttpLimits::default()
    };
    std::thread::spawn(move || server::serve_listener_with(guardian, listener, limits));
    addr
}

fn post(body: &[u8], close: bool) -> Vec<u8> {
    let mut b = format!(
        "POST / HTTP/1.1\r\nContent-Length: {}\r\n{}\r\n",
        body.len(),
        if close { "Connection: close\r\n" } else { "" }
    )
    .into_bytes();
    b.extend_from_slice(body);
    b
}

#[test]
fn http_pipelined_requests_are_answered_in_order() {
    for decider in DECIDERS {
        pipelined_requests_are_answered_in_order(decider);
    }
}

fn pipelined_requests_are_answered_in_order(decider: Decider) {
    let addr = http_server_with(Box::new(MemoryStore::new()), decider);
    let mut s = TcpStream::connect(addr).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    // Three requests in one write, a health check between them, and a replay.
    let mut batch = post(tool(1).to_string().as_bytes(), false);
    batch.extend_from_slice(b"GET /health HTTP/1.1\r\n\r\n");
    batch.extend(post(tool(2).to_string().as_bytes(), false));
    batch.extend(post(tool(1).to_string().as_bytes(), false));
    s.write_all(&batch).unwrap();
    let (_, b1) = read_response(&mut r);
    let (_, b2) = read_response(&mut r);
    let (_, b3) = read_response(&mut r);
    let (_, b4) = read_response(&mut r);
    let v1: Value = serde_json::from_slice(&b1).unwrap();
    let v3: Value = serde_json::from_slice(&b3).unwrap();
    let v4: Value = serde_json::from_slice(&b4).unwrap();
    assert_eq!(
        (v1["id"].clone(), v1["result"]["decision"].clone()),
        (json!(1), json!("allow"))
    );
    assert_eq!(b2, b"ok", "{decider:?}");
    assert_eq!(v3["id"], 2, "{decider:?}");
    assert_eq!(
        v4["error"]["code"], -32005,
        "{decider:?}: replay seen in the same batch"
    );
}

#[test]
fn http_request_split_into_single_bytes() {
    let addr = http_server(Box::new(MemoryStore::new()));
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    for b in post(tool(7).to_string().as_bytes(), true) {
        s.write_all(&[b]).unwrap();
    }
    let (st, body) = read_response(&mut r);
    assert_eq!(st, "HTTP/1.1 200 OK");
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["result"]["decision"], "allow");
    // Connection: close is honoured: the server closes after the answer.
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn http_client_that_never_reads_does_not_stall_others() {
    let addr = http_server(Box::new(SqliteStore::open_in_memory().unwrap()));
    // One client pipelines thousands of pings and never reads the answers.
    let mut hog = TcpStream::connect(addr).unwrap();
    let ping = req(1, "system/ping", json!({"echo": "x".repeat(2000)}));
    let one = post(ping.to_string().as_bytes(), false);
    hog.set_write_timeout(Some(std::time::Duration::from_secs(2)))
        .unwrap();
    let mut sent = 0usize;
    for _ in 0..5000 {
        if hog.write_all(&one).is_err() {
            break;
        }
        sent += 1;
    }
    assert!(sent > 0);
    // Another client is still served promptly.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let (_, body) = http_roundtrip(&mut s, &mut r, tool(9).to_string().as_bytes());
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["result"]["decision"], "allow");
    drop(hog);
}

#[test]
fn http_many_concurrent_clients_each_get_their_own_answers() {
    for decider in DECIDERS {
        many_concurrent_clients_each_get_their_own_answers(decider);
    }
}

fn many_concurrent_clients_each_get_their_own_answers(decider: Decider) {
    let dir = tmpdir(&format!("http-many-{decider:?}"));
    let mut store = SqliteStore::open(&dir.join("g.sqlite3")).unwrap();
    store.checkpoint_in_background().unwrap();
    let addr = http_server_with(Box::new(store), decider);
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                let mut r = BufReader::new(s.try_clone().unwrap());
                for k in 0..50u32 {
                    let rid = 1000 + t * 100 + k;
                    let (_, body) =
                        http_roundtrip(&mut s, &mut r, tool(rid).to_string().as_bytes());
                    let v: Value = serde_json::from_slice(&body).unwrap();
                    assert_eq!(v["id"], rid);
                    assert_eq!(v["result"]["decision"], "allow", "{v}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Every step was recorded and chained, in one session, without gaps.
    let s = SqliteStore::open(&dir.join("g.sqlite3")).unwrap();
    let chain = s.chain_entries(SESSION).unwrap();
    assert_eq!(chain.len(), 400, "{decider:?}");
    let mut prev = None;
    for (canonical, hash) in &chain {
        let h = mnemo_guardian::chain::entry_hash_canonical(canonical, prev.as_ref());
        assert_eq!(&h, hash);
        prev = Some(h);
    }
}

#[test]
fn http_bodies_wait_for_the_shared_in_flight_budget() {
    let policy = Policy::default();
    let mut config = GuardianConfig::from_policy(&policy);
    config.transport = Transport::Http;
    config.require_handshake = false;
    config.max_request_bytes = 64 * 1024;
    let guardian = Guardian::new(
        policy,
        config,
        Box::new(MemoryStore::new()) as server::DynStore,
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // A budget of one maximal body: a second large body waits for the first.
    let limits = server::HttpLimits {
        inflight_bytes: 0,
        ..server::HttpLimits::default()
    };
    std::thread::spawn(move || server::serve_listener_with(guardian, listener, limits));
    let body = format!("\"{}\"", "x".repeat(60 * 1024));
    let head = format!("POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len());
    // A holds the budget: its head and half its body.
    let mut a = TcpStream::connect(addr).unwrap();
    a.write_all(head.as_bytes()).unwrap();
    a.write_all(&body.as_bytes()[..body.len() / 2]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    // B sends a whole request and is not answered while A holds the budget.
    let mut b = TcpStream::connect(addr).unwrap();
    b.write_all(head.as_bytes()).unwrap();
    b.write_all(body.as_bytes()).unwrap();
    b.set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let mut byte = [0u8; 1];
    assert!(
        b.read(&mut byte).is_err(),
        "answered while the budget was held"
    );
    // A small request is not held up: health checks read no body.
    let mut h = TcpStream::connect(addr).unwrap();
    let mut hr = BufReader::new(h.try_clone().unwrap());
    h.write_all(b"GET /health HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut hr).1, b"ok");
    // A finishes: both are answered (a JSON string is not a request: -32600).
    a.write_all(&body.as_bytes()[body.len() / 2..]).unwrap();
    let mut ar = BufReader::new(a.try_clone().unwrap());
    let (st, _) = read_response(&mut ar);
    assert_eq!(st, "HTTP/1.1 200 OK");
    b.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut br = BufReader::new(b.try_clone().unwrap());
    br.get_mut()
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    // The byte read above failed, so nothing of B's answer was consumed.
    let (st, _) = read_response(&mut br);
    assert_eq!(st, "HTTP/1.1 200 OK");
}
