//! The memory store: memories of agents, kept in embedded SQLite with an FTS5
//! full-text index, scrubbed of secrets before anything is persisted.
//!
//! Contracts (what MCP clients rely on):
//!
//! * `store` takes `value`, `namespace` (default `"default"`), an optional
//!   `key` and optional `metadata` (a JSON object). The value and every string
//!   of the metadata (object keys included) pass the scrubber first; the
//!   answer is `{id, namespace, key, status: "stored", redactions: N, …}`.
//!   Keys are kept verbatim, so a key that looks like a secret is refused.
//!   A key that already exists in the namespace is an error, never an
//!   overwrite.
//! * `search` ranks by BM25 over the value (and, weighted twice, the key),
//!   optionally multiplied by a recency decay `0.5^(age / half_life)`.
//!   `top_k` defaults to 5 and must be 1..=50 (larger is an error, not
//!   clamped). User text never reaches FTS5 as syntax: each
//!   whitespace-separated word becomes a quoted phrase, joined with `OR`.
//!   English stopwords, and in stores of 1,000 memories or more the words
//!   that occur in at least half of them, are left out of the match when
//!   other words remain (BM25 gives them next to no weight; scoring them
//!   would mean scoring most of the table).
//! * `recall` and `forget` select by `id` or by `key` (in a namespace).
//! * `list` takes a namespace, an optional key prefix and a limit (1..=500,
//!   default 50), newest first.
//! * `stats` counts memories per namespace and reports the database size.
//!
//! Every write is one `BEGIN IMMEDIATE` transaction; the FTS index is kept in
//! step by triggers inside the same transaction, so a failed write leaves
//! nothing behind. Deleted rows are overwritten on disk (`secure_delete`).
//! The database runs in WAL mode with `synchronous = NORMAL`: atomic and
//! consistent after any crash; a power loss may lose the last commits.

pub mod postgres;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mnemo_scrub::Scrubber;
use rusqlite::functions::FunctionFlags;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// File name of the database inside the data directory.
pub const DB_FILE: &str = "memory.sqlite3";
/// Namespace used when a request names none.
pub const DEFAULT_NAMESPACE: &str = "default";
/// Longest namespace, in characters.
pub const MAX_NAMESPACE_CHARS: usize = 64;
/// Longest key, in characters.
pub const MAX_KEY_CHARS: usize = 256;
/// Largest value, in bytes (UTF-8).
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;
/// Largest metadata object, in bytes of compact JSON.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;
/// `top_k` when a search names none.
pub const DEFAULT_TOP_K: u32 = 5;
/// Largest `top_k` of a search.
pub const MAX_TOP_K: u32 = 50;
/// `limit` when a list names none.
pub const DEFAULT_LIST_LIMIT: u32 = 50;
/// Largest `limit` of a list.
pub const MAX_LIST_LIMIT: u32 = 500;
/// Longest search query, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;
/// Most words of a query that are searched for; later ones are ignored.
pub const MAX_QUERY_TERMS: usize = 32;
/// Stores with at least this many memories leave out of a search's match
/// the words that occur in half of them or more (see [`SqliteStore`]'s search).
pub const PRUNE_COMMON_FROM: i64 = 1000;
/// English function words. A search leaves them out of its match when the
/// query has other words: they occur in most memories, carry almost no BM25
/// weight, and would make FTS5 score most of the table.
pub const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "both", "but", "by", "can", "could", "did", "do", "does", "each", "for", "from",
    "had", "has", "have", "he", "her", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "just", "may", "me", "might", "more", "most", "my", "no", "not", "of", "on", "only", "or",
    "other", "our", "out", "over", "same", "she", "should", "so", "some", "such", "than", "that",
    "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "up",
    "us", "very", "via", "was", "we", "were", "what", "when", "where", "which", "while", "who",
    "why", "will", "with", "would", "you", "your",
];
/// Longest recency half-life, in days (100 years).
pub const MAX_HALF_LIFE_DAYS: f64 = 36_500.0;
/// Characters of a value shown by `list`.
pub const PREVIEW_CHARS: usize = 120;
/// Schema version written to `PRAGMA user_version`.
pub const SCHEMA_VERSION: i64 = 1;

const MS_PER_DAY: f64 = 86_400_000.0;

