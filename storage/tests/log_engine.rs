//! The log engine end to end: appends through WAL objects and the index, reads back by offset,
//! restarts, faults in the object store and the metadata store.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: indices, small counts and lengths of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use metastore::embedded::EmbeddedMetaStore;
use metastore::failing::{FailingMetaStore, FaultMode};
use metastore::{MetaOptions, MetaStore};
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::ObjectStore;
use storage::objects::{
    CountingObjectStore, FailingObjectStore, FailureMode, Operation, SlowObjectStore,
};
use storage::{BatchMeta, Storage, StorageConfig, StorageError};

fn config() -> StorageConfig {
    StorageConfig {
        write_buffer_puts_per_sec_max: Some(200),
        ..StorageConfig::default()
    }
}

async fn meta(dir: &std::path::Path) -> Arc<dyn MetaStore> {
    Arc::new(
        EmbeddedMetaStore::open_in_dir(
            dir,
            MetaOptions {
                notifications: false,
                ..Default::default()
            },
        )
        .await
        .unwrap(),
    )
}

/// A payload of `batches` opaque batches of `len` bytes with 2 records each; byte i of batch b
/// is `tag + b` so content mix-ups show.
fn payload(tag: u8, batches: usize, len: usize) -> (Bytes, Vec<BatchMeta>) {
    let mut bytes = Vec::new();
    let mut metas = Vec::new();
    for b in 0..batches {
        bytes.extend(std::iter::repeat_n(tag.wrapping_add(b as u8), len));
        metas.push(BatchMeta {
            len: len as u32,
            records: 2,
            max_timestamp: 1000 + i64::from(tag) * 10 + b as i64,
            producer: None,
        });
    }
    (Bytes::from(bytes), metas)
}

async fn read_all(storage: &Storage, stream: &str, from: u64) -> Vec<(u64, Bytes)> {
    let mut out = Vec::new();
    let mut next = from;
    loop {
        let result = storage.read(stream, next, 1 << 20).await.unwrap();
        if result.chunks.is_empty() {
            return out;
        }
        for chunk in result.chunks {
            let mut offset = chunk.base_offset;
            let mut pos = 0usize;
            for batch in &chunk.batches {
                out.push((offset, chunk.bytes.slice(pos..pos + batch.len as usize)));
                offset += u64::from(batch.records);
                pos += batch.len as usize;
            }
            next = offset;
        }
    }
}

#[tokio::test]
async fn append_then_read_returns_exact_bytes_and_dense_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(config(), Arc::new(InMemory::new()), meta(dir.path()).await);
    let (p1, b1) = payload(10, 3, 7);
    let (p2, b2) = payload(50, 1, 9);
    let first = storage.append("s-0", p1.clone(), b1).await.unwrap();
    let second = storage.append("s-0", p2.clone(), b2).await.unwrap();
    assert_eq!((first.base_offset, first.end_offset), (0, 6));
    assert_eq!((second.base_offset, second.end_offset), (6, 8));
    let batches = read_all(&storage, "s-0", 0).await;
    let offsets: Vec<u64> = batches.iter().map(|(o, _)| *o).collect();
    assert_eq!(offsets, vec![0, 2, 4, 6]);
    assert_eq!(batches[1].1, p1.slice(7..14));
    assert_eq!(batches[3].1, p2);
    // A read in the middle of a batch starts with the batch holding the offset.
    let mid = read_all(&storage, "s-0", 3).await;
    assert_eq!(mid[0].0, 2);
    let bounds = storage.bounds("s-0").await.unwrap();
    assert_eq!((bounds.log_start_offset, bounds.high_watermark), (0, 8));
    assert!(storage.read("s-0", 8, 100).await.unwrap().chunks.is_empty());
    assert!(matches!(
        storage.read("s-0", 9, 100).await,
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    storage.shutdown().await;
}

#[tokio::test]
async fn append_after_restart_continues_offsets_and_reads_from_the_object_store() {
    let dir = tempfile::tempdir().unwrap();
    let objects_dir = dir.path().join("objects");
    std::fs::create_dir_all(&objects_dir).unwrap();
    let objects: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(&objects_dir).unwrap());
    let (p1, b1) = payload(1, 2, 100);
    {
        let storage = Storage::open(
            config(),
            objects.clone(),
            meta(&dir.path().join("meta")).await,
        );
        storage.append("a-0", p1.clone(), b1.clone()).await.unwrap();
        storage.shutdown().await;
    }
    let counting = Arc::new(FailingObjectStore::new(objects.clone()));
    let storage = Storage::open(
        config(),
        counting.clone(),
        meta(&dir.path().join("meta")).await,
    );
    let next = storage.append("a-0", p1.clone(), b1).await.unwrap();
    assert_eq!(next.base_offset, 4, "offsets continue after a restart");
    let gets_before = counting.operation_count();
    let batches = read_all(&storage, "a-0", 0).await;
    assert_eq!(batches.len(), 4);
    assert_eq!(batches[0].1, p1.slice(0..100));
    assert!(
        counting.operation_count() > gets_before,
        "data written before the restart comes from the store"
    );
    storage.shutdown().await;
}

