//! Property tests: the decoder never panics, whatever bytes it is given, and every valid object
//! it accepts round-trips.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: indices, small counts and lengths of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use bytes::Bytes;
use proptest::prelude::*;
use storage::wal::format::{
    decode_directory, decode_object, encode_object, parse_footer, verify_slice, SliceSpec,
    FOOTER_LEN,
};

#[derive(Debug, Clone)]
struct Slice {
    stream: String,
    chunks: Vec<Vec<u8>>,
    batch_count: u32,
    record_count: u32,
    min_timestamp: i64,
    span: u32,
}

fn slice() -> impl Strategy<Value = Slice> {
    (
        "[a-z0-9._-]{1,40}",
        prop::collection::vec(prop::collection::vec(any::<u8>(), 1..200), 1..4),
        any::<u32>(),
        any::<u32>(),
        -1i64..i64::MAX / 2,
        any::<u32>(),
    )
        .prop_map(
            |(stream, chunks, batch_count, record_count, min_timestamp, span)| Slice {
                stream,
                chunks,
                batch_count,
                record_count,
                min_timestamp,
                span,
            },
        )
}

fn encode(slices: &[Slice]) -> Bytes {
    let payloads: Vec<Vec<Bytes>> = slices
        .iter()
        .map(|s| s.chunks.iter().map(|c| Bytes::copy_from_slice(c)).collect())
        .collect();
    let specs: Vec<SliceSpec<'_>> = slices
        .iter()
        .zip(&payloads)
        .map(|(s, payload)| SliceSpec {
            stream: &s.stream,
            payload,
            batch_count: s.batch_count,
            record_count: s.record_count,
            min_timestamp: s.min_timestamp,
            max_timestamp: s.min_timestamp + i64::from(s.span),
        })
        .collect();
    encode_object(&specs).unwrap().0
}

/// Decoding any input must return, not panic; and the footer path must agree with the full one.
fn decode_all_ways(bytes: &[u8]) {
    let full = decode_object(bytes);
    if bytes.len() >= FOOTER_LEN {
        if let Ok(footer) = parse_footer(&bytes[bytes.len() - FOOTER_LEN..]) {
            let start = footer.directory_offset.min(bytes.len() as u64) as usize;
            let end =
                (start as u64 + u64::from(footer.directory_len)).min(bytes.len() as u64) as usize;
            let from_end = decode_directory(&bytes[start..end], &footer);
            if let Ok(entries) = &full {
                assert_eq!(from_end.as_ref().ok(), Some(entries));
            }
        }
    }
    if let Ok(entries) = full {
        for entry in entries {
            let slice = &bytes[entry.offset as usize..][..entry.len as usize];
            assert!(verify_slice(slice, entry.len, entry.crc32c).is_ok());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        decode_all_ways(&bytes);
    }

    #[test]
    fn valid_objects_round_trip(slices in prop::collection::vec(slice(), 1..8)) {
        let object = encode(&slices);
        let entries = decode_object(&object).unwrap();
        prop_assert_eq!(entries.len(), slices.len());
        for (entry, slice) in entries.iter().zip(&slices) {
            prop_assert_eq!(&entry.stream, &slice.stream);
            let payload = &object[entry.offset as usize..][..entry.len as usize];
            prop_assert_eq!(payload.to_vec(), slice.chunks.concat());
        }
    }

    #[test]
    fn mutated_valid_objects_never_panic_and_are_rejected(
        slices in prop::collection::vec(slice(), 1..6),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..6),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = encode(&slices).to_vec();
        let positions: Vec<usize> = edits.iter().map(|(at, _)| at.index(bytes.len())).collect();
        for (&i, (_, xor)) in positions.iter().zip(&edits) {
            bytes[i] ^= xor;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        decode_all_ways(&bytes);
        // Edits can cancel out only when two hit the same byte; otherwise the object changed.
        let distinct: std::collections::HashSet<_> = positions.iter().collect();
        if truncate || distinct.len() == positions.len() {
            prop_assert!(decode_object(&bytes).is_err());
        }
    }
}
