//! The conformance suite every `MetaStore` backend runs.
//!
//! A backend's test file (with this crate's `conformance` feature) does:
//! ```ignore
//! metastore::meta_conformance_tests!(MyHarness::new());
//! ```
//! which expands to one `#[tokio::test]` per property below. The harness expression is
//! evaluated once per test. Tests are backend-neutral: every test works under its own random key
//! prefix (so a shared server works) and never assumes the store is otherwise empty.

// Test support: a failed step must fail the test that runs it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{
    Comparison, Expect, MetaError, MetaOptions, MetaStore, Notification, PutOptions, Record,
};
use bytes::Bytes;
use futures::StreamExt;

/// Opens handles for the suite. Within one test, the same `name` must give handles on the same
/// store (a backend talking to one shared server may ignore `name`).
#[async_trait::async_trait]
pub trait MetaHarness: Send + Sync + 'static {
    async fn open(&self, name: &str, options: MetaOptions) -> Arc<dyn MetaStore>;
}

#[macro_export]
macro_rules! meta_conformance_tests {
    ($harness:expr) => {
        $crate::meta_conformance_tests!(@each $harness;
            put_then_get_returns_value_and_version,
            keys_sort_by_depth_then_bytes_with_the_separator_highest,
            overwriting_a_key_increments_modifications_and_version_id,
            version_ids_increase_across_handles,
            get_of_a_missing_key_returns_none,
            conditional_put_succeeds_only_on_the_current_version,
            put_expecting_a_version_of_a_missing_key_fails_with_unexpected_version,
            put_expecting_not_exists_fails_when_the_key_exists,
            delete_of_a_missing_key_fails_with_key_not_found,
            conditional_delete_checks_the_version,
            get_comparisons_find_floor_ceiling_lower_and_higher,
            comparisons_and_listing_use_slash_aware_order,
            list_and_range_scan_return_keys_in_order_within_bounds,
            range_scan_honours_the_limit,
            delete_range_removes_only_keys_in_range,
            sequence_put_builds_keys_from_deltas,
            sequence_put_starts_new_components_at_zero,
            sequence_put_rejects_invalid_requests,
            concurrent_sequence_puts_produce_dense_non_overlapping_ranges,
            sequence_continues_from_the_highest_remaining_key_after_deletes,
            ephemeral_record_vanishes_when_its_handle_closes,
            ephemeral_record_vanishes_when_its_session_expires,
            persistent_record_survives_its_writers_close,
            operations_after_close_fail_with_closed,
            notifications_report_changes_made_through_another_handle,
            notifications_need_a_handle_opened_with_them,
        );
    };
    (@each $harness:expr; $($test:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                let harness = $harness;
                $crate::conformance::$test(&harness).await;
            }
        )*
    };
}

/// How long asynchronous effects (notifications, session expiry) may take to show.
const EVENTUALLY: Duration = Duration::from_secs(10);
/// Short enough to keep the expiry test quick, long enough for Oxia's minimum.
const SHORT_SESSION: Duration = Duration::from_secs(2);

/// A key prefix no other test (or earlier run against a shared server) uses. No `/` in it, so
/// `{prefix}/x` keys are one level deep.
pub fn unique_prefix(test: &str) -> String {
    format!("conf-{test}-{}", uuid::Uuid::new_v4().simple())
}

pub fn options() -> MetaOptions {
    MetaOptions {
        notifications: false,
        ..MetaOptions::default()
    }
}

pub fn watching_options() -> MetaOptions {
    MetaOptions {
        notifications: true,
        ..MetaOptions::default()
    }
}

