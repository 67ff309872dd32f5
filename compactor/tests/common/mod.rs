//! Helpers for compactor tests: a real engine on a local folder and the embedded MetaStore.
// Each test crate that includes this module uses a different part of it.
#![allow(dead_code)]

use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use metastore::{EmbeddedMetaStore, MetaOptions, MetaStore};
use object_store::path::Path;
use object_store::ObjectStore;
use storage::compacted::{BatchHeader, RecordRow};
use storage::record_batch::{decode_batch, encode_batch, split_batches};
use storage::{BatchMeta, FileType, Storage, StorageConfig};

pub const STREAMS: [&str; 2] = ["aa11-0", "bb22-3"];
pub const RECORDS_PER_BATCH: usize = 5;

pub struct Env {
    pub dir: tempfile::TempDir,
    pub objects: Arc<dyn ObjectStore>,
    pub meta: Arc<dyn MetaStore>,
}

pub async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().join("objects").display());
    let objects = storage::objects::open(&url).unwrap();
    let meta = open_meta(&dir).await;
    Env { dir, objects, meta }
}

/// Another handle (its own session) on the test's MetaStore.
pub async fn open_meta(dir: &tempfile::TempDir) -> Arc<dyn MetaStore> {
    Arc::new(
        EmbeddedMetaStore::open_in_dir(dir.path().join("meta"), MetaOptions::default())
            .await
            .unwrap(),
    )
}

pub fn engine(env: &Env) -> Arc<Storage> {
    let config = StorageConfig {
        write_buffer_size: 4 << 10,
        write_buffer_puts_per_sec_max: Some(500),
        write_buffer_max_streams: 2,
        ..StorageConfig::default()
    };
    Storage::open(config, env.objects.clone(), env.meta.clone())
}

fn batch(stream: &str, n: usize, codec: i16) -> Bytes {
    let header = BatchHeader {
        base_offset: 0,
        partition_leader_epoch: 0,
        attributes: codec,
        last_offset_delta: RECORDS_PER_BATCH as i32 - 1,
        base_timestamp: 1_700_000_000_000 + n as i64,
        max_timestamp: 1_700_000_000_000 + n as i64 + 4,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    };
    let records: Vec<RecordRow> = (0..RECORDS_PER_BATCH as i32)
        .map(|i| RecordRow {
            attributes: 0,
            timestamp_delta: i64::from(i),
            offset_delta: i,
            key: Some(Bytes::from(format!("{stream}-key-{n}-{i}"))),
            value: Some(Bytes::from(format!("value {n} {i} ").repeat(10))),
            headers: vec![],
        })
        .collect();
    encode_batch(&header, &records, codec).unwrap()
}

pub async fn produce(storage: &Storage, appends: usize) {
    produce_with(storage, appends, batch).await
}

/// `appends` rounds of one batch per stream, built by `batch(stream, n, codec)` (codecs rotate),
/// all submitted before any is awaited.
pub async fn produce_with(
    storage: &Storage,
    appends: usize,
    batch: impl Fn(&str, usize, i16) -> Bytes,
) {
    let mut pending = Vec::new();
    for n in 0..appends {
        for stream in STREAMS {
            let payload = batch(stream, n, (n % 5) as i16);
            let meta = BatchMeta {
                len: payload.len() as u32,
                records: RECORDS_PER_BATCH as u32,
                max_timestamp: 1_700_000_000_004 + n as i64,
                producer: None,
            };
            pending.push(storage.submit(stream, payload, vec![meta]).await.unwrap());
        }
    }
    for p in pending {
        p.wait().await.unwrap();
    }
}

/// Every record of a stream as consumers see it: (offset, key, value).
pub async fn consume(storage: &Storage, stream: &str) -> Vec<(u64, Option<Bytes>, Option<Bytes>)> {
    let mut out = Vec::new();
    let mut next = 0u64;
    loop {
        let read = storage.read(stream, next, 64 << 10).await.unwrap();
        if read.chunks.is_empty() {
            break;
        }
        for chunk in read.chunks {
            let mut base = chunk.base_offset;
            for b in split_batches(chunk.bytes).unwrap() {
                let decoded = decode_batch(&b).unwrap();
                for r in decoded.records {
                    let offset = base + r.offset_delta as u64;
                    if offset >= next {
                        out.push((offset, r.key, r.value));
                    }
                }
                base += u64::from(decoded.header.last_offset_delta as u32) + 1;
            }
            next = base;
        }
        if next >= read.bounds.high_watermark {
            break;
        }
    }
    out
}

pub async fn keys(objects: &Arc<dyn ObjectStore>, prefix: &str) -> Vec<String> {
    let metas: Vec<_> = objects
        .list(Some(&Path::from(prefix)))
        .try_collect()
        .await
        .unwrap();
    let mut keys: Vec<String> = metas.into_iter().map(|m| m.location.to_string()).collect();
    keys.sort();
    keys
}

/// Object keys of the PARQUET entries of every stream, sorted.
pub async fn parquet_entries(env: &Env) -> Vec<String> {
    let index = storage::index::Index::new(env.meta.clone());
    let mut out = Vec::new();
    for stream in STREAMS {
        for e in index.entries_from(stream, 0, 1000).await.unwrap() {
            if e.entry.file_type == FileType::Parquet {
                out.push(e.entry.object_key.clone());
            }
        }
    }
    out.sort();
    out
}

/// Every record of every stream, by stream.
pub async fn consume_all(storage: &Storage) -> Vec<Vec<(u64, Option<Bytes>, Option<Bytes>)>> {
    let mut out = Vec::new();
    for stream in STREAMS {
        out.push(consume(storage, stream).await);
    }
    out
}
