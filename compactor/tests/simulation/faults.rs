//! Fault injection for one simulated process: its object-store and MetaStore calls are delayed,
//! failed before they reach the store, or (writes only) applied and then reported failed, as a
//! lost response would be; once the process is killed every later call fails before reaching
//! the store, while calls already inside the store complete, as on a real crash.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use metastore::{
    Comparison, Expect, MetaError, MetaResult, MetaStore, Notification, PutOptions, PutResult,
    Record,
};
use object_store::path::Path;
use storage::objects::{injected, Call, Interceptor, Operation};

use super::rng::Rng;

/// How often each fault happens, in calls per thousand, and the longest injected delay.
#[derive(Debug, Clone, Copy)]
pub struct FaultRates {
    pub fail_before_per_mille: u64,
    pub fail_after_write_per_mille: u64,
    pub delay_per_mille: u64,
    pub delay_max_ms: u64,
}

/// One process's faults.
#[derive(Debug)]
pub struct Faults {
    rng: Mutex<Rng>,
    rates: FaultRates,
    dead: AtomicBool,
}

impl Faults {
    pub fn new(rng: Rng, rates: FaultRates) -> Arc<Faults> {
        Arc::new(Faults {
            rng: Mutex::new(rng),
            rates,
            dead: AtomicBool::new(false),
        })
    }

    /// The process dies: nothing it sends from now on arrives.
    pub fn kill(&self) {
        self.dead.store(true, Ordering::SeqCst);
    }

    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::SeqCst)
    }

    fn draw(&self, per_mille: u64) -> bool {
        self.rng.lock().unwrap().chance(per_mille)
    }

    fn delay(&self) -> Option<Duration> {
        let mut rng = self.rng.lock().unwrap();
        rng.chance(self.rates.delay_per_mille)
            .then(|| Duration::from_millis(1 + rng.below(self.rates.delay_max_ms)))
    }

    /// Waits the injected delay, then decides whether the call reaches the store.
    async fn admit(&self) -> bool {
        if let Some(delay) = self.delay() {
            tokio::time::sleep(delay).await;
        }
        !self.is_dead() && !self.draw(self.rates.fail_before_per_mille)
    }

    /// Whether a write that was applied is reported failed.
    fn lose_answer(&self) -> bool {
        self.is_dead() || self.draw(self.rates.fail_after_write_per_mille)
    }
}

/// The object-store side: plugs into `storage::objects::Intercepted`.
#[derive(Debug)]
pub struct ObjectFaults(pub Arc<Faults>);

#[async_trait]
impl Interceptor for ObjectFaults {
    async fn before(&self, call: &Call) -> object_store::Result<()> {
        if self.0.admit().await {
            Ok(())
        } else {
            Err(injected(call.operation, &call.location))
        }
    }

    fn after_put(&self, location: &Path) -> object_store::Result<()> {
        if self.0.lose_answer() {
            return Err(injected(Operation::Put, location));
        }
        Ok(())
    }

    fn name(&self) -> &'static str {
        "SimObjects"
    }
}

/// The MetaStore side: a handle of the process wrapped with its faults. A refused call fails
/// with `Unavailable` (it did not happen); a lost answer with `Timeout` (it did).
pub struct MetaFaults {
    pub inner: Arc<dyn MetaStore>,
    pub faults: Arc<Faults>,
}

impl MetaFaults {
    async fn admit(&self) -> MetaResult<()> {
        if self.faults.admit().await {
            Ok(())
        } else {
            Err(MetaError::Unavailable("injected".into()))
        }
    }

    fn answer<T>(&self, result: MetaResult<T>) -> MetaResult<T> {
        match result {
            Ok(_) if self.faults.lose_answer() => Err(MetaError::Timeout),
            other => other,
        }
    }
}

#[async_trait]
impl MetaStore for MetaFaults {
    async fn put(&self, key: &str, value: Bytes, options: PutOptions) -> MetaResult<PutResult> {
        self.admit().await?;
        let result = self.inner.put(key, value, options).await;
        self.answer(result)
    }

    async fn get(
        &self,
        key: &str,
        comparison: Comparison,
        partition_key: Option<&str>,
    ) -> MetaResult<Option<Record>> {
        self.admit().await?;
        self.inner.get(key, comparison, partition_key).await
    }

    async fn delete(
        &self,
        key: &str,
        expect: Expect,
        partition_key: Option<&str>,
    ) -> MetaResult<()> {
        self.admit().await?;
        let result = self.inner.delete(key, expect, partition_key).await;
        self.answer(result)
    }

    async fn delete_range(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
    ) -> MetaResult<()> {
        self.admit().await?;
        let result = self
            .inner
            .delete_range(min_key, max_key, partition_key)
            .await;
        self.answer(result)
    }

    async fn list(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
    ) -> MetaResult<Vec<String>> {
        self.admit().await?;
        self.inner.list(min_key, max_key, partition_key).await
    }

    async fn range_scan(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
        limit: usize,
    ) -> MetaResult<Vec<Record>> {
        self.admit().await?;
        self.inner
            .range_scan(min_key, max_key, partition_key, limit)
            .await
    }

    async fn notifications(&self) -> MetaResult<BoxStream<'static, Notification>> {
        self.inner.notifications().await
    }

    async fn close(&self) -> MetaResult<()> {
        self.inner.close().await
    }
}