/// What can go wrong in the store. Every variant words what the caller can do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A request field is out of its contract.
    #[error("invalid `{field}`: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// The key exists already in the namespace.
    #[error(
        "a memory with key {key:?} already exists in namespace {namespace:?} (id {id}); keys are never overwritten: forget it first or choose another key"
    )]
    DuplicateKey {
        /// The namespace.
        namespace: String,
        /// The key.
        key: String,
        /// Id of the existing memory.
        id: i64,
    },
    /// A key looks like a secret.
    #[error(
        "the key looks like it contains a secret ({rules}); keys are stored verbatim, so choose a key without it"
    )]
    SecretInKey {
        /// The rules that fired, comma-separated.
        rules: String,
    },
    /// A namespace looks like a secret.
    #[error(
        "the namespace looks like it contains a secret ({rules}); namespaces are stored verbatim, so choose one without it"
    )]
    SecretInNamespace {
        /// The rules that fired, comma-separated.
        rules: String,
    },
    /// No memory matches the selector.
    #[error("no memory {0}")]
    NotFound(String),
    /// The scrubber could not be loaded or did not clean the text: nothing was stored.
    #[error("the secret scrubber failed, nothing was stored: {0}")]
    Scrubber(String),
    /// No data directory could be found.
    #[error(
        "cannot locate the memory store: set MNEMO_HOME (or XDG_DATA_HOME, or HOME) to a directory"
    )]
    NoDataDir,
    /// The database could not be opened or created.
    #[error("cannot open the memory store {path}: {reason}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A database was written by a newer mnemo.
    #[error(
        "the memory store {path} has schema version {found}, newer than this mnemo understands ({SCHEMA_VERSION}); upgrade mnemo"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
    },
    /// SQLite failed.
    #[error("memory store error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL failed (connecting, a statement, or a schema too new).
    #[error("memory store error: {0}")]
    Postgres(String),
    /// Stored metadata could not be read back as JSON.
    #[error("memory store error: stored metadata is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A thread panicked while it held the connection.
    #[error("the memory store is unusable after an internal failure; restart the server")]
    Poisoned,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> StoreError {
    StoreError::Invalid {
        field,
        reason: reason.into(),
    }
}

fn default_namespace() -> String {
    DEFAULT_NAMESPACE.to_string()
}

/// Arguments of `memory_store`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreRequest {
    /// The text to remember (at most 1 MiB). Secrets in it are redacted before it is persisted.
    pub value: String,
    /// Namespace: 1-64 characters of letters, digits and `._:/-`.
    #[serde(default = "default_namespace")]
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9._:/-]+$"))]
    pub namespace: String,
    /// Optional key, unique in the namespace (at most 256 characters). Storing a key that exists is an error, never an overwrite.
    #[serde(default)]
    #[schemars(length(min = 1, max = 256))]
    pub key: Option<String>,
    /// Optional JSON object (at most 64 KiB). Every string in it, object keys included, is scrubbed.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// Answer of `memory_store`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Stored {
    /// Id of the new memory (never reused).
    pub id: i64,
    /// Its namespace.
    pub namespace: String,
    /// Its key, if any.
    pub key: Option<String>,
    /// Always `"stored"`.
    pub status: String,
    /// How many secrets were redacted from the value and the metadata.
    pub redactions: usize,
    /// The scrubbing rules that fired, sorted, without repeats.
    pub redacted_rules: Vec<String>,
    /// When it was stored (RFC 3339, UTC).
    pub created_at: String,
}

/// Arguments of `memory_search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// Words to look for (full-text, any word may match; better matches rank higher). No query syntax: quotes, `*`, `:`, `-`, `NEAR` and the like are plain text.
    pub query: String,
    /// Namespace to search.
    #[serde(default = "default_namespace")]
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9._:/-]+$"))]
    pub namespace: String,
    /// How many hits to return: 1-50, default 5. Larger values are an error, not clamped.
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub top_k: Option<u32>,
    /// Optional recency decay: a memory this many days old counts half as much (0 < days <= 36500).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 36500.0))]
    pub recency_half_life_days: Option<f64>,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SearchHit {
    /// Id of the memory.
    pub id: i64,
    /// Its key, if any.
    pub key: Option<String>,
    /// The (scrubbed) value.
    pub value: String,
    /// The (scrubbed) metadata.
    pub metadata: Map<String, Value>,
    /// When it was stored (RFC 3339, UTC).
    pub created_at: String,
    /// Ranking score: `relevance * decay`, higher is better.
    pub score: f64,
    /// BM25 relevance (the negated FTS5 `bm25()`), higher is better.
    pub relevance: f64,
    /// Recency factor in (0, 1]; 1 without `recency_half_life_days`.
    pub decay: f64,
}

/// Answer of `memory_search`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SearchResults {
    /// The namespace searched.
    pub namespace: String,
    /// The words searched for, as FTS5 saw them (each a quoted phrase).
    pub terms: Vec<String>,
    /// Number of hits returned.
    pub count: usize,
    /// Hits, best first.
    pub hits: Vec<SearchHit>,
}

/// Arguments of `memory_recall` and `memory_forget`: exactly one of `id` and `key`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    /// Id of the memory.
    #[serde(default)]
    pub id: Option<i64>,
    /// Key of the memory (looked up in `namespace`).
    #[serde(default)]
    pub key: Option<String>,
    /// Namespace: with `key` it defaults to "default"; with `id` it is optional and, when given, must match.
    #[serde(default)]
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9._:/-]+$"))]
    pub namespace: Option<String>,
}

