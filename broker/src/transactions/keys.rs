//! MetaStore keys of transactions. Every family is one flat level under its prefix (Oxia
//! orders keys by depth first), names percent-encoded so that `/` and `:` never appear inside
//! a segment:
//!
//! - `txn-state/<transactional id>`: the coordinator's record of one transactional id;
//! - `txn-open/<stream>:<producer id>`: a transaction open on one partition, written by the
//!   partition's writer before the transaction's first batch is appended, deleted once its
//!   marker is durable;
//! - `txn-aborted/<stream>:<marker offset>`: one aborted transaction of a partition (the
//!   aborted-transaction index read by read_committed fetches), trimmed with the log;
//! - `txn-offsets/<group>:<transactional id>`: offsets a transaction commits for a group,
//!   visible to the group only once the transaction commits.

use crate::key_escape::{escape, unescape};

const STATE: &str = "txn-state/";
const OPEN: &str = "txn-open/";
const ABORTED: &str = "txn-aborted/";
const OFFSETS: &str = "txn-offsets/";
/// Above every key character we write, so `prefix..prefix + END` selects a family's keys.
const END: char = '\u{7f}';
const RESERVED: &[char] = &['/', ':'];

pub fn state_key(transactional_id: &str) -> String {
    format!("{STATE}{}", escape(transactional_id, RESERVED))
}

pub fn state_range() -> (String, String) {
    (STATE.to_string(), format!("{STATE}{END}"))
}

pub fn transactional_id_of(key: &str) -> Option<String> {
    unescape(key.strip_prefix(STATE)?)
}

pub fn open_key(stream: &str, producer_id: i64) -> String {
    format!("{OPEN}{stream}:{producer_id:020}")
}

/// Every open transaction of one partition.
pub fn open_range(stream: &str) -> (String, String) {
    (format!("{OPEN}{stream}:"), format!("{OPEN}{stream}:{END}"))
}

/// Every open transaction of every partition.
pub fn all_open_range() -> (String, String) {
    (OPEN.to_string(), format!("{OPEN}{END}"))
}

pub fn aborted_key(stream: &str, marker_offset: u64) -> String {
    format!("{ABORTED}{stream}:{marker_offset:020}")
}

/// Aborted transactions of a partition whose marker is at or after `from`.
pub fn aborted_range_from(stream: &str, from: u64) -> (String, String) {
    (
        aborted_key(stream, from),
        format!("{ABORTED}{stream}:{END}"),
    )
}

/// The marker offset of an aborted-transaction key.
pub fn marker_offset_of(key: &str) -> Option<u64> {
    key.rsplit(':').next()?.parse().ok()
}

pub fn offsets_key(group_id: &str, transactional_id: &str) -> String {
    format!(
        "{OFFSETS}{}:{}",
        escape(group_id, RESERVED),
        escape(transactional_id, RESERVED)
    )
}

/// The transactional id of a `txn-offsets/` key.
pub fn offsets_transactional_id_of(key: &str) -> Option<String> {
    let rest = key.strip_prefix(OFFSETS)?;
    unescape(rest.split_once(':')?.1)
}

/// Every transaction's pending offsets for one group.
pub fn offsets_range(group_id: &str) -> (String, String) {
    let group = escape(group_id, RESERVED);
    (
        format!("{OFFSETS}{group}:"),
        format!("{OFFSETS}{group}:{END}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_separators_stay_inside_their_segment() {
        let key = state_key("a/b:c");
        assert_eq!(key, "txn-state/a%2Fb%3Ac");
        assert_eq!(transactional_id_of(&key).as_deref(), Some("a/b:c"));
        let (start, end) = offsets_range("g:1");
        let key = offsets_key("g:1", "t");
        assert!(start <= key && key < end);
        assert!(!(start <= offsets_key("g", "1:t") && offsets_key("g", "1:t") < end));
        assert_eq!(offsets_transactional_id_of(&key).as_deref(), Some("t"));
    }

    #[test]
    fn a_partition_range_holds_only_that_partition() {
        let (start, end) = open_range("abc-1");
        let mine = open_key("abc-1", 7);
        let other = open_key("abc-10", 7);
        assert!(start <= mine && mine < end);
        assert!(!(start <= other && other < end));
        assert_eq!(marker_offset_of(&aborted_key("abc-1", 42)), Some(42));
    }
}
