//! [`PgPipe`]: one connection on a thread of its own, like [`crate::Pg`],
//! but driven by `tokio-postgres` directly so that a caller can send several
//! statements at once and wait once ([`PipeClient::pipeline`]: PostgreSQL's
//! extended protocol lets a client queue statements without waiting for
//! each answer; the server runs them in order, each with its own snapshot
//! under READ COMMITTED, and a failed one aborts the transaction as it
//! would one by one). What a store pays per unit of work is its round
//! trips (each one a wake-up of the server and of this thread), so
//! [`PgPipe::round_trips`] counts them.
//!
//! A connection carries state of its own that its jobs use, typically the
//! statements prepared on it ([`PgPipe::connect_with`]): when the server
//! drops the connection (a restart, `pg_terminate_backend`), the job that
//! meets it fails, and the next one runs on a new connection with that
//! state built again, so prepared statements never outlive theirs.

use crate::{Connector, PgError};
use futures_util::future::BoxFuture;
use postgres::types::ToSql;
use postgres::{Row, Statement};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::task::Poll;

type Job<T> = Box<dyn FnOnce(&mut PipeClient, &T) + Send>;

/// One pipelining connection, owned by its own thread, with the state `T`
/// its jobs share (built on each new connection).
#[derive(Debug)]
pub struct PgPipe<T = ()> {
    jobs: mpsc::Sender<Job<T>>,
    calls: AtomicU64,
    trips: Arc<AtomicU64>,
}

/// One statement of a [`PipeClient::pipeline`].
pub enum Step<'a> {
    /// A statement without parameters, in the simple protocol (`BEGIN`,
    /// `COMMIT`); its rows are not returned.
    Simple(&'a str),
    /// A prepared statement with its parameters; its rows.
    Query(&'a Statement, Vec<&'a (dyn ToSql + Sync)>),
}

/// The connection as a job sees it: statements that wait for their answer
/// (one round trip each) and [`pipeline`](Self::pipeline)s.
pub struct PipeClient {
    rt: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
    trips: Arc<AtomicU64>,
}

impl std::fmt::Debug for PipeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeClient").finish_non_exhaustive()
    }
}

