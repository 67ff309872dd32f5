//! Kafka's log segments, emulated over a partition's batches. Kafka deletes whole segments and
//! rolls a new one only when an append arrives and the active segment is full by
//! `segment.bytes`, or its first batch is `segment.ms` older (by record timestamps) than the
//! batch being appended; so retention never splits a segment, and a partition whose data all
//! sits in its active segment keeps it until that segment rolls or is wholly expired. The
//! boundaries follow from the batches alone (sizes, timestamps, append times), so every pass
//! finds the same ones, however the index entries were merged by compaction since.
//!
//! Kafka's rule (`LogSegment.shouldRoll`), per append: roll when
//! `size > segment.bytes - append_size`, or when the segment is not empty and
//! `max_timestamp(append) - max_timestamp(first batch) > segment.ms - segment.jitter.ms`
//! (with no timestamp on the first batch: `now - segment creation`).

/// The topic settings that bound a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentRules {
    pub segment_bytes: u64,
    pub segment_ms: u64,
    pub segment_jitter_ms: u64,
}

impl SegmentRules {
    /// How long a segment may span before the next append rolls it.
    fn roll_after_ms(&self) -> i64 {
        let span_ms = self.segment_ms.saturating_sub(self.segment_jitter_ms);
        i64::try_from(span_ms).unwrap_or(i64::MAX)
    }
}

/// One batch as the segments see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchAt {
    pub base_offset: u64,
    pub records: u64,
    pub bytes: u64,
    /// Largest record timestamp, -1 if the batch has none.
    pub max_timestamp: i64,
    /// When the index entry holding the batch was written.
    pub append_ms: u64,
}

/// A run of batches Kafka would keep in one segment file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub base_offset: u64,
    /// Exclusive.
    pub end_offset: u64,
    pub bytes: u64,
    /// Largest record timestamp in the segment, -1 if none has one.
    pub largest_timestamp: i64,
    /// Append time of its last batch: Kafka's fallback, the file's modification time.
    pub last_append_ms: u64,
    /// Max timestamp of its first batch (Kafka's `rollingBasedTimestamp`), -1 if none.
    first_timestamp: i64,
    /// Append time of its first batch (Kafka's segment creation time).
    created_ms: u64,
}

impl Segment {
    fn starting_with(batch: &BatchAt) -> Segment {
        Segment {
            base_offset: batch.base_offset,
            end_offset: batch.base_offset + batch.records,
            bytes: batch.bytes,
            largest_timestamp: batch.max_timestamp,
            last_append_ms: batch.append_ms,
            first_timestamp: batch.max_timestamp,
            created_ms: batch.append_ms,
        }
    }

    fn add(&mut self, batch: &BatchAt) {
        self.end_offset = batch.base_offset + batch.records;
        self.bytes += batch.bytes;
        self.largest_timestamp = self.largest_timestamp.max(batch.max_timestamp);
        self.last_append_ms = batch.append_ms;
    }

    fn rolls_before(&self, batch: &BatchAt, rules: &SegmentRules) -> bool {
        let full = self.bytes > rules.segment_bytes.saturating_sub(batch.bytes);
        let waited_ms = if self.first_timestamp >= 0 {
            batch.max_timestamp.saturating_sub(self.first_timestamp)
        } else {
            let waited = batch.append_ms.saturating_sub(self.created_ms);
            i64::try_from(waited).unwrap_or(i64::MAX)
        };
        full || (self.bytes > 0 && waited_ms > rules.roll_after_ms())
    }

    /// The newest time of its records: the largest timestamp, or the append time without one.
    pub fn newest_ms(&self) -> u64 {
        u64::try_from(self.largest_timestamp).unwrap_or(self.last_append_ms)
    }
}

/// Cuts a partition's batches, visited in offset order, into segments.
#[derive(Debug)]
pub struct Segmenter {
    rules: SegmentRules,
    active: Option<Segment>,
}

impl Segmenter {
    pub fn new(rules: SegmentRules) -> Segmenter {
        Segmenter {
            rules,
            active: None,
        }
    }

