//! Row groups of compacted files rebuilt into Kafka batches, each once: readers missing the same
//! row group wait for one GET and one decode, and a reader going through a file sequentially
//! starts the next row groups on their way (read-ahead), so a catch-up consumer finds them
//! decoded instead of paying a GET round trip and a decode per row group, one after another.
//!
//! Read-ahead is bounded three ways: at most `compacted_read_ahead_groups` past the row group a
//! reader reached (a consumer that stops costs at most that many), at most
//! `compacted_read_ahead_bytes` being fetched and decoded at once over all streams (past it no
//! read-ahead starts), and what it decodes lands in the byte-bounded rebuilt cache.

use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::read_ahead::{ReadAhead, Start};
use crate::cache::{FillLocks, RebuiltCache};
use crate::compacted::{Footer, RebuildOptions, RebuiltGroup};
use crate::config::StorageConfig;
use crate::error::StorageError;

/// Where a compacted file lies: its object, and where the file starts in it.
#[derive(Clone, Debug)]
pub(super) struct FileAt {
    pub object_key: String,
    pub byte_offset: u64,
}

pub(super) struct RowGroups {
    shared: Arc<Shared>,
}

struct Shared {
    objects: Arc<dyn ObjectStore>,
    cache: RebuiltCache,
    fills: FillLocks<(String, usize)>,
    ahead: Arc<ReadAhead<(String, usize)>>,
    ahead_groups: usize,
    inline: bool,
    options: RebuildOptions,
}

impl RowGroups {
    pub fn new(config: &StorageConfig, objects: Arc<dyn ObjectStore>) -> RowGroups {
        RowGroups {
            shared: Arc::new(Shared {
                objects,
                cache: RebuiltCache::new("rebuilt", config.compacted_cache_bytes),
                fills: FillLocks::default(),
                ahead: ReadAhead::new(config.compacted_read_ahead_bytes),
                // The deterministic simulation runs one thread with no spawned work.
                ahead_groups: if config.cpu_work_inline {
                    0
                } else {
                    config.compacted_read_ahead_groups
                },
                inline: config.cpu_work_inline,
                options: RebuildOptions {
                    restorer: config.value_restorer.clone(),
                    ..RebuildOptions::default()
                },
            }),
        }
    }

    /// Row group `group` of `file`, from the cache or fetched and decoded once.
    pub async fn get(
        &self,
        file: &FileAt,
        footer: &Arc<Footer>,
        group: usize,
    ) -> Result<Arc<RebuiltGroup>, StorageError> {
        self.shared.load(file, footer, group).await
    }

    /// Starts fetching and decoding, each in parallel, the row groups after `group` that are
    /// neither cached nor on their way, while the read-ahead budget lasts.
    pub fn read_ahead(&self, file: &FileAt, footer: &Arc<Footer>, group: usize) {
        let shared = &self.shared;
        for g in (group + 1..footer.groups.len()).take(shared.ahead_groups) {
            let key = (file.object_key.clone(), g);
            if shared.cache.contains(&key) {
                continue;
            }
            let load = {
                let (shared, file, footer) = (shared.clone(), file.clone(), footer.clone());
                async move { shared.load(&file, &footer, g).await.map(|_| ()) }
            };
            if shared.ahead.start(key, weight_bytes(footer, g), load) == Start::BudgetSpent {
                return;
            }
        }
    }

    /// Row groups decoded by read-ahead so far.
    #[cfg(test)]
    pub fn read_ahead_groups(&self) -> u64 {
        self.shared.ahead.loaded()
    }

    /// Read-ahead budget not in use, in bytes.
    #[cfg(test)]
    pub fn read_ahead_free_bytes(&self) -> usize {
        self.shared.ahead.free_bytes()
    }
}

/// What fetching and decoding row group `group` holds in memory at most: its column chunks and
/// its rebuilt batches (about its uncompressed size).
fn weight_bytes(footer: &Footer, group: usize) -> usize {
    let span = footer.groups[group];
    let fetched = usize::try_from(span.byte_end - span.byte_start).unwrap_or(usize::MAX);
    fetched.saturating_add(footer.group_uncompressed_bytes(group))
}

impl Shared {
    async fn load(
        &self,
        file: &FileAt,
        footer: &Arc<Footer>,
        group: usize,
    ) -> Result<Arc<RebuiltGroup>, StorageError> {
        let key = (file.object_key.clone(), group);
        if let Some(rebuilt) = self.cache.get(&key) {
            return Ok(rebuilt);
        }
        let _fill = self.fills.lock(&key).await;
        if let Some(rebuilt) = self.cache.get(&key) {
            return Ok(rebuilt); // decoded while this reader waited
        }
        let span = footer.groups[group];
        let range = file.byte_offset + span.byte_start..file.byte_offset + span.byte_end;
        let bytes = self
            .objects
            .get_range(&Path::from(file.object_key.as_str()), range)
            .await?;
        let (footer, options) = (footer.clone(), self.options.clone());
        let rebuilt = crate::cpu::run(self.inline, move || {
            crate::compacted::decode_group(&footer, group, bytes, &options)
        })
        .await
        .map_err(|e| StorageError::Corrupt(format!("compacted reader failed: {e}")))?
        .map_err(|e| {
            tracing::error!(object_key = %file.object_key, group, error = %e, "compacted row group failed to read");
            StorageError::Corrupt(format!("{}: {e}", file.object_key))
        })?;
        let rebuilt = Arc::new(rebuilt);
        self.cache.insert(key, rebuilt.clone());
        Ok(rebuilt)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::cast_possible_truncation)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use object_store::memory::InMemory;

