//! Uploads one compacted file while it is being written: a file smaller than one part goes out
//! in one PUT (one request, as before streaming); a larger one becomes a multipart upload whose
//! parts are sent while the rest of the file is still being encoded.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};

/// Bytes per multipart part, and the output size from which a file goes multipart: S3's
/// minimum part size.
pub const PART_BYTES: usize = 5 << 20;
/// Parts uploading at once per file. With the part being filled, an upload holds at most
/// `(PARTS_IN_FLIGHT_MAX + 1) * PART_BYTES` (15 MiB) of the file.
const PARTS_IN_FLIGHT_MAX: usize = 2;

pub struct Upload {
    objects: Arc<dyn ObjectStore>,
    path: Path,
    state: State,
    /// Bytes written so far, for the metrics.
    bytes: u64,
}

enum State {
    /// Output so far, at most one part: one PUT if the file ends here.
    Buffered {
        chunks: Vec<Bytes>,
        len: usize,
    },
    Multipart(WriteMultipart),
    /// Finished or aborted.
    Closed,
}

impl Upload {
    pub fn new(objects: Arc<dyn ObjectStore>, path: Path) -> Self {
        Upload {
            objects,
            path,
            state: State::Buffered {
                chunks: Vec::new(),
                len: 0,
            },
            bytes: 0,
        }
    }

    /// Appends file bytes. Waits while the parts in flight are at their limit.
    pub async fn write(&mut self, bytes: Bytes) -> Result<(), object_store::Error> {
        self.bytes += bytes.len() as u64;
        match &mut self.state {
            State::Buffered { chunks, len } => {
                *len += bytes.len();
                chunks.push(bytes);
                if *len <= PART_BYTES {
                    return Ok(());
                }
                let chunks = std::mem::take(chunks);
                let upload = self.objects.put_multipart(&self.path).await?;
                tracing::debug!(path = %self.path, "compacted file goes multipart");
                let mut parts = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
                let mut outcome = Ok(());
                for chunk in chunks {
                    outcome = send(&mut parts, chunk).await;
                    if outcome.is_err() {
                        break;
                    }
                }
                // Kept even after a failure, so that `abort` cleans up the parts sent.
                self.state = State::Multipart(parts);
                outcome
            }
            State::Multipart(parts) => send(parts, bytes).await,
            State::Closed => Err(closed(&self.path)),
        }
    }

    /// Makes the file visible: the single PUT, or the multipart completion (which aborts the
    /// upload itself if a part or the completion fails).
    pub async fn finish(mut self) -> Result<(), object_store::Error> {
        match std::mem::replace(&mut self.state, State::Closed) {
            State::Buffered { chunks, .. } => {
                self.objects
                    .put(&self.path, PutPayload::from_iter(chunks))
                    .await?;
            }
            State::Multipart(parts) => {
                parts.finish().await?;
            }
            State::Closed => return Err(closed(&self.path)),
        }
        crate::metrics::file_written(self.bytes);
        Ok(())
    }

    /// Drops the upload so that no parts linger in the store.
    pub async fn abort(mut self) {
        if let State::Multipart(parts) = std::mem::replace(&mut self.state, State::Closed) {
            abort(parts, &self.path).await;
        }
    }
}

impl Drop for Upload {
    /// A compaction cancelled mid-way (shutdown) aborts its upload in the background.
    fn drop(&mut self) {
        if let State::Multipart(parts) = std::mem::replace(&mut self.state, State::Closed) {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                let path = self.path.clone();
                runtime.spawn(async move { abort(parts, &path).await });
            }
        }
    }
}

/// Queues `bytes` as parts, waiting for capacity before each part's worth so that at most
/// `PARTS_IN_FLIGHT_MAX` are in flight (one `put` of at most a part starts at most one part).
async fn send(parts: &mut WriteMultipart, mut bytes: Bytes) -> Result<(), object_store::Error> {
    while !bytes.is_empty() {
        let piece = bytes.split_to(bytes.len().min(PART_BYTES));
        parts.wait_for_capacity(PARTS_IN_FLIGHT_MAX).await?;
        parts.put(piece);
    }
    Ok(())
}

async fn abort(parts: WriteMultipart, path: &Path) {
    match parts.abort().await {
        Ok(()) => tracing::debug!(%path, "aborted multipart upload"),
        Err(error) => tracing::warn!(%path, %error, "could not abort multipart upload"),
    }
}

fn closed(path: &Path) -> object_store::Error {
    object_store::Error::Generic {
        store: "compactor upload",
        source: format!("upload of {path} already finished").into(),
    }
}
