//! What a broker may change in a magic-2 batch before it is appended, as Kafka's
//! `LogValidator` does: re-encode its records with another codec, stamp the log append time
//! into its header, and read every record's timestamp for the topic's bounds. Offsets of the
//! header (big-endian): `base_offset @0, batch_length i32 @8, crc u32 @17, attributes i16 @21,
//! base_timestamp i64 @27, max_timestamp i64 @35, records_count i32 @57, records @61`; the
//! CRC32C covers `@21..end`.

use bytes::{Buf, BufMut, BytesMut};

use super::codec::{compress, decompress};
use super::RecordBatchError;

const LENGTH_OFFSET: usize = 8;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;
const BASE_TIMESTAMP_OFFSET: usize = 27;
const MAX_TIMESTAMP_OFFSET: usize = 35;
const RECORDS_COUNT_OFFSET: usize = 57;
const HEADER_BYTES: usize = 61;
const CODEC_MASK: i16 = 0x07;
/// Attribute bit 3: the timestamps are the broker's append time.
pub const LOG_APPEND_TIME_FLAG: i16 = 0x08;

/// One record's place in its batch and its timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordTime {
    pub offset_delta: i32,
    pub timestamp: i64,
}

fn header(batch: &[u8]) -> Result<&[u8], RecordBatchError> {
    if batch.len() < HEADER_BYTES {
        return Err(RecordBatchError::Corrupt("truncated batch header".into()));
    }
    Ok(&batch[..HEADER_BYTES])
}

fn attributes(batch: &[u8]) -> i16 {
    i16::from_be_bytes([batch[ATTRIBUTES_OFFSET], batch[ATTRIBUTES_OFFSET + 1]])
}

fn be_i64(batch: &[u8], at: usize) -> i64 {
    (&batch[at..at + 8]).get_i64()
}

