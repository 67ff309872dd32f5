//! Key compaction of one partition of a compacted topic: the index records from the log start,
//! the plan (`plan.rs`), the key map over the dirty section (`key_map.rs`), then the cleanable
//! entries rewritten through the rules of `retain.rs` into new compacted files, swapped in
//! group by group, and the clean state recorded.
//!
//! A group is a run of old entries; its new file covers exactly their offsets and its entry
//! overwrites the group's last index key (conditional on the version read), then the group's
//! other keys go, highest first: a reader sees either the old entries or the new one, never a
//! gap, as in the WAL -> Parquet swap. Groups end on old entry boundaries once the output holds
//! half a file's limits, so a partition with K live keys stays a few files of about K records.
//! An interrupted run leaves some groups swapped: replaying it only removes what a later record
//! already superseded. The new file's name carries a generation above every referenced file's,
//! so it never overwrites a file a reader may be reading; replaced files become orphans.

use std::sync::Arc;

use bytes::Bytes;
use metastore::{Comparison, Expect, MetaError, MetaStore, PutOptions};
use object_store::path::Path;
use object_store::ObjectStore;
use storage::compacted::{FileWriter, WriterOptions};
use storage::index::{Index, StoredEntry};
use storage::record_batch::{decode_batch, DecodedBatch};
use storage::topics::TopicConfig;
use storage::{BatchMeta, FileType, IndexEntry, ProducerMeta};

use super::files::CompactedFile;
use super::key_map::KeyMap;
use super::plan::{due_entries, CleanState};
use super::retain::{retain, RetainRules};
use crate::clock::Clock;
use crate::retention::SegmentRules;
use crate::swap::compacted_key;
use crate::throttle::ReadThrottle;
use crate::upload::Upload;
use crate::{CompactorConfig, CompactorError};

const SCAN_PAGE_RECORDS: usize = 1024;

/// Where a stream's [`CleanState`] is kept.
pub fn clean_key(stream: &str) -> String {
    format!("s/{stream}/cleaned")
}

/// What key compaction did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyedReport {
    pub streams: u64,
    pub files_written: u64,
    pub records_removed: u64,
    /// Compacted-file bytes read (footers and row groups) and written.
    pub bytes_read: u64,
    pub bytes_written: u64,
}

pub struct KeyCompactor<'a> {
    pub objects: &'a Arc<dyn ObjectStore>,
    pub meta: &'a Arc<dyn MetaStore>,
    pub config: &'a CompactorConfig,
    pub throttle: &'a ReadThrottle,
    pub clock: &'a dyn Clock,
    /// Which topics' files carry typed columns.
    pub typing: &'a tables::typed::Typing,
}

/// The new file of one group being written.
struct Group {
    writer: FileWriter,
    upload: Upload,
    object_key: String,
    base_offset: u64,
    /// Offsets the written batches' index descriptions cover so far.
    tiled_to: u64,
    entries: Vec<StoredEntry>,
    bytes_written: u64,
}

