// Test code: batch numbers and offsets of small test files converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use bytes::{Bytes, BytesMut};

use super::*;
use crate::compacted::{read_batches, BatchHeader, RebuildOptions, RecordRow};
use record_batch::encode_batch;

/// Five WAL payloads (one per codec) of six batches of ten records each, with null keys and
/// values and zero, one or two headers: 300 records at offsets 1000..1300.
fn fixed_slices() -> Vec<(u64, Bytes)> {
    let mut slices = Vec::new();
    let mut base = 1_000u64;
    for codec in 0..5i16 {
        let mut payload = Vec::new();
        for b in 0..6i64 {
            let header = BatchHeader {
                base_offset: 0,
                partition_leader_epoch: 3,
                attributes: codec,
                last_offset_delta: 9,
                base_timestamp: 1_700_000_000_000 + b,
                max_timestamp: 1_700_000_000_009 + b,
                producer_id: if b % 2 == 0 { 7 } else { -1 },
                producer_epoch: 2,
                base_sequence: 10 * b as i32,
            };
            let records: Vec<RecordRow> = (0..10)
                .map(|i| RecordRow {
                    attributes: 0,
                    timestamp_delta: i64::from(i),
                    offset_delta: i,
                    key: (i != 4).then(|| Bytes::from(format!("key-{codec}-{b}-{i}"))),
                    value: (i != 7).then(|| Bytes::from(format!("value {b} {i} ").repeat(30))),
                    headers: match i % 3 {
                        0 => vec![],
                        1 => vec![(Bytes::from_static(b"h"), None)],
                        _ => vec![
                            (Bytes::from_static(b"a"), Some(Bytes::from_static(b"1"))),
                            (Bytes::from_static(b"b"), None),
                        ],
                    },
                })
                .collect();
            payload.extend_from_slice(&encode_batch(&header, &records, codec).unwrap());
        }
        slices.push((base, Bytes::from(payload)));
        base += 60;
    }
    slices
}

fn small_groups() -> WriterOptions {
    WriterOptions {
        row_group_rows_target: 25,
        row_group_bytes_target: 1 << 20,
    }
}

/// Pushes every slice, draining the output after each push; returns the drained chunks (the
/// tail last) and the metadata.
fn write_streaming(options: &WriterOptions) -> (Vec<Bytes>, WrittenMeta) {
    let mut writer = FileWriter::new("t-0", options).unwrap();
    let mut chunks = Vec::new();
    for (base_offset, payload) in fixed_slices() {
        writer.push(base_offset, payload).unwrap();
        chunks.push(writer.take_output().unwrap());
    }
    let (tail, meta) = writer.finish().unwrap();
    chunks.push(tail);
    (chunks, meta)
}

fn concat(chunks: &[Bytes]) -> Bytes {
    let mut out = BytesMut::new();
    for c in chunks {
        out.extend_from_slice(c);
    }
    out.freeze()
}

#[test]
fn draining_after_every_push_yields_the_same_bytes_as_one_shot() {
    for options in [small_groups(), WriterOptions::default()] {
        let one_shot = write_file("t-0", &fixed_slices(), &options).unwrap();
        let (chunks, meta) = write_streaming(&options);
        assert_eq!(concat(&chunks), one_shot.bytes);
        assert_eq!(meta.records, one_shot.records);
        assert_eq!(meta.batches.len(), one_shot.batches.len());
        assert_eq!(
            (meta.min_timestamp, meta.max_timestamp),
            (one_shot.min_timestamp, one_shot.max_timestamp)
        );
    }
}

#[test]
fn length_and_crc_cover_the_whole_file() {
    let (chunks, meta) = write_streaming(&small_groups());
    let file = concat(&chunks);
    assert_eq!(meta.byte_len, file.len() as u64);
    assert_eq!(meta.crc32c, crc32c::crc32c(&file));
    assert_eq!(meta.records, 300);
    assert_eq!(meta.batches.len(), 30);
    assert_eq!(meta.min_timestamp, 1_700_000_000_000);
    assert_eq!(meta.max_timestamp, 1_700_000_000_014);
}

