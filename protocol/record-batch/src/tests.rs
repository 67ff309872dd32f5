//! Each refusal of produce validation, as Kafka 4.1 answers it (checked against the reference
//! broker by `tests/e2e/test_bad_input.py`), and the rewrites.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use crate::header::{finish_batch, fix_crc, HEADER_BYTES, MAGIC_OFFSET, RECORDS_COUNT_OFFSET};
use crate::rewrite::{record_timestamps, reencode};
use crate::validate::{single_batch, validate_produced, Limits, RecordInfo};
use crate::varint::put_varlong;
use crate::{
    decode_batch, encode_batch, stamp_log_append_time, BatchHeader, RecordBatchError, RecordRow,
};

const LIMITS: Limits = Limits {
    batch_bytes_max: 1 << 20,
    decompressed_bytes_max: 1 << 20,
};

fn header(codec: i16, last_offset_delta: i32) -> BatchHeader {
    BatchHeader {
        base_offset: 0,
        partition_leader_epoch: -1,
        attributes: codec,
        last_offset_delta,
        base_timestamp: 1_000,
        max_timestamp: 1_005,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    }
}

fn rows(deltas: &[i32]) -> Vec<RecordRow> {
    deltas
        .iter()
        .enumerate()
        .map(|(i, delta)| RecordRow {
            attributes: 0,
            timestamp_delta: [0i64, 5, -3][i % 3],
            offset_delta: *delta,
            key: (i != 1).then(|| Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from(vec![b'v'; 300])),
            headers: vec![(Bytes::from_static(b"h"), None)],
        })
        .collect()
}

fn batch(codec: i16) -> Vec<u8> {
    encode_batch(&header(codec, 2), &rows(&[0, 1, 2]), codec)
        .unwrap()
        .to_vec()
}

/// A batch with raw `records` bytes (any codec bits, not compressed here) and a valid CRC.
fn raw_batch(codec: i16, count: i32, records: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    header(codec, count - 1).write(&mut out, codec, count);
    out.extend_from_slice(records);
    finish_batch(&mut out, 0).unwrap();
    out.to_vec()
}

fn validate(batch: &[u8]) -> Result<Vec<RecordInfo>, RecordBatchError> {
    let mut seen = Vec::new();
    validate_produced(batch, &LIMITS, |r| seen.push(*r))?;
    Ok(seen)
}

fn is_invalid(r: Result<impl std::fmt::Debug, RecordBatchError>) -> bool {
    matches!(r, Err(RecordBatchError::Invalid(_)))
}

#[test]
fn batches_of_every_codec_validate_record_by_record() {
    for codec in 0..=4 {
        let b = batch(codec);
        let seen = validate(&b).unwrap();
        let times: Vec<(i32, i64, bool)> = seen
            .iter()
            .map(|r| (r.offset_delta, r.timestamp, r.has_key))
            .collect();
        assert_eq!(
            times,
            [(0, 1_000, true), (1, 1_005, false), (2, 997, true)],
            "{codec}"
        );
        assert_eq!(single_batch(&b, true).unwrap(), &b[..]);
    }
}

#[test]
fn a_count_above_the_records_present_is_invalid() {
    for codec in 0..=4 {
        let mut b = batch(codec);
        b[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4].copy_from_slice(&i32::MAX.to_be_bytes());
        b[23..27].copy_from_slice(&(i32::MAX - 1).to_be_bytes());
        fix_crc(&mut b).unwrap();
        assert!(is_invalid(validate(&b)), "{codec}");
    }
}

#[test]
fn fewer_declared_records_than_present_are_invalid() {
    let one = encode_batch(&header(3, 0), &rows(&[0, 1]), 3).unwrap();
    assert!(is_invalid(validate(&one)));
}

#[test]
fn a_count_that_disagrees_with_the_last_offset_delta_is_invalid() {
    let mut b = batch(0);
    b[23..27].copy_from_slice(&5i32.to_be_bytes());
    fix_crc(&mut b).unwrap();
    assert!(is_invalid(validate(&b)));
    let zero = raw_batch(0, 0, &[]);
    assert!(is_invalid(validate(&zero)));
}