#[tokio::test]
async fn tailing_reads_are_served_from_the_write_cache() {
    let dir = tempfile::tempdir().unwrap();
    let objects = Arc::new(FailingObjectStore::new(Arc::new(InMemory::new())));
    let storage = Storage::open(config(), objects.clone(), meta(dir.path()).await);
    let (p, b) = payload(7, 4, 64);
    storage.append("t-0", p.clone(), b).await.unwrap();
    objects.set_mode(FailureMode::Only(Operation::Get));
    let batches = read_all(&storage, "t-0", 0).await;
    assert_eq!(batches.len(), 4);
    assert_eq!(
        objects.injected_failures(),
        0,
        "no GET reached the object store"
    );
    storage.shutdown().await;
}

#[tokio::test]
async fn an_entry_of_several_appends_is_joined_once_for_all_its_tailing_readers() {
    let dir = tempfile::tempdir().unwrap();
    let slow_budget = StorageConfig {
        write_buffer_puts_per_sec_max: Some(2),
        ..config()
    };
    let storage = Storage::open(
        slow_budget,
        Arc::new(InMemory::new()),
        meta(dir.path()).await,
    );
    // The first object spends the budget, so the next two appends wait and share one object.
    let (p0, b0) = payload(1, 1, 16);
    storage.append("warm-0", p0, b0).await.unwrap();
    let (p1, b1) = payload(10, 2, 32);
    let (p2, b2) = payload(20, 2, 32);
    let (r1, r2) = tokio::join!(
        storage.append("m-0", p1.clone(), b1),
        storage.append("m-0", p2.clone(), b2)
    );
    r1.unwrap();
    r2.unwrap();
    let result = storage.read("m-0", 0, 1 << 20).await.unwrap();
    assert_eq!(result.chunks.len(), 1, "one entry holds both appends");
    let reads = [
        read_all(&storage, "m-0", 0).await,
        read_all(&storage, "m-0", 0).await,
    ];
    let expected: Vec<Bytes> = [
        p1.slice(0..32),
        p1.slice(32..),
        p2.slice(0..32),
        p2.slice(32..),
    ]
    .into_iter()
    .collect();
    for read in &reads {
        let bytes: Vec<Bytes> = read.iter().map(|(_, b)| b.clone()).collect();
        assert_eq!(bytes, expected);
    }
    assert_eq!(
        reads[0][0].1.as_ptr(),
        reads[1][0].1.as_ptr(),
        "the second reader shares the first one's joined copy"
    );
    storage.shutdown().await;
}

