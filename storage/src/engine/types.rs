//! What the engine hands back: offsets of appends, a stream's bounds, batches read.

use std::time::Duration;

use bytes::Bytes;

use crate::error::StorageError;
use crate::index::BatchMeta;
use crate::wal::writer::Appended;

/// Offsets an append was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendOutcome {
    pub base_offset: u64,
    /// Exclusive.
    pub end_offset: u64,
}

/// A stream's readable range: `[log_start_offset, high_watermark)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamBounds {
    pub log_start_offset: u64,
    pub high_watermark: u64,
}

/// Whole batches as appended, starting with the batch that holds the requested offset.
#[derive(Clone, Debug)]
pub struct ReadChunk {
    /// Offset of the first record of the first batch.
    pub base_offset: u64,
    pub batches: Vec<BatchMeta>,
    pub bytes: Bytes,
}

impl ReadChunk {
    /// One past the last offset of its batches.
    pub fn end_offset(&self) -> u64 {
        self.base_offset + BatchMeta::records_in(&self.batches)
    }
}

#[derive(Clone, Debug)]
pub struct ReadResult {
    pub chunks: Vec<ReadChunk>,
    pub bounds: StreamBounds,
}

/// An append that was queued; [`PendingAppend::wait`] resolves once it is durable and indexed.
pub struct PendingAppend {
    pub(super) done: tokio::sync::oneshot::Receiver<Result<Appended, StorageError>>,
    pub(super) timeout: Duration,
}

impl PendingAppend {
    pub async fn wait(self) -> Result<AppendOutcome, StorageError> {
        match tokio::time::timeout(self.timeout, self.done).await {
            Err(_) => Err(StorageError::Timeout),
            Ok(Err(_)) => Err(StorageError::ShuttingDown),
            Ok(Ok(result)) => {
                let appended = result?;
                crate::wal::stages::mark_durable(appended.durable_at);
                Ok(AppendOutcome {
                    base_offset: appended.base_offset,
                    end_offset: appended.end_offset,
                })
            }
        }
    }
}
