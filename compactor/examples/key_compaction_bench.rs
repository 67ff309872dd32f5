//! Key compaction benchmark: a compacted topic of KEYS keys updated UPDATES times each
//! (values of VALUE_BYTES), on a local folder and the embedded MetaStore.
//!
//!     key_compaction_bench prepare DIR [KEYS [UPDATES [VALUE_BYTES]]]
//!         appends the records, then one compactor pass rewrites the WAL to Parquet (the topic
//!         is `delete` meanwhile, so nothing is compacted by key yet)
//!     key_compaction_bench compact DIR
//!         makes the topic `compact` and runs one pass: only key compaction has work; prints
//!         its time, CPU time, bytes and the topic's Parquet bytes before and after
//!
//! Run the two steps as separate processes so that the second's peak RSS (`/usr/bin/time -v`,
//! or the VmHWM it prints) is key compaction's alone. See `bench/key_compaction.sh`.

// A benchmark: failures abort it with their message.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss
)]

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use compactor::{Compactor, CompactorConfig};
use metastore::{EmbeddedMetaStore, MetaOptions, MetaStore, PutOptions};
use storage::compacted::{BatchHeader, RecordRow};
use storage::record_batch::encode_batch;
use storage::topics::{self, TopicRecord};
use storage::{BatchMeta, Storage, StorageConfig};

const RECORDS_PER_BATCH: usize = 1000;
const BASE_MS: i64 = 1_700_000_000_000;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = Path::new(
        args.get(2)
            .expect("usage: key_compaction_bench prepare|compact DIR ..."),
    );
    let number = |i: usize, default: usize| args.get(i).map_or(default, |a| a.parse().unwrap());
    match args[1].as_str() {
        "prepare" => prepare(dir, number(3, 1_000_000), number(4, 10), number(5, 100)).await,
        "compact" => compact(dir).await,
        other => panic!("unknown step {other}"),
    }
}

async fn open(dir: &Path) -> (Arc<dyn object_store::ObjectStore>, Arc<dyn MetaStore>) {
    std::fs::create_dir_all(dir.join("objects")).unwrap();
    let url = format!("file://{}", dir.join("objects").display());
    let objects = storage::objects::open(&url).unwrap();
    let meta: Arc<dyn MetaStore> = Arc::new(
        EmbeddedMetaStore::open_in_dir(dir.join("meta"), MetaOptions::default())
            .await
            .unwrap(),
    );
    (objects, meta)
}

async fn put_topic(meta: &Arc<dyn MetaStore>, policy: &str) -> TopicRecord {
    let json = serde_json::json!({
        "id": format!("{:032x}", 0xbe_u128),
        "partitions": 1,
        "configs": {
            "cleanup.policy": policy,
            "retention.ms": "-1",
            "segment.ms": "1",
            "min.cleanable.dirty.ratio": "0",
        },
        "created_ms": 0,
    });
    let key = topics::topic_key("bench");
    let (_, record) = topics::decode(&key, json.to_string().as_bytes()).unwrap();
    meta.put(&key, topics::encode(&record), PutOptions::default())
        .await
        .unwrap();
    record
}

fn config() -> CompactorConfig {
    CompactorConfig {
        min_bytes: 0,
        min_age_ms: 0,
        grace_period_ms: 0,
        ..CompactorConfig::default()
    }
}

async fn prepare(dir: &Path, keys: usize, updates: usize, value_bytes: usize) {
    let (objects, meta) = open(dir).await;
    let topic = put_topic(&meta, "delete").await;
    let stream = topic.stream_id(0);
    let storage = Storage::open(StorageConfig::default(), objects.clone(), meta.clone());
    let started = Instant::now();
    let mut pending = Vec::new();
    let mut input_bytes = 0u64;
    let total = keys * updates;
    for (n, first) in (0..total).step_by(RECORDS_PER_BATCH).enumerate() {
        let count = RECORDS_PER_BATCH.min(total - first);
        let ts = BASE_MS + n as i64 * 10;
        let header = BatchHeader {
            base_offset: 0,
            partition_leader_epoch: 0,
            attributes: 0,
            last_offset_delta: count as i32 - 1,
            base_timestamp: ts,
            max_timestamp: ts,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
        };
        let records: Vec<RecordRow> = (0..count)
            .map(|i| {
                let record = first + i;
                let mut value =
                    format!("update {} of key {} ", record / keys, record % keys).into_bytes();
                value.resize(value_bytes, b'.');
                RecordRow {
                    attributes: 0,
                    timestamp_delta: 0,
                    offset_delta: i as i32,
                    key: Some(Bytes::from(format!("key-{:08}", record % keys))),
                    value: Some(Bytes::from(value)),
                    headers: vec![],
                }
            })
            .collect();
        let bytes = encode_batch(&header, &records, 0).unwrap();
        input_bytes += bytes.len() as u64;
        let meta = BatchMeta {
            len: bytes.len() as u32,
            records: count as u32,
            max_timestamp: ts,
            producer: None,
        };
        pending.push(storage.submit(&stream, bytes, vec![meta]).await.unwrap());
        if pending.len() >= 64 {
            for p in pending.drain(..) {
                p.wait().await.unwrap();
            }
        }
    }
    for p in pending {
        p.wait().await.unwrap();
    }
    println!(
        "appended {total} records, {input_bytes} bytes in {:.1?}",
        started.elapsed()
    );
    let started = Instant::now();
    let report = Compactor::new(objects.clone(), meta.clone(), meta.clone(), config())
        .run_once()
        .await
        .unwrap();
    println!(
        "wal -> parquet: {} records in {:.1?}, parquet bytes {}",
        report.records_compacted,
        started.elapsed(),
        parquet_bytes(dir)
    );
}

async fn compact(dir: &Path) {
    let (objects, meta) = open(dir).await;
    put_topic(&meta, "compact").await;
    let before = parquet_bytes(dir);
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let compactor = Compactor::new(objects.clone(), meta.clone(), meta.clone(), config());
    let report = compactor.run_once().await.unwrap();
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_before;
    // The replaced files go once unreferenced twice (grace period 0): mark, then delete.
    compactor.run_once().await.unwrap();
    compactor.run_once().await.unwrap();
    let keyed = report.keyed;
    let mib = keyed.bytes_read as f64 / f64::from(1 << 20);
    println!("key compaction: {keyed:?}");
    println!(
        "wall {wall:.1} s, cpu {cpu:.1} s, read {mib:.0} MiB rebuilt batches: {:.0} MiB/s, {:.0} MiB/s per core-second",
        mib / wall,
        mib / cpu
    );
    println!(
        "parquet bytes before {before}, after {}",
        parquet_bytes(dir)
    );
    println!("{}", peak_rss());
}

fn parquet_bytes(dir: &Path) -> u64 {
    fn walk(p: &Path) -> u64 {
        std::fs::read_dir(p).map_or(0, |entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| {
                    let path = e.path();
                    if path.is_dir() {
                        walk(&path)
                    } else if path.extension().is_some_and(|x| x == "parquet") {
                        e.metadata().map_or(0, |m| m.len())
                    } else {
                        0
                    }
                })
                .sum()
        })
    }
    walk(&dir.join("objects").join("compacted"))
}

/// User plus system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn peak_rss() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .unwrap_or("VmHWM unknown")
        .to_string()
}