#[tokio::test]
async fn readers_missing_the_same_cold_slice_at_once_get_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Arc::new(SlowObjectStore::new(
        Arc::new(InMemory::new()),
        Duration::from_millis(0),
    ));
    let counting = Arc::new(CountingObjectStore::new(slow.clone()));
    let no_write_cache = StorageConfig {
        write_cache_bytes: 0,
        ..config()
    };
    let storage = Storage::open(no_write_cache, counting.clone(), meta(dir.path()).await);
    let (p, b) = payload(5, 2, 256);
    storage.append("cold-0", p.clone(), b).await.unwrap();
    // Slow GETs, so the readers all miss before the first GET returns.
    slow.set_latency(Operation::Get, Duration::from_millis(200));
    let gets_before = counting.counts().gets;
    let reads = futures::future::join_all((0..8).map(|_| read_all(&storage, "cold-0", 0))).await;
    for read in &reads {
        let bytes: Vec<Bytes> = read.iter().map(|(_, b)| b.clone()).collect();
        assert_eq!(bytes, vec![p.slice(0..256), p.slice(256..)]);
    }
    assert_eq!(
        counting.counts().gets - gets_before,
        1,
        "one GET for eight readers"
    );
    storage.shutdown().await;
}

#[tokio::test]
async fn a_corrupted_object_is_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let objects_dir = dir.path().join("objects");
    std::fs::create_dir_all(&objects_dir).unwrap();
    let objects: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(&objects_dir).unwrap());
    let no_write_cache = StorageConfig {
        write_cache_bytes: 0,
        ..config()
    };
    let storage = Storage::open(
        no_write_cache,
        objects,
        meta(&dir.path().join("meta")).await,
    );
    let (p, b) = payload(3, 1, 4096);
    storage.append("c-0", p, b).await.unwrap();
    // Flip one payload byte in the only object written.
    let file = walk(&objects_dir)
        .into_iter()
        .next()
        .expect("one wal object");
    let mut bytes = std::fs::read(&file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&file, bytes).unwrap();
    match storage.read("c-0", 0, 1 << 20).await {
        Err(StorageError::Corrupt(_)) => {}
        other => panic!("expected a corruption error, got {other:?}"),
    }
    storage.shutdown().await;
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn concurrent_appends_to_many_streams_keep_per_stream_order_with_slow_puts() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Arc::new(SlowObjectStore::new(
        Arc::new(InMemory::new()),
        Duration::from_millis(20),
    ));
    // Small segments and few streams per object: many objects, several PUTs in flight.
    let cfg = StorageConfig {
        write_buffer_size: 512,
        write_buffer_max_streams: 2,
        ..config()
    };
    let storage = Storage::open(cfg, slow, meta(dir.path()).await);
    let mut tasks = Vec::new();
    for s in 0..6u8 {
        let storage = storage.clone();
        tasks.push(tokio::spawn(async move {
            let stream = format!("m-{s}");
            // Appends of one stream are submitted in order without waiting for each other, like
            // a pipelining producer; they complete across many objects and PUTs in flight.
            let mut pending = Vec::new();
            for i in 0..20u8 {
                let (p, b) = payload(i, 1, 100);
                pending.push(storage.submit(&stream, p, b).await.unwrap());
                tokio::task::yield_now().await;
            }
            let results = futures::future::join_all(pending.into_iter().map(|p| p.wait())).await;
            let offsets: Vec<u64> = results
                .into_iter()
                .map(|r| r.unwrap().base_offset)
                .collect();
            (stream, offsets)
        }));
    }
    for task in tasks {
        let (stream, offsets) = task.await.unwrap();
        let expected: Vec<u64> = (0..20).map(|i| i * 2).collect();
        assert_eq!(
            offsets, expected,
            "appends of {stream} got offsets in submission order"
        );
        let batches = read_all(&storage, &stream, 0).await;
        for (i, (offset, bytes)) in batches.iter().enumerate() {
            assert_eq!(*offset, i as u64 * 2);
            assert_eq!(
                bytes[0], i as u8,
                "batch {i} of {stream} holds the {i}th append"
            );
        }
    }
    storage.shutdown().await;
}

