use metastore::MetaError;
use storage::compacted::CompactedError;
use storage::StorageError;

/// Why a compaction step failed. Every step is safe to replay.
#[derive(Debug, thiserror::Error)]
pub enum CompactorError {
    #[error("object store: {0}")]
    ObjectStore(#[from] object_store::Error),
    #[error("metadata store: {0}")]
    Meta(#[from] MetaError),
    #[error("index: {0}")]
    Index(#[from] StorageError),
    #[error("compacted file: {0}")]
    Compacted(#[from] CompactedError),
    /// Data read back did not match what the index promised; the range is left as it is.
    #[error("corrupt: {0}")]
    Corrupt(String),
    #[error("iceberg table: {0}")]
    Table(#[from] tables::TableError),
    /// Another process changed the index of the stream meanwhile; retry on the next pass.
    #[error("index of {0} changed during the swap")]
    Conflict(String),
}