#[test]
fn a_stored_batch_key_compaction_thinned_reads_but_a_produced_one_is_refused() {
    // Offsets 0..5 with only the records at 1 and 4 left, as Kafka's cleaner leaves a batch.
    let thinned = encode_batch(&header(3, 5), &rows(&[1, 4]), 3).unwrap();
    let times = record_timestamps(&thinned, 1 << 20).unwrap();
    let deltas: Vec<i32> = times.iter().map(|t| t.offset_delta).collect();
    assert_eq!(deltas, [1, 4]);
    assert!(is_invalid(validate(&thinned)));
    // More records than offsets is refused stored too.
    let mut over = batch(0);
    over[23..27].copy_from_slice(&1i32.to_be_bytes());
    fix_crc(&mut over).unwrap();
    assert!(record_timestamps(&over, 1 << 20).is_err());
}

/// `records` (uncompressed record bytes) in a batch of `codec`, compressed here.
fn codec_batch(codec: i16, count: i32, records: &[u8]) -> Vec<u8> {
    if codec == 0 {
        return raw_batch(0, count, records);
    }
    let mut out = BytesMut::new();
    crate::codec::compress(codec, None, records, &mut out).unwrap();
    raw_batch(codec, count, &out)
}

fn invalid_record_at(r: Result<impl std::fmt::Debug, RecordBatchError>) -> Option<i32> {
    match r {
        Err(RecordBatchError::InvalidRecord { index, .. }) => Some(index),
        _ => None,
    }
}

#[test]
fn repeated_offset_deltas_are_refused_at_the_record_in_every_codec_yet_read_when_stored() {
    for deltas in [&[0, 0, 1][..], &[0, 5, 1], &[1, 0, 2], &[0, 1, 1]] {
        for codec in 0..=4 {
            let b = encode_batch(&header(codec, 2), &rows(deltas), codec).unwrap();
            let first_wrong = (0..).zip(deltas).find(|(i, d)| i != *d).unwrap().0;
            assert_eq!(
                invalid_record_at(validate(&b)),
                Some(first_wrong),
                "{deltas:?}, codec {codec}"
            );
            // An older build stored such batches: readers still read every record.
            assert_eq!(decode_batch(&b).unwrap().records.len(), 3);
            assert_eq!(record_timestamps(&b, 1 << 20).unwrap().len(), 3);
        }
    }
}

#[test]
fn negative_lengths_other_than_minus_one_are_refused_at_the_record_in_every_codec() {
    let ok = record_bytes(&[0, 0, 0, 1, 2, b'v', 0]);
    // Key, value and header value lengths of -7 (zigzag 13) in the record at index 1.
    let bad = [
        ("key", record_bytes(&[0, 0, 2, 13, 2, b'v', 0])),
        ("value", record_bytes(&[0, 0, 2, 1, 13, 0])),
        (
            "header value",
            record_bytes(&[0, 0, 2, 1, 1, 2, 2, b'h', 13]),
        ),
    ];
    for (what, record) in bad {
        for codec in 0..=4 {
            let b = codec_batch(codec, 2, &[ok.clone(), record.clone()].concat());
            let r = validate(&b);
            assert_eq!(
                invalid_record_at(r.clone()),
                Some(1),
                "{what}, codec {codec}: {r:?}"
            );
            assert!(format!("{r:?}").contains(&format!("invalid {what} length -7")));
            // Stored by an older build: read as a null, as Kafka reads it.
            let decoded = decode_batch(&Bytes::from(b)).unwrap();
            assert_eq!(decoded.records.len(), 2, "{what}, codec {codec}");
        }
    }
}

#[test]
fn a_second_batch_is_invalid_and_a_partial_tail_is_dropped() {
    let b = batch(0);
    let two = [b.clone(), b.clone()].concat();
    assert!(is_invalid(single_batch(&two, true)));
    let tail = [b.clone(), vec![0u8; 10]].concat();
    assert_eq!(single_batch(&tail, true).unwrap(), &b[..]);
    let truncated = &b[..b.len() - 3];
    assert!(is_invalid(single_batch(truncated, true)));
    assert!(is_invalid(single_batch(&[], true)));
}