/// A memory as stored.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Memory {
    /// Id.
    pub id: i64,
    /// Namespace.
    pub namespace: String,
    /// Key, if any.
    pub key: Option<String>,
    /// The (scrubbed) value.
    pub value: String,
    /// The (scrubbed) metadata.
    pub metadata: Map<String, Value>,
    /// When it was stored (RFC 3339, UTC).
    pub created_at: String,
    /// How many secrets were redacted when it was stored.
    pub redactions: i64,
}

/// Answer of `memory_forget`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Forgotten {
    /// Id of the deleted memory.
    pub id: i64,
    /// Its namespace.
    pub namespace: String,
    /// Its key, if any.
    pub key: Option<String>,
    /// Always `"forgotten"`.
    pub status: String,
}

/// Arguments of `memory_list`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {
    /// Namespace to list.
    #[serde(default = "default_namespace")]
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9._:/-]+$"))]
    pub namespace: String,
    /// Only memories whose key starts with this (case-sensitive); memories without a key are then left out.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Most entries returned: 1-500, default 50. Larger values are an error, not clamped.
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
}

/// One entry of a list.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ListItem {
    /// Id.
    pub id: i64,
    /// Key, if any.
    pub key: Option<String>,
    /// When it was stored (RFC 3339, UTC).
    pub created_at: String,
    /// Length of the value in characters.
    pub chars: usize,
    /// The first 120 characters of the value (`…` when cut).
    pub preview: String,
}

/// Answer of `memory_list`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ListResult {
    /// The namespace listed.
    pub namespace: String,
    /// The key prefix, if any.
    pub prefix: Option<String>,
    /// How many memories match (the list may be shorter: see `truncated`).
    pub total: u64,
    /// True when `total` exceeds the entries returned.
    pub truncated: bool,
    /// Entries, newest first.
    pub items: Vec<ListItem>,
}

/// Memories in one namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NamespaceCount {
    /// Namespace.
    pub namespace: String,
    /// Number of memories.
    pub count: u64,
}

/// Answer of `memory_stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StoreStats {
    /// The database file (`:memory:` for an in-memory store).
    pub path: String,
    /// Memories in all namespaces.
    pub total: u64,
    /// Memories per namespace, sorted by name.
    pub namespaces: Vec<NamespaceCount>,
    /// Size of the database in bytes (pages in use and free).
    pub db_bytes: u64,
    /// Bytes on disk: the database file plus its write-ahead log.
    pub file_bytes: u64,
    /// Schema version.
    pub schema_version: i64,
}

/// The operations of a memory store. Implementations must scrub before they
/// persist and must never panic on a request.
pub trait MemoryStore: Send + Sync {
    /// Stores a memory.
    fn store(&self, req: StoreRequest) -> Result<Stored, StoreError>;
    /// Full-text search.
    fn search(&self, req: &SearchRequest) -> Result<SearchResults, StoreError>;
    /// One memory by id or key.
    fn recall(&self, sel: &Selector) -> Result<Memory, StoreError>;
    /// Memories of a namespace, newest first.
    fn list(&self, req: &ListRequest) -> Result<ListResult, StoreError>;
    /// Deletes one memory by id or key.
    fn forget(&self, sel: &Selector) -> Result<Forgotten, StoreError>;
    /// Counts and sizes.
    fn stats(&self) -> Result<StoreStats, StoreError>;
}

/// Milliseconds since the Unix epoch, from some clock.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    })
}

/// Where the database lives: `$MNEMO_HOME/memory.sqlite3`, else
/// `$XDG_DATA_HOME/mnemo/memory.sqlite3`, else
/// `$HOME/.local/share/mnemo/memory.sqlite3`.
pub fn default_db_path() -> Result<PathBuf, StoreError> {
    resolve_db_path(|name| std::env::var_os(name))
}

/// [`default_db_path`] over any environment lookup.
pub fn resolve_db_path(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, StoreError> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(home) = set("MNEMO_HOME") {
        return Ok(home.join(DB_FILE));
    }
    // The XDG spec says relative values are invalid and must be ignored.
    if let Some(data) = set("XDG_DATA_HOME").filter(|p| p.is_absolute()) {
        return Ok(data.join("mnemo").join(DB_FILE));
    }
    if let Some(home) = set("HOME") {
        return Ok(home.join(".local/share/mnemo").join(DB_FILE));
    }
    Err(StoreError::NoDataDir)
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memories (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace   TEXT    NOT NULL,
    key         TEXT,
    value       TEXT    NOT NULL,
    metadata    TEXT    NOT NULL DEFAULT '{}',
    created_at  INTEGER NOT NULL,
    redactions  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (namespace, key)
);
CREATE INDEX IF NOT EXISTS memories_ns_time ON memories (namespace, created_at);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    value, key,
    content = 'memories', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_vocab USING fts5vocab(memories_fts, 'row');
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, value, key) VALUES (new.id, new.value, new.key);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, value, key)
        VALUES ('delete', old.id, old.value, old.key);
END;
";