    use super::*;
    use crate::compacted::{write_file, BatchHeader, ParsedTail, RecordRow, WriterOptions};
    use crate::engine::read_ahead::PERMIT_BYTES;
    use crate::objects::CountingObjectStore;

    const GROUPS: usize = 6;

    /// A store holding one compacted file of `GROUPS` row groups (one 3-record batch each).
    async fn file() -> (Arc<CountingObjectStore>, FileAt, Arc<Footer>) {
        let batches: Vec<(u64, Bytes)> = (0..GROUPS as u64)
            .map(|b| {
                let header = BatchHeader {
                    base_offset: 0,
                    partition_leader_epoch: -1,
                    attributes: 0,
                    last_offset_delta: 2,
                    base_timestamp: 1,
                    max_timestamp: 1,
                    producer_id: -1,
                    producer_epoch: -1,
                    base_sequence: -1,
                };
                let records: Vec<RecordRow> = (0..3)
                    .map(|i| RecordRow {
                        attributes: 0,
                        timestamp_delta: 0,
                        offset_delta: i,
                        key: None,
                        value: Some(Bytes::from(vec![b'v'; 100])),
                        headers: vec![],
                    })
                    .collect();
                let batch = record_batch::encode_batch(&header, &records, 0).unwrap();
                (3 * b, batch)
            })
            .collect();
        let options = WriterOptions {
            row_group_rows_target: 3,
            row_group_bytes_target: 1 << 20,
        };
        let written = write_file("t-0", &batches, &options).unwrap();
        let ParsedTail::Footer(footer) =
            Footer::parse(&written.bytes, written.bytes.len() as u64).unwrap()
        else {
            panic!("the whole file holds its footer");
        };
        assert_eq!(footer.groups.len(), GROUPS);
        let store = Arc::new(CountingObjectStore::new(Arc::new(InMemory::new())));
        let key = "compacted/t-0/file.parquet";
        store
            .put(&Path::from(key), written.bytes.into())
            .await
            .unwrap();
        let at = FileAt {
            object_key: key.into(),
            byte_offset: 0,
        };
        (store, at, Arc::new(footer))
    }

    fn groups(store: &Arc<CountingObjectStore>, ahead_bytes: usize) -> RowGroups {
        let config = StorageConfig {
            compacted_read_ahead_groups: 2,
            compacted_read_ahead_bytes: ahead_bytes,
            ..StorageConfig::default()
        };
        RowGroups::new(&config, store.clone())
    }

    /// Waits (at most 5 s) until `done`.
    async fn settle(done: impl Fn() -> bool) {
        for _ in 0..500 {
            if done() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("read-ahead did not settle");
    }

    #[tokio::test]
    async fn a_sequential_reader_finds_the_next_row_groups_decoded_ahead_and_no_more() {
        let (store, at, footer) = file().await;
        let rg = groups(&store, 64 << 20);
        let free = rg.read_ahead_free_bytes();
        rg.get(&at, &footer, 0).await.unwrap();
        rg.read_ahead(&at, &footer, 0);
        settle(|| rg.read_ahead_groups() == 2 && rg.read_ahead_free_bytes() == free).await;
        assert_eq!(
            store.counts().gets,
            3,
            "group 0, then 1 and 2 ahead of the reader"
        );
        rg.get(&at, &footer, 1).await.unwrap();
        rg.get(&at, &footer, 2).await.unwrap();
        assert_eq!(store.counts().gets, 3, "the reader found them decoded");
        // The reader stopped: nothing past its window was fetched.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(store.counts().gets, 3);
        rg.read_ahead(&at, &footer, 2);
        settle(|| rg.read_ahead_groups() == 4).await;
        assert_eq!(
            store.counts().gets,
            5,
            "groups 3 and 4 once the reader reached 2"
        );
    }

    #[tokio::test]
    async fn readers_missing_one_row_group_at_once_share_one_get() {
        let (store, at, footer) = file().await;
        let rg = groups(&store, 64 << 20);
        let reads = (0..4).map(|_| rg.get(&at, &footer, 3));
        for read in futures::future::join_all(reads).await {
            assert_eq!(read.unwrap().base_offset(), Some(9));
        }
        assert_eq!(store.counts().gets, 1);
    }

    #[tokio::test]
    async fn no_read_ahead_starts_past_its_byte_budget() {
        let (store, at, footer) = file().await;
        let rg = groups(&store, PERMIT_BYTES);
        rg.get(&at, &footer, 0).await.unwrap();
        rg.read_ahead(&at, &footer, 0);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(rg.read_ahead_groups(), 0);
        assert_eq!(store.counts().gets, 1);
        assert_eq!(rg.read_ahead_free_bytes(), PERMIT_BYTES);
    }
}
