//! Key compaction of compacted topics in compactor passes, against a real engine on a local
//! folder and the embedded MetaStore: the latest record of each key stays at its offset, older
//! ones and expired tombstones go, the active segment is never touched, the key index is
//! bounded, and a randomized model with readers running during the passes holds throughout.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and timestamps of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use compactor::{Compactor, CompactorConfig, PassReport};
use futures::stream::BoxStream;
use metastore::{
    Comparison, EmbeddedMetaStore, Expect, MetaError, MetaOptions, MetaResult, MetaStore,
    Notification, PutOptions, PutResult, Record,
};
use object_store::ObjectStore;
use storage::compacted::{BatchHeader, RecordRow};
use storage::index::Index;
use storage::record_batch::{decode_batch, encode_batch, split_batches};
use storage::topics::{self, TopicRecord};
use storage::{BatchMeta, Storage, StorageConfig};

const BASE_MS: i64 = 1_700_000_000_000;

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

/// A compacted topic whose every batch is a segment of its own (`segment.ms` 1, batches 10 ms
/// apart), compacted as soon as anything is dirty.
async fn put_topic(env: &Env, id: u128, partitions: i32, extra: &[(&str, &str)]) -> TopicRecord {
    let mut configs = serde_json::Map::new();
    for (k, v) in [
        ("cleanup.policy", "compact"),
        ("segment.ms", "1"),
        ("min.cleanable.dirty.ratio", "0"),
        ("delete.retention.ms", "0"),
    ]
    .iter()
    .chain(extra)
    {
        configs.insert(k.to_string(), serde_json::Value::from(*v));
    }
    let json = serde_json::json!({
        "id": format!("{id:032x}"),
        "partitions": partitions,
        "configs": configs,
        "created_ms": 0,
    });
    let key = topics::topic_key(&format!("t{id:x}"));
    let (_, record) = topics::decode(&key, json.to_string().as_bytes()).unwrap();
    env.meta
        .put(&key, topics::encode(&record), PutOptions::default())
        .await
        .unwrap();
    record
}

/// (key, value) pairs: `None` values are tombstones.
type Puts = Vec<(String, Option<String>)>;

/// Appends one batch of `records`, stamped `n` * 10 ms after the base; its first offset.
async fn append(storage: &Storage, stream: &str, n: usize, records: &Puts) -> u64 {
    let ts = BASE_MS + n as i64 * 10;
    let header = BatchHeader {
        base_offset: 0,
        partition_leader_epoch: 0,
        attributes: (n % 5) as i16,
        last_offset_delta: records.len() as i32 - 1,
        base_timestamp: ts,
        max_timestamp: ts,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    };
    let rows: Vec<RecordRow> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| RecordRow {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: i as i32,
            key: Some(Bytes::from(k.clone())),
            value: v.clone().map(Bytes::from),
            headers: vec![],
        })
        .collect();
    let bytes = encode_batch(&header, &rows, header.attributes).unwrap();
    let meta = BatchMeta {
        len: bytes.len() as u32,
        records: records.len() as u32,
        max_timestamp: ts,
        producer: None,
    };
    let done = storage.append(stream, bytes, vec![meta]).await.unwrap();
    done.base_offset
}

/// A broker that wrote nothing itself: it reads what the index says now (the writer's engine
/// serves its cached tail, WAL objects included, until they are reclaimed).
fn reader(env: &Env) -> Arc<Storage> {
    Storage::open(
        StorageConfig::default(),
        env.objects.clone(),
        env.meta.clone(),
    )
}

fn config(dedupe_buffer_bytes: u64) -> CompactorConfig {
    CompactorConfig {
        min_bytes: 0,
        min_age_ms: 0,
        file_batches_max: 16,
        // Replaced files stay while readers may still read them.
        grace_period_ms: 600_000,
        // A simulated crash fails a WAL task: retried on the next pass.
        retry_backoff_ms: 1,
        retry_backoff_max_ms: 1,
        dedupe_buffer_bytes,
        ..CompactorConfig::default()
    }
}

