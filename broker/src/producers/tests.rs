//! Producer state across restarts: snapshot plus replay, past the replay window, over
//! compacted entries, and after another broker wrote to the partition.

// Test code: offsets, sequences and counts of test batches converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use metastore::embedded::EmbeddedMetaStore;
use metastore::{Expect, MetaOptions, MetaStore, PutOptions};
use storage::stream::{index_range_end, index_range_start, producers_key};
use storage::{
    BatchMeta, FileType, IndexEntry, ProducerMeta, Storage, StorageConfig, StorageError,
};

use super::partition::{Admission, AdmitError, PartitionProducers, RECOVERY_OFFSETS_MAX};
use super::state::{BatchHeader, Limits, SequenceError};
use super::SlotState;

const STREAM: &str = "0123abcd-0";
const LIMITS: Limits = Limits {
    producers_max: 100,
    expiration_ms: 24 * 60 * 60 * 1000,
};

struct Env {
    _dir: tempfile::TempDir,
    meta: Arc<dyn MetaStore>,
    /// Opens a broker's storage over the shared stores.
    open_storage: Box<dyn Fn() -> Arc<Storage>>,
}

impl Env {
    async fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let options = MetaOptions {
            notifications: false,
            ..Default::default()
        };
        let meta = EmbeddedMetaStore::open_in_dir(dir.path(), options)
            .await
            .unwrap();
        let meta: Arc<dyn MetaStore> = Arc::new(meta);
        let objects = storage::objects::open("memory://").unwrap();
        let index_meta = meta.clone();
        let open_storage = Box::new(move || {
            let config = StorageConfig {
                write_buffer_puts_per_sec_max: Some(500),
                ..StorageConfig::default()
            };
            Storage::open(config, objects.clone(), index_meta.clone())
        });
        Env {
            _dir: dir,
            meta,
            open_storage,
        }
    }

    /// A broker's storage (a fresh one is a restarted broker: no cached state).
    fn storage(&self) -> Arc<Storage> {
        (self.open_storage)()
    }

    fn producers(&self, generation: &Arc<AtomicU64>) -> PartitionProducers {
        PartitionProducers::new(LIMITS, STREAM, self.meta.clone(), generation.clone())
    }
}

fn header(base_sequence: i32, records: i32) -> BatchHeader {
    BatchHeader {
        producer_id: 7,
        epoch: 0,
        base_sequence,
        records,
    }
}

fn now_ms() -> u64 {
    super::now_ms()
}

/// Admits one batch and, if accepted, writes it. Returns its base offset, or the offset of
/// the batch it duplicates.
async fn produce(
    storage: &Storage,
    producers: &PartitionProducers,
    batch: BatchHeader,
) -> Result<u64, AdmitError> {
    match producers
        .admit(storage, STREAM, &[(batch, 0)], now_ms())
        .await?
    {
        Admission::Duplicate { slot, offset_delta } => match slot.outcome().await {
            SlotState::Written(base) => Ok(base + offset_delta),
            other => panic!("duplicate of an unwritten batch: {other:?}"),
        },
        Admission::Append(admitted) => {
            let meta = BatchMeta {
                len: 10,
                records: batch.records as u32,
                max_timestamp: 0,
                producer: Some(ProducerMeta {
                    id: batch.producer_id,
                    epoch: batch.epoch,
                    base_sequence: batch.base_sequence,
                }),
            };
            let pending = storage
                .submit(STREAM, Bytes::from(vec![1u8; 10]), vec![meta])
                .await?;
            let write = admitted.submitted();
            let outcome = pending.wait().await?;
            write.written(outcome.base_offset);
            Ok(outcome.base_offset)
        }
    }
}

/// Appends `records` records without producer fields (another application's traffic).
async fn produce_plain(storage: &Storage, records: u32) -> Result<u64, StorageError> {
    let meta = BatchMeta {
        len: 10,
        records,
        max_timestamp: 0,
        producer: None,
    };
    let outcome = storage
        .append(STREAM, Bytes::from(vec![2u8; 10]), vec![meta])
        .await?;
    Ok(outcome.base_offset)
}

fn is_out_of_order(result: Result<u64, AdmitError>) -> bool {
    matches!(
        result,
        Err(AdmitError::Sequence(SequenceError::OutOfOrder { .. }))
    )
}

#[tokio::test]
async fn a_producer_is_remembered_after_a_restart_past_the_replay_window() {
    let env = Env::new().await;
    let generation = Arc::new(AtomicU64::new(0));
    let storage = env.storage();
    let producers = env.producers(&generation);
    let first = produce(&storage, &producers, header(0, 3)).await.unwrap();
    produce_plain(&storage, (RECOVERY_OFFSETS_MAX + 50_000) as u32)
        .await
        .unwrap();
    producers.snapshot_now(&storage).await.unwrap();
    storage.shutdown().await;

    let storage = env.storage();
    let producers = env.producers(&generation);
    // The retry is answered with the original offset, a gap is refused, the next batch passes.
    assert_eq!(
        produce(&storage, &producers, header(0, 3)).await.unwrap(),
        first
    );
    assert!(is_out_of_order(
        produce(&storage, &producers, header(5, 1)).await
    ));
    assert!(produce(&storage, &producers, header(3, 1)).await.is_ok());
}