impl KeyCompactor<'_> {
    /// Compacts `stream` by key if it is due.
    pub async fn compact_stream(
        &self,
        stream: &str,
        topic: &TopicConfig,
    ) -> Result<KeyedReport, CompactorError> {
        let mut report = KeyedReport::default();
        let entries = self.entries(stream).await?;
        let compacted = self.compacted_offset(stream).await?;
        let state = self.clean_state(stream).await?;
        let rules = SegmentRules {
            segment_bytes: topic.segment_bytes,
            segment_ms: topic.segment_ms,
            segment_jitter_ms: topic.segment_jitter_ms,
        };
        let now_ms = self.clock.now_ms();
        let located: Vec<_> = entries.iter().map(|e| e.located.clone()).collect();
        let Some(due) = due_entries(
            &located,
            compacted,
            rules,
            &topic.compaction,
            &state,
            now_ms,
        ) else {
            return Ok(report);
        };
        let cleanable = &entries[..due.entries];
        let (map, clean_end) = self
            .key_map(cleanable, (state.cleaned, due.cleanable_end), &mut report)
            .await?;
        let generation = next_generation(&entries);
        let rules = RetainRules {
            map: &map,
            clean_end,
            now_ms: i64::try_from(now_ms).unwrap_or(i64::MAX),
            delete_retention_ms: topic.compaction.delete_retention_ms,
        };
        let due = self
            .rewrite(stream, cleanable, &rules, generation, &mut report)
            .await?;
        let state = CleanState {
            cleaned: clean_end,
            tombstones_due_ms: due.and_then(|d| u64::try_from(d).ok()),
        };
        self.put_clean_state(stream, &state).await?;
        report.streams = 1;
        tracing::info!(
            stream,
            clean_end,
            keys = map.len(),
            removed = report.records_removed,
            "compacted by key"
        );
        Ok(report)
    }

    /// The stream's index records from its first, covered ones (an interrupted swap) deleted.
    pub(super) async fn entries(&self, stream: &str) -> Result<Vec<StoredEntry>, CompactorError> {
        let index = Index::new(self.meta.clone());
        let mut kept: Vec<StoredEntry> = Vec::new();
        let mut after = 0;
        loop {
            let page = index
                .records_after(stream, after, SCAN_PAGE_RECORDS)
                .await?;
            let Some(last) = page.last() else { break };
            after = last.located.end_offset;
            let full = page.len() == SCAN_PAGE_RECORDS;
            for record in page {
                if record.located.entry.file_type == FileType::Parquet {
                    while kept
                        .last()
                        .is_some_and(|k| k.located.base_offset >= record.located.base_offset)
                    {
                        if let Some(covered) = kept.pop() {
                            index.delete_record(stream, &covered).await?;
                        }
                    }
                }
                kept.push(record);
            }
            if !full {
                break;
            }
        }
        Ok(kept)
    }

    /// Keys of the dirty section `[cleaned, end)`, as far as the budget holds them whole
    /// batches; the first offset not mapped.
    async fn key_map(
        &self,
        cleanable: &[StoredEntry],
        (cleaned, end): (u64, u64),
        report: &mut KeyedReport,
    ) -> Result<(KeyMap, u64), CompactorError> {
        let mut map = KeyMap::with_budget(self.config.dedupe_buffer_bytes);
        for stored in cleanable.iter().filter(|e| e.located.end_offset > cleaned) {
            let file = CompactedFile::open(self.objects, &stored.located, self.throttle).await?;
            for g in 0..file.groups() {
                let group = file
                    .group(g, self.throttle, self.config.cpu_work_inline)
                    .await?;
                for (base, bytes, _) in group.all_batches() {
                    report.bytes_read += bytes.len() as u64;
                    if base < cleaned {
                        continue;
                    }
                    if base >= end {
                        return Ok((map, end));
                    }
                    let batch =
                        decode_batch(&bytes).map_err(storage::compacted::CompactedError::from)?;
                    if !map.has_room_for(batch.records.len()) && !map.is_empty() {
                        return Ok((map, base));
                    }
                    if !super::retain::maps_keys(&batch) {
                        continue;
                    }
                    for r in &batch.records {
                        if let Some(key) = r.key.as_deref() {
                            map.put(key, base + u64::try_from(r.offset_delta).unwrap_or(0));
                        }
                    }
                }
            }
        }
        Ok((map, end))
    }

    /// Rewrites the cleanable entries group by group; the earliest delete horizon kept.
    async fn rewrite(
        &self,
        stream: &str,
        cleanable: &[StoredEntry],
        rules: &RetainRules<'_>,
        generation: u64,
        report: &mut KeyedReport,
    ) -> Result<Option<i64>, CompactorError> {
        let mut due: Option<i64> = None;
        let mut group: Option<Group> = None;
        for (i, stored) in cleanable.iter().enumerate() {
            let g = match group.as_mut() {
                Some(g) => g,
                None => {
                    group.insert(self.new_group(stream, stored.located.base_offset, generation)?)
                }
            };
            let file = CompactedFile::open(self.objects, &stored.located, self.throttle).await?;
            let mut last_batch: Option<(u64, Bytes, i16)> = None;
            for r in 0..file.groups() {
                let rebuilt = file
                    .group(r, self.throttle, self.config.cpu_work_inline)
                    .await?;
                for (base, bytes, attributes) in rebuilt.all_batches() {
                    report.bytes_read += bytes.len() as u64;
                    let mut batch =
                        decode_batch(&bytes).map_err(storage::compacted::CompactedError::from)?;
                    // Rebuilt uncompressed to be read; kept in the producer's codec.
                    batch.header.attributes = attributes;
                    let kept = retain(base, batch, rules);
                    report.records_removed += kept.removed;
                    due = match (due, kept.tombstones_due_ms) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    if let Some(batch) = kept.batch {
                        push(g, base, &batch)?;
                    }
                    last_batch = Some((base, bytes, attributes));
                }
            }
            g.entries.push(stored.clone());
            let out = g.writer.take_output()?;
            g.bytes_written += out.len() as u64;
            g.upload.write(out).await?;
            let last = i + 1 == cleanable.len();
            let half_full = g.writer.batches() >= self.config.file_batches_max / 2
                || g.bytes_written >= self.config.file_bytes_max / 2;
            if g.writer.batches() == 0 {
                if !last {
                    continue; // an empty group grows into the next entry
                }
                // A range must keep one batch to be described: its last, as it was.
                if let Some((base, bytes, attributes)) = last_batch {
                    let mut batch =
                        decode_batch(&bytes).map_err(storage::compacted::CompactedError::from)?;
                    batch.header.attributes = attributes;
                    push(g, base, &batch)?;
                }
            }
            if last || half_full {
                if let Some(done) = group.take() {
                    self.swap_group(stream, done, stored.located.end_offset, report)
                        .await?;
                }
            }
        }
        Ok(due)
    }

    fn new_group(
        &self,
        stream: &str,
        base_offset: u64,
        generation: u64,
    ) -> Result<Group, CompactorError> {
        let object_key = format!(
            "{}/{stream}/{base_offset:020}-g{generation:010}.parquet",
            self.config.compacted_prefix
        );
        Ok(Group {
            writer: FileWriter::key_compacted(
                stream,
                &WriterOptions::default(),
                self.typing.extra(stream),
            )?,
            upload: Upload::new(self.objects.clone(), Path::from(object_key.as_str())),
            object_key,
            base_offset,
            tiled_to: base_offset,
            entries: Vec::new(),
            bytes_written: 0,
        })
    }

    /// Finishes the group's file and swaps it in for the group's entries.
    async fn swap_group(
        &self,
        stream: &str,
        mut g: Group,
        end_offset: u64,
        report: &mut KeyedReport,
    ) -> Result<(), CompactorError> {
        if end_offset > g.tiled_to {
            let gap = u32::try_from(end_offset - g.tiled_to)
                .map_err(|_| CompactorError::Corrupt(format!("{stream}: gap above 4G offsets")))?;
            g.writer.extend_last_batch(gap);
        }
        let (tail, written) = g.writer.finish()?;
        g.upload.write(tail).await?;
        g.upload.finish().await?;
        if written.records != end_offset - g.base_offset {
            return Err(CompactorError::Corrupt(format!(
                "{stream}: rewritten batches describe {} offsets, the range holds {}",
                written.records,
                end_offset - g.base_offset
            )));
        }
        let byte_len = u32::try_from(written.byte_len).map_err(|_| {
            CompactorError::Corrupt(format!("{stream}: compacted file above 4 GiB"))
        })?;
        let Some(last) = g.entries.last() else {
            return Ok(());
        };
        let entry = IndexEntry {
            file_type: FileType::Parquet,
            object_key: g.object_key.clone(),
            byte_offset: 0,
            byte_len,
            crc32c: written.crc32c,
            min_timestamp: written.min_timestamp,
            max_timestamp: written.max_timestamp,
            // The input's, not now: batches without timestamps age by it (segments, retention).
            write_time_ms: g
                .entries
                .iter()
                .map(|e| e.located.entry.write_time_ms)
                .max()
                .unwrap_or(0),
            batches: written.batches,
        };
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
        let index = Index::new(self.meta.clone());
        for covered in g.entries[..g.entries.len() - 1].iter().rev() {
            index.delete_record(stream, covered).await?;
        }
        report.files_written += 1;
        report.bytes_written += written.byte_len;
        tracing::debug!(stream, object_key = %g.object_key, base_offset = g.base_offset, end_offset, "swapped key-compacted file");
        Ok(())
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

    async fn clean_state(&self, stream: &str) -> Result<CleanState, CompactorError> {
        let record = self
            .meta
            .get(&clean_key(stream), Comparison::Equal, Some(stream))
            .await?;
        match record {
            None => Ok(CleanState::default()),
            Some(r) => serde_json::from_slice(&r.value)
                .map_err(|e| CompactorError::Corrupt(format!("{stream}: clean state: {e}"))),
        }
    }

    async fn put_clean_state(
        &self,
        stream: &str,
        state: &CleanState,
    ) -> Result<(), CompactorError> {
        let value =
            serde_json::to_vec(state).map_err(|e| CompactorError::Corrupt(e.to_string()))?;
        self.meta
            .put(
                &clean_key(stream),
                value.into(),
                PutOptions::partition(stream),
            )
            .await?;
        Ok(())
    }
}

