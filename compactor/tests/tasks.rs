//! Task records: retries with backoff, dead letters, replay after a crash, the shared read limit.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and timestamps of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use common::*;
use compactor::clock::{Clock, ManualClock};
use compactor::tasks::{list_tasks, retry_dead, TaskState, TaskStore};
use compactor::{Compactor, CompactorConfig};
use futures::stream::BoxStream;
use metastore::{
    Comparison, Expect, MetaError, MetaResult, MetaStore, Notification, PutOptions, PutResult,
    Record,
};
use storage::objects::Operation;
use storage::objects::{FailingObjectStore, FailureMode};

const APPENDS: usize = 12;

fn config() -> CompactorConfig {
    CompactorConfig {
        min_bytes: 0,
        min_age_ms: 0,
        file_batches_max: 5,
        grace_period_ms: 0,
        ..CompactorConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_tasks_back_off_then_go_dead_and_wait_for_an_operator() {
    let env = env().await;
    let storage = engine(&env);
    produce(&storage, APPENDS).await;
    let expected = consume_all(&storage).await;
    let failing = Arc::new(FailingObjectStore::new(env.objects.clone()));
    failing.set_mode(FailureMode::Only(Operation::Put)); // every Parquet PUT fails
    let t0 = 1_900_000_000_000u64;
    let clock = Arc::new(ManualClock::new(t0));
    let config = CompactorConfig {
        task_attempts_max: 3,
        retry_backoff_ms: 1_000,
        retry_backoff_max_ms: 1_500,
        ..config()
    };
    let compactor = Compactor::new(failing.clone(), env.meta.clone(), env.meta.clone(), config)
        .with_clock(clock.clone());
    let attempts = |want: u32, next_retry_ms: u64| {
        let meta = env.meta.clone();
        async move {
            let tasks = list_tasks(&meta).await.unwrap();
            assert_eq!(tasks.len(), STREAMS.len());
            for t in tasks {
                assert_eq!(t.attempts, want, "{}", t.describe());
                match t.state {
                    TaskState::Failed {
                        next_retry_ms: at,
                        last_error,
                    } => {
                        assert_eq!(at, next_retry_ms);
                        assert!(last_error.contains("injected put failure"), "{last_error}");
                    }
                    other => panic!("not failed: {other:?}"),
                }
            }
        }
    };

    let r = compactor.run_once().await.unwrap();
    assert_eq!((r.tasks_failed, r.tasks_done), (2, 0));
    attempts(1, t0 + 1_000).await;
    // Not before its backoff ran out...
    clock.set_ms(t0 + 999);
    assert_eq!(compactor.run_once().await.unwrap().tasks_failed, 0);
    attempts(1, t0 + 1_000).await;
    // ...then retried, and the next wait doubles up to its cap.
    clock.set_ms(t0 + 1_000);
    assert_eq!(compactor.run_once().await.unwrap().tasks_failed, 2);
    attempts(2, t0 + 2_500).await;
    clock.set_ms(t0 + 2_499);
    assert_eq!(compactor.run_once().await.unwrap().tasks_failed, 0);
    clock.set_ms(t0 + 2_500);
    let r = compactor.run_once().await.unwrap();
    assert_eq!((r.tasks_failed, r.tasks_dead), (2, 2));
    for t in list_tasks(&env.meta).await.unwrap() {
        match t.state {
            TaskState::Dead { reason, dead_ms } => {
                assert!(reason.contains("failed 3 times") && reason.contains("injected put"));
                assert_eq!(dead_ms, t0 + 2_500);
            }
            other => panic!("not dead: {other:?}"),
        }
    }

    // Dead tasks are never retried automatically, not even once the store works again.
    failing.set_mode(FailureMode::Off);
    clock.set_ms(t0 + 86_400_000);
    let r = compactor.run_once().await.unwrap();
    assert_eq!((r.tasks_failed, r.tasks_done, r.tasks_dead), (0, 0, 2));
    assert!(!keys(&env.objects, "wal").await.is_empty());
    assert!(keys(&env.objects, "compacted").await.is_empty());
    assert_eq!(consume_all(&engine(&env)).await, expected);

    // An operator requeues them; the next pass does the work and the records go away.
    assert_eq!(retry_dead(&env.meta).await.unwrap(), 2);
    let r = compactor.run_once().await.unwrap();
    assert_eq!((r.tasks_failed, r.tasks_dead, r.streams_failed), (0, 0, 0));
    assert!(r.tasks_done >= 2);
    assert!(list_tasks(&env.meta).await.unwrap().is_empty());
    assert!(keys(&env.objects, "wal").await.is_empty());
    assert_eq!(consume_all(&engine(&env)).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_interrupted_after_its_file_was_written_is_replayed_onto_the_same_file() {
    let env = env().await;
    let storage = engine(&env);
    produce(&storage, APPENDS).await;
    produce(&storage, APPENDS).await; // two appends at least per stream: ranges can differ
    let expected = consume_all(&storage).await;

    // The compactor dies as it swaps its first range in: the Parquet file is written, the
    // task is RUNNING, nothing else it writes lands.
    let crashing = Arc::new(CrashAtSwap::new(open_meta(&env.dir).await));
    let crashed = Compactor::new(
        env.objects.clone(),
        crashing.clone(),
        crashing.clone(),
        CompactorConfig {
            workers: 1,
            file_batches_max: 1,
            ..config()
        },
    );
    let _ = crashed.run_once().await;
    assert!(crashing.crashed.load(Ordering::SeqCst));
    let written = keys(&env.objects, "compacted").await;
    assert_eq!(written.len(), 1);
    let tasks = list_tasks(&env.meta).await.unwrap();
    let running: Vec<_> = tasks
        .iter()
        .filter(|t| matches!(t.state, TaskState::Running { .. }))
        .collect();
    assert_eq!(running.len(), 1, "{tasks:?}");
    assert!(written[0].contains(&format!(
        "{:020}-{:020}",
        running[0].base_offset, running[0].end_offset
    )));
    assert_eq!(consume_all(&engine(&env)).await, expected);
    crashing.inner.close().await.unwrap(); // its session, and leadership, end

    // Cut differently now: only the task record keeps the replay on the range of the crash.
    let recovery = Compactor::new(
        env.objects.clone(),
        env.meta.clone(),
        env.meta.clone(),
        CompactorConfig {
            file_batches_max: 1_000,
            ..config()
        },
    );
    let r = recovery.run_once().await.unwrap();
    assert!(r.leader);
    assert_eq!(
        (r.streams_failed, r.tasks_failed, r.orphans_deleted),
        (0, 0, 0)
    );
    // The replay wrote the same file and swapped it in: every file is referenced, none orphaned.
    let files = keys(&env.objects, "compacted").await;
    assert!(files.contains(&written[0]));
    assert_eq!(files, parquet_entries(&env).await);
    assert!(keys(&env.objects, "wal").await.is_empty());
    assert!(
        list_tasks(&env.meta).await.unwrap().is_empty(),
        "done tasks are cleaned up"
    );
    assert_eq!(consume_all(&engine(&env)).await, expected);
    assert_eq!(consume_all(&storage).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_rate_limit_holds_for_all_workers_together() {
    let env = env().await;
    let storage = engine(&env);
    produce(&storage, 40).await;
    let index = storage::index::Index::new(env.meta.clone());
    let mut wal_bytes = 0u64;
    let mut slice_max = 0u64;
    for stream in STREAMS {
        for e in index.entries_from(stream, 0, 1000).await.unwrap() {
            wal_bytes += u64::from(e.entry.byte_len);
            slice_max = slice_max.max(u64::from(e.entry.byte_len));
        }
    }
    // Rate for one second of reading in total: two workers each limited alone would take half.
    let config = CompactorConfig {
        workers: 2,
        read_bytes_per_sec: wal_bytes,
        ..config()
    };
    let compactor = Compactor::new(
        env.objects.clone(),
        env.meta.clone(),
        env.meta.clone(),
        config,
    );
    let started = Instant::now();
    let r = compactor.run_once().await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(r.bytes_read, wal_bytes);
    let floor = Duration::from_secs_f64((wal_bytes - 2 * slice_max) as f64 / wal_bytes as f64);
    assert!(elapsed >= floor, "read {wal_bytes} bytes in {elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_left_by_a_crash_whose_task_was_lost_is_swept_after_the_grace_period() {
    let env = env().await;
    let storage = engine(&env);
    produce(&storage, APPENDS).await;
    produce(&storage, APPENDS).await; // two appends at least per stream: ranges can differ
    let expected = consume_all(&storage).await;
    let crashing = Arc::new(CrashAtSwap::new(open_meta(&env.dir).await));
    let crashed = Compactor::new(
        env.objects.clone(),
        crashing.clone(),
        crashing.clone(),
        CompactorConfig {
            workers: 1,
            file_batches_max: 1,
            ..config()
        },
    );
    let _ = crashed.run_once().await;
    crashing.inner.close().await.unwrap();
    let orphan = keys(&env.objects, "compacted").await;
    assert_eq!(orphan.len(), 1);
    // The task records are lost (as with a compactor that kept none), and the next compactor
    // cuts its files differently: nothing will ever reference the file written before the crash.
    let store = TaskStore { meta: &env.meta };
    for task in store.list().await.unwrap() {
        store.remove(&task).await.unwrap();
    }
    let grace_ms = 60_000;
    let clock = Arc::new(ManualClock::new(compactor::clock::SystemClock.now_ms()));
    let recovery = Compactor::new(
        env.objects.clone(),
        env.meta.clone(),
        env.meta.clone(),
        CompactorConfig {
            file_batches_max: 1_000,
            grace_period_ms: grace_ms,
            ..config()
        },
    )
    .with_clock(clock.clone());
    let r = recovery.run_once().await.unwrap();
    assert_eq!((r.streams_failed, r.orphans_deleted), (0, 0));
    assert!(!parquet_entries(&env).await.contains(&orphan[0]));
    assert!(keys(&env.objects, "compacted").await.contains(&orphan[0]));

    clock.advance_ms(grace_ms); // old enough: marked, not deleted yet
    assert_eq!(recovery.run_once().await.unwrap().orphans_deleted, 0);
    clock.advance_ms(grace_ms - 1);
    assert_eq!(recovery.run_once().await.unwrap().orphans_deleted, 0);
    clock.advance_ms(1);
    assert_eq!(recovery.run_once().await.unwrap().orphans_deleted, 1);
    assert_eq!(
        keys(&env.objects, "compacted").await,
        parquet_entries(&env).await
    );
    assert!(keys(&env.objects, "wal").await.is_empty());
    assert_eq!(consume_all(&engine(&env)).await, expected);
}

/// Passes everything through until the first write of an index key (step 2 of a swap, right
/// after the Parquet PUT); from then on every write fails, as if the process had died.
struct CrashAtSwap {
    inner: Arc<dyn MetaStore>,
    crashed: AtomicBool,
}

impl CrashAtSwap {
    fn new(inner: Arc<dyn MetaStore>) -> Self {
        CrashAtSwap {
            inner,
            crashed: AtomicBool::new(false),
        }
    }
    fn write(&self, key: &str) -> MetaResult<()> {
        if key.starts_with("s/") && key.contains("/i-") {
            self.crashed.store(true, Ordering::SeqCst);
        }
        if self.crashed.load(Ordering::SeqCst) {
            return Err(MetaError::Unavailable("crashed".into()));
        }
        Ok(())
    }
}

#[async_trait]
impl MetaStore for CrashAtSwap {
    async fn put(&self, key: &str, value: Bytes, options: PutOptions) -> MetaResult<PutResult> {
        self.write(key)?;
        self.inner.put(key, value, options).await
    }
    async fn get(&self, key: &str, c: Comparison, p: Option<&str>) -> MetaResult<Option<Record>> {
        self.inner.get(key, c, p).await
    }
    async fn delete(&self, key: &str, expect: Expect, p: Option<&str>) -> MetaResult<()> {
        self.write(key)?;
        self.inner.delete(key, expect, p).await
    }
    async fn delete_range(&self, min: &str, max: &str, p: Option<&str>) -> MetaResult<()> {
        self.write(min)?;
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
