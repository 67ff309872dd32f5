//! Compacted per-stream Parquet files: one row per Kafka record with typed columns, plus the
//! batch fields needed to rebuild every record batch losslessly (see `docs/compaction.md`).
//!
//! The Kafka-aware part (magic-2 batch parse and build) lives in [`batch`], inside storage, with
//! the `kafka-protocol` crate's codecs for compression: storage still knows nothing of requests.

pub mod batch;
mod columns;
mod error;
pub mod reader;
pub mod writer;

pub use batch::{BatchHeader, DecodedBatch, RecordRow};
pub use error::CompactedError;
pub use reader::{read_batches, RebuildOptions, RebuiltBatches};
pub use writer::{write_file, WriterOptions, WrittenFile};

/// Version of the file layout, recorded in the Parquet key-value metadata.
pub const FORMAT_VERSION: &str = "1";
/// Key-value metadata key naming [`FORMAT_VERSION`].
pub const FORMAT_VERSION_KEY: &str = "kafka.compacted.format.version";

/// Object key of a compacted file holding `[base_offset, end_offset)` of a stream. The name is
/// a function of the range so that a replayed task overwrites, never duplicates.
pub fn file_key(prefix: &str, stream: &str, base_offset: u64, end_offset: u64) -> String {
    format!("{prefix}/{stream}/{base_offset:020}-{end_offset:020}.parquet")
}

#[cfg(test)]
mod tests {
    use super::batch::{decode_batch, encode_batch, split_batches};
    use super::*;
    use bytes::{Bytes, BytesMut};

    /// A WAL payload of `batches` batches of 3 records each, as a producer would send it.
    fn payload(codec: i16, batches: usize, tag: &str) -> Bytes {
        let mut out = BytesMut::new();
        for b in 0..batches {
            let header = BatchHeader {
                base_offset: 0,
                partition_leader_epoch: -1,
                attributes: codec,
                last_offset_delta: 2,
                base_timestamp: 5_000 + b as i64,
                max_timestamp: 5_002 + b as i64,
                producer_id: 9,
                producer_epoch: 1,
                base_sequence: 3 * b as i32,
            };
            let records: Vec<RecordRow> = (0..3)
                .map(|i| RecordRow {
                    attributes: 0,
                    timestamp_delta: i64::from(i),
                    offset_delta: i,
                    key: Some(Bytes::from(format!("{tag}-{b}-{i}"))),
                    value: (i != 2).then(|| Bytes::from(vec![b'x'; 50])),
                    headers: match i {
                        0 => vec![],
                        _ => vec![
                            (Bytes::from_static(b"a"), None),
                            (Bytes::from_static(b"a"), Some(Bytes::from_static(b"z"))),
                        ],
                    },
                })
                .collect();
            out.extend_from_slice(&encode_batch(&header, &records, codec).unwrap());
        }
        out.freeze()
    }

    fn records_of(bytes: Bytes) -> Vec<RecordRow> {
        split_batches(bytes)
            .unwrap()
            .iter()
            .flat_map(|b| decode_batch(b).unwrap().records)
            .collect()
    }

    #[test]
    fn a_file_rebuilds_the_same_records_from_any_offset() {
        let slices = vec![
            (100u64, payload(0, 4, "a")),
            (112, payload(4, 3, "b")),
            (121, payload(2, 2, "c")),
        ];
        let options = WriterOptions {
            row_group_rows_target: 7,
            row_group_bytes_target: 1 << 20,
        };
        let written = write_file("t-0", &slices, &options).unwrap();
        assert_eq!(written.records, 27);
        assert_eq!(written.batches.len(), 9);
        let all: Vec<RecordRow> = slices
            .iter()
            .flat_map(|(_, p)| records_of(p.clone()))
            .collect();
        for recompress in [true, false] {
            let opts = RebuildOptions { recompress };
            let got = read_batches(written.bytes.clone(), 0, usize::MAX, &opts).unwrap();
            assert_eq!(got.base_offset, 100);
            assert_eq!(records_of(got.bytes.clone()), all);
            let tail = read_batches(written.bytes.clone(), 122, usize::MAX, &opts).unwrap();
            assert_eq!(tail.base_offset, 121, "the batch holding 122 starts at 121");
            assert_eq!(records_of(tail.bytes), all[21..].to_vec());
        }
        let one = read_batches(written.bytes.clone(), 103, 1, &RebuildOptions::default()).unwrap();
        assert_eq!((one.base_offset, one.batches.len()), (103, 1));
        let first = decode_batch(&one.bytes).unwrap();
        assert_eq!(first.header.base_offset, 103);
        assert_eq!(first.header.base_sequence, 3);
    }

    #[test]
    fn a_file_without_the_format_version_is_refused() {
        assert!(read_batches(
            Bytes::from_static(b"PAR1garbagePAR1"),
            0,
            1,
            &RebuildOptions::default()
        )
        .is_err());
    }
}
