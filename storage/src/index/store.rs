//! Index operations on the MetaStore.

use std::sync::Arc;

use crate::error::StorageError;
use crate::index::{FileType, IndexEntry};
use crate::stream;
use metastore::{Comparison, Expect, MetaError, MetaStore, PutOptions};

/// An index entry with the offsets its key assigned.
#[derive(Clone, Debug)]
pub struct LocatedEntry {
    pub base_offset: u64,
    /// Exclusive.
    pub end_offset: u64,
    pub cumulative_bytes: u64,
    pub entry: Arc<IndexEntry>,
}

/// An index record as stored: its key and version (for conditional deletes) and its entry.
#[derive(Clone, Debug)]
pub struct StoredEntry {
    pub key: String,
    pub version_id: i64,
    pub located: LocatedEntry,
}

/// The offset index of every stream, on one MetaStore handle.
#[derive(Clone)]
pub struct Index {
    meta: Arc<dyn MetaStore>,
}

impl Index {
    pub fn new(meta: Arc<dyn MetaStore>) -> Self {
        Index { meta }
    }

    /// Commits one entry: the sequence put assigns `[end - records, end)` atomically.
    pub async fn commit(
        &self,
        stream: &str,
        entry: &IndexEntry,
    ) -> Result<LocatedEntry, StorageError> {
        let records = entry.record_count();
        debug_assert!(
            records > 0 && entry.byte_len > 0,
            "empty appends never reach the index"
        );
        let options = PutOptions {
            partition_key: Some(stream.to_string()),
            sequence_key_deltas: Some(vec![records, u64::from(entry.byte_len)]),
            ..Default::default()
        };
        let result = self
            .meta
            .put(&stream::index_prefix(stream), entry.encode(), options)
            .await?;
        let (end_offset, cumulative_bytes) = stream::parse_index_key(stream, &result.key)
            .ok_or_else(|| StorageError::Corrupt(format!("unexpected index key {}", result.key)))?;
        // The store assigned the range; check it is consistent with what we asked for.
        if end_offset < records {
            return Err(StorageError::Corrupt(format!(
                "index key {} below its record count",
                result.key
            )));
        }
        Ok(LocatedEntry {
            base_offset: end_offset - records,
            end_offset,
            cumulative_bytes,
            entry: Arc::new(entry.clone()),
        })
    }

    /// The stream's last entry, if any.
    pub async fn last(&self, stream: &str) -> Result<Option<LocatedEntry>, StorageError> {
        let found = self
            .meta
            .get(
                &stream::index_range_end(stream),
                Comparison::Lower,
                Some(stream),
            )
            .await?;
        match found {
            Some(record) if record.key.starts_with(&stream::index_range_start(stream)) => {
                Ok(Some(locate(stream, &record.key, &record.value)?))
            }
            _ => Ok(None),
        }
    }

    /// Up to `limit` entries, in offset order, starting with the one holding `offset`.
    pub async fn entries_from(
        &self,
        stream: &str,
        offset: u64,
        limit: usize,
    ) -> Result<Vec<LocatedEntry>, StorageError> {
        let records = self
            .meta
            .range_scan(
                &stream::index_key_floor(stream, offset.saturating_add(1)),
                &stream::index_range_end(stream),
                Some(stream),
                limit,
            )
            .await?;
        let mut out: Vec<LocatedEntry> = Vec::with_capacity(records.len());
        for record in records {
            let located = locate(stream, &record.key, &record.value)?;
            // During a compaction swap a PARQUET entry (written at the range's last key) already
            // covers RAW entries that are about to be deleted; it is authoritative, the covered
            // ones are dropped. It sorts after them, so covers are resolved before tiling is
            // checked.
            if located.entry.file_type == FileType::Parquet {
                while out
                    .last()
                    .is_some_and(|prev| prev.base_offset >= located.base_offset)
                {
                    out.pop();
                }
            }
            out.push(located);
        }
        // What remains must tile the offset space without gaps or overlaps. (The compactor
        // deletes covered RAW keys from the highest down, so an interrupted swap leaves a
        // contiguous prefix of them, never a hole.)
        for pair in out.windows(2) {
            if pair[0].end_offset != pair[1].base_offset {
                return Err(StorageError::Corrupt(format!(
                    "index of {stream} has a gap or overlap at offset {}",
                    pair[0].end_offset
                )));
            }
        }
        Ok(out)
    }