fn val(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn part(prefix: &str) -> PutOptions {
    PutOptions::partition(prefix)
}

fn sequence(prefix: &str, deltas: &[u64]) -> PutOptions {
    PutOptions {
        sequence_key_deltas: Some(deltas.to_vec()),
        ..PutOptions::partition(prefix)
    }
}

/// Polls `check` until it returns true or `EVENTUALLY` passes.
pub async fn eventually<F, Fut>(mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + EVENTUALLY;
    while Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

async fn get_key(
    store: &dyn MetaStore,
    key: &str,
    cmp: Comparison,
    prefix: &str,
) -> Option<String> {
    store
        .get(key, cmp, Some(prefix))
        .await
        .unwrap()
        .map(|r: Record| r.key)
}

/// The key found, or `None` when nothing was found or the match lies outside this test's keys
/// (a shared store holds other tests' keys below and above ours).
async fn get_own_key(
    store: &dyn MetaStore,
    key: &str,
    cmp: Comparison,
    prefix: &str,
) -> Option<String> {
    get_key(store, key, cmp, prefix)
        .await
        .filter(|k| k.starts_with(&format!("{prefix}/")))
}

/// Parses the numbers a sequence put appended to `prefix`.
fn sequence_numbers(key: &str, prefix: &str) -> Vec<u64> {
    let suffix = key.strip_prefix(prefix).unwrap();
    suffix
        .split('-')
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect()
}

pub async fn put_then_get_returns_value_and_version<H: MetaHarness>(h: &H) {
    let p = unique_prefix("put-get");
    let store = h.open("main", options()).await;
    let key = format!("{p}/k");
    let put = store
        .put(&key, val("v1"), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(put.key, key);
    assert_eq!(put.version.modifications_count, 0);
    assert_eq!(put.version.created_ms, put.version.modified_ms);
    assert_eq!(put.version.session_id, None);

    let record = store
        .get(&key, Comparison::Equal, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.key, key);
    assert_eq!(record.value, val("v1"));
    assert_eq!(record.version, put.version);
    store.close().await.unwrap();
}

pub async fn overwriting_a_key_increments_modifications_and_version_id<H: MetaHarness>(h: &H) {
    let p = unique_prefix("overwrite");
    let store = h.open("main", options()).await;
    let key = format!("{p}/k");
    let first = store
        .put(&key, val("v1"), PutOptions::default())
        .await
        .unwrap();
    let second = store
        .put(&key, val("v2"), PutOptions::default())
        .await
        .unwrap();
    assert!(second.version.version_id > first.version.version_id);
    assert_eq!(second.version.modifications_count, 1);
    assert_eq!(second.version.created_ms, first.version.created_ms);
    assert!(second.version.modified_ms >= first.version.modified_ms);
    let record = store
        .get(&key, Comparison::Equal, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.value, val("v2"));
    assert_eq!(record.version, second.version);
    store.close().await.unwrap();
}

/// Version ids grow with every write to a shard, whichever handle writes (Oxia's ids are per
/// shard, so the keys share a partition key).
pub async fn version_ids_increase_across_handles<H: MetaHarness>(h: &H) {
    let p = unique_prefix("versions");
    let a = h.open("main", options()).await;
    let b = h.open("main", options()).await;
    let mut last = i64::MIN;
    let mut seen = HashSet::new();
    for i in 0..10 {
        let store = if i % 2 == 0 { &a } else { &b };
        let put = store
            .put(&format!("{p}/k{}", i % 3), val("v"), part(&p))
            .await
            .unwrap();
        assert!(put.version.version_id > last, "version ids must grow");
        assert!(seen.insert(put.version.version_id));
        last = put.version.version_id;
    }
    a.close().await.unwrap();
    b.close().await.unwrap();
}

pub async fn get_of_a_missing_key_returns_none<H: MetaHarness>(h: &H) {
    let p = unique_prefix("missing");
    let store = h.open("main", options()).await;
    assert_eq!(
        store
            .get(&format!("{p}/nothing"), Comparison::Equal, None)
            .await
            .unwrap(),
        None
    );
    store.close().await.unwrap();
}

pub async fn conditional_put_succeeds_only_on_the_current_version<H: MetaHarness>(h: &H) {
    let p = unique_prefix("cond-put");
    let store = h.open("main", options()).await;
    let key = format!("{p}/k");
    let v1 = store
        .put(&key, val("v1"), PutOptions::default())
        .await
        .unwrap()
        .version
        .version_id;
    let expect_v1 = PutOptions {
        expect: Expect::Version(v1),
        ..PutOptions::default()
    };
    let v2 = store.put(&key, val("v2"), expect_v1.clone()).await.unwrap();
    assert_eq!(v2.version.modifications_count, 1);

    let stale = store.put(&key, val("v3"), expect_v1).await.unwrap_err();
    assert!(matches!(stale, MetaError::UnexpectedVersion), "{stale:?}");
    let record = store
        .get(&key, Comparison::Equal, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.value, val("v2"));
    store.close().await.unwrap();
}

/// Oxia answers UNEXPECTED_VERSION_ID here, not KEY_NOT_FOUND.
pub async fn put_expecting_a_version_of_a_missing_key_fails_with_unexpected_version<
    H: MetaHarness,
>(
    h: &H,
) {
    let p = unique_prefix("cond-missing");
    let store = h.open("main", options()).await;
    let key = format!("{p}/k");
    let options = PutOptions {
        expect: Expect::Version(1),
        ..PutOptions::default()
    };
    let err = store.put(&key, val("v"), options).await.unwrap_err();
    assert!(matches!(err, MetaError::UnexpectedVersion), "{err:?}");
    assert_eq!(
        store.get(&key, Comparison::Equal, None).await.unwrap(),
        None
    );
    store.close().await.unwrap();
}

pub async fn put_expecting_not_exists_fails_when_the_key_exists<H: MetaHarness>(h: &H) {
    let p = unique_prefix("not-exists");
    let store = h.open("main", options()).await;
    let key = format!("{p}/k");
    let not_exists = PutOptions {
        expect: Expect::NotExists,
        ..PutOptions::default()
    };
    store
        .put(&key, val("first"), not_exists.clone())
        .await
        .unwrap();
    let err = store
        .put(&key, val("second"), not_exists)
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::UnexpectedVersion), "{err:?}");
    let record = store
        .get(&key, Comparison::Equal, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.value, val("first"));
    store.close().await.unwrap();
}

pub async fn delete_of_a_missing_key_fails_with_key_not_found<H: MetaHarness>(h: &H) {
    let p = unique_prefix("delete-missing");
    let store = h.open("main", options()).await;
    let err = store
        .delete(&format!("{p}/k"), Expect::Any, None)
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::KeyNotFound), "{err:?}");
    store.close().await.unwrap();
}

