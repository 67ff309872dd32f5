//! The compactor against a real engine on a local folder and the embedded MetaStore.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and timestamps of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use common::{engine, env, keys, Env, RECORDS_PER_BATCH, STREAMS};
use compactor::{Compactor, CompactorConfig};
use futures::stream::BoxStream;
use metastore::{
    Comparison, Expect, MetaError, MetaResult, MetaStore, Notification, PutOptions, PutResult,
    Record,
};
use storage::compacted::{BatchHeader, RecordRow};
use storage::record_batch::{decode_batch, encode_batch, split_batches};
use storage::{FileType, Storage};

const APPENDS_PER_STREAM: usize = 30;

/// One batch as a producer sends it: base offset 0, keyed records, headers, the given codec.
fn batch(stream: &str, n: usize, codec: i16) -> Bytes {
    let header = BatchHeader {
        base_offset: 0,
        partition_leader_epoch: 0,
        attributes: codec,
        last_offset_delta: RECORDS_PER_BATCH as i32 - 1,
        base_timestamp: 1_700_000_000_000 + n as i64,
        max_timestamp: 1_700_000_000_000 + n as i64 + 4,
        producer_id: 1000,
        producer_epoch: 0,
        base_sequence: (n * RECORDS_PER_BATCH) as i32,
    };
    let records: Vec<RecordRow> = (0..RECORDS_PER_BATCH as i32)
        .map(|i| RecordRow {
            attributes: 0,
            timestamp_delta: i64::from(i),
            offset_delta: i,
            key: Some(Bytes::from(format!("{stream}-key-{n}-{i}"))),
            value: (i % 4 != 3).then(|| Bytes::from(format!("value {n} {i} ").repeat(20))),
            headers: vec![(
                Bytes::from_static(b"trace"),
                Some(Bytes::from(format!("{n}"))),
            )],
        })
        .collect();
    encode_batch(&header, &records, codec).unwrap()
}

async fn produce(storage: &Storage, appends: usize) {
    common::produce_with(storage, appends, batch).await
}

/// Every record of a stream as consumers would see it: (offset, record without compression).
async fn consume(storage: &Storage, stream: &str) -> Vec<(u64, RecordRow, i64)> {
    let mut out = Vec::new();
    let mut next = 0u64;
    loop {
        let read = storage.read(stream, next, 64 << 10).await.unwrap();
        if read.chunks.is_empty() {
            break;
        }
        for chunk in read.chunks {
            let mut base = chunk.base_offset;
            for b in split_batches(chunk.bytes).unwrap() {
                let decoded = decode_batch(&b).unwrap();
                for r in decoded.records {
                    let offset = base + r.offset_delta as u64;
                    if offset >= next {
                        out.push((offset, r, decoded.header.max_timestamp));
                    }
                }
                base += u64::from(decoded.header.last_offset_delta as u32) + 1;
            }
            next = base;
        }
        if next >= read.bounds.high_watermark {
            break;
        }
    }
    out
}

fn config() -> CompactorConfig {
    config_with_files_of(12)
}

/// A simulated crash surfaces as a failed task: retried on the very next pass, never dead.
fn config_with_files_of(batches: usize) -> CompactorConfig {
    CompactorConfig {
        min_bytes: 0,
        min_age_ms: 0,
        file_batches_max: batches,
        grace_period_ms: 0,
        retry_backoff_ms: 0,
        task_attempts_max: u32::MAX,
        ..CompactorConfig::default()
    }
}

