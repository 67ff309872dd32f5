//! One row group: Kafka records appended to column buffers, then written as Parquet columns.

use bytes::Bytes;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, Int32Type, Int64Type};
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};

use super::columns::{Columns, HEADERS_EMPTY_DEF, HEADER_KEY_DEF, HEADER_VALUE_PRESENT_DEF};
use super::{CompactedError, DecodedBatch, ExtraColumns};

/// Appends every record of `batch` as one row each.
pub(super) fn push_batch(
    c: &mut Columns,
    extra: Option<&mut (dyn ExtraColumns + 'static)>,
    batch_base_offset: i64,
    batch: &DecodedBatch,
) {
    let h = &batch.header;
    let mut extra = extra;
    let log_append = h.is_log_append_time();
    for r in &batch.records {
        let kept = extra.as_deref_mut().and_then(|e| e.push(r, h.is_control()));
        c.offset.push(batch_base_offset + i64::from(r.offset_delta));
        c.timestamp.push(h.record_timestamp(r.timestamp_delta));
        c.timestamp_type.push(i32::from(log_append));
        push_nullable(&mut c.key, &mut c.key_def, r.key.as_ref());
        match (kept, &r.value) {
            (Some(n), Some(v)) if n <= v.len() => {
                push_nullable(&mut c.value, &mut c.value_def, Some(&v.slice(..n)));
            }
            _ => push_nullable(&mut c.value, &mut c.value_def, r.value.as_ref()),
        }
        if r.headers.is_empty() {
            c.header_key_def.push(HEADERS_EMPTY_DEF);
            c.header_rep.push(0);
            c.header_value_def.push(HEADERS_EMPTY_DEF);
            c.header_value_rep.push(0);
        }
        for (i, (k, v)) in r.headers.iter().enumerate() {
            let rep = i16::from(i > 0);
            c.header_key.push(ByteArray::from(k.clone()));
            c.header_key_def.push(HEADER_KEY_DEF);
            c.header_rep.push(rep);
            c.header_value_rep.push(rep);
            match v {
                Some(v) => {
                    c.header_value.push(ByteArray::from(v.clone()));
                    c.header_value_def.push(HEADER_VALUE_PRESENT_DEF);
                }
                None => c.header_value_def.push(HEADER_KEY_DEF),
            }
        }
        c.timestamp_delta.push(r.timestamp_delta);
        c.record_attributes.push(i32::from(r.attributes));
        c.batch_base_offset.push(batch_base_offset);
        c.batch_last_offset_delta.push(h.last_offset_delta);
        c.batch_base_timestamp.push(h.base_timestamp);
        c.batch_max_timestamp.push(h.max_timestamp);
        c.batch_attributes.push(i32::from(h.attributes));
        c.partition_leader_epoch.push(h.partition_leader_epoch);
        c.producer_id.push(h.producer_id);
        c.producer_epoch.push(i32::from(h.producer_epoch));
        c.base_sequence.push(h.base_sequence);
        c.is_transactional.push(h.is_transactional());
        c.is_control.push(h.is_control());
    }
}

fn push_nullable(values: &mut Vec<ByteArray>, defs: &mut Vec<i16>, v: Option<&Bytes>) {
    match v {
        Some(v) => {
            values.push(ByteArray::from(v.clone()));
            defs.push(1);
        }
        None => defs.push(0),
    }
}

/// Writes the buffered rows as one row group, columns in schema order; every row is of
/// Kafka partition `partition`.
pub(super) fn write_group(
    writer: &mut SerializedFileWriter<Vec<u8>>,
    c: &Columns,
    extra: Option<&mut (dyn ExtraColumns + 'static)>,
    partition: i32,
) -> Result<(), CompactedError> {
    let mut rg = writer.next_row_group()?;
    column::<Int64Type>(&mut rg, &c.offset, None, None)?;
    column::<Int64Type>(&mut rg, &c.timestamp, None, None)?;
    column::<Int32Type>(&mut rg, &c.timestamp_type, None, None)?;
    column::<ByteArrayType>(&mut rg, &c.key, Some(&c.key_def), None)?;
    column::<ByteArrayType>(&mut rg, &c.value, Some(&c.value_def), None)?;
    column::<ByteArrayType>(
        &mut rg,
        &c.header_key,
        Some(&c.header_key_def),
        Some(&c.header_rep),
    )?;
    column::<ByteArrayType>(
        &mut rg,
        &c.header_value,
        Some(&c.header_value_def),
        Some(&c.header_value_rep),
    )?;
    column::<Int64Type>(&mut rg, &c.timestamp_delta, None, None)?;
    column::<Int32Type>(&mut rg, &c.record_attributes, None, None)?;
    column::<Int64Type>(&mut rg, &c.batch_base_offset, None, None)?;
    column::<Int32Type>(&mut rg, &c.batch_last_offset_delta, None, None)?;
    column::<Int64Type>(&mut rg, &c.batch_base_timestamp, None, None)?;
    column::<Int64Type>(&mut rg, &c.batch_max_timestamp, None, None)?;
    column::<Int32Type>(&mut rg, &c.batch_attributes, None, None)?;
    column::<Int32Type>(&mut rg, &c.partition_leader_epoch, None, None)?;
    column::<Int64Type>(&mut rg, &c.producer_id, None, None)?;
    column::<Int32Type>(&mut rg, &c.producer_epoch, None, None)?;
    column::<Int32Type>(&mut rg, &c.base_sequence, None, None)?;
    column::<BoolType>(&mut rg, &c.is_transactional, None, None)?;
    column::<BoolType>(&mut rg, &c.is_control, None, None)?;
    column::<Int32Type>(&mut rg, &vec![partition; c.offset.len()], None, None)?;
    if let Some(extra) = extra {
        extra.write(&mut rg)?;
    }
    rg.close()?;
    Ok(())
}

fn column<T: DataType>(
    rg: &mut SerializedRowGroupWriter<'_, Vec<u8>>,
    values: &[T::T],
    def: Option<&[i16]>,
    rep: Option<&[i16]>,
) -> Result<(), CompactedError> {
    let mut col = rg
        .next_column()?
        .ok_or_else(|| CompactedError::Parquet("schema has fewer columns than written".into()))?;
    col.typed::<T>().write_batch(values, def, rep)?;
    col.close()?;
    Ok(())
}