    /// The stream's trim point (log start offset); 0 if never trimmed.
    pub async fn trim_point(&self, stream: &str) -> Result<u64, StorageError> {
        match self
            .meta
            .get(&stream::trim_key(stream), Comparison::Equal, Some(stream))
            .await?
        {
            None => Ok(0),
            Some(record) => parse_u64(&record.value),
        }
    }

    /// Moves the trim point forward to `offset` (never backward); returns the resulting point.
    pub async fn advance_trim_point(&self, stream: &str, offset: u64) -> Result<u64, StorageError> {
        let key = stream::trim_key(stream);
        loop {
            let current = self.meta.get(&key, Comparison::Equal, Some(stream)).await?;
            let (expect, current_offset) = match &current {
                None => (Expect::NotExists, 0),
                Some(record) => (
                    Expect::Version(record.version.version_id),
                    parse_u64(&record.value)?,
                ),
            };
            if offset <= current_offset {
                return Ok(current_offset);
            }
            let options = PutOptions {
                expect,
                partition_key: Some(stream.to_string()),
                ..Default::default()
            };
            match self
                .meta
                .put(&key, offset.to_string().into(), options)
                .await
            {
                Ok(_) => return Ok(offset),
                // Someone else moved it meanwhile: re-read and retry.
                Err(MetaError::UnexpectedVersion) | Err(MetaError::KeyNotFound) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Up to `limit` index records in key order, from the first whose end offset is above
    /// `after`. Unlike [`Index::entries_from`] nothing is resolved: RAW entries a PARQUET entry
    /// covers (an interrupted compaction swap) are returned too, for callers that clean up.
    pub async fn records_after(
        &self,
        stream: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEntry>, StorageError> {
        let records = self
            .meta
            .range_scan(
                &stream::index_key_floor(stream, after.saturating_add(1)),
                &stream::index_range_end(stream),
                Some(stream),
                limit,
            )
            .await?;
        records
            .into_iter()
            .map(|record| {
                Ok(StoredEntry {
                    located: locate(stream, &record.key, &record.value)?,
                    key: record.key,
                    version_id: record.version.version_id,
                })
            })
            .collect()
    }

    /// Deletes one index record if it is still at the version read. The stream's last record
    /// is never deleted (the sequence put continues from the highest key left; deleting it
    /// would rewind offsets): it returns `false` then, as when the record is gone or changed.
    pub async fn delete_record(
        &self,
        stream: &str,
        record: &StoredEntry,
    ) -> Result<bool, StorageError> {
        // Appends only add higher keys, so a record below the last key stays below it.
        let is_below_last = self
            .last(stream)
            .await?
            .is_some_and(|last| last.end_offset > record.located.end_offset);
        if !is_below_last {
            return Ok(false);
        }
        match self
            .meta
            .delete(
                &record.key,
                Expect::Version(record.version_id),
                Some(stream),
            )
            .await
        {
            Ok(()) => Ok(true),
            Err(MetaError::KeyNotFound) | Err(MetaError::UnexpectedVersion) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes every index record of a deleted stream. The sequence of a prefix restarts when
    /// its keys are gone, so a stream id must never be used again afterwards (the broker's
    /// stream ids carry the topic's unique id).
    pub async fn delete_entries(&self, stream: &str) -> Result<(), StorageError> {
        self.meta
            .delete_range(
                &stream::index_range_start(stream),
                &stream::index_range_end(stream),
                Some(stream),
            )
            .await?;
        Ok(())
    }
}

fn locate(stream: &str, key: &str, value: &[u8]) -> Result<LocatedEntry, StorageError> {
    let (end_offset, cumulative_bytes) = stream::parse_index_key(stream, key)
        .ok_or_else(|| StorageError::Corrupt(format!("unexpected index key {key}")))?;
    let entry = IndexEntry::decode(value)?;
    let records = entry.record_count();
    if records == 0 || end_offset < records {
        return Err(StorageError::Corrupt(format!(
            "index key {key} disagrees with its entry"
        )));
    }
    Ok(LocatedEntry {
        base_offset: end_offset - records,
        end_offset,
        cumulative_bytes,
        entry: Arc::new(entry),
    })
}

fn parse_u64(value: &[u8]) -> Result<u64, StorageError> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| StorageError::Corrupt("trim point is not a number".into()))
}