/// Appends a kept batch, its index description covering any gap before it.
fn push(g: &mut Group, base: u64, batch: &DecodedBatch) -> Result<(), CompactorError> {
    let span = u64::try_from(batch.header.last_offset_delta).unwrap_or(0) + 1;
    let end = base + span;
    let records = u32::try_from(end - g.tiled_to)
        .map_err(|_| CompactorError::Corrupt(format!("batch at {base} spans over 4G offsets")))?;
    let h = batch.header;
    let meta = BatchMeta {
        len: estimated_len(batch),
        records,
        max_timestamp: h.max_timestamp,
        producer: (h.producer_id >= 0).then_some(ProducerMeta {
            id: h.producer_id,
            epoch: h.producer_epoch,
            base_sequence: h.base_sequence,
        }),
    };
    g.writer.push_decoded(base, batch, meta)?;
    g.tiled_to = end;
    Ok(())
}

/// About the bytes of the batch uncompressed: what retention and the dirty ratio count.
fn estimated_len(batch: &DecodedBatch) -> u32 {
    let bytes: usize = batch
        .records
        .iter()
        .map(|r| {
            let headers: usize = r
                .headers
                .iter()
                .map(|(k, v)| 2 + k.len() + v.as_ref().map_or(0, Bytes::len))
                .sum();
            8 + r.key.as_ref().map_or(0, Bytes::len)
                + r.value.as_ref().map_or(0, Bytes::len)
                + headers
        })
        .sum();
    u32::try_from(storage::record_batch::HEADER_BYTES + bytes).unwrap_or(u32::MAX)
}

/// One above the generation of every key-compacted file the stream's index names.
pub(super) fn next_generation(entries: &[StoredEntry]) -> u64 {
    entries
        .iter()
        .filter_map(|e| {
            let name = e.located.entry.object_key.rsplit('/').next()?;
            let generation = name.strip_suffix(".parquet")?.rsplit_once("-g")?.1;
            generation.parse::<u64>().ok()
        })
        .max()
        .map_or(1, |g| g + 1)
}
