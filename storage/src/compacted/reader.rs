//! Rebuilds Kafka record batches from a compacted file, one row group at a time: a read
//! fetches the footer once ([`Footer`]), then only the bytes of the row group holding the
//! wanted offset, and decodes that row group into a [`RebuiltGroup`] that later reads reuse.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parquet::data_type::{
    AsBytes, BoolType, ByteArray, ByteArrayType, DataType, Int32Type, Int64Type,
};
use parquet::file::properties::ReaderProperties;
use parquet::file::reader::{ChunkReader, Length, RowGroupReader};
use parquet::file::serialized_reader::SerializedRowGroupReader;

use super::columns::{Columns, HEADER_KEY_DEF, HEADER_VALUE_PRESENT_DEF};
use super::footer::{Footer, ParsedTail, RowGroupSpan};
use super::{CompactedError, ValueRestorer};
use crate::cache::Weigh;
use crate::index::{BatchMeta, ProducerMeta};
use record_batch::{encode_batch_into, BatchHeader, RecordRef};

/// How rebuilt batches are compressed, and how elided values are rebuilt.
#[derive(Clone, Debug)]
pub struct RebuildOptions {
    /// Re-compress with each batch's original codec; otherwise serve uncompressed batches
    /// (cheaper on CPU, more bytes on the wire).
    pub recompress: bool,
    /// Rebuilds the values of files that elided them; without one, such a file is refused.
    pub restorer: Option<Arc<dyn ValueRestorer>>,
}

impl Default for RebuildOptions {
    fn default() -> Self {
        RebuildOptions {
            recompress: true,
            restorer: None,
        }
    }
}

/// Whole batches, the first one holding the requested offset.
#[derive(Clone, Debug)]
pub struct RebuiltBatches {
    pub base_offset: u64,
    pub batches: Vec<BatchMeta>,
    pub bytes: Bytes,
}

impl RebuiltBatches {
    /// The offset after the last batch.
    pub fn end_offset(&self) -> u64 {
        self.base_offset + BatchMeta::records_in(&self.batches)
    }
}

/// Every batch of one row group, rebuilt, back to back.
#[derive(Debug)]
pub struct RebuiltGroup {
    bytes: Bytes,
    batches: Vec<BatchMeta>,
    /// Base offset of each batch, ascending.
    base_offsets: Vec<u64>,
    /// Each batch's attributes as stored (a batch rebuilt uncompressed says codec 0).
    attributes: Vec<i16>,
    /// Byte position of each batch in `bytes`, plus the end.
    positions: Vec<usize>,
}

impl RebuiltGroup {
    /// One past the last offset of the group (its first offset if it is empty).
    pub fn end_offset(&self) -> Option<u64> {
        let (base, batch) = self.base_offsets.last().zip(self.batches.last())?;
        Some(base + u64::from(batch.records))
    }

    /// The first offset of the group's first batch.
    pub fn base_offset(&self) -> Option<u64> {
        self.base_offsets.first().copied()
    }

    /// Batches from the one holding `offset` (or the first after it, across a gap left by key
    /// compaction) until about `max_bytes` (at least one) or the next gap, without copying;
    /// `None` if the group ends before `offset`.
    pub fn read_from(&self, offset: u64, max_bytes: usize) -> Option<RebuiltBatches> {
        let first = self
            .base_offsets
            .iter()
            .zip(&self.batches)
            .position(|(base, b)| base + u64::from(b.records) > offset)?;
        let mut last = first + 1;
        // A run ends at a gap a key compaction left: a chunk's batches tile its offsets.
        while last < self.batches.len()
            && self.base_offsets[last]
                == self.base_offsets[last - 1] + u64::from(self.batches[last - 1].records)
            && self.positions[last + 1] - self.positions[first] <= max_bytes
        {
            last += 1;
        }
        Some(RebuiltBatches {
            base_offset: self.base_offsets[first],
            batches: self.batches[first..last].to_vec(),
            bytes: self
                .bytes
                .slice(self.positions[first]..self.positions[last]),
        })
    }
}

impl RebuiltGroup {
    /// Every rebuilt batch of the row group with its base offset and its attributes as
    /// stored (the codec of a batch rebuilt uncompressed): key compaction reads whole groups.
    pub fn all_batches(&self) -> impl Iterator<Item = (u64, Bytes, i16)> + '_ {
        self.base_offsets
            .iter()
            .zip(self.positions.windows(2))
            .zip(&self.attributes)
            .map(|((base, span), attributes)| {
                (*base, self.bytes.slice(span[0]..span[1]), *attributes)
            })
    }
}

