//! Retention: moves each partition's trim point (log start offset) forward by its topic's
//! `retention.ms` and `retention.bytes`, then deletes the index entries wholly below the trim
//! point. WAL objects no entry names any more are then freed by the reclaimer, and compacted
//! files of deleted PARQUET entries by the orphan sweeper, each after its grace period.
//!
//! Order per stream: the trim point moves first, so a reader never finds a missing entry above
//! the log start; entries go from the lowest up, so an interrupted run leaves a contiguous
//! index; the stream's last key is never deleted (its sequence would rewind). Streams of topics
//! the catalog no longer has are left alone (topic deletion removes them).

use std::sync::Arc;

use storage::index::{Index, LocatedEntry};
use storage::meta::MetaStore;
use storage::topics::{self, TopicRecord};

use crate::CompactorError;

/// Index records read by the first page of a scan: most passes find nothing to trim and stop
/// at the first entry, so they read little...
const FIRST_PAGE_RECORDS: usize = 8;
/// ...while a scan that goes on reads bigger pages.
const SCAN_PAGE_RECORDS: usize = 1024;

/// How much of a partition's log a topic keeps; `None` is no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetentionPolicy {
    pub retention_ms: Option<u64>,
    pub retention_bytes: Option<u64>,
}

impl RetentionPolicy {
    pub fn of(record: &TopicRecord) -> Result<RetentionPolicy, topics::TopicError> {
        Ok(RetentionPolicy {
            retention_ms: record.retention_ms()?,
            retention_bytes: record.retention_bytes()?,
        })
    }

    fn is_unlimited(&self) -> bool {
        self.retention_ms.is_none() && self.retention_bytes.is_none()
    }
}

/// Finds the new trim point from a stream's entries visited in offset order: the end of the
/// longest run of leading entries that are all expired (`retention.ms`, by their largest
/// record timestamp), or whose removal still leaves at least `retention.bytes` (by the
/// cumulative byte counts of the index keys), whichever reaches further. Kafka deletes whole
/// segments by the same two rules; an index entry plays the segment's part.
#[derive(Debug)]
pub struct TrimScan {
    policy: RetentionPolicy,
    now_ms: u64,
    /// Cumulative bytes of the stream's last entry: the size of everything ever appended.
    total_bytes: u64,
    by_time: bool,
    by_bytes: bool,
    target: u64,
}

impl TrimScan {
    pub fn new(policy: RetentionPolicy, now_ms: u64, total_bytes: u64) -> TrimScan {
        TrimScan {
            policy,
            now_ms,
            total_bytes,
            by_time: policy.retention_ms.is_some(),
            by_bytes: policy.retention_bytes.is_some(),
            target: 0,
        }
    }

    /// Takes the next entry into account; false once no later entry can move the target.
    pub fn visit(&mut self, entry: &LocatedEntry) -> bool {
        if self.by_time {
            self.by_time = self.expired(entry);
        }
        if self.by_bytes {
            let kept = self.total_bytes.saturating_sub(entry.cumulative_bytes);
            self.by_bytes = self.policy.retention_bytes.is_some_and(|max| kept >= max);
        }
        if self.by_time || self.by_bytes {
            self.target = self.target.max(entry.end_offset);
        }
        self.by_time || self.by_bytes
    }

    /// The offset every visited entry below may be trimmed to (0: nothing).
    pub fn target(&self) -> u64 {
        self.target
    }

