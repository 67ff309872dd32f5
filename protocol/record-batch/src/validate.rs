//! What a broker checks in a producer's batch before it assigns offsets, as Kafka 4 does
//! (`ProduceRequest.validateRecords`, `UnifiedLog.analyzeAndValidateRecords`,
//! `LogValidator`): exactly one magic-2 batch per partition, its header consistent, its CRC,
//! and every record read (decompressed through a bounded stream) and counted against the
//! header. One pass, no copy of the records: uncompressed records are read where they lie,
//! compressed ones through one buffer whatever the batch's size.
//!
//! Errors are kept apart as Kafka answers them: [`RecordBatchError::Corrupt`] is
//! CORRUPT_MESSAGE, [`RecordBatchError::Invalid`] INVALID_RECORD, [`RecordBatchError::TooLarge`]
//! MESSAGE_TOO_LARGE, [`RecordBatchError::UnsupportedCodec`] UNSUPPORTED_COMPRESSION_TYPE.

use crate::batch::{no_records_left, RECORDS_PER_BATCH_MAX};
use crate::codec;
use crate::header::{crcs, records_count, BatchHeader, HEADER_BYTES, LENGTH_OFFSET, MAGIC_OFFSET};
use crate::input::{Input, Skipping, SliceInput, Stream};
use crate::record;
use crate::RecordBatchError;

/// Kafka's smallest legacy message, below which a length field is corrupt whatever the magic.
const LEGACY_RECORD_OVERHEAD_BYTES: i32 = 14;
const ZSTD: i16 = 4;

fn invalid(what: impl Into<String>) -> RecordBatchError {
    RecordBatchError::Invalid(what.into())
}

/// One record as validation sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordInfo {
    /// Its position in the batch.
    pub index: i32,
    pub offset_delta: i32,
    /// The timestamp consumers will see ([`BatchHeader::record_timestamp`]).
    pub timestamp: i64,
    pub has_key: bool,
}

/// A batch that passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validated {
    pub header: BatchHeader,
    pub records_count: i32,
    pub len_bytes: usize,
}

/// What a produced batch may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The topic's `max.message.bytes`: the batch as sent.
    pub batch_bytes_max: usize,
    /// Its records once decompressed.
    pub decompressed_bytes_max: usize,
}

/// The length of the batch at the start of `rest` by Kafka's batch iterator
/// (`ByteBufferLogInputStream`): `None` when fewer bytes than a whole batch remain (Kafka
/// ignores such a tail), an error when the length or magic cannot be a batch's.
fn next_batch_len(rest: &[u8]) -> Result<Option<usize>, RecordBatchError> {
    let Some(length) = rest.get(LENGTH_OFFSET..LENGTH_OFFSET + 4) else {
        return Ok(None);
    };
    let length = i32::from_be_bytes([length[0], length[1], length[2], length[3]]);
    if length < LEGACY_RECORD_OVERHEAD_BYTES {
        return Err(RecordBatchError::Corrupt(format!(
            "record size {length} is less than the minimum record overhead"
        )));
    }
    let Some(&magic) = rest.get(MAGIC_OFFSET) else {
        return Ok(None);
    };
    let magic = i8::from_be_bytes([magic]);
    if !(0..=2).contains(&magic) {
        return Err(RecordBatchError::Corrupt(format!(
            "invalid magic found in record: {magic}"
        )));
    }
    // Not negative (checked above), so the conversion cannot fail.
    let len = usize::try_from(length)
        .unwrap_or(usize::MAX)
        .saturating_add(LENGTH_OFFSET + 4);
    Ok((rest.len() >= len).then_some(len))
}

/// The one batch of a partition's records in a Produce request (v3+): at least one, magic 2,
/// no second one; zstd only from Produce v7. Bytes after the batch too few to be another are
/// dropped, as Kafka drops them.
pub fn single_batch(records: &[u8], zstd_allowed: bool) -> Result<&[u8], RecordBatchError> {
    let len = next_batch_len(records)?
        .ok_or_else(|| invalid("a produce request must have one record batch per partition"))?;
    let batch = &records[..len];
    if batch[MAGIC_OFFSET] != 2 {
        return Err(invalid(
            "produce requests may only carry magic 2 record batches",
        ));
    }
    if !zstd_allowed && batch.len() > 22 && i16::from_be_bytes([batch[21], batch[22]]) & 7 == ZSTD {
        return Err(RecordBatchError::UnsupportedCodec(
            "zstd needs produce request version 7 or later".into(),
        ));
    }
    if next_batch_len(&records[len..])?.is_some() {
        return Err(invalid(
            "a produce request may carry exactly one record batch per partition",
        ));
    }
    Ok(batch)
}

