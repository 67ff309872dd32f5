//! Retention: moves each partition's trim point (log start offset) forward by its topic's
//! `retention.ms` and `retention.bytes`, applied to whole emulated Kafka segments (bounded by
//! `segment.bytes` and `segment.ms`, see [`segments`]), then deletes the index entries wholly
//! below the trim point. WAL objects no entry names any more are then freed by the reclaimer,
//! and compacted files of deleted PARQUET entries by the orphan sweeper, each after its grace
//! period. A service runs it every `log.retention.check.interval.ms`, as Kafka does.
//!
//! Order per stream: the trim point moves first, so a reader never finds a missing entry above
//! the log start; entries go from the lowest up, so an interrupted run leaves a contiguous
//! index; the stream's last key is never deleted (its sequence would rewind). Streams of topics
//! the catalog no longer has are left alone (topic deletion removes them).

mod segments;
mod trim;

use std::sync::Arc;

use metastore::MetaStore;
use storage::index::{Index, LocatedEntry};
use storage::topics::{self, TopicDefaults, TopicRecord};

pub use segments::{SegmentRules, Segmenter};
pub use trim::RetentionPolicy;

use crate::CompactorError;
use segments::BatchAt;
use trim::TrimScan;

/// Index records read by the first page of a scan: most passes find nothing to trim and stop
/// at the first entry, so they read little...
const FIRST_PAGE_RECORDS: usize = 8;
/// ...while a scan that goes on reads bigger pages.
const SCAN_PAGE_RECORDS: usize = 1024;

impl RetentionPolicy {
    /// The policy of a topic on brokers whose `log.*` settings are `defaults`.
    pub fn of(
        record: &TopicRecord,
        defaults: &TopicDefaults,
    ) -> Result<RetentionPolicy, topics::TopicError> {
        let config = record.config(defaults)?;
        // `retention.*` applies only where the policy has `delete` (Kafka: a `compact` topic
        // keeps everything its key compaction keeps; DeleteRecords still trims it).
        let delete = config.cleanup_policy.delete;
        Ok(RetentionPolicy {
            retention_ms: config.retention_ms.filter(|_| delete),
            retention_bytes: config.retention_bytes.filter(|_| delete),
            segments: SegmentRules {
                segment_bytes: config.segment_bytes,
                segment_ms: config.segment_ms,
                segment_jitter_ms: config.segment_jitter_ms,
            },
            compacted: config.cleanup_policy.compact,
        })
    }
}

/// The batches of an index entry, with their offsets, as the segments see them.
pub(crate) fn batches_of(entry: &LocatedEntry) -> impl Iterator<Item = BatchAt> + '_ {
    let mut base_offset = entry.base_offset;
    entry.entry.batches.iter().map(move |b| {
        let batch = BatchAt {
            base_offset,
            records: u64::from(b.records),
            bytes: u64::from(b.len),
            max_timestamp: b.max_timestamp,
            append_ms: entry.entry.write_time_ms,
        };
        base_offset += u64::from(b.records);
        batch
    })
}

/// Bytes of an entry's batches as appended (a PARQUET entry keeps the lengths it was built from).
pub(crate) fn entry_bytes(entry: &LocatedEntry) -> u64 {
    entry.entry.batches.iter().map(|b| u64::from(b.len)).sum()
}

/// What one retention run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetentionReport {
    /// Streams whose trim point moved.
    pub streams_trimmed: u64,
    pub entries_deleted: u64,
    pub streams_failed: u64,
}

/// What retention did to one stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamRetention {
    /// The trim point afterwards.
    pub trim_point: u64,
    pub trimmed: bool,
    pub entries_deleted: u64,
}

/// Applies every topic's retention at `now_ms`. Failures are logged and retried on the next
/// pass; they never stop the rest of the pass.
pub async fn enforce(
    index_meta: &Arc<dyn MetaStore>,
    coord_meta: &Arc<dyn MetaStore>,
    defaults: &TopicDefaults,
    now_ms: u64,
) -> RetentionReport {
    let mut report = RetentionReport::default();
    let index = Index::new(index_meta.clone());
    let all = match topics::list(coord_meta.as_ref()).await {
        Ok(all) => all,
        Err(error) => {
            tracing::warn!(%error, "cannot list topics for retention");
            report.streams_failed += 1;
            return report;
        }
    };
    for topic in all {
        let policy = match RetentionPolicy::of(&topic.record, defaults) {
            Ok(policy) => policy,
            Err(error) => {
                tracing::warn!(topic = %topic.name, %error, "skipping retention: bad config");
                continue;
            }
        };
        for partition in 0..topic.record.partitions.max(0) {
            let stream = topic.record.stream_id(partition);
            match enforce_stream(&index, &stream, policy, now_ms).await {
                Ok(done) => {
                    report.streams_trimmed += u64::from(done.trimmed);
                    report.entries_deleted += done.entries_deleted;
                }
                Err(error) => {
                    report.streams_failed += 1;
                    tracing::warn!(topic = %topic.name, partition, %stream, %error, "retention failed; will retry");
                }
            }
        }
    }
    if report != RetentionReport::default() {
        tracing::info!(?report, "retention pass done");
    }
    report
}

