//! `mnemo gate --guardian-cmd`: the bank's compaction asks a Guardian that
//! speaks stdio (Content-Length framing), run as a child process. Against
//! the real `mnemo guard stdio` an allow compacts and a deny writes
//! nothing; against fake Guardians (scripts written in the test's temp
//! dir) that answer garbage, an HTML page, nothing, the wrong id, a huge
//! frame, or exit at once, the bank stays byte-identical, mnemo exits 1
//! with a message that says what the Guardian did, and no child is left.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use mnemo_guardian::{EntryProvenance, Origin, Provenance, Trigger};
use mnemo_guardian_server::client::{ClientError, RemoteGuardian};

const ALLOWED: &str = r#"{"agent": "hermes", "summary": "Added POST /api/v1/orders returning 201", "status": "complete"}"#;
const UNTRUSTED: &str = r#"{"agent": "hermes", "summary": "Summarised a web page about auth tokens", "status": "complete",
    "provenance": {"origins": ["retrieved"], "derived_from": ["step-3"]}}"#;

fn mnemo() -> PathBuf {
    assert_cmd::cargo::cargo_bin("mnemo")
}

/// The real Guardian's command line (the binary's path quoted for the
/// shell-like split).
fn real_guardian() -> String {
    format!("'{}' guard stdio --memory", mnemo().display())
}

fn gate_with(dir: &Path, summary: &str, flags: &[&str]) -> assert_cmd::assert::Assert {
    std::fs::write(dir.join("summary.json"), summary).unwrap();
    Command::cargo_bin("mnemo")
        .unwrap()
        .current_dir(dir)
        .env_remove("MNEMO_CONFIG")
        .env_remove("MNEMO_GUARDIAN_URL")
        .env_remove("MNEMO_GUARDIAN_CMD")
        .args(["--bank", "bank", "gate", "--phase", "1", "--from", "hermes"])
        .args(["--to", "aphrodite", "--date", "2026-11-30"])
        .args(flags)
        .arg("summary.json")
        .timeout(Duration::from_secs(60))
        .assert()
}

fn gate(dir: &Path, cmd: &str, summary: &str) -> assert_cmd::assert::Assert {
    gate_with(dir, summary, &["--guardian-cmd", cmd])
}

/// Every file under `bank`, with its bytes.
/// The bank's content: every file but the client's own audit log (the one
/// write of a refused gate, checked apart by [`last_audit`]) and the lock.
fn snapshot(bank: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let skip = [
        bank.join("_xref").join("guardian-audit.jsonl"),
        bank.join(".tmp").join("compress.lock"),
    ];
    let mut out = BTreeMap::new();
    let mut todo = vec![bank.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if !skip.contains(&p) {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The last line of the bank's `_xref/guardian-audit.jsonl`.
fn last_audit(bank: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(bank.join("_xref").join("guardian-audit.jsonl")).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

fn stderr_of(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&a.get_output().stderr).into_owned()
}

/// A fake stdio Guardian in Python: it answers the hello with a
/// ServerHello and every step with allow, and steps/preCompact as `mode`
/// says. It writes its pid to `pid` first.
const FAKE: &str = r#"
import json, os, sys, time
mode, pidfile = sys.argv[1], sys.argv[2]
open(pidfile, "w").write(str(os.getpid()))
inp, out = sys.stdin.buffer, sys.stdout.buffer
def send(body):
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()
while True:
    n = None
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        k, _, v = line.partition(b":")
        if k.lower() == b"content-length":
            n = int(v)
    req = json.loads(inp.read(n))
    rid, method = req["id"], req["method"]
    if method == "handshake/hello":
        if mode == "hello-silent":
            time.sleep(60)
        res = {"acs_version": "0.1.0", "negotiated_version": "0.1.0",
               "methods_evaluated": ["steps/memoryContextRetrieval", "steps/preCompact"]}
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": res}).encode())
        continue
    if method != "steps/preCompact" or mode == "allow":
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"acs_version": "0.1.0",
             "request_id": rid, "type": "final", "decision": "allow", "reasoning": "fake: allow"}}).encode())
        continue
    if mode == "garbage":
        out.write(b"this is not a frame\r\n"); out.flush(); time.sleep(60)
    elif mode == "html":
        send(b"<!DOCTYPE html>\n<html><body><h1>502 Bad Gateway</h1></body></html>\n")
        time.sleep(60)
    elif mode == "silent":
        time.sleep(60)
    elif mode == "exit":
        sys.stderr.write("fake guardian: store is locked\n"); sys.exit(3)
    elif mode == "wrong-id":
        send(json.dumps({"jsonrpc": "2.0", "id": "someone-else", "result": {"decision": "allow"}}).encode())
        time.sleep(60)
    elif mode == "huge":
        out.write(b"Content-Length: 999999999\r\n\r\n"); out.flush(); time.sleep(60)
    elif mode == "error":
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "fake: internal"}}).encode())
"#;

fn python() -> bool {
    mnemo_testkit::require_command("python3", &["--version"], "the fake Guardians are Python")
}

