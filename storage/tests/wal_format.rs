//! Deterministic tests of the WAL object format: round trip, corruption, truncation, limits.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: indices, small counts and lengths of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use bytes::Bytes;
use storage::wal::format::{
    decode_directory, decode_object, encode_object, encode_object_parts, parse_footer,
    verify_slice, FormatError, Region, SliceSpec, DIRECTORY_ENTRY_FIXED_LEN, FOOTER_LEN,
    HEADER_LEN, OBJECT_BYTES_MAX, SLICE_COUNT_MAX, STREAM_ID_BYTES_MAX,
};

fn spec<'a>(stream: &'a str, payload: &'a [Bytes]) -> SliceSpec<'a> {
    SliceSpec {
        stream,
        payload,
        batch_count: 2,
        record_count: 7,
        min_timestamp: 1_000,
        max_timestamp: 2_000,
    }
}

fn sample() -> (Bytes, Vec<Vec<Bytes>>) {
    let payloads = vec![
        vec![
            Bytes::from_static(b"first batch of a"),
            Bytes::from_static(b"+second"),
        ],
        vec![Bytes::from(vec![7u8; 300])],
        vec![Bytes::from_static(b"c")],
    ];
    let streams = ["topic-a-0", "topic-b-12", "\u{e9}t\u{e9}-3"];
    let specs: Vec<_> = streams
        .iter()
        .zip(&payloads)
        .map(|(s, p)| spec(s, p))
        .collect();
    let (object, _) = encode_object(&specs).unwrap();
    (object, payloads)
}

#[test]
fn round_trip_returns_entries_and_payload_ranges() {
    let a = [Bytes::from_static(b"hello "), Bytes::from_static(b"world")];
    let b = [Bytes::from(vec![1u8; 1000])];
    let specs = [
        SliceSpec {
            stream: "s-0",
            payload: &a,
            batch_count: 2,
            record_count: 5,
            min_timestamp: -1,
            max_timestamp: -1,
        },
        SliceSpec {
            stream: "s-1",
            payload: &b,
            batch_count: 1,
            record_count: 9,
            min_timestamp: 5,
            max_timestamp: 99,
        },
    ];
    let (object, entries) = encode_object(&specs).unwrap();
    assert_eq!(decode_object(&object).unwrap(), entries);
    assert_eq!(entries[0].stream, "s-0");
    assert_eq!((entries[0].batch_count, entries[0].record_count), (2, 5));
    assert_eq!(
        (entries[1].min_timestamp, entries[1].max_timestamp),
        (5, 99)
    );
    let first = &object[entries[0].offset as usize..][..entries[0].len as usize];
    assert_eq!(first, b"hello world");
    let second = &object[entries[1].offset as usize..][..entries[1].len as usize];
    assert_eq!(second, &b[0][..]);
    for entry in &entries {
        let slice = &object[entry.offset as usize..][..entry.len as usize];
        verify_slice(slice, entry.len, entry.crc32c).unwrap();
    }
}

#[test]
fn the_object_built_from_parts_shares_every_payload_buffer_and_reads_back_whole() {
    let a = [Bytes::from_static(b"hello "), Bytes::from_static(b"world")];
    let b = [Bytes::from(vec![1u8; 1000])];
    let specs = [spec("s-0", &a), spec("s-1", &b)];
    let (parts, entries) = encode_object_parts(&specs).unwrap();
    let whole = parts.to_bytes();
    assert_eq!(decode_object(&whole).unwrap(), entries);
    assert_eq!(whole, encode_object(&specs).unwrap().0);
    let sent: Vec<Bytes> = parts.payload().iter().cloned().collect();
    assert_eq!(
        sent.len(),
        2 + a.len() + b.len(),
        "header+directory, 3 payloads, footer"
    );
    for (chunk, original) in sent[1..4].iter().zip(a.iter().chain(&b)) {
        assert_eq!(
            chunk.as_ptr(),
            original.as_ptr(),
            "payloads are sent uncopied"
        );
    }
    let second = parts.range(entries[1].offset, entries[1].len).unwrap();
    assert_eq!(
        second.as_ptr(),
        b[0].as_ptr(),
        "a slice of one append reads from its buffer"
    );
    let first = parts.range(entries[0].offset, entries[0].len).unwrap();
    assert_eq!(&first[..], b"hello world");
    verify_slice(&first, entries[0].len, entries[0].crc32c).unwrap();
}

#[test]
fn overhead_is_fixed_per_object_plus_fixed_per_slice_and_stream_id() {
    let p = [Bytes::from_static(b"x")];
    let (one, _) = encode_object(&[spec("ab", &p)]).unwrap();
    let (two, _) = encode_object(&[spec("ab", &p), spec("abcd", &p)]).unwrap();
    let object_overhead = HEADER_LEN + 4 + FOOTER_LEN;
    assert_eq!(
        one.len(),
        object_overhead + DIRECTORY_ENTRY_FIXED_LEN + 2 + 1
    );
    assert_eq!(two.len(), one.len() + DIRECTORY_ENTRY_FIXED_LEN + 4 + 1);
}