async fn pass(env: &Env, config: CompactorConfig) -> PassReport {
    let compactor = Compactor::new(
        env.objects.clone(),
        env.meta.clone(),
        env.meta.clone(),
        config,
    );
    let report = compactor.run_once().await.unwrap();
    assert!(report.leader);
    report
}

/// Every record of a stream as consumers see it, stepping over gaps: (offset, key, value),
/// and every batch's (base offset, last offset) as served.
async fn consume(storage: &Storage, stream: &str) -> Vec<(u64, String, Option<String>)> {
    consume_to(storage, stream).await.0
}

/// [`consume`], and the high watermark the reads ended at.
async fn consume_to(storage: &Storage, stream: &str) -> (Vec<(u64, String, Option<String>)>, u64) {
    let mut out = Vec::new();
    let mut next = 0u64;
    loop {
        let read = storage.read(stream, next, 1 << 10).await.unwrap();
        if read.chunks.is_empty() {
            return (out, read.bounds.high_watermark);
        }
        for chunk in read.chunks {
            let mut base = chunk.base_offset;
            assert!(base >= next, "a chunk starts at {base}, before {next}");
            for b in split_batches(chunk.bytes).unwrap() {
                let decoded = decode_batch(&b).unwrap();
                for r in decoded.records {
                    let offset = base + r.offset_delta as u64;
                    let key = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
                    let value = r.value.map(|v| String::from_utf8(v.to_vec()).unwrap());
                    out.push((offset, key, value));
                }
                base += u64::from(decoded.header.last_offset_delta as u32) + 1;
            }
            next = base;
        }
        if next >= read.bounds.high_watermark {
            return (out, read.bounds.high_watermark);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_latest_record_of_each_key_stays_at_its_offset_below_the_active_segment() {
    let env = env().await;
    let topic = put_topic(&env, 0xc1, 1, &[]).await;
    let stream = topic.stream_id(0);
    let put = |k: &str, v: &str| (k.to_string(), Some(v.to_string()));
    append(
        &env.storage,
        &stream,
        0,
        &vec![put("a", "a1"), put("b", "b1"), put("c", "c1")],
    )
    .await;
    append(
        &env.storage,
        &stream,
        1,
        &vec![put("a", "a2"), ("c".into(), None)],
    )
    .await;
    append(&env.storage, &stream, 2, &vec![put("b", "b2")]).await;
    // The active segment: never compacted, whatever it repeats.
    append(
        &env.storage,
        &stream,
        3,
        &vec![put("a", "a3"), put("a", "a4")],
    )
    .await;
    let report = pass(&env, config(128 << 20)).await;
    assert_eq!(report.keyed.streams, 1, "{report:?}");
    let got = consume(&reader(&env), &stream).await;
    let offsets: Vec<(u64, &str, Option<&str>)> = got
        .iter()
        .map(|(o, k, v)| (*o, k.as_str(), v.as_deref()))
        .collect();
    // a1, b1, c1 superseded; the tombstone of c kept (horizon now + 0, removed next time).
    assert_eq!(
        offsets,
        [
            (3, "a", Some("a2")),
            (4, "c", None),
            (5, "b", Some("b2")),
            (6, "a", Some("a3")),
            (7, "a", Some("a4"))
        ]
    );
    // The tombstone's horizon has passed: the next pass removes it, offsets stay.
    pass(&env, config(128 << 20)).await;
    let storage = reader(&env);
    let offsets: Vec<u64> = consume(&storage, &stream)
        .await
        .iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(offsets, [3, 5, 6, 7]);
    // A read inside a gap lands on the next record.
    let read = storage.read(&stream, 1, 1 << 20).await.unwrap();
    assert_eq!(read.chunks[0].base_offset, 3);
    // A fetch inside a batch's gap gets that batch, as Kafka's: consumers skip the offsets
    // below the one they asked for, so they land on the next record.
    let read = storage.read(&stream, 4, 1 << 20).await.unwrap();
    assert_eq!(read.chunks[0].base_offset, 3);
    // Batches keep their producer's codec (batch 2 was snappy).
    let read = storage.read(&stream, 5, 1).await.unwrap();
    let header = BatchHeader::parse(&read.chunks[0].bytes).unwrap();
    assert_eq!((header.base_offset, header.codec()), (5, 2));
    let next = consume(&storage, &stream)
        .await
        .into_iter()
        .find(|r| r.0 >= 4);
    assert_eq!(next.map(|r| r.0), Some(5));
}

/// A small seeded generator (xorshift64*), so that a failure replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// What was produced: for each stream, offset -> (key, value).
type Log = Arc<Mutex<HashMap<String, BTreeMap<u64, (String, Option<String>)>>>>;

/// Reads every stream from offset 0 and checks it against what was produced: each record is
/// exactly the one produced at its offset (offsets never change), and the latest put of every
/// key produced before the read began is there, unless a newer record of the key was produced
/// meanwhile (compaction never loses a live value; a reader may miss one only for a newer).
async fn check_reads(storage: &Storage, streams: &[String], log: &Log) {
    for stream in streams {
        let before = log.lock().unwrap().get(stream).cloned().unwrap_or_default();
        // A broker that did not append sees other brokers' appends within 100 ms: the read
        // covers what was produced below the high watermark it read to.
        let (got, high_watermark) = consume_to(storage, stream).await;
        let after = log.lock().unwrap().get(stream).cloned().unwrap_or_default();
        for (offset, key, value) in &got {
            let expected = after.get(offset).expect("every record read was produced");
            assert_eq!(
                (key, value),
                (&expected.0, &expected.1),
                "{stream}@{offset}"
            );
        }
        let seen: std::collections::HashSet<u64> = got.iter().map(|r| r.0).collect();
        let latest = |log: &BTreeMap<u64, (String, Option<String>)>| {
            let mut latest: HashMap<String, (u64, bool)> = HashMap::new();
            for (offset, (key, value)) in log {
                latest.insert(key.clone(), (*offset, value.is_some()));
            }
            latest
        };
        let newest = latest(&after);
        for (key, (offset, live)) in latest(&before) {
            let superseded = newest.get(&key).is_some_and(|(o, _)| *o > offset);
            if live && !superseded && offset < high_watermark {
                assert!(
                    seen.contains(&offset),
                    "{stream}: the latest {key}@{offset} is missing; read {:?}",
                    &got[..got.len().min(8)]
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_random_history_of_puts_and_deletes_compacts_to_exactly_the_live_keys() {
    let env = env().await;
    let partitions = 3;
    let topic = put_topic(&env, 0xc2, partitions, &[]).await;
    let streams: Vec<String> = (0..partitions).map(|p| topic.stream_id(p)).collect();
    let log: Log = Arc::new(Mutex::new(HashMap::new()));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Room for about 20 keys of the 40 in play: big dirty sections take several passes.
    let config = config(20 * 24 * 10 / 9 + 24);
    let stop = Arc::new(AtomicBool::new(false));
    let concurrent = {
        let (storage, streams, log, stop) =
            (reader(&env), streams.clone(), log.clone(), stop.clone());
        tokio::spawn(async move {
            let mut reads = 0;
            while !stop.load(Ordering::Acquire) {
                check_reads(&storage, &streams, &log).await;
                reads += 1;
            }
            reads
        })
    };
    let mut n = 0;
    for round in 0..30 {
        for stream in &streams {
            for _ in 0..rng.below(4) {
                let records: Puts = (0..1 + rng.below(5))
                    .map(|_| {
                        let key = format!("k{}", rng.below(40));
                        let value =
                            (rng.below(5) != 0).then(|| format!("{key}-v{n}-{}", rng.below(1000)));
                        (key, value)
                    })
                    .collect();
                let base = append(&env.storage, stream, n, &records).await;
                n += 1;
                let mut log = log.lock().unwrap();
                let produced = log.entry(stream.clone()).or_default();
                for (i, r) in records.into_iter().enumerate() {
                    produced.insert(base + i as u64, r);
                }
            }
        }
        if rng.below(3) == 0 || round == 29 {
            pass(&env, config.clone()).await;
        }
    }
    // One more batch per stream opens a new active segment; then passes until nothing is due.
    for stream in &streams {
        let base = append(
            &env.storage,
            stream,
            n + 100,
            &vec![("sentinel".into(), Some("s".into()))],
        )
        .await;
        log.lock()
            .unwrap()
            .entry(stream.clone())
            .or_default()
            .insert(base, ("sentinel".into(), Some("s".into())));
    }
    let mut passes = 0;
    while pass(&env, config.clone()).await.keyed.streams > 0 {
        passes += 1;
        assert!(passes < 20, "key compaction never settles");
    }
    stop.store(true, Ordering::Release);
    let reads = concurrent.await.unwrap();
    assert!(reads > 0);
    let storage = reader(&env);
    check_reads(&storage, &streams, &log).await;
    for stream in &streams {
        let produced = log.lock().unwrap().get(stream).cloned().unwrap();
        let mut live: BTreeMap<String, (u64, String)> = BTreeMap::new();
        for (offset, (key, value)) in produced {
            match value {
                Some(v) => live.insert(key, (offset, v)),
                None => live.remove(&key),
            };
        }
        let got = consume(&storage, stream).await;
        let records = got.len();
        let got: BTreeMap<String, (u64, String)> = got
            .into_iter()
            .map(|(o, k, v)| (k, (o, v.expect("every tombstone is gone"))))
            .collect();
        assert_eq!(got.len(), records, "{stream}: one record per key");
        assert_eq!(got, live, "{stream}");
    }
}

/// A MetaStore whose writes all fail after the first `allowed` ones, as if the process died.
struct CrashAfter {
    inner: Arc<dyn MetaStore>,
    left: AtomicI64,
}

impl CrashAfter {
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

/// The live set of a produced log: key -> (offset, value) of its latest put.
fn live_set(produced: &BTreeMap<u64, (String, Option<String>)>) -> BTreeMap<String, (u64, String)> {
    let mut live = BTreeMap::new();
    for (offset, (key, value)) in produced {
        match value {
            Some(v) => live.insert(key.clone(), (*offset, v.clone())),
            None => live.remove(key),
        };
    }
    live
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compactor_dying_at_any_metastore_write_of_key_compaction_loses_and_resurrects_nothing() {
    let mut k = 0;
    loop {
        let env = env().await;
        let topic = put_topic(&env, 0xc3, 1, &[]).await;
        let stream = topic.stream_id(0);
        let streams = vec![stream.clone()];
        let log: Log = Arc::new(Mutex::new(HashMap::new()));
        // Two compactions' worth: the first pass compacts a history, the crashing one the next.
        let mut rng = Rng(0x5eed + 1);
        let mut n = 0;
        for round in 0..2 {
            for _ in 0..12 {
                let records: Puts = (0..3)
                    .map(|_| {
                        let key = format!("k{}", rng.below(12));
                        let value = (rng.below(4) != 0).then(|| format!("{key}-v{n}"));
                        (key, value)
                    })
                    .collect();
                let base = append(&env.storage, &stream, n, &records).await;
                n += 1;
                let mut log = log.lock().unwrap();
                let produced = log.entry(stream.clone()).or_default();
                for (i, r) in records.into_iter().enumerate() {
                    produced.insert(base + i as u64, r);
                }
            }
            if round == 0 {
                pass(&env, config(128 << 20)).await;
            }
        }
        let sentinel = vec![("sentinel".to_string(), Some("s".to_string()))];
        let base = append(&env.storage, &stream, n + 100, &sentinel).await;
        log.lock()
            .unwrap()
            .entry(stream.clone())
            .or_default()
            .insert(base, sentinel[0].clone());

        let crashing = Arc::new(CrashAfter {
            inner: env.meta.clone(),
            left: AtomicI64::new(k),
        });
        let crashed = Compactor::new(
            env.objects.clone(),
            crashing.clone(),
            env.meta.clone(),
            config(128 << 20),
        );
        let outcome = crashed.run_once().await;
        check_reads(&reader(&env), &streams, &log).await;
        if !crashing.crashed() {
            outcome.unwrap();
            break;
        }
        let mut passes = 0;
        // Until nothing is left to do: a failed WAL task is retried after its backoff (1 ms).
        while {
            let r = pass(&env, config(128 << 20)).await;
            r.keyed.streams > 0 || r.records_compacted > 0 || r.tasks_failed > 0
        } {
            passes += 1;
            assert!(
                passes < 10,
                "crash at write {k}: key compaction never settles"
            );
        }
        let storage = reader(&env);
        check_reads(&storage, &streams, &log).await;
        let produced = log.lock().unwrap().get(&stream).cloned().unwrap();
        let got: BTreeMap<String, (u64, String)> = consume(&storage, &stream)
            .await
            .into_iter()
            .map(|(o, key, v)| {
                (
                    key.clone(),
                    (
                        o,
                        v.unwrap_or_else(|| {
                            panic!("crash at write {k}: tombstone of {key}@{o} left")
                        }),
                    ),
                )
            })
            .collect();
        assert_eq!(got, live_set(&produced), "crash at write {k}");
        env.storage.shutdown().await;
        k += 1;
        assert!(k < 500, "the pass never completes");
    }
    assert!(k >= 5, "only {k} crash points");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_applies_to_compact_delete_topics_and_not_to_compact_ones() {
    let env = env().await;
    let put = |k: &str, v: &str| (k.to_string(), Some(v.to_string()));
    // Records from November 2023, far past a one-hour retention.
    let compact = put_topic(&env, 0xd1, 1, &[("retention.ms", "3600000")]).await;
    let both = put_topic(
        &env,
        0xd2,
        1,
        &[
            ("retention.ms", "3600000"),
            ("cleanup.policy", "compact,delete"),
        ],
    )
    .await;
    for topic in [&compact, &both] {
        let stream = topic.stream_id(0);
        append(
            &env.storage,
            &stream,
            0,
            &vec![put("a", "1"), put("b", "1")],
        )
        .await;
        append(&env.storage, &stream, 1, &vec![put("a", "2")]).await;
        append(&env.storage, &stream, 2, &vec![put("c", "1")]).await;
    }
    pass(&env, config(128 << 20)).await;
    let storage = reader(&env);
    let kept: Vec<(u64, String)> = consume(&storage, &compact.stream_id(0))
        .await
        .into_iter()
        .map(|(o, k, _)| (o, k))
        .collect();
    let expected = [
        (1, "b".to_string()),
        (2, "a".to_string()),
        (3, "c".to_string()),
    ];
    assert_eq!(kept, expected, "compact: only key compaction");
    let bounds = storage.bounds(&both.stream_id(0)).await.unwrap();
    assert_eq!(
        bounds.log_start_offset, 4,
        "compact,delete: retention removed every segment"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_bytes_measures_a_compacted_log_at_its_compacted_size() {
    let env = env().await;
    let topic = put_topic(&env, 0xd3, 1, &[("retention.ms", "-1")]).await;
    let stream = topic.stream_id(0);
    // 33 batches: a key of their own each, and 2 KB under a key they all update.
    let big = "x".repeat(2_000);
    for n in 0..33 {
        let records = vec![
            (format!("u{n}"), Some("v".to_string())),
            ("a".to_string(), Some(big.clone())),
        ];
        append(&env.storage, &stream, n, &records).await;
    }
    // Files of 16 batches: key compaction keeps them as separate entries; ~18 KB appended
    // (the batches compress), ~4.5 KB left.
    pass(&env, config(128 << 20)).await;
    let records = Index::new(env.meta.clone())
        .records_after(&stream, 0, 100)
        .await
        .unwrap();
    assert!(records.len() >= 2, "{} entries", records.len());

    put_topic(
        &env,
        0xd3,
        1,
        &[
            ("retention.ms", "-1"),
            ("cleanup.policy", "compact,delete"),
            ("retention.bytes", "6000"),
        ],
    )
    .await;
    pass(&env, config(128 << 20)).await;
    let storage = reader(&env);
    assert_eq!(
        storage.bounds(&stream).await.unwrap().log_start_offset,
        0,
        "the log is ~4.5 KB: nothing to trim"
    );
    // Every own key, and `a` twice: below the active segment and in it.
    assert_eq!(consume(&storage, &stream).await.len(), 33 + 2);
}
