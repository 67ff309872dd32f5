//! Record batches (magic 2) as clients send them in a Produce request: validation of the batch
//! headers and CRC without touching individual records, base-offset rewriting for Fetch, and full
//! record decoding for the rare paths that need it (ListOffsets by timestamp).
//!
//! Layout (big-endian), offsets from the start of the batch:
//! `base_offset i64 @0, batch_length i32 @8, partition_leader_epoch i32 @12, magic i8 @16,
//! crc u32 @17, attributes i16 @21, last_offset_delta i32 @23, base_timestamp i64 @27,
//! max_timestamp i64 @35, producer_id i64 @43, producer_epoch i16 @51, base_sequence i32 @53,
//! records_count i32 @57, records @61`. The CRC32C covers `attributes..end`.

use bytes::Bytes;
use kafka_protocol::records::{Compression, Record, RecordBatchDecoder};
use kafka_protocol::ResponseError;

/// Bytes before the records of a magic-2 batch.
pub const BATCH_HEADER_BYTES: usize = 61;
/// `base_offset` and `batch_length` precede what `batch_length` counts.
const LOG_OVERHEAD_BYTES: usize = 12;
const MAGIC_OFFSET: usize = 16;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;

const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_FLAG: i16 = 0x08;
const TRANSACTIONAL_FLAG: i16 = 0x10;
const CONTROL_FLAG: i16 = 0x20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("no record batch in payload")]
    Empty,
    /// The payload ends inside a batch header or before `batch_length` bytes.
    #[error("batch at byte {position} is truncated")]
    Truncated { position: usize },
    #[error("batch at byte {position} declares invalid length {batch_length}")]
    InvalidLength { position: usize, batch_length: i32 },
    /// Magic 0 or 1 (legacy message sets) or an unknown magic.
    #[error("batch at byte {position} has unsupported magic {magic}")]
    UnsupportedMagic { position: usize, magic: i8 },
    #[error(
        "batch at byte {position} fails its crc: stored {stored:#010x}, computed {computed:#010x}"
    )]
    CrcMismatch {
        position: usize,
        stored: u32,
        computed: u32,
    },
    /// `records_count` must be positive and equal `last_offset_delta + 1`.
    #[error("batch at byte {position} has {records_count} records but last offset delta {last_offset_delta}")]
    RecordCountMismatch {
        position: usize,
        records_count: i32,
        last_offset_delta: i32,
    },
    #[error("batch at byte {position} uses unknown compression codec {codec}")]
    UnknownCompression { position: usize, codec: i16 },
    #[error("cannot decode records: {0}")]
    Records(String),
}

impl BatchError {
    /// The Produce error code Kafka answers with for this defect.
    pub fn response_error(&self) -> ResponseError {
        match self {
            BatchError::UnsupportedMagic { .. } => ResponseError::UnsupportedForMessageFormat,
            BatchError::RecordCountMismatch { .. } | BatchError::Empty => {
                ResponseError::InvalidRecord
            }
            BatchError::Truncated { .. }
            | BatchError::InvalidLength { .. }
            | BatchError::CrcMismatch { .. }
            | BatchError::UnknownCompression { .. }
            | BatchError::Records(_) => ResponseError::CorruptMessage,
        }
    }
}

/// Header fields of one validated batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchInfo {
    /// Byte position of the batch in the payload.
    pub position: usize,
    /// Total bytes of the batch, header included.
    pub len_bytes: usize,
    pub records_count: i32,
    pub attributes: i16,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
}

impl BatchInfo {
    pub fn compression(&self) -> Compression {
        compression_of(self.attributes).unwrap_or(Compression::None)
    }
    /// Whether timestamps are the broker's append time rather than the producer's create time.
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & TIMESTAMP_TYPE_FLAG != 0
    }
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_FLAG != 0
    }
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_FLAG != 0
    }
}

fn compression_of(attributes: i16) -> Option<Compression> {
    match attributes & COMPRESSION_MASK {
        0 => Some(Compression::None),
        1 => Some(Compression::Gzip),
        2 => Some(Compression::Snappy),
        3 => Some(Compression::Lz4),
        4 => Some(Compression::Zstd),
        _ => None,
    }
}

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

/// Validates a Produce payload (one or more concatenated batches) and returns each batch's
/// header. Nothing is copied or decompressed; the cost is one CRC pass over the payload.
pub fn validate_batches(payload: &[u8]) -> Result<Vec<BatchInfo>, BatchError> {
    if payload.is_empty() {
        return Err(BatchError::Empty);
    }
    let mut batches = Vec::new();
    let mut position = 0;
    while position < payload.len() {
        let info = validate_one(&payload[position..], position)?;
        position += info.len_bytes;
        batches.push(info);
    }
    Ok(batches)
}

