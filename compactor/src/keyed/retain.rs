//! What key compaction keeps of one batch, by Kafka's log cleaner rules
//! (`LogCleaner.shouldRetainRecord`, `MemoryRecords.filterTo`):
//!
//! - batches at or above the clean end (not mapped yet), control and transactional batches
//!   pass untouched, and neither of the last two is mapped ([`maps_keys`]): a transaction's
//!   record may be aborted, or not yet decided, so it never makes an older record of its key
//!   go (Kafka maps committed ones; keeping more is the safe side), and a marker's key is not a
//!   record key;
//! - below it, a record goes when a later record of its key is mapped, when it has no key
//!   (Kafka's cleaner drops those too), or when it is a tombstone whose batch's delete horizon
//!   has passed;
//! - a batch that keeps tombstones and has no delete horizon yet gets one, `now +
//!   delete.retention.ms`, stamped as Kafka does (KIP-534): attribute bit 6 and the base
//!   timestamp, the records' timestamp deltas rebased so that their timestamps do not change;
//! - the batch keeps its base offset and last offset delta (offsets never change); a batch
//!   left empty is dropped.

use storage::record_batch::header::DELETE_HORIZON_FLAG;
use storage::record_batch::DecodedBatch;

use super::key_map::KeyMap;

pub struct RetainRules<'a> {
    pub map: &'a KeyMap,
    /// The first offset the map does not cover.
    pub clean_end: u64,
    pub now_ms: i64,
    pub delete_retention_ms: u64,
}

/// One batch after the rules.
#[derive(Debug)]
pub struct Retained {
    pub batch: Option<DecodedBatch>,
    /// Records removed.
    pub removed: u64,
    /// The delete horizon of tombstones kept below the clean end, if any.
    pub tombstones_due_ms: Option<i64>,
}

/// Whether the records of `batch` enter the key map: not those of control batches (markers)
/// or transactional ones (their outcome is not in the batch).
pub fn maps_keys(batch: &DecodedBatch) -> bool {
    !batch.header.is_control() && !batch.header.is_transactional()
}

pub fn retain(base_offset: u64, mut batch: DecodedBatch, rules: &RetainRules<'_>) -> Retained {
    let h = batch.header;
    if base_offset >= rules.clean_end || h.is_control() || h.is_transactional() {
        return Retained {
            batch: Some(batch),
            removed: 0,
            tombstones_due_ms: None,
        };
    }
    let horizon = h.delete_horizon_ms();
    let before = batch.records.len();
    batch.records.retain(|r| {
        let offset = base_offset + u64::try_from(r.offset_delta).unwrap_or(0);
        let Some(key) = r.key.as_deref() else {
            return false;
        };
        let newest = rules.map.latest(key).is_none_or(|latest| latest <= offset);
        let expired_tombstone =
            r.value.is_none() && horizon.is_some_and(|horizon| rules.now_ms >= horizon);
        newest && !expired_tombstone
    });
    let removed = (before - batch.records.len()) as u64;
    if batch.records.is_empty() {
        return Retained {
            batch: None,
            removed,
            tombstones_due_ms: None,
        };
    }
    let has_tombstones = batch.records.iter().any(|r| r.value.is_none());
    let horizon = match horizon {
        Some(horizon) => Some(horizon),
        None if has_tombstones => {
            let retention = i64::try_from(rules.delete_retention_ms).unwrap_or(i64::MAX);
            let horizon = rules.now_ms.saturating_add(retention);
            stamp_horizon(&mut batch, horizon);
            Some(horizon)
        }
        None => None,
    };
    if !h.is_log_append_time() {
        let header = batch.header;
        let newest = batch
            .records
            .iter()
            .map(|r| header.record_timestamp(r.timestamp_delta))
            .max();
        batch.header.max_timestamp = newest.unwrap_or(header.max_timestamp);
    }
    Retained {
        batch: Some(batch),
        removed,
        tombstones_due_ms: horizon.filter(|_| has_tombstones),
    }
}

/// Kafka's delete horizon: the base timestamp becomes the horizon, deltas are rebased.
fn stamp_horizon(batch: &mut DecodedBatch, horizon_ms: i64) {
    let old = batch.header;
    for r in &mut batch.records {
        let timestamp = old.base_timestamp.wrapping_add(r.timestamp_delta);
        r.timestamp_delta = timestamp.wrapping_sub(horizon_ms);
    }
    batch.header.base_timestamp = horizon_ms;
    batch.header.attributes |= DELETE_HORIZON_FLAG;
}