    /// Adds the next batch; returns the segment it rolled, if it started a new one.
    pub fn push(&mut self, batch: &BatchAt) -> Option<Segment> {
        match &mut self.active {
            Some(active) if !active.rolls_before(batch, &self.rules) => {
                active.add(batch);
                None
            }
            slot => slot.replace(Segment::starting_with(batch)),
        }
    }

    /// The segment batches are being added to (Kafka's active segment once the log ends).
    pub fn active(&self) -> Option<&Segment> {
        self.active.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_MS: u64 = 86_400_000;

    fn rules(segment_bytes: u64, segment_ms: u64) -> SegmentRules {
        SegmentRules {
            segment_bytes,
            segment_ms,
            segment_jitter_ms: 0,
        }
    }

    /// Batches of 10 records and 100 bytes, `ts[i]` their timestamps, appended at time 5.
    fn cut(rules: SegmentRules, ts: &[i64]) -> Vec<(u64, u64)> {
        let mut segmenter = Segmenter::new(rules);
        let mut out = Vec::new();
        for (i, &t) in ts.iter().enumerate() {
            let batch = BatchAt {
                base_offset: i as u64 * 10,
                records: 10,
                bytes: 100,
                max_timestamp: t,
                append_ms: 5,
            };
            out.extend(
                segmenter
                    .push(&batch)
                    .map(|s| (s.base_offset, s.end_offset)),
            );
        }
        out.extend(segmenter.active().map(|s| (s.base_offset, s.end_offset)));
        out
    }

    #[test]
    fn a_segment_rolls_when_the_next_batch_would_overflow_segment_bytes() {
        let ts = [1, 2, 3, 4, 5];
        assert_eq!(cut(rules(250, DAY_MS), &ts), [(0, 20), (20, 40), (40, 50)]);
        assert_eq!(cut(rules(300, DAY_MS), &ts), [(0, 30), (30, 50)]);
        // A batch bigger than a segment gets one of its own.
        assert_eq!(cut(rules(50, DAY_MS), &ts[..2]), [(0, 10), (10, 20)]);
    }

    #[test]
    fn a_segment_rolls_when_a_batch_is_segment_ms_newer_than_its_first() {
        let ts = [1000, 1500, 2000, 2001, 2500, 3002];
        assert_eq!(
            cut(rules(u64::MAX, 1000), &ts),
            [(0, 30), (30, 50), (50, 60)]
        );
    }

    #[test]
    fn old_timestamps_appended_today_stay_in_one_segment() {
        // Backfilled records, all from the same old day: no batch is newer than the first.
        let old = 1_600_000_000_000;
        assert_eq!(cut(rules(u64::MAX, DAY_MS), &[old; 5]), [(0, 50)]);
        // Fresh records after them are a week newer: Kafka rolls there.
        let fresh = old + 8 * i64::try_from(DAY_MS).unwrap();
        assert_eq!(
            cut(rules(u64::MAX, 7 * DAY_MS), &[old, old, fresh, fresh]),
            [(0, 20), (20, 40)]
        );
    }

    #[test]
    fn without_timestamps_the_append_time_rolls_segments() {
        let mut segmenter = Segmenter::new(rules(u64::MAX, 1000));
        let at = |base_offset, append_ms| BatchAt {
            base_offset,
            records: 1,
            bytes: 1,
            max_timestamp: -1,
            append_ms,
        };
        assert_eq!(segmenter.push(&at(0, 100)), None);
        assert_eq!(segmenter.push(&at(1, 1100)), None);
        let rolled = segmenter.push(&at(2, 1101)).unwrap();
        assert_eq!((rolled.base_offset, rolled.end_offset), (0, 2));
        assert_eq!(rolled.newest_ms(), 1100);
    }

    #[test]
    fn jitter_shortens_the_time_a_segment_may_span() {
        let jittered = SegmentRules {
            segment_jitter_ms: 600,
            ..rules(u64::MAX, 1000)
        };
        assert_eq!(cut(jittered, &[0, 400, 401]), [(0, 20), (20, 30)]);
    }
}
