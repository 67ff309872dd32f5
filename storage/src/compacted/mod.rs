//! Compacted per-stream Parquet files: one row per Kafka record with typed columns, plus the
//! batch fields needed to rebuild every record batch losslessly (see `docs/compaction.md`).
//!
//! The Kafka-aware part (magic-2 batch parse and build, records) is the `record-batch` crate;
//! this module maps records to rows and back: storage still knows nothing of requests.

mod columns;
mod error;
mod extra;
pub mod footer;
pub mod reader;
mod row_group;
pub mod writer;

pub use columns::schema;
pub use error::CompactedError;
pub use extra::{ExtraColumns, ValueRestorer};
pub use footer::{FileStats, Footer, ParsedTail, RowGroupSpan, FOOTER_PREFETCH_BYTES};
pub use reader::{decode_group, read_batches, RebuildOptions, RebuiltBatches, RebuiltGroup};
pub use record_batch::{BatchHeader, DecodedBatch, RecordRow};
pub use writer::{write_file, FileWriter, WriterOptions, WrittenFile, WrittenMeta};

/// Version of the file layout, recorded in the Parquet key-value metadata: "1" for files
/// rewritten from the WAL (every offset of the range has its record).
pub const FORMAT_VERSION: &str = "1";
/// Files written by key compaction: the same columns, but a batch may hold fewer records than
/// its offset span, batches may be missing between others (gaps), and a batch may carry
/// Kafka's delete horizon (attribute bit 6, in the base timestamp). Readers of version 1 only
/// would serve wrong offsets across gaps, so they must refuse it.
pub const KEY_COMPACTED_FORMAT_VERSION: &str = "2";
/// Appended to either version when the file's extra columns elided values (see
/// [`ExtraColumns`]): such a file is read with a [`ValueRestorer`], and a reader that predates
/// elision must refuse it rather than serve the kept bytes alone.
pub const VALUES_ELIDED_SUFFIX: &str = "+elided-values";
/// Versions this reader decodes.
pub const FORMAT_VERSIONS_READ: &[&str] = &[
    FORMAT_VERSION,
    KEY_COMPACTED_FORMAT_VERSION,
    "1+elided-values",
    "2+elided-values",
];
/// Key-value metadata key naming [`FORMAT_VERSION`].
pub const FORMAT_VERSION_KEY: &str = "kafka.compacted.format.version";

/// Object key of a compacted file holding `[base_offset, end_offset)` of a stream. The name is
/// a function of the range so that a replayed task overwrites, never duplicates.
pub fn file_key(prefix: &str, stream: &str, base_offset: u64, end_offset: u64) -> String {
    format!("{prefix}/{stream}/{base_offset:020}-{end_offset:020}.parquet")
}

#[cfg(test)]
// Test code: batch numbers, offsets and file positions of small test files converted with `as`.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]
mod tests {
    use super::*;
    use bytes::{Bytes, BytesMut};
    use record_batch::DecodedBatch;
    use record_batch::{decode_batch, encode_batch, split_batches};

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
            let opts = RebuildOptions {
                recompress,
                ..RebuildOptions::default()
            };
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
    fn a_row_group_read_by_its_range_alone_serves_reads_from_any_offset() {
        let slices = vec![(0u64, payload(0, 6, "a")), (18, payload(4, 6, "b"))];
        let options = WriterOptions {
            row_group_rows_target: 6,
            row_group_bytes_target: 1 << 20,
        };
        let written = write_file("t-0", &slices, &options).unwrap();
        let file = written.bytes;
        let len = file.len() as u64;
        // A tail too short for the footer asks for exactly the footer's length.
        let needed = match Footer::parse(&file[file.len() - 16..], len).unwrap() {
            ParsedTail::NeedTailBytes(n) => n,
            ParsedTail::Footer(_) => panic!("16 bytes cannot hold the footer"),
        };
        let tail = &file[file.len() - needed as usize..];
        let ParsedTail::Footer(footer) = Footer::parse(tail, len).unwrap() else {
            panic!("the footer's own length suffices");
        };
        assert_eq!(footer.groups.len(), 6, "36 records in row groups of 6");
        assert_eq!(footer.first_group_from(13), Some(2));
        assert_eq!(footer.groups[2].offsets, Some((12, 17)));
        let span = footer.groups[2];
        let range = file.slice(span.byte_start as usize..span.byte_end as usize);
        let group = decode_group(&footer, 2, range, &RebuildOptions::default()).unwrap();
        assert_eq!(group.end_offset(), Some(18));
        let read = group.read_from(13, 1).unwrap();
        assert_eq!((read.base_offset, read.batches.len()), (12, 1));
        let whole = group.read_from(13, usize::MAX).unwrap();
        assert_eq!(whole.batches.len(), 2);
        let records = records_of(whole.bytes);
        assert_eq!(records.len(), 6);
        assert_eq!(records[0].key.as_deref(), Some(&b"a-4-0"[..]));
        assert!(group.read_from(18, 1).is_none());
        // A range that is not the row group's is refused, not misread.
        let wrong = file.slice(span.byte_start as usize..span.byte_end as usize - 1);
        assert!(decode_group(&footer, 2, wrong, &RebuildOptions::default()).is_err());
    }

