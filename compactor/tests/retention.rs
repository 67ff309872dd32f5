//! Retention in a compactor pass, against a real engine on a local folder and the embedded
//! MetaStore: the trim point moves by `retention.bytes` / `retention.ms`, index entries wholly
//! below it go (RAW and PARQUET, never the stream's last key), and the WAL objects and Parquet
//! files nobody references any more are deleted.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and timestamps of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use compactor::{Compactor, CompactorConfig};
use futures::TryStreamExt;
use metastore::{EmbeddedMetaStore, MetaOptions, MetaStore, PutOptions};
use object_store::path::Path;
use object_store::ObjectStore;
use storage::compacted::{BatchHeader, RecordRow};
use storage::index::Index;
use storage::record_batch::encode_batch;
use storage::topics::{self, TopicRecord};
use storage::{BatchMeta, FileType, Storage, StorageConfig, StorageError};

const RECORDS_PER_BATCH: u64 = 5;
/// Record timestamps of the appends: November 2023, far beyond the default 7-day retention.
const OLD_MS: i64 = 1_700_000_000_000;

struct Env {
    _dir: tempfile::TempDir,
    objects: Arc<dyn ObjectStore>,
    meta: Arc<dyn MetaStore>,
    storage: Arc<Storage>,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().join("objects").display());
    let objects = storage::objects::open(&url).unwrap();
    let meta: Arc<dyn MetaStore> = Arc::new(
        EmbeddedMetaStore::open_in_dir(dir.path().join("meta"), MetaOptions::default())
            .await
            .unwrap(),
    );
    let config = StorageConfig {
        write_buffer_size: 4 << 10,
        write_buffer_puts_per_sec_max: Some(500),
        ..StorageConfig::default()
    };
    let storage = Storage::open(config, objects.clone(), meta.clone());
    Env {
        _dir: dir,
        objects,
        meta,
        storage,
    }
}

/// Writes the catalog record of topic `name` (as the broker does) and returns its record.
async fn put_topic(env: &Env, name: &str, id: u128, configs: &[(&str, &str)]) -> TopicRecord {
    let configs: serde_json::Map<String, serde_json::Value> = configs
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    let json = serde_json::json!({
        "id": format!("{id:032x}"),
        "partitions": 1,
        "configs": configs,
        "created_ms": 0,
    });
    let key = topics::topic_key(name);
    let (_, record) = topics::decode(&key, json.to_string().as_bytes()).unwrap();
    env.meta
        .put(&key, topics::encode(&record), PutOptions::default())
        .await
        .unwrap();
    record
}

fn batch(n: usize) -> (Bytes, BatchMeta) {
    batch_at(n, OLD_MS + n as i64)
}

/// Batch `n` with every record at `max_timestamp`.
fn batch_at(n: usize, max_timestamp: i64) -> (Bytes, BatchMeta) {
    let header = BatchHeader {
        base_offset: 0,
        partition_leader_epoch: 0,
        attributes: 0,
        last_offset_delta: RECORDS_PER_BATCH as i32 - 1,
        base_timestamp: max_timestamp,
        max_timestamp,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    };
    let records: Vec<RecordRow> = (0..RECORDS_PER_BATCH as i32)
        .map(|i| RecordRow {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: i,
            key: Some(Bytes::from(format!("key-{n}-{i}"))),
            value: Some(Bytes::from(format!("value {n} {i} ").repeat(10))),
            headers: vec![],
        })
        .collect();
    let bytes = encode_batch(&header, &records, 0).unwrap();
    let meta = BatchMeta {
        len: bytes.len() as u32,
        records: RECORDS_PER_BATCH as u32,
        max_timestamp,
        producer: None,
    };
    (bytes, meta)
}

/// Appends batches `from..to`, one index entry each.
async fn produce(storage: &Storage, stream: &str, from: usize, to: usize) {
    for n in from..to {
        let (bytes, meta) = batch(n);
        storage.append(stream, bytes, vec![meta]).await.unwrap();
    }
}

/// Compacts whatever is due, `batches` Kafka batches per file at most.
fn compacting(batches: usize) -> CompactorConfig {
    CompactorConfig {
        min_bytes: 0,
        min_age_ms: 0,
        file_batches_max: batches,
        grace_period_ms: 0,
        ..CompactorConfig::default()
    }
}

/// Compacts nothing, so that RAW entries stay RAW; retention and reclamation still run.
fn not_compacting() -> CompactorConfig {
    CompactorConfig {
        min_bytes: u64::MAX,
        min_age_ms: u64::MAX,
        grace_period_ms: 0,
        ..CompactorConfig::default()
    }
}

async fn pass(env: &Env, config: CompactorConfig) {
    let compactor = Compactor::new(
        env.objects.clone(),
        env.meta.clone(),
        env.meta.clone(),
        config,
    );
    let report = compactor.run_once().await.unwrap();
    assert!(report.leader);
}

