//! One delegating wrapper for every object-store wrapper of ours: [`Intercepted`] hands each
//! call to an [`Interceptor`] before the inner store sees it (to count it, delay it or fail
//! it), and each successful write after (to fail it once written, as a lost response would).
//! The wrappers themselves (`CountingObjectStore`, `FailingObjectStore`, `SlowObjectStore`)
//! are interceptors, so no wrapper repeats the delegation of the whole `ObjectStore` trait.

use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Bytes a get asks for, when its ranges say (a latency model charges their transfer).
    pub get_bytes: Option<u64>,
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

    /// Runs when a call answered in one piece (not a listing or batch-delete stream) finished:
    /// how long the inner store took, whether it succeeded, and the payload bytes it moved.
    fn finished(&self, _call: &Call, _elapsed: Duration, _outcome: Finished) {}

    /// Names the wrapper in `Display`.
    fn name(&self) -> &'static str;
}

/// How a call ended, for [`Interceptor::finished`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    pub ok: bool,
    /// Bytes written by a put, or to be read by a get (its range).
    pub bytes: u64,
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

    /// `inner` once the interceptor let `call` through, timed for [`Interceptor::finished`].
    async fn timed<T>(
        &self,
        call: Call,
        bytes_of: impl FnOnce(&T) -> u64,
        inner: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        self.interceptor.before(&call).await?;
        let started = Instant::now();
        let result = inner.await;
        let outcome = Finished {
            ok: result.is_ok(),
            bytes: result.as_ref().map_or(0, bytes_of),
        };
        self.interceptor.finished(&call, started.elapsed(), outcome);
        result
    }

    fn call(operation: Operation, location: &Path) -> Call {
        Call {
            operation,
            location: location.clone(),
            put_bytes: None,
            get_bytes: None,
        }
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
            get_bytes: None,
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
        let bytes = payload.content_length() as u64;
        let call = Call {
            operation: Operation::Put,
            location: location.clone(),
            put_bytes: Some(bytes),
            get_bytes: None,
        };
        let put = self.inner.put_opts(location, payload, opts);
        let written = self.timed(call, |_| bytes, put).await?;
        self.interceptor.after_put(location)?;
        Ok(written)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let call = Self::call(Operation::Put, location);
        let started = self.inner.put_multipart_opts(location, opts);
        self.timed(call, |_| 0, started).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let mut call = Self::call(Operation::Get, location);
        if let Some(object_store::GetRange::Bounded(range)) = &options.range {
            call.get_bytes = Some(range.end.saturating_sub(range.start));
        }
        let head = options.head;
        let get = self.inner.get_opts(location, options);
        let bytes_of = |got: &GetResult| {
            if head {
                0
            } else {
                got.range.end - got.range.start
            }
        };
        self.timed(call, bytes_of, get).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let mut call = Self::call(Operation::Get, location);
        call.get_bytes = Some(ranges.iter().map(|r| r.end.saturating_sub(r.start)).sum());
        let get = self.inner.get_ranges(location, ranges);
        let bytes_of = |got: &Vec<Bytes>| got.iter().map(|b| b.len() as u64).sum();
        self.timed(call, bytes_of, get).await
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
        let call = Self::call(Operation::List, prefix.unwrap_or(&Path::default()));
        let list = self.inner.list_with_delimiter(prefix);
        self.timed(call, |_| 0, list).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let call = Self::call(Operation::Put, to);
        let copy = self.inner.copy_opts(from, to, options);
        self.timed(call, |_| 0, copy).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        let call = Self::call(Operation::Put, to);
        let rename = self.inner.rename_opts(from, to, options);
        self.timed(call, |_| 0, rename).await
    }
}
