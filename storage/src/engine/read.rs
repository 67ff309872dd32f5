//! Reads by offset: index entries from the stream's cached tail or the index, then each entry's
//! bytes from the write cache, the read cache or a ranged GET (RAW), or rebuilt from a
//! compacted file (PARQUET, see [`super::compacted`]).

use bytes::Bytes;

use super::state::StreamState;
use super::{ReadChunk, ReadResult, Storage, StreamBounds, INDEX_PAGE_ENTRIES};
use crate::error::StorageError;
use crate::index::{FileType, LocatedEntry};

/// What a read gathered so far, and where it goes on.
struct Gather {
    next: u64,
    bytes: usize,
    max_bytes: usize,
    high_watermark: u64,
    chunks: Vec<ReadChunk>,
}

impl Gather {
    /// At least one batch when any is there, then until about `max_bytes`, as Kafka reads.
    fn wants_more(&self) -> bool {
        self.next < self.high_watermark && (self.chunks.is_empty() || self.bytes < self.max_bytes)
    }

    fn budget_bytes(&self) -> usize {
        self.max_bytes.saturating_sub(self.bytes).max(1)
    }

    fn push(&mut self, chunk: ReadChunk, object_key: &str) -> Result<(), StorageError> {
        let end = chunk.end_offset();
        if end <= self.next {
            return Err(StorageError::Corrupt(format!(
                "{object_key} holds no batch at offset {}",
                self.next
            )));
        }
        self.bytes += chunk.bytes.len();
        self.next = end;
        self.chunks.push(chunk);
        Ok(())
    }
}

/// How one page of index entries went.
enum Page {
    Read,
    /// A cached RAW entry was replaced by compaction and its object reclaimed.
    StaleCache,
    End,
}

impl Storage {
    /// Reads whole batches starting with the one holding `offset`, until about `max_bytes`
    /// (at least one batch when any is available, as Kafka does).
    pub async fn read(
        &self,
        stream: &str,
        offset: u64,
        max_bytes: usize,
    ) -> Result<ReadResult, StorageError> {
        let state = self.state(stream).await?;
        self.read_state(stream, &state, offset, max_bytes).await
    }

    /// [`Storage::read`], and a receiver taken before it that changes whenever the stream's
    /// high watermark advances: a long poll that read nothing waits on it without missing a
    /// commit made during the read. One state lookup for both (a Fetch long-polling thousands
    /// of partitions does this for each of them).
    pub async fn read_watched(
        &self,
        stream: &str,
        offset: u64,
        max_bytes: usize,
    ) -> Result<(ReadResult, tokio::sync::watch::Receiver<u64>), StorageError> {
        let state = self.state(stream).await?;
        let watch = state.high_watermark.subscribe();
        let read = self.read_state(stream, &state, offset, max_bytes).await?;
        Ok((read, watch))
    }

    async fn read_state(
        &self,
        stream: &str,
        state: &StreamState,
        offset: u64,
        max_bytes: usize,
    ) -> Result<ReadResult, StorageError> {
        let bounds = self.bounds_for_read(stream, state, offset).await?;
        if offset < bounds.log_start_offset || offset > bounds.high_watermark {
            return Err(StorageError::OffsetOutOfRange {
                offset,
                log_start_offset: bounds.log_start_offset,
                high_watermark: bounds.high_watermark,
            });
        }
        let mut gather = Gather {
            next: offset,
            bytes: 0,
            max_bytes,
            high_watermark: bounds.high_watermark,
            chunks: Vec::new(),
        };
        while gather.wants_more() {
            match self.read_page(stream, state, &mut gather).await? {
                Page::Read => {}
                Page::StaleCache => state.forget_tail(),
                Page::End => break,
            }
        }
        Ok(ReadResult {
            chunks: gather.chunks,
            bounds,
        })
    }

    /// Past the end this broker knows, another broker may have appended: re-read at once. At
    /// the end (appends elsewhere) or below it (a trim elsewhere must refuse reads here too),
    /// re-read if stale.
    async fn bounds_for_read(
        &self,
        stream: &str,
        state: &StreamState,
        offset: u64,
    ) -> Result<StreamBounds, StorageError> {
        if offset > state.bounds().high_watermark {
            self.refresh_bounds(stream).await
        } else {
            self.refresh_if_stale(stream, state).await
        }
    }