/// Whether process `pid` is gone (neither running nor a zombie).
fn gone(pid: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        // Field 3 is the state; `Z` is a zombie.
        let alive = stat.is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        });
        if !alive || Instant::now() > deadline {
            return !alive;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_gate_asks_mnemo_guard_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank");
    gate(dir.path(), &real_guardian(), ALLOWED)
        .success()
        .stdout(predicates::str::starts_with(
            "Compression complete: 1 entries compressed",
        ));
    assert!(bank.join("01-active-context.md").is_file());
    let before = snapshot(&bank);
    let a = gate(dir.path(), &real_guardian(), UNTRUSTED).code(1);
    let err = stderr_of(&a);
    assert!(
        err.contains("compaction denied by the Guardian")
            && err.contains("policy-untrusted")
            && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(snapshot(&bank), before, "a deny writes nothing");
}

#[test]
fn the_environment_names_the_command_and_the_flags_are_exclusive() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("summary.json"), ALLOWED).unwrap();
    let base = |c: &mut Command| {
        c.current_dir(dir.path())
            .env_remove("MNEMO_CONFIG")
            .env_remove("MNEMO_GUARDIAN_URL")
            .env_remove("MNEMO_GUARDIAN_CMD")
            .args(["--bank", "bank", "gate", "--phase", "1", "--from", "hermes"])
            .args(["--to", "aphrodite", "--date", "2026-11-30", "summary.json"]);
    };
    let mut c = Command::cargo_bin("mnemo").unwrap();
    base(&mut c);
    c.env("MNEMO_GUARDIAN_CMD", real_guardian())
        .assert()
        .success();
    assert!(dir.path().join("bank/01-active-context.md").is_file());

    for flags in [
        &["--guardian-url", "http://127.0.0.1:9"][..],
        &["--policy", "p.toml"][..],
    ] {
        let mut c = Command::cargo_bin("mnemo").unwrap();
        base(&mut c);
        let a = c
            .args(["--guardian-cmd", "mnemo guard stdio"])
            .args(flags)
            .assert()
            .code(2);
        let err = stderr_of(&a);
        assert!(
            err.contains("--guardian-cmd") && err.contains(flags[0]),
            "{err}"
        );
    }
    // `compress` takes the same Guardian flags.
    let a = Command::cargo_bin("mnemo")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("MNEMO_GUARDIAN_URL")
        .env_remove("MNEMO_GUARDIAN_CMD")
        .args([
            "--bank",
            "bank",
            "compress",
            "--guardian-cmd",
            "mnemo guard stdio",
        ])
        .args(["--guardian-url", "http://127.0.0.1:9", "summary.json"])
        .assert()
        .code(2);
    let err = stderr_of(&a);
    assert!(
        err.contains("--guardian-cmd") && err.contains("--guardian-url"),
        "{err}"
    );
    let before = snapshot(&dir.path().join("bank"));
    for (cmd, says) in [
        ("'unbalanced", "unbalanced quotes"),
        ("  ", "--guardian-cmd is empty"),
    ] {
        let a = gate(dir.path(), cmd, ALLOWED).failure();
        assert!(stderr_of(&a).contains(says), "{}", stderr_of(&a));
    }
    assert_eq!(snapshot(&dir.path().join("bank")), before);
}

/// Runs the gate against `cmd`, which must fail: exit 1, every word of
/// `says` in the message, the bank byte-identical. Returns the elapsed
/// time.
fn refused(dir: &Path, cmd: &str, says: &[&str]) -> Duration {
    let bank = dir.join("bank");
    let before = snapshot(&bank);
    let t = Instant::now();
    let a = gate(dir, cmd, ALLOWED).code(1);
    let took = t.elapsed();
    let err = stderr_of(&a);
    assert!(
        err.contains("cannot ask the Guardian, so nothing was compacted"),
        "{cmd}: {err}"
    );
    for s in says {
        assert!(err.contains(s), "{cmd}: expected {s:?} in: {err}");
    }
    assert_eq!(snapshot(&bank), before, "{cmd}: the bank changed");
    // The one write: the audit line of a consultation that compacted nothing.
    let audit = last_audit(&bank);
    assert_eq!(audit["applied"], "deny", "{cmd}: {audit}");
    assert_eq!(audit["compacted"], false, "{cmd}: {audit}");
    assert!(
        audit["guardian"]
            .as_str()
            .is_some_and(|g| g.starts_with("stdio: ")),
        "{cmd}: {audit}"
    );
    took
}

#[test]
fn guardians_that_cannot_answer_compact_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A bank with content, so that "unchanged" means something.
    gate(dir.path(), &real_guardian(), ALLOWED).success();
    refused(
        dir.path(),
        "nosuch-guardian-program --serve",
        &["cannot run `nosuch-guardian-program`: program not found"],
    );
    refused(
        dir.path(),
        "sh -c 'echo \"guardian: no store here\" >&2; exit 7'",
        &[
            "exited (exit status: 7) before answering handshake/hello",
            "guardian: no store here",
        ],
    );
    refused(
        dir.path(),
        "sh -c 'echo garbage; exec sleep 30'",
        &["malformed frame", "\"garbage\""],
    );
    refused(
        dir.path(),
        r#"sh -c 'printf "Content-Length: 44\r\n\r\n<!DOCTYPE html><html>502 Bad Gateway</html>\n"; exec sleep 30'"#,
        &["not JSON", "<!DOCTYPE html>"],
    );
    // It never answers: the gate gives up after its 5 s, not before and
    // not much later.
    let took = refused(
        dir.path(),
        "sh -c 'exec sleep 30'",
        &["no answer to handshake/hello within 5 s"],
    );
    assert!(
        took >= Duration::from_millis(4900) && took < Duration::from_secs(15),
        "{took:?}"
    );
}

