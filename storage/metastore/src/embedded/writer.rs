//! The writer thread: drains queued write requests and applies each drained group in ONE
//! transaction with one fsync (group commit), then answers every request.
//!
//! SQLite allows one writer at a time per database anyway; queuing in memory and committing in
//! groups turns N concurrent puts into one lock acquisition and one fsync instead of N.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::{broadcast, mpsc, oneshot};

use super::notify::{CHANGE_LOG_MAX_AGE_MS, CHANGE_LOG_ROWS_MAX};
use super::ops::{Batch, OpError, OpResult, PutOp};
use crate::{Expect, MetaError, MetaResult, Notification, PutResult};

/// Requests queued for the writer; senders wait (asynchronously) when it is full.
pub(super) const WRITE_QUEUE_MAX: usize = 4096;
/// Requests applied in one transaction at most.
const BATCH_OPS_MAX: usize = 512;

pub(super) enum WriteOp {
    Put(PutOp),
    Delete {
        key: String,
        expect: Expect,
    },
    DeleteRange {
        min_key: String,
        max_key: String,
    },
    OpenSession {
        timeout_ms: u64,
    },
    CloseSession {
        session_id: i64,
    },
    /// Keep-alive and housekeeping: renew these sessions, reap expired ones, maybe prune.
    Maintain {
        renew: Vec<i64>,
        prune_changes: bool,
    },
}

pub(super) enum WriteOutcome {
    Put(PutResult),
    Done,
    SessionOpened(i64),
    /// Sessions that could not be renewed because they had already expired.
    Maintained {
        lost: Vec<i64>,
    },
}

pub(super) struct WriteRequest {
    pub op: WriteOp,
    pub reply: oneshot::Sender<MetaResult<WriteOutcome>>,
}

/// Counters of the writer thread, to observe group commit.
#[derive(Debug, Default)]
pub struct WriterStats {
    groups_committed: AtomicU64,
    ops_committed: AtomicU64,
}

impl WriterStats {
    /// Transactions committed so far.
    pub fn groups_committed(&self) -> u64 {
        self.groups_committed.load(Ordering::Relaxed)
    }

    /// Requests answered by those transactions.
    pub fn ops_committed(&self) -> u64 {
        self.ops_committed.load(Ordering::Relaxed)
    }
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Runs until every sender is dropped.
pub(super) fn run_writer(
    mut conn: Connection,
    origin: i64,
    mut requests: mpsc::Receiver<WriteRequest>,
    events: broadcast::Sender<Notification>,
    stats: Arc<WriterStats>,
) {
    let mut batch = Vec::with_capacity(BATCH_OPS_MAX);
    while requests.blocking_recv_many(&mut batch, BATCH_OPS_MAX) > 0 {
        // Requests whose caller gave up (timeout, cancellation) are skipped: their outcome is
        // documented as unknown, and not doing them is the cheaper unknown.
        batch.retain(|r: &WriteRequest| !r.reply.is_closed());
        if !batch.is_empty() {
            apply_group(&mut conn, origin, &mut batch, &events, &stats);
        }
        batch.clear();
    }
    tracing::debug!("metadata writer stopped");
}

fn apply_group(
    conn: &mut Connection,
    origin: i64,
    requests: &mut Vec<WriteRequest>,
    events: &broadcast::Sender<Notification>,
    stats: &WriterStats,
) {
    let ops_count = requests.len();
    match commit_group(conn, origin, requests) {
        Ok((results, notifications)) => {
            stats.groups_committed.fetch_add(1, Ordering::Relaxed);
            stats
                .ops_committed
                .fetch_add(ops_count as u64, Ordering::Relaxed);
            // Notify before replying so that a same-process watcher has the change queued by the
            // time the writer learns its put succeeded.
            for notification in notifications {
                drop(events.send(notification));
            }
            for (request, result) in requests.drain(..).zip(results) {
                drop(request.reply.send(result));
            }
        }
        Err(error) => {
            tracing::warn!(%error, ops_count, "metadata write batch failed");
            for request in requests.drain(..) {
                drop(
                    request
                        .reply
                        .send(Err(MetaError::Unavailable(error.to_string()))),
                );
            }
        }
    }
}

type GroupOutcome = (Vec<MetaResult<WriteOutcome>>, Vec<Notification>);

fn commit_group(
    conn: &mut Connection,
    origin: i64,
    requests: &mut [WriteRequest],
) -> Result<GroupOutcome, OpError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut batch = Batch::begin(&tx, origin, now_ms())?;
    let mut results = Vec::with_capacity(requests.len());
    for request in requests.iter_mut() {
        // Take the op out; the request keeps only its reply channel.
        let op = std::mem::replace(
            &mut request.op,
            WriteOp::Maintain {
                renew: Vec::new(),
                prune_changes: false,
            },
        );
        match apply(&mut batch, op) {
            Ok(outcome) => results.push(Ok(outcome)),
            Err(OpError::Meta(e)) => results.push(Err(e)),
            // Dropping `tx` rolls the whole group back.
            Err(e @ OpError::Sql(_)) => return Err(e),
        }
    }
    let notifications = batch.finish()?;
    tx.commit()?;
    Ok((results, notifications))
}

fn apply(batch: &mut Batch<'_>, op: WriteOp) -> OpResult<WriteOutcome> {
    match op {
        WriteOp::Put(put) => batch.put(put).map(WriteOutcome::Put),
        WriteOp::Delete { key, expect } => batch.delete(&key, expect).map(|()| WriteOutcome::Done),
        WriteOp::DeleteRange { min_key, max_key } => batch
            .delete_range(&min_key, &max_key)
            .map(|()| WriteOutcome::Done),
        WriteOp::OpenSession { timeout_ms } => batch
            .open_session(timeout_ms)
            .map(WriteOutcome::SessionOpened),
        WriteOp::CloseSession { session_id } => {
            batch.close_session(session_id).map(|()| WriteOutcome::Done)
        }
        WriteOp::Maintain {
            renew,
            prune_changes,
        } => {
            let lost = batch.renew_sessions(&renew)?;
            let reaped = batch.reap_expired_sessions()?;
            if !reaped.is_empty() {
                tracing::info!(?reaped, "reaped expired metadata sessions");
            }
            if prune_changes {
                batch.prune_changes(CHANGE_LOG_MAX_AGE_MS, CHANGE_LOG_ROWS_MAX)?;
            }
            Ok(WriteOutcome::Maintained { lost })
        }
    }
}
