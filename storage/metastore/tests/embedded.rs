//! The embedded MetaStore: the shared conformance suite, plus what only a local multi-process
//! store has to prove (durability across reopen, several OS processes on one file, lock timeouts,
//! group-commit throughput).

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use metastore::conformance::{eventually, unique_prefix, MetaHarness};
use metastore::{
    Comparison, EmbeddedMetaStore, MetaError, MetaOptions, MetaStore, Notification, PutOptions,
};

/// Each test gets its own directory; a name maps to one database file in it.
struct EmbeddedHarness {
    dir: tempfile::TempDir,
}

impl EmbeddedHarness {
    fn new() -> Self {
        EmbeddedHarness {
            dir: tempfile::tempdir().unwrap(),
        }
    }
}

#[async_trait::async_trait]
impl MetaHarness for EmbeddedHarness {
    async fn open(&self, name: &str, options: MetaOptions) -> Arc<dyn MetaStore> {
        let path = self.dir.path().join(format!("{name}.sqlite"));
        Arc::new(EmbeddedMetaStore::open(path, options).await.unwrap())
    }
}

metastore::meta_conformance_tests!(EmbeddedHarness::new());

fn quiet() -> MetaOptions {
    MetaOptions {
        notifications: false,
        ..MetaOptions::default()
    }
}

fn sequence(partition: &str, deltas: &[u64]) -> PutOptions {
    PutOptions {
        sequence_key_deltas: Some(deltas.to_vec()),
        ..PutOptions::partition(partition)
    }
}

#[tokio::test]
async fn records_and_version_ids_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.sqlite");
    let store = EmbeddedMetaStore::open(&path, quiet()).await.unwrap();
    let plain = store
        .put(
            "topics/a",
            Bytes::from_static(b"config"),
            PutOptions::default(),
        )
        .await
        .unwrap();
    store
        .put("s", Bytes::from_static(b"1"), sequence("s", &[10, 1000]))
        .await
        .unwrap();
    store.close().await.unwrap();
    // The last handle is gone, so the next open really reopens the file.
    drop(store);

    let store = EmbeddedMetaStore::open(&path, quiet()).await.unwrap();
    let record = store
        .get("topics/a", Comparison::Equal, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.value, Bytes::from_static(b"config"));
    assert_eq!(record.version, plain.version);
    let next = store
        .put("s", Bytes::from_static(b"2"), sequence("s", &[5, 500]))
        .await
        .unwrap();
    assert_eq!(next.key, format!("s-{:020}-{:020}", 15, 1500));
    assert!(next.version.version_id > plain.version.version_id);
    store.close().await.unwrap();
}

#[tokio::test]
async fn dropped_handle_keeps_ephemeral_records_until_its_session_expires() {
    let dir = tempfile::tempdir().unwrap();
    let session_timeout = Duration::from_secs(1);
    let owner = EmbeddedMetaStore::open_in_dir(
        dir.path(),
        MetaOptions {
            session_timeout,
            ..quiet()
        },
    )
    .await
    .unwrap();
    let observer = EmbeddedMetaStore::open_in_dir(dir.path(), quiet())
        .await
        .unwrap();
    let ephemeral = PutOptions {
        ephemeral: true,
        ..PutOptions::default()
    };
    owner
        .put("brokers/1", Bytes::from_static(b"up"), ephemeral)
        .await
        .unwrap();
    // Renewals keep it alive well past the timeout while the handle lives.
    tokio::time::sleep(session_timeout * 2).await;
    assert!(observer
        .get("brokers/1", Comparison::Equal, None)
        .await
        .unwrap()
        .is_some());

    let dropped_at = Instant::now();
    drop(owner);
    assert!(observer
        .get("brokers/1", Comparison::Equal, None)
        .await
        .unwrap()
        .is_some());
    assert!(
        eventually(|| async {
            observer
                .get("brokers/1", Comparison::Equal, None)
                .await
                .unwrap()
                .is_none()
        })
        .await
    );
    let waited = dropped_at.elapsed();
    assert!(
        waited >= session_timeout / 3,
        "vanished after {waited:?}, before the session could expire"
    );
    observer.close().await.unwrap();
}