/// Moves one stream's trim point by `policy` and deletes the entries wholly below it,
/// including those left below a trim point moved by DeleteRecords.
pub async fn enforce_stream(
    index: &Index,
    stream: &str,
    policy: RetentionPolicy,
    now_ms: u64,
) -> Result<StreamRetention, CompactorError> {
    let mut done = StreamRetention::default();
    let Some(last) = index.last(stream).await? else {
        return Ok(done);
    };
    let current = index.trim_point(stream).await?;
    done.trim_point = current;
    if !policy.is_unlimited() {
        let total_bytes = match policy.compacted && policy.retention_bytes.is_some() {
            true => compacted_log_end_bytes(index, stream, current).await?,
            false => last.cumulative_bytes,
        };
        let log = (current, total_bytes);
        let target = trim_target(index, stream, policy, now_ms, log).await?;
        if target > current {
            done.trim_point = index.advance_trim_point(stream, target).await?;
            done.trimmed = true;
            tracing::info!(
                stream,
                from = current,
                to = done.trim_point,
                "log start offset advanced by retention"
            );
        }
    }
    if done.trim_point > 0 {
        done.entries_deleted = delete_below(index, stream, done.trim_point).await?;
    }
    Ok(done)
}

/// The log start retention allows: the batches from the first entry past `trim_point` on go
/// through a [`TrimScan`], page by page, until it can no longer move.
async fn trim_target(
    index: &Index,
    stream: &str,
    policy: RetentionPolicy,
    now_ms: u64,
    (trim_point, total_bytes): (u64, u64),
) -> Result<u64, CompactorError> {
    let (mut after, mut limit) = (trim_point, FIRST_PAGE_RECORDS);
    let mut scan: Option<TrimScan> = None;
    loop {
        let page = index.records_after(stream, after, limit).await?;
        let Some(last) = page.last() else {
            return Ok(scan.map_or(0, TrimScan::finish));
        };
        after = last.located.end_offset;
        let full = page.len() == limit;
        limit = SCAN_PAGE_RECORDS;
        for record in &page {
            let entry = &record.located;
            // Kafka's log size counts whole segments, records below the log start included.
            let scan = scan.get_or_insert_with(|| {
                let before_bytes = entry.cumulative_bytes.saturating_sub(entry_bytes(entry));
                TrimScan::new(policy, now_ms, total_bytes.saturating_sub(before_bytes))
            });
            for batch in batches_of(entry) {
                if !scan.visit(&batch) {
                    return Ok(scan.target());
                }
            }
        }
        if !full {
            return Ok(scan.map_or(0, TrimScan::finish));
        }
    }
}

/// For a key-compacted log, the cumulative bytes its last key would carry were every entry
/// from the first one past `trim_point` counted at its size now: what [`trim_target`] needs
/// to measure the log as it is (the keys keep the bytes as appended).
async fn compacted_log_end_bytes(
    index: &Index,
    stream: &str,
    trim_point: u64,
) -> Result<u64, CompactorError> {
    let (mut after, mut first_before) = (trim_point, None);
    // (base offset, bytes) of the entries, those a PARQUET entry covers (a swap under way) left out.
    let mut entries: Vec<(u64, u64)> = Vec::new();
    loop {
        let page = index
            .records_after(stream, after, SCAN_PAGE_RECORDS)
            .await?;
        let Some(last) = page.last() else { break };
        after = last.located.end_offset;
        let full = page.len() == SCAN_PAGE_RECORDS;
        for record in &page {
            let entry = &record.located;
            let bytes = entry_bytes(entry);
            first_before.get_or_insert(entry.cumulative_bytes.saturating_sub(bytes));
            if entry.entry.file_type == storage::FileType::Parquet {
                while entries
                    .last()
                    .is_some_and(|(base, _)| *base >= entry.base_offset)
                {
                    entries.pop();
                }
            }
            entries.push((entry.base_offset, bytes));
        }
        if !full {
            break;
        }
    }
    Ok(first_before.unwrap_or(0) + entries.iter().map(|(_, bytes)| bytes).sum::<u64>())
}

/// Deletes, lowest first, the index records whose whole range is below `trim_point` (never the
/// stream's last). A deleted PARQUET entry leaves its file unreferenced for the orphan sweeper.
async fn delete_below(index: &Index, stream: &str, trim_point: u64) -> Result<u64, CompactorError> {
    let mut deleted = 0;
    let (mut after, mut limit) = (0, FIRST_PAGE_RECORDS);
    loop {
        let page = index.records_after(stream, after, limit).await?;
        let Some(last) = page.last() else {
            return Ok(deleted);
        };
        after = last.located.end_offset;
        let full = page.len() == limit;
        limit = SCAN_PAGE_RECORDS;
        for record in &page {
            if record.located.end_offset > trim_point {
                return Ok(deleted);
            }
            if index.delete_record(stream, record).await? {
                deleted += 1;
            }
        }
        if !full {
            return Ok(deleted);
        }
    }
}
