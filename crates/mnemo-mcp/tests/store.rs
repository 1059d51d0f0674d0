//! The memory store's contracts, against real SQLite files in temp dirs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use mnemo_mcp::store::{
    ListRequest, MAX_LIST_LIMIT, MAX_TOP_K, MemoryStore, SearchRequest, Selector, SqliteStore,
    StoreError, StoreRequest,
};
use serde_json::json;

const DAY_MS: i64 = 86_400_000;
/// A fake GitHub token, built at run time so that no scanner flags this file.
fn fake_github_pat() -> String {
    format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: SqliteStore,
    now: Arc<AtomicI64>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(AtomicI64::new(1_796_085_901_000));
    let clock_now = Arc::clone(&now);
    let store = SqliteStore::open_with_clock(
        &dir.path().join("sub/memory.sqlite3"),
        Arc::new(move || clock_now.load(Ordering::SeqCst)),
    )
    .unwrap();
    Fixture {
        _dir: dir,
        store,
        now,
    }
}

fn put(store: &SqliteStore, ns: &str, key: Option<&str>, value: &str) -> i64 {
    store
        .store(StoreRequest {
            value: value.to_string(),
            namespace: ns.to_string(),
            key: key.map(str::to_string),
            metadata: None,
        })
        .unwrap()
        .id
}

fn search(store: &SqliteStore, q: &str) -> Result<mnemo_mcp::store::SearchResults, StoreError> {
    store.search(&SearchRequest {
        query: q.to_string(),
        namespace: "default".to_string(),
        top_k: None,
        recency_half_life_days: None,
    })
}

fn by_key(key: &str) -> Selector {
    Selector {
        key: Some(key.to_string()),
        ..Selector::default()
    }
}

