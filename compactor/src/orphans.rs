//! Orphan Parquet files: a compacted file no index entry references (its compactor died after
//! the PUT and before the swap, and the range was later compacted under another name, or the
//! task was dropped). Such a file is first MARKED in the coordination store; it is deleted only
//! if it is still unreferenced a grace period after it was both written and marked (in-flight
//! reads and a slow swap finish first), and never while a task of its stream is RUNNING, nor
//! while an Iceberg table's current snapshot lists it (retention or key compaction dropped it
//! from the index, and the table commit that drops it too has not succeeded yet).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;
use metastore::{MetaError, MetaStore, PutOptions};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::{Deserialize, Serialize};
use storage::FileType;

use crate::referenced;
use crate::tasks::{Task, TaskState};
use crate::{CompactorConfig, CompactorError};

const MARK_PREFIX: &str = "compactor/orphans/";
const SCAN_PAGE_RECORDS: usize = 1024;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Mark {
    marked_ms: u64,
}

/// Object keys hold '/', which the MetaStore treats as a hierarchy separator.
fn mark_key(object_key: &str) -> String {
    format!("{MARK_PREFIX}{}", object_key.replace('/', "|"))
}

struct CompactedFile {
    key: String,
    last_modified_ms: u64,
}

pub struct OrphanSweeper<'a> {
    pub objects: &'a Arc<dyn ObjectStore>,
    pub index_meta: &'a Arc<dyn MetaStore>,
    pub coord_meta: &'a Arc<dyn MetaStore>,
    pub config: &'a CompactorConfig,
}

