//! The Parquet schema of a compacted file and the column buffers of one row group.

use std::sync::Arc;

use parquet::data_type::ByteArray;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::Type;

use super::CompactedError;

/// One row per Kafka record. Leaf column order matters: writer and reader follow it. The
/// `= n` are Parquet field ids: the ids of the same columns in the topic's Iceberg table
/// (`tables` crate), which engines match by id, not by name. Never renumber. `partition` (the
/// same value in every row, a few bytes once encoded) is last: files written before it have
/// the 20 columns above it, which is all the Kafka reader reads.
const SCHEMA: &str = "
message kafka_record {
  required int64 offset = 2;
  required int64 timestamp = 3;
  required int32 timestamp_type = 4;
  optional binary key = 5;
  optional binary value = 6;
  optional group headers (LIST) = 7 {
    repeated group list {
      required group element = 8 {
        required binary key (STRING) = 9;
        optional binary value = 10;
      }
    }
  }
  required int64 timestamp_delta = 11;
  required int32 record_attributes = 12;
  required int64 batch_base_offset = 13;
  required int32 batch_last_offset_delta = 14;
  required int64 batch_base_timestamp = 15;
  required int64 batch_max_timestamp = 16;
  required int32 batch_attributes = 17;
  required int32 partition_leader_epoch = 18;
  required int64 producer_id = 19;
  required int32 producer_epoch = 20;
  required int32 base_sequence = 21;
  required boolean is_transactional = 22;
  required boolean is_control = 23;
  required int32 partition = 1;
}";

/// Leaf columns the Kafka reader reads and a file's row group spans cover. Columns after them
/// (a table's decoded values, [`super::ExtraColumns`]) are for engines only.
pub(crate) const LEAF_COLUMNS: usize = 21;
/// Leaf columns of files written before the `partition` column.
pub(crate) const LEAF_COLUMNS_WITHOUT_PARTITION: usize = 20;

/// The Parquet schema of every compacted file, field ids included.
pub fn schema() -> Result<Arc<Type>, CompactedError> {
    Ok(Arc::new(parse_message_type(SCHEMA)?))
}

/// The schema of a file whose rows also carry `extra` top-level fields after the Kafka ones.
pub(crate) fn schema_with(extra: Vec<Arc<Type>>) -> Result<Arc<Type>, CompactedError> {
    if extra.is_empty() {
        return schema();
    }
    let base = parse_message_type(SCHEMA)?;
    let mut fields = base.get_fields().to_vec();
    fields.extend(extra);
    Ok(Arc::new(
        Type::group_type_builder(base.name())
            .with_fields(fields)
            .build()?,
    ))
}

/// Column values of one row group, in schema order. Nullable columns carry definition levels;
/// the two header columns also carry repetition levels (rep 0 starts a record's list).
#[derive(Default)]
pub(crate) struct Columns {
    pub offset: Vec<i64>,
    pub timestamp: Vec<i64>,
    pub timestamp_type: Vec<i32>,
    pub key: Vec<ByteArray>,
    pub key_def: Vec<i16>,
    pub value: Vec<ByteArray>,
    pub value_def: Vec<i16>,
    pub header_key: Vec<ByteArray>,
    pub header_key_def: Vec<i16>,
    pub header_rep: Vec<i16>,
    pub header_value: Vec<ByteArray>,
    pub header_value_def: Vec<i16>,
    pub header_value_rep: Vec<i16>,
    pub timestamp_delta: Vec<i64>,
    pub record_attributes: Vec<i32>,
    pub batch_base_offset: Vec<i64>,
    pub batch_last_offset_delta: Vec<i32>,
    pub batch_base_timestamp: Vec<i64>,
    pub batch_max_timestamp: Vec<i64>,
    pub batch_attributes: Vec<i32>,
    pub partition_leader_epoch: Vec<i32>,
    pub producer_id: Vec<i64>,
    pub producer_epoch: Vec<i32>,
    pub base_sequence: Vec<i32>,
    pub is_transactional: Vec<bool>,
    pub is_control: Vec<bool>,
}

/// Definition levels of the header columns: the list is never null (an empty list is level 1).
pub(crate) const HEADERS_EMPTY_DEF: i16 = 1;
pub(crate) const HEADER_KEY_DEF: i16 = 2;
pub(crate) const HEADER_VALUE_PRESENT_DEF: i16 = 3;
