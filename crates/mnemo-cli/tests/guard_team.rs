//! `mnemo guard http` processes for a team, driven over HTTP:
//! - two processes on one PostgreSQL database receive interleaved requests
//!   for one session (some request ids sent to both, several times): every
//!   id is accepted once and refused as a replay otherwise, every accepted
//!   step is recorded exactly once, numbered without a gap, in one
//!   unbroken hash chain;
//! - a process killed with `kill -9` under load (PostgreSQL and SQLite)
//!   loses no acknowledged step, and a new process on the same store goes
//!   on with the chain and still refuses the acknowledged ids.
//!
//! PostgreSQL cases need `$MNEMO_TEST_POSTGRES_URL` (`.ci/setup.d/30-postgres.sh`;
//! under CI=true its absence fails).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::SessionStore;
use mnemo_guardian::chain;
use mnemo_guardian::protocol::codes;
use mnemo_guardian_store::{PostgresStore, SqliteStore};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const NOW: &str = "2026-09-19T10:00:00Z";

fn pg_url() -> Option<String> {
    mnemo_testkit::require_env(
        "MNEMO_TEST_POSTGRES_URL",
        "the team Guardian tests need a PostgreSQL database (.ci/setup.d/30-postgres.sh)",
    )
}

/// A session id (a UUID) no other run uses; `tag` picks the test.
fn unique(tag: u16) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{:08x}-{tag:04x}-4000-8000-{:012x}",
        std::process::id(),
        nanos as u64 & 0xffff_ffff_ffff
    )
}

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn policy(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("policy.toml");
    std::fs::write(
        &p,
        "[guardian]\ncheck_timestamps = false\nrequire_handshake = false\n",
    )
    .unwrap();
    p
}

fn start(store: &str, policy: &Path) -> Server {
    start_with(store, policy, &[])
}

/// [`start`] with extra environment variables.
fn start_with(store: &str, policy: &Path, env: &[(&str, &str)]) -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(assert_cmd::cargo::cargo_bin("mnemo"))
        .args(["--quiet", "guard", "http", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--policy")
        .arg(policy)
        .arg("--store")
        .arg(store)
        .env_remove("MNEMO_CONFIG")
        .env_remove("MNEMO_STORE")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let server = Server { child, port };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some((200, _))) = http(port, "GET", "/health", "") {
            break;
        }
        assert!(Instant::now() < deadline, "the Guardian did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// One HTTP/1.1 exchange on a fresh connection: status and body; `None`
/// when the connection failed or closed before a whole answer.
fn http(port: u16, method: &str, path: &str, body: &str) -> std::io::Result<Option<(u16, String)>> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    let text = String::from_utf8_lossy(&out).to_string();
    let Some((head, rest)) = text.split_once("\r\n\r\n") else {
        return Ok(None);
    };
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(rest.len());
    if rest.len() < len {
        return Ok(None);
    }
    Ok(Some((status, rest[..len].to_string())))
}

fn rid(tag: u64, k: u64) -> String {
    format!("{tag:08x}-0000-4000-8000-{k:012x}")
}

fn user(session: &str, id: &str) -> String {
    json!({"jsonrpc": "2.0", "method": "steps/userMessage", "id": id, "params": {
        "acs_version": "0.1.0", "request_id": id, "timestamp": NOW,
        "metadata": {"agent_id": "a", "session_id": session},
        "payload": {"content": [{"type": "text", "value": "hi",
            "provenance": {"provenance_id": format!("p-{id}"), "origin": "user_input"}}]}}})
    .to_string()
}

#[derive(Debug, PartialEq)]
enum Answer {
    Accepted,
    Replay,
    Lost,
    Other(String),
}

fn send(port: u16, session: &str, id: &str) -> Answer {
    match http(port, "POST", "/", &user(session, id)) {
        Ok(Some((200, body))) => {
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            if v["result"]["chain_hash"].is_string() {
                Answer::Accepted
            } else if v["error"]["code"] == codes::REPLAY_DETECTED {
                Answer::Replay
            } else {
                Answer::Other(body)
            }
        }
        Ok(Some((status, body))) => Answer::Other(format!("{status} {body}")),
        Ok(None) | Err(_) => Answer::Lost,
    }
}

/// Steps and chain entries of one session, read back from the store.
fn read_back(store: &str, session: &str) -> (Vec<String>, Vec<(String, chain::Hash)>) {
    if store.starts_with("postgres") {
        let mut s = PostgresStore::open(store).unwrap();
        let steps = s.steps(session).unwrap();
        check_numbers(&steps);
        (
            steps.into_iter().map(|s| s.step_id).collect(),
            s.chain_entries(session).unwrap(),
        )
    } else {
        let mut s = SqliteStore::open(Path::new(store)).unwrap();
        let steps = s.steps(session).unwrap();
        check_numbers(&steps);
        (
            steps.into_iter().map(|s| s.step_id).collect(),
            s.chain_entries(session).unwrap(),
        )
    }
}

fn check_numbers(steps: &[mnemo_guardian::store::StepRecord]) {
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s.seq, i as u64 + 1, "steps numbered without a gap");
    }
}

