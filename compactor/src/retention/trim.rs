//! Where retention moves a partition's log start: Kafka's `deleteOldSegments` over the
//! emulated segments. Leading segments go while each is wholly expired (`retention.ms`, by its
//! largest timestamp) or while removing it still leaves at least `retention.bytes`; whichever
//! rule reaches further wins. A segment that is not deletable stops its rule, so nothing after
//! it goes. The active segment goes too once it is wholly expired (Kafka rolls a new, empty
//! one first), but it never outlives a size rule only by being active: Kafka's size rule
//! deletes it as well once the log without it is still at least `retention.bytes`.

use super::segments::{BatchAt, Segment, SegmentRules, Segmenter};

/// How much of a partition's log a topic keeps (`None` is no limit), and its segment bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetentionPolicy {
    pub retention_ms: Option<u64>,
    pub retention_bytes: Option<u64>,
    pub segments: SegmentRules,
    /// Key compaction rewrites this log: its size is what its entries hold now, not what the
    /// index keys' cumulative bytes (as appended) say.
    pub compacted: bool,
}

impl RetentionPolicy {
    pub fn is_unlimited(&self) -> bool {
        self.retention_ms.is_none() && self.retention_bytes.is_none()
    }
}

/// Finds the new log start from a partition's batches, visited in offset order from the
/// first index entry that reaches past the current log start.
#[derive(Debug)]
pub struct TrimScan {
    policy: RetentionPolicy,
    now_ms: u64,
    segmenter: Segmenter,
    /// Whether every segment so far was deletable by each rule.
    by_time: bool,
    by_bytes: bool,
    /// Bytes the size rule may still remove: the log's size above `retention.bytes`, less the
    /// segments it already removed.
    excess_bytes: u64,
    target: u64,
}

impl TrimScan {
    /// `log_bytes` is the size of every segment the scan will visit (Kafka's `log.size`).
    pub fn new(policy: RetentionPolicy, now_ms: u64, log_bytes: u64) -> TrimScan {
        let excess_bytes = policy
            .retention_bytes
            .map_or(0, |max| log_bytes.saturating_sub(max));
        TrimScan {
            policy,
            now_ms,
            segmenter: Segmenter::new(policy.segments),
            by_time: policy.retention_ms.is_some(),
            by_bytes: policy.retention_bytes.is_some() && excess_bytes > 0,
            excess_bytes,
            target: 0,
        }
    }

    /// Takes the next batch into account; false once no later batch can move the target.
    pub fn visit(&mut self, batch: &BatchAt) -> bool {
        if let Some(rolled) = self.segmenter.push(batch) {
            self.judge(&rolled);
        }
        // The segment being filled already fails a rule: nothing from it on goes by that rule.
        if let Some(active) = self.segmenter.active() {
            self.by_time &= self.expired(active);
            self.by_bytes &= active.bytes <= self.excess_bytes;
        }
        self.by_time || self.by_bytes
    }

    /// The log start retention allows, once `visit` said no later batch can move it.
    pub fn target(&self) -> u64 {
        self.target
    }

    /// The log start retention allows, once every batch was visited: the active segment may
    /// go as well.
    pub fn finish(mut self) -> u64 {
        if let Some(active) = self.segmenter.active().copied() {
            self.judge(&active);
        }
        self.target
    }

    fn judge(&mut self, segment: &Segment) {
        self.by_time &= self.expired(segment);
        if self.by_bytes {
            match self.excess_bytes.checked_sub(segment.bytes) {
                Some(left) => self.excess_bytes = left,
                None => self.by_bytes = false,
            }
        }
        if self.by_time || self.by_bytes {
            self.target = self.target.max(segment.end_offset);
        }
    }