#[tokio::test]
async fn without_a_snapshot_a_producer_past_the_window_is_unknown() {
    let env = Env::new().await;
    let generation = Arc::new(AtomicU64::new(0));
    let storage = env.storage();
    let producers = env.producers(&generation);
    produce(&storage, &producers, header(0, 3)).await.unwrap();
    produce_plain(&storage, (RECOVERY_OFFSETS_MAX + 50_000) as u32)
        .await
        .unwrap();
    storage.shutdown().await;
    env.meta
        .delete(&producers_key(STREAM), Expect::Any, Some(STREAM))
        .await
        .ok();

    let storage = env.storage();
    let producers = env.producers(&generation);
    // Kafka's rule for a producer whose state is gone: any sequence starts it again.
    assert!(produce(&storage, &producers, header(5, 1)).await.is_ok());
}

/// Does what the compactor's index swap does: one PARQUET entry at the last key replaces
/// every RAW entry of the stream, keeping the batches' producer fields.
async fn compact_whole_stream(meta: &Arc<dyn MetaStore>) {
    let records = meta
        .range_scan(
            &index_range_start(STREAM),
            &index_range_end(STREAM),
            Some(STREAM),
            1000,
        )
        .await
        .unwrap();
    let entries: Vec<IndexEntry> = records
        .iter()
        .map(|r| IndexEntry::decode(&r.value).unwrap())
        .collect();
    let last = entries.last().unwrap();
    let compacted = IndexEntry {
        file_type: FileType::Parquet,
        object_key: "compacted/x.parquet".into(),
        byte_offset: 0,
        byte_len: 1,
        crc32c: 0,
        min_timestamp: 0,
        max_timestamp: 0,
        write_time_ms: last.write_time_ms,
        batches: entries.iter().flat_map(|e| e.batches.clone()).collect(),
    };
    let last_key = &records.last().unwrap().key;
    meta.put(last_key, compacted.encode(), PutOptions::partition(STREAM))
        .await
        .unwrap();
    for r in &records[..records.len() - 1] {
        meta.delete(&r.key, Expect::Any, Some(STREAM))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn recovery_replays_compacted_entries_after_the_snapshot() {
    let env = Env::new().await;
    let generation = Arc::new(AtomicU64::new(0));
    let storage = env.storage();
    let producers = env.producers(&generation);
    for seq in 0..3 {
        produce(&storage, &producers, header(seq, 1)).await.unwrap();
    }
    producers.snapshot_now(&storage).await.unwrap();
    produce(&storage, &producers, header(3, 1)).await.unwrap();
    let fifth = produce(&storage, &producers, header(4, 1)).await.unwrap();
    storage.shutdown().await;
    compact_whole_stream(&env.meta).await;

    let storage = env.storage();
    let producers = env.producers(&generation);
    assert_eq!(
        produce(&storage, &producers, header(4, 1)).await.unwrap(),
        fifth
    );
    assert!(is_out_of_order(
        produce(&storage, &producers, header(6, 1)).await
    ));
    assert!(produce(&storage, &producers, header(5, 1)).await.is_ok());
}

#[tokio::test]
async fn a_membership_change_reloads_state_another_broker_advanced() {
    let env = Env::new().await;
    let (generation_a, generation_b) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (storage_a, storage_b) = (env.storage(), env.storage());
    let (producers_a, producers_b) = (env.producers(&generation_a), env.producers(&generation_b));
    produce(&storage_a, &producers_a, header(0, 1))
        .await
        .unwrap();
    // Broker A is presumed dead; B leads the partition and the producer carries on there.
    produce(&storage_b, &producers_b, header(1, 1))
        .await
        .unwrap();
    // A is back and leads again: without a reload it would expect sequence 1.
    generation_a.fetch_add(1, Ordering::AcqRel);
    assert!(produce(&storage_a, &producers_a, header(2, 1))
        .await
        .is_ok());
    assert!(is_out_of_order(
        produce(&storage_a, &producers_a, header(9, 1)).await
    ));
}

#[tokio::test]
async fn periodic_snapshots_cover_what_was_written() {
    let env = Env::new().await;
    let generation = Arc::new(AtomicU64::new(0));
    let storage = env.storage();
    let producers = env.producers(&generation);
    let batches = super::SNAPSHOT_EVERY_BATCHES as i32 + 1;
    for seq in 0..batches {
        produce(&storage, &producers, header(seq, 1)).await.unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let snapshot = loop {
        if let Some(s) = super::snapshot::load(&env.meta, STREAM).await.unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "no snapshot written");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(snapshot.covered_offset >= super::SNAPSHOT_EVERY_BATCHES);
    let producer = &snapshot.producers[0];
    assert_eq!(producer.producer_id, 7);
    let last = producer.batches.last().unwrap();
    assert_eq!(Some(last.last_seq), producer.last_seq);
    // Batch `seq` sits at offset `seq`: the snapshot's offsets are the log's.
    assert_eq!(last.slot, last.first_seq as u64);
}

#[tokio::test]
async fn forgetting_a_deleted_partition_removes_its_snapshot() {
    let env = Env::new().await;
    let generation = Arc::new(AtomicU64::new(0));
    let storage = env.storage();
    let producers = super::Producers::new(env.meta.clone(), generation);
    let partition = producers.partition(STREAM);
    produce(&storage, &partition, header(0, 1)).await.unwrap();
    partition.snapshot_now(&storage).await.unwrap();
    let load = || super::snapshot::load(&env.meta, STREAM);
    assert!(load().await.unwrap().is_some());
    producers.forget(STREAM).await.unwrap();
    assert!(load().await.unwrap().is_none());
}