/// The SQLite implementation of [`MemoryStore`].
pub struct SqliteStore {
    conn: Mutex<Connection>,
    path: Option<PathBuf>,
    clock: Clock,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`, with the system clock.
    /// The directory is created private to the user (0700) and the file 0600.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with_clock(path, system_clock())
    }

    /// [`SqliteStore::open`] with a given clock (for tests and benchmarks).
    pub fn open_with_clock(path: &Path, clock: Clock) -> Result<Self, StoreError> {
        let open_err = |reason: String| StoreError::Open {
            path: path.to_path_buf(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(|e| open_err(e.to_string()))?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| open_err(e.to_string()))?;
        restrict_file(path).map_err(|e| open_err(e.to_string()))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(|e| open_err(e.to_string()))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| open_err(e.to_string()))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(open_err(format!(
                "cannot switch to write-ahead logging (journal mode {mode})"
            )));
        }
        // In WAL mode NORMAL keeps every transaction atomic and the file
        // consistent after any crash; only the last commits before a power
        // loss or OS crash may be lost (FULL would fsync on every commit).
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| open_err(e.to_string()))?;
        Self::init(conn, Some(path.to_path_buf()), clock)
    }

    /// An in-memory store (tests).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::open_in_memory_with_clock(system_clock())
    }

    /// An in-memory store with a given clock (tests).
    pub fn open_in_memory_with_clock(clock: Clock) -> Result<Self, StoreError> {
        Self::init(Connection::open_in_memory()?, None, clock)
    }

    fn init(conn: Connection, path: Option<PathBuf>, clock: Clock) -> Result<Self, StoreError> {
        conn.pragma_update(None, "secure_delete", "ON")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: path.clone().unwrap_or_default(),
                found: version,
            });
        }
        if version < SCHEMA_VERSION {
            let tx = conn.unchecked_transaction()?;
            tx.execute_batch(SCHEMA)?;
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
            tx.commit()?;
        }
        conn.create_scalar_function(
            "mnemo_decay",
            2,
            FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
            |ctx| {
                let age_ms: f64 = ctx.get::<Option<f64>>(0)?.unwrap_or(0.0);
                let half_life_days: Option<f64> = ctx.get(1)?;
                Ok(decay(age_ms, half_life_days))
            },
        )?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            path,
            clock,
        })
    }

    /// The database file, if on disk.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn conn(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.conn.lock().map_err(|_| StoreError::Poisoned)
    }

    fn now(&self) -> i64 {
        (self.clock)()
    }

    /// Runs `f` on the raw connection (tests: add triggers, inspect bytes).
    #[doc(hidden)]
    pub fn with_connection<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let conn = self.conn()?;
        Ok(f(&conn)?)
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn restrict_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
fn restrict_file(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

/// The recency factor `0.5^(age / half_life)`; 1 without a half-life or for
/// memories from the future.
pub fn decay(age_ms: f64, half_life_days: Option<f64>) -> f64 {
    match half_life_days {
        Some(h) if h > 0.0 && h.is_finite() => {
            let age_days = age_ms.max(0.0) / MS_PER_DAY;
            0.5f64.powf(age_days / h)
        }
        _ => 1.0,
    }
}

/// Checks a namespace: 1-64 characters of ASCII letters, digits and `._:/-`.
pub fn validate_namespace(ns: &str) -> Result<(), StoreError> {
    if ns.is_empty() {
        return Err(invalid("namespace", "must not be empty"));
    }
    if ns.chars().count() > MAX_NAMESPACE_CHARS {
        return Err(invalid(
            "namespace",
            format!("is longer than {MAX_NAMESPACE_CHARS} characters"),
        ));
    }
    if let Some(c) = ns
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._:/-".contains(*c)))
    {
        return Err(invalid(
            "namespace",
            format!("{ns:?} contains {c:?}; use letters, digits and . _ : / -"),
        ));
    }
    Ok(())
}

fn validate_key(key: &str) -> Result<(), StoreError> {
    if key.trim().is_empty() {
        return Err(invalid("key", "must not be empty or blank"));
    }
    if key.chars().count() > MAX_KEY_CHARS {
        return Err(invalid(
            "key",
            format!("is longer than {MAX_KEY_CHARS} characters"),
        ));
    }
    if key.chars().any(char::is_control) {
        return Err(invalid("key", "must not contain control characters"));
    }
    Ok(())
}

/// Builds a safe FTS5 query from user text: each whitespace-separated word
/// with at least one letter or digit becomes a quoted phrase (`"` doubled,
/// control characters turned into spaces),
/// and the phrases are joined with `OR`. Returns the expression and the
/// phrases.
pub fn fts_query(query: &str) -> Result<(String, Vec<String>), StoreError> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(invalid(
            "query",
            format!("is longer than {MAX_QUERY_BYTES} bytes"),
        ));
    }
    let cleaned = clean_query(query);
    let words = query_words(&cleaned);
    if words.is_empty() {
        return Err(invalid(
            "query",
            "has no word to search for (letters or digits)",
        ));
    }
    let terms: Vec<String> = words.iter().map(|w| quote_term(w)).collect();
    Ok((terms.join(" OR "), terms))
}

