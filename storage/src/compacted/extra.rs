//! Columns a compacted file may carry after the Kafka ones: a topic's values decoded into typed
//! columns for its Iceberg table (the `tables` crate). They share the row groups of the Kafka
//! columns, one row per record, and the Kafka reader neither reads nor fetches them.

use std::sync::Arc;

use parquet::file::writer::SerializedRowGroupWriter;
use parquet::schema::types::Type;

use super::CompactedError;
use record_batch::RecordRow;

/// Writes extra columns beside the Kafka ones.
pub trait ExtraColumns: Send {
    /// Top-level fields appended to the file's schema, with their field ids.
    fn fields(&self) -> Vec<Arc<Type>>;

    /// One row for `record` (`control`: of a control batch).
    fn push(&mut self, record: &RecordRow, control: bool);

    /// Writes the rows pushed since the last call as the next columns of `group`, in the
    /// order of [`ExtraColumns::fields`]' leaves.
    fn write(
        &mut self,
        group: &mut SerializedRowGroupWriter<'_, Vec<u8>>,
    ) -> Result<(), CompactedError>;
}