impl Weigh for RebuiltGroup {
    fn weight_bytes(&self) -> usize {
        self.bytes.len()
            + self.batches.len()
                * (std::mem::size_of::<BatchMeta>() + 2 * std::mem::size_of::<u64>())
    }
}

/// Bytes reserved up front for a row group's rebuilt batches at most; past it the buffer grows.
const REBUILT_RESERVE_BYTES_MAX: usize = 64 << 20;

/// Decodes row group `group` of a file from `bytes`, the file's bytes
/// `[span.byte_start, span.byte_end)` (see [`Footer::groups`]).
pub fn decode_group(
    footer: &Footer,
    group: usize,
    bytes: Bytes,
    options: &RebuildOptions,
) -> Result<RebuiltGroup, CompactedError> {
    let span = footer
        .groups
        .get(group)
        .ok_or_else(|| CompactedError::Parquet(format!("no row group {group}")))?;
    if bytes.len() as u64 != span.byte_end - span.byte_start {
        return Err(CompactedError::Parquet(format!(
            "row group {group} is {} bytes, {} given",
            span.byte_end - span.byte_start,
            bytes.len()
        )));
    }
    let range = RangeReader {
        start: span.byte_start,
        bytes,
        file_len: footer.file_len,
    };
    let reader = SerializedRowGroupReader::new(
        Arc::new(range),
        footer.metadata.row_group(group),
        footer.metadata.page_index_for_row_group(group),
        Arc::new(ReaderProperties::builder().build()),
    )?;
    let mut columns = read_group(&reader, span.rows)?;
    if footer.values_elided() {
        let restorer = options.restorer.as_ref().ok_or_else(|| {
            CompactedError::Parquet("values are elided and no restorer was given".into())
        })?;
        restorer.restore(
            footer.file_metadata(),
            &reader,
            &columns.value_def,
            &mut columns.value,
        )?;
    }
    // Rebuilt batches are about the row group's uncompressed size: one allocation, no regrowth.
    let reserve = footer
        .group_uncompressed_bytes(group)
        .min(REBUILT_RESERVE_BYTES_MAX);
    let mut out = BytesMut::with_capacity(reserve);
    let mut rebuilt = RebuiltGroup {
        bytes: Bytes::new(),
        batches: Vec::new(),
        base_offsets: Vec::new(),
        positions: vec![0],
        attributes: Vec::new(),
    };
    for (header, records) in rebuild(&columns)? {
        let codec = if options.recompress {
            header.codec()
        } else {
            0
        };
        let len = encode_batch_into(&mut out, &header, &records, codec)?;
        let base_offset = u64::try_from(header.base_offset)
            .map_err(|_| CompactedError::Parquet("negative batch offset".into()))?;
        if rebuilt.end_offset().is_some_and(|end| base_offset < end) {
            return Err(CompactedError::Parquet(format!(
                "batch at {base_offset} overlaps the one before it"
            )));
        }
        let records = u32::try_from(header.last_offset_delta)
            .ok()
            .and_then(|delta| delta.checked_add(1))
            .ok_or_else(|| {
                CompactedError::Parquet(format!(
                    "batch at {base_offset} has last offset delta {}",
                    header.last_offset_delta
                ))
            })?;
        rebuilt.batches.push(BatchMeta {
            // At most i32::MAX + 12: `encode_batch_into` refuses a longer batch.
            len: u32::try_from(len).unwrap_or(u32::MAX),
            records,
            max_timestamp: header.max_timestamp,
            producer: (header.producer_id >= 0).then_some(ProducerMeta {
                id: header.producer_id,
                epoch: header.producer_epoch,
                base_sequence: header.base_sequence,
            }),
        });
        rebuilt.base_offsets.push(base_offset);
        rebuilt.positions.push(out.len());
        rebuilt.attributes.push(header.attributes);
    }
    rebuilt.bytes = out.freeze();
    Ok(rebuilt)
}

/// The bytes of a row group in a whole file in memory.
fn group_bytes(file: &Bytes, span: &RowGroupSpan) -> Result<Bytes, CompactedError> {
    match (
        usize::try_from(span.byte_start),
        usize::try_from(span.byte_end),
    ) {
        (Ok(start), Ok(end)) if start <= end && end <= file.len() => Ok(file.slice(start..end)),
        _ => Err(CompactedError::Parquet(format!(
            "row group at bytes {}..{} of a file of {}",
            span.byte_start,
            span.byte_end,
            file.len()
        ))),
    }
}

