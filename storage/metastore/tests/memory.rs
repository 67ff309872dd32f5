//! The memory MetaStore: the shared conformance suite, plus what only it has to prove (handles
//! sharing one store, sessions ended by hand, the injected clock, determinism, its limits).
//!
//! Every test of the suite applies. What the embedded tests check beyond the suite (durability
//! across reopen, several OS processes, lock timeouts, group commit) has no memory equivalent.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use metastore::conformance::MetaHarness;
use metastore::memory::{MemoryStoreConfig, NOTIFICATION_BUFFER_MAX};
use metastore::{
    open_meta_store, Comparison, Expect, MemoryMetaStore, MemoryStore, MetaError, MetaOptions,
    MetaStore, Notification, PutOptions,
};

/// A name maps to one store, created on first use.
#[derive(Default)]
struct MemoryHarness {
    stores: Mutex<HashMap<String, MemoryStore>>,
}

#[async_trait::async_trait]
impl MetaHarness for MemoryHarness {
    async fn open(&self, name: &str, options: MetaOptions) -> Arc<dyn MetaStore> {
        let store = self
            .stores
            .lock()
            .unwrap()
            .entry(name.to_string())
            .or_default()
            .clone();
        Arc::new(store.handle(options))
    }
}

metastore::meta_conformance_tests!(MemoryHarness::default());

fn quiet() -> MetaOptions {
    MetaOptions {
        notifications: false,
        ..MetaOptions::default()
    }
}

fn watching() -> MetaOptions {
    MetaOptions {
        notifications: true,
        ..MetaOptions::default()
    }
}

fn ephemeral() -> PutOptions {
    PutOptions {
        ephemeral: true,
        ..PutOptions::default()
    }
}

fn sequence(partition: &str, deltas: &[u64]) -> PutOptions {
    PutOptions {
        sequence_key_deltas: Some(deltas.to_vec()),
        ..PutOptions::partition(partition)
    }
}

fn val(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// A clock that moves only when told to.
fn manual_clock(start_ms: u64) -> (Arc<AtomicU64>, MemoryStore) {
    let now_ms = Arc::new(AtomicU64::new(start_ms));
    let read = Arc::clone(&now_ms);
    let store = MemoryStore::with_clock(Arc::new(move || read.load(Ordering::SeqCst)));
    (now_ms, store)
}

/// Everything already queued on the stream, without waiting for more. Unconstrained: tokio's
/// cooperative budget would otherwise make a long drain see `Pending` after ~128 items.
fn drain(stream: &mut BoxStream<'static, Notification>) -> Vec<Notification> {
    let mut out = Vec::new();
    while let Some(Some(n)) = tokio::task::unconstrained(stream.next()).now_or_never() {
        out.push(n);
    }
    out
}

async fn exists(store: &dyn MetaStore, key: &str) -> bool {
    store
        .get(key, Comparison::Equal, None)
        .await
        .unwrap()
        .is_some()
}

#[tokio::test]
async fn handles_of_one_store_share_records_and_notifications() {
    let store = MemoryStore::new();
    let writer = store.handle(quiet());
    let watcher = store.handle(watching());
    let mut changes = watcher.notifications().await.unwrap();
    let put = writer
        .put("topics/a", val("x"), PutOptions::default())
        .await
        .unwrap();
    let seen = watcher
        .get("topics/a", Comparison::Equal, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.version, put.version);
    // Delivered before the put returned, not eventually.
    assert_eq!(
        drain(&mut changes),
        vec![Notification::KeyCreated {
            key: "topics/a".into(),
            version_id: put.version.version_id
        }]
    );
    assert_ne!(writer.session_id(), watcher.session_id());

    let other = MemoryStore::new().handle(quiet());
    assert!(!exists(&other, "topics/a").await, "stores share nothing");
}

#[tokio::test]
async fn closing_a_handle_deletes_its_ephemeral_records_and_notifies_each() {
    let store = MemoryStore::new();
    let owner = store.handle(quiet());
    let watcher = store.handle(watching());
    owner
        .put("brokers/2", val("up"), ephemeral())
        .await
        .unwrap();
    owner
        .put("brokers/1", val("up"), ephemeral())
        .await
        .unwrap();
    owner
        .put("topics/a", val("x"), PutOptions::default())
        .await
        .unwrap();
    let mut changes = watcher.notifications().await.unwrap();
    owner.close().await.unwrap();

    assert!(!exists(&watcher, "brokers/1").await);
    assert!(!exists(&watcher, "brokers/2").await);
    assert!(
        exists(&watcher, "topics/a").await,
        "persistent records stay"
    );
    assert_eq!(
        drain(&mut changes),
        vec![
            Notification::KeyDeleted {
                key: "brokers/1".into()
            },
            Notification::KeyDeleted {
                key: "brokers/2".into()
            },
        ],
        "one deletion per record, in key order"
    );
    assert_eq!(store.live_sessions(), vec![watcher.session_id()]);
}

#[tokio::test]
async fn an_expired_session_loses_its_ephemeral_records_and_refuses_new_ones() {
    let store = MemoryStore::new();
    let owner = store.handle(quiet());
    let observer = store.handle(quiet());
    owner
        .put("brokers/1", val("up"), ephemeral())
        .await
        .unwrap();

    assert!(owner.expire_session());
    assert!(!exists(&observer, "brokers/1").await);
    let err = owner
        .put("brokers/1", val("up"), ephemeral())
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::SessionExpired), "{err:?}");
    // The handle itself stays open for everything else.
    owner
        .put("topics/a", val("x"), PutOptions::default())
        .await
        .unwrap();
    assert!(exists(&owner, "topics/a").await);
    assert!(!owner.expire_session(), "already expired");
    assert!(!store.expire_session(owner.session_id()));
    owner.close().await.unwrap();
}