fn validate_one(rest: &[u8], position: usize) -> Result<BatchInfo, BatchError> {
    // The magic byte is read before the full header is required, so that a short legacy message
    // set is reported as such rather than as truncated.
    if rest.len() <= MAGIC_OFFSET {
        return Err(BatchError::Truncated { position });
    }
    let magic = rest[MAGIC_OFFSET] as i8;
    if magic != 2 {
        return Err(BatchError::UnsupportedMagic { position, magic });
    }
    if rest.len() < BATCH_HEADER_BYTES {
        return Err(BatchError::Truncated { position });
    }
    let batch_length = be_i32(rest, 8);
    let len_bytes = usize::try_from(batch_length)
        .ok()
        .and_then(|l| l.checked_add(LOG_OVERHEAD_BYTES))
        .filter(|&l| l >= BATCH_HEADER_BYTES)
        .ok_or(BatchError::InvalidLength {
            position,
            batch_length,
        })?;
    if rest.len() < len_bytes {
        return Err(BatchError::Truncated { position });
    }
    let batch = &rest[..len_bytes];
    let stored = u32::from_be_bytes([
        batch[CRC_OFFSET],
        batch[CRC_OFFSET + 1],
        batch[CRC_OFFSET + 2],
        batch[CRC_OFFSET + 3],
    ]);
    let computed = crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..]);
    if stored != computed {
        return Err(BatchError::CrcMismatch {
            position,
            stored,
            computed,
        });
    }
    let attributes = be_i16(batch, ATTRIBUTES_OFFSET);
    if compression_of(attributes).is_none() {
        return Err(BatchError::UnknownCompression {
            position,
            codec: attributes & COMPRESSION_MASK,
        });
    }
    let last_offset_delta = be_i32(batch, 23);
    let records_count = be_i32(batch, 57);
    if records_count <= 0 || i64::from(last_offset_delta) + 1 != i64::from(records_count) {
        return Err(BatchError::RecordCountMismatch {
            position,
            records_count,
            last_offset_delta,
        });
    }
    Ok(BatchInfo {
        position,
        len_bytes,
        records_count,
        attributes,
        base_timestamp: be_i64(batch, 27),
        max_timestamp: be_i64(batch, 35),
        producer_id: be_i64(batch, 43),
        producer_epoch: be_i16(batch, 51),
        base_sequence: be_i32(batch, 53),
    })
}

/// Rewrites a batch's base offset in place. The base offset lies outside the CRC, so the batch
/// stays valid.
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) -> Result<(), BatchError> {
    if batch.len() < BATCH_HEADER_BYTES {
        return Err(BatchError::Truncated { position: 0 });
    }
    batch[..8].copy_from_slice(&base_offset.to_be_bytes());
    Ok(())
}

