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

// The per-partition families are storage's: the compactor's table commits read them too.
pub use storage::transactions::{
    aborted_key, aborted_range_from, all_open_range, marker_offset_of, open_key, open_range,
};

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