#[tokio::test]
async fn the_store_can_expire_a_session_by_id() {
    let store = MemoryStore::new();
    let owner = store.handle(quiet());
    owner
        .put("brokers/1", val("up"), ephemeral())
        .await
        .unwrap();
    assert!(store.expire_session(owner.session_id()));
    assert_eq!(store.records_count(), 0);
    assert!(!store.expire_session(9_999), "unknown session");
}

#[tokio::test]
async fn dropping_a_handle_ends_its_session_at_once() {
    let store = MemoryStore::new();
    let owner = store.handle(quiet());
    let observer = store.handle(quiet());
    owner
        .put("brokers/1", val("up"), ephemeral())
        .await
        .unwrap();
    let session_id = owner.session_id();
    drop(owner);
    assert!(!exists(&observer, "brokers/1").await);
    assert!(!store.live_sessions().contains(&session_id));
}

#[tokio::test]
async fn a_persistent_put_over_an_ephemeral_record_outlives_the_session() {
    let store = MemoryStore::new();
    let owner = store.handle(quiet());
    let other = store.handle(quiet());
    owner.put("k/persist", val("1"), ephemeral()).await.unwrap();
    owner.put("k/taken", val("1"), ephemeral()).await.unwrap();
    let persisted = other
        .put("k/persist", val("2"), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(persisted.version.session_id, None);
    let taken = other.put("k/taken", val("2"), ephemeral()).await.unwrap();
    assert_eq!(taken.version.session_id, Some(other.session_id()));

    owner.close().await.unwrap();
    assert!(exists(&other, "k/persist").await);
    assert!(exists(&other, "k/taken").await, "now the other session's");
    other.close().await.unwrap();
    let reader = store.handle(quiet());
    assert!(exists(&reader, "k/persist").await);
    assert!(!exists(&reader, "k/taken").await);
}

#[tokio::test]
async fn the_injected_clock_stamps_versions() {
    let (now_ms, store) = manual_clock(1_000);
    let handle = store.handle(quiet());
    let first = handle
        .put("k", val("1"), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (first.version.created_ms, first.version.modified_ms),
        (1_000, 1_000)
    );
    now_ms.store(5_000, Ordering::SeqCst);
    let second = handle
        .put("k", val("2"), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (second.version.created_ms, second.version.modified_ms),
        (1_000, 5_000)
    );
    let stored = handle
        .get("k", Comparison::Equal, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.version, second.version);
}

/// Runs a fixed script on a fresh store; returns everything observable.
async fn script() -> (Vec<String>, Vec<i64>, Vec<Notification>, Vec<i64>) {
    let (_, store) = manual_clock(42);
    let a = store.handle(watching());
    let b = store.handle(quiet());
    let mut changes = a.notifications().await.unwrap();
    let mut keys = Vec::new();
    let mut versions = Vec::new();
    for i in 0..5u64 {
        let handle = if i % 2 == 0 { &a } else { &b };
        let put = handle
            .put("s", val("v"), sequence("s", &[i + 1, 100]))
            .await
            .unwrap();
        keys.push(put.key);
        versions.push(put.version.version_id);
    }
    let eph = b.put("m/b", val("up"), ephemeral()).await.unwrap();
    versions.push(eph.version.version_id);
    b.delete(&keys[4], Expect::Any, Some("s")).await.unwrap();
    b.expire_session();
    a.delete_range("s-", "s.", Some("s")).await.unwrap();
    let sessions = vec![a.session_id(), b.session_id()];
    (keys, versions, drain(&mut changes), sessions)
}

#[tokio::test]
async fn the_same_operations_give_the_same_keys_versions_and_notifications() {
    let first = script().await;
    let second = script().await;
    assert_eq!(first, second);
    let (keys, versions, notifications, sessions) = first;
    assert_eq!(keys[4], format!("s-{:020}-{:020}", 15, 500));
    assert_eq!(
        versions,
        vec![1, 2, 3, 4, 5, 6],
        "ids count from 1 per store"
    );
    assert_eq!(sessions, vec![1, 2]);
    assert_eq!(notifications.len(), 5 + 1 + 1 + 1 + 1);
}

#[test]
fn operations_complete_without_a_runtime_or_timers() {
    futures::executor::block_on(async {
        let store = MemoryStore::new();
        let handle = store.handle(watching());
        let mut changes = handle.notifications().await.unwrap();
        handle
            .put("k", val("v"), PutOptions::default())
            .await
            .unwrap();
        assert!(exists(&handle, "k").await);
        assert!(matches!(
            changes.next().await,
            Some(Notification::KeyCreated { .. })
        ));
        handle.close().await.unwrap();
    });
}

#[tokio::test]
async fn a_lagging_subscriber_loses_the_oldest_notifications_and_continues() {
    let store = MemoryStore::new();
    let handle = store.handle(watching());
    let mut changes = handle.notifications().await.unwrap();
    let overflow = 10;
    let total = NOTIFICATION_BUFFER_MAX + overflow;
    for i in 0..total {
        handle
            .put(&format!("k/{i:06}"), val("v"), PutOptions::default())
            .await
            .unwrap();
    }
    let received = drain(&mut changes);
    assert_eq!(received.len(), NOTIFICATION_BUFFER_MAX);
    assert_eq!(received[0].key(), format!("k/{overflow:06}"));
    assert_eq!(
        received[NOTIFICATION_BUFFER_MAX - 1].key(),
        format!("k/{:06}", total - 1)
    );
    handle
        .put("k/after", val("v"), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(drain(&mut changes).len(), 1, "the stream goes on");
}

#[tokio::test]
async fn the_notification_stream_ends_when_the_store_is_gone() {
    let store = MemoryStore::new();
    let handle = store.handle(watching());
    let mut changes = handle.notifications().await.unwrap();
    drop(handle);
    assert!(changes.next().now_or_never().is_none(), "store still alive");
    drop(store);
    assert_eq!(changes.next().await, None);
}

#[tokio::test]
async fn puts_past_data_bytes_max_fail_and_change_nothing() {
    let store = MemoryStore::with_config(MemoryStoreConfig {
        data_bytes_max: 10,
        ..MemoryStoreConfig::default()
    });
    let handle = store.handle(quiet());
    handle
        .put("ab", val("12345678"), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(store.data_bytes(), 10);
    let err = handle
        .put("c", val("1"), PutOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, MetaError::Unavailable(_)) && err.is_retriable(),
        "{err:?}"
    );
    assert!(!exists(&handle, "c").await);
    // Replacing a value counts only the difference; deleting frees the space.
    handle
        .put("ab", val("1234"), PutOptions::default())
        .await
        .unwrap();
    handle
        .put("c", val("1"), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(store.data_bytes(), 8);
    handle.delete("ab", Expect::Any, None).await.unwrap();
    assert_eq!(store.data_bytes(), 2);
}

#[tokio::test]
async fn keys_containing_nul_are_rejected() {
    let handle = MemoryMetaStore::open(quiet());
    let err = handle
        .put("a\0b", Bytes::new(), PutOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::InvalidArgument(_)), "{err:?}");
    let err = handle.list("a", "b\0", None).await.unwrap_err();
    assert!(matches!(err, MetaError::InvalidArgument(_)), "{err:?}");
}

#[tokio::test]
async fn sequence_put_with_fewer_deltas_than_components_is_rejected() {
    let handle = MemoryMetaStore::open(quiet());
    handle
        .put("s", Bytes::new(), sequence("s", &[1, 1]))
        .await
        .unwrap();
    let err = handle
        .put("s", Bytes::new(), sequence("s", &[1]))
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::InvalidArgument(_)), "{err:?}");
}