pub async fn conditional_delete_checks_the_version<H: MetaHarness>(h: &H) {
    let p = unique_prefix("cond-delete");
    let store = h.open("main", options()).await;
    let key = format!("{p}/k");
    let v1 = store
        .put(&key, val("v1"), PutOptions::default())
        .await
        .unwrap()
        .version
        .version_id;
    let v2 = store
        .put(&key, val("v2"), PutOptions::default())
        .await
        .unwrap()
        .version
        .version_id;

    let err = store
        .delete(&key, Expect::Version(v1), None)
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::UnexpectedVersion), "{err:?}");
    assert!(store
        .get(&key, Comparison::Equal, None)
        .await
        .unwrap()
        .is_some());

    store.delete(&key, Expect::Version(v2), None).await.unwrap();
    assert_eq!(
        store.get(&key, Comparison::Equal, None).await.unwrap(),
        None
    );
    store.close().await.unwrap();
}

pub async fn get_comparisons_find_floor_ceiling_lower_and_higher<H: MetaHarness>(h: &H) {
    let p = unique_prefix("compare");
    let store = h.open("main", options()).await;
    for k in ["b", "d", "f"] {
        store
            .put(&format!("{p}/{k}"), val(k), part(&p))
            .await
            .unwrap();
    }
    let k = |s: &str| format!("{p}/{s}");
    let s = store.as_ref();
    assert_eq!(
        get_key(s, &k("d"), Comparison::Equal, &p).await,
        Some(k("d"))
    );
    assert_eq!(get_key(s, &k("c"), Comparison::Equal, &p).await, None);
    assert_eq!(
        get_key(s, &k("c"), Comparison::Floor, &p).await,
        Some(k("b"))
    );
    assert_eq!(
        get_key(s, &k("d"), Comparison::Floor, &p).await,
        Some(k("d"))
    );
    assert_eq!(
        get_key(s, &k("c"), Comparison::Ceiling, &p).await,
        Some(k("d"))
    );
    assert_eq!(
        get_key(s, &k("d"), Comparison::Ceiling, &p).await,
        Some(k("d"))
    );
    assert_eq!(
        get_key(s, &k("d"), Comparison::Lower, &p).await,
        Some(k("b"))
    );
    assert_eq!(
        get_key(s, &k("d"), Comparison::Higher, &p).await,
        Some(k("f"))
    );
    assert_eq!(get_own_key(s, &k("a"), Comparison::Floor, &p).await, None);
    assert_eq!(get_own_key(s, &k("b"), Comparison::Lower, &p).await, None);
    assert_eq!(get_own_key(s, &k("g"), Comparison::Ceiling, &p).await, None);
    assert_eq!(get_own_key(s, &k("f"), Comparison::Higher, &p).await, None);

    // The value and version come with the matched record.
    let record = store
        .get(&k("e"), Comparison::Floor, Some(&p))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((record.key, record.value), (k("d"), val("d")));
    store.close().await.unwrap();
}