/// Reads the batches holding `from_offset` and after, until about `max_bytes` (at least one
/// batch), from a whole file in memory. Row groups that end before `from_offset` are skipped
/// by their offset statistics.
pub fn read_batches(
    file: Bytes,
    from_offset: u64,
    max_bytes: usize,
    options: &RebuildOptions,
) -> Result<RebuiltBatches, CompactedError> {
    let footer = match Footer::parse(&file, file.len() as u64)? {
        ParsedTail::Footer(footer) => footer,
        ParsedTail::NeedTailBytes(n) => {
            return Err(CompactedError::Parquet(format!(
                "footer of {n} bytes is longer than the file"
            )))
        }
    };
    let mut out = BytesMut::new();
    let mut batches = Vec::new();
    let mut base_offset = None;
    let mut next = from_offset;
    let first = footer
        .first_group_from(from_offset)
        .unwrap_or(footer.groups.len());
    for group in first..footer.groups.len() {
        let bytes = group_bytes(&file, &footer.groups[group])?;
        let rebuilt = decode_group(&footer, group, bytes, options)?;
        let Some(read) = rebuilt.read_from(next, max_bytes.saturating_sub(out.len())) else {
            continue;
        };
        if base_offset.is_some() && read.base_offset != next {
            break; // a gap: the answer is one contiguous run
        }
        base_offset.get_or_insert(read.base_offset);
        out.extend_from_slice(&read.bytes);
        batches.extend_from_slice(&read.batches);
        let end = read.end_offset();
        if out.len() >= max_bytes || rebuilt.end_offset() != Some(end) {
            break;
        }
        next = end;
    }
    let base_offset = base_offset.ok_or_else(|| {
        CompactedError::Parquet(format!(
            "file holds no batch at or after offset {from_offset}"
        ))
    })?;
    Ok(RebuiltBatches {
        base_offset,
        batches,
        bytes: out.freeze(),
    })
}

/// The bytes of one row group, addressed by file position, for the row group reader.
struct RangeReader {
    start: u64,
    bytes: Bytes,
    file_len: u64,
}

impl RangeReader {
    fn range(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let from = start
            .checked_sub(self.start)
            .and_then(|s| usize::try_from(s).ok())
            .filter(|s| s.checked_add(length).is_some_and(|e| e <= self.bytes.len()))
            .ok_or_else(|| {
                parquet::errors::ParquetError::General(format!(
                    "read of {length} bytes at {start} outside the fetched row group"
                ))
            })?;
        Ok(self.bytes.slice(from..from + length))
    }
}

impl Length for RangeReader {
    fn len(&self) -> u64 {
        self.file_len
    }
}

impl ChunkReader for RangeReader {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let end = self.start + self.bytes.len() as u64;
        let length = usize::try_from(end.saturating_sub(start)).unwrap_or(0);
        Ok(bytes::Buf::reader(self.range(start, length)?))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.range(start, length)
    }
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

/// A column stored as INT32 for a narrower Kafka field: a value out of the field's range is not
/// one we wrote.
fn narrow<T: TryFrom<i32>>(value: i32, what: &str) -> Result<T, CompactedError> {
    T::try_from(value).map_err(|_| CompactedError::Parquet(format!("{what} {value} out of range")))
}

fn short(what: &str) -> CompactedError {
    CompactedError::Parquet(format!("column {what} is shorter than the row count"))
}

/// Groups rows back into batches, in file order, borrowing every field from the columns.
#[allow(clippy::type_complexity)]
fn rebuild(c: &Columns) -> Result<Vec<(BatchHeader, Vec<RecordRef<'_>>)>, CompactedError> {
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
    let mut out: Vec<(BatchHeader, Vec<RecordRef<'_>>)> = Vec::new();
    for row in 0..rows {
        let batch_base = c.batch_base_offset[row];
        let header = BatchHeader {
            base_offset: batch_base,
            partition_leader_epoch: c.partition_leader_epoch[row],
            attributes: narrow(c.batch_attributes[row], "batch attributes")?,
            last_offset_delta: c.batch_last_offset_delta[row],
            base_timestamp: c.batch_base_timestamp[row],
            max_timestamp: c.batch_max_timestamp[row],
            producer_id: c.producer_id[row],
            producer_epoch: narrow(c.producer_epoch[row], "producer epoch")?,
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
                    Some(v.as_bytes())
                } else {
                    None
                };
                headers.push((k.as_bytes(), v));
            }
            level += 1;
        }
        let record = RecordRef {
            attributes: narrow(c.record_attributes[row], "record attributes")?,
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

fn take_nullable<'a>(
    values: &'a [ByteArray],
    def: &i16,
    next: &mut usize,
    what: &str,
) -> Result<Option<&'a [u8]>, CompactedError> {
    if *def == 0 {
        return Ok(None);
    }
    let v = values.get(*next).ok_or_else(|| short(what))?;
    *next += 1;
    Ok(Some(v.as_bytes()))
}