#[tokio::test]
async fn reversed_ranges_are_empty() {
    let handle = MemoryMetaStore::open(quiet());
    for key in ["a", "b", "c"] {
        handle
            .put(key, val(key), PutOptions::default())
            .await
            .unwrap();
    }
    assert!(handle.list("c", "a", None).await.unwrap().is_empty());
    assert!(handle
        .range_scan("c", "a", None, 10)
        .await
        .unwrap()
        .is_empty());
    handle.delete_range("c", "a", None).await.unwrap();
    assert_eq!(handle.list("a", "d", None).await.unwrap(), ["a", "b", "c"]);
}

#[tokio::test]
async fn metastore_memory_opens_a_process_wide_store_per_name() {
    let dir = std::path::Path::new("/nonexistent");
    let name = format!("memory://test-{}", uuid::Uuid::new_v4().simple());
    let index = open_meta_store(&name, dir, quiet()).await.unwrap();
    let coordination = open_meta_store(&name, dir, watching()).await.unwrap();
    index
        .put("topics/a", val("x"), PutOptions::default())
        .await
        .unwrap();
    assert!(exists(coordination.as_ref(), "topics/a").await);
    let elsewhere = open_meta_store("memory://another-name", dir, quiet())
        .await
        .unwrap();
    assert!(!exists(elsewhere.as_ref(), "topics/a").await);
    let err = open_meta_store("memoryx", dir, quiet())
        .await
        .err()
        .unwrap();
    assert!(matches!(err, MetaError::InvalidArgument(_)), "{err:?}");
}