/// In Oxia's order a key with fewer `/` segments sorts before a deeper one under the same
/// parent, whatever the characters: `p/x` < `p/y` < `p/a/b`.
pub async fn comparisons_and_listing_use_slash_aware_order<H: MetaHarness>(h: &H) {
    let p = unique_prefix("slash");
    let store = h.open("main", options()).await;
    let k = |s: &str| format!("{p}/{s}");
    for key in ["a/b", "x", "a/c", "y"] {
        store.put(&k(key), val(key), part(&p)).await.unwrap();
    }
    let s = store.as_ref();
    assert_eq!(
        get_key(s, &k("z"), Comparison::Ceiling, &p).await,
        Some(k("a/b"))
    );
    assert_eq!(
        get_key(s, &k("a/b"), Comparison::Lower, &p).await,
        Some(k("y"))
    );
    assert_eq!(
        get_key(s, &k("y"), Comparison::Higher, &p).await,
        Some(k("a/b"))
    );
    assert_eq!(
        get_key(s, &k("a/a"), Comparison::Floor, &p).await,
        Some(k("y"))
    );

    // `{p}/~` bounds the one-level keys; `{p}/~/~` also takes in the two-level ones.
    let one_level = store.list(&k(""), &k("~"), Some(&p)).await.unwrap();
    assert_eq!(one_level, vec![k("x"), k("y")]);
    let two_levels = store.list(&k(""), &k("~/~"), Some(&p)).await.unwrap();
    assert_eq!(two_levels, vec![k("x"), k("y"), k("a/b"), k("a/c")]);
    store.close().await.unwrap();
}

/// The Oxia server's order: by number of '/' first, then bytes with '/' above every byte. A
/// range over the children of `p` is `[p/, p//)`; deeper keys need bounds of their own depth.
pub async fn keys_sort_by_depth_then_bytes_with_the_separator_highest<H: MetaHarness>(h: &H) {
    let p = unique_prefix("order");
    let store = h.open("main", options()).await;
    for k in ["x", "a.b/c", "a/bc", "a/b/c"] {
        store
            .put(&format!("{p}/{k}"), val(k), part(&p))
            .await
            .unwrap();
    }
    let children = store
        .list(&format!("{p}/"), &format!("{p}//"), Some(&p))
        .await
        .unwrap();
    assert_eq!(
        children,
        vec![format!("{p}/x")],
        "only the depth-1 children"
    );
    let depth_two = store
        .list(&format!("{p}/\u{1}/"), &format!("{p}//~"), Some(&p))
        .await
        .unwrap();
    assert_eq!(
        depth_two,
        vec![format!("{p}/a.b/c"), format!("{p}/a/bc")],
        "'.' sorts below '/'"
    );
    let deepest = store
        .get(&format!("{p}/a/bc"), Comparison::Higher, Some(&p))
        .await
        .unwrap()
        .map(|r| r.key);
    assert_eq!(
        deepest,
        Some(format!("{p}/a/b/c")),
        "deeper keys sort after"
    );
    store.close().await.unwrap();
}

pub async fn list_and_range_scan_return_keys_in_order_within_bounds<H: MetaHarness>(h: &H) {
    let p = unique_prefix("list");
    let store = h.open("main", options()).await;
    let k = |i: u32| format!("{p}/k{i:02}");
    for i in [7, 2, 9, 0, 5, 3, 8, 1, 6, 4] {
        store
            .put(&k(i), val(&i.to_string()), part(&p))
            .await
            .unwrap();
    }
    let keys = store.list(&k(2), &k(7), Some(&p)).await.unwrap();
    assert_eq!(keys, (2..7).map(k).collect::<Vec<_>>());

    let records = store.range_scan(&k(2), &k(7), Some(&p), 100).await.unwrap();
    let got: Vec<(String, Bytes)> = records.into_iter().map(|r| (r.key, r.value)).collect();
    let want: Vec<(String, Bytes)> = (2..7).map(|i| (k(i), val(&i.to_string()))).collect();
    assert_eq!(got, want);

    assert!(store.list(&k(7), &k(7), Some(&p)).await.unwrap().is_empty());
    store.close().await.unwrap();
}