/// Polls every future, in order, until all are done: each one's first
/// poll sends its statement, so the statements leave in order before any
/// answer is awaited.
async fn in_order<T>(mut futs: Vec<BoxFuture<'_, T>>) -> Vec<T> {
    let mut out: Vec<Option<T>> = futs.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, slot) in futs.iter_mut().zip(out.iter_mut()) {
            if slot.is_none() {
                match Pin::new(f).poll(cx) {
                    Poll::Ready(v) => *slot = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

impl PipeClient {
    fn trip(&self) {
        self.trips.fetch_add(1, Ordering::Relaxed);
    }

    /// Sends every step at once and waits once (one round trip); each
    /// step's outcome, in order. After a failed step inside a transaction
    /// the later ones fail too ("current transaction is aborted"), and a
    /// `COMMIT` among them rolls back.
    pub fn pipeline(&mut self, steps: &[Step<'_>]) -> Vec<Result<Vec<Row>, postgres::Error>> {
        self.trip();
        let client = &self.client;
        let futs: Vec<BoxFuture<'_, Result<Vec<Row>, postgres::Error>>> = steps
            .iter()
            .map(|s| -> BoxFuture<'_, Result<Vec<Row>, postgres::Error>> {
                match s {
                    Step::Simple(q) => Box::pin(async move {
                        client.batch_execute(q).await?;
                        Ok(Vec::new())
                    }),
                    Step::Query(st, params) => Box::pin(client.query(*st, params)),
                }
            })
            .collect();
        self.rt.block_on(in_order(futs))
    }

    /// Runs statements without parameters (one round trip).
    pub fn batch_execute(&mut self, query: &str) -> Result<(), postgres::Error> {
        self.trip();
        self.rt.block_on(self.client.batch_execute(query))
    }

    /// Prepares a statement (one round trip).
    pub fn prepare(&mut self, query: &str) -> Result<Statement, postgres::Error> {
        self.trip();
        self.rt.block_on(self.client.prepare(query))
    }

    /// Runs a statement; the rows it changed (one round trip).
    pub fn execute(
        &mut self,
        st: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, postgres::Error> {
        self.trip();
        self.rt.block_on(self.client.execute(st, params))
    }

    /// Runs a statement; its rows (one round trip).
    pub fn query(
        &mut self,
        st: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        self.trip();
        self.rt.block_on(self.client.query(st, params))
    }

    /// Runs a statement that returns exactly one row (one round trip).
    pub fn query_one(
        &mut self,
        st: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, postgres::Error> {
        self.trip();
        self.rt.block_on(self.client.query_one(st, params))
    }

    /// Runs a statement that returns at most one row (one round trip).
    pub fn query_opt(
        &mut self,
        st: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        self.trip();
        self.rt.block_on(self.client.query_opt(st, params))
    }

    /// Runs a statement given as text, with parameters (two round trips:
    /// it is prepared first).
    pub fn execute_sql(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, postgres::Error> {
        self.trip();
        self.trip();
        self.rt.block_on(self.client.execute(sql, params))
    }

    /// Runs a query given as text, with parameters (two round trips).
    pub fn query_sql(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        self.trip();
        self.trip();
        self.rt.block_on(self.client.query(sql, params))
    }
}

/// Opens a connection on `rt`, its driver spawned there (it runs whenever
/// a job waits on the runtime).
fn open(
    rt: &tokio::runtime::Runtime,
    connector: &Connector,
    url: &str,
) -> Result<tokio_postgres::Client, postgres::Error> {
    rt.block_on(async {
        match connector {
            Connector::Plain => {
                let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(client)
            }
            Connector::Tls(t) => {
                let (client, conn) = tokio_postgres::connect(url, t.connector()).await?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(client)
            }
        }
    })
}

impl PgPipe<()> {
    /// Connects to `url` as [`crate::Pg::connect`] does (same URL forms,
    /// same TLS options), without per-connection state.
    pub fn connect(url: &str) -> Result<PgPipe<()>, PgError> {
        PgPipe::connect_with(url, |_| Ok(()))
    }
}

impl<T: Send + 'static> PgPipe<T> {
    /// Connects to `url` and builds the connection's state with `init`
    /// (preparing statements, say); `init` runs again on every connection
    /// opened after the server dropped one.
    pub fn connect_with(
        url: &str,
        init: impl Fn(&mut PipeClient) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<PgPipe<T>, PgError> {
        let target = crate::redact_url(url);
        let (url, connector) = crate::connector_for(url)?;
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), PgError>>();
        let (jobs, rx) = mpsc::channel::<Job<T>>();
        let trips = Arc::new(AtomicU64::new(0));
        let thread_trips = trips.clone();
        std::thread::Builder::new()
            .name("mnemo-postgres".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(PgError::Io(e)));
                        return;
                    }
                };
                let client = match open(&rt, &connector, &url) {
                    Ok(c) => c,
                    Err(source) => {
                        let _ = ready_tx.send(Err(PgError::Connect { target, source }));
                        return;
                    }
                };
                let mut pc = PipeClient {
                    rt,
                    client,
                    trips: thread_trips,
                };
                let mut state = match init(&mut pc) {
                    Ok(s) => {
                        let _ = ready_tx.send(Ok(()));
                        s
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(PgError::Db(e)));
                        return;
                    }
                };
                // Whether the state belongs to the connection in `pc`.
                let mut fresh = true;
                while let Ok(job) = rx.recv() {
                    // A dropped connection (server restart) is opened again,
                    // and its state built again, before the next job; the
                    // job that saw it fail has already answered its error.
                    if pc.client.is_closed() || !fresh {
                        fresh = false;
                        if let Ok(c) = open(&pc.rt, &connector, &url) {
                            pc.client = c;
                            if let Ok(s) = init(&mut pc) {
                                state = s;
                                fresh = true;
                            }
                        }
                    }
                    job(&mut pc, &state);
                }
            })?;
        ready_rx.recv().map_err(|_| PgError::Gone)??;
        Ok(PgPipe {
            jobs,
            calls: AtomicU64::new(0),
            trips,
        })
    }

    /// Runs `f` on the connection, with its state, and waits for its answer.
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut PipeClient, &T) -> R + Send + 'static,
    ) -> Result<R, PgError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::sync_channel(1);
        self.jobs
            .send(Box::new(move |c: &mut PipeClient, st: &T| {
                let _ = tx.send(f(c, st));
            }))
            .map_err(|_| PgError::Gone)?;
        rx.recv().map_err(|_| PgError::Gone)
    }

    /// How many [`call`](Self::call)s the connection's thread has served.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// How many times a job waited for the database (a statement, or a
    /// whole [`PipeClient::pipeline`]): the round trips.
    pub fn round_trips(&self) -> u64 {
        self.trips.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url() -> Option<String> {
        mnemo_testkit::require_env(
            "MNEMO_TEST_POSTGRES_URL",
            "PostgreSQL pipelining tests (.ci/setup.d/30-postgres.sh)",
        )
    }

    /// A pipeline runs its statements in order, in one round trip, in the
    /// transaction it opens; a failed step aborts the ones after it and
    /// its COMMIT keeps nothing.
    #[test]
    fn a_pipeline_is_one_round_trip_in_order_and_fails_as_a_whole() {
        let Some(url) = url() else { return };
        let pg = PgPipe::connect(&url).unwrap_or_else(|e| panic!("{e}"));
        let out = pg
            .call(|c, ()| {
                c.batch_execute(
                    "CREATE TABLE IF NOT EXISTS pipe_test_t (a INTEGER PRIMARY KEY); TRUNCATE pipe_test_t",
                )?;
                let ins = c.prepare("INSERT INTO pipe_test_t VALUES ($1) RETURNING a")?;
                let count = c.prepare("SELECT count(*) FROM pipe_test_t WHERE a > $1")?;
                let before = c.trips.load(Ordering::Relaxed);
                let (one, two, zero): (i32, i32, i32) = (1, 2, 0);
                let ok = c.pipeline(&[
                    Step::Simple("BEGIN"),
                    Step::Query(&ins, vec![&one]),
                    Step::Query(&ins, vec![&two]),
                    // Sees both rows: each statement its own snapshot, in order.
                    Step::Query(&count, vec![&zero]),
                    Step::Simple("COMMIT"),
                ]);
                let trips = c.trips.load(Ordering::Relaxed) - before;
                let counted: i64 = match &ok[3] {
                    Ok(rows) => rows.first().map(|r| r.get(0)).unwrap_or(-1),
                    Err(_) => -1,
                };
                // A duplicate key aborts the transaction: the row after it
                // is refused and COMMIT keeps neither.
                let three: i32 = 3;
                let bad = c.pipeline(&[
                    Step::Simple("BEGIN"),
                    Step::Query(&ins, vec![&three]),
                    Step::Query(&ins, vec![&one]),
                    Step::Query(&count, vec![&zero]),
                    Step::Simple("COMMIT"),
                ]);
                let kept: i64 = c.query_one(&count, &[&zero])?.get(0);
                c.batch_execute("DROP TABLE pipe_test_t")?;
                Ok::<_, postgres::Error>((
                    ok.iter().all(Result::is_ok),
                    trips,
                    counted,
                    bad.iter().map(Result::is_ok).collect::<Vec<_>>(),
                    kept,
                ))
            })
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, (true, 1, 2, vec![true, true, false, false, true], 2));
    }

    /// A connection the server drops is replaced before the next job, with
    /// its state (here a statement prepared on it) built again: the job
    /// that meets the dropped connection fails, the next one succeeds.
    #[test]
    fn a_dropped_connection_comes_back_with_its_statements() {
        let Some(url) = url() else { return };
        let pg = PgPipe::connect_with(&url, |c| c.prepare("SELECT pg_backend_pid()"))
            .unwrap_or_else(|e| panic!("{e}"));
        let pid = |pg: &PgPipe<Statement>| {
            pg.call(|c, st| c.query_one(st, &[]).map(|r| r.get::<_, i32>(0)))
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let first = pid(&pg).unwrap_or_else(|e| panic!("{e}"));
        let other = PgPipe::connect(&url).unwrap_or_else(|e| panic!("{e}"));
        other
            .call(move |c, ()| {
                let st = c.prepare("SELECT pg_terminate_backend($1)")?;
                c.query_one(&st, &[&first])
            })
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
        // The server may need a moment to close it; the first job after
        // that fails, then the connection is new.
        let mut failed = false;
        let mut again = None;
        for _ in 0..50 {
            match pid(&pg) {
                Err(_) => failed = true,
                Ok(p) if p != first => {
                    again = Some(p);
                    break;
                }
                Ok(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
        assert!(failed, "the job on the dropped connection reports it");
        assert!(
            again.is_some(),
            "a new connection, its statement prepared again"
        );
    }
}
