//! The trim point (log start offset): reads below it fail on every engine sharing the store,
//! and the index primitives retention uses never remove a stream's last key.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use metastore::embedded::EmbeddedMetaStore;
use metastore::{MetaOptions, MetaStore};
use object_store::memory::InMemory;
use object_store::ObjectStore;
use storage::index::Index;
use storage::{BatchMeta, Storage, StorageConfig, StorageError};

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

fn engine(meta: Arc<dyn MetaStore>, objects: Arc<dyn ObjectStore>) -> Arc<Storage> {
    let config = StorageConfig {
        write_buffer_puts_per_sec_max: Some(200),
        ..StorageConfig::default()
    };
    Storage::open(config, objects, meta)
}

/// Appends `count` entries of 2 records each, one at a time (one index entry each).
async fn append(storage: &Storage, stream: &str, count: u8) {
    for tag in 0..count {
        let batch = BatchMeta {
            len: 16,
            records: 2,
            max_timestamp: 1000 + i64::from(tag),
            producer: None,
        };
        storage
            .append(stream, Bytes::from(vec![tag; 16]), vec![batch])
            .await
            .unwrap();
    }
}

fn out_of_range(result: Result<storage::ReadResult, StorageError>) -> (u64, u64) {
    match result {
        Err(StorageError::OffsetOutOfRange {
            log_start_offset,
            high_watermark,
            ..
        }) => (log_start_offset, high_watermark),
        other => panic!("expected OffsetOutOfRange, got {other:?}"),
    }
}

#[tokio::test]
async fn a_trim_on_one_engine_refuses_reads_below_it_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let trimmer = engine(meta(dir.path()).await, objects.clone());
    let reader = engine(meta(dir.path()).await, objects);
    append(&trimmer, "s", 5).await;
    // The reader has read from the start, so it knows bounds [0, 10).
    let first = reader.read("s", 0, 1 << 20).await.unwrap();
    assert_eq!(first.bounds.log_start_offset, 0);

    let trimmed = trimmer.trim("s", 6).await.unwrap();
    assert_eq!(trimmed.log_start_offset, 6);
    assert_eq!(out_of_range(trimmer.read("s", 4, 1 << 20).await), (6, 10));

    let seen = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match reader.read("s", 2, 1 << 20).await {
                Err(StorageError::OffsetOutOfRange {
                    log_start_offset, ..
                }) => return log_start_offset,
                Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) => panic!("{e}"),
            }
        }
    })
    .await
    .expect("the other engine kept serving records below the trim point");
    assert_eq!(seen, 6);
    let read = reader.read("s", 6, 1 << 20).await.unwrap();
    assert_eq!(read.bounds.log_start_offset, 6);
    assert_eq!(read.chunks[0].base_offset, 6);
    assert_eq!(reader.bounds("s").await.unwrap().log_start_offset, 6);
}

#[tokio::test]
async fn a_trim_past_the_high_watermark_is_refused_and_never_moves_back() {
    let dir = tempfile::tempdir().unwrap();
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let storage = engine(meta(dir.path()).await, objects);
    append(&storage, "s", 2).await;
    assert!(matches!(
        storage.trim("s", 5).await,
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert_eq!(storage.trim("s", 4).await.unwrap().log_start_offset, 4);
    assert_eq!(storage.trim("s", 1).await.unwrap().log_start_offset, 4);
    // Everything trimmed: the log is empty at its end offset, appends continue after it.
    append(&storage, "s", 1).await;
    assert_eq!(storage.bounds("s").await.unwrap().high_watermark, 6);
}

#[tokio::test]
async fn delete_record_removes_entries_but_never_the_last_key() {
    let dir = tempfile::tempdir().unwrap();
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let meta = meta(dir.path()).await;
    let storage = engine(meta.clone(), objects);
    append(&storage, "s", 3).await;
    let index = Index::new(meta);

    let all = index.records_after("s", 0, 100).await.unwrap();
    let ends: Vec<u64> = all.iter().map(|r| r.located.end_offset).collect();
    assert_eq!(ends, vec![2, 4, 6]);
    assert_eq!(index.records_after("s", 4, 100).await.unwrap().len(), 1);

    assert!(
        !index.delete_record("s", &all[2]).await.unwrap(),
        "last key"
    );
    assert!(index.delete_record("s", &all[0]).await.unwrap());
    assert!(
        !index.delete_record("s", &all[0]).await.unwrap(),
        "already gone"
    );
    let left = index.records_after("s", 0, 100).await.unwrap();
    assert_eq!(left.len(), 2);
    assert_eq!(index.last("s").await.unwrap().unwrap().end_offset, 6);

    // A later append continues the sequence from the last key.
    append(&storage, "s", 1).await;
    assert!(
        index.delete_record("s", &all[2]).await.unwrap(),
        "no longer last"
    );
    let last = index.last("s").await.unwrap().unwrap();
    assert_eq!((last.base_offset, last.end_offset), (6, 8));
}
