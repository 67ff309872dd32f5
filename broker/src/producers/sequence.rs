//! Producer sequence numbers: 31-bit counters that wrap from `i32::MAX` to 0, as in Kafka.

/// The sequence of the last record of a batch starting at `base` with `records` records.
pub fn last_sequence(base: i32, records: i32) -> i32 {
    let increment = records.saturating_sub(1).max(0);
    if base > i32::MAX - increment {
        increment - (i32::MAX - base) - 1
    } else {
        base + increment
    }
}

/// Whether `next` directly follows `last`.
pub fn follows(last: i32, next: i32) -> bool {
    if last == i32::MAX {
        next == 0
    } else {
        next == last + 1
    }
}

/// How many records a batch from `first` to `last` (inclusive, maybe wrapped) holds.
/// Sequences are in 0..=i32::MAX, so the count is positive.
pub fn records_between(first: i32, last: i32) -> u64 {
    let count = if last >= first {
        i64::from(last) - i64::from(first) + 1
    } else {
        i64::from(i32::MAX) - i64::from(first) + 1 + i64::from(last) + 1
    };
    u64::try_from(count).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_sequence_wraps_past_the_maximum() {
        assert_eq!(last_sequence(0, 1), 0);
        assert_eq!(last_sequence(5, 10), 14);
        assert_eq!(last_sequence(i32::MAX, 1), i32::MAX);
        assert_eq!(last_sequence(i32::MAX, 2), 0);
        assert_eq!(last_sequence(i32::MAX - 1, 5), 2);
    }

    #[test]
    fn records_between_inverts_last_sequence() {
        for (base, records) in [(0, 1), (5, 10), (i32::MAX, 2), (i32::MAX - 1, 5)] {
            let last = last_sequence(base, records);
            assert_eq!(records_between(base, last), u64::try_from(records).unwrap());
        }
    }

    #[test]
    fn zero_follows_the_maximum() {
        assert!(follows(4, 5));
        assert!(follows(i32::MAX, 0));
        assert!(!follows(4, 6));
        assert!(!follows(i32::MAX, 1));
    }
}
