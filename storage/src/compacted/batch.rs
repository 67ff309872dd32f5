//! Magic-2 record batches taken apart into records and put back together with a valid CRC.
//!
//! Layout (big-endian): `base_offset i64 @0, batch_length i32 @8, partition_leader_epoch i32
//! @12, magic i8 @16, crc u32 @17, attributes i16 @21, last_offset_delta i32 @23,
//! base_timestamp i64 @27, max_timestamp i64 @35, producer_id i64 @43, producer_epoch i16 @51,
//! base_sequence i32 @53, records_count i32 @57, records @61`. CRC32C covers `@21..end`.

use super::CompactedError;
use crate::record_batch::{codec, RecordBatchError};
use bytes::{Buf, BufMut, Bytes, BytesMut};

const HEADER_BYTES: usize = 61;
const CRC_START: usize = 21;
const CODEC_MASK: i16 = 0x07;
/// Records one batch may hold; Kafka clients stay far below it.
pub const RECORDS_PER_BATCH_MAX: usize = 1 << 20;
/// Decompressed bytes of one batch at most (a compression bomb stops here).
pub const DECOMPRESSED_BYTES_MAX: usize = crate::record_batch::DECOMPRESSED_BYTES_MAX;

/// The batch-level fields, exactly as the producer (or broker) wrote them.
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
    pub fn codec(&self) -> i16 {
        self.attributes & CODEC_MASK
    }
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & 0x08 != 0
    }
}

/// One record, with its deltas as stored in the batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordRow {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(Bytes, Option<Bytes>)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedBatch {
    pub header: BatchHeader,
    pub records: Vec<RecordRow>,
}

fn bad(what: impl Into<String>) -> CompactedError {
    CompactedError::BadBatch(what.into())
}

/// Splits a payload of whole batches into single batches.
pub fn split_batches(mut payload: Bytes) -> Result<Vec<Bytes>, CompactedError> {
    let mut out = Vec::new();
    while !payload.is_empty() {
        if payload.len() < 12 {
            return Err(bad("truncated batch header"));
        }
        let len = i32::from_be_bytes([payload[8], payload[9], payload[10], payload[11]]);
        let total = usize::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(12))
            .filter(|t| *t >= HEADER_BYTES && *t <= payload.len())
            .ok_or_else(|| bad("batch length out of range"))?;
        out.push(payload.split_to(total));
    }
    Ok(out)
}

/// Decodes one whole batch, checking its CRC and decompressing its records.
pub fn decode_batch(batch: &Bytes) -> Result<DecodedBatch, CompactedError> {
    if batch.len() < HEADER_BYTES {
        return Err(bad("truncated batch"));
    }
    let mut h = &batch[..];
    let base_offset = h.get_i64();
    let _length = h.get_i32();
    let partition_leader_epoch = h.get_i32();
    if h.get_i8() != 2 {
        return Err(bad("only magic 2 batches are supported"));
    }
    let crc = h.get_u32();
    if crc32c::crc32c(&batch[CRC_START..]) != crc {
        return Err(bad("crc mismatch"));
    }
    let header = BatchHeader {
        base_offset,
        partition_leader_epoch,
        attributes: h.get_i16(),
        last_offset_delta: h.get_i32(),
        base_timestamp: h.get_i64(),
        max_timestamp: h.get_i64(),
        producer_id: h.get_i64(),
        producer_epoch: h.get_i16(),
        base_sequence: h.get_i32(),
    };
    let count = usize::try_from(h.get_i32()).map_err(|_| bad("negative record count"))?;
    if count > RECORDS_PER_BATCH_MAX {
        return Err(CompactedError::Limit(format!(
            "{count} records in one batch"
        )));
    }
    let compressed = batch.slice(HEADER_BYTES..);
    let mut records_bytes = decompress(header.codec(), compressed)?;
    let mut records = Vec::with_capacity(count.min(records_bytes.len()));
    for _ in 0..count {
        records.push(decode_record(&mut records_bytes)?);
    }
    if records_bytes.has_remaining() {
        return Err(bad("bytes left after the last record"));
    }
    Ok(DecodedBatch { header, records })
}

/// One record's fields borrowed from wherever they live (a decoded batch, Parquet columns),
/// so that a batch can be built without copying them first.
#[derive(Clone, Debug)]
pub struct RecordRef<'a> {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: Vec<(&'a [u8], Option<&'a [u8]>)>,
}

impl<'a> From<&'a RecordRow> for RecordRef<'a> {
    fn from(r: &'a RecordRow) -> Self {
        RecordRef {
            attributes: r.attributes,
            timestamp_delta: r.timestamp_delta,
            offset_delta: r.offset_delta,
            key: r.key.as_deref(),
            value: r.value.as_deref(),
            headers: r
                .headers
                .iter()
                .map(|(k, v)| (&k[..], v.as_deref()))
                .collect(),
        }
    }
}

