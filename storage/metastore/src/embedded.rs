//! The embedded metadata store: Oxia's semantics on a local SQLite file that several processes
//! on one host can share (the broker and the compactor open the same `data/meta/meta.sqlite`).
//!
//! Shape (see `docs/metastore-embedded.md`):
//! - keys are stored with [`sort_key`](crate::sort_key) as the primary key, so SQLite's
//!   byte order is Oxia's key order;
//! - writes go to one writer thread per file and process, which commits whatever is queued in
//!   one transaction (group commit, one fsync); SQLite's write lock serializes processes, and the
//!   store-wide `version_id` counter lives in the same transaction;
//! - reads run on a small connection pool in blocking threads;
//! - each handle owns a session row, renewed by a keep-alive thread; any live handle in any
//!   process reaps expired sessions and their ephemeral records;
//! - notifications come from the writer (same process, immediately) and from a polled change
//!   log (other processes, within ~50 ms).

mod notify;
mod ops;
mod reader;
mod schema;
mod shared;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use tokio::sync::broadcast::error::RecvError;

use self::ops::PutOp;
use self::shared::Shared;
pub use self::writer::WriterStats;
use self::writer::{WriteOp, WriteOutcome};
use super::rules::{validate_key, validate_sequence_put};
use super::{
    Comparison, Expect, MetaError, MetaOptions, MetaResult, MetaStore, Notification, PutOptions,
    PutResult, Record,
};

/// One handle (one session) on an embedded store.
pub struct EmbeddedMetaStore {
    shared: Arc<Shared>,
    session_id: i64,
    session_expired: Arc<AtomicBool>,
    options: MetaOptions,
    closed: AtomicBool,
}

impl EmbeddedMetaStore {
    /// File name used inside a data directory's `meta/` folder.
    pub const FILE_NAME: &'static str = "meta.sqlite";

    /// Opens (creating if needed) the store in the SQLite file at `path` and starts a session.
    pub async fn open(path: impl AsRef<Path>, options: MetaOptions) -> MetaResult<Self> {
        let path = path.as_ref().to_path_buf();
        let deadline = options.request_timeout;
        let open = async {
            let wants_notifications = options.notifications;
            let shared = tokio::task::spawn_blocking(move || {
                let shared = Shared::open(&path)?;
                if wants_notifications {
                    shared.ensure_poller()?;
                }
                Ok::<_, MetaError>(shared)
            })
            .await
            .map_err(|e| MetaError::Unavailable(format!("open task failed: {e}")))??;
            let timeout_ms = u64::try_from(options.session_timeout.as_millis()).unwrap_or(u64::MAX);
            let session_id = match shared.write(WriteOp::OpenSession { timeout_ms }).await? {
                WriteOutcome::SessionOpened(id) => id,
                _ => return Err(unexpected_outcome()),
            };
            let session_expired = shared.register_lease(session_id, options.session_timeout);
            tracing::debug!(session_id, path = %shared.path.display(), "opened metadata session");
            Ok(EmbeddedMetaStore {
                shared,
                session_id,
                session_expired,
                options: options.clone(),
                closed: AtomicBool::new(false),
            })
        };
        tokio::time::timeout(deadline, open)
            .await
            .map_err(|_| MetaError::Timeout)?
    }

    /// Opens `<dir>/meta.sqlite`.
    pub async fn open_in_dir(dir: impl AsRef<Path>, options: MetaOptions) -> MetaResult<Self> {
        Self::open(dir.as_ref().join(Self::FILE_NAME), options).await
    }

    /// The session owning this handle's ephemeral records.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// Group-commit counters of this process's writer for this file (shared by its handles).
    pub fn writer_stats(&self) -> &WriterStats {
        &self.shared.stats
    }

    /// The database file.
    pub fn path(&self) -> PathBuf {
        self.shared.path.clone()
    }

    fn check_open(&self) -> MetaResult<()> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(MetaError::Closed);
        }
        Ok(())
    }

    async fn within_deadline<T>(
        &self,
        work: impl std::future::Future<Output = MetaResult<T>>,
    ) -> MetaResult<T> {
        tokio::time::timeout(self.options.request_timeout, work)
            .await
            .map_err(|_| MetaError::Timeout)?
    }

    async fn write(&self, op: WriteOp) -> MetaResult<WriteOutcome> {
        self.within_deadline(self.shared.write(op)).await
    }

    async fn read<T, F>(&self, f: F) -> MetaResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.check_open()?;
        self.within_deadline(self.shared.readers.run(f)).await
    }
}