pub async fn range_scan_honours_the_limit<H: MetaHarness>(h: &H) {
    let p = unique_prefix("limit");
    let store = h.open("main", options()).await;
    for i in 0..10 {
        store
            .put(&format!("{p}/k{i}"), val("v"), part(&p))
            .await
            .unwrap();
    }
    let records = store
        .range_scan(&format!("{p}/"), &format!("{p}/~"), Some(&p), 3)
        .await
        .unwrap();
    let keys: Vec<String> = records.into_iter().map(|r| r.key).collect();
    assert_eq!(
        keys,
        vec![format!("{p}/k0"), format!("{p}/k1"), format!("{p}/k2")]
    );
    store.close().await.unwrap();
}

pub async fn delete_range_removes_only_keys_in_range<H: MetaHarness>(h: &H) {
    let p = unique_prefix("delete-range");
    let store = h.open("main", options()).await;
    let k = |i: u32| format!("{p}/k{i}");
    for i in 0..6 {
        store.put(&k(i), val("v"), part(&p)).await.unwrap();
    }
    store.delete_range(&k(1), &k(4), Some(&p)).await.unwrap();
    let left = store
        .list(&format!("{p}/"), &format!("{p}/~"), Some(&p))
        .await
        .unwrap();
    assert_eq!(left, vec![k(0), k(4), k(5)]);
    store.close().await.unwrap();
}

pub async fn sequence_put_builds_keys_from_deltas<H: MetaHarness>(h: &H) {
    let p = unique_prefix("sequence");
    let store = h.open("main", options()).await;
    let prefix = format!("{p}/stream");
    let first = store
        .put(&prefix, val("a"), sequence(&p, &[5, 100]))
        .await
        .unwrap();
    assert_eq!(first.key, format!("{prefix}-{:020}-{:020}", 5, 100));
    let second = store
        .put(&prefix, val("b"), sequence(&p, &[3, 7]))
        .await
        .unwrap();
    assert_eq!(second.key, format!("{prefix}-{:020}-{:020}", 8, 107));
    let record = store
        .get(&second.key, Comparison::Equal, Some(&p))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.value, val("b"));
    // The index's lookup: the first entry whose end offset is past offset 6.
    let ceiling = store
        .get(
            &format!("{prefix}-{:020}", 7),
            Comparison::Ceiling,
            Some(&p),
        )
        .await;
    assert_eq!(ceiling.unwrap().unwrap().key, second.key);
    store.close().await.unwrap();
}

pub async fn sequence_put_starts_new_components_at_zero<H: MetaHarness>(h: &H) {
    let p = unique_prefix("sequence-grow");
    let store = h.open("main", options()).await;
    let prefix = format!("{p}/s");
    store
        .put(&prefix, val("a"), sequence(&p, &[1]))
        .await
        .unwrap();
    let grown = store
        .put(&prefix, val("b"), sequence(&p, &[1, 5]))
        .await
        .unwrap();
    assert_eq!(grown.key, format!("{prefix}-{:020}-{:020}", 2, 5));
    store.close().await.unwrap();
}

pub async fn sequence_put_rejects_invalid_requests<H: MetaHarness>(h: &H) {
    let p = unique_prefix("sequence-invalid");
    let store = h.open("main", options()).await;
    let prefix = format!("{p}/s");
    let no_partition = PutOptions {
        sequence_key_deltas: Some(vec![1]),
        ..PutOptions::default()
    };
    let with_expect = PutOptions {
        expect: Expect::NotExists,
        ..sequence(&p, &[1])
    };
    for (what, options) in [
        ("missing partition key", no_partition),
        ("expected version", with_expect),
        ("zero first delta", sequence(&p, &[0, 1])),
        // The Oxia server would take this one; the oxia-client crate does not.
        ("zero later delta", sequence(&p, &[1, 0])),
    ] {
        let err = store.put(&prefix, val("v"), options).await.unwrap_err();
        assert!(
            matches!(err, MetaError::InvalidArgument(_)),
            "{what}: {err:?}"
        );
    }
    assert!(store
        .list(&format!("{p}/"), &format!("{p}/~"), Some(&p))
        .await
        .unwrap()
        .is_empty());
    store.close().await.unwrap();
}

