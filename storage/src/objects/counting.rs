//! A store wrapper that counts calls per operation class, for benchmarks and operators
//! (object PUTs per GiB is a cost figure: every PUT and GET is billed).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use object_store::{ObjectStore, Result};

use super::intercept::{Call, Intercepted, Interceptor};
use super::Operation;

/// Totals seen by a [`CountingObjectStore`] so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OperationCounts {
    pub puts: u64,
    pub gets: u64,
    pub deletes: u64,
    pub lists: u64,
    /// Payload bytes of single-request puts (multipart parts are not counted).
    pub put_bytes: u64,
}

/// Wraps any store and counts calls by [`Operation`] class, failed calls included.
pub type CountingObjectStore = Intercepted<Counter>;

#[derive(Debug, Default)]
pub struct Counter {
    calls: [AtomicU64; 4],
    put_bytes: AtomicU64,
}

#[async_trait]
impl Interceptor for Counter {
    async fn before(&self, call: &Call) -> Result<()> {
        self.calls[call.operation.index()].fetch_add(1, Ordering::Relaxed);
        if let Some(bytes) = call.put_bytes {
            self.put_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        Ok(())
    }

    fn name(&self) -> &'static str {
        "CountingObjectStore"
    }
}

impl Intercepted<Counter> {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Intercepted::wrap(inner, Counter::default())
    }

    pub fn counts(&self) -> OperationCounts {
        let counter = self.interceptor();
        let calls = |op: Operation| counter.calls[op.index()].load(Ordering::Relaxed);
        OperationCounts {
            puts: calls(Operation::Put),
            gets: calls(Operation::Get),
            deletes: calls(Operation::Delete),
            lists: calls(Operation::List),
            put_bytes: counter.put_bytes.load(Ordering::Relaxed),
        }
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

    #[tokio::test]
    async fn each_operation_class_is_counted_once_per_call() {
        let store = CountingObjectStore::new(Arc::new(InMemory::new()));
        let key = Path::from("k");
        store
            .put(&key, Bytes::from_static(b"value").into())
            .await
            .unwrap();
        store.get(&key).await.unwrap();
        store.get_range(&key, 0..2).await.unwrap();
        let _ = store.get(&Path::from("missing")).await.unwrap_err();
        let listed: Vec<_> = store.list(None).collect().await;
        assert_eq!(listed.len(), 1);
        store.delete(&key).await.unwrap();
        assert_eq!(
            store.counts(),
            OperationCounts {
                puts: 1,
                gets: 3,
                deletes: 1,
                lists: 1,
                put_bytes: 5,
            }
        );
    }
}