async fn keys(objects: &Arc<dyn ObjectStore>, prefix: &str) -> BTreeSet<String> {
    let metas: Vec<_> = objects
        .list(Some(&Path::from(prefix)))
        .try_collect()
        .await
        .unwrap();
    metas.into_iter().map(|m| m.location.to_string()).collect()
}

/// (end offset, cumulative bytes, file type, object key) of every index record.
async fn index_records(env: &Env, stream: &str) -> Vec<(u64, u64, FileType, String)> {
    Index::new(env.meta.clone())
        .records_after(stream, 0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            let l = r.located;
            (
                l.end_offset,
                l.cumulative_bytes,
                l.entry.file_type,
                l.entry.object_key.clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_retention_drops_raw_and_parquet_entries_and_their_objects() {
    let env = env().await;
    let topic = put_topic(&env, "sized", 0xa1, &[("retention.ms", "-1")]).await;
    let stream = topic.stream_id(0);
    // Offsets [0, 50) compacted into two Parquet files of 5 batches, [50, 100) left RAW.
    produce(&env.storage, &stream, 0, 10).await;
    pass(&env, compacting(5)).await;
    produce(&env.storage, &stream, 10, 20).await;
    let before = index_records(&env, &stream).await;
    let types: Vec<FileType> = before.iter().map(|r| r.2).collect();
    assert_eq!(&types[..2], &[FileType::Parquet, FileType::Parquet]);
    assert!(types[2..].iter().all(|t| *t == FileType::Raw));
    assert_eq!(before.len(), 12);
    assert_eq!(keys(&env.objects, "compacted").await.len(), 2);

    // Keep exactly what lies after offset 85: the trim point lands on that entry boundary.
    let total = before.last().unwrap().1;
    let at_85 = before.iter().find(|r| r.0 == 85).unwrap().1;
    let limit = (total - at_85).to_string();
    // One batch per Kafka segment, so that segments end where index entries do (Kafka's
    // testing-only override takes sizes below segment.bytes' 1 MiB minimum).
    put_topic(
        &env,
        "sized",
        0xa1,
        &[
            ("retention.ms", "-1"),
            ("retention.bytes", limit.as_str()),
            ("internal.segment.bytes", "1"),
        ],
    )
    .await;
    pass(&env, not_compacting()).await;
    // The orphan sweeper marks the Parquet files on one pass and deletes them on the next.
    pass(&env, not_compacting()).await;

    let index = Index::new(env.meta.clone());
    assert_eq!(index.trim_point(&stream).await.unwrap(), 85);
    let after = index_records(&env, &stream).await;
    let ends: Vec<u64> = after.iter().map(|r| r.0).collect();
    assert_eq!(ends, vec![90, 95, 100]);
    assert!(
        keys(&env.objects, "compacted").await.is_empty(),
        "parquet files below the trim point are deleted"
    );
    let referenced: BTreeSet<String> = after.iter().map(|r| r.3.clone()).collect();
    assert_eq!(
        keys(&env.objects, "wal").await,
        referenced,
        "wal objects only entries below the trim point named are deleted"
    );

    // Readers: below the log start is out of range, from it the records are intact.
    let bounds = env.storage.refresh_bounds(&stream).await.unwrap();
    assert_eq!((bounds.log_start_offset, bounds.high_watermark), (85, 100));
    assert!(matches!(
        env.storage.read(&stream, 84, 1 << 20).await,
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    let read = env.storage.read(&stream, 85, 1 << 20).await.unwrap();
    assert_eq!(read.chunks[0].base_offset, 85);
    assert_eq!(read.chunks[0].bytes, batch(17).0);

    // A further pass with the same setting changes nothing.
    pass(&env, not_compacting()).await;
    assert_eq!(index_records(&env, &stream).await, after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_retention_trims_to_the_end_but_keeps_the_last_key() {
    let env = env().await;
    // No override: Kafka's default of 7 days applies, and these records are years old.
    let topic = put_topic(&env, "aged", 0xb2, &[("retention.ms", "-1")]).await;
    let stream = topic.stream_id(0);
    // A stream the catalog does not know (a deleted topic): retention leaves it alone.
    let unknown = format!("{:032x}-0", 0xc3);
    produce(&env.storage, &stream, 0, 4).await;
    produce(&env.storage, &unknown, 0, 2).await;
    pass(&env, compacting(100)).await;
    let compacted = index_records(&env, &stream).await;
    assert_eq!(compacted.len(), 1);
    assert_eq!(compacted[0].2, FileType::Parquet);

    put_topic(&env, "aged", 0xb2, &[]).await;
    pass(&env, not_compacting()).await;
    pass(&env, not_compacting()).await;
    let index = Index::new(env.meta.clone());
    assert_eq!(index.trim_point(&stream).await.unwrap(), 20);
    assert_eq!(
        index_records(&env, &stream).await,
        compacted,
        "the last key stays, and so does its file"
    );
    assert_eq!(keys(&env.objects, "compacted").await.len(), 2);
    let bounds = env.storage.refresh_bounds(&stream).await.unwrap();
    assert_eq!((bounds.log_start_offset, bounds.high_watermark), (20, 20));

    // Appends continue after the trimmed log. With retention off the trim point stays, and the
    // PARQUET entry wholly below it, no longer the last, goes; then its file.
    produce(&env.storage, &stream, 4, 5).await;
    let last = env.storage.refresh_bounds(&stream).await.unwrap();
    assert_eq!(last.high_watermark, 25);
    put_topic(&env, "aged", 0xb2, &[("retention.ms", "-1")]).await;
    pass(&env, not_compacting()).await;
    pass(&env, not_compacting()).await;
    assert_eq!(index.trim_point(&stream).await.unwrap(), 20);
    let left = index_records(&env, &stream).await;
    assert_eq!(left.len(), 1);
    assert_eq!((left[0].0, left[0].2), (25, FileType::Raw));
    let files = keys(&env.objects, "compacted").await;
    assert_eq!(files.len(), 1, "only the unknown stream's file is left");
    assert!(files.iter().all(|f| f.contains(&unknown)));
    let read = env.storage.read(&stream, 20, 1 << 20).await.unwrap();
    assert_eq!(read.chunks[0].bytes, batch(4).0);

    assert_eq!(index.trim_point(&unknown).await.unwrap(), 0);
    assert_eq!(index_records(&env, &unknown).await.len(), 1);
    let read = env.storage.read(&unknown, 0, 1 << 20).await.unwrap();
    let records: u64 = read
        .chunks
        .iter()
        .flat_map(|c| c.batches.iter())
        .map(|b| u64::from(b.records))
        .sum();
    assert_eq!(records, 2 * RECORDS_PER_BATCH);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_past_its_retention_is_dropped_without_being_compacted_first() {
    let env = env().await;
    // The batches are from 2023: a day of retention has long passed for all of them.
    let topic = put_topic(&env, "expired", 0xa3, &[("retention.ms", "86400000")]).await;
    let stream = topic.stream_id(0);
    produce(&env.storage, &stream, 0, 10).await;

    pass(&env, compacting(2)).await;

    // Only the stream's last key survives retention (it keeps the offset sequence); it alone
    // may be compacted. Compacting before trimming wrote five files here.
    let records = index_records(&env, &stream).await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].0, 10 * RECORDS_PER_BATCH);
    let written = keys(&env.objects, "compacted").await;
    assert!(
        written.len() <= 1,
        "expired ranges were compacted: {written:?}"
    );
}

/// Appends batch `n` with its records at `timestamp_ms`.
async fn produce_at(storage: &Storage, stream: &str, n: usize, timestamp_ms: i64) {
    let (bytes, meta) = batch_at(n, timestamp_ms);
    storage.append(stream, bytes, vec![meta]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_records_in_the_active_segment_stay_until_a_fresh_segment_rolls_them_out() {
    let env = env().await;
    let now_ms = i64::try_from(storage_now_ms()).unwrap();
    let hour_ms = 3_600_000;
    // A backfill with timestamps two hours old, then fresh records: one Kafka segment by the
    // default segment.ms of 7 days, whose newest record is fresh, so nothing expires.
    let topic = put_topic(&env, "backfill", 0xd4, &[("retention.ms", "3600000")]).await;
    let stream = topic.stream_id(0);
    for n in 0..3 {
        produce_at(&env.storage, &stream, n, now_ms - 2 * hour_ms).await;
    }
    produce_at(&env.storage, &stream, 3, now_ms).await;
    pass(&env, not_compacting()).await;
    let index = Index::new(env.meta.clone());
    assert_eq!(index.trim_point(&stream).await.unwrap(), 0);

    // With segment.ms of an hour the fresh batch rolled a segment of its own, so the old one
    // is closed and wholly expired: it goes, the fresh one stays.
    put_topic(
        &env,
        "backfill",
        0xd4,
        &[("retention.ms", "3600000"), ("segment.ms", "3600000")],
    )
    .await;
    pass(&env, not_compacting()).await;
    assert_eq!(index.trim_point(&stream).await.unwrap(), 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compactor_service_applies_retention_only_once_its_check_is_due() {
    let env = env().await;
    let topic = put_topic(&env, "checked", 0xe5, &[("retention.ms", "1000")]).await;
    let stream = topic.stream_id(0);
    produce(&env.storage, &stream, 0, 3).await;
    let index = Index::new(env.meta.clone());
    let serve = |retention_check_interval_ms| {
        let compactor = Compactor::new(
            env.objects.clone(),
            env.meta.clone(),
            env.meta.clone(),
            CompactorConfig {
                interval_ms: 20,
                retention_check_interval_ms,
                ..not_compacting()
            },
        );
        async move {
            compactor
                .run(tokio::time::sleep(std::time::Duration::from_millis(300)))
                .await
        }
    };
    // The first check of a service comes 30 s after its start, as Kafka's does.
    serve(300_000).await;
    assert_eq!(index.trim_point(&stream).await.unwrap(), 0);
    serve(0).await;
    assert_eq!(index.trim_point(&stream).await.unwrap(), 15);
}

fn storage_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}
