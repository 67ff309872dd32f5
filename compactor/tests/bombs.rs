//! A compression bomb that got into the WAL anyway (produce validation refuses it; here it is
//! appended straight through the engine) fails its compaction task without the compactor
//! allocating what it inflates to.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and timestamps of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod common;

use std::io::Write;

use bytes::{Bytes, BytesMut};
use common::*;
use compactor::tasks::{list_tasks, TaskState};
use compactor::{Compactor, CompactorConfig};
use storage::record_batch::header::fix_crc;
use storage::record_batch::varint::{put_varlong, varlong_len};
use storage::record_batch::DECOMPRESSED_BYTES_MAX;
use storage::BatchMeta;

fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// A one-batch zstd payload declaring `count` records whose records section is `plain`
/// written by `write` in chunks (the test never holds it whole).
fn zstd_batch(count: i32, write: impl Fn(&mut dyn Write)) -> Bytes {
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    write(&mut encoder);
    let compressed = encoder.finish().unwrap();
    let mut out = BytesMut::new();
    out.extend_from_slice(&0i64.to_be_bytes()); // base offset
    out.extend_from_slice(&0i32.to_be_bytes()); // length, below
    out.extend_from_slice(&(-1i32).to_be_bytes()); // leader epoch
    out.extend_from_slice(&[2, 0, 0, 0, 0]); // magic, crc (below)
    out.extend_from_slice(&4i16.to_be_bytes()); // zstd
    out.extend_from_slice(&(count - 1).to_be_bytes());
    out.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
    out.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
    out.extend_from_slice(&(-1i64).to_be_bytes());
    out.extend_from_slice(&(-1i16).to_be_bytes());
    out.extend_from_slice(&(-1i32).to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&compressed);
    let length = (out.len() - 12) as i32;
    out[8..12].copy_from_slice(&length.to_be_bytes());
    fix_crc(&mut out).unwrap();
    out.freeze()
}

/// 2 GiB of zeros: the bomb (the first record is malformed).
fn zeros_bomb() -> Bytes {
    zstd_batch(1, |w| {
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..2048 {
            w.write_all(&chunk).unwrap();
        }
    })
}

/// Well-formed records of 1 MiB each, 2 GiB in all: past the decompression limit.
fn records_bomb() -> Bytes {
    const VALUE: usize = 1 << 20;
    zstd_batch(2048, |w| {
        let zeros = vec![0u8; VALUE];
        for i in 0..2048i64 {
            let mut head = BytesMut::new();
            let body = 3 + varlong_len(i) + varlong_len(VALUE as i64) + VALUE + 1;
            put_varlong(&mut head, body as i64);
            head.extend_from_slice(&[0, 0]);
            put_varlong(&mut head, i);
            put_varlong(&mut head, -1);
            put_varlong(&mut head, VALUE as i64);
            w.write_all(&head).unwrap();
            w.write_all(&zeros).unwrap();
            w.write_all(&[0]).unwrap();
        }
    })
}

async fn append(storage: &storage::Storage, stream: &str, payload: Bytes, records: u32) {
    let meta = BatchMeta {
        len: payload.len() as u32,
        records,
        max_timestamp: 1_700_000_000_000,
        producer: None,
    };
    let pending = storage.submit(stream, payload, vec![meta]).await.unwrap();
    pending.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bomb_in_the_wal_fails_its_task_with_bounded_memory() {
    let env = env().await;
    let storage = engine(&env);
    let config = CompactorConfig {
        min_bytes: 0,
        min_age_ms: 0,
        grace_period_ms: 0,
        task_attempts_max: 1,
        ..CompactorConfig::default()
    };
    let compactor = Compactor::new(
        env.objects.clone(),
        env.meta.clone(),
        env.meta.clone(),
        config,
    );

    append(&storage, STREAMS[0], zeros_bomb(), 1).await;
    let before = peak_rss_bytes();
    let pass = compactor.run_once().await.unwrap();
    let zeros_growth = peak_rss_bytes().saturating_sub(before);
    assert_eq!((pass.tasks_done, pass.tasks_dead), (0, 1), "{pass:?}");

    append(&storage, STREAMS[1], records_bomb(), 2048).await;
    let before = peak_rss_bytes();
    let pass = compactor.run_once().await.unwrap();
    let records_growth = peak_rss_bytes().saturating_sub(before);
    assert_eq!(pass.tasks_dead, 2, "{pass:?}");
    eprintln!(
        "peak rss growth: zeros bomb {} MiB, records bomb {} MiB",
        zeros_growth >> 20,
        records_growth >> 20
    );

    let reasons: Vec<String> = list_tasks(&env.meta)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|t| match t.state {
            TaskState::Dead { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.contains("bad record batch")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("limit exceeded")),
        "{reasons:?}"
    );
    // Garbage fails at its first record; well-formed records stop at the decompression limit,
    // the most one batch may hold decoded.
    assert!(
        zeros_growth < 32 << 20,
        "zeros bomb: +{} MiB",
        zeros_growth >> 20
    );
    let bound = DECOMPRESSED_BYTES_MAX as u64 + (64 << 20);
    assert!(
        records_growth < bound,
        "records bomb: +{} MiB",
        records_growth >> 20
    );
}