    #[test]
    fn reading_across_row_groups_returns_contiguous_batches() {
        let slices = vec![(40u64, payload(0, 8, "c"))];
        let options = WriterOptions {
            row_group_rows_target: 6,
            row_group_bytes_target: 1 << 20,
        };
        let written = write_file("t-0", &slices, &options).unwrap();
        let got = read_batches(written.bytes, 44, usize::MAX, &RebuildOptions::default()).unwrap();
        assert_eq!(got.base_offset, 43);
        let offsets: Vec<i64> = split_batches(got.bytes)
            .unwrap()
            .iter()
            .map(|b| decode_batch(b).unwrap().header.base_offset)
            .collect();
        assert_eq!(offsets, vec![43, 46, 49, 52, 55, 58, 61]);
    }

    #[test]
    fn a_key_compacted_file_is_version_2_and_reads_step_over_its_gaps() {
        let batch = |base: i64, span: i32, kept: &[i32]| DecodedBatch {
            header: BatchHeader {
                base_offset: base,
                partition_leader_epoch: -1,
                attributes: 0,
                last_offset_delta: span - 1,
                base_timestamp: 7,
                max_timestamp: 7,
                producer_id: -1,
                producer_epoch: -1,
                base_sequence: -1,
            },
            records: kept
                .iter()
                .map(|d| RecordRow {
                    attributes: 0,
                    timestamp_delta: 0,
                    offset_delta: *d,
                    key: Some(Bytes::from(format!("k{}", base + i64::from(*d)))),
                    value: Some(Bytes::from_static(b"v")),
                    headers: vec![],
                })
                .collect(),
        };
        let meta = |records| crate::index::BatchMeta {
            len: 100,
            records,
            max_timestamp: 7,
            producer: None,
        };
        let mut writer = FileWriter::key_compacted("t-0", &WriterOptions::default(), None).unwrap();
        // [0, 3) keeps offset 1; [3, 10) is gone; [10, 12) keeps 11; the metas tile [0, 12).
        writer.push_decoded(0, &batch(0, 3, &[1]), meta(3)).unwrap();
        writer
            .push_decoded(10, &batch(10, 2, &[1]), meta(9))
            .unwrap();
        let (file, written) = writer.finish().unwrap();
        assert_eq!(written.records, 12);
        let ParsedTail::Footer(footer) = Footer::parse(&file, file.len() as u64).unwrap() else {
            panic!("the whole file holds the footer");
        };
        let span = footer.groups[0];
        let range = file.slice(span.byte_start as usize..span.byte_end as usize);
        let group = decode_group(&footer, 0, range, &RebuildOptions::default()).unwrap();
        let first = group.read_from(0, usize::MAX).unwrap();
        assert_eq!(
            (first.base_offset, first.batches.len()),
            (0, 1),
            "a run ends at a gap"
        );
        let next = group.read_from(3, usize::MAX).unwrap();
        assert_eq!(
            next.base_offset, 10,
            "a read in the gap gets the next batch"
        );
        assert_eq!(records_of(next.bytes)[0].offset_delta, 1);
        let whole = read_batches(file, 0, usize::MAX, &RebuildOptions::default()).unwrap();
        assert_eq!(whole.batches.len(), 1);
    }

    #[test]
    fn a_batch_with_repeated_offset_deltas_an_older_build_stored_compacts_and_reads_past() {
        // Produce validation now refuses deltas (0, 0); such a batch may already be stored.
        let header = |base_offset| BatchHeader {
            base_offset,
            partition_leader_epoch: -1,
            attributes: 0,
            last_offset_delta: 1,
            base_timestamp: 7,
            max_timestamp: 7,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
        };
        let row = |offset_delta, value: &'static [u8]| RecordRow {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta,
            key: None,
            value: Some(Bytes::from_static(value)),
            headers: vec![],
        };
        let bad = encode_batch(&header(0), &[row(0, b"a"), row(0, b"b")], 0).unwrap();
        let good = encode_batch(&header(0), &[row(0, b"c"), row(1, b"d")], 0).unwrap();
        let payload = Bytes::from([bad.as_ref(), good.as_ref()].concat());
        let written = write_file("t-0", &[(0, payload)], &WriterOptions::default()).unwrap();
        let all = read_batches(
            written.bytes.clone(),
            0,
            usize::MAX,
            &RebuildOptions::default(),
        )
        .unwrap();
        let values: Vec<Bytes> = records_of(all.bytes)
            .into_iter()
            .filter_map(|r| r.value)
            .collect();
        assert_eq!(values, [&b"a"[..], b"b", b"c", b"d"]);
        let next = read_batches(written.bytes, 2, usize::MAX, &RebuildOptions::default()).unwrap();
        assert_eq!(
            next.base_offset, 2,
            "a read past the batch gets the next one"
        );
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
