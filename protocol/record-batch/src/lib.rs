//! The Kafka record-batch format (magic 2), in one place: the header ([`header`], where its
//! layout is written down), records and their varints, the CRC, the codecs with streaming
//! decompression bounded by a byte limit, whole-batch decoding and encoding (the compactor and
//! the Parquet reader), the checks a broker makes before it assigns offsets ([`validate`]), and
//! what a broker may rewrite ([`rewrite`]). Batch structure only: nothing here knows of
//! requests, topics or storage.

mod batch;
pub mod codec;
pub mod header;
mod input;
mod record;
pub mod rewrite;
pub mod validate;
pub mod varint;

pub use batch::{
    decode_batch, decode_batch_within, encode_batch, encode_batch_into, split_batches,
    DecodedBatch, RECORDS_PER_BATCH_MAX,
};
pub use header::{
    set_base_offset, set_max_timestamp, stamp_log_append_time, BatchHeader, HEADER_BYTES,
};
pub use record::{RecordRef, RecordRow};

/// Decompressed bytes of one batch at most, wherever batches are decompressed: produce
/// validation, re-encoding, the compactor, ListOffsets. Kafka sets no such bound (a batch's
/// compressed size is bounded by `max.message.bytes`, its records by nothing); librdkafka
/// consumers refuse more than `receive.message.max.bytes` (100 MB by default) of one batch.
/// Validation streams and holds one buffer whatever this is; readers that keep a whole
/// batch hold at most this much.
pub const DECOMPRESSED_BYTES_MAX: usize = 256 << 20;

/// What is wrong with a batch. Kafka's answers differ by kind, so the kinds are kept apart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordBatchError {
    /// The batch's framing or checksum is broken (Kafka: `CorruptRecordException`).
    #[error("corrupt record batch: {0}")]
    Corrupt(String),
    /// The batch is whole but its header and records do not agree, or a record is malformed
    /// (Kafka: `InvalidRecordException`).
    #[error("invalid record batch: {0}")]
    Invalid(String),
    /// One record is malformed in a way readers would tolerate but consumers do not (Kafka's
    /// record-level `InvalidRecordException`, answered with `record_errors`).
    #[error("invalid record at batch index {index}: {message}")]
    InvalidRecord { index: i32, message: String },
    /// Past a limit (decompressed size, batch size).
    #[error("record batch too large: {0}")]
    TooLarge(String),
    /// The codec is not allowed in this request (zstd before Produce v7).
    #[error("unsupported compression: {0}")]
    UnsupportedCodec(String),
    /// Compressing records failed (our side, not the batch's).
    #[error("compression failed: {0}")]
    Codec(String),
}

#[cfg(test)]
mod tests;
