//! A store wrapper that adds latency per operation class, to imitate a remote store in tests.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

use super::Operation;

/// Wraps any store; sleeps before delegating each call, by [`Operation`] class.
/// Latencies can change at run time; a call uses the value current when it starts.
#[derive(Debug)]
pub struct SlowObjectStore {
    inner: Arc<dyn ObjectStore>,
    latency_ms: [AtomicU64; 4],
}

impl SlowObjectStore {
    /// Every operation class starts with the same latency.
    pub fn new(inner: Arc<dyn ObjectStore>, latency: Duration) -> Self {
        let ms = duration_ms(latency);
        Self {
            inner,
            latency_ms: std::array::from_fn(|_| AtomicU64::new(ms)),
        }
    }

    pub fn set_latency(&self, op: Operation, latency: Duration) {
        self.latency_ms[op.index()].store(duration_ms(latency), Ordering::SeqCst);
    }

    pub fn set_all_latency(&self, latency: Duration) {
        for op in Operation::ALL {
            self.set_latency(op, latency);
        }
    }

    pub fn latency(&self, op: Operation) -> Duration {
        Duration::from_millis(self.latency_ms[op.index()].load(Ordering::SeqCst))
    }

    async fn wait(&self, op: Operation) {
        let latency = self.latency(op);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
    }

    fn delayed<T: Send + 'static>(
        &self,
        op: Operation,
        inner: BoxStream<'static, Result<T>>,
    ) -> BoxStream<'static, Result<T>> {
        let latency = self.latency(op);
        if latency.is_zero() {
            return inner;
        }
        stream::once(async move {
            tokio::time::sleep(latency).await;
            inner
        })
        .flatten()
        .boxed()
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl fmt::Display for SlowObjectStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SlowObjectStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for SlowObjectStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.wait(Operation::Put).await;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.wait(Operation::Put).await;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.wait(Operation::Get).await;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.wait(Operation::Get).await;
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.delayed(Operation::Delete, self.inner.delete_stream(locations))
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.delayed(Operation::List, self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.delayed(Operation::List, self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.wait(Operation::List).await;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.wait(Operation::Put).await;
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.wait(Operation::Put).await;
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
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
