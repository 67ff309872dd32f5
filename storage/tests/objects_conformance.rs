//! One suite of object-store properties the engine relies on, run against every backend:
//! memory, a local folder, an S3-compatible server (moto), and the fault/latency wrappers with
//! their faults switched off (they must be transparent).

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: indices, small counts and lengths of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

#[path = "objects_conformance/moto.rs"]
mod moto;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use storage::objects::{open, open_with, FailingObjectStore, OpenOptions, SlowObjectStore};
use storage::wal::format::{encode_object, verify_slice, SliceSpec};

use moto::MotoServer;

/// Runs every property under a fresh root, so backends shared between runs stay independent.
async fn conformance(store: Arc<dyn ObjectStore>) {
    let root = Path::from(format!("conformance-{}", uuid::Uuid::new_v4()));
    let store = store.as_ref();
    put_then_get_returns_the_same_bytes(store, &root).await;
    ranged_get_returns_exactly_one_wal_slice(store, &root).await;
    head_reports_size_of_the_stored_object(store, &root).await;
    get_of_a_missing_key_is_not_found(store, &root).await;
    delete_removes_the_object_and_is_idempotent(store, &root).await;
    list_with_prefix_returns_only_that_prefix(store, &root).await;
    overwrite_replaces_the_whole_object(store, &root).await;
    concurrent_puts_to_distinct_keys_all_land(store, &root).await;
    concurrent_puts_to_one_key_leave_one_whole_value(store, &root).await;
    multi_mebibyte_object_round_trips(store, &root).await;
}

async fn get_bytes(store: &dyn ObjectStore, key: &Path) -> Bytes {
    store.get(key).await.unwrap().bytes().await.unwrap()
}

async fn put_then_get_returns_the_same_bytes(store: &dyn ObjectStore, root: &Path) {
    let key = root.clone().join("put-get");
    let value = Bytes::from_static(b"\x00\x01 a value with binary bytes \xff");
    store.put(&key, value.clone().into()).await.unwrap();
    assert_eq!(get_bytes(store, &key).await, value);
}

async fn ranged_get_returns_exactly_one_wal_slice(store: &dyn ObjectStore, root: &Path) {
    let payloads: Vec<Vec<Bytes>> = (0..3u8)
        .map(|i| vec![Bytes::from(vec![i; 1000 + usize::from(i) * 7])])
        .collect();
    let streams = ["s-0", "s-1", "s-2"];
    let specs: Vec<SliceSpec<'_>> = streams
        .iter()
        .zip(&payloads)
        .map(|(stream, payload)| SliceSpec {
            stream,
            payload,
            batch_count: 1,
            record_count: 1,
            min_timestamp: 0,
            max_timestamp: 0,
        })
        .collect();
    let (object, entries) = encode_object(&specs).unwrap();
    let key = root.clone().join("wal-object");
    store.put(&key, object.into()).await.unwrap();
    for (entry, payload) in entries.iter().zip(&payloads) {
        let range = entry.offset..entry.offset + u64::from(entry.len);
        let slice = store.get_range(&key, range).await.unwrap();
        verify_slice(&slice, entry.len, entry.crc32c).unwrap();
        assert_eq!(slice, payload[0]);
    }
    let ranges: Vec<_> = entries
        .iter()
        .map(|e| e.offset..e.offset + u64::from(e.len))
        .collect();
    let slices = store.get_ranges(&key, &ranges).await.unwrap();
    assert_eq!(
        slices.iter().map(|s| s.len()).collect::<Vec<_>>(),
        vec![1000, 1007, 1014]
    );
}

async fn head_reports_size_of_the_stored_object(store: &dyn ObjectStore, root: &Path) {
    let key = root.clone().join("head");
    store
        .put(&key, Bytes::from(vec![9u8; 4321]).into())
        .await
        .unwrap();
    let meta = store.head(&key).await.unwrap();
    assert_eq!(meta.size, 4321);
    assert_eq!(meta.location, key);
}

async fn get_of_a_missing_key_is_not_found(store: &dyn ObjectStore, root: &Path) {
    let key = root.clone().join("never-written");
    assert!(matches!(
        store.get(&key).await,
        Err(object_store::Error::NotFound { .. })
    ));
    assert!(matches!(
        store.head(&key).await,
        Err(object_store::Error::NotFound { .. })
    ));
    assert!(matches!(
        store.get_range(&key, 0..1).await,
        Err(object_store::Error::NotFound { .. })
    ));
}

async fn delete_removes_the_object_and_is_idempotent(store: &dyn ObjectStore, root: &Path) {
    let key = root.clone().join("delete");
    store
        .put(&key, Bytes::from_static(b"x").into())
        .await
        .unwrap();
    store.delete(&key).await.unwrap();
    assert!(matches!(
        store.get(&key).await,
        Err(object_store::Error::NotFound { .. })
    ));
    // S3 acknowledges deleting a missing key, a local folder reports NotFound: reclamation
    // must accept both as "gone".
    match store.delete(&key).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
        Err(other) => panic!("second delete failed: {other}"),
    }
}

