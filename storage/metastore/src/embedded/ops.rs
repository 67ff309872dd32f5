//! The write operations, applied inside the writer's group-commit transaction.
//!
//! Each operation checks its preconditions before it writes anything, so a failed condition
//! (`UnexpectedVersion`, ...) leaves the transaction untouched and the other operations of the
//! batch still commit. A SQLite error, on the other hand, aborts the whole batch.

use bytes::Bytes;
use rusqlite::{OptionalExtension, Transaction};

use super::notify::ChangeKind;
use crate::rules::{check_expect, next_sequence_key, sequence_upper_bound};
use crate::{sort_key, Expect, MetaError, Notification, PutResult, Version};

/// Why an operation failed: the caller's fault (reported to that caller only) or the store's
/// (the batch is rolled back).
#[derive(Debug)]
pub(super) enum OpError {
    Meta(MetaError),
    Sql(rusqlite::Error),
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpError::Meta(e) => e.fmt(f),
            OpError::Sql(e) => e.fmt(f),
        }
    }
}

impl From<rusqlite::Error> for OpError {
    fn from(e: rusqlite::Error) -> Self {
        OpError::Sql(e)
    }
}

impl From<MetaError> for OpError {
    fn from(e: MetaError) -> Self {
        OpError::Meta(e)
    }
}

pub(super) type OpResult<T> = Result<T, OpError>;

/// A put as the writer receives it (already validated by the handle).
pub(super) struct PutOp {
    pub key: String,
    pub value: Bytes,
    pub expect: Expect,
    pub sequence_key_deltas: Option<Vec<u64>>,
    pub session_id: Option<i64>,
}

/// State of one group-commit transaction.
pub(super) struct Batch<'t> {
    tx: &'t Transaction<'t>,
    origin: i64,
    now_ms: u64,
    last_version_id: i64,
    /// Changes committed by this batch, in order, for the in-process fast path.
    pub notifications: Vec<Notification>,
}

struct Existing {
    version_id: i64,
    modifications_count: i64,
    created_ms: i64,
}

impl<'t> Batch<'t> {
    pub fn begin(tx: &'t Transaction<'t>, origin: i64, now_ms: u64) -> OpResult<Self> {
        let last_version_id: i64 = tx.query_row(
            "SELECT value FROM counters WHERE name = 'version_id'",
            [],
            |r| r.get(0),
        )?;
        Ok(Batch {
            tx,
            origin,
            now_ms,
            last_version_id,
            notifications: Vec::new(),
        })
    }

    /// Persists the version counter; call once, just before commit.
    pub fn finish(self) -> OpResult<Vec<Notification>> {
        self.tx.execute(
            "UPDATE counters SET value = ?1 WHERE name = 'version_id'",
            [self.last_version_id],
        )?;
        Ok(self.notifications)
    }

    fn now_ms_i64(&self) -> i64 {
        i64::try_from(self.now_ms).unwrap_or(i64::MAX)
    }

    fn next_version_id(&mut self) -> i64 {
        self.last_version_id += 1;
        self.last_version_id
    }