#[tokio::test]
async fn ephemeral_put_after_the_session_was_reaped_fails_with_session_expired() {
    let dir = tempfile::tempdir().unwrap();
    let session_timeout = Duration::from_secs(1);
    let store = EmbeddedMetaStore::open_in_dir(
        dir.path(),
        MetaOptions {
            session_timeout,
            ..quiet()
        },
    )
    .await
    .unwrap();
    // Another process (here: a raw connection) declares the session dead, as a reaper would
    // after a long stall of this process.
    let raw = rusqlite::Connection::open(store.path()).unwrap();
    raw.busy_timeout(Duration::from_secs(5)).unwrap();
    raw.execute(
        "UPDATE sessions SET deadline_ms = 0 WHERE id = ?1",
        [store.session_id()],
    )
    .unwrap();
    let ephemeral = PutOptions {
        ephemeral: true,
        ..PutOptions::default()
    };
    let err = store
        .put("brokers/1", Bytes::from_static(b"up"), ephemeral)
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::SessionExpired), "{err:?}");
    // Persistent writes still work.
    store
        .put("topics/a", Bytes::from_static(b"x"), PutOptions::default())
        .await
        .unwrap();
    store.close().await.unwrap();
}

#[tokio::test]
async fn keys_containing_nul_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedMetaStore::open_in_dir(dir.path(), quiet())
        .await
        .unwrap();
    let err = store
        .put("a\0b", Bytes::new(), PutOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::InvalidArgument(_)), "{err:?}");
    store.close().await.unwrap();
}

#[tokio::test]
async fn sequence_put_with_fewer_deltas_than_components_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedMetaStore::open_in_dir(dir.path(), quiet())
        .await
        .unwrap();
    store
        .put("s", Bytes::new(), sequence("s", &[1, 1]))
        .await
        .unwrap();
    let err = store
        .put("s", Bytes::new(), sequence("s", &[1]))
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::InvalidArgument(_)), "{err:?}");
    store.close().await.unwrap();
}

#[tokio::test]
async fn writes_time_out_while_another_process_holds_the_write_lock_and_reads_continue() {
    let dir = tempfile::tempdir().unwrap();
    let options = MetaOptions {
        request_timeout: Duration::from_millis(300),
        ..quiet()
    };
    let store = EmbeddedMetaStore::open_in_dir(dir.path(), options)
        .await
        .unwrap();
    store
        .put("k", Bytes::from_static(b"v1"), PutOptions::default())
        .await
        .unwrap();

    let raw = rusqlite::Connection::open(store.path()).unwrap();
    raw.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = store
        .put("k", Bytes::from_static(b"v2"), PutOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::Timeout), "{err:?}");
    let record = store
        .get("k", Comparison::Equal, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.value, Bytes::from_static(b"v1"));
    raw.execute_batch("ROLLBACK").unwrap();

    // Once the lock is released, writes go through again (the writer may still be finishing
    // the batch it was blocked on, hence the retry loop).
    assert!(
        eventually(|| async {
            store
                .put("k", Bytes::from_static(b"v3"), PutOptions::default())
                .await
                .is_ok()
        })
        .await
    );
    store.close().await.unwrap();
}

/// Group commit: 64 tasks appending at once share transactions and fsyncs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_sequence_putters_are_group_committed() {
    const TASKS: usize = 64;
    const PUTS_PER_TASK: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        EmbeddedMetaStore::open_in_dir(dir.path(), quiet())
            .await
            .unwrap(),
    );
    let groups_before = store.writer_stats().groups_committed();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let stream = format!("stream-{}", task % 8);
            for _ in 0..PUTS_PER_TASK {
                let value = Bytes::from_static(b"object-key-and-byte-range");
                store
                    .put(&stream, value, sequence(&stream, &[10, 1000]))
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed = started.elapsed();
    let ops = (TASKS * PUTS_PER_TASK) as f64;
    let ops_per_s = ops / elapsed.as_secs_f64();
    let groups = store.writer_stats().groups_committed() - groups_before;
    eprintln!(
        "embedded metastore: {ops} sequence puts from {TASKS} tasks in {elapsed:?} = {ops_per_s:.0} ops/s, \
         {groups} transactions"
    );
    // Committing one put per transaction would mean one fsync per put.
    assert!(
        groups * 4 <= TASKS as u64 * PUTS_PER_TASK as u64,
        "{groups} transactions: no group commit"
    );
    assert!(ops_per_s > 500.0, "only {ops_per_s:.0} ops/s");
    let keys = store.list("stream-0-", "stream-0.", None).await.unwrap();
    assert_eq!(keys.len(), TASKS / 8 * PUTS_PER_TASK);
    store.close().await.unwrap();
}

// ---- several OS processes on one store -------------------------------------------------------

const CHILD_ROLE: &str = "META_EMBEDDED_CHILD_ROLE";
const CHILD_PATH: &str = "META_EMBEDDED_CHILD_PATH";
const CHILD_PREFIX: &str = "META_EMBEDDED_CHILD_PREFIX";
const CHILD_PUTS: u64 = 150;

