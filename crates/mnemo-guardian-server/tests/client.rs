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
