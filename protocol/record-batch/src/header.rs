//! The header of a magic-2 record batch, the one place its layout is written down.
//!
//! Layout (big-endian), offsets from the start of the batch:
//!
//! | field                  | type | at |
//! |------------------------|------|----|
//! | base_offset            | i64  |  0 |
//! | batch_length           | i32  |  8 |
//! | partition_leader_epoch | i32  | 12 |
//! | magic                  | i8   | 16 |
//! | crc                    | u32  | 17 |
//! | attributes             | i16  | 21 |
//! | last_offset_delta      | i32  | 23 |
//! | base_timestamp         | i64  | 27 |
//! | max_timestamp          | i64  | 35 |
//! | producer_id            | i64  | 43 |
//! | producer_epoch         | i16  | 51 |
//! | base_sequence          | i32  | 53 |
//! | records_count          | i32  | 57 |
//! | records                | ...  | 61 |
//!
//! `batch_length` counts the bytes after itself. The CRC32C covers `attributes..end`, so the
//! base offset, the length and the leader epoch can change without touching it. Attributes:
//! bits 0-2 the codec, bit 3 the timestamp type (log append time), bit 4 transactional, bit 5
//! control.

use bytes::{BufMut, BytesMut};

use crate::RecordBatchError;

/// Bytes before the records.
pub const HEADER_BYTES: usize = 61;
/// `base_offset` and `batch_length`, which precede what `batch_length` counts.
pub const LOG_OVERHEAD_BYTES: usize = 12;
pub const LENGTH_OFFSET: usize = 8;
pub const MAGIC_OFFSET: usize = 16;
pub const CRC_OFFSET: usize = 17;
pub const ATTRIBUTES_OFFSET: usize = 21;
pub const MAX_TIMESTAMP_OFFSET: usize = 35;
pub const RECORDS_COUNT_OFFSET: usize = 57;

/// Attribute bits 0-2: none, gzip, snappy, lz4, zstd.
pub const CODEC_MASK: i16 = 0x07;
/// Attribute bit 3: the timestamps are the broker's append time.
pub const LOG_APPEND_TIME_FLAG: i16 = 0x08;
pub const TRANSACTIONAL_FLAG: i16 = 0x10;
pub const CONTROL_FLAG: i16 = 0x20;
/// Attribute bit 6 (KIP-534): the base timestamp is the delete horizon of the batch's
/// tombstones, set by the log cleaner the first time it kept them.
pub const DELETE_HORIZON_FLAG: i16 = 0x40;

/// The batch-level fields, exactly as the producer (or broker) wrote them. The length, magic,
/// CRC and record count are derived when a batch is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
}

impl BatchHeader {
    /// Reads the header fields of `batch`; checks only that the header is all there.
    pub fn parse(batch: &[u8]) -> Result<BatchHeader, RecordBatchError> {
        let h = header_bytes(batch)?;
        Ok(BatchHeader {
            base_offset: be_i64(h, 0),
            partition_leader_epoch: be_i32(h, 12),
            attributes: be_i16(h, ATTRIBUTES_OFFSET),
            last_offset_delta: be_i32(h, 23),
            base_timestamp: be_i64(h, 27),
            max_timestamp: be_i64(h, MAX_TIMESTAMP_OFFSET),
            producer_id: be_i64(h, 43),
            producer_epoch: be_i16(h, 51),
            base_sequence: be_i32(h, 53),
        })
    }

    pub fn codec(&self) -> i16 {
        self.attributes & CODEC_MASK
    }
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & LOG_APPEND_TIME_FLAG != 0
    }
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_FLAG != 0
    }
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_FLAG != 0
    }
    /// When the log cleaner may remove the batch's tombstones, if it stamped a time.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.attributes & DELETE_HORIZON_FLAG != 0).then_some(self.base_timestamp)
    }
    /// Whether the batch comes from an idempotent (or transactional) producer.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }

    /// The timestamp consumers see for a record: the header's max timestamp in a
    /// log-append-time batch (its records keep the producer's, which consumers ignore), else
    /// the base timestamp plus the record's delta.
    pub fn record_timestamp(&self, timestamp_delta: i64) -> i64 {
        if self.is_log_append_time() {
            self.max_timestamp
        } else {
            self.base_timestamp.wrapping_add(timestamp_delta)
        }
    }

    /// Appends the header with `codec` in place of the header's codec, a zero length and CRC
    /// (see [`finish_batch`]).
    pub(crate) fn write(&self, out: &mut BytesMut, codec: i16, records_count: i32) {
        out.reserve(HEADER_BYTES);
        out.put_i64(self.base_offset);
        out.put_i32(0);
        out.put_i32(self.partition_leader_epoch);
        out.put_i8(2);
        out.put_u32(0);
        out.put_i16((self.attributes & !CODEC_MASK) | (codec & CODEC_MASK));
        out.put_i32(self.last_offset_delta);
        out.put_i64(self.base_timestamp);
        out.put_i64(self.max_timestamp);
        out.put_i64(self.producer_id);
        out.put_i16(self.producer_epoch);
        out.put_i32(self.base_sequence);
        out.put_i32(records_count);
    }
}