/// Decodes every record of one batch, decompressing it if needed (none, gzip, snappy, lz4,
/// zstd). Offsets in the returned records are `base_offset` of the batch plus their delta.
pub fn decode_records(batch: Bytes) -> Result<Vec<Record>, BatchError> {
    let info = validate_one(&batch, 0)?;
    let mut buf = batch.slice(..info.len_bytes);
    let set =
        RecordBatchDecoder::decode(&mut buf).map_err(|e| BatchError::Records(format!("{e:#}")))?;
    Ok(set.records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::indexmap::IndexMap;
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol::records::{RecordBatchEncoder, RecordEncodeOptions, TimestampType};
    use proptest::prelude::*;

    fn record(offset: i64, value: Option<&'static [u8]>) -> Record {
        let mut headers = IndexMap::new();
        headers.insert(
            StrBytes::from_static_str("h"),
            Some(Bytes::from_static(b"v")),
        );
        Record {
            transactional: false,
            control: false,
            partition_leader_epoch: -1,
            producer_id: 77,
            producer_epoch: 3,
            timestamp_type: TimestampType::Creation,
            offset,
            sequence: 10 + offset as i32,
            timestamp: 1_000 + offset,
            key: Some(Bytes::from(format!("k{offset}"))),
            value: value.map(Bytes::from_static),
            headers,
            delete_horizon: false,
        }
    }

    fn encode(records: &[Record], compression: Compression) -> Bytes {
        let mut buf = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression,
        };
        RecordBatchEncoder::encode(&mut buf, records, &options).unwrap();
        buf.freeze()
    }

    const CODECS: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    #[test]
    fn batches_of_every_codec_validate_and_decode() {
        for codec in CODECS {
            let records = vec![
                record(0, Some(b"one")),
                record(1, None),
                record(2, Some(b"three")),
            ];
            let batch = encode(&records, codec);
            let infos = validate_batches(&batch).unwrap();
            assert_eq!(infos.len(), 1, "{codec:?}");
            let info = infos[0];
            assert_eq!(info.len_bytes, batch.len());
            assert_eq!(info.records_count, 3);
            assert_eq!(info.compression(), codec);
            assert_eq!((info.base_timestamp, info.max_timestamp), (1_000, 1_002));
            assert_eq!(
                (info.producer_id, info.producer_epoch, info.base_sequence),
                (77, 3, 10)
            );
            let decoded = decode_records(batch).unwrap();
            assert_eq!(decoded.len(), 3);
            assert_eq!(decoded[1].value, None);
            assert_eq!(decoded[2].value.as_deref(), Some(&b"three"[..]));
            assert_eq!(decoded[2].key.as_deref(), Some(&b"k2"[..]));
            let header = decoded[0]
                .headers
                .get(&StrBytes::from_static_str("h"))
                .cloned()
                .flatten();
            assert_eq!(header.as_deref(), Some(&b"v"[..]));
        }
    }

    #[test]
    fn concatenated_batches_report_their_positions() {
        let a = encode(&[record(0, Some(b"a"))], Compression::None);
        let b = encode(
            &[record(0, Some(b"b")), record(1, Some(b"c"))],
            Compression::Lz4,
        );
        let payload = [a.as_ref(), b.as_ref()].concat();
        let infos = validate_batches(&payload).unwrap();
        assert_eq!(infos.len(), 2);
        assert_eq!(infos[1].position, a.len());
        assert_eq!(infos[1].records_count, 2);
    }

    #[test]
    fn flipped_payload_byte_fails_the_crc() {
        let mut batch = encode(&[record(0, Some(b"payload"))], Compression::None).to_vec();
        let last = batch.len() - 1;
        batch[last] ^= 0x01;
        let err = validate_batches(&batch).unwrap_err();
        assert!(matches!(err, BatchError::CrcMismatch { position: 0, .. }));
        assert_eq!(err.response_error(), ResponseError::CorruptMessage);
    }

    #[test]
    fn legacy_magic_is_a_distinct_error() {
        let mut batch = encode(&[record(0, Some(b"x"))], Compression::None).to_vec();
        batch[MAGIC_OFFSET] = 1;
        let err = validate_batches(&batch).unwrap_err();
        assert_eq!(
            err,
            BatchError::UnsupportedMagic {
                position: 0,
                magic: 1
            }
        );
        assert_eq!(
            err.response_error(),
            ResponseError::UnsupportedForMessageFormat
        );
    }

    #[test]
    fn record_count_must_match_last_offset_delta() {
        let mut batch = encode(
            &[record(0, Some(b"x")), record(1, Some(b"y"))],
            Compression::None,
        )
        .to_vec();
        batch[57..61].copy_from_slice(&5i32.to_be_bytes());
        let crc = crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..]);
        batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            validate_batches(&batch),
            Err(BatchError::RecordCountMismatch {
                records_count: 5,
                last_offset_delta: 1,
                ..
            })
        ));
    }

    #[test]
    fn truncated_and_empty_payloads_are_rejected() {
        let batch = encode(&[record(0, Some(b"x"))], Compression::None);
        assert_eq!(validate_batches(&[]), Err(BatchError::Empty));
        assert!(matches!(
            validate_batches(&batch[..batch.len() - 1]),
            Err(BatchError::Truncated { .. })
        ));
        assert!(matches!(
            validate_batches(&batch[..30]),
            Err(BatchError::Truncated { .. })
        ));
        let mut bad_len = batch.to_vec();
        bad_len[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(matches!(
            validate_batches(&bad_len),
            Err(BatchError::InvalidLength { .. })
        ));
    }

    #[test]
    fn set_base_offset_keeps_the_batch_valid() {
        let mut batch = encode(
            &[record(0, Some(b"x")), record(1, Some(b"y"))],
            Compression::Zstd,
        )
        .to_vec();
        set_base_offset(&mut batch, 1234).unwrap();
        validate_batches(&batch).unwrap();
        let decoded = decode_records(Bytes::from(batch)).unwrap();
        assert_eq!(decoded[0].offset, 1234);
        assert_eq!(decoded[1].offset, 1235);
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_the_validator(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = validate_batches(&bytes);
        }

        #[test]
        fn corrupting_a_valid_batch_never_panics(pos in 0usize..200, byte in any::<u8>()) {
            let mut batch = encode(&[record(0, Some(b"abc")), record(1, None)], Compression::Snappy).to_vec();
            let pos = pos % batch.len();
            batch[pos] = byte;
            let _ = validate_batches(&batch);
            let _ = decode_records(Bytes::from(batch));
        }
    }
}
