//! The values stored under the keys of `keys`: JSON, so that an operator can read them with the
//! MetaStore's own tools, and so that a field added later decodes in older records.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Kafka's transaction states (`TransactionState` in its coordinator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
}

impl Status {
    /// The name DescribeTransactions and ListTransactions report.
    pub fn kafka_name(self) -> &'static str {
        match self {
            Status::Empty => "Empty",
            Status::Ongoing => "Ongoing",
            Status::PrepareCommit => "PrepareCommit",
            Status::PrepareAbort => "PrepareAbort",
            Status::CompleteCommit => "CompleteCommit",
            Status::CompleteAbort => "CompleteAbort",
        }
    }

    pub fn is_prepared(self) -> bool {
        matches!(self, Status::PrepareCommit | Status::PrepareAbort)
    }
}

/// A partition of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TxnPartition {
    pub topic: String,
    pub partition: i32,
    pub stream: String,
}

/// The coordinator's record of one transactional id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnState {
    pub producer_id: i64,
    pub epoch: i16,
    pub timeout_ms: i32,
    pub status: Status,
    /// Sorted, without duplicates.
    pub partitions: Vec<TxnPartition>,
    /// Groups whose offsets the transaction commits, sorted.
    pub groups: Vec<String>,
    /// When the current transaction began (its first partition or group was added).
    pub start_ms: u64,
    pub updated_ms: u64,
}

impl TxnState {
    pub fn new(producer_id: i64, timeout_ms: i32, now_ms: u64) -> TxnState {
        TxnState {
            producer_id,
            epoch: 0,
            timeout_ms,
            status: Status::Empty,
            partitions: Vec::new(),
            groups: Vec::new(),
            start_ms: now_ms,
            updated_ms: now_ms,
        }
    }

    pub fn includes(&self, stream: &str) -> bool {
        self.partitions.iter().any(|p| p.stream == stream)
    }

    /// Past its timeout while open.
    pub fn timed_out(&self, now_ms: u64) -> bool {
        let timeout = u64::try_from(self.timeout_ms).unwrap_or(0);
        self.status == Status::Ongoing && now_ms.saturating_sub(self.start_ms) > timeout
    }
}

pub use storage::transactions::{AbortedTxn, OpenTxn};

/// One offset a transaction commits for a group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// The offsets one transaction commits for one group.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingOffsets {
    pub producer_id: i64,
    pub epoch: i16,
    pub offsets: Vec<PendingOffset>,
}

#[derive(Debug, thiserror::Error)]
#[error("undecodable transaction record: {0}")]
pub struct DecodeError(#[from] serde_json::Error);

pub fn encode<T: Serialize>(value: &T) -> Bytes {
    // Serialising these plain structs cannot fail; an empty value would fail to decode.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, DecodeError> {
    Ok(serde_json::from_slice(bytes)?)
}