    async fn read_page(
        &self,
        stream: &str,
        state: &StreamState,
        gather: &mut Gather,
    ) -> Result<Page, StorageError> {
        let (entries, from_cache) = match state.cached_from(gather.next, INDEX_PAGE_ENTRIES) {
            Some(entries) => (entries, true),
            None => {
                let entries = self
                    .index
                    .entries_from(stream, gather.next, INDEX_PAGE_ENTRIES)
                    .await?;
                (entries, false)
            }
        };
        if entries.is_empty() {
            return Ok(Page::End);
        }
        for located in &entries {
            if located.base_offset > gather.next {
                return Err(StorageError::Corrupt(format!(
                    "index of {stream} has no entry for offset {}",
                    gather.next
                )));
            }
            // A compacted entry is read a row group at a time: several chunks per entry.
            while gather.next < located.end_offset && gather.wants_more() {
                let chunk =
                    match self
                        .read_entry(located, gather.next, gather.budget_bytes())
                        .await
                    {
                        Err(StorageError::ObjectStore(object_store::Error::NotFound {
                            ..
                        })) if from_cache => return Ok(Page::StaleCache),
                        chunk => chunk?,
                    };
                match chunk {
                    Some(chunk) => gather.push(chunk, &located.entry.object_key)?,
                    // Key compaction removed the rest of this entry's range: a gap.
                    None => gather.next = located.end_offset,
                }
            }
            if !gather.wants_more() {
                break;
            }
        }
        self.read_ahead_wal(&entries, gather.next);
        Ok(Page::Read)
    }

    /// The entry's batches from the one holding `offset` on: all of a RAW entry's, and about
    /// `max_bytes` (at least one batch, never past a row group or a gap) of a compacted one,
    /// whose range may end in a gap (`None`).
    pub(super) async fn read_entry(
        &self,
        located: &LocatedEntry,
        offset: u64,
        max_bytes: usize,
    ) -> Result<Option<ReadChunk>, StorageError> {
        if located.entry.file_type == FileType::Parquet {
            return self.read_compacted(located, offset, max_bytes).await;
        }
        let bytes = self.entry_bytes(located).await?;
        let mut base_offset = located.base_offset;
        let mut skip_bytes = 0usize;
        let mut first = 0usize;
        for batch in &located.entry.batches {
            if base_offset + u64::from(batch.records) > offset {
                break;
            }
            base_offset += u64::from(batch.records);
            skip_bytes += batch.len as usize;
            first += 1;
        }
        if skip_bytes > bytes.len() || first >= located.entry.batches.len() {
            return Err(StorageError::Corrupt(format!(
                "entry of {} ends before offset {offset}",
                located.entry.object_key
            )));
        }
        Ok(Some(ReadChunk {
            base_offset,
            batches: located.entry.batches[first..].to_vec(),
            bytes: bytes.slice(skip_bytes..),
        }))
    }

    /// A RAW entry's bytes from the write cache, or read back from the store
    /// ([`super::wal_reads`]: shared blocks, read-ahead, CRC checked before serving).
    async fn entry_bytes(&self, located: &LocatedEntry) -> Result<Bytes, StorageError> {
        let entry = &located.entry;
        let key = (entry.object_key.clone(), entry.byte_offset, entry.byte_len);
        if let Some(bytes) = self.written_bytes(&key) {
            return Ok(bytes);
        }
        self.wal_reads.slice(entry).await
    }

    /// Starts reading ahead the RAW entries a reader now at `next` comes to after this page's
    /// read, those not in the write cache.
    fn read_ahead_wal(&self, entries: &[LocatedEntry], next: u64) {
        let ahead: Vec<_> = entries
            .iter()
            .filter(|e| e.base_offset >= next)
            .take_while(|e| e.entry.file_type == FileType::Raw)
            .filter(|e| !self.write_cache.contains(&e.entry.object_key))
            .map(|e| e.entry.clone())
            .collect();
        if !ahead.is_empty() {
            self.wal_reads.read_ahead(&ahead);
        }
    }

    /// The slice from the write cache when its object is still there: a slice of the received
    /// buffer when the entry is one append; an entry of several appends is joined once and
    /// shared from the read cache by every reader tailing it.
    fn written_bytes(&self, key: &(String, u64, u32)) -> Option<Bytes> {
        let (object_key, offset, len) = key;
        let whole = self.write_cache.get(object_key)?;
        if !whole.spans_parts(*offset, *len) {
            return whole.range(*offset, *len);
        }
        if let Some(bytes) = self.wal_reads.cached_slice(key) {
            return Some(bytes);
        }
        let joined = whole.range(*offset, *len)?;
        self.wal_reads.cache_slice(key.clone(), joined.clone());
        Some(joined)
    }
}
