//! A store wrapper that adds latency per operation class, to imitate a remote store in tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use object_store::{ObjectStore, Result};

use super::intercept::{Call, Intercepted, Interceptor};
use super::Operation;
use crate::clock::duration_ms;

/// Wraps any store; sleeps before delegating each call, by [`Operation`] class.
/// Latencies can change at run time; a call uses the value current when it starts.
pub type SlowObjectStore = Intercepted<Latency>;

#[derive(Debug)]
pub struct Latency {
    latency_ms: [AtomicU64; 4],
}

#[async_trait]
impl Interceptor for Latency {
    async fn before(&self, call: &Call) -> Result<()> {
        let latency = self.latency(call.operation);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        Ok(())
    }

    fn name(&self) -> &'static str {
        "SlowObjectStore"
    }
}

impl Latency {
    fn latency(&self, op: Operation) -> Duration {
        Duration::from_millis(self.latency_ms[op.index()].load(Ordering::SeqCst))
    }
}

impl Intercepted<Latency> {
    /// Every operation class starts with the same latency.
    pub fn new(inner: Arc<dyn ObjectStore>, latency: Duration) -> Self {
        let ms = duration_ms(latency);
        let latency = Latency {
            latency_ms: std::array::from_fn(|_| AtomicU64::new(ms)),
        };
        Intercepted::wrap(inner, latency)
    }

    pub fn set_latency(&self, op: Operation, latency: Duration) {
        self.interceptor().latency_ms[op.index()].store(duration_ms(latency), Ordering::SeqCst);
    }

    pub fn set_all_latency(&self, latency: Duration) {
        for op in Operation::ALL {
            self.set_latency(op, latency);
        }
    }

    pub fn latency(&self, op: Operation) -> Duration {
        self.interceptor().latency(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use futures::StreamExt;
    use object_store::memory::InMemory;
    use object_store::path::Path;
    use object_store::ObjectStoreExt;
    use tokio::time::Instant;

    #[tokio::test]
    async fn put_waits_for_its_configured_latency() {
        let store = SlowObjectStore::new(Arc::new(InMemory::new()), Duration::ZERO);
        store.set_latency(Operation::Put, Duration::from_millis(250));
        let key = Path::from("k");
        let start = Instant::now();
        store
            .put(&key, Bytes::from_static(b"v").into())
            .await
            .unwrap();
        assert!(start.elapsed() >= Duration::from_millis(250));
        // Gets carry no latency; the bound is loose so a busy machine does not fail the test.
        let start = Instant::now();
        store.get(&key).await.unwrap();
        assert!(start.elapsed() < Duration::from_millis(200));
    }

    #[tokio::test]
    async fn list_and_delete_are_delayed_too() {
        let store = SlowObjectStore::new(Arc::new(InMemory::new()), Duration::from_millis(40));
        let key = Path::from("k");
        store
            .put(&key, Bytes::from_static(b"v").into())
            .await
            .unwrap();
        let start = Instant::now();
        let listed: Vec<_> = store.list(None).collect().await;
        assert_eq!(listed.len(), 1);
        store.delete(&key).await.unwrap();
        assert!(start.elapsed() >= Duration::from_millis(80));
    }
}