/// Builds one batch. `codec` replaces the header's compression codec (0 = uncompressed).
pub fn encode_batch(
    header: &BatchHeader,
    records: &[RecordRow],
    codec: i16,
) -> Result<Bytes, CompactedError> {
    let refs: Vec<RecordRef<'_>> = records.iter().map(RecordRef::from).collect();
    let mut out = BytesMut::new();
    encode_batch_into(&mut out, header, &refs, codec)?;
    Ok(out.freeze())
}

/// Appends one batch to `out` and returns its length. Uncompressed records are written in
/// place: one copy of each field, from where it lives into `out`.
pub fn encode_batch_into(
    out: &mut BytesMut,
    header: &BatchHeader,
    records: &[RecordRef<'_>],
    codec: i16,
) -> Result<usize, CompactedError> {
    let codec = codec & CODEC_MASK;
    let start = out.len();
    out.reserve(HEADER_BYTES);
    out.put_i64(header.base_offset);
    out.put_i32(0); // length, patched below
    out.put_i32(header.partition_leader_epoch);
    out.put_i8(2);
    out.put_u32(0); // crc, patched below
    out.put_i16((header.attributes & !CODEC_MASK) | codec);
    out.put_i32(header.last_offset_delta);
    out.put_i64(header.base_timestamp);
    out.put_i64(header.max_timestamp);
    out.put_i64(header.producer_id);
    out.put_i16(header.producer_epoch);
    out.put_i32(header.base_sequence);
    out.put_i32(records.len() as i32);
    if codec == 0 {
        for r in records {
            encode_record(out, r);
        }
    } else {
        let mut plain = BytesMut::new();
        for r in records {
            encode_record(&mut plain, r);
        }
        compress(codec, plain.freeze(), out)?;
    }
    let len = out.len() - start;
    let length = i32::try_from(len - 12)
        .map_err(|_| CompactedError::Limit(format!("batch of {len} bytes")))?;
    out[start + 8..start + 12].copy_from_slice(&length.to_be_bytes());
    let crc = crc32c::crc32c(&out[start + CRC_START..]);
    out[start + 17..start + 21].copy_from_slice(&crc.to_be_bytes());
    Ok(len)
}

fn decompress(codec: i16, compressed: Bytes) -> Result<Bytes, CompactedError> {
    if codec == 0 {
        return Ok(compressed);
    }
    codec::decompress(codec, &compressed, DECOMPRESSED_BYTES_MAX)
        .map(Bytes::from)
        .map_err(codec_error)
}

fn compress(codec: i16, plain: Bytes, out: &mut BytesMut) -> Result<(), CompactedError> {
    codec::compress(codec, None, &plain, out).map_err(codec_error)
}

fn codec_error(error: RecordBatchError) -> CompactedError {
    match error {
        RecordBatchError::TooLarge(what) => CompactedError::Limit(what),
        RecordBatchError::Corrupt(what) => CompactedError::BadBatch(what),
        RecordBatchError::Codec(what) => CompactedError::Compression(what),
    }
}

fn decode_record(buf: &mut Bytes) -> Result<RecordRow, CompactedError> {
    let len = usize::try_from(get_varint(buf)?).map_err(|_| bad("negative record length"))?;
    if len > buf.remaining() {
        return Err(bad("record longer than its batch"));
    }
    let mut r = buf.split_to(len);
    if !r.has_remaining() {
        return Err(bad("empty record"));
    }
    let attributes = r.get_i8();
    let timestamp_delta = get_varlong(&mut r)?;
    let offset_delta = get_varint(&mut r)?;
    let key = get_nullable_bytes(&mut r)?;
    let value = get_nullable_bytes(&mut r)?;
    let header_count =
        usize::try_from(get_varint(&mut r)?).map_err(|_| bad("negative header count"))?;
    if header_count > r.remaining() {
        return Err(bad("header count larger than the record"));
    }
    let mut headers = Vec::with_capacity(header_count);
    for _ in 0..header_count {
        let key = get_nullable_bytes(&mut r)?.ok_or_else(|| bad("null header key"))?;
        headers.push((key, get_nullable_bytes(&mut r)?));
    }
    if r.has_remaining() {
        return Err(bad("bytes left after a record's headers"));
    }
    Ok(RecordRow {
        attributes,
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers,
    })
}

fn encode_record(out: &mut BytesMut, r: &RecordRef<'_>) {
    let mut body = 1
        + varlong_len(r.timestamp_delta)
        + varlong_len(i64::from(r.offset_delta))
        + nullable_len(r.key)
        + nullable_len(r.value)
        + varlong_len(r.headers.len() as i64);
    for (k, v) in &r.headers {
        body += nullable_len(Some(k)) + nullable_len(*v);
    }
    out.reserve(body + 10);
    put_varlong(out, body as i64);
    out.put_i8(r.attributes);
    put_varlong(out, r.timestamp_delta);
    put_varlong(out, i64::from(r.offset_delta));
    put_nullable_bytes(out, r.key);
    put_nullable_bytes(out, r.value);
    put_varlong(out, r.headers.len() as i64);
    for (k, v) in &r.headers {
        put_nullable_bytes(out, Some(k));
        put_nullable_bytes(out, *v);
    }
}

/// Bytes `put_varlong` writes for `v`.
fn varlong_len(v: i64) -> usize {
    let z = ((v << 1) ^ (v >> 63)) as u64;
    (64 - z.leading_zeros() as usize).max(1).div_ceil(7)
}

fn nullable_len(v: Option<&[u8]>) -> usize {
    match v {
        None => varlong_len(-1),
        Some(b) => varlong_len(b.len() as i64) + b.len(),
    }
}

fn get_varlong(buf: &mut Bytes) -> Result<i64, CompactedError> {
    let mut raw = 0u64;
    for shift in (0..70).step_by(7) {
        if !buf.has_remaining() {
            return Err(bad("truncated varint"));
        }
        let b = buf.get_u8();
        raw |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64));
        }
    }
    Err(bad("varint too long"))
}

