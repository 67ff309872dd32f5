//! One delegating wrapper for every object-store wrapper of ours: [`Intercepted`] hands each
//! call to an [`Interceptor`] before the inner store sees it (to count it, delay it or fail
//! it), and each successful write after (to fail it once written, as a lost response would).
//! The wrappers themselves (`CountingObjectStore`, `FailingObjectStore`, `SlowObjectStore`)
//! are interceptors, so no wrapper repeats the delegation of the whole `ObjectStore` trait.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

use super::Operation;

/// A call about to reach the inner store.
#[derive(Debug, Clone)]
pub struct Call {
    pub operation: Operation,
    /// The object (or the prefix of a listing; empty for a batch delete).
    pub location: Path,
    /// Payload bytes of a single-request put.
    pub put_bytes: Option<u64>,
}

#[async_trait]
pub trait Interceptor: Send + Sync + fmt::Debug + 'static {
    /// Runs before the inner store is called; an error is answered instead of calling it.
    async fn before(&self, call: &Call) -> Result<()>;

    /// Runs after a single-request put succeeded; an error is answered although the object
    /// was written.
    fn after_put(&self, _location: &Path) -> Result<()> {
        Ok(())
    }

    /// Names the wrapper in `Display`.
    fn name(&self) -> &'static str;
}

/// Any store, with every call going through `interceptor`.
#[derive(Debug)]
pub struct Intercepted<I> {
    inner: Arc<dyn ObjectStore>,
    interceptor: Arc<I>,
}

impl<I: Interceptor> Intercepted<I> {
    pub fn wrap(inner: Arc<dyn ObjectStore>, interceptor: I) -> Self {
        Intercepted {
            inner,
            interceptor: Arc::new(interceptor),
        }
    }

    pub fn interceptor(&self) -> &I {
        &self.interceptor
    }

    async fn before(&self, operation: Operation, location: &Path) -> Result<()> {
        let call = Call {
            operation,
            location: location.clone(),
            put_bytes: None,
        };
        self.interceptor.before(&call).await
    }

    /// `inner`, started only once the interceptor let the call through.
    fn gated<T: Send + 'static>(
        &self,
        operation: Operation,
        location: Option<&Path>,
        inner: BoxStream<'static, Result<T>>,
    ) -> BoxStream<'static, Result<T>> {
        let interceptor = self.interceptor.clone();
        let call = Call {
            operation,
            location: location.cloned().unwrap_or_default(),
            put_bytes: None,
        };
        stream::once(async move {
            match interceptor.before(&call).await {
                Ok(()) => inner,
                Err(error) => stream::once(async move { Err(error) }).boxed(),
            }
        })
        .flatten()
        .boxed()
    }
}

impl<I: Interceptor> fmt::Display for Intercepted<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.interceptor.name(), self.inner)
    }
}

#[async_trait]
impl<I: Interceptor> ObjectStore for Intercepted<I> {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let call = Call {
            operation: Operation::Put,
            location: location.clone(),
            put_bytes: Some(payload.content_length() as u64),
        };
        self.interceptor.before(&call).await?;
        let written = self.inner.put_opts(location, payload, opts).await?;
        self.interceptor.after_put(location)?;
        Ok(written)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.before(Operation::Put, location).await?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.before(Operation::Get, location).await?;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.before(Operation::Get, location).await?;
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.gated(Operation::Delete, None, self.inner.delete_stream(locations))
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.gated(Operation::List, prefix, self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let inner = self.inner.list_with_offset(prefix, offset);
        self.gated(Operation::List, prefix, inner)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.before(Operation::List, prefix.unwrap_or(&Path::default()))
            .await?;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.before(Operation::Put, to).await?;
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.before(Operation::Put, to).await?;
        self.inner.rename_opts(from, to, options).await
    }
}