/// Control characters (NUL above all) end an FTS5 string early: they become
/// spaces.
fn clean_query(query: &str) -> String {
    query
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn query_words(cleaned: &str) -> Vec<&str> {
    let mut words: Vec<&str> = Vec::new();
    for w in cleaned
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
    {
        if words.len() == MAX_QUERY_TERMS {
            break;
        }
        if !words.contains(&w) {
            words.push(w);
        }
    }
    words
}

fn quote_term(word: &str) -> String {
    format!("\"{}\"", word.replace('"', "\"\""))
}

/// Leaves out of the match the [`STOPWORDS`] when other words remain, then,
/// in a store of [`PRUNE_COMMON_FROM`] memories or more, the words that occur
/// in at least half of all memories, when other words remain. FTS5's BM25
/// gives such words no weight (their IDF is not positive: it uses 1e-6), so
/// the ranking of every memory that also holds another word is unchanged;
/// what it saves is scoring most of the table. Only plain ASCII words are
/// looked up (their FTS5 token is their lowercase form); others are kept.
fn prune_common(conn: &Connection, words: Vec<&str>) -> Result<Vec<String>, StoreError> {
    let keep_all = |words: Vec<&str>| words.iter().map(|w| quote_term(w)).collect();
    if words.len() < 2 {
        return Ok(keep_all(words));
    }
    let content: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !STOPWORDS.contains(&w.to_ascii_lowercase().as_str()))
        .collect();
    let words = if content.is_empty() { words } else { content };
    if words.len() < 2 {
        return Ok(keep_all(words));
    }
    let total: i64 = conn.query_row("SELECT count(*) FROM memories", [], |r| r.get(0))?;
    if total < PRUNE_COMMON_FROM {
        return Ok(keep_all(words));
    }
    let mut stmt = conn.prepare_cached("SELECT doc FROM memories_vocab WHERE term = ?1")?;
    let mut kept = Vec::new();
    for w in &words {
        let common = if w.chars().all(|c| c.is_ascii_alphanumeric()) {
            let df: i64 = stmt
                .query_row(params![w.to_ascii_lowercase()], |r| r.get(0))
                .optional()?
                .unwrap_or(0);
            df.saturating_mul(2) >= total
        } else {
            false
        };
        if !common {
            kept.push(quote_term(w));
        }
    }
    if kept.is_empty() {
        return Ok(keep_all(words));
    }
    Ok(kept)
}

/// Scrubs every string of a JSON value (object keys included); returns the
/// number of redactions and pushes the rules that fired.
fn scrub_json(scrubber: &Scrubber, value: Value, rules: &mut Vec<String>) -> (Value, usize) {
    match value {
        Value::String(s) => {
            let out = scrubber.scrub(&s);
            let n = out.redactions.len();
            rules.extend(out.redactions.into_iter().map(|r| r.rule));
            (Value::String(out.text), n)
        }
        Value::Array(items) => {
            let mut n = 0;
            let items = items
                .into_iter()
                .map(|v| {
                    let (v, k) = scrub_json(scrubber, v, rules);
                    n += k;
                    v
                })
                .collect();
            (Value::Array(items), n)
        }
        Value::Object(map) => {
            let mut n = 0;
            let mut out = Map::new();
            for (k, v) in map {
                let sk = scrubber.scrub(&k);
                n += sk.redactions.len();
                rules.extend(sk.redactions.into_iter().map(|r| r.rule));
                let (v, m) = scrub_json(scrubber, v, rules);
                n += m;
                out.insert(sk.text, v);
            }
            (Value::Object(out), n)
        }
        other => (other, 0),
    }
}

/// Fails closed when a text that is about to be persisted still holds a
/// finding of the scrubber.
fn ensure_clean(scrubber: &Scrubber, what: &str, text: &str) -> Result<(), StoreError> {
    let left = scrubber.find(text);
    if left.is_empty() {
        Ok(())
    } else {
        let rules: Vec<&str> = left.iter().map(|f| f.rule.as_str()).collect();
        Err(StoreError::Scrubber(format!(
            "the scrubbed {what} still matches {}",
            rules.join(", ")
        )))
    }
}

fn scrubber() -> Result<&'static Scrubber, StoreError> {
    Scrubber::default_rules().map_err(|e| StoreError::Scrubber(e.to_string()))
}

fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
    )
}

fn parse_metadata(text: &str) -> Result<Map<String, Value>, StoreError> {
    match serde_json::from_str::<Value>(text)? {
        Value::Object(m) => Ok(m),
        _ => Ok(Map::new()),
    }
}

/// Formats milliseconds since the epoch as RFC 3339 UTC with milliseconds.
pub use mnemo_model::date::format_rfc3339_ms as rfc3339_ms;

fn preview(value: &str) -> String {
    let mut chars = value.char_indices();
    match chars.nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &value[..cut]),
        None => value.to_string(),
    }
}

