//! Opening a configured Guardian: the policy file, the store the options
//! name (SQLite by default, PostgreSQL for a `postgres://` URL, in memory on
//! request) and the HMAC key.

use crate::postgres::PostgresStore;
use crate::scrubbed::Scrubbed;
use crate::sqlite::SqliteStore;
use mnemo_guardian::policy::{HmacKeySource, KeyEncoding, Policy, PolicyError};
use mnemo_guardian::protocol::{Guardian, GuardianConfig, Transport};
use mnemo_guardian::store::{MemoryStore, SessionStore, StoreError};
use std::io;
use std::path::{Path, PathBuf};

/// A start-up or transport failure.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The policy file could not be read.
    #[error("policy file {path}: {source}")]
    PolicyRead {
        /// File.
        path: PathBuf,
        /// Cause.
        source: io::Error,
    },
    /// The policy file is invalid.
    #[error("policy file {path}: {source}")]
    Policy {
        /// File.
        path: PathBuf,
        /// Cause.
        source: PolicyError,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// I/O.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// Configuration.
    #[error("{0}")]
    Config(String),
}

/// A boxed, sendable store.
pub type DynStore = Box<dyn SessionStore + Send>;

/// Options shared by `mnemo guard …` and the hooks.
#[derive(Debug, Clone, Default)]
pub struct GuardOptions {
    /// Policy TOML file (defaults when absent).
    pub policy: Option<PathBuf>,
    /// Store: a SQLite file or a `postgres://…` URL (default `$MNEMO_STORE`,
    /// else [`default_store_path`]).
    pub store: Option<PathBuf>,
    /// Keep state in memory only.
    pub memory: bool,
}

/// Loads a policy file, or the defaults.
pub fn load_policy(path: Option<&Path>) -> Result<Policy, OpenError> {
    let Some(path) = path else {
        return Ok(Policy::default());
    };
    let text = std::fs::read_to_string(path).map_err(|source| OpenError::PolicyRead {
        path: path.into(),
        source,
    })?;
    Policy::from_toml(&text).map_err(|source| OpenError::Policy {
        path: path.into(),
        source,
    })
}

/// `$MNEMO_HOME/guardian.sqlite3`, else `$XDG_DATA_HOME/mnemo/guardian.sqlite3`,
/// else `~/.local/share/mnemo/guardian.sqlite3`, else `./.mnemo/guardian.sqlite3`.
pub fn default_store_path() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(h) = env("MNEMO_HOME") {
        return h.join("guardian.sqlite3");
    }
    if let Some(x) = env("XDG_DATA_HOME") {
        return x.join("mnemo").join("guardian.sqlite3");
    }
    if let Some(home) = env("HOME") {
        return home
            .join(".local")
            .join("share")
            .join("mnemo")
            .join("guardian.sqlite3");
    }
    PathBuf::from(".mnemo").join("guardian.sqlite3")
}

/// The environment variable naming the session store when `--store` is
/// not given: a SQLite file, or a `postgres://…` URL.
pub const STORE_ENV: &str = "MNEMO_STORE";

/// Opens the store the options name (`--store`, else `$MNEMO_STORE`, else
/// [`default_store_path`]): a `postgres://` or `postgresql://` URL opens
/// [`PostgresStore`], anything else is a SQLite file. A long-running server checkpoints
/// the SQLite WAL on a background thread (see
/// [`SqliteStore::checkpoint_in_background`]). Every store is wrapped in
/// [`Scrubbed`]: nothing unscrubbed is kept.
pub fn open_store(opts: &GuardOptions, long_running: bool) -> Result<DynStore, OpenError> {
    if opts.memory {
        return Ok(Box::new(Scrubbed::new(MemoryStore::new())));
    }
    let path = store_location(opts);
    if let Some(url) = path.to_str().filter(|p| mnemo_postgres::is_postgres_url(p)) {
        return Ok(Box::new(Scrubbed::new(PostgresStore::open(url)?)));
    }
    let mut store = SqliteStore::open(&path)?;
    if long_running {
        store.checkpoint_in_background_bounded(wal_limit()?)?;
    }
    Ok(Box::new(Scrubbed::new(store)))
}

