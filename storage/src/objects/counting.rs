//! A store wrapper that counts calls per operation class, for benchmarks and operators
//! (object PUTs per GiB is a cost figure: every PUT and GET is billed).

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

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
#[derive(Debug)]
pub struct CountingObjectStore {
    inner: Arc<dyn ObjectStore>,
    calls: [AtomicU64; 4],
    put_bytes: AtomicU64,
}

impl CountingObjectStore {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self {
            inner,
            calls: Default::default(),
            put_bytes: AtomicU64::new(0),
        }
    }

    pub fn counts(&self) -> OperationCounts {
        let calls = |op: Operation| self.calls[op.index()].load(Ordering::Relaxed);
        OperationCounts {
            puts: calls(Operation::Put),
            gets: calls(Operation::Get),
            deletes: calls(Operation::Delete),
            lists: calls(Operation::List),
            put_bytes: self.put_bytes.load(Ordering::Relaxed),
        }
    }

    fn count(&self, op: Operation) {
        self.calls[op.index()].fetch_add(1, Ordering::Relaxed);
    }
}

impl fmt::Display for CountingObjectStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CountingObjectStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for CountingObjectStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.count(Operation::Put);
        self.put_bytes
            .fetch_add(payload.content_length() as u64, Ordering::Relaxed);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.count(Operation::Put);
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.count(Operation::Get);
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.count(Operation::Get);
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.count(Operation::Delete);
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.count(Operation::List);
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.count(Operation::List);
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.count(Operation::List);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.count(Operation::Put);
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.count(Operation::Put);
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use object_store::memory::InMemory;
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