/// Which memory a selector names, resolved against the request rules.
enum Target<'a> {
    Id(i64, Option<&'a str>),
    Key(&'a str, &'a str),
}

fn target(sel: &Selector) -> Result<Target<'_>, StoreError> {
    if let Some(ns) = sel.namespace.as_deref() {
        validate_namespace(ns)?;
    }
    match (sel.id, sel.key.as_deref()) {
        (Some(id), None) => Ok(Target::Id(id, sel.namespace.as_deref())),
        (None, Some(key)) => {
            validate_key(key)?;
            Ok(Target::Key(
                key,
                sel.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE),
            ))
        }
        (Some(_), Some(_)) => Err(invalid("id", "give either `id` or `key`, not both")),
        (None, None) => Err(invalid("id", "give `id` or `key`")),
    }
}

fn describe(t: &Target<'_>) -> String {
    match t {
        Target::Id(id, Some(ns)) => format!("with id {id} in namespace {ns:?}"),
        Target::Id(id, None) => format!("with id {id}"),
        Target::Key(key, ns) => format!("with key {key:?} in namespace {ns:?}"),
    }
}

/// Search without recency decay: `?1` the FTS5 expression, `?2` the
/// namespace, `?3` top_k.
const SEARCH_SQL: &str = "
SELECT m.id, m.key, m.value, m.metadata, m.created_at, t.relevance, 1.0
FROM (SELECT f.rowid AS rid, -bm25(memories_fts, 1.0, 2.0) AS relevance
      FROM memories_fts AS f JOIN memories AS n ON n.id = f.rowid
      WHERE memories_fts MATCH ?1 AND n.namespace = ?2
      ORDER BY relevance DESC, rid DESC
      LIMIT ?3) AS t
JOIN memories AS m ON m.id = t.rid
ORDER BY t.relevance DESC, m.id DESC";

/// Search with recency decay: as [`SEARCH_SQL`], and `?4` now (ms), `?5`
/// the half-life in days.
const SEARCH_DECAY_SQL: &str = "
SELECT m.id, m.key, m.value, m.metadata, m.created_at, t.relevance, t.decay
FROM (SELECT f.rowid AS rid, -bm25(memories_fts, 1.0, 2.0) AS relevance,
             mnemo_decay(?4 - n.created_at, ?5) AS decay
      FROM memories_fts AS f JOIN memories AS n ON n.id = f.rowid
      WHERE memories_fts MATCH ?1 AND n.namespace = ?2
      ORDER BY relevance * decay DESC, rid DESC
      LIMIT ?3) AS t
JOIN memories AS m ON m.id = t.rid
ORDER BY t.relevance * t.decay DESC, m.id DESC";

const MEMORY_COLUMNS: &str = "id, namespace, key, value, metadata, created_at, redactions";

fn memory_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(Memory, String)> {
    let created: i64 = row.get(5)?;
    Ok((
        Memory {
            id: row.get(0)?,
            namespace: row.get(1)?,
            key: row.get(2)?,
            value: row.get(3)?,
            metadata: Map::new(),
            created_at: rfc3339_ms(created),
            redactions: row.get(6)?,
        },
        row.get(4)?,
    ))
}

fn find_memory(conn: &Connection, t: &Target<'_>) -> Result<Option<Memory>, StoreError> {
    let row = match t {
        Target::Id(id, ns) => conn
            .query_row(
                &format!(
                    "SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?1 AND (?2 IS NULL OR namespace = ?2)"
                ),
                params![id, ns],
                memory_from_row,
            )
            .optional()?,
        Target::Key(key, ns) => conn
            .query_row(
                &format!("SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = ?1 AND key = ?2"),
                params![ns, key],
                memory_from_row,
            )
            .optional()?,
    };
    match row {
        Some((mut m, meta)) => {
            m.metadata = parse_metadata(&meta)?;
            Ok(Some(m))
        }
        None => Ok(None),
    }
}

/// A memory as it may be written: the request checked against the bounds
/// and scrubbed (value and metadata), the namespace and key refused when the
/// scrubber finds a secret in them. Every store writes only this.
pub(crate) struct Prepared {
    pub(crate) value: String,
    pub(crate) metadata: String,
    pub(crate) redactions: usize,
    pub(crate) rules: Vec<String>,
}

