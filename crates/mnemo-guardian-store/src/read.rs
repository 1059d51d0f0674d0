//! Reading a store without changing it (for `mnemo report`): every
//! session's steps, their chain timestamps and the preCompact decisions.
//! The file is opened read-only; nothing is created or migrated.

use mnemo_acs::model::{Provenance, Verdict};
use mnemo_guardian::store::{CompactionRecord, StepRecord, StoreError};
use rusqlite::{Connection, OpenFlags, params};
use std::path::Path;

/// One session as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecords {
    /// Session id.
    pub session_id: String,
    /// Steps in order, each with the timestamp of its chain entry.
    pub steps: Vec<(StepRecord, Option<String>)>,
    /// preCompact decisions in the order they were recorded.
    pub compactions: Vec<CompactionRecord>,
}

fn db<T>(r: rusqlite::Result<T>) -> Result<T, StoreError> {
    r.map_err(StoreError::backend)
}

fn verdict(s: &str) -> Result<Verdict, StoreError> {
    match s {
        "allow" => Ok(Verdict::Allow),
        "deny" => Ok(Verdict::Deny),
        "modify" => Ok(Verdict::Modify),
        other => Err(StoreError::Corrupt(format!("verdict {other}"))),
    }
}

/// The store at `path` opened read-only (nothing created or migrated),
/// with its schema version (`PRAGMA user_version`).
fn open_read_only(path: &Path) -> Result<(Connection, i64), StoreError> {
    let conn = db(Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ))?;
    db(conn.busy_timeout(std::time::Duration::from_secs(5)))?;
    let version: i64 = db(conn.query_row("PRAGMA user_version", [], |r| r.get(0)))?;
    Ok((conn, version))
}

/// Every session of the store at `path`, sorted by session id (a store of
/// schema version 3 or 2, or an older one not yet migrated).
pub fn read_sessions(path: &Path) -> Result<Vec<SessionRecords>, StoreError> {
    let (conn, version) = open_read_only(path)?;
    if version >= 2 {
        return read_v2(&conn, version >= 3);
    }
    let mut ids: Vec<String> = Vec::new();
    {
        let mut stmt = db(conn.prepare(
            "SELECT session_id FROM steps UNION SELECT session_id FROM compactions ORDER BY 1",
        ))?;
        let rows = db(stmt.query_map([], |r| r.get::<_, String>(0)))?;
        for r in rows {
            ids.push(db(r)?);
        }
    }
    let with_reasons = crate::sqlite::has_column(&conn, "compactions", "reasoning")?;
    let mut out = Vec::new();
    for id in ids {
        let mut steps = Vec::new();
        let mut stmt = db(conn.prepare(
            "SELECT s.seq, s.step_id, s.method, s.provenance, c.canonical FROM steps s \
             LEFT JOIN chain c ON c.session_id = s.session_id AND c.seq = s.seq \
             WHERE s.session_id = ?1 ORDER BY s.seq",
        ))?;
        let rows = db(stmt.query_map(params![id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
            ))
        }))?;
        for row in rows {
            let (seq, step_id, method, prov, canonical) = db(row)?;
            steps.push(step_with_time(
                u64::try_from(seq).unwrap_or(0),
                step_id,
                method,
                &prov,
                canonical,
            )?);
        }
        let mut compactions = Vec::new();
        // Stores written before the reasoning was kept lack its columns.
        let sql = if with_reasons {
            "SELECT step_id, entries, verdict, reasoning, reason_codes FROM compactions WHERE session_id = ?1 ORDER BY id"
        } else {
            "SELECT step_id, entries, verdict, NULL, NULL FROM compactions WHERE session_id = ?1 ORDER BY id"
        };
        let mut stmt = db(conn.prepare(sql))?;
        let rows = db(stmt.query_map(params![id], compaction_row))?;
        for row in rows {
            compactions.push(compaction_from(db(row)?)?);
        }
        out.push(SessionRecords {
            session_id: id,
            steps,
            compactions,
        });
    }
    Ok(out)
}

