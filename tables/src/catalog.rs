//! Where each table's current metadata file is: one MetaStore record per topic, the only
//! mutable state of a table. A commit is a conditional put of this record, so every broker of a
//! cluster serves the same tables and a commit that lost a race changes nothing.

use bytes::Bytes;
use metastore::{Comparison, Expect, MetaError, MetaStore, PutOptions};
use serde::{Deserialize, Serialize};

use crate::TableError;

const PREFIX: &str = "iceberg/tables/";
/// After every `iceberg/tables/<topic>` in the store's hierarchical key order.
const END: &str = "iceberg/tables//";
const SCAN_PAGE_RECORDS: usize = 1024;

/// The catalog record of one table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TablePointer {
    /// The topic incarnation the table shows (its Kafka topic id): a topic deleted and
    /// created again under the same name starts a new table.
    pub topic_id: String,
    /// Absolute location of the current `*.metadata.json`, as engines open it.
    pub metadata_location: String,
    /// Its key in the object store.
    pub metadata_key: String,
    pub sequence_number: i64,
    pub committed_ms: u64,
    pub data_files: u64,
    /// Rows a query sees: the data files' rows less those position deletes hide.
    pub records: i64,
}

/// A pointer with the record version a commit must expect.
#[derive(Clone, Debug)]
pub struct Versioned {
    pub pointer: TablePointer,
    pub version_id: i64,
}

fn key(topic: &str) -> String {
    format!("{PREFIX}{topic}")
}

pub async fn get(meta: &dyn MetaStore, topic: &str) -> Result<Option<Versioned>, TableError> {
    let Some(record) = meta.get(&key(topic), Comparison::Equal, None).await? else {
        return Ok(None);
    };
    Ok(Some(Versioned {
        pointer: serde_json::from_slice(&record.value)?,
        version_id: record.version.version_id,
    }))
}

/// Every table, by topic name in key order.
pub async fn list(meta: &dyn MetaStore) -> Result<Vec<(String, TablePointer)>, TableError> {
    let mut out = Vec::new();
    let mut start = PREFIX.to_string();
    loop {
        let page = meta
            .range_scan(&start, END, None, SCAN_PAGE_RECORDS)
            .await?;
        let full = page.len() == SCAN_PAGE_RECORDS;
        for record in &page {
            let Some(topic) = record.key.strip_prefix(PREFIX) else {
                continue;
            };
            out.push((topic.to_string(), serde_json::from_slice(&record.value)?));
        }
        match page.last() {
            Some(last) if full => start = format!("{}\u{1}", last.key),
            _ => break,
        }
    }
    Ok(out)
}

/// Points `topic`'s table at a new metadata file if its record is still at `previous`
/// (`None`: must not exist yet).
pub async fn swap(
    meta: &dyn MetaStore,
    topic: &str,
    previous: Option<i64>,
    pointer: &TablePointer,
) -> Result<(), TableError> {
    let options = PutOptions {
        expect: previous.map_or(Expect::NotExists, Expect::Version),
        ..Default::default()
    };
    let value = Bytes::from(serde_json::to_vec(pointer)?);
    match meta.put(&key(topic), value, options).await {
        Ok(_) => Ok(()),
        Err(MetaError::UnexpectedVersion) => Err(TableError::Conflict(topic.to_string())),
        Err(e) => Err(e.into()),
    }
}

/// Removes `topic`'s table from the catalog (its topic is gone or no longer a table).
pub async fn remove(meta: &dyn MetaStore, topic: &str, version_id: i64) -> Result<(), TableError> {
    match meta
        .delete(&key(topic), Expect::Version(version_id), None)
        .await
    {
        Ok(()) | Err(MetaError::KeyNotFound) => Ok(()),
        Err(MetaError::UnexpectedVersion) => Err(TableError::Conflict(topic.to_string())),
        Err(e) => Err(e.into()),
    }
}
