//! # mnemo-postgres
//!
//! The PostgreSQL edge shared by mnemo's stores (the Guardian's session
//! store and the MCP memory store on `postgres://…`).
//!
//! **Owns:** [`Pg`], one database connection owned by a thread of its own
//! (so a store built on it can be called from plain threads and from inside
//! an async runtime alike: the `postgres` client runs its own runtime, which
//! must never be started on a runtime's worker), and [`Pg::migrate`]:
//! versioned schema migrations per component, applied on start under an
//! advisory lock, refusing a database that a newer mnemo wrote; TLS to the
//! database with rustls ([`tls`]: `sslmode=require|verify-ca|verify-full`,
//! `sslrootcert=FILE`); [`PgPipe`], the same on `tokio-postgres` directly,
//! for a store that sends several statements in one round trip
//! ([`pipe`]).
//!
//! **Must never:** decide anything or know a store's tables: a store hands
//! it its migrations and its statements.

use postgres::{Client, NoTls};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

pub use postgres;

pub mod pipe;
pub mod tls;

pub use pipe::{PgPipe, PipeClient, Step};

/// A database failure.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// Connecting failed.
    #[error("postgres: cannot connect to {target}: {}", describe(source))]
    Connect {
        /// The URL without its password.
        target: String,
        /// Cause.
        source: postgres::Error,
    },
    /// A statement failed.
    #[error("postgres: {}", describe(.0))]
    Db(#[from] postgres::Error),
    /// The database holds a schema newer than this build knows.
    #[error(
        "postgres: the {component} tables are at schema version {found}, written by a newer mnemo; this build knows versions up to {known}. Upgrade mnemo (or point it at another database)"
    )]
    TooNew {
        /// Which store.
        component: String,
        /// Version in the database.
        found: i32,
        /// Newest version this build knows.
        known: i32,
    },
    /// The connection's thread is gone (it panicked or could not start).
    #[error("postgres: the connection thread stopped")]
    Gone,
    /// A TLS option or CA file is wrong.
    #[error(transparent)]
    Tls(#[from] tls::TlsOptionError),
    /// Starting the connection's thread failed.
    #[error("postgres: {0}")]
    Io(#[from] std::io::Error),
}

/// The server's own message when there is one (`db error` alone says nothing).
fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

type Job = Box<dyn FnOnce(&mut Client) + Send>;

/// One connection, owned by its own thread.
#[derive(Debug)]
pub struct Pg {
    jobs: mpsc::Sender<Job>,
    calls: AtomicU64,
}

/// Whether `s` names a PostgreSQL database (`postgres://` or `postgresql://`).
pub fn is_postgres_url(s: &str) -> bool {
    let lower = s.get(..13).unwrap_or(s).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// `url` with any password replaced by `***` (for messages).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, tail) = match rest.find('@') {
        Some(at) if !rest[..at].contains('/') => (&rest[..at], &rest[at..]),
        _ => return url.to_string(),
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***{tail}"),
        None => url.to_string(),
    }
}

/// Plain or TLS, as the connection string asks.
#[derive(Debug, Clone)]
enum Connector {
    Plain,
    Tls(tls::RustlsConnect),
}

impl Connector {
    fn open(&self, url: &str) -> Result<Client, postgres::Error> {
        match self {
            Connector::Plain => Client::connect(url, NoTls),
            Connector::Tls(t) => Client::connect(url, t.connector()),
        }
    }
}

/// `url` without mnemo's TLS options, and how to connect to it.
fn connector_for(url: &str) -> Result<(String, Connector), PgError> {
    let (url, tls) = tls::split_tls_options(url)?;
    let connector = match tls {
        None => Connector::Plain,
        Some(opts) => Connector::Tls(tls::RustlsConnect::new(&opts)?),
    };
    Ok((url, connector))
}

