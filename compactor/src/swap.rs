//! Compacts one stream: resumes a swap a crash interrupted, then rewrites due RAW ranges.
//!
//! Swap order, each step idempotent: (1) PUT the Parquet file under a name derived from the
//! range; (2) overwrite the range's LAST index key with the PARQUET entry (conditional on the
//! RAW version we read), so readers already see the range whole; (3) delete the older RAW keys
//! it covers; (4) advance `s/<stream>/compacted`. The last key is overwritten, never deleted, so
//! the stream's offset sequence never rewinds.

use std::sync::Arc;

use bytes::Bytes;
use metastore::{Comparison, Expect, MetaError, MetaStore, PutOptions};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use storage::compacted::{self, CompactedError, FileWriter, WriterOptions, WrittenMeta};
use storage::wal::format;
use storage::{stream, FileType, IndexEntry};

use crate::clock::Clock;
use crate::throttle::ReadThrottle;
use crate::upload::Upload;
use crate::{CompactorConfig, CompactorError};

/// Index records scanned per page.
const SCAN_PAGE_RECORDS: usize = 1024;

#[derive(Clone, Debug)]
pub struct Located {
    key: String,
    version_id: i64,
    pub base_offset: u64,
    pub end_offset: u64,
    pub entry: IndexEntry,
}

pub struct StreamCompactor<'a> {
    pub objects: &'a Arc<dyn ObjectStore>,
    pub meta: &'a Arc<dyn MetaStore>,
    pub config: &'a CompactorConfig,
    /// Shared by all workers: `read_bytes_per_sec` bounds their sum.
    pub throttle: &'a ReadThrottle,
    pub clock: &'a dyn Clock,
    /// Which topics' files carry typed columns.
    pub typing: &'a tables::typed::Typing,
}

pub fn compacted_key(stream: &str) -> String {
    format!("s/{stream}/compacted")
}