#[test]
fn magic_and_lengths_get_kafkas_answers() {
    let mut legacy = batch(0);
    legacy[MAGIC_OFFSET] = 1;
    assert!(is_invalid(single_batch(&legacy, true)));
    let mut unknown = batch(0);
    unknown[MAGIC_OFFSET] = 3;
    assert!(matches!(
        single_batch(&unknown, true),
        Err(RecordBatchError::Corrupt(_))
    ));
    let mut tiny = batch(0);
    tiny[8..12].copy_from_slice(&5i32.to_be_bytes());
    assert!(matches!(
        single_batch(&tiny, true),
        Err(RecordBatchError::Corrupt(_))
    ));
    let zstd = batch(4);
    assert!(matches!(
        single_batch(&zstd, false),
        Err(RecordBatchError::UnsupportedCodec(_))
    ));
}

#[test]
fn crc_base_offset_size_control_and_sequence_are_checked() {
    let mut b = batch(0);
    let last = b.len() - 1;
    b[last] ^= 1;
    assert!(matches!(validate(&b), Err(RecordBatchError::Corrupt(_))));
    let mut h = header(0, 2);
    h.base_offset = 7;
    assert!(is_invalid(validate(
        &encode_batch(&h, &rows(&[0, 1, 2]), 0).unwrap()
    )));
    let small = Limits {
        batch_bytes_max: 100,
        ..LIMITS
    };
    let err = validate_produced(&batch(0), &small, |_| {}).unwrap_err();
    assert!(matches!(err, RecordBatchError::TooLarge(_)));
    let mut h = header(0, 2);
    h.attributes |= 0x20;
    assert!(is_invalid(validate(
        &encode_batch(&h, &rows(&[0, 1, 2]), 0).unwrap()
    )));
    let mut h = header(0, 2);
    h.producer_id = 5;
    assert!(is_invalid(validate(
        &encode_batch(&h, &rows(&[0, 1, 2]), 0).unwrap()
    )));
}

fn record_bytes(body: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    put_varlong(&mut out, i64::try_from(body.len()).unwrap());
    out.extend_from_slice(body);
    out.to_vec()
}

#[test]
fn malformed_records_are_invalid() {
    let ok = [0u8, 0, 0, 1, 2, b'v', 0]; // attrs, ts, offset, null key, value "v", no headers
    assert!(validate(&raw_batch(0, 1, &record_bytes(&ok))).is_ok());
    let cases: [(&str, Vec<u8>); 7] = [
        (
            "record longer than the batch",
            [vec![100], ok.to_vec()].concat(),
        ),
        ("empty record", [vec![0], record_bytes(&ok)].concat()),
        ("truncated record", record_bytes(&ok)[..5].to_vec()),
        (
            "bytes after the headers",
            record_bytes(&[&ok[..], b"zz"].concat()),
        ),
        (
            "negative header count",
            record_bytes(&[0, 0, 0, 1, 2, b'v', 5]),
        ),
        (
            "null header key",
            record_bytes(&[0, 0, 0, 1, 2, b'v', 2, 1, 1]),
        ),
        ("overlong varint", [vec![0xff; 11], ok.to_vec()].concat()),
    ];
    for (what, records) in cases {
        for codec in [0, 3] {
            let payload = if codec == 0 {
                records.clone()
            } else {
                let mut out = BytesMut::new();
                crate::codec::compress(codec, None, &records, &mut out).unwrap();
                out.to_vec()
            };
            let r = validate(&raw_batch(codec, 1, &payload));
            assert!(is_invalid(r), "{what}, codec {codec}");
        }
    }
    let null_key = validate(&raw_batch(0, 1, &record_bytes(&[0, 0, 0, 1, 2, b'v', 0]))).unwrap();
    assert!(!null_key[0].has_key);
}