impl Drop for EmbeddedMetaStore {
    /// A handle dropped without `close` stops renewing its session, which then expires like a
    /// crashed process's would (its ephemeral records outlive it by up to the session timeout).
    fn drop(&mut self) {
        self.shared.release_lease(self.session_id);
    }
}

fn unexpected_outcome() -> MetaError {
    MetaError::Unavailable("metadata writer gave an unexpected answer".into())
}

#[async_trait]
impl MetaStore for EmbeddedMetaStore {
    async fn put(&self, key: &str, value: Bytes, options: PutOptions) -> MetaResult<PutResult> {
        self.check_open()?;
        validate_key(key)?;
        if let Some(deltas) = &options.sequence_key_deltas {
            validate_sequence_put(&options, deltas)?;
        }
        if options.ephemeral && self.session_expired.load(Ordering::SeqCst) {
            return Err(MetaError::SessionExpired);
        }
        let op = WriteOp::Put(PutOp {
            key: key.to_string(),
            value,
            expect: options.expect,
            sequence_key_deltas: options.sequence_key_deltas,
            session_id: options.ephemeral.then_some(self.session_id),
        });
        match self.write(op).await? {
            WriteOutcome::Put(result) => Ok(result),
            _ => Err(unexpected_outcome()),
        }
    }

    async fn get(
        &self,
        key: &str,
        comparison: Comparison,
        _partition_key: Option<&str>,
    ) -> MetaResult<Option<Record>> {
        validate_key(key)?;
        let key = key.to_string();
        self.read(move |conn| reader::get(conn, &key, comparison))
            .await
    }

    async fn delete(
        &self,
        key: &str,
        expect: Expect,
        _partition_key: Option<&str>,
    ) -> MetaResult<()> {
        self.check_open()?;
        validate_key(key)?;
        match self
            .write(WriteOp::Delete {
                key: key.to_string(),
                expect,
            })
            .await?
        {
            WriteOutcome::Done => Ok(()),
            _ => Err(unexpected_outcome()),
        }
    }

    async fn delete_range(
        &self,
        min_key: &str,
        max_key: &str,
        _partition_key: Option<&str>,
    ) -> MetaResult<()> {
        self.check_open()?;
        validate_key(min_key)?;
        validate_key(max_key)?;
        let op = WriteOp::DeleteRange {
            min_key: min_key.to_string(),
            max_key: max_key.to_string(),
        };
        match self.write(op).await? {
            WriteOutcome::Done => Ok(()),
            _ => Err(unexpected_outcome()),
        }
    }

    async fn list(
        &self,
        min_key: &str,
        max_key: &str,
        _partition_key: Option<&str>,
    ) -> MetaResult<Vec<String>> {
        validate_key(min_key)?;
        validate_key(max_key)?;
        let (min_key, max_key) = (min_key.to_string(), max_key.to_string());
        self.read(move |conn| reader::list(conn, &min_key, &max_key))
            .await
    }

    async fn range_scan(
        &self,
        min_key: &str,
        max_key: &str,
        _partition_key: Option<&str>,
        limit: usize,
    ) -> MetaResult<Vec<Record>> {
        validate_key(min_key)?;
        validate_key(max_key)?;
        let (min_key, max_key) = (min_key.to_string(), max_key.to_string());
        self.read(move |conn| reader::range_scan(conn, &min_key, &max_key, limit))
            .await
    }

    /// Bounded: a subscriber more than `NOTIFICATION_BUFFER_MAX` notifications behind loses the
    /// oldest ones (a warning is logged) and continues with newer ones.
    async fn notifications(&self) -> MetaResult<BoxStream<'static, Notification>> {
        self.check_open()?;
        if !self.options.notifications {
            return Err(MetaError::InvalidArgument(
                "handle was opened without notifications".into(),
            ));
        }
        let receiver = self.shared.subscribe();
        let stream = futures::stream::unfold(receiver, |mut receiver| async move {
            loop {
                match receiver.recv().await {
                    Ok(notification) => return Some((notification, receiver)),
                    Err(RecvError::Lagged(skipped)) => {
                        tracing::warn!(
                            skipped,
                            "notification subscriber lagged, oldest notifications dropped"
                        )
                    }
                    Err(RecvError::Closed) => return None,
                }
            }
        });
        Ok(stream.boxed())
    }

    async fn close(&self) -> MetaResult<()> {
        if self.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.shared.release_lease(self.session_id);
        match self
            .write(WriteOp::CloseSession {
                session_id: self.session_id,
            })
            .await?
        {
            WriteOutcome::Done => Ok(()),
            _ => Err(unexpected_outcome()),
        }
    }
}
