//! One set of memory-store contract checks, run against SQLite and against
//! PostgreSQL (`$MNEMO_TEST_POSTGRES_URL`, set by
//! `.ci/setup.d/30-postgres.sh`; under CI=true its absence fails). The
//! PostgreSQL database outlives test runs, so every check works in
//! namespaces of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use mnemo_mcp::store::postgres::PostgresMemoryStore;
use mnemo_mcp::store::{
    ListRequest, MAX_TOP_K, MemoryStore, SearchRequest, Selector, SqliteStore, StoreError,
    StoreRequest,
};
use serde_json::json;

const DAY_MS: i64 = 86_400_000;

/// A fake GitHub token, built at run time so that no scanner flags this file.
fn fake_github_pat() -> String {
    format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
}

fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("t{}-{nanos}", std::process::id())
}

fn put(s: &dyn MemoryStore, ns: &str, key: Option<&str>, value: &str) -> Result<i64, StoreError> {
    s.store(StoreRequest {
        value: value.to_string(),
        namespace: ns.to_string(),
        key: key.map(str::to_string),
        metadata: None,
    })
    .map(|r| r.id)
}

fn search(
    s: &dyn MemoryStore,
    ns: &str,
    q: &str,
    top_k: Option<u32>,
    half: Option<f64>,
) -> Result<mnemo_mcp::store::SearchResults, StoreError> {
    s.search(&SearchRequest {
        query: q.to_string(),
        namespace: ns.to_string(),
        top_k,
        recency_half_life_days: half,
    })
}

fn key_in(ns: &str, key: &str) -> Selector {
    Selector {
        key: Some(key.to_string()),
        namespace: Some(ns.to_string()),
        ..Selector::default()
    }
}