#[test]
fn finished_row_groups_are_output_before_the_file_ends() {
    let (chunks, _) = write_streaming(&small_groups());
    // 60 records per push, row groups of 25: every push finishes at least two row groups.
    for (i, chunk) in chunks[..chunks.len() - 1].iter().enumerate() {
        assert!(
            chunk.len() > 1_000,
            "push {i} drained only {} bytes",
            chunk.len()
        );
    }
}

/// Bytes of the files written before the writer streamed (parquet 60.1.0, whose version is in
/// the footer: a parquet upgrade changes these, and the new values must be checked with
/// DuckDB or pyarrow before they replace these). Changed once since, on purpose: the schema
/// gained Parquet field ids and a `partition` column (Iceberg tables), read back by pyarrow,
/// DuckDB and pyiceberg.
#[test]
fn output_is_byte_identical_to_the_files_written_before_streaming() {
    let small = write_file("t-0", &fixed_slices(), &small_groups()).unwrap();
    assert_eq!(
        (small.bytes.len(), crc32c::crc32c(&small.bytes)),
        (54_740, 0x6d7a_d345)
    );
    let (chunks, _) = write_streaming(&WriterOptions::default());
    let default = concat(&chunks);
    assert_eq!(
        (default.len(), crc32c::crc32c(&default)),
        (9_747, 0x4cb6_470c)
    );
}

#[test]
fn a_streamed_file_reads_back_every_record_in_order() {
    let (chunks, _) = write_streaming(&small_groups());
    let got = read_batches(concat(&chunks), 0, usize::MAX, &RebuildOptions::default()).unwrap();
    assert_eq!(got.base_offset, 1_000);
    let mut expected_offset = 1_000u64;
    let mut records = Vec::new();
    for batch in record_batch::split_batches(got.bytes).unwrap() {
        let decoded = record_batch::decode_batch(&batch).unwrap();
        assert_eq!(decoded.header.base_offset as u64, expected_offset);
        expected_offset += decoded.records.len() as u64;
        records.extend(decoded.records);
    }
    assert_eq!(expected_offset, 1_300);
    let sent: Vec<RecordRow> = fixed_slices()
        .into_iter()
        .flat_map(|(_, p)| record_batch::split_batches(p).unwrap())
        .flat_map(|b| record_batch::decode_batch(&b).unwrap().records)
        .collect();
    assert_eq!(records, sent);
}

#[test]
fn a_batch_with_a_bad_crc_is_refused() {
    let (base_offset, payload) = fixed_slices().swap_remove(0);
    let mut corrupt = payload.to_vec();
    // Past the 61-byte batch header: inside the first batch's records, which its CRC covers.
    corrupt[80] ^= 0x01;
    let mut writer = FileWriter::new("t-0", &small_groups()).unwrap();
    let err = writer.push(base_offset, Bytes::from(corrupt)).unwrap_err();
    assert!(
        matches!(err, CompactedError::BadBatch(ref m) if m.contains("crc")),
        "{err}"
    );
    let err = write_file(
        "t-0",
        &[(base_offset, payload.slice(..100))],
        &small_groups(),
    );
    assert!(matches!(err, Err(CompactedError::BadBatch(_))));
}

#[test]
fn a_stored_batch_with_a_negative_last_offset_delta_is_refused_not_counted() {
    let header = BatchHeader {
        base_offset: 0,
        partition_leader_epoch: 0,
        attributes: 0,
        last_offset_delta: -1,
        base_timestamp: 0,
        max_timestamp: 0,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    };
    let batch = encode_batch(&header, &[], 0).unwrap();
    let mut writer = FileWriter::new("t-0", &WriterOptions::default()).unwrap();
    let pushed = writer.push(0, batch);
    assert!(
        matches!(pushed, Err(CompactedError::BadBatch(_))),
        "{pushed:?}"
    );
    assert_eq!(writer.records(), 0);
}