impl Pg {
    /// Connects to `url` (a libpq-style URL or key=value string), over TLS
    /// when its `sslmode` asks for it (see [`tls`]).
    pub fn connect(url: &str) -> Result<Pg, PgError> {
        let target = redact_url(url);
        let (url, connector) = connector_for(url)?;
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), PgError>>();
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("mnemo-postgres".into())
            .spawn(move || {
                let mut client = match connector.open(&url) {
                    Ok(c) => {
                        let _ = ready_tx.send(Ok(()));
                        c
                    }
                    Err(source) => {
                        let _ = ready_tx.send(Err(PgError::Connect { target, source }));
                        return;
                    }
                };
                while let Ok(job) = rx.recv() {
                    // A dropped connection (server restart) is opened again
                    // before the next job; the job that saw it fail has
                    // already answered its error.
                    if client.is_closed()
                        && let Ok(c) = connector.open(&url)
                    {
                        client = c;
                    }
                    job(&mut client);
                }
            })?;
        ready_rx.recv().map_err(|_| PgError::Gone)??;
        Ok(Pg {
            jobs,
            calls: AtomicU64::new(0),
        })
    }

    /// Runs `f` on the connection and waits for its answer.
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Client) -> R + Send + 'static,
    ) -> Result<R, PgError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::sync_channel(1);
        self.jobs
            .send(Box::new(move |c: &mut Client| {
                let _ = tx.send(f(c));
            }))
            .map_err(|_| PgError::Gone)?;
        rx.recv().map_err(|_| PgError::Gone)
    }

    /// How many [`call`](Self::call)s this connection has served (each
    /// one a trip to its thread and at least one round trip to the
    /// database): what a store's batching is measured by.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Brings `component`'s tables to the newest of `migrations` (version
    /// `i + 1` is `migrations[i]`, a batch of SQL run once, in one
    /// transaction with its version bump). Concurrent starts serialise on
    /// an advisory lock; a database at a version above `migrations.len()`
    /// is refused with [`PgError::TooNew`] and left untouched.
    pub fn migrate(
        &self,
        component: &str,
        migrations: &'static [&'static str],
    ) -> Result<i32, PgError> {
        let component = component.to_string();
        self.call(move |c| -> Result<i32, PgError> {
            let known = i32::try_from(migrations.len()).unwrap_or(i32::MAX);
            let mut tx = c.transaction()?;
            // One lock for every mnemo component: migrations are rare and short.
            tx.execute("SELECT pg_advisory_xact_lock(7304011)", &[])?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS mnemo_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)",
            )?;
            let found: i32 = tx
                .query_opt("SELECT version FROM mnemo_schema WHERE component = $1", &[&component])?
                .map(|r| r.get(0))
                .unwrap_or(0);
            if found > known {
                return Err(PgError::TooNew { component, found, known });
            }
            for (i, sql) in migrations.iter().enumerate().skip(found.max(0) as usize) {
                tx.batch_execute(sql)?;
                let v = i32::try_from(i + 1).unwrap_or(i32::MAX);
                tx.execute(
                    "INSERT INTO mnemo_schema (component, version) VALUES ($1, $2)
                     ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
                    &[&component, &v],
                )?;
            }
            tx.commit()?;
            Ok(known)
        })?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_recognised_and_passwords_hidden() {
        assert!(is_postgres_url("postgres://u@h/db"));
        assert!(is_postgres_url("PostgreSQL://h/db"));
        assert!(!is_postgres_url("/tmp/postgres://x"));
        assert!(!is_postgres_url("guardian.sqlite3"));
        assert_eq!(
            redact_url("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact_url("postgres://h/db?x=a@b"), "postgres://h/db?x=a@b");
    }

    fn url() -> Option<String> {
        mnemo_testkit::require_env(
            "MNEMO_TEST_POSTGRES_URL",
            "PostgreSQL migration tests (.ci/setup.d/30-postgres.sh)",
        )
    }

    const V1: &[&str] = &["CREATE TABLE mig_test_t (a INTEGER)"];
    const V2: &[&str] = &[
        "CREATE TABLE mig_test_t (a INTEGER)",
        "ALTER TABLE mig_test_t ADD COLUMN b TEXT",
    ];

    #[test]
    fn migrations_apply_once_in_order_and_a_newer_store_is_refused() {
        let Some(url) = url() else { return };
        let pg = Pg::connect(&url).unwrap_or_else(|e| panic!("{e}"));
        let reset = |pg: &Pg| {
            pg.call(|c| {
                c.batch_execute(
                    "CREATE TABLE IF NOT EXISTS mnemo_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
                     DROP TABLE IF EXISTS mig_test_t; DELETE FROM mnemo_schema WHERE component = 'mig-test'",
                )
            })
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
        };
        reset(&pg);
        assert_eq!(pg.migrate("mig-test", V1).ok(), Some(1));
        assert_eq!(
            pg.migrate("mig-test", V1).ok(),
            Some(1),
            "re-running is a no-op"
        );
        assert_eq!(
            pg.migrate("mig-test", V2).ok(),
            Some(2),
            "only the new step runs"
        );
        let cols: i64 = pg
            .call(|c| c.query_one("SELECT count(*) FROM information_schema.columns WHERE table_name = 'mig_test_t'", &[]).map(|r| r.get(0)))
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cols, 2);
        let e = pg.migrate("mig-test", V1).err();
        assert!(
            matches!(
                e,
                Some(PgError::TooNew {
                    found: 2,
                    known: 1,
                    ..
                })
            ),
            "{e:?}"
        );
        let msg = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.contains("newer mnemo") && msg.contains("version 2"),
            "{msg}"
        );
        reset(&pg);
    }

    /// `$MNEMO_TEST_POSTGRES_URL` with `sslmode=verify-full` against `ca`.
    fn tls_url(url: &str, ca: &str) -> String {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}sslmode=verify-full&sslrootcert={ca}")
    }

    /// Whether the server sees this connection as TLS (`pg_stat_ssl`).
    fn backend_ssl(pg: &Pg) -> bool {
        pg.call(|c| {
            c.query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .map(|r| r.get(0))
        })
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn tls_with_verify_full_against_the_servers_ca() {
        let Some(url) = url() else { return };
        let Some(ca) = mnemo_testkit::require_env(
            "MNEMO_TEST_POSTGRES_TLS_CA",
            "PostgreSQL over TLS (.ci/setup.d/30-postgres.sh makes the CA)",
        ) else {
            return;
        };
        let pg = Pg::connect(&tls_url(&url, &ca)).unwrap_or_else(|e| panic!("{e}"));
        let ssl = backend_ssl(&pg);
        assert!(ssl, "the server sees a TLS connection");
        // The same server without sslmode: plain, as before.
        let plain = Pg::connect(&url).unwrap_or_else(|e| panic!("{e}"));
        let ssl = backend_ssl(&plain);
        assert!(!ssl);
        // A certificate from another CA is refused, with the password hidden.
        if let Some(other) = mnemo_testkit::require_env(
            "MNEMO_TEST_POSTGRES_OTHER_CA",
            "an unrelated CA (.ci/setup.d/30-postgres.sh)",
        ) {
            let e = Pg::connect(&tls_url(&url, &other))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                e.contains("cannot connect") && e.to_lowercase().contains("certificate"),
                "{e}"
            );
            assert!(!e.contains("mnemo-test"), "password in {e}");
        }
    }

    #[test]
    fn a_bad_address_is_a_connect_error_without_the_password() {
        let e = Pg::connect("postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=2").err();
        let msg = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.contains("cannot connect") && !msg.contains("hunter2"),
            "{msg}"
        );
    }
}
