//! The memory store in PostgreSQL (`MNEMO_STORE=postgres://…`), shared by
//! the MCP servers of a team. Same contracts as [`SqliteStore`](super::SqliteStore):
//! everything is validated and scrubbed (fail closed) before it reaches the
//! database, a key that exists in its namespace is an error (one
//! `INSERT … ON CONFLICT DO NOTHING`, so two servers racing for one key
//! get one memory and one error), the same bounds. Full-text search uses a
//! stored `tsvector` (`simple` configuration: no stemming, so a word
//! matches as written, case-folded; the key weighted above the value) with
//! a GIN index, ranked by `ts_rank`, times the same recency decay; stopwords
//! and words found in half of a large namespace are left out of the match
//! as in SQLite. Only the
//! first 256 KiB of a value are indexed (PostgreSQL's `tsvector` is bounded
//! at 1 MB). Tables are versioned through `mnemo-postgres`'s migrations.

use super::{
    Clock, DEFAULT_LIST_LIMIT, DEFAULT_TOP_K, Forgotten, ListItem, ListRequest, ListResult,
    MAX_HALF_LIFE_DAYS, MAX_KEY_CHARS, MAX_LIST_LIMIT, MAX_TOP_K, Memory, MemoryStore,
    NamespaceCount, PRUNE_COMMON_FROM, Prepared, STOPWORDS, SearchHit, SearchRequest,
    SearchResults, Selector, StoreError, StoreRequest, StoreStats, Stored, Target, clean_query,
    describe, fts_query, invalid, parse_metadata, prepare, preview, query_words, quote_term,
    rfc3339_ms, system_clock, target, validate_namespace,
};
use mnemo_postgres::postgres::{Client, GenericClient, Row};
use mnemo_postgres::{Pg, PgError};

/// The component name of the memory tables in `mnemo_schema`.
pub const COMPONENT: &str = "mcp-memory";

/// Schema version of the memory tables this build writes.
pub const PG_SCHEMA_VERSION: i64 = 1;

/// Migrations: version `i + 1` is `MIGRATIONS[i]`. Append only.
pub const MIGRATIONS: &[&str] = &["
CREATE TABLE mcp_memories (
  id BIGSERIAL PRIMARY KEY, namespace TEXT NOT NULL, key TEXT, value TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT '{}', created_at BIGINT NOT NULL,
  redactions BIGINT NOT NULL DEFAULT 0,
  tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple', coalesce(key, '')), 'A')
    || setweight(to_tsvector('simple', left(value, 262144)), 'B')) STORED,
  UNIQUE (namespace, key));
CREATE INDEX mcp_memories_ns_time ON mcp_memories (namespace, created_at);
CREATE INDEX mcp_memories_tsv ON mcp_memories USING GIN (tsv);
"];

/// `$1` words, `$2` namespace, `$3` now (ms), `$4` half-life in days or
/// NULL, `$5` top_k. Each word becomes `plainto_tsquery` (user text is
/// never tsquery syntax), OR-ed.
const SEARCH_SQL: &str = "
WITH q AS (SELECT (SELECT string_agg(plainto_tsquery('simple', w)::text, ' | ')
                   FROM unnest($1::text[]) AS w
                   WHERE numnode(plainto_tsquery('simple', w)) > 0)::tsquery AS q)
SELECT id, key, value, metadata, created_at, relevance, decay FROM (
  SELECT m.id, m.key, m.value, m.metadata, m.created_at,
         ts_rank(m.tsv, q.q)::float8 AS relevance,
         CASE WHEN $4::float8 IS NULL THEN 1.0::float8
              ELSE power(0.5::float8, greatest($3::bigint - m.created_at, 0)::float8 / 86400000.0 / $4::float8)
         END AS decay
  FROM mcp_memories AS m, q
  WHERE m.namespace = $2 AND m.tsv @@ q.q) AS t
ORDER BY relevance * decay DESC, id DESC
LIMIT $5";

