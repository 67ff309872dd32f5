//! The WAL writer's flush policy on a paused tokio clock: an idle writer flushes at once, the
//! PUT budget bounds how many objects start per second, a full segment never waits, and a
//! writer without a budget (a local store) group-commits whatever arrived during the last PUT.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use metastore::memory::MemoryMetaStore;
use metastore::MetaOptions;
use object_store::memory::InMemory;
use storage::objects::{FailingObjectStore, SlowObjectStore};
use storage::{BatchMeta, Storage, StorageConfig};
use tokio::time::Instant;

fn open(
    puts_per_sec_max: u64,
    write_buffer_size: usize,
) -> (Arc<Storage>, Arc<FailingObjectStore>) {
    let objects = Arc::new(FailingObjectStore::new(Arc::new(InMemory::new())));
    let cfg = StorageConfig {
        write_buffer_puts_per_sec_max: Some(puts_per_sec_max),
        write_buffer_size,
        ..StorageConfig::default()
    };
    let meta = Arc::new(MemoryMetaStore::open(MetaOptions {
        notifications: false,
        ..Default::default()
    }));
    (Storage::open(cfg, objects.clone(), meta), objects)
}

fn batch(len: usize) -> (Bytes, Vec<BatchMeta>) {
    let meta = BatchMeta {
        len: u32::try_from(len).unwrap(),
        records: 1,
        max_timestamp: 1000,
        producer: None,
    };
    (Bytes::from(vec![7u8; len]), vec![meta])
}

#[tokio::test(start_paused = true)]
async fn an_idle_writer_writes_an_append_without_waiting() {
    let (storage, objects) = open(4, 4 << 20);
    for i in 0..3 {
        let (p, b) = batch(100);
        let started = Instant::now();
        storage.append("idle-0", p, b).await.unwrap();
        // The paused clock moves only when something sleeps: a wait on the budget would show.
        assert!(
            started.elapsed() < Duration::from_millis(1),
            "append {i} waited {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(objects.operation_count(), 3);
    storage.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_busy_writer_starts_no_more_objects_than_the_budget_allows() {
    let (storage, objects) = open(4, 4 << 20);
    let started = Instant::now();
    // 200 appends 10 ms apart (2 s), each awaited concurrently as producers would.
    let mut pending = Vec::new();
    for _ in 0..200 {
        let (p, b) = batch(100);
        pending.push(storage.submit("busy-0", p, b).await.unwrap());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for append in pending {
        append.wait().await.unwrap();
    }
    let elapsed = started.elapsed();
    // 4 a second over about 2 s, plus the one that may start at once.
    let puts = objects.operation_count();
    let allowed = u64::try_from(elapsed.as_millis()).unwrap() * 4 / 1000 + 1;
    assert!(puts <= allowed, "{puts} objects in {elapsed:?}");
    assert!(
        puts >= 7,
        "appends were batched far more than the budget needs: {puts}"
    );
    storage.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_full_segment_goes_out_while_the_budget_holds_small_ones_back() {
    let (storage, objects) = open(1, 1000);
    let (p, b) = batch(10);
    storage.append("small-0", p, b).await.unwrap();
    // The budget now holds a small object back for a second; a full segment does not wait.
    let started = Instant::now();
    let (p, b) = batch(1200);
    storage.append("full-0", p, b).await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(1));
    let (p, b) = batch(10);
    storage.append("small-1", p, b).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "the next small object waited for the budget"
    );
    assert_eq!(objects.operation_count(), 3);
    storage.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn without_a_budget_appends_arriving_during_a_put_go_out_together_in_the_next() {
    let counted = Arc::new(FailingObjectStore::new(Arc::new(InMemory::new())));
    let slow = Arc::new(SlowObjectStore::new(
        counted.clone(),
        Duration::from_millis(20),
    ));
    // Sixteen PUT slots: yet partial objects go out one after another.
    let cfg = StorageConfig {
        write_buffer_puts_per_sec_max: None,
        ..StorageConfig::default()
    };
    let meta = Arc::new(MemoryMetaStore::open(MetaOptions::default()));
    let storage = Storage::open(cfg, slow, meta);
    let started = Instant::now();
    let mut pending = Vec::new();
    for i in 0..10 {
        let (p, b) = batch(100);
        pending.push(storage.submit(&format!("local-{i}"), p, b).await.unwrap());
        // The first append's PUT starts before the others arrive.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for append in pending {
        append.wait().await.unwrap();
    }
    // The first append went out alone at once; the nine that arrived while its PUT ran went
    // out together as soon as it was done: two PUTs back to back, no budget spacing between.
    assert_eq!(counted.operation_count(), 2);
    assert!(
        started.elapsed() < Duration::from_millis(70),
        "{:?}",
        started.elapsed()
    );
    storage.shutdown().await;
}