#[tokio::test]
async fn a_failed_put_fails_its_appends_and_later_appends_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let objects = Arc::new(FailingObjectStore::new(Arc::new(InMemory::new())));
    let storage = Storage::open(config(), objects.clone(), meta(dir.path()).await);
    objects.set_mode(FailureMode::Only(Operation::Put));
    let (p, b) = payload(1, 1, 10);
    let failed = storage.append("f-0", p.clone(), b.clone()).await;
    assert!(
        matches!(failed, Err(ref e) if e.is_retriable()),
        "got {failed:?}"
    );
    objects.set_mode(FailureMode::Off);
    let ok = storage.append("f-0", p, b).await.unwrap();
    assert_eq!(ok.base_offset, 0, "a failed append consumes no offsets");
    storage.shutdown().await;
}

#[tokio::test]
async fn a_failing_index_commit_fails_the_append_without_acknowledging_it() {
    let dir = tempfile::tempdir().unwrap();
    let failing = Arc::new(FailingMetaStore::new(meta(dir.path()).await));
    let storage = Storage::open(config(), Arc::new(InMemory::new()), failing.clone());
    let (p, b) = payload(1, 1, 10);
    storage.append("g-0", p.clone(), b.clone()).await.unwrap();
    failing.set_mode(FaultMode::FailWrites);
    assert!(storage.append("g-0", p.clone(), b.clone()).await.is_err());
    failing.set_mode(FaultMode::Healthy);
    assert_eq!(storage.append("g-0", p, b).await.unwrap().base_offset, 2);
    assert_eq!(read_all(&storage, "g-0", 0).await.len(), 2);
    storage.shutdown().await;
}

