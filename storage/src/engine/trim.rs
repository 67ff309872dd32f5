//! Moving a stream's log start, and forgetting a deleted stream.

use super::{Storage, StreamBounds};
use crate::error::StorageError;
use crate::stream::validate_stream_id;

impl Storage {
    /// Moves the log start offset forward (never past the high watermark, never backward).
    pub async fn trim(
        &self,
        stream: &str,
        log_start_offset: u64,
    ) -> Result<StreamBounds, StorageError> {
        let state = self.state(stream).await?;
        let bounds = state.bounds();
        if log_start_offset > bounds.high_watermark {
            return Err(StorageError::OffsetOutOfRange {
                offset: log_start_offset,
                log_start_offset: bounds.log_start_offset,
                high_watermark: bounds.high_watermark,
            });
        }
        let trimmed = self
            .index
            .advance_trim_point(stream, log_start_offset)
            .await?;
        state.advance_log_start(trimmed);
        Ok(state.bounds())
    }

    /// Forgets a deleted stream's index. Its WAL bytes are reclaimed by the compactor.
    pub async fn delete_stream(&self, stream: &str) -> Result<(), StorageError> {
        validate_stream_id(stream)?;
        self.index.delete_entries(stream).await?;
        self.streams.remove(stream);
        Ok(())
    }
}
