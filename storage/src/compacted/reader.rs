//! Rebuilds Kafka record batches from a compacted file, starting at a given offset.

use bytes::{Bytes, BytesMut};
use parquet::data_type::{
    AsBytes, BoolType, ByteArray, ByteArrayType, DataType, Int32Type, Int64Type,
};
use parquet::file::reader::{FileReader, RowGroupReader, SerializedFileReader};
use parquet::file::statistics::Statistics;

use super::batch::{encode_batch, BatchHeader, RecordRow};
use super::columns::{Columns, HEADER_KEY_DEF, HEADER_VALUE_PRESENT_DEF, LEAF_COLUMNS};
use super::{CompactedError, FORMAT_VERSION, FORMAT_VERSION_KEY};
use crate::index::{BatchMeta, ProducerMeta};

/// How rebuilt batches are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RebuildOptions {
    /// Re-compress with each batch's original codec; otherwise serve uncompressed batches
    /// (cheaper on CPU, more bytes on the wire).
    pub recompress: bool,
}

impl Default for RebuildOptions {
    fn default() -> Self {
        RebuildOptions { recompress: true }
    }
}

/// Whole batches, the first one holding the requested offset.
#[derive(Clone, Debug)]
pub struct RebuiltBatches {
    pub base_offset: u64,
    pub batches: Vec<BatchMeta>,
    pub bytes: Bytes,
}

/// Reads the batches holding `from_offset` and after, until about `max_bytes` (at least one
/// batch). Row groups that end before `from_offset` are skipped by their offset statistics.
pub fn read_batches(
    file: Bytes,
    from_offset: u64,
    max_bytes: usize,
    options: &RebuildOptions,
) -> Result<RebuiltBatches, CompactedError> {
    let reader = SerializedFileReader::new(file)?;
    check_layout(&reader)?;
    let mut out = BytesMut::new();
    let mut metas = Vec::new();
    let mut base_offset = None;
    for i in 0..reader.num_row_groups() {
        let rg_meta = reader.metadata().row_group(i);
        if let Some(Statistics::Int64(s)) = rg_meta.column(0).statistics() {
            if s.max_opt().is_some_and(|max| (*max as u64) < from_offset) {
                continue;
            }
        }
        let rows = usize::try_from(rg_meta.num_rows())
            .map_err(|_| CompactedError::Parquet("negative row count".into()))?;
        let group = reader.get_row_group(i)?;
        let columns = read_group(group.as_ref(), rows)?;
        for (header, records) in rebuild(&columns)? {
            let last = header.base_offset as u64 + u64::from(header.last_offset_delta as u32);
            if last < from_offset {
                continue;
            }
            let codec = if options.recompress {
                header.codec()
            } else {
                0
            };
            let bytes = encode_batch(&header, &records, codec)?;
            base_offset.get_or_insert(header.base_offset as u64);
            metas.push(BatchMeta {
                len: bytes.len() as u32,
                records: header.last_offset_delta as u32 + 1,
                max_timestamp: header.max_timestamp,
                producer: (header.producer_id >= 0).then_some(ProducerMeta {
                    id: header.producer_id,
                    epoch: header.producer_epoch,
                    base_sequence: header.base_sequence,
                }),
            });
            out.extend_from_slice(&bytes);
            if out.len() >= max_bytes {
                break;
            }
        }
        if out.len() >= max_bytes {
            break;
        }
    }
    let base_offset = base_offset.ok_or_else(|| {
        CompactedError::Parquet(format!(
            "file holds no batch at or after offset {from_offset}"
        ))
    })?;
    Ok(RebuiltBatches {
        base_offset,
        batches: metas,
        bytes: out.freeze(),
    })
}

fn check_layout(reader: &SerializedFileReader<Bytes>) -> Result<(), CompactedError> {
    let meta = reader.metadata().file_metadata();
    let version = meta
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == FORMAT_VERSION_KEY))
        .and_then(|k| k.value.as_deref());
    if version != Some(FORMAT_VERSION) {
        return Err(CompactedError::Parquet(format!(
            "unsupported compacted format version {version:?}"
        )));
    }
    if meta.schema_descr().num_columns() != LEAF_COLUMNS {
        return Err(CompactedError::Parquet("unexpected column count".into()));
    }
    Ok(())
}

fn read_group(rg: &dyn RowGroupReader, rows: usize) -> Result<Columns, CompactedError> {
    let mut c = Columns::default();
    read::<Int64Type>(rg, 0, rows, None, None, &mut c.offset)?;
    read::<Int64Type>(rg, 1, rows, None, None, &mut c.timestamp)?;
    read::<Int32Type>(rg, 2, rows, None, None, &mut c.timestamp_type)?;
    read::<ByteArrayType>(rg, 3, rows, Some(&mut c.key_def), None, &mut c.key)?;
    read::<ByteArrayType>(rg, 4, rows, Some(&mut c.value_def), None, &mut c.value)?;
    read::<ByteArrayType>(
        rg,
        5,
        rows,
        Some(&mut c.header_key_def),
        Some(&mut c.header_rep),
        &mut c.header_key,
    )?;
    read::<ByteArrayType>(
        rg,
        6,
        rows,
        Some(&mut c.header_value_def),
        Some(&mut c.header_value_rep),
        &mut c.header_value,
    )?;
    read::<Int64Type>(rg, 7, rows, None, None, &mut c.timestamp_delta)?;
    read::<Int32Type>(rg, 8, rows, None, None, &mut c.record_attributes)?;
    read::<Int64Type>(rg, 9, rows, None, None, &mut c.batch_base_offset)?;
    read::<Int32Type>(rg, 10, rows, None, None, &mut c.batch_last_offset_delta)?;
    read::<Int64Type>(rg, 11, rows, None, None, &mut c.batch_base_timestamp)?;
    read::<Int64Type>(rg, 12, rows, None, None, &mut c.batch_max_timestamp)?;
    read::<Int32Type>(rg, 13, rows, None, None, &mut c.batch_attributes)?;
    read::<Int32Type>(rg, 14, rows, None, None, &mut c.partition_leader_epoch)?;
    read::<Int64Type>(rg, 15, rows, None, None, &mut c.producer_id)?;
    read::<Int32Type>(rg, 16, rows, None, None, &mut c.producer_epoch)?;
    read::<Int32Type>(rg, 17, rows, None, None, &mut c.base_sequence)?;
    read::<BoolType>(rg, 18, rows, None, None, &mut c.is_transactional)?;
    read::<BoolType>(rg, 19, rows, None, None, &mut c.is_control)?;
    Ok(c)
}