#[test]
fn store_answers_the_contract_and_recall_returns_it() {
    let f = fixture();
    let stored = f
        .store
        .store(StoreRequest {
            value: "JWT refresh rotation lands in phase 3".to_string(),
            namespace: "default".to_string(),
            key: Some("auth/jwt".to_string()),
            metadata: Some(
                json!({"agent": "hermes", "phase": 3})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        })
        .unwrap();
    assert_eq!(stored.status, "stored");
    assert_eq!(stored.namespace, "default");
    assert_eq!(stored.key.as_deref(), Some("auth/jwt"));
    assert_eq!(stored.redactions, 0);
    assert_eq!(stored.created_at, "2026-12-01T00:45:01.000Z");
    let by_id = f
        .store
        .recall(&Selector {
            id: Some(stored.id),
            ..Selector::default()
        })
        .unwrap();
    let by_k = f.store.recall(&by_key("auth/jwt")).unwrap();
    assert_eq!(by_id, by_k);
    assert_eq!(by_id.value, "JWT refresh rotation lands in phase 3");
    assert_eq!(by_id.metadata["agent"], "hermes");
    assert_eq!(by_id.metadata["phase"], 3);
}

#[test]
fn duplicate_key_is_an_error_not_an_overwrite() {
    let f = fixture();
    let first = put(&f.store, "default", Some("k"), "first value");
    let err = f
        .store
        .store(StoreRequest {
            value: "second value".to_string(),
            namespace: "default".to_string(),
            key: Some("k".to_string()),
            metadata: None,
        })
        .unwrap_err();
    match &err {
        StoreError::DuplicateKey { id, key, namespace } => {
            assert_eq!(*id, first);
            assert_eq!(key, "k");
            assert_eq!(namespace, "default");
        }
        other => panic!("expected DuplicateKey, got {other:?}"),
    }
    assert!(err.to_string().contains("already exists"));
    assert_eq!(f.store.recall(&by_key("k")).unwrap().value, "first value");
    // The same key in another namespace is fine.
    put(&f.store, "other", Some("k"), "other value");
    assert_eq!(f.store.stats().unwrap().total, 2);
}

#[test]
fn secrets_are_scrubbed_before_they_are_persisted() {
    let f = fixture();
    let pat = fake_github_pat();
    let stored = f
        .store
        .store(StoreRequest {
            value: format!("deploy with token {pat} tomorrow"),
            namespace: "default".to_string(),
            key: Some("deploy".to_string()),
            metadata: Some(
                json!({"note": format!("uses {pat}"), "nested": [{"k": format!("x {pat}")}], "n": 1})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        })
        .unwrap();
    assert_eq!(stored.redactions, 3);
    assert_eq!(stored.redacted_rules, vec!["github-pat".to_string()]);
    let m = f.store.recall(&by_key("deploy")).unwrap();
    assert!(!m.value.contains(&pat));
    assert!(m.value.contains("[REDACTED:github-pat]"));
    assert_eq!(m.redactions, 3);
    assert!(!serde_json::to_string(&m.metadata).unwrap().contains(&pat));
    // Not a byte of the secret is in the database file, its WAL or the index.
    let path = f.store.path().unwrap().to_path_buf();
    f.store
        .with_connection(|c| c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)"))
        .unwrap();
    for file in [path.clone(), path.with_extension("sqlite3-wal")] {
        if let Ok(bytes) = std::fs::read(&file) {
            assert!(
                !bytes.windows(pat.len()).any(|w| w == pat.as_bytes()),
                "{} holds the secret",
                file.display()
            );
        }
    }
    // And the secret cannot be found by search.
    assert_eq!(search(&f.store, &pat).unwrap().count, 0);
}

#[test]
fn a_key_that_looks_like_a_secret_is_refused() {
    let f = fixture();
    let err = f
        .store
        .store(StoreRequest {
            value: "v".to_string(),
            namespace: "default".to_string(),
            key: Some(fake_github_pat()),
            metadata: None,
        })
        .unwrap_err();
    assert!(matches!(err, StoreError::SecretInKey { .. }), "{err:?}");
    assert_eq!(f.store.stats().unwrap().total, 0);
}

#[test]
fn a_namespace_that_looks_like_a_secret_is_refused() {
    let f = fixture();
    // Namespaces allow letters, digits and `._:/-`: enough for many tokens.
    for ns in [
        "AKIAQYLPMN5HHHFPZAM2",
        "xoxb-2401877309-1198277430455-a1B2c3D4e5F6g7H8i9J0k1L2",
        "team/sk-proj-a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6",
    ] {
        let err = f
            .store
            .store(StoreRequest {
                value: "v".to_string(),
                namespace: ns.to_string(),
                key: None,
                metadata: None,
            })
            .unwrap_err();
        assert!(
            matches!(err, StoreError::SecretInNamespace { .. }),
            "{ns}: {err:?}"
        );
    }
    assert_eq!(f.store.stats().unwrap().total, 0);
}

#[test]
fn invalid_inputs_are_errors() {
    let f = fixture();
    let bad = |value: &str, ns: &str, key: Option<&str>| {
        f.store
            .store(StoreRequest {
                value: value.to_string(),
                namespace: ns.to_string(),
                key: key.map(str::to_string),
                metadata: None,
            })
            .unwrap_err()
    };
    assert!(matches!(
        bad("", "default", None),
        StoreError::Invalid { field: "value", .. }
    ));
    assert!(matches!(
        bad("x", "a b", None),
        StoreError::Invalid {
            field: "namespace",
            ..
        }
    ));
    assert!(matches!(
        bad("x", "default", Some(" ")),
        StoreError::Invalid { field: "key", .. }
    ));
    assert!(matches!(
        bad(&"x".repeat(1024 * 1024 + 1), "default", None),
        StoreError::Invalid { field: "value", .. }
    ));
    assert!(f.store.recall(&Selector::default()).is_err());
    assert!(
        f.store
            .recall(&Selector {
                id: Some(1),
                key: Some("k".into()),
                namespace: None
            })
            .is_err()
    );
    assert!(matches!(
        f.store.recall(&by_key("missing")).unwrap_err(),
        StoreError::NotFound(_)
    ));
}

#[test]
fn top_k_bounds() {
    let f = fixture();
    for i in 0..60 {
        put(
            &f.store,
            "default",
            None,
            &format!("alpha entry number {i}"),
        );
    }
    let with_k = |k: u32| {
        f.store.search(&SearchRequest {
            query: "alpha".to_string(),
            namespace: "default".to_string(),
            top_k: Some(k),
            recency_half_life_days: None,
        })
    };
    assert_eq!(search(&f.store, "alpha").unwrap().count, 5);
    assert_eq!(with_k(1).unwrap().count, 1);
    assert_eq!(with_k(MAX_TOP_K).unwrap().count, 50);
    let err = with_k(MAX_TOP_K + 1).unwrap_err();
    assert!(err.to_string().contains("between 1 and 50"), "{err}");
    assert!(with_k(0).is_err());
}

#[test]
fn fts_special_characters_never_break_a_search() {
    let f = fixture();
    put(
        &f.store,
        "default",
        None,
        "fix(auth): C++ parser handles \"quoted\" col:val AND NEAR tokens-with-dashes",
    );
    for q in [
        "\"unterminated",
        "auth*",
        "col:val",
        "NEAR(auth parser, 3)",
        "AND OR NOT",
        "-auth",
        "^auth",
        "(auth",
        "auth)",
        "{value key}: auth",
        "C++",
        "'; DROP TABLE memories; --",
        "\u{0}auth",
        "tokens-with-dashes",
        "😀 auth",
    ] {
        let res = search(&f.store, q);
        assert!(res.is_ok(), "query {q:?} failed: {res:?}");
    }
    assert_eq!(search(&f.store, "NEAR(auth parser, 3)").unwrap().count, 1);
    assert_eq!(search(&f.store, "tokens-with-dashes").unwrap().count, 1);
    assert_eq!(
        search(&f.store, "'; DROP TABLE memories; --")
            .unwrap()
            .count,
        0
    );
    // Queries without any word are errors with a clear text, not crashes.
    for q in ["", "   ", "***", "\"", "\"\"", "😀"] {
        let err = search(&f.store, q).unwrap_err();
        assert!(err.to_string().contains("query"), "{q:?}: {err}");
    }
    assert_eq!(f.store.stats().unwrap().total, 1);
}

#[test]
fn bm25_ranks_better_matches_first() {
    let f = fixture();
    let weak = put(
        &f.store,
        "default",
        None,
        "a note that mentions migration once among many other words here",
    );
    let strong = put(
        &f.store,
        "default",
        None,
        "migration migration: schema migration plan",
    );
    put(&f.store, "default", None, "unrelated css tweak");
    let res = search(&f.store, "migration").unwrap();
    assert_eq!(
        res.hits.iter().map(|h| h.id).collect::<Vec<_>>(),
        vec![strong, weak]
    );
    assert!(res.hits[0].score > res.hits[1].score);
    assert!(res.hits.iter().all(|h| (h.decay - 1.0).abs() < 1e-12));
}

#[test]
fn recency_decay_prefers_newer_memories() {
    let f = fixture();
    let start = f.now.load(Ordering::SeqCst);
    // The old memory matches better, but is 60 days old.
    let old = put(
        &f.store,
        "default",
        None,
        "cache invalidation cache strategy",
    );
    f.now.store(start + 60 * DAY_MS, Ordering::SeqCst);
    let new = put(
        &f.store,
        "default",
        None,
        "cache layer notes for the new service design",
    );
    let ids = |half_life: Option<f64>| {
        f.store
            .search(&SearchRequest {
                query: "cache".to_string(),
                namespace: "default".to_string(),
                top_k: Some(10),
                recency_half_life_days: half_life,
            })
            .unwrap()
    };
    let plain = ids(None);
    assert_eq!(
        plain.hits.iter().map(|h| h.id).collect::<Vec<_>>(),
        vec![old, new]
    );
    let decayed = ids(Some(7.0));
    assert_eq!(
        decayed.hits.iter().map(|h| h.id).collect::<Vec<_>>(),
        vec![new, old]
    );
    let old_hit = &decayed.hits[1];
    assert!((old_hit.decay - 0.5f64.powf(60.0 / 7.0)).abs() < 1e-9);
    assert!((old_hit.score - old_hit.relevance * old_hit.decay).abs() < 1e-12);
    for bad in [0.0, -1.0, f64::NAN, 40_000.0] {
        assert!(
            f.store
                .search(&SearchRequest {
                    query: "cache".to_string(),
                    namespace: "default".to_string(),
                    top_k: None,
                    recency_half_life_days: Some(bad),
                })
                .is_err()
        );
    }
}

#[test]
fn failed_writes_roll_back_completely() {
    let f = fixture();
    put(
        &f.store,
        "default",
        Some("keep"),
        "kept value about rollback",
    );
    // Make the insert fail after the row and its index entry were written.
    f.store
        .with_connection(|c| {
            c.execute_batch(
                "CREATE TRIGGER boom AFTER INSERT ON memories WHEN new.value LIKE '%explode%'
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
            )
        })
        .unwrap();
    let err = f
        .store
        .store(StoreRequest {
            value: "this will explode rollback".to_string(),
            namespace: "default".to_string(),
            key: Some("boom".to_string()),
            metadata: None,
        })
        .unwrap_err();
    assert!(err.to_string().contains("injected failure"), "{err}");
    assert_eq!(f.store.stats().unwrap().total, 1);
    assert!(f.store.recall(&by_key("boom")).is_err());
    // The FTS index holds nothing of the failed write either.
    assert_eq!(search(&f.store, "explode").unwrap().count, 0);
    assert_eq!(search(&f.store, "rollback").unwrap().count, 1);
    let fts_rows: i64 = f
        .store
        .with_connection(|c| {
            c.query_row(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'rollback'",
                [],
                |r| r.get(0),
            )
        })
        .unwrap();
    assert_eq!(fts_rows, 1);
    // The store still works afterwards.
    put(&f.store, "default", Some("after"), "fine again");
    assert_eq!(f.store.stats().unwrap().total, 2);
}

#[test]
fn list_prefix_limit_and_order() {
    let f = fixture();
    let start = f.now.load(Ordering::SeqCst);
    for (i, key) in [
        "auth/jwt",
        "auth/session",
        "db/migration",
        "auth%",
        "auth_x",
    ]
    .iter()
    .enumerate()
    {
        f.now.store(start + i as i64 * 1000, Ordering::SeqCst);
        put(&f.store, "default", Some(key), &format!("value {i}"));
    }
    put(&f.store, "default", None, "no key");
    let list = |prefix: Option<&str>, limit: Option<u32>| {
        f.store.list(&ListRequest {
            namespace: "default".to_string(),
            prefix: prefix.map(str::to_string),
            limit,
        })
    };
    let all = list(None, None).unwrap();
    assert_eq!(all.total, 6);
    assert!(!all.truncated);
    assert_eq!(all.items[0].preview, "no key");
    let auth = list(Some("auth/"), None).unwrap();
    let keys: Vec<_> = auth.items.iter().map(|i| i.key.clone().unwrap()).collect();
    assert_eq!(keys, vec!["auth/session", "auth/jwt"]);
    // LIKE wildcards in the prefix are plain characters.
    assert_eq!(list(Some("auth%"), None).unwrap().total, 1);
    assert_eq!(list(Some("auth_"), None).unwrap().total, 1);
    let short = list(None, Some(2)).unwrap();
    assert_eq!(short.items.len(), 2);
    assert!(short.truncated);
    assert!(list(None, Some(MAX_LIST_LIMIT)).is_ok());
    assert!(list(None, Some(MAX_LIST_LIMIT + 1)).is_err());
    assert!(list(None, Some(0)).is_err());
}

#[test]
fn forget_by_id_and_by_key() {
    let f = fixture();
    let a = put(&f.store, "default", Some("a"), "alpha forgettable");
    let b = put(&f.store, "team", Some("b"), "beta forgettable");
    let gone = f.store.forget(&by_key("a")).unwrap();
    assert_eq!((gone.id, gone.status.as_str()), (a, "forgotten"));
    assert!(f.store.recall(&by_key("a")).is_err());
    assert_eq!(search(&f.store, "alpha").unwrap().count, 0);
    // An id with the wrong namespace is not found.
    assert!(
        f.store
            .forget(&Selector {
                id: Some(b),
                key: None,
                namespace: Some("default".into())
            })
            .is_err()
    );
    let gone = f
        .store
        .forget(&Selector {
            id: Some(b),
            ..Selector::default()
        })
        .unwrap();
    assert_eq!(gone.namespace, "team");
    assert_eq!(f.store.stats().unwrap().total, 0);
    // A forgotten key may be stored again; ids are never reused.
    let again = put(&f.store, "default", Some("a"), "alpha again");
    assert!(again > b);
}

#[test]
fn stats_count_per_namespace_and_size() {
    let f = fixture();
    put(&f.store, "b", None, "one");
    put(&f.store, "a", None, "two");
    put(&f.store, "a", None, "three");
    let s = f.store.stats().unwrap();
    assert_eq!(s.total, 3);
    let counts: Vec<_> = s
        .namespaces
        .iter()
        .map(|n| (n.namespace.as_str(), n.count))
        .collect();
    assert_eq!(counts, vec![("a", 2), ("b", 1)]);
    assert!(s.db_bytes > 0);
    assert!(s.file_bytes > 0);
    assert!(s.path.ends_with("memory.sqlite3"));
}

#[test]
fn reopening_keeps_memories() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.sqlite3");
    {
        let s = SqliteStore::open(&path).unwrap();
        put(&s, "default", Some("persist"), "survives a restart");
    }
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(
        s.recall(&by_key("persist")).unwrap().value,
        "survives a restart"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "database must be private to the user");
    }
}