fn check_chain(entries: &[(String, chain::Hash)], steps: usize) {
    assert_eq!(entries.len(), steps, "one chain entry per step");
    let mut prev: Option<chain::Hash> = None;
    for (i, (canonical, hash)) in entries.iter().enumerate() {
        assert_eq!(
            chain::entry_hash_canonical(canonical, prev.as_ref()),
            *hash,
            "the chain is unbroken at entry {}",
            i + 1
        );
        prev = Some(*hash);
    }
}

#[test]
fn two_guardian_processes_on_one_database_decide_one_session_consistently() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pol = policy(dir.path());
    let a = start(&url, &pol);
    let b = start(&url, &pol);
    let session = unique(2);
    const THREADS: u64 = 4;
    const OWN: u64 = 40;
    const SHARED: u64 = 40;
    let ports = [a.port, b.port];
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let session = session.clone();
            std::thread::spawn(move || {
                let mut got: Vec<(String, Answer)> = Vec::new();
                for k in 0..OWN.max(SHARED) {
                    // Alternate the two processes, starting on different ones.
                    let port = ports[((t + k) % 2) as usize];
                    if k < OWN {
                        let id = rid(0x100 + t, k);
                        got.push((id.clone(), send(port, &session, &id)));
                    }
                    if k < SHARED {
                        // Every thread sends these, to both processes.
                        let id = rid(0x200, k);
                        got.push((id.clone(), send(port, &session, &id)));
                    }
                }
                got
            })
        })
        .collect();
    let mut accepted: BTreeMap<String, u32> = BTreeMap::new();
    let mut replays = 0;
    for h in handles {
        for (id, answer) in h.join().unwrap() {
            match answer {
                Answer::Accepted => *accepted.entry(id).or_default() += 1,
                Answer::Replay => replays += 1,
                other => panic!("{id}: {other:?}"),
            }
        }
    }
    assert!(
        accepted.values().all(|&n| n == 1),
        "no id accepted twice: {accepted:?}"
    );
    assert_eq!(accepted.len() as u64, THREADS * OWN + SHARED);
    assert_eq!(
        replays,
        (THREADS - 1) * SHARED,
        "each shared id refused once per other sender"
    );
    drop((a, b));
    let (steps, entries) = read_back(&url, &session);
    let recorded: BTreeSet<&str> = steps.iter().map(String::as_str).collect();
    assert_eq!(recorded.len(), steps.len(), "no step recorded twice");
    let acked: BTreeSet<&str> = accepted.keys().map(String::as_str).collect();
    assert_eq!(
        recorded, acked,
        "the recorded steps are the acknowledged ones"
    );
    check_chain(&entries, steps.len());
}

/// Two processes take turns on one session, one request at a time, so
/// that each decides against its own copy of the session (what it last
/// committed) that the other has just moved on: every such request is
/// found stale when it is sent, kept nowhere, and decided again under the
/// session's lock. Every third id is then sent again, to the other process
/// (whose copy is stale) and to the same one (whose copy is current but
/// whose replay mark is already there): refused both times. The steps are
/// the acknowledged ones, in order, on one unbroken chain.
#[test]
fn two_guardian_processes_taking_turns_on_one_session_meet_stale_copies() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pol = policy(dir.path());
    let a = start(&url, &pol);
    let b = start(&url, &pol);
    let session = unique(5);
    let ports = [a.port, b.port];
    let mut acked = Vec::new();
    for k in 0..60u64 {
        let (here, there) = (ports[(k % 2) as usize], ports[((k + 1) % 2) as usize]);
        let id = rid(0x500, k);
        assert_eq!(send(here, &session, &id), Answer::Accepted, "{id}");
        acked.push(id.clone());
        if k % 3 == 0 {
            assert_eq!(send(there, &session, &id), Answer::Replay, "{id}");
            assert_eq!(send(here, &session, &id), Answer::Replay, "{id}");
        }
    }
    drop((a, b));
    let (steps, entries) = read_back(&url, &session);
    assert_eq!(steps, acked, "every acknowledged step once, in order");
    check_chain(&entries, steps.len());
}

