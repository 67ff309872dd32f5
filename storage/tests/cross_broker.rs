//! Two engines sharing one object store and one MetaStore, as two brokers do: an append
//! committed by one becomes readable through the other, and long polls there wake on it, told
//! by MetaStore notifications (or, without them, by polling); idle streams cost no reads.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use metastore::embedded::EmbeddedMetaStore;
use metastore::failing::{FailingMetaStore, FaultMode};
use metastore::{MetaOptions, MetaStore};
use object_store::memory::InMemory;
use object_store::ObjectStore;
use storage::{BatchMeta, Storage, StorageConfig};

/// How an engine learns of the other's commits.
#[derive(Clone, Copy)]
enum Follow {
    /// MetaStore notifications, as the broker runs.
    Notifications,
    /// A timer, for a MetaStore handle without notifications.
    Polling,
}

async fn open_meta(dir: &std::path::Path, notifications: bool) -> Arc<dyn MetaStore> {
    Arc::new(
        EmbeddedMetaStore::open_in_dir(
            dir,
            MetaOptions {
                notifications,
                ..Default::default()
            },
        )
        .await
        .unwrap(),
    )
}

/// An engine whose index handle can be made to fail, to show when it is read.
async fn engine_with(
    dir: &std::path::Path,
    objects: Arc<dyn ObjectStore>,
    follow: Follow,
) -> (Arc<Storage>, Arc<FailingMetaStore>) {
    let index = Arc::new(FailingMetaStore::new(open_meta(dir, false).await));
    let config = StorageConfig {
        write_buffer_puts_per_sec_max: Some(200),
        ..StorageConfig::default()
    };
    let storage = Storage::open(config, objects, index.clone());
    match follow {
        Follow::Notifications => storage.spawn_bounds_follower(open_meta(dir, true).await),
        Follow::Polling => drop(storage.spawn_bounds_poller()),
    }
    (storage, index)
}

async fn engine(dir: &std::path::Path, objects: Arc<dyn ObjectStore>) -> Arc<Storage> {
    engine_with(dir, objects, Follow::Notifications).await.0
}

async fn assert_reads_nothing(reader: &Storage, stream: &str) {
    let read = reader.read(stream, 0, 1 << 20).await.unwrap();
    assert!(read.chunks.is_empty(), "{stream} returned records");
}

fn payload(tag: u8) -> (Bytes, Vec<BatchMeta>) {
    let batch = BatchMeta {
        len: 16,
        records: 2,
        max_timestamp: 1000,
        producer: None,
    };
    (Bytes::from(vec![tag; 16]), vec![batch])
}

#[tokio::test]
async fn an_append_on_one_engine_becomes_readable_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let writer = engine(dir.path(), objects.clone()).await;
    let reader = engine(dir.path(), objects).await;
    // The reader knows the stream (empty) before the writer appends.
    assert_eq!(reader.bounds("s").await.unwrap().high_watermark, 0);
    let (bytes, batches) = payload(7);
    let appended = writer.append("s", bytes.clone(), batches).await.unwrap();
    assert_eq!(appended.end_offset, 2);

    let read = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let result = reader.read("s", 0, 1 << 20).await.unwrap();
            if !result.chunks.is_empty() {
                return result;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the reader never saw the append");
    assert_eq!(read.bounds.high_watermark, 2);
    assert_eq!(read.chunks[0].bytes, bytes);
}

#[tokio::test]
async fn a_read_past_the_known_end_refreshes_instead_of_failing() {
    let dir = tempfile::tempdir().unwrap();
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let writer = engine(dir.path(), objects.clone()).await;
    let reader = engine(dir.path(), objects).await;
    assert_eq!(reader.bounds("s").await.unwrap().high_watermark, 0);
    for tag in 0..2 {
        let (bytes, batches) = payload(tag);
        writer.append("s", bytes, batches).await.unwrap();
    }
    // A consumer whose committed offset came from the writer asks for offset 2 at once.
    let result = reader.read("s", 2, 1 << 20).await.unwrap();
    assert_eq!(result.bounds.high_watermark, 4);
    assert_eq!(result.chunks[0].base_offset, 2);
}

#[tokio::test]
async fn a_long_poll_on_another_engine_wakes_on_the_append() {
    for follow in [Follow::Notifications, Follow::Polling] {
        let dir = tempfile::tempdir().unwrap();
        let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let writer = engine(dir.path(), objects.clone()).await;
        let (reader, _) = engine_with(dir.path(), objects, follow).await;
        let mut watch = reader.watch("s").await.unwrap();
        let (bytes, batches) = payload(1);
        writer.append("s", bytes, batches).await.unwrap();
        tokio::time::timeout(Duration::from_secs(2), watch.changed())
            .await
            .expect("the long poll did not wake")
            .unwrap();
        assert_eq!(*watch.borrow(), 2);
    }
}

#[tokio::test]
async fn idle_long_polls_read_nothing_from_the_metastore_until_another_engine_appends() {
    let dir = tempfile::tempdir().unwrap();
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let writer = engine(dir.path(), objects.clone()).await;
    let (reader, index) = engine_with(dir.path(), objects, Follow::Notifications).await;
    let streams: Vec<String> = (0..50).map(|i| format!("idle-{i}")).collect();
    let mut watches = Vec::new();
    for stream in &streams {
        watches.push(reader.watch(stream).await.unwrap());
        // Reads at the end, as a fetch does before it waits.
        assert_reads_nothing(&reader, stream).await;
    }
    // Any read of the reader's index from now on fails, and is counted.
    index.set_mode(FaultMode::FailAll);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for stream in &streams {
        assert_reads_nothing(&reader, stream).await;
    }
    assert_eq!(index.injected_failures(), 0, "idle streams were re-read");

    index.set_mode(FaultMode::Healthy);
    let (bytes, batches) = payload(3);
    writer
        .append("idle-7", bytes.clone(), batches)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(2), watches[7].changed())
        .await
        .expect("the long poll did not wake")
        .unwrap();
    let read = reader.read("idle-7", 0, 1 << 20).await.unwrap();
    assert_eq!(read.chunks[0].bytes, bytes);
    assert_eq!(*watches[8].borrow(), 0);
}
