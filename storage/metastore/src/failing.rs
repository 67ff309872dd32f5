//! Fault injection: a [`MetaStore`] wrapper that fails or slows operations on demand, so tests
//! can check how callers behave when the metadata store is unavailable or slow.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;

use super::{
    Comparison, Expect, MetaError, MetaResult, MetaStore, Notification, PutOptions, PutResult,
    Record,
};

/// Which operations fail with [`MetaError::Unavailable`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FaultMode {
    /// Everything passes through.
    #[default]
    Healthy,
    /// Every operation except `close` fails.
    FailAll,
    /// `put`, `delete` and `delete_range` fail; reads and notifications work.
    FailWrites,
}

impl FaultMode {
    fn code(self) -> u8 {
        match self {
            FaultMode::Healthy => 0,
            FaultMode::FailAll => 1,
            FaultMode::FailWrites => 2,
        }
    }

    fn from_code(code: u8) -> Self {
        match code {
            1 => FaultMode::FailAll,
            2 => FaultMode::FailWrites,
            _ => FaultMode::Healthy,
        }
    }
}

/// Wraps any store; switch faults at run time with [`FailingMetaStore::set_mode`] and
/// [`FailingMetaStore::set_latency`]. `close` is never failed so that cleanup always works.
pub struct FailingMetaStore {
    inner: Arc<dyn MetaStore>,
    mode: AtomicU8,
    latency_ms: AtomicU64,
    injected_failures: AtomicU64,
}

impl FailingMetaStore {
    pub fn new(inner: Arc<dyn MetaStore>) -> Self {
        FailingMetaStore {
            inner,
            mode: AtomicU8::new(FaultMode::Healthy.code()),
            latency_ms: AtomicU64::new(0),
            injected_failures: AtomicU64::new(0),
        }
    }

    pub fn set_mode(&self, mode: FaultMode) {
        self.mode.store(mode.code(), Ordering::SeqCst);
    }

    pub fn mode(&self) -> FaultMode {
        FaultMode::from_code(self.mode.load(Ordering::SeqCst))
    }

    /// Delay added before every operation (zero to remove it).
    pub fn set_latency(&self, latency: Duration) {
        let latency_ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        self.latency_ms.store(latency_ms, Ordering::SeqCst);
    }

    /// How many operations were failed on purpose so far.
    pub fn injected_failures(&self) -> u64 {
        self.injected_failures.load(Ordering::SeqCst)
    }

    async fn inject(&self, is_write: bool) -> MetaResult<()> {
        let latency_ms = self.latency_ms.load(Ordering::SeqCst);
        if latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(latency_ms)).await;
        }
        let fail = match self.mode() {
            FaultMode::Healthy => false,
            FaultMode::FailAll => true,
            FaultMode::FailWrites => is_write,
        };
        if fail {
            self.injected_failures.fetch_add(1, Ordering::SeqCst);
            return Err(MetaError::Unavailable("injected fault".into()));
        }
        Ok(())
    }
}

#[async_trait]
impl MetaStore for FailingMetaStore {
    async fn put(&self, key: &str, value: Bytes, options: PutOptions) -> MetaResult<PutResult> {
        self.inject(true).await?;
        self.inner.put(key, value, options).await
    }

    async fn get(
        &self,
        key: &str,
        comparison: Comparison,
        partition_key: Option<&str>,
    ) -> MetaResult<Option<Record>> {
        self.inject(false).await?;
        self.inner.get(key, comparison, partition_key).await
    }

    async fn delete(
        &self,
        key: &str,
        expect: Expect,
        partition_key: Option<&str>,
    ) -> MetaResult<()> {
        self.inject(true).await?;
        self.inner.delete(key, expect, partition_key).await
    }

    async fn delete_range(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
    ) -> MetaResult<()> {
        self.inject(true).await?;
        self.inner
            .delete_range(min_key, max_key, partition_key)
            .await
    }

    async fn list(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
    ) -> MetaResult<Vec<String>> {
        self.inject(false).await?;
        self.inner.list(min_key, max_key, partition_key).await
    }

    async fn range_scan(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
        limit: usize,
    ) -> MetaResult<Vec<Record>> {
        self.inject(false).await?;
        self.inner
            .range_scan(min_key, max_key, partition_key, limit)
            .await
    }

    async fn notifications(&self) -> MetaResult<BoxStream<'static, Notification>> {
        self.inject(false).await?;
        self.inner.notifications().await
    }

    async fn close(&self) -> MetaResult<()> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::{EmbeddedMetaStore, MetaOptions};

    async fn wrapped(dir: &tempfile::TempDir) -> FailingMetaStore {
        let options = MetaOptions {
            notifications: false,
            ..MetaOptions::default()
        };
        let inner = EmbeddedMetaStore::open_in_dir(dir.path(), options)
            .await
            .unwrap();
        FailingMetaStore::new(Arc::new(inner))
    }

    #[tokio::test]
    async fn failing_writes_rejects_puts_but_still_serves_reads() {
        let dir = tempfile::tempdir().unwrap();
        let store = wrapped(&dir).await;
        store
            .put("k", Bytes::from_static(b"v1"), PutOptions::default())
            .await
            .unwrap();

        store.set_mode(FaultMode::FailWrites);
        let err = store
            .put("k", Bytes::from_static(b"v2"), PutOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, MetaError::Unavailable(_)) && err.is_retriable());
        assert!(store.delete("k", Expect::Any, None).await.is_err());
        let record = store
            .get("k", Comparison::Equal, None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.value, Bytes::from_static(b"v1"));
        assert_eq!(store.injected_failures(), 2);

        store.set_mode(FaultMode::FailAll);
        assert!(matches!(
            store.get("k", Comparison::Equal, None).await,
            Err(MetaError::Unavailable(_))
        ));

        store.set_mode(FaultMode::Healthy);
        store
            .put("k", Bytes::from_static(b"v3"), PutOptions::default())
            .await
            .unwrap();
        let record = store
            .get("k", Comparison::Equal, None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.value, Bytes::from_static(b"v3"));
        store.close().await.unwrap();
    }

    #[tokio::test]
    async fn injected_latency_delays_every_operation_until_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = wrapped(&dir).await;
        store.set_latency(Duration::from_millis(200));
        let started = Instant::now();
        store
            .put("k", Bytes::from_static(b"v"), PutOptions::default())
            .await
            .unwrap();
        store.get("k", Comparison::Equal, None).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(400));

        store.set_latency(Duration::ZERO);
        let started = Instant::now();
        store.get("k", Comparison::Equal, None).await.unwrap();
        assert!(started.elapsed() < Duration::from_millis(200));
        store.close().await.unwrap();
    }
}