/// Checks a producer's batch and reads every record, calling `visit` for each.
pub fn validate_produced(
    batch: &[u8],
    limits: &Limits,
    visit: impl FnMut(&RecordInfo),
) -> Result<Validated, RecordBatchError> {
    if batch.len() < HEADER_BYTES {
        return Err(RecordBatchError::Corrupt(format!(
            "batch of {} bytes is smaller than the minimum allowed overhead {HEADER_BYTES}",
            batch.len()
        )));
    }
    let header = BatchHeader::parse(batch)?;
    if header.base_offset != 0 {
        return Err(invalid(format!(
            "the base offset of a produced batch should be 0, but it is {}",
            header.base_offset
        )));
    }
    if batch.len() > limits.batch_bytes_max {
        return Err(RecordBatchError::TooLarge(format!(
            "batch of {} bytes exceeds max.message.bytes {}",
            batch.len(),
            limits.batch_bytes_max
        )));
    }
    let count = check_frame(batch, &header)?;
    if header.is_control() {
        return Err(invalid("clients may not write control records"));
    }
    if header.has_producer_id() && header.base_sequence < 0 {
        return Err(invalid(format!(
            "invalid sequence number {} in a batch with producer id {}",
            header.base_sequence, header.producer_id
        )));
    }
    // Records are read before the count is held against the cap: a count the records do not
    // back is INVALID_RECORD, as Kafka finds it.
    for_each_record(
        batch,
        &header,
        limits.decompressed_bytes_max,
        Check::Produced,
        visit,
    )?;
    // The count is positive (`check_frame`), so the conversion cannot fail.
    if usize::try_from(count).map_or(true, |count| count > RECORDS_PER_BATCH_MAX) {
        return Err(RecordBatchError::TooLarge(format!(
            "{count} records in one batch, more than {RECORDS_PER_BATCH_MAX}"
        )));
    }
    Ok(Validated {
        header,
        records_count: count,
        len_bytes: batch.len(),
    })
}

/// Magic, CRC, and a record count that agrees with the last offset delta; the count.
fn check_frame(batch: &[u8], header: &BatchHeader) -> Result<i32, RecordBatchError> {
    let count = check_stored_frame(batch, header)?;
    if i64::from(header.last_offset_delta) + 1 != i64::from(count) {
        return Err(invalid(format!(
            "last offset delta {} disagrees with the record count {count}",
            header.last_offset_delta
        )));
    }
    Ok(count)
}

/// [`check_frame`] for a batch the log holds: after key compaction it may hold fewer records
/// than its offset span (Kafka's cleaner keeps the last offset delta), never more.
fn check_stored_frame(batch: &[u8], header: &BatchHeader) -> Result<i32, RecordBatchError> {
    if batch.get(MAGIC_OFFSET) != Some(&2) {
        return Err(RecordBatchError::Corrupt(
            "only magic 2 batches are supported".into(),
        ));
    }
    let (stored, computed) = crcs(batch)?;
    if stored != computed {
        return Err(RecordBatchError::Corrupt(format!(
            "batch fails its crc: stored {stored:#010x}, computed {computed:#010x}"
        )));
    }
    let count = records_count(batch)?;
    if header.last_offset_delta < 0 {
        return Err(invalid(format!(
            "invalid last offset delta {}",
            header.last_offset_delta
        )));
    }
    if count <= 0 {
        return Err(invalid(format!("invalid record count {count}")));
    }
    if i64::from(header.last_offset_delta) + 1 < i64::from(count) {
        return Err(invalid(format!(
            "last offset delta {} is below the record count {count}",
            header.last_offset_delta
        )));
    }
    Ok(count)
}

/// How strictly records are read: a produced batch must be one every consumer reads; a stored
/// one is read as Kafka reads it (key compaction leaves gaps in offset deltas, and an older
/// build stored what it did not refuse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Produced,
    Stored,
}

/// Checks a stored batch's frame and reads every record, decompressing at most `limit` bytes.
pub fn scan_stored(
    batch: &[u8],
    limit: usize,
    visit: impl FnMut(&RecordInfo),
) -> Result<(), RecordBatchError> {
    let header = BatchHeader::parse(batch)?;
    check_stored_frame(batch, &header)?;
    for_each_record(batch, &header, limit, Check::Stored, visit)
}

/// Reads all `records_count` records of a batch whose frame was checked, and no more.
fn for_each_record(
    batch: &[u8],
    header: &BatchHeader,
    limit: usize,
    check: Check,
    visit: impl FnMut(&RecordInfo),
) -> Result<(), RecordBatchError> {
    let count = records_count(batch)?;
    let records = &batch[HEADER_BYTES..];
    match header.codec() {
        0 => scan(&mut SliceInput(records), header, count, check, visit),
        codec => {
            let stream = Stream::new(codec::reader(codec, records, limit)?);
            scan(&mut Skipping(stream), header, count, check, visit)
        }
    }
}

fn scan<I: Input>(
    input: &mut I,
    header: &BatchHeader,
    count: i32,
    check: Check,
    mut visit: impl FnMut(&RecordInfo),
) -> Result<(), RecordBatchError> {
    let mut headers = Vec::new();
    for index in 0..count {
        let fields = record::parse(input, &mut headers)?;
        if check == Check::Produced {
            consumer_readable(index, &fields)?;
        }
        visit(&RecordInfo {
            index,
            offset_delta: fields.offset_delta,
            timestamp: header.record_timestamp(fields.timestamp_delta),
            has_key: fields.key.is_some(),
        });
    }
    no_records_left(input)?;
    Ok(())
}

/// What Kafka accepts but a consumer cannot read (librdkafka stops at the record, and a
/// consumer never gets past it): a negative length other than -1, and an offset delta other
/// than the record's index (offsets here come from the index, which counts records).
fn consumer_readable<F>(index: i32, fields: &record::Fields<F>) -> Result<(), RecordBatchError> {
    let at = |message: String| RecordBatchError::InvalidRecord { index, message };
    if let Some((what, len)) = fields.bad_length {
        return Err(at(format!("invalid {what} length {len}")));
    }
    if fields.offset_delta != index {
        return Err(at(format!(
            "offset delta {} of the record at index {index} is not {index}",
            fields.offset_delta
        )));
    }
    Ok(())
}
