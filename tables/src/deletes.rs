//! Rows of the compactor's files that a `read_committed` consumer does not read, hidden from
//! the table by Iceberg position delete files: records below the partition's log start
//! (retention and DeleteRecords cut into a file), at or above its last stable offset (an open
//! transaction), control records (transaction markers), and records of aborted transactions.
//! Deleting positions is exact and keeps the data files untouched (one copy); equality deletes
//! could not name a single record, and rewriting files would be a second copy.
//!
//! A delete file is named by a digest of everything that decides its content, so a commit
//! finds the one it needs already listed, and reads a data file only when that changed.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::FileReader;
use parquet::file::serialized_reader::SerializedFileReader;
use parquet::file::writer::SerializedFileWriter;
use parquet::record::RowAccessor;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::Type;
use sha2::{Digest, Sha256};
use storage::transactions::AbortedTxn;

use crate::manifest::Bounds;
use crate::TableError;

/// What decides which rows of a partition's files a read_committed consumer reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionState {
    /// The log start offset: records below it are gone for consumers.
    pub log_start: u64,
    /// The last stable offset: records at or above it are not read yet (`u64::MAX`: none open).
    pub last_stable: u64,
    /// Aborted transactions whose records may lie in the files (marker at or above the log
    /// start).
    pub aborted: Vec<AbortedTxn>,
}

/// Iceberg's reserved field ids of a position delete file's columns.
const DELETE_SCHEMA: &str = "
message position_delete {
  required binary file_path (STRING) = 2147483546;
  required int64 pos = 2147483545;
}";

/// The columns read to decide, in the order the rows hold them.
const PROJECTION: [&str; 4] = ["offset", "producer_id", "is_transactional", "is_control"];

/// Whether some row of a file with `bounds` may be hidden (unknown bounds: yes).
pub fn may_hide(bounds: Option<Bounds>, state: &PartitionState) -> bool {
    let Some(b) = bounds else {
        return true;
    };
    let (low, high) = (
        u64::try_from(b.offsets.0).unwrap_or(0),
        u64::try_from(b.offsets.1).unwrap_or(0),
    );
    low < state.log_start || high >= state.last_stable || b.transactional || b.control
}

/// The aborted transactions that may cover a record of offsets `[low, high]`.
fn overlapping(state: &PartitionState, low: u64, high: u64) -> Vec<AbortedTxn> {
    let mut out: Vec<AbortedTxn> = state
        .aborted
        .iter()
        .filter(|a| a.first_offset <= high && a.last_offset >= low)
        .copied()
        .collect();
    out.sort_by_key(|a| (a.first_offset, a.producer_id));
    out
}

/// The name of the delete file of `data_path` under `state`: equal names, equal contents.
pub fn digest(data_path: &str, bounds: Option<Bounds>, state: &PartitionState) -> String {
    let (low, high) = bounds.map_or((0, u64::MAX), |b| {
        (
            u64::try_from(b.offsets.0).unwrap_or(0),
            u64::try_from(b.offsets.1).unwrap_or(0),
        )
    });
    // Cuts outside the file change nothing in it.
    let start = state.log_start.clamp(low, high.saturating_add(1));
    let stable = state.last_stable.clamp(low, high.saturating_add(1));
    let mut hash = Sha256::new();
    hash.update(data_path.as_bytes());
    hash.update(start.to_le_bytes());
    hash.update(stable.to_le_bytes());
    for a in overlapping(state, low, high) {
        hash.update(a.producer_id.to_le_bytes());
        hash.update(a.first_offset.to_le_bytes());
        hash.update(a.last_offset.to_le_bytes());
    }
    hash.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Positions of the rows of the data file at `object_key` that `state` hides, in order.
pub async fn hidden_positions(
    objects: &Arc<dyn ObjectStore>,
    object_key: &str,
    state: &PartitionState,
) -> Result<Vec<i64>, TableError> {
    let bytes = objects.get(&Path::from(object_key)).await?.bytes().await?;
    let state = state.clone();
    tokio::task::spawn_blocking(move || scan(bytes, &state))
        .await
        .map_err(|e| TableError::Corrupt(format!("delete scan failed: {e}")))?
}

fn scan(bytes: Bytes, state: &PartitionState) -> Result<Vec<i64>, TableError> {
    let reader = SerializedFileReader::new(bytes).map_err(parquet_error)?;
    // A projection must be the file's own field types (ids included), in its root.
    let root = reader.metadata().file_metadata().schema();
    let fields = PROJECTION
        .iter()
        .map(|name| {
            root.get_fields()
                .iter()
                .find(|f| f.name() == *name)
                .cloned()
                .ok_or_else(|| TableError::Corrupt(format!("data file without column {name}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let projection = Type::group_type_builder(root.name())
        .with_fields(fields)
        .build()
        .map_err(parquet_error)?;
    let mut hidden = Vec::new();
    let rows = reader
        .get_row_iter(Some(projection))
        .map_err(parquet_error)?;
    for (position, row) in rows.enumerate() {
        let row = row.map_err(parquet_error)?;
        let offset = u64::try_from(row.get_long(0).map_err(parquet_error)?).unwrap_or(0);
        let producer_id = row.get_long(1).map_err(parquet_error)?;
        let transactional = row.get_bool(2).map_err(parquet_error)?;
        let control = row.get_bool(3).map_err(parquet_error)?;
        let aborted = transactional
            && state.aborted.iter().any(|a| {
                a.producer_id == producer_id && a.first_offset <= offset && offset <= a.last_offset
            });
        if offset < state.log_start || offset >= state.last_stable || control || aborted {
            hidden.push(i64::try_from(position).unwrap_or(i64::MAX));
        }
    }
    Ok(hidden)
}

/// A position delete file of `positions` in the data file at `data_path`.
pub fn write_delete_file(data_path: &str, positions: &[i64]) -> Result<Vec<u8>, TableError> {
    debug_assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "positions in order"
    );
    let schema = Arc::new(parse_message_type(DELETE_SCHEMA).map_err(parquet_error)?);
    let props = Arc::new(WriterProperties::builder().build());
    let mut writer = SerializedFileWriter::new(Vec::new(), schema, props).map_err(parquet_error)?;
    let mut group = writer.next_row_group().map_err(parquet_error)?;
    let paths = vec![ByteArray::from(data_path.as_bytes().to_vec()); positions.len()];
    if let Some(mut column) = group.next_column().map_err(parquet_error)? {
        column
            .typed::<ByteArrayType>()
            .write_batch(&paths, None, None)
            .map_err(parquet_error)?;
        column.close().map_err(parquet_error)?;
    }
    if let Some(mut column) = group.next_column().map_err(parquet_error)? {
        column
            .typed::<Int64Type>()
            .write_batch(positions, None, None)
            .map_err(parquet_error)?;
        column.close().map_err(parquet_error)?;
    }
    group.close().map_err(parquet_error)?;
    writer.into_inner().map_err(parquet_error)
}

fn parquet_error(e: parquet::errors::ParquetError) -> TableError {
    TableError::Corrupt(format!("parquet: {e}"))
}