fn read<T: DataType>(
    rg: &dyn RowGroupReader,
    column: usize,
    rows: usize,
    def: Option<&mut Vec<i16>>,
    rep: Option<&mut Vec<i16>>,
    out: &mut Vec<T::T>,
) -> Result<(), CompactedError> {
    let mut typed = T::get_column_reader(rg.get_column_reader(column)?)
        .ok_or_else(|| CompactedError::Parquet(format!("column {column} has another type")))?;
    let (records, _, _) = typed.read_records(rows, def, rep, out)?;
    if records != rows {
        return Err(CompactedError::Parquet(format!(
            "column {column} holds {records} rows, expected {rows}"
        )));
    }
    Ok(())
}

fn short(what: &str) -> CompactedError {
    CompactedError::Parquet(format!("column {what} is shorter than the row count"))
}

fn bytes_of(v: &ByteArray) -> Bytes {
    Bytes::copy_from_slice(v.as_bytes())
}

/// Groups rows back into batches, in file order.
fn rebuild(c: &Columns) -> Result<Vec<(BatchHeader, Vec<RecordRow>)>, CompactedError> {
    let rows = c.offset.len();
    let fixed = [
        c.timestamp_delta.len(),
        c.record_attributes.len(),
        c.batch_base_offset.len(),
        c.batch_last_offset_delta.len(),
        c.batch_base_timestamp.len(),
        c.batch_max_timestamp.len(),
        c.batch_attributes.len(),
        c.partition_leader_epoch.len(),
        c.producer_id.len(),
        c.producer_epoch.len(),
        c.base_sequence.len(),
        c.key_def.len(),
        c.value_def.len(),
    ];
    if fixed.iter().any(|n| *n != rows) || c.header_key_def.len() != c.header_value_def.len() {
        return Err(short("of a batch field"));
    }
    let (mut key_i, mut value_i, mut level, mut hk_i, mut hv_i) = (0, 0, 0, 0, 0);
    let mut out: Vec<(BatchHeader, Vec<RecordRow>)> = Vec::new();
    for row in 0..rows {
        let batch_base = c.batch_base_offset[row];
        let header = BatchHeader {
            base_offset: batch_base,
            partition_leader_epoch: c.partition_leader_epoch[row],
            attributes: c.batch_attributes[row] as i16,
            last_offset_delta: c.batch_last_offset_delta[row],
            base_timestamp: c.batch_base_timestamp[row],
            max_timestamp: c.batch_max_timestamp[row],
            producer_id: c.producer_id[row],
            producer_epoch: c.producer_epoch[row] as i16,
            base_sequence: c.base_sequence[row],
        };
        let key = take_nullable(&c.key, &c.key_def[row], &mut key_i, "key")?;
        let value = take_nullable(&c.value, &c.value_def[row], &mut value_i, "value")?;
        let mut headers = Vec::new();
        let mut first = true;
        while level < c.header_key_def.len() && (first || c.header_rep[level] == 1) {
            first = false;
            if c.header_key_def[level] >= HEADER_KEY_DEF {
                let k = c.header_key.get(hk_i).ok_or_else(|| short("header key"))?;
                hk_i += 1;
                let v = if c.header_value_def[level] >= HEADER_VALUE_PRESENT_DEF {
                    let v = c
                        .header_value
                        .get(hv_i)
                        .ok_or_else(|| short("header value"))?;
                    hv_i += 1;
                    Some(bytes_of(v))
                } else {
                    None
                };
                headers.push((bytes_of(k), v));
            }
            level += 1;
        }
        let record = RecordRow {
            attributes: c.record_attributes[row] as i8,
            timestamp_delta: c.timestamp_delta[row],
            offset_delta: i32::try_from(c.offset[row] - batch_base)
                .map_err(|_| CompactedError::Parquet("offset delta out of range".into()))?,
            key,
            value,
            headers,
        };
        match out.last_mut() {
            Some((h, records)) if h.base_offset == batch_base => records.push(record),
            _ => out.push((header, vec![record])),
        }
    }
    Ok(out)
}

fn take_nullable(
    values: &[ByteArray],
    def: &i16,
    next: &mut usize,
    what: &str,
) -> Result<Option<Bytes>, CompactedError> {
    if *def == 0 {
        return Ok(None);
    }
    let v = values.get(*next).ok_or_else(|| short(what))?;
    *next += 1;
    Ok(Some(bytes_of(v)))
}
