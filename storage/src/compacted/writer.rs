//! Writes one compacted file from a stream range's record batches.

use bytes::Bytes;
use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};

use super::batch::{decode_batch, split_batches};
use super::columns::{self, Columns, HEADERS_EMPTY_DEF, HEADER_KEY_DEF, HEADER_VALUE_PRESENT_DEF};
use super::{CompactedError, FORMAT_VERSION, FORMAT_VERSION_KEY};
use crate::index::{BatchMeta, ProducerMeta};

/// How row groups are cut. A row group always ends on a batch boundary, so that the reader can
/// rebuild any batch from one row group.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    pub row_group_rows_target: usize,
    pub row_group_bytes_target: usize,
}

impl Default for WriterOptions {
    /// Row groups of ~2 MiB: a read at any offset fetches and decodes about that much (one
    /// ranged GET, ~512 per GiB read), while the footer of a 128 MiB file stays ~64 row groups.
    fn default() -> Self {
        WriterOptions {
            row_group_rows_target: 4_096,
            row_group_bytes_target: 2 << 20,
        }
    }
}

/// A written file and what its index entry must say.
#[derive(Debug)]
pub struct WrittenFile {
    pub bytes: Bytes,
    /// One per Kafka batch, lengths as the batches were read from the WAL.
    pub batches: Vec<BatchMeta>,
    pub records: u64,
    pub min_timestamp: i64,
    pub max_timestamp: i64,
}

/// Writes batches whose first offsets are given (the WAL keeps the producer's base offset; the
/// true one comes from the index). Every batch is decoded and CRC-checked on the way.
pub fn write_file(
    stream: &str,
    batches: &[(u64, Bytes)],
    options: &WriterOptions,
) -> Result<WrittenFile, CompactedError> {
    let mut metadata = vec![KeyValue::new(
        FORMAT_VERSION_KEY.into(),
        FORMAT_VERSION.to_string(),
    )];
    metadata.push(KeyValue::new("kafka.stream".into(), stream.to_string()));
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_key_value_metadata(Some(metadata))
        .build();
    let mut writer =
        SerializedFileWriter::new(Vec::new(), columns::schema()?, std::sync::Arc::new(props))?;
    let mut metas = Vec::with_capacity(batches.len());
    let (mut min_ts, mut max_ts, mut records) = (i64::MAX, i64::MIN, 0u64);
    let mut group = Columns::default();
    let mut group_bytes = 0usize;
    for (base_offset, payload) in batches {
        let mut next_offset = *base_offset;
        for bytes in split_batches(payload.clone())? {
            let decoded = decode_batch(&bytes)?;
            let h = decoded.header;
            let count = u64::from(h.last_offset_delta as u32) + 1;
            metas.push(BatchMeta {
                len: bytes.len() as u32,
                records: count as u32,
                max_timestamp: h.max_timestamp,
                producer: (h.producer_id >= 0).then_some(ProducerMeta {
                    id: h.producer_id,
                    epoch: h.producer_epoch,
                    base_sequence: h.base_sequence,
                }),
            });
            min_ts = min_ts.min(h.base_timestamp);
            max_ts = max_ts.max(h.max_timestamp);
            records += count;
            group_bytes += bytes.len();
            push_batch(&mut group, next_offset, &decoded);
            next_offset += count;
            if group.offset.len() >= options.row_group_rows_target
                || group_bytes >= options.row_group_bytes_target
            {
                write_group(&mut writer, &std::mem::take(&mut group))?;
                group_bytes = 0;
            }
        }
    }
    if !group.offset.is_empty() {
        write_group(&mut writer, &group)?;
    }
    let bytes = Bytes::from(writer.into_inner()?);
    Ok(WrittenFile {
        bytes,
        batches: metas,
        records,
        min_timestamp: min_ts,
        max_timestamp: max_ts,
    })
}

fn push_batch(c: &mut Columns, batch_base_offset: u64, batch: &super::DecodedBatch) {
    let h = &batch.header;
    let log_append = h.is_log_append_time();
    for r in &batch.records {
        c.offset
            .push(batch_base_offset as i64 + i64::from(r.offset_delta));
        // Consumers see the batch's max timestamp for every record under LogAppendTime.
        c.timestamp.push(if log_append {
            h.max_timestamp
        } else {
            h.base_timestamp.wrapping_add(r.timestamp_delta)
        });
        c.timestamp_type.push(i32::from(log_append));
        push_nullable(&mut c.key, &mut c.key_def, r.key.as_ref());
        push_nullable(&mut c.value, &mut c.value_def, r.value.as_ref());
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
        c.batch_base_offset.push(batch_base_offset as i64);
        c.batch_last_offset_delta.push(h.last_offset_delta);
        c.batch_base_timestamp.push(h.base_timestamp);
        c.batch_max_timestamp.push(h.max_timestamp);
        c.batch_attributes.push(i32::from(h.attributes));
        c.partition_leader_epoch.push(h.partition_leader_epoch);
        c.producer_id.push(h.producer_id);
        c.producer_epoch.push(i32::from(h.producer_epoch));
        c.base_sequence.push(h.base_sequence);
        c.is_transactional.push(h.attributes & 0x10 != 0);
        c.is_control.push(h.attributes & 0x20 != 0);
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

fn write_group(
    writer: &mut SerializedFileWriter<Vec<u8>>,
    c: &Columns,
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
