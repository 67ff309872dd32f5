//! Columns a compacted file may carry after the Kafka ones: a topic's values decoded into typed
//! columns for its Iceberg table (the `tables` crate). They share the row groups of the Kafka
//! columns, one row per record. A value the typed columns hold losslessly may be elided: the
//! `value` column keeps only its first bytes, and the Kafka reader rebuilds the rest from the
//! typed columns with a [`ValueRestorer`], so the file holds the value once.

use std::fmt::Debug;
use std::sync::Arc;

use parquet::data_type::ByteArray;
use parquet::file::metadata::{FileMetaData, KeyValue};
use parquet::file::reader::RowGroupReader;
use parquet::file::writer::SerializedRowGroupWriter;
use parquet::schema::types::Type;

use super::CompactedError;
use record_batch::RecordRow;

/// Writes extra columns beside the Kafka ones.
pub trait ExtraColumns: Send {
    /// Top-level fields appended to the file's schema, with their field ids.
    fn fields(&self) -> Vec<Arc<Type>>;

    /// Whether [`ExtraColumns::push`] may elide values: the file then needs a
    /// [`ValueRestorer`] to be read, and its format version says so.
    fn elides_values(&self) -> bool;

    /// One row for `record` (`control`: of a control batch). `Some(n)`: the extra columns hold
    /// the value losslessly and the `value` column keeps only its first `n` bytes.
    fn push(&mut self, record: &RecordRow, control: bool) -> Option<usize>;

    /// Writes the rows pushed since the last call as the next columns of `group`, in the
    /// order of [`ExtraColumns::fields`]' leaves.
    fn write(
        &mut self,
        group: &mut SerializedRowGroupWriter<'_, Vec<u8>>,
    ) -> Result<(), CompactedError>;

    /// Key-value metadata the file's footer carries once every row is written (what a
    /// [`ValueRestorer`] needs beside the columns).
    fn metadata(&self) -> Vec<KeyValue>;
}

/// Rebuilds the values an [`ExtraColumns`] elided, from the extra columns of a row group.
pub trait ValueRestorer: Send + Sync + Debug {
    /// `values` holds the row group's non-null values in row order (`value_def[row]` is 1 for a
    /// row with one); an elided value is replaced by the whole value. A value that cannot be
    /// rebuilt is an error: serving the kept bytes alone would serve a different record.
    fn restore(
        &self,
        file: &FileMetaData,
        group: &dyn RowGroupReader,
        value_def: &[i16],
        values: &mut [ByteArray],
    ) -> Result<(), CompactedError>;
}