/// One process decides several sessions on four decider threads (one per
/// shard of session ids, each with a connection of its own): eight threads
/// at once send requests for eight sessions, each id twice; each id is
/// accepted once and refused once, and every session's steps are the
/// acknowledged ones, numbered without a gap, with an unbroken chain.
#[test]
fn one_guardian_process_decides_many_sessions_on_its_decider_threads() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = start_with(&url, &policy(dir.path()), &[("MNEMO_GUARD_DECIDERS", "4")]);
    const SESSIONS: u16 = 8;
    const THREADS: u64 = 8;
    const EACH: u64 = 24;
    let sessions: Arc<Vec<String>> = Arc::new((0..SESSIONS).map(|i| unique(0x30 + i)).collect());
    let port = a.port;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let sessions = sessions.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                for k in 0..EACH {
                    let s = (t + k) as usize % sessions.len();
                    let id = rid(0x300 + t, k);
                    let first = send(port, &sessions[s], &id);
                    let again = send(port, &sessions[s], &id);
                    got.push((s, id, first, again));
                }
                got
            })
        })
        .collect();
    let mut acked: Vec<BTreeSet<String>> = vec![BTreeSet::new(); sessions.len()];
    for h in handles {
        for (s, id, first, again) in h.join().unwrap() {
            assert_eq!(first, Answer::Accepted, "{id}");
            assert_eq!(again, Answer::Replay, "{id}");
            assert!(acked[s].insert(id));
        }
    }
    drop(a);
    for (session, acked) in sessions.iter().zip(&acked) {
        let (steps, entries) = read_back(&url, session);
        let recorded: BTreeSet<String> = steps.iter().cloned().collect();
        assert_eq!(recorded.len(), steps.len(), "no step recorded twice");
        assert_eq!(
            &recorded, acked,
            "{session}: the recorded steps are the acknowledged ones"
        );
        check_chain(&entries, steps.len());
    }
}

/// Load on one process, `kill -9` once `kill_after` answers came back;
/// then every acknowledged step is in the store, and a new process on the
/// same store continues the chain and refuses the acknowledged ids.
fn killed_mid_load_loses_no_acknowledged_step(store: &str, dir: &Path) {
    let pol = policy(dir);
    let mut a = start(store, &pol);
    let session = unique(9);
    const THREADS: u64 = 6;
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let answers = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let port = a.port;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (session, acked, answers, stop) = (
                session.clone(),
                acked.clone(),
                answers.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || {
                let mut lost = 0u64;
                for k in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let id = rid(0x300 + t, k);
                    match send(port, &session, &id) {
                        Answer::Accepted => {
                            acked.lock().unwrap().push(id);
                            answers.fetch_add(1, Ordering::SeqCst);
                        }
                        Answer::Lost => {
                            // The process is gone (or going): at most this
                            // one request was in flight unanswered.
                            lost += 1;
                            break;
                        }
                        other => panic!("{id}: {other:?}"),
                    }
                }
                lost
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while answers.load(Ordering::SeqCst) < 300 {
        assert!(Instant::now() < deadline, "no load reached the Guardian");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SIGKILL, with requests in flight.
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    stop.store(true, Ordering::SeqCst);
    let in_flight: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let acked: Vec<String> = acked.lock().unwrap().clone();
    assert!(acked.len() >= 300);

    let (steps, entries) = read_back(store, &session);
    let recorded: BTreeSet<&str> = steps.iter().map(String::as_str).collect();
    assert_eq!(recorded.len(), steps.len(), "no step recorded twice");
    let missing: Vec<&String> = acked
        .iter()
        .filter(|id| !recorded.contains(id.as_str()))
        .collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    // Recorded but never answered: only requests that were in flight.
    assert!(
        steps.len() - acked.len() <= in_flight as usize,
        "{} recorded, {} acknowledged, {in_flight} in flight",
        steps.len(),
        acked.len()
    );
    check_chain(&entries, steps.len());

    // A new process on the same store: the chain goes on, replays refused.
    let b = start(store, &pol);
    assert_eq!(send(b.port, &session, &acked[0]), Answer::Replay);
    assert_eq!(
        send(b.port, &session, &acked[acked.len() - 1]),
        Answer::Replay
    );
    assert_eq!(send(b.port, &session, &rid(0x400, 0)), Answer::Accepted);
    drop(b);
    let (after, entries) = read_back(store, &session);
    assert_eq!(after.len(), steps.len() + 1);
    assert_eq!(
        after.last().map(String::as_str),
        Some(rid(0x400, 0).as_str())
    );
    check_chain(&entries, after.len());
}

#[test]
fn a_postgres_guardian_killed_mid_load_loses_no_acknowledged_step() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    killed_mid_load_loses_no_acknowledged_step(&url, dir.path());
}

#[test]
fn a_sqlite_guardian_killed_mid_load_loses_no_acknowledged_step() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("guardian.sqlite3");
    killed_mid_load_loses_no_acknowledged_step(store.to_str().unwrap(), dir.path());
}