/// What the offset index relies on: concurrent appends get adjacent, non-overlapping ranges.
pub async fn concurrent_sequence_puts_produce_dense_non_overlapping_ranges<H: MetaHarness>(h: &H) {
    const TASKS: u64 = 32;
    const PUTS_PER_TASK: u64 = 16;
    let p = unique_prefix("sequence-concurrent");
    let store = h.open("main", options()).await;
    let prefix = format!("{p}/stream");
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let (store, prefix, p) = (Arc::clone(&store), prefix.clone(), p.clone());
        tasks.push(tokio::spawn(async move {
            let mut keys = Vec::new();
            for i in 0..PUTS_PER_TASK {
                let records = 1 + (task * 7 + i) % 5;
                let bytes = records * 100 + task;
                let value = val(&format!("{records},{bytes}"));
                let put = store
                    .put(&prefix, value, sequence(&p, &[records, bytes]))
                    .await
                    .unwrap();
                keys.push((put.key, records, bytes));
            }
            keys
        }));
    }
    let mut assigned = Vec::new();
    for task in tasks {
        assigned.extend(task.await.unwrap());
    }
    assigned.sort_by_key(|(key, _, _)| sequence_numbers(key, &prefix)[0]);
    let (mut end, mut total_bytes) = (0, 0);
    for (key, records, bytes) in &assigned {
        end += records;
        total_bytes += bytes;
        assert_eq!(
            sequence_numbers(key, &prefix),
            vec![end, total_bytes],
            "gap or overlap at {key}"
        );
    }
    assert_eq!(assigned.len() as u64, TASKS * PUTS_PER_TASK);

    // Stored keys sort by offset, and each value is the one written with it.
    let stored = store
        .range_scan(
            &format!("{prefix}-"),
            &format!("{prefix}."),
            Some(&p),
            10_000,
        )
        .await
        .unwrap();
    assert_eq!(stored.len(), assigned.len());
    for (record, (key, records, bytes)) in stored.iter().zip(&assigned) {
        assert_eq!(&record.key, key);
        assert_eq!(record.value, val(&format!("{records},{bytes}")));
    }
    store.close().await.unwrap();
}

/// Oxia derives the next numbers from the highest existing key of the sequence, so deleting the
/// newest key rewinds the sequence; callers must keep the newest key of a sequence they extend.
pub async fn sequence_continues_from_the_highest_remaining_key_after_deletes<H: MetaHarness>(
    h: &H,
) {
    let p = unique_prefix("sequence-delete");
    let store = h.open("main", options()).await;
    let prefix = format!("{p}/s");
    let mut keys = Vec::new();
    for _ in 0..3 {
        keys.push(
            store
                .put(&prefix, val("v"), sequence(&p, &[1]))
                .await
                .unwrap()
                .key,
        );
    }
    store.delete(&keys[0], Expect::Any, Some(&p)).await.unwrap();
    let next = store
        .put(&prefix, val("v"), sequence(&p, &[1]))
        .await
        .unwrap();
    assert_eq!(next.key, format!("{prefix}-{:020}", 4));
    store
        .delete(&next.key, Expect::Any, Some(&p))
        .await
        .unwrap();
    let again = store
        .put(&prefix, val("v"), sequence(&p, &[1]))
        .await
        .unwrap();
    assert_eq!(again.key, format!("{prefix}-{:020}", 4));
    store.close().await.unwrap();
}

pub async fn ephemeral_record_vanishes_when_its_handle_closes<H: MetaHarness>(h: &H) {
    let p = unique_prefix("ephemeral-close");
    let owner = h.open("main", options()).await;
    let observer = h.open("main", options()).await;
    let key = format!("{p}/member");
    let ephemeral = PutOptions {
        ephemeral: true,
        ..PutOptions::default()
    };
    let put = owner.put(&key, val("here"), ephemeral).await.unwrap();
    assert!(put.version.session_id.is_some());

    let seen = observer
        .get(&key, Comparison::Equal, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.version.session_id, put.version.session_id);
    owner.close().await.unwrap();
    let gone = eventually(|| async {
        observer
            .get(&key, Comparison::Equal, None)
            .await
            .unwrap()
            .is_none()
    })
    .await;
    assert!(gone, "ephemeral record outlived its closed session");
    observer.close().await.unwrap();
}