/// Where [`open_store`] looks for the store the options name: `--store`,
/// else `$MNEMO_STORE`, else [`default_store_path`] (a SQLite file, or a
/// `postgres://` URL).
pub fn store_location(opts: &GuardOptions) -> PathBuf {
    opts.store
        .clone()
        .or_else(|| {
            std::env::var_os(STORE_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(default_store_path)
}

/// The environment variable that sets a long-running server's SQLite WAL
/// bound in bytes (for example 67108864, [`crate::sqlite::WAL_LIMIT_BYTES`]);
/// unset or `0`, no bound (the WAL grows as long as writes never pause:
/// 700-830 MB after 80-100k requests). Off by default: the bound's RESTART
/// pass holds the writer off for two syncs once per bound's worth of WAL,
/// which cost p99 29-30 ms (64 MiB) and 18-21 ms (256 MiB) against 12-13 ms
/// without (session 10, measure build, `http-load.sh BIN 6 32`, load 1.4-3).
pub const WAL_LIMIT_ENV: &str = "MNEMO_SQLITE_WAL_LIMIT";

fn wal_limit() -> Result<u64, OpenError> {
    match std::env::var(WAL_LIMIT_ENV) {
        Err(_) => Ok(u64::MAX),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(0) => Ok(u64::MAX),
            Ok(n) => Ok(n),
            Err(_) => Err(OpenError::Config(format!(
                "{WAL_LIMIT_ENV}={v}: expected a number of bytes (0: no limit)"
            ))),
        },
    }
}

/// Builds a Guardian: policy, HMAC key (from the environment variable the
/// policy names), store.
pub fn open_guardian(
    opts: &GuardOptions,
    transport: Transport,
    one_shot: bool,
) -> Result<Guardian<DynStore>, OpenError> {
    let policy = load_policy(opts.policy.as_deref())?;
    let mut config = GuardianConfig::from_policy(&policy);
    config.transport = transport;
    if one_shot {
        config.require_handshake = false;
    }
    let mut sources = policy.guardian.hmac_keys.clone();
    if let (Some(env), Some(key_id)) = (&policy.guardian.hmac_key_env, &policy.guardian.hmac_key_id)
    {
        sources.insert(
            0,
            HmacKeySource {
                key_id: key_id.clone(),
                env: env.clone(),
                encoding: KeyEncoding::Utf8,
            },
        );
    }
    for src in &sources {
        config
            .hmac_keys
            .push((src.key_id.clone(), load_secret(src)?));
    }
    let store = open_store(opts, !one_shot)?;
    let guardian = Guardian::new(policy, config, store);
    Ok(match fixed_clock()? {
        Some(_) => guardian.with_clock(fixed_now),
        None => guardian,
    })
}

/// Reads one HMAC secret from its environment variable.
fn load_secret(src: &HmacKeySource) -> Result<Vec<u8>, OpenError> {
    let text = std::env::var(&src.env)
        .ok()
        .filter(|k| !k.is_empty())
        .ok_or_else(|| {
            OpenError::Config(format!(
                "policy: the HMAC key {} is read from {}, which is not set",
                src.key_id, src.env
            ))
        })?;
    let bytes = match src.encoding {
        KeyEncoding::Utf8 => Some(text.into_bytes()),
        KeyEncoding::Base64 => mnemo_acs::sign::base64_decode(text.trim()),
        KeyEncoding::Hex => mnemo_acs::sign::hex_decode(text.trim()),
    };
    bytes.filter(|b| !b.is_empty()).ok_or_else(|| {
        OpenError::Config(format!(
            "policy: {} (HMAC key {}) is not valid {:?}",
            src.env, src.key_id, src.encoding
        ))
    })
}

/// The environment variable that stops the Guardian's clock at one RFC 3339
/// instant, so that recorded conformance vectors (whose timestamps, and the
/// signatures over them, are fixed) can be replayed against the real
/// binaries. Never set it in a deployment: the timestamp window then
/// measures against that instant.
pub const FIXED_CLOCK_ENV: &str = "MNEMO_GUARD_NOW";

static FIXED_NOW: std::sync::OnceLock<i64> = std::sync::OnceLock::new();

fn fixed_clock() -> Result<Option<i64>, OpenError> {
    let Some(text) = std::env::var(FIXED_CLOCK_ENV)
        .ok()
        .filter(|t| !t.is_empty())
    else {
        return Ok(None);
    };
    let ms = mnemo_acs::time::parse_rfc3339_ms(&text).ok_or_else(|| {
        OpenError::Config(format!(
            "{FIXED_CLOCK_ENV}={text}: expected an RFC 3339 time such as 2026-09-09T12:00:00Z"
        ))
    })?;
    Ok(Some(*FIXED_NOW.get_or_init(|| ms)))
}

fn fixed_now() -> i64 {
    FIXED_NOW
        .get()
        .copied()
        .unwrap_or_else(mnemo_acs::time::now_ms)
}