#[test]
fn undecodable_or_unknown_compression_is_invalid() {
    let garbage = raw_batch(4, 1, b"\x28\xb5\x2f\xfd\xff\xff\xff\xff\xff\xff");
    assert!(is_invalid(validate(&garbage)));
    let unknown = raw_batch(5, 1, &record_bytes(&[0, 0, 0, 1, 2, b'v', 0]));
    assert!(is_invalid(validate(&unknown)));
}

#[test]
fn a_compression_bomb_stops_at_the_limit() {
    // Valid records whose values inflate past the limit: refused once the limit is passed.
    let mut records = rows(&[0, 1, 2]);
    for r in &mut records {
        r.value = Some(Bytes::from(vec![0u8; 600 << 10]));
    }
    for codec in 1..=4 {
        let b = encode_batch(&header(codec, 2), &records, codec).unwrap();
        // Snappy expands at most ~21 times; the others far more.
        assert!(b.len() < 128 << 10, "codec {codec}: {}", b.len());
        let err = validate(&b).unwrap_err();
        assert!(
            matches!(err, RecordBatchError::TooLarge(_)),
            "{codec}: {err}"
        );
    }
    // Zeros: the first record is malformed, found before anything else is decompressed.
    let mut zeros = BytesMut::new();
    crate::codec::compress(4, None, &vec![0u8; 4 << 20], &mut zeros).unwrap();
    assert!(is_invalid(validate(&raw_batch(4, 1, &zeros))));
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
            expected.attributes = (expected.attributes & !7) | to;
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

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_validation(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(b) = single_batch(&bytes, true) {
            let _ = validate_produced(b, &LIMITS, |_| {});
        }
        let _ = validate_produced(&bytes, &LIMITS, |_| {});
        let _ = decode_batch(&Bytes::from(bytes));
    }

    #[test]
    fn corrupting_a_valid_batch_never_panics(pos in 0usize..2000, byte in any::<u8>(), codec in 0i16..=4) {
        let mut b = batch(codec);
        let pos = pos % b.len();
        b[pos] = byte;
        let _ = validate(&b);
        fix_crc(&mut b).unwrap();
        let _ = validate(&b);
        let _ = record_timestamps(&b, 1 << 20);
        let _ = decode_batch(&Bytes::from(b));
    }

    /// Whatever produce validation accepts of a mutated batch, every reader reads, with the
    /// same records: the decoder (the compactor, key compaction), ListOffsets' scan, and a
    /// rebuild from the decoded rows (what the Parquet reader does).
    #[test]
    fn what_validation_accepts_every_reader_reads_alike(
        mutations in proptest::collection::vec((0usize..2000, any::<u8>()), 1..4),
        codec in 0i16..=4,
    ) {
        let plain = batch(0);
        let mut records = plain[HEADER_BYTES..].to_vec();
        for (pos, byte) in mutations {
            let pos = pos % records.len();
            records[pos] = byte;
        }
        let b = codec_batch(codec, 3, &records);
        let Ok(seen) = validate(&b) else {
            return Ok(());
        };
        let decoded = decode_batch(&Bytes::from(b.clone())).unwrap();
        prop_assert_eq!(decoded.records.len(), seen.len());
        for (info, row) in seen.iter().zip(&decoded.records) {
            prop_assert_eq!(info.offset_delta, info.index);
            prop_assert_eq!(row.offset_delta, info.index);
            prop_assert_eq!(row.key.is_some(), info.has_key);
        }
        let times = record_timestamps(&b, 1 << 20).unwrap();
        let expected: Vec<(i32, i64)> = seen.iter().map(|r| (r.offset_delta, r.timestamp)).collect();
        let got: Vec<(i32, i64)> = times.iter().map(|t| (t.offset_delta, t.timestamp)).collect();
        prop_assert_eq!(got, expected);
        let rebuilt = encode_batch(&decoded.header, &decoded.records, codec).unwrap();
        prop_assert_eq!(decode_batch(&rebuilt).unwrap().records, decoded.records.clone());
        prop_assert!(validate(&rebuilt).is_ok());
    }
}