#[tokio::test]
async fn appends_past_max_pending_bytes_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Arc::new(SlowObjectStore::new(
        Arc::new(InMemory::new()),
        Duration::from_millis(300),
    ));
    let cfg = StorageConfig {
        max_pending_bytes: 1000,
        ..config()
    };
    let storage = Storage::open(cfg, slow, meta(dir.path()).await);
    let (p, b) = payload(1, 1, 600);
    let first = {
        let storage = storage.clone();
        let (p, b) = (p.clone(), b.clone());
        tokio::spawn(async move { storage.append("o-0", p, b).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = std::time::Instant::now();
    let refused = storage.append("o-0", p.clone(), b.clone()).await;
    assert!(
        matches!(refused, Err(StorageError::Overloaded { .. })),
        "got {refused:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "refusal does not wait for the flush"
    );
    first.await.unwrap().unwrap();
    assert_eq!(storage.pending_bytes(), 0);
    storage.append("o-0", p, b).await.unwrap();
    storage.shutdown().await;
}

#[tokio::test]
async fn trim_moves_the_log_start_and_reads_below_it_are_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(config(), Arc::new(InMemory::new()), meta(dir.path()).await);
    for i in 0..3 {
        let (p, b) = payload(i, 1, 10);
        storage.append("r-0", p, b).await.unwrap();
    }
    let bounds = storage.trim("r-0", 4).await.unwrap();
    assert_eq!((bounds.log_start_offset, bounds.high_watermark), (4, 6));
    assert!(matches!(
        storage.read("r-0", 1, 100).await,
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert_eq!(read_all(&storage, "r-0", 4).await.len(), 1);
    assert!(
        storage.trim("r-0", 7).await.is_err(),
        "cannot trim past the high watermark"
    );
    assert_eq!(
        storage.trim("r-0", 2).await.unwrap().log_start_offset,
        4,
        "trim never moves back"
    );
}

#[tokio::test]
async fn a_watcher_wakes_when_the_high_watermark_advances() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(config(), Arc::new(InMemory::new()), meta(dir.path()).await);
    let mut watch = storage.watch("w-0").await.unwrap();
    assert_eq!(*watch.borrow(), 0);
    let (p, b) = payload(1, 1, 10);
    storage.append("w-0", p, b).await.unwrap();
    tokio::time::timeout(Duration::from_secs(1), watch.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(*watch.borrow(), 2);
}

#[tokio::test]
async fn a_read_at_the_end_hands_back_a_watcher_that_wakes_on_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(config(), Arc::new(InMemory::new()), meta(dir.path()).await);
    let (p, b) = payload(1, 1, 10);
    storage.append("rw-0", p.clone(), b.clone()).await.unwrap();
    let (read, mut watch) = storage.read_watched("rw-0", 2, 1 << 20).await.unwrap();
    assert!(read.chunks.is_empty(), "nothing past the end yet");
    assert_eq!(read.bounds.high_watermark, 2);
    storage.append("rw-0", p, b).await.unwrap();
    tokio::time::timeout(Duration::from_secs(1), watch.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(*watch.borrow(), 4);
    let (read, _) = storage.read_watched("rw-0", 2, 1 << 20).await.unwrap();
    assert_eq!(read.chunks.len(), 1);
}

#[tokio::test]
async fn timestamps_find_the_first_batch_at_or_after_a_time_and_the_maximum() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(config(), Arc::new(InMemory::new()), meta(dir.path()).await);
    // Max timestamps: tag 1 -> 1010, 1011; tag 2 -> 1020, 1021.
    for tag in [1u8, 2] {
        let (p, b) = payload(tag, 2, 10);
        storage.append("ts-0", p, b).await.unwrap();
    }
    let found = storage
        .find_batch_by_timestamp("ts-0", 1015, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.base_offset, 4);
    assert_eq!(found.batches.len(), 1);
    assert!(storage
        .find_batch_by_timestamp("ts-0", 5000, 0)
        .await
        .unwrap()
        .is_none());
    let max = storage
        .find_batch_with_max_timestamp("ts-0")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(max.base_offset, 6);
}

/// Fails index commits of one stream only, to show streams sharing an object are independent.
struct FailOneStream {
    inner: Arc<dyn MetaStore>,
    failing_prefix: String,
}

#[async_trait::async_trait]
impl MetaStore for FailOneStream {
    async fn put(
        &self,
        key: &str,
        value: Bytes,
        options: metastore::PutOptions,
    ) -> metastore::MetaResult<metastore::PutResult> {
        if key.starts_with(&self.failing_prefix) {
            return Err(metastore::MetaError::Unavailable("injected".into()));
        }
        self.inner.put(key, value, options).await
    }
    async fn get(
        &self,
        key: &str,
        c: metastore::Comparison,
        pk: Option<&str>,
    ) -> metastore::MetaResult<Option<metastore::Record>> {
        self.inner.get(key, c, pk).await
    }
    async fn delete(
        &self,
        key: &str,
        e: metastore::Expect,
        pk: Option<&str>,
    ) -> metastore::MetaResult<()> {
        self.inner.delete(key, e, pk).await
    }
    async fn delete_range(
        &self,
        min: &str,
        max: &str,
        pk: Option<&str>,
    ) -> metastore::MetaResult<()> {
        self.inner.delete_range(min, max, pk).await
    }
    async fn list(
        &self,
        min: &str,
        max: &str,
        pk: Option<&str>,
    ) -> metastore::MetaResult<Vec<String>> {
        self.inner.list(min, max, pk).await
    }
    async fn range_scan(
        &self,
        min: &str,
        max: &str,
        pk: Option<&str>,
        limit: usize,
    ) -> metastore::MetaResult<Vec<metastore::Record>> {
        self.inner.range_scan(min, max, pk, limit).await
    }
    async fn notifications(
        &self,
    ) -> metastore::MetaResult<futures::stream::BoxStream<'static, metastore::Notification>> {
        self.inner.notifications().await
    }
    async fn close(&self) -> metastore::MetaResult<()> {
        self.inner.close().await
    }
}

#[tokio::test]
async fn streams_sharing_an_object_succeed_or_fail_independently() {
    let dir = tempfile::tempdir().unwrap();
    let meta = Arc::new(FailOneStream {
        inner: meta(dir.path()).await,
        failing_prefix: "s/bad-0/".into(),
    });
    let objects = Arc::new(FailingObjectStore::new(Arc::new(InMemory::new())));
    // A budget of 1 PUT a second: after a first object, appends wait and share the next.
    let cfg = StorageConfig {
        write_buffer_puts_per_sec_max: Some(1),
        write_buffer_max_streams: 8,
        ..config()
    };
    let storage = Storage::open(cfg, objects.clone(), meta);
    let (p, b) = payload(1, 1, 10);
    storage
        .append("first-0", p.clone(), b.clone())
        .await
        .unwrap();
    let before = objects.operation_count();
    let good = storage
        .submit("good-0", p.clone(), b.clone())
        .await
        .unwrap();
    let bad = storage.submit("bad-0", p, b).await.unwrap();
    let (good, bad) = tokio::join!(good.wait(), bad.wait());
    assert_eq!(good.unwrap().base_offset, 0);
    assert!(bad.is_err());
    assert_eq!(
        objects.operation_count() - before,
        1,
        "both appends shared one object"
    );
    assert_eq!(read_all(&storage, "good-0", 0).await.len(), 1);
    assert_eq!(storage.bounds("bad-0").await.unwrap().high_watermark, 0);
    storage.shutdown().await;
}

#[tokio::test]
async fn a_full_segment_is_written_without_waiting_for_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StorageConfig {
        write_buffer_puts_per_sec_max: Some(1),
        write_buffer_size: 1000,
        ..config()
    };
    let storage = Storage::open(cfg, Arc::new(InMemory::new()), meta(dir.path()).await);
    // A first small object spends the budget for a second...
    let (p, b) = payload(1, 1, 10);
    storage.append("small-0", p, b).await.unwrap();
    // ...which a full segment does not wait for.
    let (p, b) = payload(1, 2, 600);
    let done =
        tokio::time::timeout(Duration::from_millis(500), storage.append("full-0", p, b)).await;
    assert!(done.expect("written before the budget allowed").is_ok());
}

