/// Why a compacted file could not be written or read back.
#[derive(Debug, thiserror::Error)]
pub enum CompactedError {
    /// A record batch is malformed (truncated, wrong magic, bad varint, CRC mismatch).
    #[error("bad record batch: {0}")]
    BadBatch(String),
    /// Compressing or decompressing records failed.
    #[error("compression: {0}")]
    Compression(String),
    /// The Parquet library failed, or the file does not have our layout.
    #[error("parquet: {0}")]
    Parquet(String),
    /// A limit was exceeded (decompressed size, records per batch).
    #[error("limit exceeded: {0}")]
    Limit(String),
}

impl From<record_batch::RecordBatchError> for CompactedError {
    fn from(e: record_batch::RecordBatchError) -> Self {
        use record_batch::RecordBatchError as E;
        match e {
            E::TooLarge(what) => CompactedError::Limit(what),
            E::Codec(what) => CompactedError::Compression(what),
            E::Corrupt(what) | E::Invalid(what) | E::UnsupportedCodec(what) => {
                CompactedError::BadBatch(what)
            }
            e @ E::InvalidRecord { .. } => CompactedError::BadBatch(e.to_string()),
        }
    }
}

impl From<parquet::errors::ParquetError> for CompactedError {
    fn from(e: parquet::errors::ParquetError) -> Self {
        CompactedError::Parquet(e.to_string())
    }
}