async fn assert_all_compacted(env: &Env, appends: usize) {
    assert!(
        keys(&env.objects, "wal").await.is_empty(),
        "wal objects left"
    );
    assert!(!keys(&env.objects, "compacted").await.is_empty());
    let index = storage::index::Index::new(env.meta.clone());
    for stream in STREAMS {
        let entries = index.entries_from(stream, 0, 1000).await.unwrap();
        assert!(entries
            .iter()
            .all(|e| e.entry.file_type == FileType::Parquet));
        assert_eq!(
            entries.last().unwrap().end_offset,
            (appends * RECORDS_PER_BATCH) as u64
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_moves_everything_to_parquet_and_consumers_see_the_same_records() {
    let env = env().await;
    let storage = engine(&env);
    produce(&storage, APPENDS_PER_STREAM).await;
    let mut expected = Vec::new();
    for stream in STREAMS {
        let records = consume(&storage, stream).await;
        assert_eq!(records.len(), APPENDS_PER_STREAM * RECORDS_PER_BATCH);
        expected.push(records);
    }
    assert!(keys(&env.objects, "wal").await.len() > 1);

    let compactor = Compactor::new(
        env.objects.clone(),
        env.meta.clone(),
        env.meta.clone(),
        config(),
    );
    let pass = compactor.run_once();
    assert_send(&pass); // the broker spawns passes on its runtime
    let report = pass.await.unwrap();
    assert!(report.leader);
    assert_eq!(report.streams_failed, 0);
    assert_eq!(
        report.records_compacted,
        (2 * APPENDS_PER_STREAM * RECORDS_PER_BATCH) as u64
    );
    assert!(report.files_written >= 2 * (APPENDS_PER_STREAM / 12) as u64);
    assert_all_compacted(&env, APPENDS_PER_STREAM).await;

    // The engine that wrote the data still caches RAW entries of deleted objects.
    for (stream, want) in STREAMS.iter().zip(&expected) {
        assert_eq!(&consume(&storage, stream).await, want);
    }
    let fresh = engine(&env);
    for (stream, want) in STREAMS.iter().zip(&expected) {
        assert_eq!(&consume(&fresh, stream).await, want);
        let hit = fresh
            .find_batch_by_timestamp(stream, 1_700_000_000_010, 0)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(hit.base_offset, 6 * RECORDS_PER_BATCH as u64);
    }

    let again = compactor.run_once().await.unwrap();
    assert_eq!((again.files_written, again.wal_objects_deleted), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compactor_killed_after_any_metastore_write_resumes_without_loss_or_duplicates() {
    let env = env().await;
    let storage = engine(&env);
    produce(&storage, APPENDS_PER_STREAM).await;
    let mut expected = Vec::new();
    for stream in STREAMS {
        expected.push(consume(&storage, stream).await);
    }
    // Crash after k writes, for k = 0, 1, 2, ...: each run continues from what the last left.
    let mut k = 0;
    loop {
        let crashing = Arc::new(CrashAfter::new(env.meta.clone(), k));
        let compactor = Compactor::new(
            env.objects.clone(),
            crashing.clone(),
            env.meta.clone(),
            config(),
        );
        let result = compactor.run_once().await;
        let fresh = engine(&env);
        for (stream, want) in STREAMS.iter().zip(&expected) {
            assert_eq!(
                &consume(&fresh, stream).await,
                want,
                "after a crash at write {k}"
            );
            assert_eq!(
                &consume(&storage, stream).await,
                want,
                "cached engine, crash at write {k}"
            );
        }
        if !crashing.crashed() {
            result.unwrap();
            break;
        }
        k += 1;
        assert!(k < 500, "compaction never completes");
    }
    assert!(k >= 5, "only {k} crashes happened");
    assert_all_compacted(&env, APPENDS_PER_STREAM).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_each_single_metastore_write_is_repaired_by_the_next_pass() {
    const APPENDS: usize = 8;
    let mut k = 0;
    loop {
        let env = env().await;
        let storage = engine(&env);
        produce(&storage, APPENDS).await;
        let mut expected = Vec::new();
        for stream in STREAMS {
            expected.push(consume(&storage, stream).await);
        }
        let crashing = Arc::new(CrashAfter::new(env.meta.clone(), k));
        let config = CompactorConfig {
            workers: 1,
            ..config_with_files_of(3)
        };
        let compactor = Compactor::new(
            env.objects.clone(),
            crashing.clone(),
            env.meta.clone(),
            config.clone(),
        );
        let crashed_run = compactor.run_once().await;
        for (stream, want) in STREAMS.iter().zip(&expected) {
            assert_eq!(
                &consume(&engine(&env), stream).await,
                want,
                "crash at write {k}"
            );
        }
        if !crashing.crashed() {
            crashed_run.unwrap();
            break;
        }
        let recovery = Compactor::new(
            env.objects.clone(),
            env.meta.clone(),
            env.meta.clone(),
            config,
        );
        let report = recovery.run_once().await.unwrap();
        assert_eq!(report.streams_failed, 0, "crash at write {k}");
        assert_all_compacted(&env, APPENDS).await;
        for (stream, want) in STREAMS.iter().zip(&expected) {
            assert_eq!(
                &consume(&engine(&env), stream).await,
                want,
                "recovered from write {k}"
            );
            assert_eq!(
                &consume(&storage, stream).await,
                want,
                "cached, recovered from write {k}"
            );
        }
        storage.shutdown().await;
        k += 1;
        assert!(k < 1000, "compaction never completes");
    }
    assert!(k >= 5, "only {k} crash points");
}

/// A MetaStore whose writes all fail after the first `allowed` ones, as if the process died.
struct CrashAfter {
    inner: Arc<dyn MetaStore>,
    left: AtomicI64,
}

impl CrashAfter {
    fn new(inner: Arc<dyn MetaStore>, allowed: i64) -> Self {
        CrashAfter {
            inner,
            left: AtomicI64::new(allowed),
        }
    }
    fn crashed(&self) -> bool {
        self.left.load(Ordering::SeqCst) < 0
    }
    fn write(&self) -> MetaResult<()> {
        if self.left.fetch_sub(1, Ordering::SeqCst) <= 0 {
            return Err(MetaError::Unavailable("crashed".into()));
        }
        Ok(())
    }
}

#[async_trait]
impl MetaStore for CrashAfter {
    async fn put(&self, key: &str, value: Bytes, options: PutOptions) -> MetaResult<PutResult> {
        self.write()?;
        self.inner.put(key, value, options).await
    }
    async fn get(&self, key: &str, c: Comparison, p: Option<&str>) -> MetaResult<Option<Record>> {
        self.inner.get(key, c, p).await
    }
    async fn delete(&self, key: &str, expect: Expect, p: Option<&str>) -> MetaResult<()> {
        self.write()?;
        self.inner.delete(key, expect, p).await
    }
    async fn delete_range(&self, min: &str, max: &str, p: Option<&str>) -> MetaResult<()> {
        self.write()?;
        self.inner.delete_range(min, max, p).await
    }
    async fn list(&self, min: &str, max: &str, p: Option<&str>) -> MetaResult<Vec<String>> {
        self.inner.list(min, max, p).await
    }
    async fn range_scan(
        &self,
        min: &str,
        max: &str,
        p: Option<&str>,
        limit: usize,
    ) -> MetaResult<Vec<Record>> {
        self.inner.range_scan(min, max, p, limit).await
    }
    async fn notifications(&self) -> MetaResult<BoxStream<'static, Notification>> {
        self.inner.notifications().await
    }
    async fn close(&self) -> MetaResult<()> {
        Ok(())
    }
}

fn assert_send<T: Send>(_: &T) {}
