//! One handle (one session) on a [`MemoryStore`]: the `MetaStore` implementation.
//!
//! Checks run in the embedded handle's order (closed, key, sequence options, session), then the
//! operation is applied whole under the store's lock.

use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use tokio::sync::broadcast::error::RecvError;

use super::state::PutOp;
use super::MemoryStore;
use crate::rules::{validate_key, validate_sequence_put};
use crate::{
    Comparison, Expect, MetaError, MetaOptions, MetaResult, MetaStore, Notification, PutOptions,
    PutResult, Record,
};

/// One handle on a [`MemoryStore`], owning one session. Dropping it without `close` ends the
/// session at once (see the module docs).
pub struct MemoryMetaStore {
    store: MemoryStore,
    session_id: i64,
    options: MetaOptions,
    closed: AtomicBool,
}

impl MemoryMetaStore {
    pub(super) fn new(store: MemoryStore, session_id: i64, options: MetaOptions) -> Self {
        MemoryMetaStore {
            store,
            session_id,
            options,
            closed: AtomicBool::new(false),
        }
    }

    /// A handle on a new, empty store of its own (system clock, default limits).
    pub fn open(options: MetaOptions) -> Self {
        MemoryStore::new().handle(options)
    }

    /// The store this handle belongs to (to open more handles on it).
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }

    /// The session owning this handle's ephemeral records.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// Ends this handle's session as if it had timed out (a crashed or stalled process); see
    /// [`MemoryStore::expire_session`]. The handle stays usable for everything but ephemeral
    /// puts. Returns false if the session had already ended.
    pub fn expire_session(&self) -> bool {
        self.store.expire_session(self.session_id)
    }

    fn check_open(&self) -> MetaResult<()> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(MetaError::Closed);
        }
        Ok(())
    }

    fn end_session(&self, why: &'static str) {
        if let Some(ephemeral_records) = self.store.lock().end_session(self.session_id) {
            tracing::debug!(
                session_id = self.session_id,
                ephemeral_records,
                why,
                "ended memory metadata session"
            );
        }
    }
}

impl Drop for MemoryMetaStore {
    /// A lost handle is a crashed process whose session has timed out: its ephemeral records go
    /// now, since no timer will ever expire them.
    fn drop(&mut self) {
        if !self.closed.load(Ordering::SeqCst) {
            self.end_session("handle dropped without close");
        }
    }
}

#[async_trait]
impl MetaStore for MemoryMetaStore {
    async fn put(&self, key: &str, value: Bytes, options: PutOptions) -> MetaResult<PutResult> {
        self.check_open()?;
        validate_key(key)?;
        if let Some(deltas) = &options.sequence_key_deltas {
            validate_sequence_put(&options, deltas)?;
        }
        let op = PutOp {
            key: key.to_string(),
            value,
            expect: options.expect,
            sequence_key_deltas: options.sequence_key_deltas,
            session_id: options.ephemeral.then_some(self.session_id),
        };
        self.store.lock().put(op)
    }

    async fn get(
        &self,
        key: &str,
        comparison: Comparison,
        _partition_key: Option<&str>,
    ) -> MetaResult<Option<Record>> {
        validate_key(key)?;
        self.check_open()?;
        Ok(self.store.lock().get(key, comparison))
    }

    async fn delete(
        &self,
        key: &str,
        expect: Expect,
        _partition_key: Option<&str>,
    ) -> MetaResult<()> {
        self.check_open()?;
        validate_key(key)?;
        self.store.lock().delete(key, expect)
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
        self.store.lock().delete_range(min_key, max_key);
        Ok(())
    }

    async fn list(
        &self,
        min_key: &str,
        max_key: &str,
        _partition_key: Option<&str>,
    ) -> MetaResult<Vec<String>> {
        validate_key(min_key)?;
        validate_key(max_key)?;
        self.check_open()?;
        Ok(self.store.lock().list(min_key, max_key))
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
        self.check_open()?;
        Ok(self.store.lock().range_scan(min_key, max_key, limit))
    }

    /// Changes applied after this call, by any handle of the store, in order. Bounded: a
    /// subscriber more than `NOTIFICATION_BUFFER_MAX` notifications behind loses the oldest
    /// ones (a warning is logged) and continues with newer ones. The stream ends when the store
    /// itself is gone (every handle and every `MemoryStore` clone dropped), not when this handle
    /// closes, as with the embedded store.
    async fn notifications(&self) -> MetaResult<BoxStream<'static, Notification>> {
        self.check_open()?;
        if !self.options.notifications {
            return Err(MetaError::InvalidArgument(
                "handle was opened without notifications".into(),
            ));
        }
        let receiver = self.store.lock().subscribe();
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
        self.end_session("handle closed");
        Ok(())
    }
}