/// Every contract of the memory store; `now` is the store's clock.
fn conformance(s: &dyn MemoryStore, now: &AtomicI64, p: &str) {
    let ns = format!("{p}/a");
    let other = format!("{p}/b");
    // Store and recall; the answer names what was stored.
    let stored = s
        .store(StoreRequest {
            value: "the deploy script lives in tools/deploy.sh".into(),
            namespace: ns.clone(),
            key: Some("deploy".into()),
            metadata: Some(json!({"by": "agent-1"}).as_object().unwrap().clone()),
        })
        .unwrap();
    assert_eq!(stored.status, "stored");
    assert_eq!(stored.namespace, ns);
    assert_eq!(stored.redactions, 0);
    let m = s.recall(&key_in(&ns, "deploy")).unwrap();
    assert_eq!(m.id, stored.id);
    assert_eq!(m.metadata["by"], "agent-1");
    let by_id = s
        .recall(&Selector {
            id: Some(stored.id),
            ..Selector::default()
        })
        .unwrap();
    assert_eq!(by_id, m);
    assert!(matches!(
        s.recall(&Selector {
            id: Some(stored.id),
            namespace: Some(other.clone()),
            key: None
        }),
        Err(StoreError::NotFound(_))
    ));

    // A duplicate key is an error, never an overwrite; other namespaces are apart.
    let dup = put(s, &ns, Some("deploy"), "something else");
    assert!(
        matches!(&dup, Err(StoreError::DuplicateKey { id, .. }) if *id == stored.id),
        "{dup:?}"
    );
    assert_eq!(s.recall(&key_in(&ns, "deploy")).unwrap().value, m.value);
    put(s, &other, Some("deploy"), "another namespace").unwrap();
    put(s, &ns, None, "no key one").unwrap();
    put(s, &ns, None, "no key two").unwrap();

    // Scrub before persist: value and every metadata string; a secret key is refused.
    let pat = fake_github_pat();
    let st = s
        .store(StoreRequest {
            value: format!("token {pat} for ci"),
            namespace: ns.clone(),
            key: Some("token".into()),
            metadata: Some(
                json!({"note": format!("uses {pat}"), format!("x {pat}"): [format!("{pat}")]})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        })
        .unwrap();
    assert_eq!(st.redactions, 4);
    assert_eq!(st.redacted_rules, vec!["github-pat".to_string()]);
    let t = s.recall(&key_in(&ns, "token")).unwrap();
    assert!(t.value.contains("[REDACTED:github-pat]") && !t.value.contains(&pat));
    assert!(!serde_json::to_string(&t.metadata).unwrap().contains(&pat));
    assert_eq!(
        search(s, &ns, &pat, None, None).unwrap().count,
        0,
        "no secret in the index"
    );
    assert!(matches!(
        put(s, &ns, Some(&format!("key-{pat}")), "v"),
        Err(StoreError::SecretInKey { .. })
    ));

    // A namespace is kept verbatim too: one that looks like a secret is refused.
    // (Not under the test's prefix: namespaces are at most 64 characters.)
    for bad in ["AKIAQYLPMN5HHHFPZAM2".to_string(), format!("team/{pat}")] {
        assert!(
            matches!(
                put(s, &bad, None, "v"),
                Err(StoreError::SecretInNamespace { .. })
            ),
            "{bad}"
        );
    }
    assert!(
        s.stats()
            .unwrap()
            .namespaces
            .iter()
            .all(|c| !c.namespace.contains(&pat) && !c.namespace.contains("AKIA")),
        "nothing stored under a secret namespace"
    );

    // Bounds.
    assert!(matches!(
        put(s, &ns, None, "  "),
        Err(StoreError::Invalid { field: "value", .. })
    ));
    assert!(matches!(
        put(s, "bad ns", None, "v"),
        Err(StoreError::Invalid {
            field: "namespace",
            ..
        })
    ));
    assert!(matches!(
        put(s, &ns, None, &"x".repeat(1024 * 1024 + 1)),
        Err(StoreError::Invalid { field: "value", .. })
    ));
    assert!(matches!(
        search(s, &ns, "deploy", Some(MAX_TOP_K + 1), None),
        Err(StoreError::Invalid { field: "top_k", .. })
    ));
    assert!(matches!(
        search(s, &ns, "deploy", Some(0), None),
        Err(StoreError::Invalid { .. })
    ));
    assert!(matches!(
        search(s, &ns, "deploy", None, Some(0.0)),
        Err(StoreError::Invalid { .. })
    ));
    assert!(matches!(
        search(s, &ns, " *** ", None, None),
        Err(StoreError::Invalid { field: "query", .. })
    ));

    // Full-text search: better matches first, namespace-scoped, syntax is text.
    let fts = format!("{p}/fts");
    let one = put(s, &fts, None, "postgres replication lag alert fired").unwrap();
    let two = put(
        s,
        &fts,
        None,
        "postgres replication lag alert on replica two, replication lag again",
    )
    .unwrap();
    put(s, &fts, None, "unrelated note about lunch").unwrap();
    let r = search(s, &fts, "replication lag", None, None).unwrap();
    assert_eq!(r.count, 2, "{r:?}");
    assert_eq!(r.hits[0].id, two, "more occurrences rank higher: {r:?}");
    assert_eq!(r.hits[1].id, one);
    assert!(r.hits[0].relevance > r.hits[1].relevance);
    assert!(r.hits.iter().all(|h| (h.decay - 1.0).abs() < 1e-12));
    assert_eq!(
        search(s, &fts, "the lunch", None, None).unwrap().count,
        1,
        "stopwords left out"
    );
    assert_eq!(
        search(s, &other, "replication", None, None).unwrap().count,
        0
    );
    for q in [
        r#"replication" OR "x"#,
        "lag:* & !x",
        "NEAR(a b) -not *",
        "'; DROP TABLE x; --",
        "a\u{0}b",
    ] {
        assert!(search(s, &fts, q, None, None).is_ok(), "{q:?}");
    }
    assert_eq!(search(s, &fts, "postgres", Some(1), None).unwrap().count, 1);

    // Recency decay prefers newer memories of equal relevance.
    let dec = format!("{p}/decay");
    let t0 = now.load(Ordering::SeqCst);
    let old = put(s, &dec, None, "rotation of the signing keys").unwrap();
    now.store(t0 + 30 * DAY_MS, Ordering::SeqCst);
    let new = put(s, &dec, None, "rotation of the signing keys").unwrap();
    let r = search(s, &dec, "rotation keys", None, Some(30.0)).unwrap();
    assert_eq!(
        r.hits.iter().map(|h| h.id).collect::<Vec<_>>(),
        vec![new, old]
    );
    assert!((r.hits[1].decay - 0.5).abs() < 1e-9, "{r:?}");

    // List: newest first, prefix is plain text, limit and truncation.
    let ls = format!("{p}/list");
    for (i, k) in ["a/1", "a/2", "a%", "b/1"].iter().enumerate() {
        now.store(t0 + 40 * DAY_MS + i as i64, Ordering::SeqCst);
        put(s, &ls, Some(k), &format!("value {k}")).unwrap();
    }
    put(s, &ls, None, "no key").unwrap();
    let l = s
        .list(&ListRequest {
            namespace: ls.clone(),
            prefix: Some("a".into()),
            limit: Some(2),
        })
        .unwrap();
    assert_eq!(l.total, 3);
    assert!(l.truncated);
    assert_eq!(
        l.items
            .iter()
            .map(|i| i.key.clone().unwrap())
            .collect::<Vec<_>>(),
        vec!["a%", "a/2"]
    );
    let pct = s
        .list(&ListRequest {
            namespace: ls.clone(),
            prefix: Some("a%".into()),
            limit: None,
        })
        .unwrap();
    assert_eq!(pct.total, 1, "% is not a pattern");
    assert!(
        s.list(&ListRequest {
            namespace: ls.clone(),
            prefix: None,
            limit: Some(501),
        })
        .is_err()
    );
    let all = s
        .list(&ListRequest {
            namespace: ls.clone(),
            prefix: None,
            limit: None,
        })
        .unwrap();
    assert_eq!(all.total, 5);
    assert!(!all.truncated);

    // Forget by key and by id; then the key is free again.
    let f = s.forget(&key_in(&ns, "deploy")).unwrap();
    assert_eq!((f.id, f.status.as_str()), (stored.id, "forgotten"));
    assert!(matches!(
        s.forget(&key_in(&ns, "deploy")),
        Err(StoreError::NotFound(_))
    ));
    put(s, &ns, Some("deploy"), "again").unwrap();
    s.forget(&Selector {
        id: Some(one),
        ..Selector::default()
    })
    .unwrap();
    assert_eq!(search(s, &fts, "replication", None, None).unwrap().count, 1);

    // Stats count per namespace.
    let stats = s.stats().unwrap();
    let count = |n: &str| {
        stats
            .namespaces
            .iter()
            .find(|c| c.namespace == n)
            .map(|c| c.count)
    };
    assert_eq!(count(&ns), Some(4));
    assert_eq!(count(&ls), Some(5));
    assert!(stats.total >= 14);
}

/// Words found in half of a namespace of 1,000 memories or more are left
/// out of the match when other words remain; alone they are searched for.
fn common_words(s: &dyn MemoryStore, p: &str) {
    let ns = format!("{p}/common");
    for i in 0..1000 {
        put(s, &ns, None, &format!("common filler note {i}")).unwrap();
    }
    let rare = put(s, &ns, None, "common but also rare").unwrap();
    let res = search(s, &ns, "common rare", None, None).unwrap();
    assert_eq!(res.terms, vec!["\"rare\"".to_string()]);
    assert_eq!(
        res.hits.iter().map(|h| h.id).collect::<Vec<_>>(),
        vec![rare]
    );
    let res = search(s, &ns, "common", None, None).unwrap();
    assert_eq!(res.terms, vec!["\"common\"".to_string()]);
    assert_eq!(res.count, 5);
    // Non-ASCII words are never looked up, so they stay.
    let res = search(s, &ns, "Common café", None, None).unwrap();
    assert_eq!(res.terms, vec!["\"café\"".to_string()]);
}

#[test]
fn sqlite_drops_common_words() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("m.sqlite3")).unwrap();
    common_words(&s, "lite");
}

