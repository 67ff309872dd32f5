//! What a table operation can fail with.

use metastore::MetaError;

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("metastore: {0}")]
    Meta(#[from] MetaError),
    #[error("object store: {0}")]
    Objects(#[from] object_store::Error),
    #[error("avro: {0}")]
    Avro(Box<apache_avro::Error>),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("parquet schema: {0}")]
    Schema(String),
    #[error("sql catalog: {0}")]
    Sql(#[from] rusqlite::Error),
    /// Stored table state that does not parse or contradicts itself.
    #[error("corrupt table state: {0}")]
    Corrupt(String),
    /// Another commit moved the table's pointer since it was read: retried on the next pass.
    #[error("table {0} changed during the commit")]
    Conflict(String),
}

impl From<apache_avro::Error> for TableError {
    fn from(e: apache_avro::Error) -> Self {
        TableError::Avro(Box::new(e))
    }
}
