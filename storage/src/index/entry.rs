//! The value of an index record, in a small versioned binary encoding.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::StorageError;

/// v2 adds the optional writer fields of each batch; v1 entries still decode.
const ENTRY_FORMAT_VERSION: u8 = 2;
const ENTRY_FORMAT_V1: u8 = 1;
/// Bytes of a batch's fixed fields (len, records, max timestamp).
const BATCH_FIXED_BYTES: usize = 16;
/// Bytes of a batch's writer fields when present (id, epoch, base sequence).
const PRODUCER_BYTES: usize = 14;
const OBJECT_KEY_BYTES_MAX: usize = 1024;
/// Batches one entry may describe; appends are refused above it.
pub const BATCHES_PER_ENTRY_MAX: usize = 1 << 16;

/// Where an entry's bytes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    /// A slice of a multi-stream WAL object: the payload exactly as appended.
    Raw,
    /// A compacted per-stream Parquet file.
    Parquet,
}

/// One opaque batch inside an appended payload, as described by the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMeta {
    /// Bytes of the batch within the payload.
    pub len: u32,
    /// Offsets the batch occupies.
    pub records: u32,
    /// Largest record timestamp in the batch (ms).
    pub max_timestamp: i64,
    /// The writer that produced the batch, for callers that deduplicate retried writes.
    pub producer: Option<ProducerMeta>,
}

impl BatchMeta {
    /// The offsets `batches` occupy together.
    pub fn records_in(batches: &[BatchMeta]) -> u64 {
        batches.iter().map(|b| u64::from(b.records)).sum()
    }
}

/// Identity and position of a batch in its writer's own sequence; opaque to the engine, kept
/// with the index so that a writer's state can be rebuilt from the log alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerMeta {
    pub id: i64,
    pub epoch: i16,
    pub base_sequence: i32,
}

/// Where one appended slice of a stream lives and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub file_type: FileType,
    pub object_key: String,
    pub byte_offset: u64,
    pub byte_len: u32,
    /// CRC32C of the `byte_len` bytes at `byte_offset`; checked on every read from the store.
    pub crc32c: u32,
    pub min_timestamp: i64,
    pub max_timestamp: i64,
    pub write_time_ms: u64,
    pub batches: Vec<BatchMeta>,
}

impl IndexEntry {
    pub fn record_count(&self) -> u64 {
        BatchMeta::records_in(&self.batches)
    }

    pub fn encode(&self) -> Bytes {
        let mut buf = BytesMut::with_capacity(64 + self.object_key.len() + self.batches.len() * 16);
        buf.put_u8(ENTRY_FORMAT_VERSION);
        buf.put_u8(match self.file_type {
            FileType::Raw => 0,
            FileType::Parquet => 1,
        });
        // Object keys are ours and short, and appends above BATCHES_PER_ENTRY_MAX batches are
        // refused. A length that did not fit would saturate, so that the entry then fails to
        // decode (both maxima are below it) rather than decodes as something else.
        buf.put_u16(u16::try_from(self.object_key.len()).unwrap_or(u16::MAX));
        buf.put_slice(self.object_key.as_bytes());
        buf.put_u64(self.byte_offset);
        buf.put_u32(self.byte_len);
        buf.put_u32(self.crc32c);
        buf.put_i64(self.min_timestamp);
        buf.put_i64(self.max_timestamp);
        buf.put_u64(self.write_time_ms);
        buf.put_u32(u32::try_from(self.batches.len()).unwrap_or(u32::MAX));
        for b in &self.batches {
            buf.put_u32(b.len);
            buf.put_u32(b.records);
            buf.put_i64(b.max_timestamp);
            match b.producer {
                None => buf.put_u8(0),
                Some(p) => {
                    buf.put_u8(1);
                    buf.put_i64(p.id);
                    buf.put_i16(p.epoch);
                    buf.put_i32(p.base_sequence);
                }
            }
        }
        buf.freeze()
    }