#[test]
fn postgres_drops_common_words() {
    let Some(url) = pg_url() else { return };
    let s = PostgresMemoryStore::open(&url).unwrap();
    common_words(&s, &unique());
}

fn clock() -> (Arc<AtomicI64>, mnemo_mcp::store::Clock) {
    let now = Arc::new(AtomicI64::new(1_796_085_901_000));
    let c = Arc::clone(&now);
    (now, Arc::new(move || c.load(Ordering::SeqCst)))
}

#[test]
fn sqlite_memory_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let (now, clock) = clock();
    let s = SqliteStore::open_with_clock(&dir.path().join("m.sqlite3"), clock).unwrap();
    conformance(&s, &now, "lite");
}

fn pg_url() -> Option<String> {
    mnemo_testkit::require_env(
        "MNEMO_TEST_POSTGRES_URL",
        "the PostgreSQL memory store tests need a database (.ci/setup.d/30-postgres.sh)",
    )
}

#[test]
fn postgres_memory_store_conforms() {
    let Some(url) = pg_url() else { return };
    let (now, clock) = clock();
    let s = PostgresMemoryStore::open_with_clock(&url, clock).unwrap();
    let p = unique();
    conformance(&s, &now, &p);
    // Not a byte of the secret reached a row (value, metadata or index).
    let pg = mnemo_postgres::Pg::connect(&url).unwrap();
    let (pat, like) = (fake_github_pat(), format!("{p}/%"));
    let n: i64 = pg
        .call(move |c| {
            c.query_one(
                "SELECT count(*) FROM mcp_memories WHERE namespace LIKE $2 AND
                 (strpos(value, $1) > 0 OR strpos(metadata, $1) > 0 OR strpos(tsv::text, lower($1)) > 0)",
                &[&pat, &like],
            )
            .map(|r| r.get(0))
        })
        .unwrap()
        .unwrap();
    assert_eq!(n, 0);
}

#[test]
fn two_postgres_servers_racing_for_one_key_store_one_memory() {
    let Some(url) = pg_url() else { return };
    let ns = format!("{}/race", unique());
    let stores: Vec<Arc<PostgresMemoryStore>> = (0..2)
        .map(|_| Arc::new(PostgresMemoryStore::open(&url).unwrap()))
        .collect();
    let keys = 50;
    let workers: Vec<_> = stores
        .iter()
        .map(|s| {
            let (s, ns) = (Arc::clone(s), ns.clone());
            std::thread::spawn(move || {
                (0..keys)
                    .map(|k| put(s.as_ref(), &ns, Some(&format!("k{k}")), "v").is_ok())
                    .filter(|ok| *ok)
                    .count()
            })
        })
        .collect();
    let won: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    assert_eq!(won, keys, "each key stored exactly once");
    let l = stores[0]
        .list(&ListRequest {
            namespace: ns,
            prefix: None,
            limit: Some(500),
        })
        .unwrap();
    assert_eq!(l.total, keys as u64);
}
