use metastore::MetaError;

/// Errors of the log engine. The broker maps each to a Kafka error code.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Too many bytes are waiting to become durable; retry later.
    #[error("write buffer full: {pending_bytes} bytes pending, limit {max_pending_bytes}")]
    Overloaded {
        pending_bytes: usize,
        max_pending_bytes: usize,
    },
    /// The append did not complete within `add_entry_timeout_ms`; it may still become durable.
    #[error("append timed out")]
    Timeout,
    /// The requested offset is outside `[log_start_offset, high_watermark]`.
    #[error("offset {offset} out of range [{log_start_offset}, {high_watermark}]")]
    OffsetOutOfRange {
        offset: u64,
        log_start_offset: u64,
        high_watermark: u64,
    },
    /// Stored data failed verification (checksum, length, undecodable index entry). Never served.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// The object store failed.
    #[error("object store: {0}")]
    ObjectStore(#[from] object_store::Error),
    /// The metadata store failed.
    #[error("metadata store: {0}")]
    Meta(#[from] MetaError),
    /// The caller passed something the engine cannot accept (bad stream id, empty append).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Writing the WAL object failed; nothing of the append was committed.
    #[error("wal write failed: {0}")]
    WriteFailed(String),
    /// The engine is shutting down and takes no new appends.
    #[error("storage is shutting down")]
    ShuttingDown,
}

impl StorageError {
    /// Whether the caller may retry the same request later with a chance of success.
    pub fn is_retriable(&self) -> bool {
        match self {
            StorageError::Overloaded { .. }
            | StorageError::Timeout
            | StorageError::ObjectStore(_)
            | StorageError::WriteFailed(_)
            | StorageError::ShuttingDown => true,
            StorageError::Meta(e) => e.is_retriable(),
            StorageError::OffsetOutOfRange { .. }
            | StorageError::Corrupt(_)
            | StorageError::InvalidArgument(_) => false,
        }
    }
}

impl StorageError {
    /// A copy of this error for each of several appends that failed together.
    pub fn fan_out(&self) -> StorageError {
        match self {
            StorageError::Meta(e) => StorageError::Meta(e.clone()),
            StorageError::Timeout => StorageError::Timeout,
            StorageError::Corrupt(m) => StorageError::Corrupt(m.clone()),
            StorageError::InvalidArgument(m) => StorageError::InvalidArgument(m.clone()),
            other => StorageError::WriteFailed(other.to_string()),
        }
    }
}
