//! Whole batches taken apart into records and put back together with a valid CRC: what the
//! compactor writes to Parquet and the compacted reader rebuilds.

use bytes::{Bytes, BytesMut};

use crate::codec;
use crate::header::{
    crcs, declared_len, finish_batch, records_count, BatchHeader, CODEC_MASK, HEADER_BYTES,
    MAGIC_OFFSET,
};
use crate::input::{BytesInput, Input, Stream};
use crate::record::{self, RecordRef, RecordRow};
use crate::{RecordBatchError, DECOMPRESSED_BYTES_MAX};

/// Records one batch may hold. Decoded records take far more memory than their bytes, so this
/// bounds what one batch costs a reader; produce validation refuses batches above it.
pub const RECORDS_PER_BATCH_MAX: usize = 1 << 20;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedBatch {
    pub header: BatchHeader,
    pub records: Vec<RecordRow>,
}

fn corrupt(what: impl Into<String>) -> RecordBatchError {
    RecordBatchError::Corrupt(what.into())
}

/// Splits a stored payload of whole batches into single batches; bytes that do not form a
/// whole batch are an error (stored payloads were validated whole).
pub fn split_batches(mut payload: Bytes) -> Result<Vec<Bytes>, RecordBatchError> {
    let mut out = Vec::new();
    while !payload.is_empty() {
        let len = declared_len(&payload)
            .filter(|len| *len <= payload.len())
            .ok_or_else(|| corrupt("batch length out of range"))?;
        out.push(payload.split_to(len));
    }
    Ok(out)
}

/// Decodes one whole batch, checking its CRC and decompressing at most
/// [`DECOMPRESSED_BYTES_MAX`] bytes of records.
pub fn decode_batch(batch: &Bytes) -> Result<DecodedBatch, RecordBatchError> {
    decode_batch_within(batch, DECOMPRESSED_BYTES_MAX)
}

/// [`decode_batch`] with a decompression limit of `limit` bytes. Compressed records are read
/// from a streaming decompressor one at a time, so memory grows with the records that really
/// decode: a bomb of garbage fails at its first record, not after `limit` bytes.
pub fn decode_batch_within(batch: &Bytes, limit: usize) -> Result<DecodedBatch, RecordBatchError> {
    let header = BatchHeader::parse(batch)?;
    if batch[MAGIC_OFFSET] != 2 {
        return Err(corrupt("only magic 2 batches are supported"));
    }
    let (stored, computed) = crcs(batch)?;
    if stored != computed {
        return Err(corrupt("crc mismatch"));
    }
    let count = usize::try_from(records_count(batch)?)
        .map_err(|_| RecordBatchError::Invalid("negative record count".into()))?;
    if count > RECORDS_PER_BATCH_MAX {
        return Err(RecordBatchError::TooLarge(format!(
            "{count} records in one batch"
        )));
    }
    let records = match header.codec() {
        0 => plain_records(batch.slice(HEADER_BYTES..), count)?,
        codec => compressed_records(codec, &batch[HEADER_BYTES..], count, limit)?,
    };
    Ok(DecodedBatch { header, records })
}

fn plain_records(bytes: Bytes, count: usize) -> Result<Vec<RecordRow>, RecordBatchError> {
    let mut input = BytesInput(bytes);
    // Every record takes at least 7 bytes: a lying count allocates nothing extra.
    let mut records = Vec::with_capacity(count.min(input.0.len() / 7));
    let mut headers = Vec::new();
    for _ in 0..count {
        let fields = record::parse(&mut input, &mut headers)?;
        records.push(RecordRow::from_fields(fields, std::mem::take(&mut headers)));
    }
    no_records_left(&mut input)?;
    Ok(records)
}

fn compressed_records(
    codec: i16,
    compressed: &[u8],
    count: usize,
    limit: usize,
) -> Result<Vec<RecordRow>, RecordBatchError> {
    let mut stream = Stream::new(codec::reader(codec, compressed, limit)?);
    let mut records = Vec::with_capacity(count.min(4096));
    let mut headers = Vec::new();
    for _ in 0..count {
        let len = record::length(stream.varlong()?)?;
        // One copy per record out of the decompressor; its fields are slices of it.
        let mut body = BytesInput(stream.capture(len)?);
        let fields = record::parse_body(&mut body, len, &mut headers)?;
        records.push(RecordRow::from_fields(fields, std::mem::take(&mut headers)));
    }
    if !stream.at_end()? {
        return Err(records_left());
    }
    Ok(records)
}

fn records_left() -> RecordBatchError {
    RecordBatchError::Invalid("records remain after the batch's record count".into())
}

pub(crate) fn no_records_left<I: Input>(input: &mut I) -> Result<(), RecordBatchError> {
    if input.at_end()? {
        Ok(())
    } else {
        Err(records_left())
    }
}

/// Builds one batch. `codec` replaces the header's compression codec (0 = uncompressed).
pub fn encode_batch(
    header: &BatchHeader,
    records: &[RecordRow],
    codec: i16,
) -> Result<Bytes, RecordBatchError> {
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
) -> Result<usize, RecordBatchError> {
    let codec = codec & CODEC_MASK;
    let count = i32::try_from(records.len())
        .map_err(|_| RecordBatchError::TooLarge(format!("{} records", records.len())))?;
    let start = out.len();
    header.write(out, codec, count);
    if codec == 0 {
        for r in records {
            record::encode(out, r);
        }
    } else {
        let mut plain = BytesMut::new();
        for r in records {
            record::encode(&mut plain, r);
        }
        codec::compress(codec, None, &plain, out)?;
    }
    finish_batch(out, start)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(codec: i16) -> (BatchHeader, Vec<RecordRow>) {
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
                value: Some(Bytes::from(vec![b'v'; 100 * usize::try_from(i).unwrap()])),
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
    fn a_flipped_bit_fails_the_crc() {
        let (header, records) = sample(0);
        let mut bytes = encode_batch(&header, &records, 0).unwrap().to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert!(matches!(
            decode_batch(&Bytes::from(bytes)),
            Err(RecordBatchError::Corrupt(_))
        ));
    }

    #[test]
    fn truncated_batches_are_errors_not_panics() {
        let (header, records) = sample(4);
        let bytes = encode_batch(&header, &records, 4).unwrap();
        for cut in 0..bytes.len() {
            assert!(decode_batch(&bytes.slice(..cut)).is_err());
        }
    }

    #[test]
    fn a_bomb_of_zeros_fails_at_its_first_record_and_a_large_batch_at_the_limit() {
        let (header, _) = sample(4);
        let mut out = BytesMut::new();
        codec::compress(4, None, &vec![0u8; 8 << 20], &mut out).unwrap();
        let mut batch = BytesMut::new();
        header.write(&mut batch, 4, 3);
        batch.extend_from_slice(&out);
        finish_batch(&mut batch, 0).unwrap();
        let err = decode_batch_within(&batch.freeze(), 1 << 20).unwrap_err();
        assert!(matches!(err, RecordBatchError::Invalid(_)), "{err}");

        let (header, mut records) = sample(4);
        records[2].value = Some(Bytes::from(vec![0u8; 2 << 20]));
        let bytes = encode_batch(&header, &records, 4).unwrap();
        let err = decode_batch_within(&bytes, 1 << 20).unwrap_err();
        assert!(matches!(err, RecordBatchError::TooLarge(_)), "{err}");
        assert!(decode_batch_within(&bytes, 3 << 20).is_ok());
    }
}