/// Rewrites the CRC after a change to the bytes it covers.
fn fix_crc(batch: &mut [u8]) {
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..]);
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// The batch with its records re-encoded by `codec` at `level`: the same records and header
/// fields but for the codec bits, the length and the CRC. Decompressing more than `limit`
/// bytes fails.
pub fn reencode(
    batch: &[u8],
    codec: i16,
    level: Option<i32>,
    limit: usize,
) -> Result<Vec<u8>, RecordBatchError> {
    let head = header(batch)?;
    let attributes = attributes(batch);
    let plain = decompress(attributes & CODEC_MASK, &batch[HEADER_BYTES..], limit)?;
    let mut out = BytesMut::with_capacity(HEADER_BYTES + plain.len() / 2);
    out.put_slice(head);
    out[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2]
        .copy_from_slice(&((attributes & !CODEC_MASK) | (codec & CODEC_MASK)).to_be_bytes());
    compress(codec, level, &plain, &mut out)?;
    let length = i32::try_from(out.len() - 12).map_err(|_| {
        RecordBatchError::TooLarge(format!("re-encoded batch of {} bytes", out.len()))
    })?;
    out[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    fix_crc(&mut out);
    Ok(out.to_vec())
}

/// Stamps `now_ms` as the batch's max timestamp and marks its timestamps as log append time,
/// then fixes the CRC. The base timestamp and the records stay as produced: consumers read a
/// log-append-time batch's timestamp from its header, and Kafka does not touch them either.
pub fn stamp_log_append_time(batch: &mut [u8], now_ms: i64) -> Result<(), RecordBatchError> {
    header(batch)?;
    let attributes = attributes(batch) | LOG_APPEND_TIME_FLAG;
    batch[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    batch[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&now_ms.to_be_bytes());
    fix_crc(batch);
    Ok(())
}

/// Every record's offset delta and timestamp (base timestamp plus its delta; the header's max
/// timestamp in a log-append-time batch), decompressing at most `limit` bytes. Checks that the
/// records section holds exactly the records the header counts.
pub fn record_timestamps(batch: &[u8], limit: usize) -> Result<Vec<RecordTime>, RecordBatchError> {
    header(batch)?;
    let attributes = attributes(batch);
    let base = be_i64(batch, BASE_TIMESTAMP_OFFSET);
    let max = be_i64(batch, MAX_TIMESTAMP_OFFSET);
    let count = (&batch[RECORDS_COUNT_OFFSET..]).get_i32();
    let count = usize::try_from(count).map_err(|_| corrupt("negative record count"))?;
    let plain;
    let mut records: &[u8] = match attributes & CODEC_MASK {
        0 => &batch[HEADER_BYTES..],
        codec => {
            plain = decompress(codec, &batch[HEADER_BYTES..], limit)?;
            &plain
        }
    };
    let mut out = Vec::with_capacity(count.min(records.len()));
    for _ in 0..count {
        let len = usize::try_from(varint(&mut records)?)
            .map_err(|_| corrupt("negative record length"))?;
        if len > records.len() {
            return Err(corrupt("record longer than its batch"));
        }
        let (mut record, rest) = records.split_at(len);
        records = rest;
        if record.is_empty() {
            return Err(corrupt("empty record"));
        }
        record.advance(1); // attributes
        let delta = varint(&mut record)?;
        let offset_delta = i32::try_from(varint(&mut record)?)
            .map_err(|_| corrupt("offset delta out of range"))?;
        let timestamp = if attributes & LOG_APPEND_TIME_FLAG != 0 {
            max
        } else {
            base.wrapping_add(delta)
        };
        out.push(RecordTime {
            offset_delta,
            timestamp,
        });
    }
    if !records.is_empty() {
        return Err(corrupt("bytes left after the last record"));
    }
    Ok(out)
}

fn corrupt(what: &str) -> RecordBatchError {
    RecordBatchError::Corrupt(what.to_string())
}

/// A zigzag varint (Kafka's varint and varlong share the encoding).
fn varint(buf: &mut &[u8]) -> Result<i64, RecordBatchError> {
    let mut raw = 0u64;
    for shift in (0..70).step_by(7) {
        let Some((&b, rest)) = buf.split_first() else {
            return Err(corrupt("truncated varint"));
        };
        *buf = rest;
        raw |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64));
        }
    }
    Err(corrupt("varint longer than 10 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compacted::batch::{decode_batch, encode_batch};
    use crate::compacted::{BatchHeader, RecordRow};
    use bytes::Bytes;

    fn batch(codec: i16) -> Vec<u8> {
        let header = BatchHeader {
            base_offset: 0,
            partition_leader_epoch: -1,
            attributes: codec,
            last_offset_delta: 2,
            base_timestamp: 1_000,
            max_timestamp: 1_005,
            producer_id: 7,
            producer_epoch: 1,
            base_sequence: 4,
        };
        let records: Vec<RecordRow> = [0i64, 5, -3]
            .iter()
            .enumerate()
            .map(|(i, delta)| RecordRow {
                attributes: 0,
                timestamp_delta: *delta,
                offset_delta: i as i32,
                key: Some(Bytes::from(format!("k{i}"))),
                value: Some(Bytes::from(vec![b'v'; 300])),
                headers: vec![(Bytes::from_static(b"h"), None)],
            })
            .collect();
        encode_batch(&header, &records, codec).unwrap().to_vec()
    }

    #[test]
    fn reencoding_keeps_every_record_and_header_field() {
        for from in 0..=4 {
            for to in 0..=4 {
                let original = decode_batch(&Bytes::from(batch(from))).unwrap();
                let out = reencode(&batch(from), to, None, 1 << 20).unwrap();
                let decoded = decode_batch(&Bytes::from(out)).unwrap();
                assert_eq!(decoded.header.codec(), to, "{from}->{to}");
                assert_eq!(decoded.records, original.records, "{from}->{to}");
                let mut expected = original.header;
                expected.attributes = (expected.attributes & !CODEC_MASK) | to;
                assert_eq!(decoded.header, expected, "{from}->{to}");
            }
        }
    }

    #[test]
    fn log_append_time_goes_into_the_header_with_a_valid_crc() {
        let mut b = batch(3);
        stamp_log_append_time(&mut b, 99_000).unwrap();
        let decoded = decode_batch(&Bytes::from(b.clone())).unwrap();
        assert!(decoded.header.is_log_append_time());
        assert_eq!(decoded.header.max_timestamp, 99_000);
        assert_eq!(decoded.header.base_timestamp, 1_000);
        let times = record_timestamps(&b, 1 << 20).unwrap();
        assert!(times.iter().all(|t| t.timestamp == 99_000));
    }

    #[test]
    fn record_timestamps_are_read_through_any_codec() {
        for codec in 0..=4 {
            let times = record_timestamps(&batch(codec), 1 << 20).unwrap();
            let ts: Vec<(i32, i64)> = times
                .iter()
                .map(|t| (t.offset_delta, t.timestamp))
                .collect();
            assert_eq!(ts, [(0, 1_000), (1, 1_005), (2, 997)], "{codec}");
        }
        let mut short = batch(0);
        short.truncate(short.len() - 1);
        assert!(record_timestamps(&short, 1 << 20).is_err());
    }
}