    /// Decodes an entry; any inconsistency is `Corrupt`, never a panic.
    pub fn decode(mut buf: &[u8]) -> Result<IndexEntry, StorageError> {
        let corrupt = |what: &str| StorageError::Corrupt(format!("index entry: {what}"));
        if buf.remaining() < 4 {
            return Err(corrupt("truncated header"));
        }
        let version = buf.get_u8();
        if version != ENTRY_FORMAT_VERSION && version != ENTRY_FORMAT_V1 {
            return Err(corrupt("unknown format version"));
        }
        let file_type = match buf.get_u8() {
            0 => FileType::Raw,
            1 => FileType::Parquet,
            _ => return Err(corrupt("unknown file type")),
        };
        let key_len = usize::from(buf.get_u16());
        if key_len > OBJECT_KEY_BYTES_MAX || buf.remaining() < key_len + 48 {
            return Err(corrupt("bad object key length"));
        }
        let object_key = std::str::from_utf8(&buf[..key_len])
            .map_err(|_| corrupt("object key is not utf-8"))?
            .to_string();
        buf.advance(key_len);
        let byte_offset = buf.get_u64();
        let byte_len = buf.get_u32();
        let crc32c = buf.get_u32();
        let min_timestamp = buf.get_i64();
        let max_timestamp = buf.get_i64();
        let write_time_ms = buf.get_u64();
        let batch_count = buf.get_u32() as usize;
        let sizes_fit = if version == ENTRY_FORMAT_V1 {
            buf.remaining() == batch_count * BATCH_FIXED_BYTES
        } else {
            let least = batch_count * (BATCH_FIXED_BYTES + 1);
            buf.remaining() >= least && buf.remaining() <= least + batch_count * PRODUCER_BYTES
        };
        if batch_count > BATCHES_PER_ENTRY_MAX || !sizes_fit {
            return Err(corrupt("bad batch count"));
        }
        let mut batches = Vec::with_capacity(batch_count);
        let mut total_len = 0u64;
        for _ in 0..batch_count {
            if buf.remaining() < BATCH_FIXED_BYTES {
                return Err(corrupt("truncated batch"));
            }
            let len = buf.get_u32();
            let records = buf.get_u32();
            let max_timestamp = buf.get_i64();
            let producer = if version == ENTRY_FORMAT_V1 {
                None
            } else {
                decode_producer(&mut buf).ok_or_else(|| corrupt("bad producer fields"))?
            };
            total_len += u64::from(len);
            batches.push(BatchMeta {
                len,
                records,
                max_timestamp,
                producer,
            });
        }
        if buf.has_remaining() {
            return Err(corrupt("trailing bytes"));
        }
        if file_type == FileType::Raw && total_len != u64::from(byte_len) {
            return Err(corrupt("batch lengths do not add up to the slice length"));
        }
        Ok(IndexEntry {
            file_type,
            object_key,
            byte_offset,
            byte_len,
            crc32c,
            min_timestamp,
            max_timestamp,
            write_time_ms,
            batches,
        })
    }
}

/// `None` when the fields are malformed; `Some(None)` for a batch without a writer.
fn decode_producer(buf: &mut &[u8]) -> Option<Option<ProducerMeta>> {
    if !buf.has_remaining() {
        return None;
    }
    match buf.get_u8() {
        0 => Some(None),
        1 if buf.remaining() >= PRODUCER_BYTES => Some(Some(ProducerMeta {
            id: buf.get_i64(),
            epoch: buf.get_i16(),
            base_sequence: buf.get_i32(),
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> IndexEntry {
        IndexEntry {
            file_type: FileType::Raw,
            object_key: "wal/20261129/abc".into(),
            byte_offset: 77,
            byte_len: 30,
            crc32c: 0xdead_beef,
            min_timestamp: 5,
            max_timestamp: 9,
            write_time_ms: 1234,
            batches: vec![
                BatchMeta {
                    len: 10,
                    records: 2,
                    max_timestamp: 6,
                    producer: None,
                },
                BatchMeta {
                    len: 20,
                    records: 3,
                    max_timestamp: 9,
                    producer: Some(ProducerMeta {
                        id: 42,
                        epoch: 3,
                        base_sequence: i32::MAX - 1,
                    }),
                },
            ],
        }
    }

    #[test]
    fn entry_round_trips() {
        let e = sample();
        assert_eq!(IndexEntry::decode(&e.encode()).unwrap(), e);
        assert_eq!(e.record_count(), 5);
    }

    #[test]
    fn truncated_entry_is_corrupt() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert!(IndexEntry::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// The v1 layout, as brokers before producer fields wrote it.
    fn encode_v1(e: &IndexEntry) -> Vec<u8> {
        let v2 = e.encode();
        let header_len = 4 + e.object_key.len() + 44;
        let mut out = vec![ENTRY_FORMAT_V1];
        out.extend_from_slice(&v2[1..header_len]);
        for b in &e.batches {
            out.extend_from_slice(&b.len.to_be_bytes());
            out.extend_from_slice(&b.records.to_be_bytes());
            out.extend_from_slice(&b.max_timestamp.to_be_bytes());
        }
        out
    }

    #[test]
    fn version_one_entries_still_decode_without_producers() {
        let mut e = sample();
        for b in &mut e.batches {
            b.producer = None;
        }
        assert_eq!(IndexEntry::decode(&encode_v1(&e)).unwrap(), e);
    }

    #[test]
    fn producer_fields_survive_the_round_trip() {
        let e = sample();
        let decoded = IndexEntry::decode(&e.encode()).unwrap();
        assert_eq!(decoded.batches[1].producer.unwrap().id, 42);
        assert_eq!(decoded.batches[0].producer, None);
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = IndexEntry::decode(&bytes);
        }
    }
}
