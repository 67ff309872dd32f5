//! The table commit protocol against real stores: what a sync commits, what it expires, and
//! that a failure at any object-store step of a commit leaves the previous snapshot current and
//! whole, after which the next sync commits each file exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use metastore::{MemoryMetaStore, MetaOptions, MetaStore};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use record_batch::{encode_batch, BatchHeader, RecordRow};
use storage::compacted::{write_file, WriterOptions};
use storage::objects::FailingObjectStore;
use tables::deletes::PartitionState;
use tables::{catalog, LiveFile, Synced, TableStore, METADATA_VERSIONS_KEPT};

const TOPIC: &str = "orders";
const TOPIC_ID: &str = "0123456789abcdef0123456789abcdef";
/// No partition hides anything: no log start cut, no open or aborted transaction.
static NONE: BTreeMap<i32, PartitionState> = BTreeMap::new();

fn payload(records: usize) -> Bytes {
    let header = BatchHeader {
        base_offset: 0,
        partition_leader_epoch: 0,
        attributes: 0,
        last_offset_delta: i32::try_from(records - 1).unwrap(),
        base_timestamp: 1_000,
        max_timestamp: 1_000,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    };
    let rows: Vec<RecordRow> = (0..records)
        .map(|i| RecordRow {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: i32::try_from(i).unwrap(),
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from(format!("v{i}"))),
            headers: vec![],
        })
        .collect();
    encode_batch(&header, &rows, 0).unwrap()
}

struct Env {
    objects: Arc<dyn ObjectStore>,
    meta: Arc<dyn MetaStore>,
    tables: TableStore,
}

fn env_on(objects: Arc<dyn ObjectStore>) -> Env {
    let meta: Arc<dyn MetaStore> = Arc::new(MemoryMetaStore::open(MetaOptions::default()));
    let tables = TableStore::new(objects.clone(), meta.clone(), "memory://".into());
    Env {
        objects,
        meta,
        tables,
    }
}

impl Env {
    /// A compacted file of `records` rows for partition `partition`, starting at `base`.
    async fn file(&self, partition: i32, base: u64, records: usize) -> LiveFile {
        let stream = format!("{TOPIC_ID}-{partition}");
        let written = write_file(
            &stream,
            &[(base, payload(records))],
            &WriterOptions::default(),
        )
        .unwrap();
        let key = format!("compacted/{stream}/{base:020}.parquet");
        self.objects
            .put(
                &Path::from(key.as_str()),
                PutPayload::from(written.bytes.clone()),
            )
            .await
            .unwrap();
        LiveFile {
            object_key: key,
            partition,
            file_size_bytes: written.bytes.len() as u64,
        }
    }

    async fn listed(&self) -> Vec<(String, i64)> {
        let loaded = self.tables.load(TOPIC).await.unwrap().unwrap();
        let mut files: Vec<(String, i64)> = self
            .tables
            .live_entries(&loaded.metadata)
            .await
            .unwrap()
            .into_iter()
            .map(|e| (e.file.path, e.file.record_count))
            .collect();
        files.sort();
        files
    }

    async fn metadata_objects(&self) -> Vec<String> {
        use futures::TryStreamExt;
        let prefix = Path::from(format!("tables/{TOPIC_ID}/metadata"));
        let listed: Vec<_> = self
            .objects
            .list(Some(&prefix))
            .try_collect()
            .await
            .unwrap();
        listed.into_iter().map(|m| m.location.to_string()).collect()
    }
}

