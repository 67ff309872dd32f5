//! Reads, on a small pool of read-only connections, off the async runtime.
//!
//! WAL mode lets readers run concurrently with the writer (this process's and others'), and a
//! read started after a write was acknowledged sees it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension, Row};
use tokio::sync::Semaphore;

use super::schema;
use crate::{sort_key, Comparison, MetaError, MetaResult, Record, Version};

/// Concurrent reads at most (and connections kept open for them).
const READERS_MAX: usize = 4;

pub(super) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

impl Readers {
    pub fn new(path: PathBuf) -> Self {
        Readers {
            path,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(READERS_MAX)),
        }
    }

    /// Runs `f` on a pooled connection in a blocking thread.
    pub async fn run<T, F>(self: &Arc<Self>, f: F) -> MetaResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| MetaError::Unavailable("reader pool closed".into()))?;
        let this = Arc::clone(self);
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let conn = match this.take() {
                Ok(conn) => conn,
                Err(e) => return Err(e),
            };
            let result = f(&conn);
            this.give_back(conn);
            result
        })
        .await;
        match joined {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(MetaError::Unavailable(e.to_string())),
            Err(join_error) => Err(MetaError::Unavailable(format!(
                "read task failed: {join_error}"
            ))),
        }
    }

    fn take(&self) -> rusqlite::Result<Connection> {
        let pooled = self.idle.lock().map(|mut idle| idle.pop()).unwrap_or(None);
        match pooled {
            Some(conn) => Ok(conn),
            None => schema::open_reader(&self.path),
        }
    }

    fn give_back(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < READERS_MAX {
                idle.push(conn);
            }
        }
    }
}

const RECORD_COLUMNS: &str =
    "key, value, version_id, modifications_count, created_ms, modified_ms, session_id";

fn record_from_row(row: &Row<'_>) -> rusqlite::Result<Record> {
    let value: Vec<u8> = row.get(1)?;
    let created_ms: i64 = row.get(4)?;
    let modified_ms: i64 = row.get(5)?;
    Ok(Record {
        key: row.get(0)?,
        value: Bytes::from(value),
        version: Version {
            version_id: row.get(2)?,
            modifications_count: row.get(3)?,
            created_ms: u64::try_from(created_ms).unwrap_or(0),
            modified_ms: u64::try_from(modified_ms).unwrap_or(0),
            session_id: row.get(6)?,
        },
    })
}

pub(super) fn get(
    conn: &Connection,
    key: &str,
    comparison: Comparison,
) -> rusqlite::Result<Option<Record>> {
    let condition = match comparison {
        Comparison::Equal => "sort_key = ?1",
        Comparison::Floor => "sort_key <= ?1 ORDER BY sort_key DESC",
        Comparison::Ceiling => "sort_key >= ?1 ORDER BY sort_key ASC",
        Comparison::Lower => "sort_key < ?1 ORDER BY sort_key DESC",
        Comparison::Higher => "sort_key > ?1 ORDER BY sort_key ASC",
    };
    let sql = format!("SELECT {RECORD_COLUMNS} FROM kv WHERE {condition} LIMIT 1");
    conn.prepare_cached(&sql)?
        .query_row([sort_key(key)], record_from_row)
        .optional()
}

pub(super) fn list(
    conn: &Connection,
    min_key: &str,
    max_key: &str,
) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached(
        "SELECT key FROM kv WHERE sort_key >= ?1 AND sort_key < ?2 ORDER BY sort_key",
    )?
    .query_map([sort_key(min_key), sort_key(max_key)], |r| r.get(0))?
    .collect()
}

pub(super) fn range_scan(
    conn: &Connection,
    min_key: &str,
    max_key: &str,
    limit: usize,
) -> rusqlite::Result<Vec<Record>> {
    let sql = format!(
        "SELECT {RECORD_COLUMNS} FROM kv WHERE sort_key >= ?1 AND sort_key < ?2 ORDER BY sort_key LIMIT ?3"
    );
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    conn.prepare_cached(&sql)?
        .query_map(
            rusqlite::params![sort_key(min_key), sort_key(max_key), limit],
            record_from_row,
        )?
        .collect()
}

/// Whether some session's deadline has passed (cheap check before asking the writer to reap).
pub(super) fn any_session_expired(conn: &Connection, now_ms: u64) -> rusqlite::Result<bool> {
    let now_ms = i64::try_from(now_ms).unwrap_or(i64::MAX);
    conn.prepare_cached("SELECT EXISTS(SELECT 1 FROM sessions WHERE deadline_ms < ?1)")?
        .query_row([now_ms], |r| r.get(0))
}
