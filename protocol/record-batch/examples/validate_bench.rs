//! What produce validation costs: the one streaming pass over every record of a batch
//! (`validate_produced`) against the CRC pass that was all the produce path did before, per
//! codec, for batches kept as received. One thread; MiB/s of uncompressed record bytes.
//!
//!     cargo run --release -p record-batch --example validate_bench [-- BATCH_KIB...]
//!
//! Records are 1 KiB of JSON-like text (as `reencode_bench`), batches of 16 KiB (librdkafka's
//! and Java's defaults) and 1 MiB (a tuned producer).

// A benchmark program: a failed setup step should stop it loudly, and its record indices and
// counts (a few thousand at most) are converted with `as`.
#![allow(clippy::expect_used)]
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use record_batch::validate::{validate_produced, Limits};
use record_batch::{encode_batch, BatchHeader, RecordRow, DECOMPRESSED_BYTES_MAX};

const RECORD_BYTES: usize = 1024;
const CODECS: [(i16, &str); 5] = [
    (0, "none"),
    (1, "gzip"),
    (2, "snappy"),
    (3, "lz4"),
    (4, "zstd"),
];

fn record_value(seed: &mut u64) -> Vec<u8> {
    let mut out = String::with_capacity(RECORD_BYTES + 64);
    while out.len() < RECORD_BYTES {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = *seed >> 33;
        out.push_str(&format!(
            "{{\"user\":\"user-{}\",\"event\":\"{}\",\"amount\":{}.{:02},\"ts\":{}}},",
            n % 10_000,
            ["click", "view", "purchase", "scroll"][(n % 4) as usize],
            n % 1000,
            n % 100,
            1_700_000_000_000u64 + n % 1_000_000
        ));
    }
    out.truncate(RECORD_BYTES);
    out.into_bytes()
}

fn batch(codec: i16, batch_bytes: usize, seed: &mut u64) -> (Bytes, usize) {
    let count = (batch_bytes / RECORD_BYTES).max(1);
    let records: Vec<RecordRow> = (0..count)
        .map(|i| RecordRow {
            attributes: 0,
            timestamp_delta: i as i64,
            offset_delta: i as i32,
            key: Some(Bytes::from(format!("key-{i}"))),
            value: Some(Bytes::from(record_value(seed))),
            headers: vec![],
        })
        .collect();
    let header = BatchHeader {
        base_offset: 0,
        partition_leader_epoch: -1,
        attributes: codec,
        last_offset_delta: count as i32 - 1,
        base_timestamp: 1_700_000_000_000,
        max_timestamp: 1_700_000_000_000 + count as i64 - 1,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    };
    let plain = encode_batch(&header, &records, 0)
        .map(|b| b.len())
        .unwrap_or(0);
    (
        encode_batch(&header, &records, codec).expect("a batch"),
        plain,
    )
}

/// Uncompressed MiB/s of running `f` over `batch` for about half a second.
fn rate(plain_bytes: usize, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut rounds = 0u64;
    while start.elapsed() < Duration::from_millis(500) {
        f();
        rounds += 1;
    }
    (plain_bytes as f64 * rounds as f64) / start.elapsed().as_secs_f64() / (1 << 20) as f64
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<usize>().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![16, 1024]
    } else {
        sizes
    };
    let limits = Limits {
        batch_bytes_max: usize::MAX,
        decompressed_bytes_max: DECOMPRESSED_BYTES_MAX,
    };
    let mut seed = 42u64;
    for kib in sizes {
        println!("\n## batches of {kib} KiB of 1 KiB records: MiB/s of record bytes, one thread\n");
        println!("| codec | crc only (before) | validation (after) | per batch |");
        println!("|---|---|---|---|");
        for (codec, label) in CODECS {
            let (bytes, plain_len) = batch(codec, kib << 10, &mut seed);
            let crc = rate(plain_len, || {
                std::hint::black_box(crc32c::crc32c(&bytes[21..]));
            });
            let mut records = 0usize;
            let validate = rate(plain_len, || {
                let v = validate_produced(&bytes, &limits, |_| records += 1);
                std::hint::black_box(v.is_ok());
            });
            let per_batch_us = plain_len as f64 / (validate * (1 << 20) as f64) * 1e6;
            println!("| {label} | {crc:.0} | {validate:.0} | {per_batch_us:.1} us |");
        }
    }
}