impl StreamCompactor<'_> {
    /// The stream's first uncompacted offset and its index entries from there (a page at
    /// most), after finishing any swap a crash interrupted.
    pub async fn prepare(&self, stream: &str) -> Result<(u64, Vec<Located>), CompactorError> {
        let start = self.compacted_offset(stream).await?;
        let entries = self.scan(stream, start).await?;
        self.finish_interrupted_swaps(stream, start, entries).await
    }

    async fn compacted_offset(&self, stream: &str) -> Result<u64, CompactorError> {
        let record = self
            .meta
            .get(&compacted_key(stream), Comparison::Equal, Some(stream))
            .await?;
        match record {
            None => Ok(0),
            Some(r) => std::str::from_utf8(&r.value)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| CompactorError::Corrupt(format!("{stream}: compacted offset"))),
        }
    }

    /// Index records whose end offset is above `start`, in key order (a page at most).
    async fn scan(&self, stream: &str, start: u64) -> Result<Vec<Located>, CompactorError> {
        let records = self
            .meta
            .range_scan(
                &stream::index_key_floor(stream, start.saturating_add(1)),
                &stream::index_range_end(stream),
                Some(stream),
                SCAN_PAGE_RECORDS,
            )
            .await?;
        let mut out = Vec::with_capacity(records.len());
        for r in records {
            let (end_offset, _) = stream::parse_index_key(stream, &r.key)
                .ok_or_else(|| CompactorError::Corrupt(format!("index key {}", r.key)))?;
            let entry = IndexEntry::decode(&r.value)?;
            let records = entry.record_count();
            if records == 0 || records > end_offset {
                return Err(CompactorError::Corrupt(format!("index key {}", r.key)));
            }
            out.push(Located {
                key: r.key,
                version_id: r.version.version_id,
                base_offset: end_offset - records,
                end_offset,
                entry,
            });
        }
        Ok(out)
    }

    /// Steps 3 and 4 of a swap that a crash interrupted: RAW keys a PARQUET entry covers are
    /// deleted and the compacted offset moves past leading PARQUET entries. Returns the new
    /// compacted offset and the entries above it.
    async fn finish_interrupted_swaps(
        &self,
        stream: &str,
        start: u64,
        entries: Vec<Located>,
    ) -> Result<(u64, Vec<Located>), CompactorError> {
        let mut kept: Vec<Located> = Vec::with_capacity(entries.len());
        for e in entries {
            if e.entry.file_type == FileType::Parquet {
                while kept.last().is_some_and(|k| k.base_offset >= e.base_offset) {
                    if let Some(covered) = kept.pop() {
                        self.delete_key(stream, &covered).await?;
                    }
                }
            }
            kept.push(e);
        }
        let mut compacted = start;
        for e in &kept {
            if e.entry.file_type != FileType::Parquet || e.base_offset > compacted {
                break;
            }
            compacted = e.end_offset;
        }
        if compacted > start {
            self.set_compacted(stream, compacted).await?;
        }
        let above = kept
            .into_iter()
            .skip_while(|e| e.end_offset <= compacted)
            .collect();
        Ok((compacted, above))
    }

    /// The leading contiguous RAW entries, if they are due, capped by the file limits.
    pub fn due_range<'e>(&self, entries: &'e [Located], now_ms: u64) -> Option<&'e [Located]> {
        let (mut bytes, mut batches, mut oldest_ms, mut n) = (0u64, 0usize, u64::MAX, 0usize);
        for (i, e) in entries.iter().enumerate() {
            if e.entry.file_type != FileType::Raw {
                break;
            }
            if i > 0 && entries[i - 1].end_offset != e.base_offset {
                break;
            }
            if n > 0
                && (bytes + u64::from(e.entry.byte_len) > self.config.file_bytes_max
                    || batches + e.entry.batches.len() > self.config.file_batches_max)
            {
                break;
            }
            bytes += u64::from(e.entry.byte_len);
            batches += e.entry.batches.len();
            oldest_ms = oldest_ms.min(e.entry.write_time_ms);
            n += 1;
        }
        let old_enough = now_ms.saturating_sub(oldest_ms) >= self.config.min_age_ms;
        (n > 0 && (bytes >= self.config.min_bytes || old_enough)).then(|| &entries[..n])
    }

    /// Steps 1 to 4 for one range. Returns (records, bytes read).
    pub async fn compact_range(
        &self,
        stream: &str,
        range: &[Located],
    ) -> Result<(u64, u64), CompactorError> {
        let (first, last) = match (range.first(), range.last()) {
            (Some(f), Some(l)) => (f.clone(), l.clone()),
            _ => return Ok((0, 0)),
        };
        let object_key = compacted::file_key(
            &self.config.compacted_prefix,
            stream,
            first.base_offset,
            last.end_offset,
        );
        // (1) the file, under a name derived from the range: a replay overwrites it.
        let mut upload = Upload::new(self.objects.clone(), Path::from(object_key.as_str()));
        let expected_records = last.end_offset - first.base_offset;
        let (written, byte_len, bytes_read) = match self
            .write_file(stream, range, expected_records, &mut upload)
            .await
        {
            Ok(done) => done,
            Err(e) => {
                upload.abort().await;
                return Err(e);
            }
        };
        upload.finish().await?;
        let entry = IndexEntry {
            file_type: FileType::Parquet,
            object_key: object_key.clone(),
            byte_offset: 0,
            byte_len,
            crc32c: written.crc32c,
            min_timestamp: written.min_timestamp,
            max_timestamp: written.max_timestamp,
            write_time_ms: self.clock.now_ms(),
            batches: written.batches,
        };
        // (2) the PARQUET entry at the range's last key, only if that key is still the RAW we read.
        let options = PutOptions {
            expect: Expect::Version(last.version_id),
            partition_key: Some(stream.to_string()),
            ..Default::default()
        };
        match self.meta.put(&last.key, entry.encode(), options).await {
            Ok(_) => {}
            Err(MetaError::UnexpectedVersion) => {
                return Err(CompactorError::Conflict(stream.to_string()))
            }
            Err(e) => return Err(e.into()),
        }
        // (3) the RAW keys it covers, highest first: a reader never finds a hole between the
        // RAW keys still there and the PARQUET entry, (4) the compacted offset.
        for e in range[..range.len() - 1].iter().rev() {
            self.delete_key(stream, e).await?;
        }
        self.set_compacted(stream, last.end_offset).await?;
        tracing::info!(
            stream,
            base_offset = first.base_offset,
            end_offset = last.end_offset,
            file_bytes = byte_len,
            input_bytes = bytes_read,
            "compacted range"
        );
        Ok((expected_records, bytes_read))
    }

    /// Reads the range one slice at a time, encodes each off the async runtime and streams the
    /// output to `upload`: memory holds two slices, one row group and the upload's parts,
    /// however large the file. Refuses a file whose record count is not the index's, before it is
    /// visible, and one an index entry cannot describe. Returns the file's metadata, its length
    /// and the input bytes read.
    async fn write_file(
        &self,
        stream: &str,
        range: &[Located],
        expected_records: u64,
        upload: &mut Upload,
    ) -> Result<(WrittenMeta, u32, u64), CompactorError> {
        let extra = self.typing.extra(stream);
        let mut writer = FileWriter::with_extra(stream, &WriterOptions::default(), extra)?;
        let mut bytes_read = 0u64;
        let mut prefetched = None;
        for (i, e) in range.iter().enumerate() {
            let payload = match prefetched.take() {
                Some(payload) => payload,
                None => self.read_slice(&e.entry).await?,
            };
            bytes_read += payload.len() as u64;
            let base_offset = e.base_offset;
            let encode = off_runtime(self.config.cpu_work_inline, move || {
                writer.push(base_offset, payload)?;
                let output = writer.take_output()?;
                Ok((writer, output))
            });
            // The next slice is read while this one is encoded (one slice ahead at most), so
            // object-store latency does not add to the encoding time.
            let next = async {
                match range.get(i + 1) {
                    Some(next) => self.read_slice(&next.entry).await.map(Some),
                    None => Ok(None),
                }
            };
            let (encoded, next) = tokio::join!(encode, next);
            let (pushed, output) = encoded?;
            writer = pushed;
            prefetched = next?;
            if !output.is_empty() {
                upload.write(output).await?;
            }
        }
        let inline = self.config.cpu_work_inline;
        let (tail, written) = off_runtime(inline, move || writer.finish()).await?;
        if written.records != expected_records {
            return Err(CompactorError::Corrupt(format!(
                "{stream}: batches hold {} records, the index says {expected_records}",
                written.records
            )));
        }
        let byte_len = u32::try_from(written.byte_len).map_err(|_| {
            CompactorError::Corrupt(format!("{stream}: compacted file above 4 GiB"))
        })?;
        upload.write(tail).await?;
        Ok((written, byte_len, bytes_read))
    }

    async fn read_slice(&self, entry: &IndexEntry) -> Result<Bytes, CompactorError> {
        let start = entry.byte_offset;
        let end = start + u64::from(entry.byte_len);
        self.throttle.acquire(u64::from(entry.byte_len)).await;
        let bytes = self
            .objects
            .get_range(&Path::from(entry.object_key.as_str()), start..end)
            .await?;
        format::verify_slice(&bytes, entry.byte_len, entry.crc32c)
            .map_err(|e| CompactorError::Corrupt(format!("{}@{start}: {e}", entry.object_key)))?;
        Ok(bytes)
    }

    async fn delete_key(&self, stream: &str, e: &Located) -> Result<(), CompactorError> {
        match self
            .meta
            .delete(&e.key, Expect::Version(e.version_id), Some(stream))
            .await
        {
            Ok(()) | Err(MetaError::KeyNotFound) => Ok(()),
            // Changed meanwhile (another compactor finished the same step): leave it.
            Err(MetaError::UnexpectedVersion) => Ok(()),
            Err(err) => Err(err.into()),
        }
    }

    async fn set_compacted(&self, stream: &str, offset: u64) -> Result<(), CompactorError> {
        let current = self.compacted_offset(stream).await?;
        if offset <= current {
            return Ok(());
        }
        self.meta
            .put(
                &compacted_key(stream),
                offset.to_string().into(),
                PutOptions::partition(stream),
            )
            .await?;
        Ok(())
    }
}

/// Runs CPU-bound writer work (decode, encode, compress) off the async threads.
async fn off_runtime<T: Send + 'static>(
    inline: bool,
    work: impl FnOnce() -> Result<T, CompactedError> + Send + 'static,
) -> Result<T, CompactorError> {
    storage::cpu::run(inline, work)
        .await
        .map_err(|e| CompactorError::Corrupt(format!("writer task failed: {e}")))?
        .map_err(CompactorError::from)
}
