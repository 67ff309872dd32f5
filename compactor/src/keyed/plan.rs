//! Which part of a compacted topic's partition key compaction may rewrite, and whether it is
//! due, after Kafka's `LogCleanerManager`:
//!
//! - the cleanable end is the lowest of: the active segment's base (the emulated segments of
//!   retention, by `segment.bytes`/`segment.ms`: Kafka never cleans its active segment), the
//!   base of the first segment holding a record newer than `min.compaction.lag.ms`, and the
//!   first offset not yet rewritten to Parquet (the WAL head is never key-compacted);
//! - the rewritten part is the leading run of compacted entries that start below it (batches
//!   from it on pass untouched);
//! - it is due when its dirty bytes (past the last clean end) are at least
//!   `min.cleanable.dirty.ratio` of it, when its oldest dirty record is older than
//!   `max.compaction.lag.ms`, or when tombstones kept by an earlier run have reached their
//!   delete horizon (Kafka removes them only at its next cleaning, whenever that comes).

use serde::{Deserialize, Serialize};
use storage::index::LocatedEntry;
use storage::topics::CompactionConfig;
use storage::FileType;

use crate::retention::{batches_of, SegmentRules, Segmenter};

/// What earlier runs left, kept per stream in the index store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanState {
    /// Offsets below it were compacted with every later key known up to it.
    pub cleaned: u64,
    /// The earliest delete horizon of the tombstones kept, if any.
    pub tombstones_due_ms: Option<u64>,
}

/// What a due rewrite covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    /// Leading entries to rewrite: the compacted ones starting below the cleanable end.
    pub entries: usize,
    /// The cleanable end: batches from it on pass untouched (it falls on a batch boundary).
    pub cleanable_end: u64,
}

/// The rewrite that is due, if one is.
pub fn due_entries(
    entries: &[LocatedEntry],
    compacted: u64,
    segments: SegmentRules,
    config: &CompactionConfig,
    state: &CleanState,
    now_ms: u64,
) -> Option<Due> {
    let end = cleanable_end(entries, segments, config.min_compaction_lag_ms, now_ms).min(compacted);
    let n = entries
        .iter()
        .take_while(|e| e.entry.file_type == FileType::Parquet && e.base_offset < end)
        .count();
    let cleanable = entries[..n]
        .iter()
        .flat_map(batches_of)
        .filter(|b| b.base_offset < end);
    let (mut total, mut dirty_bytes, mut oldest_dirty_ms) = (0u64, 0u64, None);
    for batch in cleanable {
        total += batch.bytes;
        if batch.base_offset + batch.records > state.cleaned {
            dirty_bytes += batch.bytes;
            oldest_dirty_ms
                .get_or_insert(u64::try_from(batch.max_timestamp).unwrap_or(batch.append_ms));
        }
    }
    let by_ratio = dirty_bytes > 0
        && u128::from(dirty_bytes) * 1_000_000
            >= u128::from(total) * u128::from(config.min_cleanable_dirty_ratio_ppm);
    let by_lag = oldest_dirty_ms
        .is_some_and(|t: u64| now_ms.saturating_sub(t) > config.max_compaction_lag_ms);
    let by_tombstones = n > 0 && state.tombstones_due_ms.is_some_and(|due| now_ms >= due);
    (n > 0 && (by_ratio || by_lag || by_tombstones)).then_some(Due {
        entries: n,
        cleanable_end: end,
    })
}