    fn expired(&self, segment: &Segment) -> bool {
        self.policy
            .retention_ms
            .is_some_and(|max| self.now_ms.saturating_sub(segment.newest_ms()) > max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW_MS: u64 = 1_000_000;
    const NO_ROLL: SegmentRules = SegmentRules {
        segment_bytes: u64::MAX,
        segment_ms: u64::MAX,
        segment_jitter_ms: 0,
    };

    /// Four batches [0,10) [10,20) [20,30) [30,40), 100 bytes each, 40 s apart (ages 160 s,
    /// 120 s, 80 s, 40 s).
    fn log() -> Vec<BatchAt> {
        (0..4)
            .map(|i| BatchAt {
                base_offset: i * 10,
                records: 10,
                bytes: 100,
                max_timestamp: i64::try_from(NOW_MS - 160_000 + i * 40_000).unwrap(),
                append_ms: NOW_MS,
            })
            .collect()
    }

    fn target(policy: RetentionPolicy, batches: &[BatchAt]) -> u64 {
        let log_bytes = batches.iter().map(|b| b.bytes).sum();
        let mut scan = TrimScan::new(policy, NOW_MS, log_bytes);
        for b in batches {
            if !scan.visit(b) {
                return scan.target();
            }
        }
        scan.finish()
    }

    /// One batch per segment unless `segments` says otherwise.
    fn policy(ms: Option<u64>, bytes: Option<u64>, segments: SegmentRules) -> RetentionPolicy {
        RetentionPolicy {
            retention_ms: ms,
            retention_bytes: bytes,
            segments,
            compacted: false,
        }
    }

    fn per_batch() -> SegmentRules {
        SegmentRules {
            segment_bytes: 100,
            ..NO_ROLL
        }
    }

    #[test]
    fn expired_leading_segments_go_up_to_the_first_live_one() {
        assert_eq!(target(policy(Some(100_000), None, per_batch()), &log()), 20);
        assert_eq!(target(policy(Some(200_000), None, per_batch()), &log()), 0);
        assert_eq!(target(policy(Some(10_000), None, per_batch()), &log()), 40);
    }

    #[test]
    fn a_segment_with_one_live_batch_is_kept_whole() {
        let two_per_segment = SegmentRules {
            segment_bytes: 200,
            ..NO_ROLL
        };
        // [0,20) is 120 s old at its newest, [20,40) 40 s.
        assert_eq!(
            target(policy(Some(100_000), None, two_per_segment), &log()),
            20
        );
        assert_eq!(
            target(policy(Some(130_000), None, two_per_segment), &log()),
            0
        );
    }

    #[test]
    fn an_active_segment_with_fresh_data_protects_older_data_in_it() {
        // Everything in one segment: nothing goes until all of it is expired.
        assert_eq!(target(policy(Some(100_000), None, NO_ROLL), &log()), 0);
        assert_eq!(target(policy(Some(10_000), None, NO_ROLL), &log()), 40);
    }

    #[test]
    fn an_expired_segment_after_a_live_one_is_kept() {
        let mut batches = log();
        batches[1].max_timestamp = i64::try_from(NOW_MS).unwrap();
        assert_eq!(
            target(policy(Some(100_000), None, per_batch()), &batches),
            10
        );
    }

    #[test]
    fn byte_retention_keeps_at_least_the_limit_in_whole_segments() {
        assert_eq!(target(policy(None, Some(250), per_batch()), &log()), 10);
        assert_eq!(target(policy(None, Some(200), per_batch()), &log()), 20);
        assert_eq!(target(policy(None, Some(400), per_batch()), &log()), 0);
        assert_eq!(target(policy(None, Some(0), per_batch()), &log()), 40);
        // One segment of 400 bytes: it goes only when nothing at all is to be kept.
        assert_eq!(target(policy(None, Some(100), NO_ROLL), &log()), 0);
        assert_eq!(target(policy(None, Some(0), NO_ROLL), &log()), 40);
    }

    #[test]
    fn the_rule_reaching_further_wins() {
        let both = policy(Some(130_000), Some(50), per_batch());
        assert_eq!(target(both, &log()), 30);
        let both = policy(Some(10_000), Some(150), per_batch());
        assert_eq!(target(both, &log()), 40);
    }

    #[test]
    fn segments_without_timestamps_age_by_their_append_time() {
        let batch = BatchAt {
            base_offset: 0,
            records: 5,
            bytes: 10,
            max_timestamp: -1,
            append_ms: 8,
        };
        assert_eq!(target(policy(Some(NOW_MS - 9), None, NO_ROLL), &[batch]), 5);
        assert_eq!(target(policy(Some(NOW_MS), None, NO_ROLL), &[batch]), 0);
    }

    #[test]
    fn no_limits_trim_nothing() {
        assert_eq!(target(policy(None, None, per_batch()), &log()), 0);
    }
}