    fn expired(&self, entry: &LocatedEntry) -> bool {
        let Some(retention_ms) = self.policy.retention_ms else {
            return false;
        };
        // Without record timestamps (-1) the entry's append time stands in, as Kafka falls
        // back to a segment's modification time.
        let newest_ms = if entry.entry.max_timestamp >= 0 {
            entry.entry.max_timestamp as u64
        } else {
            entry.entry.write_time_ms
        };
        self.now_ms.saturating_sub(newest_ms) > retention_ms
    }
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
        let policy = match RetentionPolicy::of(&topic.record) {
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
        let target = trim_target(index, stream, policy, now_ms, last.cumulative_bytes).await?;
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

async fn trim_target(
    index: &Index,
    stream: &str,
    policy: RetentionPolicy,
    now_ms: u64,
    total_bytes: u64,
) -> Result<u64, CompactorError> {
    let mut scan = TrimScan::new(policy, now_ms, total_bytes);
    let (mut after, mut limit) = (0, FIRST_PAGE_RECORDS);
    loop {
        let page = index.records_after(stream, after, limit).await?;
        let Some(last) = page.last() else {
            return Ok(scan.target());
        };
        after = last.located.end_offset;
        let full = page.len() == limit;
        limit = SCAN_PAGE_RECORDS;
        for record in &page {
            if !scan.visit(&record.located) {
                return Ok(scan.target());
            }
        }
        if !full {
            return Ok(scan.target());
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use storage::{FileType, IndexEntry};

    const NOW_MS: u64 = 1_000_000;

    /// An entry of `records` offsets ending at `end`, `bytes` long, newest record at `ts`.
    fn entry(end: u64, records: u32, cumulative_bytes: u64, ts: i64) -> LocatedEntry {
        LocatedEntry {
            base_offset: end - u64::from(records),
            end_offset: end,
            cumulative_bytes,
            entry: Arc::new(IndexEntry {
                file_type: FileType::Raw,
                object_key: "wal/x".into(),
                byte_offset: 0,
                byte_len: 10,
                crc32c: 0,
                min_timestamp: ts,
                max_timestamp: ts,
                write_time_ms: 7,
                batches: vec![storage::BatchMeta {
                    len: 10,
                    records,
                    max_timestamp: ts,
                    producer: None,
                }],
            }),
        }
    }

    fn target(policy: RetentionPolicy, entries: &[LocatedEntry]) -> u64 {
        let total = entries.last().map_or(0, |e| e.cumulative_bytes);
        let mut scan = TrimScan::new(policy, NOW_MS, total);
        for e in entries {
            if !scan.visit(e) {
                break;
            }
        }
        scan.target()
    }

    fn log() -> Vec<LocatedEntry> {
        // Offsets [0,10) [10,20) [20,30) [30,40), 100 bytes each, 40 s apart.
        (1..=4)
            .map(|i| entry(i * 10, 10, i * 100, (NOW_MS - 200_000 + i * 40_000) as i64))
            .collect()
    }

    fn ms(retention_ms: u64) -> RetentionPolicy {
        RetentionPolicy {
            retention_ms: Some(retention_ms),
            retention_bytes: None,
        }
    }

    fn bytes(retention_bytes: u64) -> RetentionPolicy {
        RetentionPolicy {
            retention_ms: None,
            retention_bytes: Some(retention_bytes),
        }
    }

    #[test]
    fn expired_leading_entries_are_trimmed_up_to_the_first_live_one() {
        // Ages: 160 s, 120 s, 80 s, 40 s.
        assert_eq!(target(ms(100_000), &log()), 20);
        assert_eq!(target(ms(200_000), &log()), 0);
        assert_eq!(target(ms(10_000), &log()), 40);
    }

    #[test]
    fn an_expired_entry_after_a_live_one_is_kept() {
        let mut entries = log();
        entries[1] = entry(20, 10, 200, NOW_MS as i64);
        assert_eq!(target(ms(100_000), &entries), 10);
    }

    #[test]
    fn byte_retention_keeps_at_least_the_limit() {
        assert_eq!(target(bytes(250), &log()), 10);
        assert_eq!(target(bytes(200), &log()), 20);
        assert_eq!(target(bytes(400), &log()), 0);
        assert_eq!(target(bytes(0), &log()), 40);
    }

    #[test]
    fn the_policy_reaching_further_wins() {
        let both = RetentionPolicy {
            retention_ms: Some(130_000),
            retention_bytes: Some(50),
        };
        assert_eq!(target(both, &log()), 30);
        let both = RetentionPolicy {
            retention_ms: Some(10_000),
            retention_bytes: Some(150),
        };
        assert_eq!(target(both, &log()), 40);
    }

    #[test]
    fn entries_without_timestamps_age_by_their_append_time() {
        let entries = vec![entry(5, 5, 10, -1)];
        assert_eq!(target(ms(NOW_MS - 8), &entries), 5);
        assert_eq!(target(ms(NOW_MS), &entries), 0);
    }

    #[test]
    fn no_limits_trim_nothing() {
        assert_eq!(target(RetentionPolicy::default(), &log()), 0);
    }
}
