//! ListOffsets by time: scans of the index's per-batch timestamps from the log start, then one
//! batch read.

use super::{ReadChunk, Storage, INDEX_PAGE_ENTRIES};
use crate::error::StorageError;
use crate::index::{BatchMeta, LocatedEntry};

impl Storage {
    /// The first batch ending after `from_offset` whose max timestamp is `>= timestamp_ms`, for
    /// ListOffsets by time (Kafka's `LogSegment.findOffsetByTimestamp` skips batches below the
    /// log start the same way; a batch straddling it still counts).
    pub async fn find_batch_by_timestamp(
        &self,
        stream: &str,
        timestamp_ms: i64,
        from_offset: u64,
    ) -> Result<Option<ReadChunk>, StorageError> {
        let mut found = None;
        self.scan_entries(stream, |located| {
            if located.entry.max_timestamp < timestamp_ms || located.end_offset <= from_offset {
                return true;
            }
            let mut end_offset = located.base_offset;
            let pos = located.entry.batches.iter().position(|b| {
                end_offset += u64::from(b.records);
                end_offset > from_offset && b.max_timestamp >= timestamp_ms
            });
            if let Some(pos) = pos {
                found = Some((located.clone(), pos));
                return false;
            }
            true
        })
        .await?;
        self.read_batch(found).await
    }

    /// The batch holding the largest timestamp (the first such batch), for ListOffsets MAX_TIMESTAMP.
    pub async fn find_batch_with_max_timestamp(
        &self,
        stream: &str,
    ) -> Result<Option<ReadChunk>, StorageError> {
        let mut best: Option<(LocatedEntry, usize, i64)> = None;
        self.scan_entries(stream, |located| {
            for (pos, batch) in located.entry.batches.iter().enumerate() {
                if best
                    .as_ref()
                    .is_none_or(|(_, _, ts)| batch.max_timestamp > *ts)
                {
                    best = Some((located.clone(), pos, batch.max_timestamp));
                }
            }
            true
        })
        .await?;
        self.read_batch(best.map(|(l, p, _)| (l, p))).await
    }

    /// Visits the stream's entries from its log start, in order, until `visit` returns false.
    async fn scan_entries(
        &self,
        stream: &str,
        mut visit: impl FnMut(&LocatedEntry) -> bool,
    ) -> Result<(), StorageError> {
        let bounds = self.bounds(stream).await?;
        let mut next = bounds.log_start_offset;
        while next < bounds.high_watermark {
            let entries = self
                .index
                .entries_from(stream, next, INDEX_PAGE_ENTRIES)
                .await?;
            let Some(last) = entries.last() else { break };
            next = last.end_offset;
            for located in &entries {
                if !visit(located) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    async fn read_batch(
        &self,
        found: Option<(LocatedEntry, usize)>,
    ) -> Result<Option<ReadChunk>, StorageError> {
        let Some((located, pos)) = found else {
            return Ok(None);
        };
        let first_offset =
            located.base_offset + BatchMeta::records_in(&located.entry.batches[..pos]);
        // Every batch an entry lists holds records (key compaction lists only batches it kept).
        let chunk = self
            .read_entry(&located, first_offset, 1)
            .await?
            .ok_or_else(|| {
                StorageError::Corrupt(format!(
                    "{} holds no batch at or after offset {first_offset}",
                    located.entry.object_key
                ))
            })?;
        let first = chunk.batches[0];
        Ok(Some(ReadChunk {
            base_offset: chunk.base_offset,
            batches: vec![first],
            bytes: chunk.bytes.slice(..first.len as usize),
        }))
    }
}