async fn list_with_prefix_returns_only_that_prefix(store: &dyn ObjectStore, root: &Path) {
    let base = root.clone().join("list");
    for key in ["a/1", "a/2", "a/deeper/3", "ab/1", "b/1"] {
        let path = Path::parse(format!("{base}/{key}")).unwrap();
        store
            .put(&path, Bytes::from_static(b"v").into())
            .await
            .unwrap();
    }
    let listed: BTreeSet<String> = store
        .list(Some(&base.clone().join("a")))
        .map_ok(|meta| meta.location.to_string())
        .try_collect()
        .await
        .unwrap();
    let expected: BTreeSet<String> = ["a/1", "a/2", "a/deeper/3"]
        .iter()
        .map(|k| format!("{base}/{k}"))
        .collect();
    assert_eq!(listed, expected);

    let by_level = store.list_with_delimiter(Some(&base)).await.unwrap();
    let prefixes: BTreeSet<String> = by_level
        .common_prefixes
        .iter()
        .map(|p| p.to_string())
        .collect();
    let expected: BTreeSet<String> = ["a", "ab", "b"]
        .iter()
        .map(|k| format!("{base}/{k}"))
        .collect();
    assert_eq!(prefixes, expected);
    assert!(by_level.objects.is_empty());
}

async fn overwrite_replaces_the_whole_object(store: &dyn ObjectStore, root: &Path) {
    let key = root.clone().join("overwrite");
    store
        .put(&key, Bytes::from(vec![1u8; 5000]).into())
        .await
        .unwrap();
    store
        .put(&key, Bytes::from_static(b"short").into())
        .await
        .unwrap();
    assert_eq!(get_bytes(store, &key).await, "short");
    assert_eq!(store.head(&key).await.unwrap().size, 5);
}

async fn concurrent_puts_to_distinct_keys_all_land(store: &dyn ObjectStore, root: &Path) {
    let base = root.clone().join("concurrent");
    let value = |i: usize| Bytes::from(vec![i as u8; 64 * 1024 + i]);
    let puts = (0..24).map(|i| {
        let key = base.clone().join(format!("{i:03}"));
        async move { store.put(&key, value(i).into()).await }
    });
    for result in futures::future::join_all(puts).await {
        result.unwrap();
    }
    let listed: Vec<_> = store.list(Some(&base)).try_collect().await.unwrap();
    assert_eq!(listed.len(), 24);
    for i in 0..24 {
        assert_eq!(
            get_bytes(store, &base.clone().join(format!("{i:03}"))).await,
            value(i)
        );
    }
}

async fn concurrent_puts_to_one_key_leave_one_whole_value(store: &dyn ObjectStore, root: &Path) {
    let key = root.clone().join("contended");
    let values: Vec<Bytes> = (0..8u8).map(|i| Bytes::from(vec![i; 32 * 1024])).collect();
    let puts = values.iter().map(|v| store.put(&key, v.clone().into()));
    for result in futures::future::join_all(puts).await {
        result.unwrap();
    }
    let stored = get_bytes(store, &key).await;
    assert!(
        values.contains(&stored),
        "a reader saw a mix of concurrent puts"
    );
}

async fn multi_mebibyte_object_round_trips(store: &dyn ObjectStore, root: &Path) {
    let key = root.clone().join("large");
    let value: Bytes = (0..6 * 1024 * 1024)
        .map(|i: u32| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    store.put(&key, value.clone().into()).await.unwrap();
    assert_eq!(get_bytes(store, &key).await, value);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_conforms() {
    conformance(open("memory://").unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_folder_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance(open(&format!("file://{}/objects", dir.path().display())).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_folder_store_writes_under_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&format!("file://{}/objects", dir.path().display())).unwrap();
    store
        .put(
            &Path::from("wal/0001"),
            Bytes::from_static(b"durable").into(),
        )
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("objects/wal/0001")).unwrap(),
        b"durable"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrappers_with_faults_off_conform() {
    let failing = FailingObjectStore::new(open("memory://").unwrap());
    conformance(Arc::new(failing)).await;
    let slow = SlowObjectStore::new(open("memory://").unwrap(), Duration::from_millis(1));
    conformance(Arc::new(slow)).await;
}

fn s3_options(server: &MotoServer) -> OpenOptions {
    let config = [
        ("aws_endpoint", server.endpoint.as_str()),
        ("aws_access_key_id", "test"),
        ("aws_secret_access_key", "test"),
        ("aws_region", "us-east-1"),
    ];
    OpenOptions {
        s3_config: config
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        max_retries: 1,
        retry_timeout_ms: 5_000,
        ..OpenOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_store_conforms() {
    let Some(server) = MotoServer::start() else {
        return;
    };
    server.create_bucket("conformance");
    let options = s3_options(&server);
    conformance(open_with("s3://conformance", &options).unwrap()).await;

    // The URL's prefix scopes every key: the same object is visible under it from the bucket root.
    let scoped = open_with("s3://conformance/tenant/objects/", &options).unwrap();
    conformance(scoped.clone()).await;
    scoped
        .put(
            &Path::from("wal/0001"),
            Bytes::from_static(b"scoped").into(),
        )
        .await
        .unwrap();
    let bucket = open_with("s3://conformance", &options).unwrap();
    assert_eq!(
        get_bytes(bucket.as_ref(), &Path::from("tenant/objects/wal/0001")).await,
        "scoped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_store_reports_missing_bucket_as_an_error() {
    let Some(server) = MotoServer::start() else {
        return;
    };
    let store = open_with("s3://no-such-bucket", &s3_options(&server)).unwrap();
    let result = store
        .put(&Path::from("k"), Bytes::from_static(b"v").into())
        .await;
    assert!(result.is_err());
}