/// Checks and scrubs a store request (fail closed), for every backend.
pub(crate) fn prepare(req: &StoreRequest) -> Result<Prepared, StoreError> {
    validate_namespace(&req.namespace)?;
    if let Some(key) = req.key.as_deref() {
        validate_key(key)?;
    }
    if req.value.trim().is_empty() {
        return Err(invalid("value", "must not be empty or blank"));
    }
    if req.value.len() > MAX_VALUE_BYTES {
        return Err(invalid(
            "value",
            format!("is {} bytes, more than {MAX_VALUE_BYTES}", req.value.len()),
        ));
    }
    let metadata = Value::Object(req.metadata.clone().unwrap_or_default());
    let raw_meta_len = serde_json::to_string(&metadata)?.len();
    if raw_meta_len > MAX_METADATA_BYTES {
        return Err(invalid(
            "metadata",
            format!("is {raw_meta_len} bytes of JSON, more than {MAX_METADATA_BYTES}"),
        ));
    }

    // Scrub everything before it gets near the database (fail closed).
    let scrubber = scrubber()?;
    let found = scrubber.find(&req.namespace);
    if !found.is_empty() {
        let mut rules: Vec<String> = found.into_iter().map(|f| f.rule).collect();
        rules.dedup();
        return Err(StoreError::SecretInNamespace {
            rules: rules.join(", "),
        });
    }
    if let Some(key) = req.key.as_deref() {
        let found = scrubber.find(key);
        if !found.is_empty() {
            let mut rules: Vec<String> = found.into_iter().map(|f| f.rule).collect();
            rules.dedup();
            return Err(StoreError::SecretInKey {
                rules: rules.join(", "),
            });
        }
    }
    let value = scrubber.scrub(&req.value);
    let mut rules: Vec<String> = value.redactions.iter().map(|r| r.rule.clone()).collect();
    let (metadata, meta_redactions) = scrub_json(scrubber, metadata, &mut rules);
    let metadata_text = serde_json::to_string(&metadata)?;
    ensure_clean(scrubber, "value", &value.text)?;
    ensure_clean(scrubber, "metadata", &metadata_text)?;
    let redactions = value.redactions.len() + meta_redactions;
    rules.sort();
    rules.dedup();
    Ok(Prepared {
        value: value.text,
        metadata: metadata_text,
        redactions,
        rules,
    })
}

