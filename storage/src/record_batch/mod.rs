//! Kafka record batches as a broker may rewrite them on produce (re-encoding with the topic's
//! codec, stamping the log append time) and the codecs themselves, with bounded decompression.
//! Batch structure only: storage still knows nothing of requests.

pub mod codec;
mod rewrite;

pub use rewrite::{
    record_timestamps, reencode, stamp_log_append_time, RecordTime, LOG_APPEND_TIME_FLAG,
};

/// Decompressed bytes of one batch at most, wherever batches are decompressed.
pub const DECOMPRESSED_BYTES_MAX: usize = 256 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordBatchError {
    #[error("corrupt record batch: {0}")]
    Corrupt(String),
    /// Past a limit (decompressed size, batch size).
    #[error("record batch too large: {0}")]
    TooLarge(String),
    #[error("compression failed: {0}")]
    Codec(String),
}
