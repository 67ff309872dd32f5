//! How storage failures surface to Kafka clients.

use kafka_protocol::ResponseError;
use storage::StorageError;

/// The Kafka error for a failed produce.
///
/// - Buffer full: `NOT_ENOUGH_REPLICAS` — nothing was written, and every client retries it
///   without treating the broker as gone (Kafka has no "broker busy" code for Produce).
/// - Write or metadata failures: `KAFKA_STORAGE_ERROR` — retriable; clients refresh metadata
///   and retry, possibly on another broker.
/// - Timeout: `REQUEST_TIMED_OUT` — the outcome is unknown, as with Kafka.
/// - Shutting down: `NOT_LEADER_OR_FOLLOWER` — the client looks for another broker.
pub fn produce_error(error: &StorageError) -> ResponseError {
    match error {
        StorageError::Overloaded { .. } => ResponseError::NotEnoughReplicas,
        StorageError::Timeout => ResponseError::RequestTimedOut,
        StorageError::ShuttingDown => ResponseError::NotLeaderOrFollower,
        StorageError::InvalidArgument(_) => ResponseError::InvalidRecord,
        StorageError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
        StorageError::WriteFailed(_)
        | StorageError::ObjectStore(_)
        | StorageError::Meta(_)
        | StorageError::Corrupt(_) => ResponseError::KafkaStorageError,
    }
}

/// The Kafka error for a failed read (Fetch, ListOffsets). Corrupt data is never served: the
/// client gets a retriable storage error instead.
pub fn read_error(error: &StorageError) -> ResponseError {
    match error {
        StorageError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
        StorageError::Timeout => ResponseError::RequestTimedOut,
        StorageError::ShuttingDown => ResponseError::NotLeaderOrFollower,
        StorageError::InvalidArgument(_) => ResponseError::UnknownServerError,
        StorageError::Overloaded { .. }
        | StorageError::WriteFailed(_)
        | StorageError::ObjectStore(_)
        | StorageError::Meta(_)
        | StorageError::Corrupt(_) => ResponseError::KafkaStorageError,
    }
}
