//! The table invariants, checked against the shared stores as they are (no faults): the
//! simulated streams are the partitions of a topic with `iceberg.enable`, so every compactor
//! pass commits its table while processes crash and calls fail. At any time the current
//! snapshot lists each file once and only files that exist (the sweep never deletes a file a
//! table lists); once healed, it lists exactly the index's Parquet files above the log start.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use metastore::{MetaStore, PutOptions};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use storage::topics::{self, TopicRecord};
use storage::{stream, FileType, IndexEntry};
use tables::manifest::Content;
use tables::TableStore;

pub const TOPIC: &str = "sim";
/// The topic id whose partitions' stream ids the model uses (`{:032x}-{i}` of 0xabcd).
const TOPIC_ID: u128 = 0xabcd;

/// Writes the topic record that makes the model's streams one table's partitions.
pub async fn create_topic(meta: &Arc<dyn MetaStore>, partitions: usize, now_ms: u64) {
    let record = TopicRecord {
        id: uuid::Uuid::from_u128(TOPIC_ID),
        partitions: i32::try_from(partitions).unwrap(),
        configs: BTreeMap::from([("iceberg.enable".to_string(), "true".to_string())]),
        created_ms: now_ms,
    };
    meta.put(
        &topics::topic_key(TOPIC),
        topics::encode(&record),
        PutOptions::default(),
    )
    .await
    .unwrap();
}

fn table_store(objects: &Arc<dyn ObjectStore>, meta: &Arc<dyn MetaStore>) -> TableStore {
    TableStore::new(objects.clone(), meta.clone(), "memory://".into())
}

/// Data files of the current snapshot (object keys), each listed once and existing.
pub async fn check_listed(
    objects: &Arc<dyn ObjectStore>,
    meta: &Arc<dyn MetaStore>,
) -> Result<BTreeSet<String>, String> {
    let tables = table_store(objects, meta);
    let Some(loaded) = tables.load(TOPIC).await.map_err(|e| e.to_string())? else {
        return Ok(BTreeSet::new());
    };
    let entries = tables
        .live_entries(&loaded.metadata)
        .await
        .map_err(|e| format!("table unreadable: {e}"))?;
    let mut listed = BTreeSet::new();
    for e in entries.iter().filter(|e| e.file.content == Content::Data) {
        let key = e.file.path.strip_prefix("memory://").unwrap().to_string();
        if objects.head(&Path::from(key.as_str())).await.is_err() {
            return Err(format!("the table lists {key}, which is gone"));
        }
        if !listed.insert(key.clone()) {
            return Err(format!("the table lists {key} twice"));
        }
    }
    Ok(listed)
}

/// The index's Parquet files at or above each stream's log start.
pub async fn indexed(meta: &Arc<dyn MetaStore>, streams: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for s in streams {
        let trim = storage::index::Index::new(meta.clone())
            .trim_point(s)
            .await
            .unwrap();
        let page = meta
            .range_scan(
                &stream::index_range_start(s),
                &stream::index_range_end(s),
                Some(s),
                100_000,
            )
            .await
            .unwrap();
        for r in page {
            let entry = IndexEntry::decode(&r.value).unwrap();
            let (end, _) = stream::parse_index_key(s, &r.key).unwrap();
            if entry.file_type == FileType::Parquet && end > trim {
                out.insert(entry.object_key);
            }
        }
    }
    out
}
