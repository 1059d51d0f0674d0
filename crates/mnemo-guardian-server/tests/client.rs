//! The remote-Guardian client against an in-process HTTP Guardian: the same
//! verdicts as the in-process API.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{
    EntryProvenance, Guardian, GuardianConfig, MemoryStore, Origin, Policy, Provenance, Transport,
    Trigger, check_compaction,
};
use mnemo_guardian_server::client::{ClientError, RemoteGuardian, new_uuid};
use mnemo_guardian_server::server::{self, DynStore};

fn start(config: GuardianConfig) -> String {
    let store: DynStore = Box::new(MemoryStore::new());
    let g = Guardian::new(
        Policy::default(),
        GuardianConfig {
            transport: Transport::Http,
            ..config
        },
        store,
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || server::serve_listener(g, listener));
    format!("http://{addr}/acs")
}

fn e(step: &str, o: Origin) -> EntryProvenance {
    EntryProvenance::single(step, Provenance::new(format!("p-{step}"), o, Some("src")))
}

#[test]
fn remote_verdicts_match_in_process() {
    let url = start(GuardianConfig::default());
    let remote = RemoteGuardian::new(&url).unwrap();
    let policy = Policy::default();
    let mut summary = Provenance::new("p-sum", Origin::AgentGenerated, None);
    summary.derived_from = vec!["p-t1".into()];
    let cases: Vec<(Vec<EntryProvenance>, Trigger)> = vec![
        (
            vec![e("u1", Origin::UserInput), e("a1", Origin::AgentGenerated)],
            Trigger::FrameworkInitiated,
        ),
        (
            vec![e("u1", Origin::UserInput), e("t1", Origin::ToolOutput)],
            Trigger::FrameworkInitiated,
        ),
        (
            vec![e("u1", Origin::UserInput), e("t1", Origin::ToolOutput)],
            Trigger::Manual,
        ),
        (
            vec![e("t1", Origin::ToolOutput), e("u2", Origin::UserInput)],
            Trigger::SizeThreshold,
        ),
        (
            vec![
                e("t1", Origin::ToolOutput),
                EntryProvenance::single("s", summary),
            ],
            Trigger::SizeThreshold,
        ),
    ];
    for (entries, trigger) in cases {
        let local = check_compaction(&policy, &entries, trigger);
        let far = remote.check_compaction(&entries, trigger).unwrap();
        assert_eq!(far.verdict, local.verdict, "{entries:?}");
        assert_eq!(far.reason_codes, local.reason_codes);
        assert_eq!(
            far.reasoning.contains("This ends with"),
            local.reasoning.contains("This ends with")
        );
    }
}

#[test]
fn remote_with_hmac_and_errors() {
    let url = start(GuardianConfig {
        hmac_keys: vec![("k".into(), b"s3cret".to_vec())],
        ..GuardianConfig::default()
    });
    let entries = [e("u1", Origin::UserInput)];
    let unsigned = RemoteGuardian::new(&url).unwrap();
    match unsigned.check_compaction(&entries, Trigger::Manual) {
        Err(ClientError::Rpc { code, .. }) => assert_eq!(code, -32004),
        other => panic!("{other:?}"),
    }
    let signed = RemoteGuardian::new(&url).unwrap().with_hmac("k", b"s3cret");
    assert!(
        signed
            .check_compaction(&entries, Trigger::Manual)
            .unwrap()
            .allowed()
    );
    assert!(matches!(
        RemoteGuardian::new("ftp://x:1"),
        Err(ClientError::Url(_))
    ));
    assert!(matches!(
        RemoteGuardian::new("http://nohost"),
        Err(ClientError::Url(_))
    ));
    // A port nobody listens on any more: a clean I/O error.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = RemoteGuardian::new(&format!("http://127.0.0.1:{port}/")).unwrap();
    assert!(matches!(
        dead.check_compaction(&entries, Trigger::Manual),
        Err(ClientError::Io { .. })
    ));
}