/// The same, from a store of schema version 2 (integer session keys; a
/// step's and a chain entry's row keyed by `sid · 2³² + seq`) or, `v3`,
/// of version 3 (the chain entry in its step's row, which may hold an
/// entry without a step).
fn read_v2(conn: &Connection, v3: bool) -> Result<Vec<SessionRecords>, StoreError> {
    let (exists, select) = if v3 {
        (
            "SELECT sid, session_id FROM sessions s WHERE \
             EXISTS (SELECT 1 FROM steps WHERE id BETWEEN s.sid * 4294967296 AND s.sid * 4294967296 + 4294967295 \
               AND step_id IS NOT NULL) \
             OR EXISTS (SELECT 1 FROM compactions c WHERE c.sid = s.sid) ORDER BY session_id",
            "SELECT id, step_id, method, provenance, canonical FROM steps \
             WHERE id BETWEEN ?1 * 4294967296 AND ?1 * 4294967296 + 4294967295 AND step_id IS NOT NULL ORDER BY id",
        )
    } else {
        (
            "SELECT sid, session_id FROM sessions s WHERE \
             EXISTS (SELECT 1 FROM steps WHERE id BETWEEN s.sid * 4294967296 AND s.sid * 4294967296 + 4294967295) \
             OR EXISTS (SELECT 1 FROM compactions c WHERE c.sid = s.sid) ORDER BY session_id",
            "SELECT s.id, s.step_id, s.method, s.provenance, c.canonical FROM steps s \
             LEFT JOIN chain c ON c.id = s.id \
             WHERE s.id BETWEEN ?1 * 4294967296 AND ?1 * 4294967296 + 4294967295 ORDER BY s.id",
        )
    };
    let mut ids: Vec<(i64, String)> = Vec::new();
    {
        // Sessions with steps or decisions (a handshake alone is no record).
        let mut stmt = db(conn.prepare(exists))?;
        let rows = db(stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))))?;
        for r in rows {
            ids.push(db(r)?);
        }
    }
    let mut out = Vec::new();
    for (sid, id) in ids {
        let mut steps = Vec::new();
        let mut stmt = db(conn.prepare(select))?;
        let rows = db(stmt.query_map(params![sid], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
            ))
        }))?;
        for row in rows {
            let (key, step_id, method, prov, canonical) = db(row)?;
            steps.push(step_with_time(
                u64::try_from(key & 0xFFFF_FFFF).unwrap_or(0),
                step_id,
                method,
                &prov,
                canonical,
            )?);
        }
        let mut compactions = Vec::new();
        let mut stmt = db(conn.prepare(
            "SELECT step_id, entries, verdict, reasoning, reason_codes FROM compactions WHERE sid = ?1 ORDER BY id",
        ))?;
        let rows = db(stmt.query_map(params![sid], compaction_row))?;
        for row in rows {
            compactions.push(compaction_from(db(row)?)?);
        }
        out.push(SessionRecords {
            session_id: id,
            steps,
            compactions,
        });
    }
    Ok(out)
}

/// The newest preCompact decisions of the store at `path`, newest first:
/// one session's (`session`) or every session's, at most `limit`, each with
/// its session id (for `mnemo hook decision`: what a host that does not
/// show a hook's reason, such as `codex exec`, was told). Read-only, as
/// [`read_sessions`]: nothing is created or migrated.
pub fn recent_compactions(
    path: &Path,
    session: Option<&str>,
    limit: usize,
) -> Result<Vec<(String, CompactionRecord)>, StoreError> {
    let (conn, version) = open_read_only(path)?;
    let filter = if session.is_some() {
        "WHERE session_id = ?1"
    } else {
        "WHERE ?1 IS NULL"
    };
    let sql = if version >= 2 {
        format!(
            "SELECT session_id, step_id, entries, verdict, reasoning, reason_codes FROM \
             (SELECT s.session_id AS session_id, c.id AS id, c.step_id AS step_id, c.entries AS entries, \
              c.verdict AS verdict, c.reasoning AS reasoning, c.reason_codes AS reason_codes \
              FROM compactions c JOIN sessions s ON s.sid = c.sid) {filter} ORDER BY id DESC LIMIT ?2"
        )
    } else if crate::sqlite::has_column(&conn, "compactions", "reasoning")? {
        format!(
            "SELECT session_id, step_id, entries, verdict, reasoning, reason_codes FROM compactions \
             {filter} ORDER BY id DESC LIMIT ?2"
        )
    } else {
        format!(
            "SELECT session_id, step_id, entries, verdict, NULL, NULL FROM compactions \
             {filter} ORDER BY id DESC LIMIT ?2"
        )
    };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = db(conn.prepare(&sql))?;
    let rows = db(stmt.query_map(params![session, limit], |r| {
        Ok((r.get::<_, String>(0)?, compaction_row_at(r, 1)?))
    }))?;
    let mut out = Vec::new();
    for row in rows {
        let (id, row) = db(row)?;
        out.push((id, compaction_from(row)?));
    }
    Ok(out)
}

