//! Two engines sharing one object store and one MetaStore, as two brokers do: an append
//! committed by one becomes readable through the other, and long polls there wake on it.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use metastore::embedded::EmbeddedMetaStore;
use metastore::{MetaOptions, MetaStore};
use object_store::memory::InMemory;
use object_store::ObjectStore;
use storage::{BatchMeta, Storage, StorageConfig};

async fn engine(dir: &std::path::Path, objects: Arc<dyn ObjectStore>) -> Arc<Storage> {
    let meta: Arc<dyn MetaStore> = Arc::new(
        EmbeddedMetaStore::open_in_dir(
            dir,
            MetaOptions {
                notifications: false,
                ..Default::default()
            },
        )
        .await
        .unwrap(),
    );
    let config = StorageConfig {
        write_buffer_puts_per_sec_max: 200,
        ..StorageConfig::default()
    };
    let storage = Storage::open(config, objects, meta);
    storage.spawn_bounds_poller();
    storage
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
    let dir = tempfile::tempdir().unwrap();
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let writer = engine(dir.path(), objects.clone()).await;
    let reader = engine(dir.path(), objects).await;
    let mut watch = reader.watch("s").await.unwrap();
    let (bytes, batches) = payload(1);
    writer.append("s", bytes, batches).await.unwrap();
    tokio::time::timeout(Duration::from_secs(2), watch.changed())
        .await
        .expect("the long poll did not wake")
        .unwrap();
    assert_eq!(*watch.borrow(), 2);
}
