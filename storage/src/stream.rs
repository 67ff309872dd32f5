//! Stream ids and the MetaStore keys derived from them.

use crate::error::StorageError;

const STREAM_ID_BYTES_MAX: usize = 200;

/// Checks that a stream id can be embedded in MetaStore keys: non-empty, bounded, and free of
/// `/` (Oxia's key-order separator) and NUL.
pub fn validate_stream_id(stream: &str) -> Result<(), StorageError> {
    if stream.is_empty() || stream.len() > STREAM_ID_BYTES_MAX {
        return Err(StorageError::InvalidArgument(format!(
            "stream id must be 1..={STREAM_ID_BYTES_MAX} bytes"
        )));
    }
    if stream.contains('/') || stream.contains('\0') {
        return Err(StorageError::InvalidArgument(
            "stream id must not contain '/' or NUL".into(),
        ));
    }
    Ok(())
}

/// The prefix of a stream's index keys; the MetaStore appends `-%020d-%020d`.
pub fn index_prefix(stream: &str) -> String {
    format!("s/{stream}/i")
}

/// The smallest index key whose end offset is `>= end_offset`.
pub fn index_key_floor(stream: &str, end_offset: u64) -> String {
    format!("s/{stream}/i-{end_offset:020}")
}

/// Exclusive upper bound of a stream's index keys (`.` sorts right after `-`).
pub fn index_range_end(stream: &str) -> String {
    format!("s/{stream}/i.")
}

/// Inclusive lower bound of a stream's index keys.
pub fn index_range_start(stream: &str) -> String {
    format!("s/{stream}/i-")
}

/// Key holding the stream's trim point (log start offset).
pub fn trim_key(stream: &str) -> String {
    format!("s/{stream}/trim")
}

/// Key holding a snapshot of the stream's idempotent-producer state. `producers` sorts after
/// `i.` at the same depth, so it never falls inside the index range `[i-, i.)`.
pub fn producers_key(stream: &str) -> String {
    format!("s/{stream}/producers")
}

/// Parses `<prefix>-<end:%020d>-<cumulative_bytes:%020d>` back into its two numbers.
pub fn parse_index_key(stream: &str, key: &str) -> Option<(u64, u64)> {
    parse_index_numbers(key.strip_prefix(&index_range_start(stream))?)
}

/// What one of a stream's MetaStore keys holds, as far as its bounds are concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKey {
    /// An index entry ending (exclusive) at this offset.
    Index { end_offset: u64 },
    /// The trim point.
    Trim,
    /// Anything else under the stream (producer snapshot, compacted offset).
    Other,
}

/// The stream a MetaStore key belongs to and what it holds; `None` outside `s/<stream>/`.
pub fn parse_stream_key(key: &str) -> Option<(&str, StreamKey)> {
    let (stream, leaf) = key.strip_prefix("s/")?.split_once('/')?;
    let kind = if leaf == "trim" {
        StreamKey::Trim
    } else if let Some((end_offset, _)) = leaf.strip_prefix("i-").and_then(parse_index_numbers) {
        StreamKey::Index { end_offset }
    } else {
        StreamKey::Other
    };
    Some((stream, kind))
}

fn parse_index_numbers(rest: &str) -> Option<(u64, u64)> {
    let (end, cumulative) = rest.split_once('-')?;
    if end.len() != 20 || cumulative.len() != 20 {
        return None;
    }
    Some((end.parse().ok()?, cumulative.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use metastore::compare_keys;
    use std::cmp::Ordering;

    #[test]
    fn index_keys_sort_by_end_offset_inside_their_stream_range() {
        let a = format!("{}-{:020}-{:020}", index_prefix("t-0"), 5, 100);
        let b = format!("{}-{:020}-{:020}", index_prefix("t-0"), 12, 50);
        assert_eq!(compare_keys(&a, &b), Ordering::Less);
        assert_eq!(compare_keys(&index_range_start("t-0"), &a), Ordering::Less);
        assert_eq!(compare_keys(&b, &index_range_end("t-0")), Ordering::Less);
        assert_eq!(compare_keys(&index_key_floor("t-0", 6), &b), Ordering::Less);
        assert_eq!(compare_keys(&a, &index_key_floor("t-0", 6)), Ordering::Less);
        assert_eq!(
            compare_keys(&trim_key("t-0"), &index_range_end("t-0")),
            Ordering::Greater
        );
        assert_eq!(parse_index_key("t-0", &b), Some((12, 50)));
        assert_eq!(parse_index_key("t-1", &b), None);
    }

    #[test]
    fn the_producer_snapshot_key_lies_outside_the_index_range() {
        let key = producers_key("t-0");
        assert_eq!(
            compare_keys(&key, &index_range_end("t-0")),
            Ordering::Greater
        );
        assert_eq!(
            compare_keys(&index_range_start("t-0"), &key),
            Ordering::Less
        );
        // Nor inside a neighbouring stream's index range.
        for other in ["t-1", "t-00", "t"] {
            let inside = compare_keys(&index_range_start(other), &key) != Ordering::Greater
                && compare_keys(&key, &index_range_end(other)) == Ordering::Less;
            assert!(!inside, "{other}");
        }
    }

    #[test]
    fn stream_keys_name_their_stream_and_what_they_hold() {
        let index = format!("{}-{:020}-{:020}", index_prefix("t-0"), 12, 50);
        assert_eq!(
            parse_stream_key(&index),
            Some(("t-0", StreamKey::Index { end_offset: 12 }))
        );
        assert_eq!(
            parse_stream_key(&trim_key("t-0")),
            Some(("t-0", StreamKey::Trim))
        );
        assert_eq!(
            parse_stream_key(&producers_key("t-0")),
            Some(("t-0", StreamKey::Other))
        );
        assert_eq!(parse_stream_key("topics/t"), None);
        assert_eq!(parse_stream_key("s/no-leaf"), None);
    }

    #[test]
    fn stream_ids_with_separators_are_refused() {
        assert!(validate_stream_id("a/b").is_err());
        assert!(validate_stream_id("").is_err());
        assert!(validate_stream_id("0123abcd-7").is_ok());
    }
}