fn header_bytes(batch: &[u8]) -> Result<&[u8], RecordBatchError> {
    batch
        .get(..HEADER_BYTES)
        .ok_or_else(|| RecordBatchError::Corrupt(format!("batch of {} bytes", batch.len())))
}

/// The records count of a batch whose header is all there.
pub fn records_count(batch: &[u8]) -> Result<i32, RecordBatchError> {
    Ok(be_i32(header_bytes(batch)?, RECORDS_COUNT_OFFSET))
}

/// Total bytes of the batch at the start of `bytes` by its length field, if it is at least a
/// whole header; the bytes may be fewer.
pub fn declared_len(bytes: &[u8]) -> Option<usize> {
    let length = i32::from_be_bytes(
        bytes
            .get(LENGTH_OFFSET..LOG_OVERHEAD_BYTES)?
            .try_into()
            .ok()?,
    );
    usize::try_from(length)
        .ok()?
        .checked_add(LOG_OVERHEAD_BYTES)
        .filter(|len| *len >= HEADER_BYTES)
}

/// Rewrites a batch's base offset in place. It lies outside the CRC: the batch stays valid.
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) -> Result<(), RecordBatchError> {
    header_bytes(batch)?;
    batch[..8].copy_from_slice(&base_offset.to_be_bytes());
    Ok(())
}

/// The CRC32C stored in the header and the one the bytes have.
pub fn crcs(batch: &[u8]) -> Result<(u32, u32), RecordBatchError> {
    let h = header_bytes(batch)?;
    let stored = u32::from_be_bytes([
        h[CRC_OFFSET],
        h[CRC_OFFSET + 1],
        h[CRC_OFFSET + 2],
        h[CRC_OFFSET + 3],
    ]);
    Ok((stored, crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..])))
}

/// Rewrites the CRC after a change to the bytes it covers.
pub fn fix_crc(batch: &mut [u8]) -> Result<(), RecordBatchError> {
    let (_, computed) = crcs(batch)?;
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&computed.to_be_bytes());
    Ok(())
}

/// Patches the length and CRC of the batch written to `out` from `start` on; returns its length.
pub(crate) fn finish_batch(out: &mut BytesMut, start: usize) -> Result<usize, RecordBatchError> {
    let len = out.len() - start;
    let length = i32::try_from(len - LOG_OVERHEAD_BYTES)
        .map_err(|_| RecordBatchError::TooLarge(format!("batch of {len} bytes")))?;
    out[start + LENGTH_OFFSET..start + LOG_OVERHEAD_BYTES].copy_from_slice(&length.to_be_bytes());
    fix_crc(&mut out[start..])?;
    Ok(len)
}

/// Stamps `now_ms` as the batch's max timestamp and marks its timestamps as log append time,
/// then fixes the CRC. The base timestamp and the records stay as produced: consumers read a
/// log-append-time batch's timestamp from its header, and Kafka does not touch them either.
pub fn stamp_log_append_time(batch: &mut [u8], now_ms: i64) -> Result<(), RecordBatchError> {
    header_bytes(batch)?;
    let attributes = be_i16(batch, ATTRIBUTES_OFFSET) | LOG_APPEND_TIME_FLAG;
    batch[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    batch[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&now_ms.to_be_bytes());
    fix_crc(batch)
}

/// Writes the batch's true `max_timestamp` (the largest of its records') over the one its
/// producer claimed and fixes the CRC: Kafka's `setMaxTimestamp` on a CreateTime batch.
pub fn set_max_timestamp(batch: &mut [u8], max_timestamp: i64) -> Result<(), RecordBatchError> {
    header_bytes(batch)?;
    batch[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
        .copy_from_slice(&max_timestamp.to_be_bytes());
    fix_crc(batch)
}

// The readers below index inside a slice already checked to hold a whole header.
fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(x)
}