#[tokio::test]
async fn a_cold_reader_of_many_partitions_gets_each_wal_block_once_not_each_slice() {
    let dir = tempfile::tempdir().unwrap();
    let counting = Arc::new(CountingObjectStore::new(Arc::new(InMemory::new())));
    let no_write_cache = StorageConfig {
        write_cache_bytes: 0,
        ..config()
    };
    let storage = Storage::open(no_write_cache, counting.clone(), meta(dir.path()).await);
    // 200 partitions of 2 KiB each, appended together: a few objects of many slices each.
    let appends = (0..200u32).map(|p| {
        let (bytes, batches) = payload(p as u8, 1, 2048);
        let storage = storage.clone();
        async move { storage.append(&format!("many-{p}"), bytes, batches).await }
    });
    for appended in futures::future::join_all(appends).await {
        appended.unwrap();
    }
    let counts = counting.counts();
    let blocks = counts
        .put_bytes
        .div_ceil(StorageConfig::default().wal_read_block_bytes as u64)
        + counts.puts;
    for p in 0..200u32 {
        let read = read_all(&storage, &format!("many-{p}"), 0).await;
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].1, payload(p as u8, 1, 2048).0);
    }
    let gets = counting.counts().gets - counts.gets;
    assert!(
        gets <= blocks,
        "{gets} GETs for 200 partitions in {} objects ({blocks} blocks at most)",
        counts.puts
    );
    storage.shutdown().await;
}
