//! A partition's transaction records in the MetaStore, as the broker writes them and the
//! compactor's table commits read them: the transactions open on it (which bound its last
//! stable offset) and its aborted-transaction index. Keys are flat under their prefix (Oxia
//! orders keys by depth first); stream ids hold neither `/` nor `:`.
//!
//! - `txn-open/<stream>:<producer id>`: a transaction open on one partition, written by the
//!   partition's writer before the transaction's first batch is appended, deleted once its
//!   marker is durable;
//! - `txn-aborted/<stream>:<marker offset>`: one aborted transaction of a partition (the
//!   aborted-transaction index read by read_committed fetches), trimmed with the log.

use serde::{Deserialize, Serialize};

const OPEN: &str = "txn-open/";
const ABORTED: &str = "txn-aborted/";
/// Above every key character written, so `prefix..prefix + END` selects a family's keys.
const END: char = '\u{7f}';

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

/// A transaction open on one partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTxn {
    pub transactional_id: String,
    pub producer_id: i64,
    pub epoch: i16,
    pub topic: String,
    pub partition: i32,
    /// At or below the transaction's first offset here: the high watermark when the entry
    /// was written, before the first batch was appended.
    pub first_offset: u64,
    /// The broker that appends the transaction's batches, so the one to write its marker.
    pub writer: i32,
}

/// One aborted transaction of a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: u64,
    /// The offset of its abort marker.
    pub last_offset: u64,
    /// The partition's last stable offset once this transaction was over: no transaction
    /// aborted later began below it, which bounds the scans of fetches (Kafka's rule).
    pub stable_after: u64,
}