#[tokio::test]
async fn a_first_sync_creates_the_table_and_a_second_with_the_same_files_commits_nothing() {
    let env = env_on(Arc::new(InMemory::new()));
    let files = vec![env.file(0, 0, 10).await, env.file(1, 0, 7).await];
    let synced = env
        .tables
        .sync(TOPIC, TOPIC_ID, &files, &NONE, 1_000)
        .await
        .unwrap();
    assert!(matches!(
        synced,
        Synced::Committed {
            added: 2,
            removed: 0,
            sequence_number: 1
        }
    ));
    let listed = env.listed().await;
    assert_eq!(listed.len(), 2);
    assert_eq!(
        listed.iter().map(|(_, rows)| rows).sum::<i64>(),
        17,
        "row counts from footers"
    );
    assert_eq!(
        env.tables
            .sync(TOPIC, TOPIC_ID, &files, &NONE, 2_000)
            .await
            .unwrap(),
        Synced::Unchanged
    );
    let tables = catalog::list(env.meta.as_ref()).await.unwrap();
    assert_eq!(tables.len(), 1);
    assert_eq!(tables[0].1.records, 17);
}

#[tokio::test]
async fn appends_keep_history_and_a_removal_expires_every_older_snapshot() {
    let env = env_on(Arc::new(InMemory::new()));
    let a = env.file(0, 0, 10).await;
    let b = env.file(0, 10, 5).await;
    env.tables
        .sync(TOPIC, TOPIC_ID, std::slice::from_ref(&a), &NONE, 1)
        .await
        .unwrap();
    env.tables
        .sync(TOPIC, TOPIC_ID, &[a.clone(), b.clone()], &NONE, 2)
        .await
        .unwrap();
    let loaded = env.tables.load(TOPIC).await.unwrap().unwrap();
    assert_eq!(
        loaded.metadata.snapshots.len(),
        2,
        "an append keeps the older snapshot"
    );
    let keys = env.tables.referenced_keys().await.unwrap();
    assert_eq!(
        keys,
        HashSet::from([a.object_key.clone(), b.object_key.clone()])
    );

    // Retention dropped `a` from the index: the table drops it in a snapshot of its own.
    let synced = env
        .tables
        .sync(TOPIC, TOPIC_ID, std::slice::from_ref(&b), &NONE, 3)
        .await
        .unwrap();
    assert!(matches!(
        synced,
        Synced::Committed {
            added: 0,
            removed: 1,
            ..
        }
    ));
    let loaded = env.tables.load(TOPIC).await.unwrap().unwrap();
    assert_eq!(
        loaded.metadata.snapshots.len(),
        1,
        "older snapshots listed the removed file"
    );
    assert_eq!(
        loaded.metadata.current_snapshot().unwrap().summary["operation"],
        "delete"
    );
    let keys = env.tables.referenced_keys().await.unwrap();
    assert_eq!(keys, HashSet::from([b.object_key.clone()]));
}

#[tokio::test]
async fn a_commit_that_lost_the_race_for_the_pointer_changes_nothing() {
    let env = env_on(Arc::new(InMemory::new()));
    let a = env.file(0, 0, 10).await;
    env.tables
        .sync(TOPIC, TOPIC_ID, std::slice::from_ref(&a), &NONE, 1)
        .await
        .unwrap();
    let stale = catalog::get(env.meta.as_ref(), TOPIC)
        .await
        .unwrap()
        .unwrap();
    let b = env.file(0, 10, 5).await;
    env.tables
        .sync(TOPIC, TOPIC_ID, &[a.clone(), b.clone()], &NONE, 2)
        .await
        .unwrap();
    let mut pointer = stale.pointer.clone();
    pointer.sequence_number = 99;
    let lost = catalog::swap(env.meta.as_ref(), TOPIC, Some(stale.version_id), &pointer).await;
    assert!(matches!(lost, Err(tables::TableError::Conflict(_))));
    assert_eq!(env.listed().await.len(), 2);
}