/// SQLite's common-word rule ([`PRUNE_COMMON_FROM`]): when two or more
/// words remain and the namespace holds [`PRUNE_COMMON_FROM`] memories or
/// more, the plain ASCII words found in at least half of them are left out
/// of the match, unless nothing would remain. Counted per namespace (a
/// team's database holds many; a search only ever sees one), with the GIN
/// index (`plainto_tsquery` of the word, as the search matches it).
fn prune_common(c: &mut Client, ns: &str, words: Vec<String>) -> Result<Vec<String>, StoreError> {
    if words.len() < 2 {
        return Ok(words);
    }
    let total: i64 = c
        .query_one(
            "SELECT count(*) FROM mcp_memories WHERE namespace = $1",
            &[&ns],
        )
        .map_err(db)?
        .get(0);
    if total < PRUNE_COMMON_FROM {
        return Ok(words);
    }
    let mut kept = Vec::new();
    for w in &words {
        let common = if w.chars().all(|ch| ch.is_ascii_alphanumeric()) {
            let df: i64 = c
                .query_one(
                    "SELECT count(*) FROM mcp_memories
                     WHERE namespace = $1 AND tsv @@ plainto_tsquery('simple', $2)",
                    &[&ns, w],
                )
                .map_err(db)?
                .get(0);
            df.saturating_mul(2) >= total
        } else {
            false
        };
        if !common {
            kept.push(w.clone());
        }
    }
    if kept.is_empty() {
        return Ok(words);
    }
    Ok(kept)
}

const COLUMNS: &str = "id, namespace, key, value, metadata, created_at, redactions";

/// The PostgreSQL implementation of [`MemoryStore`].
pub struct PostgresMemoryStore {
    pg: Pg,
    target: String,
    clock: Clock,
}

impl std::fmt::Debug for PostgresMemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresMemoryStore")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

fn pg(e: PgError) -> StoreError {
    StoreError::Postgres(e.to_string())
}

fn db(e: mnemo_postgres::postgres::Error) -> StoreError {
    pg(PgError::Db(e))
}

fn memory_from(r: &Row) -> Result<Memory, StoreError> {
    let meta: String = r.get(4);
    Ok(Memory {
        id: r.get(0),
        namespace: r.get(1),
        key: r.get(2),
        value: r.get(3),
        metadata: parse_metadata(&meta)?,
        created_at: rfc3339_ms(r.get(5)),
        redactions: r.get(6),
    })
}

fn find(
    c: &mut impl GenericClient,
    t: &Target<'_>,
    lock: bool,
) -> Result<Option<Row>, mnemo_postgres::postgres::Error> {
    let for_update = if lock { " FOR UPDATE" } else { "" };
    match t {
        Target::Id(id, ns) => c.query_opt(
            &format!("SELECT {COLUMNS} FROM mcp_memories WHERE id = $1 AND ($2::text IS NULL OR namespace = $2){for_update}"),
            &[id, ns],
        ),
        Target::Key(key, ns) => c.query_opt(
            &format!("SELECT {COLUMNS} FROM mcp_memories WHERE namespace = $1 AND key = $2{for_update}"),
            &[ns, key],
        ),
    }
}

/// An owned [`Target`], to cross to the connection's thread.
enum OwnedTarget {
    Id(i64, Option<String>),
    Key(String, String),
}

impl OwnedTarget {
    fn of(t: &Target<'_>) -> Self {
        match t {
            Target::Id(id, ns) => OwnedTarget::Id(*id, ns.map(str::to_string)),
            Target::Key(k, ns) => OwnedTarget::Key(k.to_string(), ns.to_string()),
        }
    }
    fn borrow(&self) -> Target<'_> {
        match self {
            OwnedTarget::Id(id, ns) => Target::Id(*id, ns.as_deref()),
            OwnedTarget::Key(k, ns) => Target::Key(k, ns),
        }
    }
}

impl PostgresMemoryStore {
    /// Connects to `url` and applies the memory tables' migrations
    /// (refusing a database a newer mnemo wrote).
    pub fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with_clock(url, system_clock())
    }

    /// [`PostgresMemoryStore::open`] with a given clock (tests).
    pub fn open_with_clock(url: &str, clock: Clock) -> Result<Self, StoreError> {
        let conn = Pg::connect(url).map_err(pg)?;
        conn.migrate(COMPONENT, MIGRATIONS).map_err(pg)?;
        Ok(PostgresMemoryStore {
            pg: conn,
            target: mnemo_postgres::redact_url(url),
            clock,
        })
    }

    fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.pg.call(f).map_err(pg)?
    }
}