impl MemoryStore for SqliteStore {
    fn store(&self, req: StoreRequest) -> Result<Stored, StoreError> {
        let Prepared {
            value,
            metadata: metadata_text,
            redactions,
            rules,
        } = prepare(&req)?;

        let now = self.now();
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(key) = req.key.as_deref() {
            let existing: Option<i64> = tx
                .query_row(
                    "SELECT id FROM memories WHERE namespace = ?1 AND key = ?2",
                    params![req.namespace, key],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(id) = existing {
                return Err(StoreError::DuplicateKey {
                    namespace: req.namespace,
                    key: key.to_string(),
                    id,
                });
            }
        }
        let inserted = tx.execute(
            "INSERT INTO memories (namespace, key, value, metadata, created_at, redactions)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                req.namespace,
                req.key,
                value,
                metadata_text,
                now,
                i64::try_from(redactions).unwrap_or(i64::MAX)
            ],
        );
        if let Err(e) = inserted {
            // Unreachable under BEGIN IMMEDIATE, kept as a backstop.
            if is_unique_violation(&e)
                && let Some(key) = req.key.as_deref()
            {
                return Err(invalid(
                    "key",
                    format!("{key:?} already exists in namespace {:?}", req.namespace),
                ));
            }
            return Err(e.into());
        }
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(Stored {
            id,
            namespace: req.namespace,
            key: req.key,
            status: "stored".to_string(),
            redactions,
            redacted_rules: rules,
            created_at: rfc3339_ms(now),
        })
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
        // Validates the query (and the words kept for an error message).
        fts_query(&req.query)?;
        let cleaned = clean_query(&req.query);
        let now = self.now();
        let conn = self.conn()?;
        let terms = prune_common(&conn, query_words(&cleaned))?;
        let expr = terms.join(" OR ");
        // The inner query ranks (id, score) pairs only, so the sorter never
        // copies values; the outer one reads the top_k rows.
        let sql = if req.recency_half_life_days.is_some() {
            SEARCH_DECAY_SQL
        } else {
            SEARCH_SQL
        };
        let mut stmt = conn.prepare_cached(sql)?;
        let map = |row: &rusqlite::Row<'_>| {
            let created: i64 = row.get(4)?;
            let relevance: f64 = row.get(5)?;
            let decay: f64 = row.get(6)?;
            Ok((
                SearchHit {
                    id: row.get(0)?,
                    key: row.get(1)?,
                    value: row.get(2)?,
                    metadata: Map::new(),
                    created_at: rfc3339_ms(created),
                    score: relevance * decay,
                    relevance,
                    decay,
                },
                row.get::<_, String>(3)?,
            ))
        };
        let rows: Vec<(SearchHit, String)> = match req.recency_half_life_days {
            Some(h) => stmt
                .query_map(params![expr, req.namespace, top_k, now, h], map)?
                .collect::<Result<_, _>>()?,
            None => stmt
                .query_map(params![expr, req.namespace, top_k], map)?
                .collect::<Result<_, _>>()?,
        };
        let mut hits = Vec::new();
        for (mut hit, meta) in rows {
            hit.metadata = parse_metadata(&meta)?;
            hits.push(hit);
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
        let conn = self.conn()?;
        find_memory(&conn, &t)?.ok_or_else(|| StoreError::NotFound(describe(&t)))
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
        let prefix = req.prefix.as_deref().filter(|p| !p.is_empty());
        let conn = self.conn()?;
        let filter = "namespace = ?1 AND (?2 IS NULL OR (key IS NOT NULL AND substr(key, 1, length(?2)) = ?2))";
        let total: i64 = conn.query_row(
            &format!("SELECT count(*) FROM memories WHERE {filter}"),
            params![req.namespace, prefix],
            |r| r.get(0),
        )?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT id, key, value, created_at FROM memories WHERE {filter}
             ORDER BY created_at DESC, id DESC LIMIT ?3"
        ))?;
        let items = stmt
            .query_map(params![req.namespace, prefix, limit], |row| {
                let value: String = row.get(2)?;
                let created: i64 = row.get(3)?;
                Ok(ListItem {
                    id: row.get(0)?,
                    key: row.get(1)?,
                    created_at: rfc3339_ms(created),
                    chars: value.chars().count(),
                    preview: preview(&value),
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
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
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let Some(m) = find_memory(&tx, &t)? else {
            return Err(StoreError::NotFound(describe(&t)));
        };
        tx.execute("DELETE FROM memories WHERE id = ?1", params![m.id])?;
        tx.commit()?;
        Ok(Forgotten {
            id: m.id,
            namespace: m.namespace,
            key: m.key,
            status: "forgotten".to_string(),
        })
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT namespace, count(*) FROM memories GROUP BY namespace ORDER BY namespace",
        )?;
        let namespaces = stmt
            .query_map([], |r| {
                Ok(NamespaceCount {
                    namespace: r.get(0)?,
                    count: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let page_count: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
        let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        let file_bytes = match &self.path {
            Some(p) => {
                let mut wal = p.clone().into_os_string();
                wal.push("-wal");
                [p.clone(), PathBuf::from(wal)]
                    .iter()
                    .filter_map(|f| std::fs::metadata(f).ok())
                    .map(|m| m.len())
                    .sum()
            }
            None => 0,
        };
        Ok(StoreStats {
            path: self
                .path
                .as_ref()
                .map_or_else(|| ":memory:".to_string(), |p| p.display().to_string()),
            total: namespaces.iter().map(|n| n.count).sum(),
            namespaces,
            db_bytes: u64::try_from(page_count.saturating_mul(page_size)).unwrap_or(0),
            file_bytes,
            schema_version: SCHEMA_VERSION,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_796_085_901_123), "2026-12-01T00:45:01.123Z");
        assert_eq!(rfc3339_ms(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn fts_query_quotes_every_word() {
        let (expr, terms) = fts_query(r#"auth "x" NEAR(a b) col:val -not *"#).unwrap_or_default();
        assert_eq!(
            expr,
            r#""auth" OR """x""" OR "NEAR(a" OR "b)" OR "col:val" OR "-not""#
        );
        assert_eq!(terms.len(), 6);
        assert!(fts_query("  *** \"\" ").is_err());
        assert!(fts_query("").is_err());
    }

    #[test]
    fn decay_halves_per_half_life() {
        assert!((decay(MS_PER_DAY * 7.0, Some(7.0)) - 0.5).abs() < 1e-12);
        assert!((decay(MS_PER_DAY * 14.0, Some(7.0)) - 0.25).abs() < 1e-12);
        assert!((decay(-5.0, Some(7.0)) - 1.0).abs() < 1e-12);
        assert!((decay(1e12, None) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn db_path_resolution_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let p = resolve_db_path(env(&[("MNEMO_HOME", "/m"), ("HOME", "/h")]));
        assert_eq!(p.ok(), Some(PathBuf::from("/m/memory.sqlite3")));
        let p = resolve_db_path(env(&[("XDG_DATA_HOME", "/x"), ("HOME", "/h")]));
        assert_eq!(p.ok(), Some(PathBuf::from("/x/mnemo/memory.sqlite3")));
        let p = resolve_db_path(env(&[("XDG_DATA_HOME", "rel"), ("HOME", "/h")]));
        assert_eq!(
            p.ok(),
            Some(PathBuf::from("/h/.local/share/mnemo/memory.sqlite3"))
        );
        assert!(resolve_db_path(env(&[("MNEMO_HOME", "")])).is_err());
    }

    #[test]
    fn preview_cuts_on_chars() {
        let long = "é".repeat(200);
        let p = preview(&long);
        assert_eq!(p.chars().count(), PREVIEW_CHARS + 1);
        assert!(p.ends_with('…'));
        assert_eq!(preview("short"), "short");
    }

    #[test]
    fn namespaces() {
        assert!(validate_namespace("default").is_ok());
        assert!(validate_namespace("team/a:b.c-d_e").is_ok());
        assert!(validate_namespace("").is_err());
        assert!(validate_namespace("a b").is_err());
        assert!(validate_namespace(&"x".repeat(65)).is_err());
    }
}
