//! The Parquet schema of a compacted file and the column buffers of one row group.

use std::sync::Arc;

use parquet::data_type::ByteArray;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::Type;

use super::CompactedError;

/// One row per Kafka record. Leaf column order matters: writer and reader follow it.
const SCHEMA: &str = "
message kafka_record {
  required int64 offset;
  required int64 timestamp;
  required int32 timestamp_type;
  optional binary key;
  optional binary value;
  optional group headers (LIST) {
    repeated group list {
      required group element {
        required binary key (STRING);
        optional binary value;
      }
    }
  }
  required int64 timestamp_delta;
  required int32 record_attributes;
  required int64 batch_base_offset;
  required int32 batch_last_offset_delta;
  required int64 batch_base_timestamp;
  required int64 batch_max_timestamp;
  required int32 batch_attributes;
  required int32 partition_leader_epoch;
  required int64 producer_id;
  required int32 producer_epoch;
  required int32 base_sequence;
  required boolean is_transactional;
  required boolean is_control;
}";

pub(crate) const LEAF_COLUMNS: usize = 20;

pub(crate) fn schema() -> Result<Arc<Type>, CompactedError> {
    Ok(Arc::new(parse_message_type(SCHEMA)?))
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
