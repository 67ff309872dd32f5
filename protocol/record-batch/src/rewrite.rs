//! What a broker may change in a magic-2 batch before it is appended, as Kafka's
//! `LogValidator` does: re-encode its records with another codec, stamp the log append time ([`crate::stamp_log_append_time`]); and what
//! ListOffsets reads of a stored batch (every record's timestamp).

use bytes::{BufMut, BytesMut};

use crate::codec::{compress, decompress};
use crate::header::{finish_batch, BatchHeader, ATTRIBUTES_OFFSET, CODEC_MASK, HEADER_BYTES};
use crate::validate::scan_stored;
use crate::RecordBatchError;

/// One record's place in its batch and its timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordTime {
    pub offset_delta: i32,
    pub timestamp: i64,
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
    let header = BatchHeader::parse(batch)?;
    let plain = decompress(header.codec(), &batch[HEADER_BYTES..], limit)?;
    let mut out = BytesMut::with_capacity(HEADER_BYTES + plain.len() / 2);
    out.put_slice(&batch[..HEADER_BYTES]);
    let attributes = (header.attributes & !CODEC_MASK) | (codec & CODEC_MASK);
    out[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    compress(codec, level, &plain, &mut out)?;
    finish_batch(&mut out, 0)?;
    Ok(out.to_vec())
}

/// Every record's offset delta and timestamp (as consumers see it) in a stored batch,
/// decompressing at most `limit` bytes through a stream (nothing of the records is kept).
pub fn record_timestamps(batch: &[u8], limit: usize) -> Result<Vec<RecordTime>, RecordBatchError> {
    let mut out = Vec::new();
    scan_stored(batch, limit, |r| {
        out.push(RecordTime {
            offset_delta: r.offset_delta,
            timestamp: r.timestamp,
        })
    })?;
    Ok(out)
}