/// Starts this test binary again, running only [`child_process_entry`] in the given role.
fn spawn_child(role: &str, path: &Path, prefix: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "child_process_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ROLE, role)
        .env(CHILD_PATH, path)
        .env(CHILD_PREFIX, prefix)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Kills the child if a test fails before reaping it.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Not a test of its own: the body of the child processes the tests below spawn. Without the
/// role variable (a normal test run) it does nothing.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(CHILD_ROLE) else {
        return;
    };
    let path = PathBuf::from(std::env::var(CHILD_PATH).unwrap());
    let prefix = std::env::var(CHILD_PREFIX).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        match role.as_str() {
            "sequence" => child_sequence_puts(&path, &prefix).await,
            "ephemeral" => child_hold_ephemeral(&path, &prefix).await,
            "put" => child_put_once(&path, &prefix).await,
            other => panic!("unknown child role {other}"),
        }
    });
}

async fn child_sequence_puts(path: &Path, prefix: &str) {
    let store = Arc::new(EmbeddedMetaStore::open(path, quiet()).await.unwrap());
    let mut tasks = Vec::new();
    for task in 0..8u64 {
        let (store, prefix) = (Arc::clone(&store), prefix.to_string());
        tasks.push(tokio::spawn(async move {
            for i in 0..CHILD_PUTS / 8 {
                let records = 1 + (task + i) % 4;
                let value = Bytes::from(records.to_string());
                store
                    .put(&prefix, value, sequence(&prefix, &[records]))
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    store.close().await.unwrap();
}

async fn child_hold_ephemeral(path: &Path, prefix: &str) {
    let options = MetaOptions {
        session_timeout: Duration::from_secs(1),
        ..quiet()
    };
    let store = EmbeddedMetaStore::open(path, options).await.unwrap();
    let ephemeral = PutOptions {
        ephemeral: true,
        ..PutOptions::default()
    };
    store
        .put(prefix, Bytes::from_static(b"alive"), ephemeral)
        .await
        .unwrap();
    // Bounded, in case the parent dies without killing us.
    tokio::time::sleep(Duration::from_secs(60)).await;
}

async fn child_put_once(path: &Path, prefix: &str) {
    let store = EmbeddedMetaStore::open(path, quiet()).await.unwrap();
    store
        .put(
            prefix,
            Bytes::from_static(b"from-child"),
            PutOptions::default(),
        )
        .await
        .unwrap();
    store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_assign_dense_non_overlapping_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.sqlite");
    let prefix = "stream-7";
    let children = [
        spawn_child("sequence", &path, prefix),
        spawn_child("sequence", &path, prefix),
    ];
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "child failed: {:?}", output.status);
    }

    let store = EmbeddedMetaStore::open(&path, quiet()).await.unwrap();
    let records = store
        .range_scan("stream-7-", "stream-7.", None, 10_000)
        .await
        .unwrap();
    assert_eq!(records.len() as u64, 2 * (CHILD_PUTS / 8) * 8);
    let mut end = 0u64;
    for record in &records {
        let delta: u64 = std::str::from_utf8(&record.value).unwrap().parse().unwrap();
        end += delta;
        assert_eq!(record.key, format!("{prefix}-{end:020}"), "gap or overlap");
    }
    store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_process_ephemeral_record_disappears_after_session_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.sqlite");
    let observer = EmbeddedMetaStore::open(&path, quiet()).await.unwrap();
    let mut child = ChildGuard(spawn_child("ephemeral", &path, "brokers/9"));
    let present = || async {
        observer
            .get("brokers/9", Comparison::Equal, None)
            .await
            .unwrap()
            .is_some()
    };
    assert!(eventually(present).await, "child never registered");

    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let killed_at = Instant::now();
    assert!(
        eventually(|| async { !present().await }).await,
        "dead process's record stayed"
    );
    // Session timeout 1 s, renewed every 1/3 s: the record must live on for a while.
    assert!(killed_at.elapsed() >= Duration::from_millis(300));
    observer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_arrive_from_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.sqlite");
    let watcher = EmbeddedMetaStore::open(&path, MetaOptions::default())
        .await
        .unwrap();
    let mut stream = watcher.notifications().await.unwrap();
    let key = format!("{}/from-child", unique_prefix("cross-process"));
    let child = spawn_child("put", &path, &key);
    assert!(child.wait_with_output().unwrap().status.success());

    let notification = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap()
        .unwrap();
    let record = watcher
        .get(&key, Comparison::Equal, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        notification,
        Notification::KeyCreated {
            key,
            version_id: record.version.version_id
        }
    );
    watcher.close().await.unwrap();
}
