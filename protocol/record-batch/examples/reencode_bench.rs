//! What `compression.type` costs a broker: re-encoding produced batches from one codec to
//! another, against the CRC pass every produce pays anyway and the header stamp of
//! `message.timestamp.type=LogAppendTime`. One thread; MiB/s of uncompressed record bytes.
//!
//!     cargo run --release -p record-batch --example reencode_bench [-- BATCH_KIB...]
//!
//! Records are 1 KiB of JSON-like text (a few fields, random numbers: about 3x compressible
//! with lz4), batches of 16 KiB (librdkafka's and Java's defaults) and 1 MiB (a tuned producer).

// A benchmark program: a failed setup step should stop it loudly, and its record indices and
// counts (a few thousand at most) are converted with `as`.
#![allow(clippy::expect_used, clippy::unwrap_used)]
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use record_batch::rewrite::{record_timestamps, reencode};
use record_batch::{
    encode_batch, stamp_log_append_time, BatchHeader, RecordRow, DECOMPRESSED_BYTES_MAX,
};

const RECORD_BYTES: usize = 1024;
const CODECS: [(i16, &str); 5] = [
    (0, "none"),
    (1, "gzip"),
    (2, "snappy"),
    (3, "lz4"),
    (4, "zstd"),
];
/// Kafka's default levels (`compression.*.level`).
fn kafka_level(codec: i16) -> Option<i32> {
    match codec {
        1 => Some(-1),
        3 => Some(9),
        4 => Some(3),
        _ => None,
    }
}

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
    let mut seed = 42u64;
    for kib in sizes {
        println!("\n## batches of {kib} KiB of 1 KiB records: MiB/s of record bytes, one thread\n");
        let (plain, plain_len) = batch(0, kib << 10, &mut seed);
        let crc = rate(plain_len, || {
            std::hint::black_box(crc32c::crc32c(&plain[21..]));
        });
        let mut stamped = plain.to_vec();
        let stamp = rate(plain_len, || {
            let _ = stamp_log_append_time(&mut stamped, 1);
        });
        let scan = rate(plain_len, || {
            let _ = std::hint::black_box(record_timestamps(&plain, DECOMPRESSED_BYTES_MAX));
        });
        println!("baseline CRC pass (every produce): {crc:.0}; LogAppendTime stamp: {stamp:.0}; timestamp scan (uncompressed): {scan:.0}\n");
        print!("| produced as \\ topic codec |");
        for (_, name) in CODECS {
            print!(" {name} |");
        }
        println!(" produced size |");
        println!("|---|---|---|---|---|---|---|");
        for (from, from_name) in CODECS {
            let (sent, _) = batch(from, kib << 10, &mut seed);
            print!("| {from_name} |");
            for (to, _) in CODECS {
                if from == to {
                    print!(" kept |");
                    continue;
                }
                let mib_s = rate(plain_len, || {
                    let _ = std::hint::black_box(reencode(
                        &sent,
                        to,
                        kafka_level(to),
                        DECOMPRESSED_BYTES_MAX,
                    ));
                });
                print!(" {mib_s:.0} |");
            }
            println!(" {:.0}% |", 100.0 * sent.len() as f64 / plain_len as f64);
        }
    }
}
