//! Compacted files stream to the object store while they are written: a range larger than one
//! upload part goes up as a multipart upload and reads back record by record; a part that fails
//! aborts the upload, leaves the index as it was, and the next pass succeeds.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and timestamps of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod common;
#[path = "../../storage/tests/objects_conformance/moto.rs"]
mod moto;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use common::{consume, engine, keys, open_meta, Env, STREAMS};
use compactor::{Compactor, CompactorConfig};
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, UploadPart,
};
use storage::compacted::{BatchHeader, RecordRow};
use storage::objects::{open, open_with, OpenOptions};
use storage::record_batch::encode_batch;
use storage::{BatchMeta, FileType, Storage};

const STREAM: &str = STREAMS[0];
/// 16 records of 64 KiB: one MiB per append.
const RECORDS_PER_APPEND: usize = 16;
const VALUE_BYTES: usize = 64 << 10;

/// What a [`PartsStore`] saw; `fail_part` makes that part (1-based, over all uploads) fail.
#[derive(Debug, Default)]
struct PartStats {
    compacted_puts: AtomicU64,
    uploads: AtomicU64,
    parts: AtomicU64,
    completed: AtomicU64,
    aborted: AtomicU64,
    fail_part: AtomicU64,
}

impl PartStats {
    fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::SeqCst)
    }
}

/// Wraps a store and counts single PUTs of compacted files and multipart uploads part by part.
#[derive(Debug)]
struct PartsStore {
    inner: Arc<dyn ObjectStore>,
    stats: Arc<PartStats>,
}

impl fmt::Display for PartsStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PartsStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for PartsStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        if location.as_ref().starts_with("compacted/") {
            self.stats.compacted_puts.fetch_add(1, Ordering::SeqCst);
        }
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.stats.uploads.fetch_add(1, Ordering::SeqCst);
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(PartsUpload {
            inner,
            stats: self.stats.clone(),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[derive(Debug)]
struct PartsUpload {
    inner: Box<dyn MultipartUpload>,
    stats: Arc<PartStats>,
}

#[async_trait]
impl MultipartUpload for PartsUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let number = self.stats.parts.fetch_add(1, Ordering::SeqCst) + 1;
        let fail = self
            .stats
            .fail_part
            .compare_exchange(number, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if fail {
            return Box::pin(async move {
                Err(object_store::Error::Generic {
                    store: "PartsStore",
                    source: format!("injected failure of part {number}").into(),
                })
            });
        }
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.stats.completed.fetch_add(1, Ordering::SeqCst);
        self.inner.complete().await
    }

    async fn abort(&mut self) -> Result<()> {
        self.stats.aborted.fetch_add(1, Ordering::SeqCst);
        self.inner.abort().await
    }
}

/// Bytes no compressor shrinks (xorshift64), so the Parquet file is about as large as its input.
fn incompressible(seed: u64, len: usize) -> Bytes {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(len);
    Bytes::from(out)
}

/// Appends `appends` batches of one MiB each to [`STREAM`].
async fn produce(storage: &Storage, appends: usize) {
    let mut pending = Vec::new();
    for n in 0..appends {
        let header = BatchHeader {
            base_offset: 0,
            partition_leader_epoch: 0,
            attributes: 0,
            last_offset_delta: RECORDS_PER_APPEND as i32 - 1,
            base_timestamp: 1_700_000_000_000 + n as i64,
            max_timestamp: 1_700_000_000_000 + n as i64 + 15,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
        };
        let records: Vec<RecordRow> = (0..RECORDS_PER_APPEND as i32)
            .map(|i| RecordRow {
                attributes: 0,
                timestamp_delta: i64::from(i),
                offset_delta: i,
                key: Some(Bytes::from(format!("key-{n}-{i}"))),
                value: Some(incompressible(
                    (n * RECORDS_PER_APPEND) as u64 + i as u64,
                    VALUE_BYTES,
                )),
                headers: vec![],
            })
            .collect();
        let payload = encode_batch(&header, &records, 0).unwrap();
        let meta = BatchMeta {
            len: payload.len() as u32,
            records: RECORDS_PER_APPEND as u32,
            max_timestamp: header.max_timestamp,
            producer: None,
        };
        pending.push(storage.submit(STREAM, payload, vec![meta]).await.unwrap());
    }
    for p in pending {
        p.wait().await.unwrap();
    }
}

async fn env_over(inner: Arc<dyn ObjectStore>, dir: tempfile::TempDir) -> (Env, Arc<PartStats>) {
    let stats = Arc::new(PartStats::default());
    let objects: Arc<dyn ObjectStore> = Arc::new(PartsStore {
        inner,
        stats: stats.clone(),
    });
    let meta = open_meta(&dir).await;
    (Env { dir, objects, meta }, stats)
}

async fn memory_env() -> (Env, Arc<PartStats>) {
    env_over(open("memory://").unwrap(), tempfile::tempdir().unwrap()).await
}

async fn local_env() -> (Env, Arc<PartStats>) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().join("objects").display());
    env_over(open(&url).unwrap(), dir).await
}