#[cfg(test)]
// Test code: indexes of small test batches converted with `as`.
#[allow(clippy::cast_possible_wrap)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use storage::record_batch::{BatchHeader, RecordRow};

    fn batch(records: &[(Option<&str>, Option<&str>)]) -> DecodedBatch {
        DecodedBatch {
            header: BatchHeader {
                base_offset: 0,
                partition_leader_epoch: -1,
                attributes: 0,
                last_offset_delta: i32::try_from(records.len()).unwrap() - 1,
                base_timestamp: 1_000,
                max_timestamp: 1_000 + records.len() as i64 - 1,
                producer_id: -1,
                producer_epoch: -1,
                base_sequence: -1,
            },
            records: records
                .iter()
                .enumerate()
                .map(|(i, (k, v))| RecordRow {
                    attributes: 0,
                    timestamp_delta: i as i64,
                    offset_delta: i32::try_from(i).unwrap(),
                    key: k.map(|k| Bytes::from(k.to_string())),
                    value: v.map(|v| Bytes::from(v.to_string())),
                    headers: vec![],
                })
                .collect(),
        }
    }

    fn rules(map: &KeyMap, now_ms: i64) -> RetainRules<'_> {
        RetainRules {
            map,
            clean_end: 100,
            now_ms,
            delete_retention_ms: 50,
        }
    }

    #[test]
    fn superseded_and_keyless_records_go_and_offsets_stay() {
        let mut map = KeyMap::with_budget(1 << 20);
        map.put(b"a", 13);
        map.put(b"b", 11);
        let got = retain(
            10,
            batch(&[
                (Some("a"), Some("1")),
                (Some("b"), Some("2")),
                (None, Some("3")),
                (Some("a"), Some("4")),
            ]),
            &rules(&map, 0),
        );
        let kept = got.batch.unwrap();
        let deltas: Vec<i32> = kept.records.iter().map(|r| r.offset_delta).collect();
        assert_eq!(
            deltas,
            [1, 3],
            "a@10 is superseded by a@13, the keyless record goes"
        );
        assert_eq!(
            kept.header.last_offset_delta, 3,
            "the batch keeps its offset span"
        );
        assert_eq!(kept.header.max_timestamp, 1_003);
        assert_eq!(got.removed, 2);
    }

    #[test]
    fn batches_above_the_clean_end_pass_untouched() {
        let mut map = KeyMap::with_budget(1 << 20);
        map.put(b"a", 500);
        let got = retain(
            100,
            batch(&[(Some("a"), Some("1")), (None, Some("x"))]),
            &rules(&map, 0),
        );
        assert_eq!(got.batch.unwrap().records.len(), 2);
    }

    #[test]
    fn tombstones_get_a_delete_horizon_then_go_after_it() {
        let map = KeyMap::with_budget(1 << 20);
        let first = retain(
            0,
            batch(&[(Some("a"), None), (Some("b"), Some("v"))]),
            &rules(&map, 2_000),
        );
        let kept = first.batch.unwrap();
        assert_eq!(kept.header.delete_horizon_ms(), Some(2_050));
        assert_eq!(first.tombstones_due_ms, Some(2_050));
        let times: Vec<i64> = kept
            .records
            .iter()
            .map(|r| kept.header.record_timestamp(r.timestamp_delta))
            .collect();
        assert_eq!(times, [1_000, 1_001], "record timestamps survive the stamp");
        let early = retain(0, kept.clone(), &rules(&map, 2_049));
        assert_eq!(early.batch.unwrap().records.len(), 2);
        let late = retain(0, kept, &rules(&map, 2_050));
        let left = late.batch.unwrap();
        assert_eq!(left.records.len(), 1);
        assert_eq!(left.records[0].key.as_deref(), Some(&b"b"[..]));
        assert_eq!(late.tombstones_due_ms, None);
    }

    #[test]
    fn a_batch_left_empty_is_dropped() {
        let mut map = KeyMap::with_budget(1 << 20);
        map.put(b"a", 50);
        let got = retain(0, batch(&[(Some("a"), Some("1"))]), &rules(&map, 0));
        assert!(got.batch.is_none());
        assert_eq!(got.removed, 1);
    }

    #[test]
    fn transactional_and_control_batches_never_shadow_older_records() {
        let mut plain = batch(&[(Some("k"), Some("v"))]);
        assert!(maps_keys(&plain));
        plain.header.attributes = 0x10;
        assert!(!maps_keys(&plain), "transactional");
        plain.header.attributes = 0x30;
        assert!(!maps_keys(&plain), "a marker");
    }
}