#[test]
fn guardians_that_fail_mid_session_compact_nothing() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake_guardian.py");
    std::fs::write(&fake, FAKE).unwrap();
    let pidfile = dir.path().join("fake.pid");
    let cmd = |mode: &str| {
        format!(
            "python3 '{}' {mode} '{}'",
            fake.display(),
            pidfile.display()
        )
    };
    gate(dir.path(), &cmd("allow"), ALLOWED).success();
    assert!(gone(&std::fs::read_to_string(&pidfile).unwrap()));
    for (mode, says) in [
        (
            "garbage",
            &["steps/preCompact", "\"this is not a frame\""][..],
        ),
        (
            "html",
            &[
                "answered steps/preCompact with a frame that is not JSON",
                "502 Bad Gateway",
            ][..],
        ),
        (
            "exit",
            &[
                "exited (exit status: 3) before answering steps/preCompact",
                "fake guardian: store is locked",
            ][..],
        ),
        (
            "wrong-id",
            &["with the response to id \"someone-else\""][..],
        ),
        ("huge", &["a frame of 999999999 bytes"][..]),
        ("error", &["error -32603: fake: internal"][..]),
        ("silent", &["no answer to steps/preCompact within 5 s"][..]),
        (
            "hello-silent",
            &["no answer to handshake/hello within 5 s"][..],
        ),
    ] {
        let _ = std::fs::remove_file(&pidfile);
        refused(dir.path(), &cmd(mode), says);
        // The child was stopped and reaped, not left behind.
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        assert!(gone(&pid), "{mode}: the fake Guardian {pid} is still there");
    }
}

fn entry(step: &str, o: Origin) -> EntryProvenance {
    EntryProvenance::single(step, Provenance::new(format!("p-{step}"), o, Some("src")))
}

/// The client API over stdio: the verdicts and HMAC of HTTP, a timeout
/// that is honoured, and no zombie in the calling process.
#[test]
fn the_client_speaks_stdio_with_hmac() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[guardian]\nhmac_key_id = \"k1\"\nhmac_key_env = \"MNEMO_TEST_STDIO_KEY\"\n",
    )
    .unwrap();
    let argv = |secret: &str| {
        vec![
            "env".to_string(),
            format!("MNEMO_TEST_STDIO_KEY={secret}"),
            mnemo().display().to_string(),
            "guard".into(),
            "stdio".into(),
            "--memory".into(),
            "--policy".into(),
            policy.display().to_string(),
        ]
    };
    let ok = [
        entry("u1", Origin::UserInput),
        entry("a1", Origin::AgentGenerated),
    ];
    let bad = [
        entry("u1", Origin::UserInput),
        entry("t1", Origin::ToolOutput),
    ];
    let signed = RemoteGuardian::command(argv("s3cret-s3cret"))
        .unwrap()
        .with_hmac("k1", b"s3cret-s3cret");
    let d = signed
        .check_compaction(&ok, Trigger::FrameworkInitiated)
        .unwrap();
    assert!(d.allowed(), "{d:?}");
    let d = signed
        .check_compaction(&bad, Trigger::FrameworkInitiated)
        .unwrap();
    assert!(!d.allowed());
    assert!(!d.reason_codes.is_empty());
    // Unsigned: the Guardian refuses (-32004).
    let unsigned = RemoteGuardian::command(argv("s3cret-s3cret")).unwrap();
    match unsigned.check_compaction(&ok, Trigger::Manual) {
        Err(ClientError::Rpc { code, .. }) => assert_eq!(code, -32004),
        other => panic!("{other:?}"),
    }
    // Another secret on the Guardian's side: its refusal is not signed
    // under ours, so the client rejects it.
    let other = RemoteGuardian::command(argv("another-secret"))
        .unwrap()
        .with_hmac("k1", b"s3cret-s3cret");
    assert!(other.check_compaction(&ok, Trigger::Manual).is_err());

    // A Guardian that never answers: the client's timeout, then the child
    // is killed and reaped (this process is its parent: no zombie).
    let pidfile = dir.path().join("pid");
    let silent = RemoteGuardian::command(vec![
        "sh".into(),
        "-c".into(),
        format!("echo $$ > '{}'; exec sleep 30", pidfile.display()),
    ])
    .unwrap()
    .with_timeout(Duration::from_millis(700));
    let t = Instant::now();
    match silent.check_compaction(&ok, Trigger::Manual) {
        Err(ClientError::NoAnswer { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    assert!(gone(pid.trim()), "the silent Guardian {pid} was not reaped");
}