impl MemoryStore for PostgresMemoryStore {
    fn store(&self, req: StoreRequest) -> Result<Stored, StoreError> {
        let Prepared {
            value: text,
            metadata: metadata_text,
            redactions,
            rules,
        } = prepare(&req)?;
        let now = (self.clock)();
        let (ns, key) = (req.namespace.clone(), req.key.clone());
        let n = i64::try_from(redactions).unwrap_or(i64::MAX);
        let id = self.call(move |c| {
            let row = c
                .query_opt(
                    "INSERT INTO mcp_memories (namespace, key, value, metadata, created_at, redactions)
                     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (namespace, key) DO NOTHING RETURNING id",
                    &[&ns, &key, &text, &metadata_text, &now, &n],
                )
                .map_err(db)?;
            match row {
                Some(r) => Ok(Ok(r.get::<_, i64>(0))),
                None => {
                    let existing = c
                        .query_opt(
                            "SELECT id FROM mcp_memories WHERE namespace = $1 AND key = $2",
                            &[&ns, &key],
                        )
                        .map_err(db)?
                        .map_or(0, |r| r.get::<_, i64>(0));
                    Ok(Err(existing))
                }
            }
        })?;
        match id {
            Ok(id) => Ok(Stored {
                id,
                namespace: req.namespace,
                key: req.key,
                status: "stored".to_string(),
                redactions,
                redacted_rules: rules,
                created_at: rfc3339_ms(now),
            }),
            Err(existing) => Err(StoreError::DuplicateKey {
                namespace: req.namespace,
                key: req.key.unwrap_or_default(),
                id: existing,
            }),
        }
    }

    fn search(&self, req: &SearchRequest) -> Result<SearchResults, StoreError> {
        validate_namespace(&req.namespace)?;
        let top_k = req.top_k.unwrap_or(DEFAULT_TOP_K);
        if !(1..=MAX_TOP_K).contains(&top_k) {
            return Err(invalid(
                "top_k",
                format!("is {top_k}; it must be between 1 and {MAX_TOP_K}"),
            ));
        }
        if let Some(h) = req.recency_half_life_days
            && !(h > 0.0 && h <= MAX_HALF_LIFE_DAYS)
        {
            return Err(invalid(
                "recency_half_life_days",
                format!("is {h}; it must be more than 0 and at most {MAX_HALF_LIFE_DAYS}"),
            ));
        }
        fts_query(&req.query)?;
        let cleaned = clean_query(&req.query);
        let all = query_words(&cleaned);
        let content: Vec<&str> = all
            .iter()
            .copied()
            .filter(|w| !STOPWORDS.contains(&w.to_ascii_lowercase().as_str()))
            .collect();
        let words: Vec<String> = if content.is_empty() { all } else { content }
            .into_iter()
            .map(str::to_string)
            .collect();
        let now = (self.clock)();
        let (ns, half) = (req.namespace.clone(), req.recency_half_life_days);
        let limit = i64::from(top_k);
        let (words, rows) = self.call(move |c| {
            let words = prune_common(c, &ns, words)?;
            let rows = c
                .query(SEARCH_SQL, &[&words, &ns, &now, &half, &limit])
                .map_err(db)?;
            Ok((words, rows))
        })?;
        let terms: Vec<String> = words.iter().map(|w| quote_term(w)).collect();
        let mut hits = Vec::new();
        for r in rows {
            let meta: String = r.get(3);
            let relevance: f64 = r.get(5);
            let decay: f64 = r.get(6);
            hits.push(SearchHit {
                id: r.get(0),
                key: r.get(1),
                value: r.get(2),
                metadata: parse_metadata(&meta)?,
                created_at: rfc3339_ms(r.get(4)),
                score: relevance * decay,
                relevance,
                decay,
            });
        }
        Ok(SearchResults {
            namespace: req.namespace.clone(),
            terms,
            count: hits.len(),
            hits,
        })
    }

    fn recall(&self, sel: &Selector) -> Result<Memory, StoreError> {
        let t = target(sel)?;
        let owned = OwnedTarget::of(&t);
        let row = self.call(move |c| find(c, &owned.borrow(), false).map_err(db))?;
        match row {
            Some(r) => memory_from(&r),
            None => Err(StoreError::NotFound(describe(&t))),
        }
    }