fn compactor(env: &Env) -> Compactor {
    let config = CompactorConfig {
        min_bytes: 0,
        min_age_ms: 0,
        grace_period_ms: 0,
        retry_backoff_ms: 0,
        task_attempts_max: u32::MAX,
        ..CompactorConfig::default()
    };
    Compactor::new(
        env.objects.clone(),
        env.meta.clone(),
        env.meta.clone(),
        config,
    )
}

/// The stream's index as stored: (end offset, encoded entry) per key.
async fn index_of(env: &Env) -> Vec<(u64, Bytes)> {
    let index = storage::index::Index::new(env.meta.clone());
    let entries = index.entries_from(STREAM, 0, 1000).await.unwrap();
    entries
        .iter()
        .map(|e| (e.end_offset, e.entry.encode()))
        .collect()
}

/// Compacts 12 MiB into one file through the multipart path and reads it back record by record.
async fn multipart_round_trip(env: Env, stats: Arc<PartStats>) {
    produce(&engine(&env), 12).await;
    let expected = consume(&engine(&env), STREAM).await;
    assert_eq!(expected.len(), 12 * RECORDS_PER_APPEND);

    let report = compactor(&env).run_once().await.unwrap();
    assert_eq!((report.files_written, report.streams_failed), (1, 0));
    assert_eq!(report.records_compacted, expected.len() as u64);
    assert_eq!(PartStats::get(&stats.compacted_puts), 0, "no single PUT");
    assert_eq!(PartStats::get(&stats.uploads), 1);
    assert_eq!(PartStats::get(&stats.parts), 3, "12+ MiB in parts of 5 MiB");
    assert_eq!(PartStats::get(&stats.completed), 1);
    assert_eq!(PartStats::get(&stats.aborted), 0);
    assert!(
        keys(&env.objects, "wal").await.is_empty(),
        "wal objects left"
    );

    let index = storage::index::Index::new(env.meta.clone());
    let entries = index.entries_from(STREAM, 0, 1000).await.unwrap();
    assert_eq!(entries.len(), 1);
    let entry = &entries[0].entry;
    assert_eq!(entry.file_type, FileType::Parquet);
    let file = env
        .objects
        .get(&Path::from(entry.object_key.as_str()))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(file.len() > 12 << 20);
    assert_eq!(file.len() as u64, u64::from(entry.byte_len));
    assert_eq!(crc32c::crc32c(&file), entry.crc32c);

    // A fresh engine has no cached RAW data: every record comes from the Parquet file.
    assert_eq!(consume(&engine(&env), STREAM).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_larger_than_one_part_goes_up_in_parts_on_the_memory_store() {
    let (env, stats) = memory_env().await;
    multipart_round_trip(env, stats).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_larger_than_one_part_goes_up_in_parts_on_a_local_folder() {
    let (env, stats) = local_env().await;
    multipart_round_trip(env, stats).await;
}

/// S3 itself (moto) refuses parts below 5 MiB except the last: the part size must be right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_larger_than_one_part_goes_up_in_parts_on_s3() {
    let Some(server) = moto::MotoServer::start() else {
        return;
    };
    server.create_bucket("compacted");
    let config = [
        ("aws_endpoint", server.endpoint.as_str()),
        ("aws_access_key_id", "test"),
        ("aws_secret_access_key", "test"),
        ("aws_region", "us-east-1"),
    ];
    let options = OpenOptions {
        s3_config: config
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        max_retries: 1,
        retry_timeout_ms: 5_000,
        ..OpenOptions::default()
    };
    let inner = open_with("s3://compacted/tenant", &options).unwrap();
    let (env, stats) = env_over(inner, tempfile::tempdir().unwrap()).await;
    multipart_round_trip(env, stats).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_below_one_part_goes_up_in_a_single_put() {
    let (env, stats) = memory_env().await;
    produce(&engine(&env), 3).await;
    let report = compactor(&env).run_once().await.unwrap();
    assert_eq!((report.files_written, report.streams_failed), (1, 0));
    assert_eq!(PartStats::get(&stats.compacted_puts), 1);
    assert_eq!(PartStats::get(&stats.uploads), 0);
    assert_eq!(
        consume(&engine(&env), STREAM).await.len(),
        3 * RECORDS_PER_APPEND
    );
}

/// Every file under the local folder's compacted prefix, staging files of uploads included.
fn files_on_disk(env: &Env) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![env.dir.path().join("objects").join("compacted")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

async fn failed_part_then_retry(env: Env, stats: Arc<PartStats>, local: bool) {
    produce(&engine(&env), 12).await;
    let expected = consume(&engine(&env), STREAM).await;
    let index_before = index_of(&env).await;
    let wal_before = keys(&env.objects, "wal").await;
    let compactor = compactor(&env);

    // The first part fails while later ones are still being written.
    stats.fail_part.store(1, Ordering::SeqCst);
    let failed = compactor.run_once().await.unwrap();
    assert_eq!((failed.files_written, failed.tasks_failed), (0, 1));
    assert_eq!(PartStats::get(&stats.uploads), 1);
    assert_eq!(PartStats::get(&stats.completed), 0);
    assert_eq!(PartStats::get(&stats.aborted), 1, "the upload is aborted");
    assert!(keys(&env.objects, "compacted").await.is_empty());
    if local {
        assert_eq!(
            files_on_disk(&env),
            Vec::<std::path::PathBuf>::new(),
            "no staging file lingers"
        );
    }
    assert_eq!(index_of(&env).await, index_before, "index unchanged");
    assert_eq!(keys(&env.objects, "wal").await, wal_before);
    assert_eq!(consume(&engine(&env), STREAM).await, expected);

    let retried = compactor.run_once().await.unwrap();
    assert_eq!((retried.files_written, retried.tasks_failed), (1, 0));
    assert_eq!(PartStats::get(&stats.completed), 1);
    assert_eq!(keys(&env.objects, "compacted").await.len(), 1);
    assert!(keys(&env.objects, "wal").await.is_empty());
    assert_eq!(consume(&engine(&env), STREAM).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_part_failing_mid_upload_leaves_the_index_unchanged_and_a_retry_succeeds_in_memory() {
    let (env, stats) = memory_env().await;
    failed_part_then_retry(env, stats, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_part_failing_mid_upload_leaves_no_file_behind_in_a_local_folder() {
    let (env, stats) = local_env().await;
    failed_part_then_retry(env, stats, true).await;
}

/// Files under `root` whose names end in `#<digits>` (object_store's upload staging files).
fn staging_files(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.to_string_lossy().rsplit_once('#').is_some() {
                found.push(path);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_abandoned_by_a_killed_process_is_swept_from_a_local_folder() {
    let (env, _stats) = local_env().await;
    let root = env.dir.path().join("objects");
    // A process killed mid-upload neither completes nor aborts: forgetting the upload leaves
    // its staging file exactly as a SIGKILL would.
    let mut upload = env
        .objects
        .put_multipart(&Path::from("compacted/aa11-0/dead.parquet"))
        .await
        .unwrap();
    upload
        .put_part(PutPayload::from(vec![7u8; 1 << 20]))
        .await
        .unwrap();
    std::mem::forget(upload);
    let left = staging_files(&root);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        keys(&env.objects, "compacted/").await.is_empty(),
        "listings hide it"
    );

    // A fresh one is left alone (an upload might still be writing it)...
    let sweeping_after = |idle_ms| {
        let config = CompactorConfig {
            local_folder: Some(root.clone()),
            staging_idle_ms: idle_ms,
            ..CompactorConfig::default()
        };
        Compactor::new(
            env.objects.clone(),
            env.meta.clone(),
            env.meta.clone(),
            config,
        )
    };
    let patient = sweeping_after(600_000);
    assert_eq!(patient.run_once().await.unwrap().staging_files_removed, 0);
    assert_eq!(staging_files(&root), left);
    // ...and an idle one goes.
    let sweeper = sweeping_after(0);
    assert_eq!(sweeper.run_once().await.unwrap().staging_files_removed, 1);
    assert!(staging_files(&root).is_empty());
}
