//! A stream's size in bytes, as Kafka's DescribeLogDirs reports a partition's: the bytes of the
//! batches from the first retained index entry to the end (an entry partly below the log start
//! counts whole, as Kafka counts a segment whole).

use super::Storage;
use crate::error::StorageError;
use crate::index::LocatedEntry;
use crate::stream::validate_stream_id;

/// Bytes of an entry's batches as appended (a PARQUET entry keeps the lengths it was built from).
fn entry_bytes(entry: &LocatedEntry) -> u64 {
    entry.entry.batches.iter().map(|b| u64::from(b.len)).sum()
}

impl Storage {
    /// Two MetaStore reads: the last entry's running total and the first retained entry's.
    pub async fn size_bytes(&self, stream: &str) -> Result<u64, StorageError> {
        validate_stream_id(stream)?;
        let Some(last) = self.index.last(stream).await? else {
            return Ok(0);
        };
        let log_start = self.index.trim_point(stream).await?;
        let first = self.index.entries_from(stream, log_start, 1).await?;
        let before = first.first().map_or(last.cumulative_bytes, |f| {
            f.cumulative_bytes.saturating_sub(entry_bytes(f))
        });
        Ok(last.cumulative_bytes.saturating_sub(before))
    }
}