pub async fn ephemeral_record_vanishes_when_its_session_expires<H: MetaHarness>(h: &H) {
    let p = unique_prefix("ephemeral-expire");
    let short = MetaOptions {
        session_timeout: SHORT_SESSION,
        ..options()
    };
    let owner = h.open("main", short).await;
    let observer = h.open("main", options()).await;
    let key = format!("{p}/member");
    let ephemeral = PutOptions {
        ephemeral: true,
        ..PutOptions::default()
    };
    owner.put(&key, val("here"), ephemeral).await.unwrap();
    // Dropped without close: keep-alives stop, as when a process dies.
    drop(owner);
    let gone = eventually(|| async {
        observer
            .get(&key, Comparison::Equal, None)
            .await
            .unwrap()
            .is_none()
    })
    .await;
    assert!(gone, "ephemeral record outlived its expired session");
    observer.close().await.unwrap();
}

pub async fn persistent_record_survives_its_writers_close<H: MetaHarness>(h: &H) {
    let p = unique_prefix("persistent");
    let writer = h.open("main", options()).await;
    let key = format!("{p}/k");
    writer
        .put(&key, val("v"), PutOptions::default())
        .await
        .unwrap();
    writer.close().await.unwrap();
    let reader = h.open("main", options()).await;
    let record = reader
        .get(&key, Comparison::Equal, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.value, val("v"));
    reader.close().await.unwrap();
}

pub async fn operations_after_close_fail_with_closed<H: MetaHarness>(h: &H) {
    let p = unique_prefix("closed");
    let store = h.open("main", options()).await;
    store.close().await.unwrap();
    let put = store
        .put(&format!("{p}/k"), val("v"), PutOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(put, MetaError::Closed), "{put:?}");
    let get = store
        .get(&format!("{p}/k"), Comparison::Equal, None)
        .await
        .unwrap_err();
    assert!(matches!(get, MetaError::Closed), "{get:?}");
}

pub async fn notifications_report_changes_made_through_another_handle<H: MetaHarness>(h: &H) {
    let p = unique_prefix("notify");
    let watcher = h.open("main", watching_options()).await;
    let writer = h.open("main", options()).await;
    let mut stream = watcher.notifications().await.unwrap();

    let key = format!("{p}/k");
    let created = writer
        .put(&key, val("1"), PutOptions::default())
        .await
        .unwrap();
    let modified = writer
        .put(&key, val("2"), PutOptions::default())
        .await
        .unwrap();
    writer.delete(&key, Expect::Any, None).await.unwrap();
    let (r1, r2) = (format!("{p}/r1"), format!("{p}/r2"));
    let r1_put = writer.put(&r1, val("x"), part(&p)).await.unwrap();
    let r2_put = writer.put(&r2, val("x"), part(&p)).await.unwrap();
    let (min, max) = (format!("{p}/r"), format!("{p}/s"));
    writer.delete_range(&min, &max, Some(&p)).await.unwrap();

    let expected = vec![
        Notification::KeyCreated {
            key: key.clone(),
            version_id: created.version.version_id,
        },
        Notification::KeyModified {
            key: key.clone(),
            version_id: modified.version.version_id,
        },
        Notification::KeyDeleted { key: key.clone() },
        Notification::KeyCreated {
            key: r1,
            version_id: r1_put.version.version_id,
        },
        Notification::KeyCreated {
            key: r2,
            version_id: r2_put.version.version_id,
        },
        Notification::KeyRangeDeleted {
            key: min,
            end_key: max,
        },
    ];
    let mut received = Vec::new();
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    while received.len() < expected.len() {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(n)) if n.key().starts_with(&p) => received.push(n),
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    assert_eq!(received, expected);
    // And nothing twice.
    let quiet_until = tokio::time::Instant::now() + Duration::from_millis(500);
    while let Ok(Some(n)) = tokio::time::timeout_at(quiet_until, stream.next()).await {
        assert!(
            !n.key().starts_with(&p),
            "unexpected extra notification {n:?}"
        );
    }
    watcher.close().await.unwrap();
    writer.close().await.unwrap();
}

pub async fn notifications_need_a_handle_opened_with_them<H: MetaHarness>(h: &H) {
    let store = h.open("main", options()).await;
    let err = store.notifications().await.err().unwrap();
    assert!(matches!(err, MetaError::InvalidArgument(_)), "{err:?}");
    store.close().await.unwrap();
}
