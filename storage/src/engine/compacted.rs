//! Reads of PARQUET entries: the file's footer (cached) names its row groups; the one holding
//! the offset is fetched with a ranged GET, decoded once off the async threads, and its
//! rebuilt Kafka batches are cached ([`super::row_groups`], which also reads ahead).

use std::sync::Arc;

use object_store::path::Path;
use object_store::ObjectStoreExt;

use super::row_groups::FileAt;
use super::{ReadChunk, Storage};
use crate::compacted::{Footer, ParsedTail, FOOTER_PREFETCH_BYTES};
use crate::error::StorageError;
use crate::index::LocatedEntry;

impl Storage {
    /// Rebuilds Kafka batches from a compacted file, from the batch holding `offset` (or the
    /// first after it: key compaction leaves gaps) on, out of the one row group that holds it
    /// (fetched with a ranged GET and decoded once). `None` when the file holds nothing at or
    /// after `offset`: key compaction removed the end of the entry's range.
    pub(super) async fn read_compacted(
        &self,
        located: &LocatedEntry,
        offset: u64,
        max_bytes: usize,
    ) -> Result<Option<ReadChunk>, StorageError> {
        let footer = self.compacted_footer(located).await?;
        let file = FileAt {
            object_key: located.entry.object_key.clone(),
            byte_offset: located.entry.byte_offset,
        };
        let mut group = footer.first_group_from(offset);
        while let Some(g) = group.filter(|g| *g < footer.groups.len()) {
            let rebuilt = self.row_groups.get(&file, &footer, g).await?;
            if let Some(read) = rebuilt.read_from(offset, max_bytes) {
                // A reader that goes on inside a row group, or reaches its end, reads on.
                let continues = rebuilt.base_offset().is_some_and(|first| offset > first);
                let reaches_end = rebuilt.end_offset() == Some(read.end_offset());
                if continues || reaches_end {
                    self.row_groups.read_ahead(&file, &footer, g);
                }
                return Ok(Some(ReadChunk {
                    base_offset: read.base_offset,
                    batches: read.batches,
                    bytes: read.bytes,
                }));
            }
            // A row group without offset statistics can end before `offset`.
            group = Some(g + 1);
        }
        Ok(None)
    }

    /// The parsed footer of a compacted file, from the cache or from a ranged GET of its tail.
    async fn compacted_footer(&self, located: &LocatedEntry) -> Result<Arc<Footer>, StorageError> {
        let entry = &located.entry;
        if let Some(footer) = self.footer_cache.get(&entry.object_key) {
            return Ok(footer);
        }
        let path = Path::from(entry.object_key.as_str());
        let file_len = u64::from(entry.byte_len);
        let file_end = entry.byte_offset + file_len;
        let corrupt = |e: &dyn std::fmt::Display| {
            tracing::error!(object_key = %entry.object_key, error = %e, "compacted file footer failed to parse");
            StorageError::Corrupt(format!("{}: {e}", entry.object_key))
        };
        let mut tail_len = FOOTER_PREFETCH_BYTES.min(file_len);
        let footer = loop {
            let tail = self
                .objects
                .get_range(&path, file_end - tail_len..file_end)
                .await?;
            match Footer::parse(&tail, file_len).map_err(|e| corrupt(&e))? {
                ParsedTail::Footer(footer) => break Arc::new(footer),
                ParsedTail::NeedTailBytes(n) if n > tail_len => tail_len = n,
                ParsedTail::NeedTailBytes(n) => {
                    return Err(corrupt(&format!("footer wants {n} bytes, {tail_len} read")))
                }
            }
        };
        self.footer_cache
            .insert(entry.object_key.clone(), footer.clone());
        Ok(footer)
    }
}