/// The active segment's base, or that of the first segment newer than the lag if lower.
fn cleanable_end(entries: &[LocatedEntry], rules: SegmentRules, lag_ms: u64, now_ms: u64) -> u64 {
    let newest_allowed_ms = now_ms.saturating_sub(lag_ms);
    let mut segmenter = Segmenter::new(rules);
    for batch in entries.iter().flat_map(batches_of) {
        if let Some(rolled) = segmenter.push(&batch) {
            if lag_ms > 0 && rolled.newest_ms() > newest_allowed_ms {
                return rolled.base_offset;
            }
        }
    }
    segmenter.active().map_or(0, |active| active.base_offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use storage::{BatchMeta, IndexEntry};

    const MINUTE_MS: u64 = 60_000;

    fn due(entries: usize, cleanable_end: u64) -> Option<Due> {
        Some(Due {
            entries,
            cleanable_end,
        })
    }

    /// An entry of `batches` batches of 10 records, 1000 bytes each, stamped `ts`.
    fn entry(base: u64, batches: u32, file_type: FileType, ts: i64) -> LocatedEntry {
        let meta = BatchMeta {
            len: 1000,
            records: 10,
            max_timestamp: ts,
            producer: None,
        };
        LocatedEntry {
            base_offset: base,
            end_offset: base + u64::from(batches) * 10,
            cumulative_bytes: 0,
            entry: Arc::new(IndexEntry {
                file_type,
                object_key: "k".into(),
                byte_offset: 0,
                byte_len: 1,
                crc32c: 0,
                min_timestamp: ts,
                max_timestamp: ts,
                write_time_ms: 0,
                batches: vec![meta; batches as usize],
            }),
        }
    }

    fn config(ratio_ppm: u32, min_lag_ms: u64) -> CompactionConfig {
        CompactionConfig {
            min_compaction_lag_ms: min_lag_ms,
            max_compaction_lag_ms: i64::MAX as u64,
            delete_retention_ms: 0,
            min_cleanable_dirty_ratio_ppm: ratio_ppm,
        }
    }

    /// Segments of 3000 bytes: three batches each.
    const RULES: SegmentRules = SegmentRules {
        segment_bytes: 3000,
        segment_ms: u64::MAX / 2,
        segment_jitter_ms: 0,
    };

    #[test]
    fn the_active_segment_and_the_wal_head_are_never_cleanable() {
        let entries = [
            entry(0, 3, FileType::Parquet, 1),
            entry(30, 3, FileType::Parquet, 1),
            entry(60, 2, FileType::Parquet, 1),
            entry(80, 2, FileType::Raw, 1),
        ];
        let state = CleanState::default();
        // Segments [0,30) [30,60) [60,90) [90,100): the active one starts at 90.
        assert_eq!(
            due_entries(&entries, 80, RULES, &config(500_000, 0), &state, 10),
            due(3, 80)
        );
        // The WAL head starts at 60: only what lies below it.
        assert_eq!(
            due_entries(&entries, 60, RULES, &config(500_000, 0), &state, 10),
            due(2, 60)
        );
        // Without a WAL head the third entry holds the active segment: rewritten up to it.
        let entries = [
            entry(0, 3, FileType::Parquet, 1),
            entry(30, 3, FileType::Parquet, 1),
            entry(60, 4, FileType::Parquet, 1),
        ];
        assert_eq!(
            due_entries(&entries, 100, RULES, &config(500_000, 0), &state, 10),
            due(3, 90)
        );
    }

    #[test]
    fn the_dirty_ratio_and_the_lags_decide() {
        let now = 100 * MINUTE_MS;
        let old = i64::try_from(now - 30 * MINUTE_MS).unwrap();
        let entries = [
            entry(0, 3, FileType::Parquet, old),
            entry(30, 3, FileType::Parquet, old),
            entry(60, 3, FileType::Parquet, i64::try_from(now).unwrap()),
            entry(90, 1, FileType::Raw, i64::try_from(now).unwrap()),
        ];
        let clean_to_30 = CleanState {
            cleaned: 30,
            tombstones_due_ms: None,
        };
        // Cleanable [0,90): two thirds of it are dirty.
        assert_eq!(
            due_entries(&entries, 90, RULES, &config(500_000, 0), &clean_to_30, now),
            due(3, 90)
        );
        assert_eq!(
            due_entries(&entries, 90, RULES, &config(900_000, 0), &clean_to_30, now),
            None
        );
        // min.compaction.lag.ms of 10 minutes keeps the segment from 60 on out.
        assert_eq!(
            due_entries(
                &entries,
                90,
                RULES,
                &config(0, 10 * MINUTE_MS),
                &CleanState::default(),
                now
            ),
            due(2, 60)
        );
        // max.compaction.lag.ms forces a run whatever the ratio.
        let mut forced = config(900_000, 0);
        forced.max_compaction_lag_ms = 10 * MINUTE_MS;
        assert_eq!(
            due_entries(&entries, 90, RULES, &forced, &clean_to_30, now),
            due(3, 90)
        );
        // Tombstones past their horizon make a clean part due again.
        let clean = CleanState {
            cleaned: 90,
            tombstones_due_ms: Some(now),
        };
        assert_eq!(
            due_entries(&entries, 90, RULES, &config(0, 0), &clean, now),
            due(3, 90)
        );
        assert_eq!(
            due_entries(&entries, 90, RULES, &config(0, 0), &clean, now - 1),
            None
        );
    }
}