    fn list(&self, req: &ListRequest) -> Result<ListResult, StoreError> {
        validate_namespace(&req.namespace)?;
        let limit = req.limit.unwrap_or(DEFAULT_LIST_LIMIT);
        if !(1..=MAX_LIST_LIMIT).contains(&limit) {
            return Err(invalid(
                "limit",
                format!("is {limit}; it must be between 1 and {MAX_LIST_LIMIT}"),
            ));
        }
        if let Some(p) = req.prefix.as_deref()
            && p.chars().count() > MAX_KEY_CHARS
        {
            return Err(invalid(
                "prefix",
                format!("is longer than {MAX_KEY_CHARS} characters"),
            ));
        }
        let prefix = req.prefix.clone().filter(|p| !p.is_empty());
        let ns = req.namespace.clone();
        let lim = i64::from(limit);
        // starts_with, not LIKE: the prefix is plain text, never a pattern.
        let filter =
            "namespace = $1 AND ($2::text IS NULL OR (key IS NOT NULL AND starts_with(key, $2)))";
        let (total, rows) = self.call(move |c| {
            let total: i64 = c
                .query_one(
                    &format!("SELECT count(*) FROM mcp_memories WHERE {filter}"),
                    &[&ns, &prefix],
                )
                .map_err(db)?
                .get(0);
            let rows = c
                .query(
                    &format!(
                        "SELECT id, key, value, created_at FROM mcp_memories WHERE {filter}
                         ORDER BY created_at DESC, id DESC LIMIT $3"
                    ),
                    &[&ns, &prefix, &lim],
                )
                .map_err(db)?;
            Ok((total, rows))
        })?;
        let items: Vec<ListItem> = rows
            .iter()
            .map(|r| {
                let value: String = r.get(2);
                ListItem {
                    id: r.get(0),
                    key: r.get(1),
                    created_at: rfc3339_ms(r.get(3)),
                    chars: value.chars().count(),
                    preview: preview(&value),
                }
            })
            .collect();
        let total = u64::try_from(total).unwrap_or(0);
        Ok(ListResult {
            namespace: req.namespace.clone(),
            prefix: req.prefix.clone(),
            total,
            truncated: total > items.len() as u64,
            items,
        })
    }

    fn forget(&self, sel: &Selector) -> Result<Forgotten, StoreError> {
        let t = target(sel)?;
        let owned = OwnedTarget::of(&t);
        let row = self.call(move |c| {
            let mut tx = c.transaction().map_err(db)?;
            let row = find(&mut tx, &owned.borrow(), true).map_err(db)?;
            if let Some(r) = &row {
                let id: i64 = r.get(0);
                tx.execute("DELETE FROM mcp_memories WHERE id = $1", &[&id])
                    .map_err(db)?;
            }
            tx.commit().map_err(db)?;
            Ok(row)
        })?;
        let Some(r) = row else {
            return Err(StoreError::NotFound(describe(&t)));
        };
        Ok(Forgotten {
            id: r.get(0),
            namespace: r.get(1),
            key: r.get(2),
            status: "forgotten".to_string(),
        })
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        let (rows, bytes) = self.call(|c| {
            let rows = c
                .query(
                    "SELECT namespace, count(*) FROM mcp_memories GROUP BY namespace ORDER BY namespace",
                    &[],
                )
                .map_err(db)?;
            let bytes: i64 = c
                .query_one("SELECT pg_total_relation_size('mcp_memories')", &[])
                .map_err(db)?
                .get(0);
            Ok((rows, bytes))
        })?;
        let namespaces: Vec<NamespaceCount> = rows
            .iter()
            .map(|r| NamespaceCount {
                namespace: r.get(0),
                count: u64::try_from(r.get::<_, i64>(1)).unwrap_or(0),
            })
            .collect();
        let bytes = u64::try_from(bytes).unwrap_or(0);
        Ok(StoreStats {
            path: self.target.clone(),
            total: namespaces.iter().map(|n| n.count).sum(),
            namespaces,
            db_bytes: bytes,
            file_bytes: bytes,
            schema_version: PG_SCHEMA_VERSION,
        })
    }
}