#[tokio::test]
async fn old_metadata_versions_are_deleted_and_the_kept_ones_all_load() {
    let env = env_on(Arc::new(InMemory::new()));
    let mut files = Vec::new();
    let commits = METADATA_VERSIONS_KEPT + 3;
    for i in 0..commits {
        files.push(env.file(0, u64::try_from(i).unwrap() * 10, 10).await);
        env.tables
            .sync(
                TOPIC,
                TOPIC_ID,
                &files,
                &NONE,
                10 + u64::try_from(i).unwrap(),
            )
            .await
            .unwrap();
    }
    let objects = env.metadata_objects().await;
    // Three objects per version (metadata, manifest list, manifest), the last ten versions.
    assert_eq!(
        objects.len(),
        3 * usize::try_from(METADATA_VERSIONS_KEPT).unwrap()
    );
    let loaded = env.tables.load(TOPIC).await.unwrap().unwrap();
    for logged in &loaded.metadata.metadata_log {
        let key = logged.metadata_file.strip_prefix("memory://").unwrap();
        assert!(objects.iter().any(|o| o == key), "{key} is kept");
    }
    for snapshot in &loaded.metadata.snapshots {
        let key = snapshot.manifest_list.strip_prefix("memory://").unwrap();
        assert!(objects.iter().any(|o| o == key), "{key} is kept");
    }
    assert_eq!(env.listed().await.len(), files.len());
}

#[tokio::test]
async fn a_topic_created_again_under_the_same_name_starts_a_new_table() {
    let env = env_on(Arc::new(InMemory::new()));
    let a = env.file(0, 0, 10).await;
    env.tables
        .sync(TOPIC, TOPIC_ID, &[a], &NONE, 1)
        .await
        .unwrap();
    let other_id = "fedcba9876543210fedcba9876543210";
    let synced = env
        .tables
        .sync(TOPIC, other_id, &[], &NONE, 2)
        .await
        .unwrap();
    assert!(matches!(
        synced,
        Synced::Committed {
            sequence_number: 1,
            ..
        }
    ));
    let loaded = env.tables.load(TOPIC).await.unwrap().unwrap();
    assert_eq!(
        loaded.metadata.table_uuid,
        "fedcba98-7654-3210-fedc-ba9876543210"
    );
    assert!(env.tables.referenced_keys().await.unwrap().is_empty());
}

/// Fails the n-th object-store call of a commit, for every n until a commit needs fewer calls:
/// the table must still be the previous snapshot, every file it lists must exist, and the next
/// sync must reach the wanted set with each file once.
#[tokio::test]
async fn a_failure_at_any_step_of_a_commit_leaves_the_previous_snapshot_whole() {
    let failing = Arc::new(FailingObjectStore::new(Arc::new(InMemory::new())));
    let env = env_on(failing.clone());
    let a = env.file(0, 0, 10).await;
    let b = env.file(1, 0, 4).await;
    env.tables
        .sync(TOPIC, TOPIC_ID, std::slice::from_ref(&a), &NONE, 1)
        .await
        .unwrap();
    let mut n = 1;
    loop {
        assert!(n < 100, "a commit never got through");
        let c = env.file(0, 10 + n * 10, 3).await;
        let before = env.listed().await;
        failing.fail_nth_operation(n);
        let wanted = vec![b.clone(), c.clone()];
        let failed = env
            .tables
            .sync(TOPIC, TOPIC_ID, &wanted, &NONE, 10 + n)
            .await
            .is_err();
        failing.fail_nth_operation(0);
        if failed {
            assert_eq!(
                env.listed().await,
                before,
                "step {n}: the previous snapshot stays"
            );
        }
        for (path, _) in env.listed().await {
            let key = path.strip_prefix("memory://").unwrap();
            env.objects.head(&Path::from(key)).await.unwrap();
        }
        env.tables
            .sync(TOPIC, TOPIC_ID, &wanted, &NONE, 20 + n)
            .await
            .unwrap();
        let listed = env.listed().await;
        let paths: HashSet<&String> = listed.iter().map(|(p, _)| p).collect();
        assert_eq!(listed.len(), 2, "step {n}: each file once");
        assert_eq!(paths.len(), 2);
        if !failed {
            break;
        }
        // Back to the state before the step, for the next n.
        env.tables
            .sync(TOPIC, TOPIC_ID, std::slice::from_ref(&a), &NONE, 30 + n)
            .await
            .unwrap();
        n += 1;
    }
    assert!(
        n > 5,
        "the commit's object calls were each failed once (got {n})"
    );
}