#[test]
fn every_single_byte_corruption_is_detected() {
    let (object, _) = sample();
    for at in 0..object.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = object.to_vec();
            bad[at] ^= flip;
            assert!(
                decode_object(&bad).is_err(),
                "flip {flip:#x} at byte {at} went unnoticed"
            );
        }
    }
}

#[test]
fn every_truncation_and_extension_is_detected() {
    let (object, _) = sample();
    for len in 0..object.len() {
        assert!(
            decode_object(&object[..len]).is_err(),
            "truncation to {len} bytes went unnoticed"
        );
    }
    let mut longer = object.to_vec();
    longer.push(0);
    assert!(decode_object(&longer).is_err());
}

#[test]
fn corrupt_payload_names_its_slice() {
    let (object, _) = sample();
    let entries = decode_object(&object).unwrap();
    let mut bad = object.to_vec();
    bad[entries[1].offset as usize + 10] ^= 0x40;
    assert!(matches!(
        decode_object(&bad),
        Err(FormatError::ChecksumMismatch {
            region: Region::Slice(1),
            ..
        })
    ));
}

#[test]
fn verify_slice_rejects_wrong_length_and_wrong_crc() {
    let (object, _) = sample();
    let entry = &decode_object(&object).unwrap()[0];
    let slice = &object[entry.offset as usize..][..entry.len as usize];
    assert!(matches!(
        verify_slice(&slice[1..], entry.len, entry.crc32c),
        Err(FormatError::LengthMismatch { .. })
    ));
    assert!(matches!(
        verify_slice(slice, entry.len, entry.crc32c ^ 1),
        Err(FormatError::ChecksumMismatch { .. })
    ));
    let mut flipped = slice.to_vec();
    flipped[0] ^= 1;
    assert!(verify_slice(&flipped, entry.len, entry.crc32c).is_err());
}

#[test]
fn directory_can_be_read_from_the_end() {
    let (object, _) = sample();
    let footer = parse_footer(&object[object.len() - FOOTER_LEN..]).unwrap();
    let start = footer.directory_offset as usize;
    let dir = &object[start..start + footer.directory_len as usize];
    assert_eq!(
        decode_directory(dir, &footer).unwrap(),
        decode_object(&object).unwrap()
    );
}

#[test]
fn footer_with_absurd_directory_length_is_rejected_before_reading_it() {
    let (object, _) = sample();
    let mut tail = object[object.len() - FOOTER_LEN..].to_vec();
    tail[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    let crc = crc32c::crc32c(&tail[..16]);
    tail[16..20].copy_from_slice(&crc.to_le_bytes());
    assert!(matches!(
        parse_footer(&tail),
        Err(FormatError::LengthMismatch { .. })
    ));
}

#[test]
fn encoder_rejects_what_the_decoder_would_reject() {
    let p = [Bytes::from_static(b"x")];
    let empty: [Bytes; 0] = [];
    assert_eq!(encode_object(&[]).unwrap_err(), FormatError::NoSlices);
    assert!(matches!(
        encode_object(&[spec("", &p)]),
        Err(FormatError::BadStreamIdLength { .. })
    ));
    let long = "s".repeat(STREAM_ID_BYTES_MAX + 1);
    assert!(matches!(
        encode_object(&[spec(&long, &p)]),
        Err(FormatError::BadStreamIdLength { .. })
    ));
    let longest = "s".repeat(STREAM_ID_BYTES_MAX);
    assert!(encode_object(&[spec(&longest, &p)]).is_ok());
    assert!(matches!(
        encode_object(&[spec("s", &empty)]),
        Err(FormatError::EmptySlice { index: 0 })
    ));
    let mut backwards = spec("s", &p);
    backwards.min_timestamp = 10;
    backwards.max_timestamp = 9;
    assert!(matches!(
        encode_object(&[backwards]),
        Err(FormatError::BadTimestamps { .. })
    ));
    let many = vec![spec("s", &p); SLICE_COUNT_MAX + 1];
    assert!(matches!(
        encode_object(&many),
        Err(FormatError::TooManySlices { .. })
    ));
}

#[test]
fn encoder_rejects_objects_over_the_size_limit_without_allocating_them() {
    // Shared chunks: the specs describe > OBJECT_BYTES_MAX bytes while holding 64 MiB.
    let chunk = Bytes::from(vec![0u8; 64 << 20]);
    let payload = vec![chunk; (OBJECT_BYTES_MAX >> 26) as usize + 1];
    assert!(matches!(
        encode_object(&[spec("s", &payload)]),
        Err(FormatError::TooLarge { .. })
    ));
}

#[test]
fn other_versions_and_flags_are_rejected() {
    let (object, _) = sample();
    let mut newer = object.to_vec();
    newer[4..6].copy_from_slice(&2u16.to_le_bytes());
    let crc = crc32c::crc32c(&newer[..HEADER_LEN - 4]);
    newer[HEADER_LEN - 4..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(
        decode_object(&newer),
        Err(FormatError::UnsupportedVersion(2))
    );
    let mut flagged = object.to_vec();
    flagged[6..8].copy_from_slice(&1u16.to_le_bytes());
    let crc = crc32c::crc32c(&flagged[..HEADER_LEN - 4]);
    flagged[HEADER_LEN - 4..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(decode_object(&flagged), Err(FormatError::UnknownFlags(1)));
}