fn get_varint(buf: &mut Bytes) -> Result<i32, CompactedError> {
    i32::try_from(get_varlong(buf)?).map_err(|_| bad("varint out of i32 range"))
}

fn get_nullable_bytes(buf: &mut Bytes) -> Result<Option<Bytes>, CompactedError> {
    let len = get_varint(buf)?;
    if len < 0 {
        return Ok(None);
    }
    let len = len as usize;
    if len > buf.remaining() {
        return Err(bad("field longer than its record"));
    }
    Ok(Some(buf.split_to(len)))
}

fn put_varlong(out: &mut BytesMut, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.put_u8((z as u8) | 0x80);
        z >>= 7;
    }
    out.put_u8(z as u8);
}

fn put_nullable_bytes(out: &mut BytesMut, v: Option<&[u8]>) {
    match v {
        None => put_varlong(out, -1),
        Some(b) => {
            put_varlong(out, b.len() as i64);
            out.put_slice(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(codec: i16) -> (BatchHeader, Vec<RecordRow>) {
        let header = BatchHeader {
            base_offset: 0,
            partition_leader_epoch: 7,
            attributes: codec | 0x10,
            last_offset_delta: 2,
            base_timestamp: 1_000,
            max_timestamp: 1_020,
            producer_id: 42,
            producer_epoch: 3,
            base_sequence: 9,
        };
        let records = (0..3)
            .map(|i| RecordRow {
                attributes: 0,
                timestamp_delta: i64::from(i) * 10,
                offset_delta: i,
                key: (i != 1).then(|| Bytes::from(format!("k{i}"))),
                value: Some(Bytes::from(vec![b'v'; 100 * i as usize])),
                headers: vec![
                    (Bytes::from_static(b"h"), Some(Bytes::from_static(b"1"))),
                    (Bytes::from_static(b"h"), None),
                ],
            })
            .collect();
        (header, records)
    }

    #[test]
    fn batches_of_every_codec_round_trip_with_duplicate_headers() {
        for codec in 0..=4 {
            let (header, records) = sample(codec);
            let bytes = encode_batch(&header, &records, codec).unwrap();
            let decoded = decode_batch(&bytes).unwrap();
            assert_eq!(decoded.header, header, "codec {codec}");
            assert_eq!(decoded.records, records, "codec {codec}");
            assert_eq!(split_batches(bytes.clone()).unwrap(), vec![bytes]);
        }
    }

    #[test]
    fn varlong_lengths_match_what_is_written() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            -65,
            8191,
            8192,
            i64::MAX,
            i64::MIN,
            1 << 40,
        ] {
            let mut out = BytesMut::new();
            put_varlong(&mut out, v);
            assert_eq!(varlong_len(v), out.len(), "value {v}");
        }
    }

    #[test]
    fn a_flipped_bit_fails_the_crc() {
        let (header, records) = sample(0);
        let mut bytes = encode_batch(&header, &records, 0).unwrap().to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert!(decode_batch(&Bytes::from(bytes)).is_err());
    }

    #[test]
    fn truncated_batches_are_errors_not_panics() {
        let (header, records) = sample(4);
        let bytes = encode_batch(&header, &records, 4).unwrap();
        for cut in 0..bytes.len() {
            assert!(decode_batch(&bytes.slice(..cut)).is_err());
        }
    }
}