    pub fn put(&mut self, op: PutOp) -> OpResult<PutResult> {
        let key = match &op.sequence_key_deltas {
            Some(deltas) => self.next_sequence_key(&op.key, deltas)?,
            None => op.key,
        };
        if let Some(session_id) = op.session_id {
            self.check_session_alive(session_id)?;
        }
        let sort_key = sort_key(&key);
        let existing = self.existing(&sort_key)?;
        check_expect(op.expect, existing.as_ref().map(|e| e.version_id))?;

        let version_id = self.next_version_id();
        let now_ms = self.now_ms_i64();
        let (modifications_count, created_ms) = match &existing {
            Some(e) => (e.modifications_count + 1, e.created_ms),
            None => (0, now_ms),
        };
        self.tx
            .prepare_cached(
                "INSERT OR REPLACE INTO kv (sort_key, key, value, version_id, modifications_count,
                 created_ms, modified_ms, session_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(rusqlite::params![
                sort_key,
                key,
                &op.value[..],
                version_id,
                modifications_count,
                created_ms,
                now_ms,
                op.session_id,
            ])?;
        let kind = if existing.is_some() {
            ChangeKind::Modified
        } else {
            ChangeKind::Created
        };
        self.record_change(kind, &key, None, Some(version_id))?;
        Ok(PutResult {
            key,
            version: Version {
                version_id,
                modifications_count,
                created_ms: u64::try_from(created_ms).unwrap_or(0),
                modified_ms: self.now_ms,
                session_id: op.session_id,
            },
        })
    }

    /// Oxia's rule, see [`next_sequence_key`]: one indexed lookup of the sequence's highest key.
    fn next_sequence_key(&self, prefix: &str, deltas: &[u64]) -> OpResult<String> {
        let upper = sort_key(&sequence_upper_bound(prefix));
        let last: Option<String> = self
            .tx
            .prepare_cached(
                "SELECT key FROM kv WHERE sort_key < ?1 ORDER BY sort_key DESC LIMIT 1",
            )?
            .query_row([upper], |r| r.get(0))
            .optional()?;
        Ok(next_sequence_key(prefix, last.as_deref(), deltas)?)
    }

    pub fn delete(&mut self, key: &str, expect: Expect) -> OpResult<()> {
        let sort_key = sort_key(key);
        let existing = self.existing(&sort_key)?;
        // Oxia: an expectation is checked first (a missing key fails it), then existence.
        if expect != Expect::Any {
            check_expect(expect, existing.as_ref().map(|e| e.version_id))?;
        }
        if existing.is_none() {
            return Err(MetaError::KeyNotFound.into());
        }
        self.tx
            .prepare_cached("DELETE FROM kv WHERE sort_key = ?1")?
            .execute([sort_key])?;
        self.record_change(ChangeKind::Deleted, key, None, None)
    }

    pub fn delete_range(&mut self, min_key: &str, max_key: &str) -> OpResult<()> {
        let deleted = self
            .tx
            .prepare_cached("DELETE FROM kv WHERE sort_key >= ?1 AND sort_key < ?2")?
            .execute([sort_key(min_key), sort_key(max_key)])?;
        if deleted > 0 {
            self.record_change(ChangeKind::RangeDeleted, min_key, Some(max_key), None)?;
        }
        Ok(())
    }

    pub fn open_session(&mut self, timeout_ms: u64) -> OpResult<i64> {
        let timeout_ms = i64::try_from(timeout_ms).unwrap_or(i64::MAX / 2);
        let now_ms = self.now_ms_i64();
        self.tx.execute(
            "INSERT INTO sessions (timeout_ms, deadline_ms, created_ms, pid) VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![timeout_ms, now_ms.saturating_add(timeout_ms), now_ms, std::process::id()],
        )?;
        Ok(self.tx.last_insert_rowid())
    }

    /// Deletes the session and its ephemeral records (notifying a deletion per record).
    pub fn close_session(&mut self, session_id: i64) -> OpResult<()> {
        let keys: Vec<String> = self
            .tx
            .prepare_cached("SELECT key FROM kv WHERE session_id = ?1")?
            .query_map([session_id], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        self.tx
            .prepare_cached("DELETE FROM kv WHERE session_id = ?1")?
            .execute([session_id])?;
        self.tx
            .prepare_cached("DELETE FROM sessions WHERE id = ?1")?
            .execute([session_id])?;
        for key in &keys {
            self.record_change(ChangeKind::Deleted, key, None, None)?;
        }
        Ok(())
    }

    /// Extends the deadline of live sessions; returns those already expired or gone.
    pub fn renew_sessions(&mut self, session_ids: &[i64]) -> OpResult<Vec<i64>> {
        let now_ms = self.now_ms_i64();
        let mut lost = Vec::new();
        for &id in session_ids {
            let renewed = self
                .tx
                .prepare_cached(
                    "UPDATE sessions SET deadline_ms = ?1 + timeout_ms
                     WHERE id = ?2 AND deadline_ms >= ?1",
                )?
                .execute(rusqlite::params![now_ms, id])?;
            if renewed == 0 {
                lost.push(id);
            }
        }
        Ok(lost)
    }

    /// Ends every session whose deadline passed (their owners died or stalled).
    pub fn reap_expired_sessions(&mut self) -> OpResult<Vec<i64>> {
        let expired: Vec<i64> = self
            .tx
            .prepare_cached("SELECT id FROM sessions WHERE deadline_ms < ?1")?
            .query_map([self.now_ms_i64()], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for &id in &expired {
            self.close_session(id)?;
        }
        Ok(expired)
    }

    /// Drops change-log rows older than `max_age_ms`, and beyond `rows_max` newest rows.
    pub fn prune_changes(&mut self, max_age_ms: u64, rows_max: i64) -> OpResult<()> {
        let cutoff_ms = self
            .now_ms_i64()
            .saturating_sub(i64::try_from(max_age_ms).unwrap_or(0));
        self.tx
            .execute("DELETE FROM changes WHERE created_ms < ?1", [cutoff_ms])?;
        self.tx.execute(
            "DELETE FROM changes WHERE id <= (SELECT MAX(id) FROM changes) - ?1",
            [rows_max],
        )?;
        Ok(())
    }

    fn check_session_alive(&self, session_id: i64) -> OpResult<()> {
        let alive = self
            .tx
            .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1 AND deadline_ms >= ?2")?
            .query_row(rusqlite::params![session_id, self.now_ms_i64()], |_| Ok(()))
            .optional()?;
        match alive {
            Some(()) => Ok(()),
            None => Err(MetaError::SessionExpired.into()),
        }
    }

    fn existing(&self, sort_key: &[u8]) -> OpResult<Option<Existing>> {
        Ok(self
            .tx
            .prepare_cached(
                "SELECT version_id, modifications_count, created_ms FROM kv WHERE sort_key = ?1",
            )?
            .query_row([sort_key], |r| {
                Ok(Existing {
                    version_id: r.get(0)?,
                    modifications_count: r.get(1)?,
                    created_ms: r.get(2)?,
                })
            })
            .optional()?)
    }

    fn record_change(
        &mut self,
        kind: ChangeKind,
        key: &str,
        end_key: Option<&str>,
        version_id: Option<i64>,
    ) -> OpResult<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO changes (origin, kind, key, end_key, version_id, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(rusqlite::params![
                self.origin,
                kind as i64,
                key,
                end_key,
                version_id,
                self.now_ms_i64()
            ])?;
        self.notifications
            .push(kind.notification(key, end_key, version_id));
        Ok(())
    }
}
