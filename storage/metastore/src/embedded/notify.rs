//! Notifications: the change-log encoding and the poller that carries other processes' changes
//! into this process.
//!
//! Every write batch appends its changes to the `changes` table. Handles in the same process get
//! them at once through a tokio broadcast channel fed by the writer thread after commit; changes
//! made by other processes reach that same channel through a poller that reads new `changes`
//! rows every [`POLL_INTERVAL`]. Rows carry the writing process's `origin` so the poller skips
//! what the fast path already delivered.
//!
//! Limits: the broadcast buffer holds [`NOTIFICATION_BUFFER_MAX`] notifications; a subscriber
//! that falls further behind loses the oldest ones (logged). The change log keeps rows for
//! [`CHANGE_LOG_MAX_AGE_MS`] and at most [`CHANGE_LOG_ROWS_MAX`] rows; a poller stalled longer
//! than that misses changes. Order is exact among one process's changes; changes of two
//! processes interleave in commit order as seen by the poller, up to one poll interval late.

use std::sync::Weak;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::broadcast;

use super::shared::Shared;
use crate::Notification;

pub(super) const POLL_INTERVAL: Duration = Duration::from_millis(50);
pub(super) const NOTIFICATION_BUFFER_MAX: usize = 4096;
pub(super) const CHANGE_LOG_MAX_AGE_MS: u64 = 60_000;
pub(super) const CHANGE_LOG_ROWS_MAX: i64 = 200_000;
/// Rows read per poll; a larger backlog is read over the following polls.
const POLL_ROWS_MAX: i64 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ChangeKind {
    Created = 1,
    Modified = 2,
    Deleted = 3,
    RangeDeleted = 4,
}

impl ChangeKind {
    fn from_code(code: i64) -> Option<Self> {
        match code {
            1 => Some(ChangeKind::Created),
            2 => Some(ChangeKind::Modified),
            3 => Some(ChangeKind::Deleted),
            4 => Some(ChangeKind::RangeDeleted),
            _ => None,
        }
    }

    pub fn notification(
        self,
        key: &str,
        end_key: Option<&str>,
        version_id: Option<i64>,
    ) -> Notification {
        let key = key.to_string();
        match self {
            ChangeKind::Created => Notification::KeyCreated {
                key,
                version_id: version_id.unwrap_or(-1),
            },
            ChangeKind::Modified => Notification::KeyModified {
                key,
                version_id: version_id.unwrap_or(-1),
            },
            ChangeKind::Deleted => Notification::KeyDeleted { key },
            ChangeKind::RangeDeleted => Notification::KeyRangeDeleted {
                key,
                end_key: end_key.unwrap_or_default().to_string(),
            },
        }
    }
}

/// The id of the newest change-log row; the poller starts after it.
pub(super) fn last_change_id(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT COALESCE(MAX(id), 0) FROM changes", [], |r| r.get(0))
}

/// Polls the change log until the shared store is dropped.
pub(super) fn run_poller(
    shared: Weak<Shared>,
    conn: Connection,
    origin: i64,
    mut last_id: i64,
    events: broadcast::Sender<Notification>,
) {
    loop {
        std::thread::sleep(POLL_INTERVAL);
        if shared.strong_count() == 0 {
            return;
        }
        match poll_once(&conn, origin, last_id, &events) {
            Ok(next) => last_id = next,
            Err(error) => tracing::warn!(%error, "metadata change-log poll failed"),
        }
    }
}

fn poll_once(
    conn: &Connection,
    origin: i64,
    last_id: i64,
    events: &broadcast::Sender<Notification>,
) -> rusqlite::Result<i64> {
    let upto: i64 = conn.query_row(
        "SELECT COALESCE(MAX(id), 0) FROM (SELECT id FROM changes WHERE id > ?1 ORDER BY id LIMIT ?2)",
        rusqlite::params![last_id, POLL_ROWS_MAX],
        |r| r.get(0),
    )?;
    if upto <= last_id {
        return Ok(last_id);
    }
    let mut stmt = conn.prepare_cached(
        "SELECT kind, key, end_key, version_id FROM changes
         WHERE id > ?1 AND id <= ?2 AND origin != ?3 ORDER BY id",
    )?;
    let rows = stmt.query_map(rusqlite::params![last_id, upto, origin], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, Option<i64>>(3)?,
        ))
    })?;
    for row in rows {
        let (code, key, end_key, version_id) = row?;
        match ChangeKind::from_code(code) {
            // No receivers is fine: nobody is listening right now.
            Some(kind) => {
                drop(events.send(kind.notification(&key, end_key.as_deref(), version_id)))
            }
            None => tracing::warn!(code, "unknown change kind in metadata change log"),
        }
    }
    Ok(upto)
}
