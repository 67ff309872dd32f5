//! The pass's table step: each topic with `iceberg.enable` gets its Iceberg table committed to
//! hold exactly the Parquet files its index holds (`tables::TableStore::sync`), after the
//! rewrite and key compaction and before the orphan sweep, which never deletes a file a table
//! still lists. Tables of topics deleted or no longer enabled leave the catalog.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use metastore::MetaStore;
use storage::{topics, transactions, FileType};
use tables::deletes::PartitionState;
use tables::{catalog, LiveFile, Synced, TableStore};

use crate::{CompactorConfig, CompactorError};

const SCAN_PAGE_RECORDS: usize = 1024;

/// What the table step did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TablesReport {
    pub committed: u64,
    pub unchanged: u64,
    pub failed: u64,
    pub dropped: u64,
}

pub async fn sync_all(
    store: &TableStore,
    index_meta: &Arc<dyn MetaStore>,
    config: &CompactorConfig,
    now_ms: u64,
) -> TablesReport {
    let mut report = TablesReport::default();
    let all = match topics::list(store.meta.as_ref()).await {
        Ok(all) => all,
        Err(error) => {
            tracing::warn!(%error, "cannot list topics for table commits");
            report.failed += 1;
            return report;
        }
    };
    let mut enabled = HashSet::new();
    for topic in all.iter().filter(|t| is_table(t, config)) {
        enabled.insert(topic.name.clone());
        let started = std::time::Instant::now();
        let result = async {
            let (live, states) = live_files(index_meta, &store.meta, &topic.record).await?;
            let topic_id = topic.record.id.simple().to_string();
            let synced = store
                .sync(&topic.name, &topic_id, &live, &states, now_ms)
                .await?;
            Ok::<_, CompactorError>(synced)
        }
        .await;
        match result {
            Ok(Synced::Unchanged) => {
                report.unchanged += 1;
                crate::metrics::table_synced(&topic.name, now_ms, None);
            }
            Ok(Synced::Committed { .. }) => {
                report.committed += 1;
                crate::metrics::table_synced(&topic.name, now_ms, Some(started.elapsed()));
            }
            Err(error) => {
                report.failed += 1;
                crate::metrics::table_commit_failed(&topic.name);
                tracing::warn!(topic = %topic.name, %error, "table commit failed; will retry");
            }
        }
    }
    report.dropped = drop_stale(store, &enabled).await;
    if let Some(path) = &config.sql_catalog {
        if let Err(error) = mirror_sql_catalog(store, path, &config.iceberg_namespace).await {
            tracing::warn!(%error, path = %path.display(), "cannot update the sql catalog");
        }
    }
    report
}

/// Whether `topic` is a table (`iceberg.enable`); a topic whose config does not parse is not.
fn is_table(topic: &topics::StoredTopic, config: &CompactorConfig) -> bool {
    match topic.record.config(&config.topic_defaults) {
        Ok(c) => c.iceberg_enable,
        Err(error) => {
            tracing::warn!(topic = %topic.name, %error, "not a table this pass: bad config");
            false
        }
    }
}

/// Brings every table's typed columns up to its value subject's schema versions, before the
/// pass writes files; refused versions are counted by topic.
pub async fn refresh_typing(
    typing: &tables::typed::Typing,
    meta: &Arc<dyn MetaStore>,
    config: &CompactorConfig,
) {
    let all = match topics::list(meta.as_ref()).await {
        Ok(all) => all,
        Err(error) => {
            tracing::warn!(%error, "cannot list topics for typed columns");
            return;
        }
    };
    let tables: Vec<(String, String)> = all
        .iter()
        .filter(|t| is_table(t, config))
        .map(|t| (t.record.id.simple().to_string(), t.name.clone()))
        .collect();
    for refusal in typing.refresh(&tables).await {
        crate::metrics::table_schema_refused(&refusal.topic);
    }
    let live: HashSet<String> = all
        .iter()
        .map(|t| t.record.id.simple().to_string())
        .collect();
    if let Err(error) = tables::typed::forget_deleted(meta.as_ref(), &live).await {
        tracing::warn!(%error, "cannot delete the typed columns of deleted topics");
    }
}

/// The catalog name engines open the SQL catalog under (pyiceberg's `SqlCatalog(name, …)`).
pub const SQL_CATALOG_NAME: &str = "diskless";

/// Rewrites the SQL catalog beside an embedded MetaStore to list exactly the tables.
async fn mirror_sql_catalog(
    store: &TableStore,
    path: &std::path::Path,
    namespace: &str,
) -> Result<(), CompactorError> {
    let tables: Vec<(String, String)> = catalog::list(store.meta.as_ref())
        .await?
        .into_iter()
        .map(|(topic, pointer)| (topic, pointer.metadata_location))
        .collect();
    let (path, namespace) = (path.to_path_buf(), namespace.to_string());
    tokio::task::spawn_blocking(move || {
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder)
                .map_err(|e| CompactorError::Corrupt(format!("{}: {e}", folder.display())))?;
        }
        tables::sql::SqlCatalog::open(&path, SQL_CATALOG_NAME, &namespace)?.mirror(&tables)?;
        Ok(())
    })
    .await
    .map_err(|e| CompactorError::Corrupt(format!("sql catalog task failed: {e}")))?
}