#[test]
fn uuids_are_v4_and_unique() {
    let a = new_uuid();
    let b = new_uuid();
    assert_ne!(a, b);
    assert!(mnemo_guardian::validate::format_matches(
        mnemo_guardian::validate::Format::Uuid,
        &a
    ));
    assert_eq!(&a[14..15], "4");
}

/// A fake Guardian that answers every request with `answer(n)` (the n-th
/// request, 0-based, its raw HTTP response) and counts the requests.
fn canned(
    answer: impl Fn(usize) -> String + Send + 'static,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; len];
            let _ = reader.read_exact(&mut body);
            let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = stream.write_all(answer(n).as_bytes());
        }
    });
    (format!("http://{addr}/acs"), count)
}

fn http(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// ACS §6.4 / corpus acs-f-5 (`va8eebd3334b97257`): a gateway error page
/// where a decision belongs is no decision; the client refuses, and the
/// bank's compaction, which asks through it, compacts nothing.
#[test]
fn a_gateway_page_is_not_a_decision() {
    let page = "<html>504 Gateway Time-out</html>";
    for answer in [
        http("504 Gateway Time-out", "text/html", page),
        http("200 OK", "text/html", page),
    ] {
        let (url, _) = canned(move |_| answer.clone());
        let remote = RemoteGuardian::new(&url).unwrap();
        match remote.check_compaction(&[e("u1", Origin::UserInput)], Trigger::Manual) {
            Err(ClientError::Protocol { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
}

/// ACS §4.1 / corpus acs-f-11: a hello answered with a refusal
/// (SESSION_REFUSED) or with no ServerHello at all (an internal error) never
/// starts the session: mnemo's client posture is `refuse`, and it sends no
/// step after the hello.
#[test]
fn a_refused_or_failed_hello_starts_nothing() {
    for (code, message) in [(-32000, "session refused"), (-32603, "internal error")] {
        let (url, count) = canned(move |_| {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":{code},"message":"{message}"}}}}"#
            );
            http("200 OK", "application/json", &body)
        });
        let remote = RemoteGuardian::new(&url).unwrap();
        match remote.check_compaction(&[e("u1", Origin::UserInput)], Trigger::Manual) {
            Err(ClientError::Rpc { code: c, .. }) => assert_eq!(c, code),
            other => panic!("{other:?}"),
        }
        assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}

/// ACS §6.5 / corpus acs-f-12 (`v89ea07928daff608`, `vbd5dc2450805e76b`): a
/// MODIFY answered to preCompact cannot be applied to a compaction; the
/// client applies DENY (never the original, as if allowed) and names the
/// substitution with `modify_unsupported`.
#[test]
fn a_modify_at_precompact_is_applied_as_deny() {
    for modifications in [
        r#"{"redactions":[{"path":"arguments.api_key"}]}"#,
        r#"{"modified_content":"x","redactions":[{"path":"arguments.api_key"}]}"#,
    ] {
        let (url, count) = canned(move |n| {
            let result = match n {
                0 => r#"{"negotiated_version":"0.1.0"}"#.to_string(),
                1 => r#"{"type":"final","decision":"allow","reasoning":"ok"}"#.to_string(),
                _ => format!(
                    r#"{{"type":"final","decision":"modify","reasoning":"redact the key","modifications":{modifications}}}"#
                ),
            };
            let body = format!(r#"{{"jsonrpc":"2.0","id":"x","result":{result}}}"#);
            http("200 OK", "application/json", &body)
        });
        let remote = RemoteGuardian::new(&url).unwrap();
        let d = remote
            .check_compaction(&[e("u1", Origin::UserInput)], Trigger::Manual)
            .unwrap();
        assert!(!d.allowed(), "{d:?}");
        assert_eq!(d.verdict, mnemo_guardian::Verdict::Deny);
        assert_eq!(d.reason_codes, ["modify_unsupported"]);
        assert!(
            d.reasoning.contains("received modify, applied deny"),
            "{d:?}"
        );
        assert!(d.reasoning.ends_with("redact the key"), "{d:?}");
        assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 3);
    }
}