fn compaction_row_at(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<CompactionRow> {
    Ok((
        r.get(at)?,
        r.get(at + 1)?,
        r.get(at + 2)?,
        r.get(at + 3)?,
        r.get(at + 4)?,
    ))
}

type CompactionRow = (String, String, String, Option<String>, Option<String>);

fn compaction_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CompactionRow> {
    compaction_row_at(r, 0)
}

fn compaction_from(
    (step_id, entries, v, reasoning, codes): CompactionRow,
) -> Result<CompactionRecord, StoreError> {
    let entries: Vec<String> =
        serde_json::from_str(&entries).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(CompactionRecord {
        step_id,
        entries,
        verdict: verdict(&v)?,
        reasoning,
        reason_codes: crate::sqlite::reason_codes_from(codes.as_deref())?,
    })
}

/// A step and the timestamp of its chain entry's canonical text.
fn step_with_time(
    seq: u64,
    step_id: String,
    method: String,
    prov: &str,
    canonical: Option<String>,
) -> Result<(StepRecord, Option<String>), StoreError> {
    let provenance: Vec<Provenance> =
        serde_json::from_str(prov).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let timestamp = canonical.and_then(|c| {
        serde_json::from_str::<serde_json::Value>(&c)
            .ok()?
            .get("timestamp")?
            .as_str()
            .map(str::to_string)
    });
    Ok((
        StepRecord {
            seq,
            step_id,
            method,
            provenance,
        },
        timestamp,
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::SqliteStore;
    use mnemo_acs::model::Origin;
    use mnemo_guardian::store::SessionStore;

    #[test]
    fn reads_what_the_store_recorded_without_changing_it() {
        let dir = std::env::temp_dir().join(format!("mnemo-read-test-{}", std::process::id()));
        let path = dir.join("g.sqlite3");
        {
            let mut s = SqliteStore::open(&path).unwrap();
            for (seq, sess) in [(1, "b"), (1, "a"), (2, "a")] {
                s.record_step(
                    sess,
                    &StepRecord {
                        seq,
                        step_id: format!("{sess}-{seq}"),
                        method: "steps/preCompact".into(),
                        provenance: vec![Provenance::new("p1", Origin::ToolOutput, None)],
                    },
                )
                .unwrap();
                s.append_chain(
                    sess,
                    seq,
                    &format!("{{\"timestamp\":\"2026-12-01T00:00:0{seq}Z\"}}"),
                    &[0u8; 32],
                )
                .unwrap();
            }
            s.record_compaction(
                "a",
                &CompactionRecord {
                    step_id: "a-2".into(),
                    entries: vec!["a-1".into()],
                    verdict: Verdict::Deny,
                    reasoning: Some("denied: re-ground to end it".into()),
                    reason_codes: vec!["untrusted_content".into()],
                },
            )
            .unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let got = read_sessions(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert_eq!(
            got.iter()
                .map(|s| s.session_id.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(got[0].steps.len(), 2);
        assert_eq!(got[0].steps[1].1.as_deref(), Some("2026-12-01T00:00:02Z"));
        assert_eq!(got[0].compactions[0].verdict, Verdict::Deny);
        assert_eq!(
            got[0].compactions[0].reasoning.as_deref(),
            Some("denied: re-ground to end it")
        );
        assert_eq!(got[0].compactions[0].reason_codes, ["untrusted_content"]);
        assert!(read_sessions(&dir.join("missing.sqlite3")).is_err());
        // The newest decisions, one session's or every session's.
        {
            let mut s = SqliteStore::open(&path).unwrap();
            s.record_compaction(
                "b",
                &CompactionRecord {
                    step_id: "b-1".into(),
                    entries: vec![],
                    verdict: Verdict::Allow,
                    reasoning: Some(String::new()),
                    reason_codes: vec![],
                },
            )
            .unwrap();
        }
        let ids = |v: Vec<(String, CompactionRecord)>| {
            v.into_iter()
                .map(|(s, c)| format!("{s}:{}", c.step_id))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(recent_compactions(&path, None, 5).unwrap()),
            ["b:b-1", "a:a-2"]
        );
        assert_eq!(ids(recent_compactions(&path, None, 1).unwrap()), ["b:b-1"]);
        assert_eq!(
            ids(recent_compactions(&path, Some("a"), 5).unwrap()),
            ["a:a-2"]
        );
        assert!(recent_compactions(&path, Some("c"), 5).unwrap().is_empty());
        assert!(recent_compactions(&dir.join("missing.sqlite3"), None, 1).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