#[test]
fn two_connections_share_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.sqlite3");
    let a = SqliteStore::open(&path).unwrap();
    let b = SqliteStore::open(&path).unwrap();
    put(&a, "default", Some("shared"), "written by a");
    assert!(
        b.store(StoreRequest {
            value: "written by b".into(),
            namespace: "default".into(),
            key: Some("shared".into()),
            metadata: None
        })
        .is_err()
    );
    assert_eq!(b.recall(&by_key("shared")).unwrap().value, "written by a");
}

#[test]
fn words_in_half_of_a_large_store_are_left_out_of_the_match() {
    let f = fixture();
    for i in 0..1000 {
        put(
            &f.store,
            "default",
            None,
            &format!("common filler note {i}"),
        );
    }
    let rare = put(&f.store, "default", None, "common but also rare");
    let res = search(&f.store, "common rare").unwrap();
    assert_eq!(res.terms, vec!["\"rare\"".to_string()]);
    assert_eq!(
        res.hits.iter().map(|h| h.id).collect::<Vec<_>>(),
        vec![rare]
    );
    // Alone, a common word is still searched for.
    let res = search(&f.store, "common").unwrap();
    assert_eq!(res.terms, vec!["\"common\"".to_string()]);
    assert_eq!(res.count, 5);
    // Non-ASCII and punctuated words are never looked up, so they stay.
    let res = search(&f.store, "Common café").unwrap();
    assert_eq!(res.terms, vec!["\"café\"".to_string()]);
}

#[test]
fn stopwords_are_left_out_when_other_words_remain() {
    let f = fixture();
    let auth = put(
        &f.store,
        "default",
        None,
        "the auth endpoint rotates tokens",
    );
    put(&f.store, "default", None, "the and of it");
    let res = search(&f.store, "The AUTH and the tokens").unwrap();
    assert_eq!(
        res.terms,
        vec!["\"AUTH\"".to_string(), "\"tokens\"".to_string()]
    );
    assert_eq!(
        res.hits.iter().map(|h| h.id).collect::<Vec<_>>(),
        vec![auth]
    );
    // Only stopwords: they are searched for.
    assert_eq!(search(&f.store, "the and").unwrap().count, 2);
}