impl OrphanSweeper<'_> {
    /// One sweep; returns how many files were deleted.
    /// `table_files`: object keys the tables' current snapshots list.
    pub async fn run(
        &self,
        tasks: &[Task],
        table_files: &HashSet<String>,
        now_ms: u64,
    ) -> Result<u64, CompactorError> {
        let files = self.list_files().await?;
        let busy: HashSet<&str> = tasks
            .iter()
            .filter(|t| matches!(t.state, TaskState::Running { .. }))
            .map(|t| t.stream.as_str())
            .collect();
        let mut marks = self.marks().await?;
        let mut deleted = 0;
        for (stream, files) in &files {
            let referenced =
                referenced::object_keys(self.index_meta.as_ref(), stream, FileType::Parquet)
                    .await?;
            for file in files {
                let mark = mark_key(&file.key);
                let marked_ms = marks.remove(&mark);
                if referenced.contains(&file.key) || table_files.contains(&file.key) {
                    if marked_ms.is_some() {
                        // A replay swapped it in after it was marked.
                        self.unmark(&mark).await?;
                    }
                    continue;
                }
                if busy.contains(stream.as_str())
                    || now_ms.saturating_sub(file.last_modified_ms) < self.config.grace_period_ms
                {
                    continue;
                }
                let Some(marked_ms) = marked_ms else {
                    self.mark(&mark, now_ms).await?;
                    tracing::info!(object_key = %file.key, "marked unreferenced parquet file");
                    continue;
                };
                if now_ms.saturating_sub(marked_ms) < self.config.grace_period_ms {
                    continue;
                }
                match self.objects.delete(&Path::from(file.key.as_str())).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
                self.unmark(&mark).await?;
                tracing::info!(object_key = %file.key, "deleted orphan parquet file");
                deleted += 1;
            }
        }
        // Marks of files no longer listed (deleted by retention, or by us before a crash).
        for mark in marks.keys() {
            self.unmark(mark).await?;
        }
        Ok(deleted)
    }

    /// Compacted files by stream, from `<prefix>/<stream>/<base>-<end>.parquet` names.
    async fn list_files(&self) -> Result<BTreeMap<String, Vec<CompactedFile>>, CompactorError> {
        let prefix = &self.config.compacted_prefix;
        let metas: Vec<_> = self
            .objects
            .list(Some(&Path::from(prefix.as_str())))
            .try_collect()
            .await?;
        let mut out: BTreeMap<String, Vec<CompactedFile>> = BTreeMap::new();
        for meta in metas {
            let key = meta.location.to_string();
            let Some((stream, name)) = key
                .strip_prefix(prefix.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                .and_then(|rest| rest.split_once('/'))
            else {
                continue;
            };
            if !name.ends_with(".parquet") || name.contains('/') {
                continue;
            }
            out.entry(stream.to_string())
                .or_default()
                .push(CompactedFile {
                    last_modified_ms: u64::try_from(meta.last_modified.timestamp_millis())
                        .unwrap_or(0),
                    key,
                });
        }
        Ok(out)
    }

    async fn marks(&self) -> Result<HashMap<String, u64>, CompactorError> {
        let end = format!("{MARK_PREFIX}\u{10FFFF}");
        let mut out = HashMap::new();
        let mut from = MARK_PREFIX.to_string();
        loop {
            let page = self
                .coord_meta
                .range_scan(&from, &end, None, SCAN_PAGE_RECORDS)
                .await?;
            let Some(last) = page.last() else { break };
            from = format!("{}\u{1}", last.key);
            let full = page.len() == SCAN_PAGE_RECORDS;
            for r in page {
                let mark: Mark = serde_json::from_slice(&r.value)
                    .map_err(|e| CompactorError::Corrupt(format!("{}: {e}", r.key)))?;
                out.insert(r.key, mark.marked_ms);
            }
            if !full {
                break;
            }
        }
        Ok(out)
    }

    async fn mark(&self, key: &str, now_ms: u64) -> Result<(), CompactorError> {
        let value = serde_json::to_vec(&Mark { marked_ms: now_ms })
            .map_err(|e| CompactorError::Corrupt(e.to_string()))?;
        self.coord_meta
            .put(key, value.into(), PutOptions::default())
            .await?;
        Ok(())
    }

    async fn unmark(&self, key: &str) -> Result<(), CompactorError> {
        match self.coord_meta.delete(key, Default::default(), None).await {
            Ok(()) | Err(MetaError::KeyNotFound) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use metastore::{EmbeddedMetaStore, MetaOptions};
    use object_store::PutPayload;
    use storage::{stream, BatchMeta, IndexEntry};

    use super::*;
    use crate::tasks::Task;

    const STREAM: &str = "t1-0";
    const GRACE_MS: u64 = 1_000;

    struct Env {
        _dir: tempfile::TempDir,
        objects: Arc<dyn ObjectStore>,
        meta: Arc<dyn MetaStore>,
        config: CompactorConfig,
    }

    async fn env() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let meta: Arc<dyn MetaStore> = Arc::new(
            EmbeddedMetaStore::open_in_dir(dir.path(), MetaOptions::default())
                .await
                .unwrap(),
        );
        Env {
            _dir: dir,
            objects: storage::objects::open("memory://").unwrap(),
            meta,
            config: CompactorConfig {
                grace_period_ms: GRACE_MS,
                ..CompactorConfig::default()
            },
        }
    }

    impl Env {
        fn sweeper(&self) -> OrphanSweeper<'_> {
            OrphanSweeper {
                objects: &self.objects,
                index_meta: &self.meta,
                coord_meta: &self.meta,
                config: &self.config,
            }
        }

        async fn file(&self, base: u64, end: u64) -> String {
            let key = storage::compacted::file_key("compacted", STREAM, base, end);
            self.objects
                .put(
                    &Path::from(key.as_str()),
                    PutPayload::from(Bytes::from_static(b"PAR1")),
                )
                .await
                .unwrap();
            key
        }

        async fn reference(&self, object_key: &str, end: u64) {
            let entry = IndexEntry {
                file_type: FileType::Parquet,
                object_key: object_key.to_string(),
                byte_offset: 0,
                byte_len: 4,
                crc32c: 0,
                min_timestamp: 0,
                max_timestamp: 0,
                write_time_ms: 0,
                batches: vec![BatchMeta {
                    len: 4,
                    records: u32::try_from(end).unwrap(),
                    max_timestamp: 0,
                    producer: None,
                }],
            };
            let key = format!("{}{end:020}-{:020}", stream::index_range_start(STREAM), 4);
            self.meta
                .put(&key, entry.encode(), PutOptions::partition(STREAM))
                .await
                .unwrap();
        }

        async fn exists(&self, key: &str) -> bool {
            self.objects.head(&Path::from(key)).await.is_ok()
        }

        async fn marked(&self, key: &str) -> bool {
            self.sweeper()
                .marks()
                .await
                .unwrap()
                .contains_key(&mark_key(key))
        }
    }

    #[tokio::test]
    async fn an_unreferenced_file_is_deleted_only_a_grace_period_after_it_was_marked() {
        let env = env().await;
        let referenced = env.file(0, 10).await;
        env.reference(&referenced, 10).await;
        let orphan = env.file(0, 7).await;
        let written_ms = storage::clock::system_now_ms();
        let sweeper = env.sweeper();

        // Too young: a swap may still be on its way.
        assert_eq!(
            sweeper.run(&[], &HashSet::new(), written_ms).await.unwrap(),
            0
        );
        assert!(!env.marked(&orphan).await);

        let t = written_ms + 2 * GRACE_MS;
        assert_eq!(sweeper.run(&[], &HashSet::new(), t).await.unwrap(), 0);
        assert!(env.marked(&orphan).await && env.exists(&orphan).await);
        assert_eq!(
            sweeper
                .run(&[], &HashSet::new(), t + GRACE_MS - 1)
                .await
                .unwrap(),
            0
        );
        assert!(env.exists(&orphan).await);

        assert_eq!(
            sweeper
                .run(&[], &HashSet::new(), t + GRACE_MS)
                .await
                .unwrap(),
            1
        );
        assert!(!env.exists(&orphan).await && !env.marked(&orphan).await);
        assert!(env.exists(&referenced).await, "a referenced file is kept");
        assert!(!env.marked(&referenced).await);
    }

    #[tokio::test]
    async fn a_file_a_table_still_lists_is_kept_until_the_table_drops_it() {
        let env = env().await;
        let dropped = env.file(0, 7).await;
        let listed: HashSet<String> = [dropped.clone()].into();
        let late = storage::clock::system_now_ms() + 100 * GRACE_MS;
        let sweeper = env.sweeper();
        for step in 0..3 {
            assert_eq!(
                sweeper
                    .run(&[], &listed, late + step * GRACE_MS)
                    .await
                    .unwrap(),
                0
            );
            assert!(env.exists(&dropped).await && !env.marked(&dropped).await);
        }
        // The table committed without it: now the usual mark and grace period apply.
        let none = HashSet::new();
        assert_eq!(
            sweeper.run(&[], &none, late + 3 * GRACE_MS).await.unwrap(),
            0
        );
        assert!(env.marked(&dropped).await);
        assert_eq!(
            sweeper.run(&[], &none, late + 4 * GRACE_MS).await.unwrap(),
            1
        );
        assert!(!env.exists(&dropped).await);
    }

    #[tokio::test]
    async fn no_file_of_a_stream_is_touched_while_one_of_its_tasks_is_running() {
        let env = env().await;
        let orphan = env.file(0, 7).await;
        let mut running = Task::new(STREAM, 0, 7, 100, 0);
        running.state = TaskState::Running {
            owner: "other".into(),
            started_ms: 0,
        };
        let other_stream = Task {
            stream: "t2-0".into(),
            ..running.clone()
        };
        let late = storage::clock::system_now_ms() + 100 * GRACE_MS;
        let sweeper = env.sweeper();
        for step in 0..3 {
            let now = late + step * GRACE_MS;
            assert_eq!(
                sweeper
                    .run(std::slice::from_ref(&running), &HashSet::new(), now)
                    .await
                    .unwrap(),
                0
            );
            assert!(env.exists(&orphan).await && !env.marked(&orphan).await);
        }
        // A running task of another stream does not protect it.
        assert_eq!(
            sweeper
                .run(std::slice::from_ref(&other_stream), &HashSet::new(), late)
                .await
                .unwrap(),
            0
        );
        assert!(env.marked(&orphan).await);
        let deleted = sweeper
            .run(&[other_stream], &HashSet::new(), late + GRACE_MS)
            .await
            .unwrap();
        assert_eq!(deleted, 1);
    }

    #[tokio::test]
    async fn a_marked_file_that_a_replay_swapped_in_is_kept_and_unmarked() {
        let env = env().await;
        let file = env.file(0, 10).await;
        let late = storage::clock::system_now_ms() + 100 * GRACE_MS;
        let sweeper = env.sweeper();
        sweeper.run(&[], &HashSet::new(), late).await.unwrap();
        assert!(env.marked(&file).await);
        env.reference(&file, 10).await;
        assert_eq!(
            sweeper
                .run(&[], &HashSet::new(), late + 10 * GRACE_MS)
                .await
                .unwrap(),
            0
        );
        assert!(env.exists(&file).await && !env.marked(&file).await);
    }
}