/// Removes the catalog records of tables whose topic is gone or no longer a table; their
/// files stay until the orphan sweep finds them unreferenced.
async fn drop_stale(store: &TableStore, enabled: &HashSet<String>) -> u64 {
    let tables = match catalog::list(store.meta.as_ref()).await {
        Ok(tables) => tables,
        Err(error) => {
            tracing::warn!(%error, "cannot list tables");
            return 0;
        }
    };
    let mut dropped = 0;
    for (topic, _) in tables.iter().filter(|(t, _)| !enabled.contains(t)) {
        let removed = match catalog::get(store.meta.as_ref(), topic).await {
            Ok(Some(v)) => catalog::remove(store.meta.as_ref(), topic, v.version_id).await,
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        match removed {
            Ok(()) => {
                dropped += 1;
                tracing::info!(
                    topic,
                    "dropped table: its topic is gone or no longer a table"
                );
            }
            Err(error) => tracing::warn!(topic, %error, "cannot drop table"),
        }
    }
    dropped
}

/// Every PARQUET index entry of every partition of `topic` that holds records at or above its
/// partition's log start (a file wholly below it, after retention or DeleteRecords, is no row
/// of the table even while the index keeps its entry as the stream's last key), and what each
/// partition hides from a read_committed consumer.
async fn live_files(
    meta: &Arc<dyn MetaStore>,
    txn_meta: &Arc<dyn MetaStore>,
    topic: &topics::TopicRecord,
) -> Result<(Vec<LiveFile>, BTreeMap<i32, PartitionState>), CompactorError> {
    let mut out = Vec::new();
    let mut states = BTreeMap::new();
    for partition in 0..topic.partitions.max(0) {
        let s = topic.stream_id(partition);
        let log_start = storage::index::Index::new(meta.clone())
            .trim_point(&s)
            .await?;
        states.insert(
            partition,
            partition_state(txn_meta.as_ref(), &s, log_start).await?,
        );
        crate::referenced::visit(meta.as_ref(), &s, |end_offset, entry| {
            if entry.file_type == FileType::Parquet && end_offset > log_start {
                out.push(LiveFile {
                    object_key: entry.object_key,
                    partition,
                    file_size_bytes: u64::from(entry.byte_len),
                });
            }
        })
        .await?;
    }
    Ok((out, states))
}

/// Open or aborted transaction records read for one partition at most: a table commit that
/// would need more fails (and is retried) rather than hold them all in memory.
const TXN_RECORDS_PER_PARTITION_MAX: usize = 100_000;

/// The log start, last stable offset and aborted transactions of `stream`, from the records
/// the broker's transaction coordinator and writers keep (`storage::transactions`). Every open
/// transaction counts: missing one would show its records before it is decided.
async fn partition_state(
    meta: &dyn MetaStore,
    stream: &str,
    log_start: u64,
) -> Result<PartitionState, CompactorError> {
    let (start, end) = transactions::open_range(stream);
    let open: Vec<transactions::OpenTxn> = records(meta, start, &end).await?;
    let last_stable = open
        .iter()
        .map(|t| t.first_offset)
        .min()
        .unwrap_or(u64::MAX);
    let (from, end) = transactions::aborted_range_from(stream, log_start);
    let aborted = records(meta, from, &end).await?;
    Ok(PartitionState {
        log_start,
        last_stable,
        aborted,
    })
}

/// Every record of `[from, end)` decoded as `T`, page by page; more than
/// [`TXN_RECORDS_PER_PARTITION_MAX`] fails (the commit is retried) rather than hold them all.
async fn records<T: serde::de::DeserializeOwned>(
    meta: &dyn MetaStore,
    mut from: String,
    end: &str,
) -> Result<Vec<T>, CompactorError> {
    let mut out = Vec::new();
    loop {
        let page = meta.range_scan(&from, end, None, SCAN_PAGE_RECORDS).await?;
        for r in &page {
            out.push(
                serde_json::from_slice(&r.value)
                    .map_err(|e| CompactorError::Corrupt(format!("{}: {e}", r.key)))?,
            );
        }
        if out.len() > TXN_RECORDS_PER_PARTITION_MAX {
            return Err(CompactorError::Corrupt(format!(
                "more than {TXN_RECORDS_PER_PARTITION_MAX} transaction records under {from}"
            )));
        }
        match page.last() {
            Some(last) if page.len() == SCAN_PAGE_RECORDS => from = format!("{}\u{1}", last.key),
            _ => return Ok(out),
        }
    }
}
