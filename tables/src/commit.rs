//! The commit: make a table's current snapshot hold exactly the Parquet files a topic's index
//! holds. It compares sets, so it is idempotent and self-healing: a crash before the pointer
//! swap leaves the previous snapshot current and the next pass commits the same difference; a
//! file is never listed twice; a file leaves the table (a new snapshot that expires every older
//! one) before the compactor may delete it (`TableStore::referenced_keys`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;
use metastore::MetaStore;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde_json::json;
use storage::compacted::{Footer, ParsedTail, FOOTER_PREFETCH_BYTES};

use crate::catalog::{self, TablePointer, Versioned};
use crate::manifest::{self, Counts, DataFile, Entry, ManifestFile, ManifestHeader, Status};
use crate::metadata::{MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotRef, TableMetadata};
use crate::schema::{self, PARTITION_FIELD_ID, PARTITION_SPEC_FIELD_ID, SCHEMA_ID};
use crate::TableError;

/// Metadata versions (metadata file, manifest list, manifest) kept for engines that opened an
/// older one and for time travel; older ones are deleted after a commit.
pub const METADATA_VERSIONS_KEPT: i64 = 10;
/// A metadata object above the current version (a commit that lost its race or crashed) is
/// deleted once it is this old: no commit takes that long.
const ABANDONED_AFTER_MS: u64 = 3_600_000;

/// One Parquet file a topic's index holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveFile {
    pub object_key: String,
    pub partition: i32,
    pub file_size_bytes: u64,
}

/// What a sync did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Synced {
    Unchanged,
    Committed {
        sequence_number: i64,
        added: usize,
        removed: usize,
    },
}

/// The tables of one object store, with their catalog records in one MetaStore.
#[derive(Clone)]
pub struct TableStore {
    pub objects: Arc<dyn ObjectStore>,
    pub meta: Arc<dyn MetaStore>,
    /// Absolute URL of the object store's root (`file:///…`, `s3://bucket/prefix`).
    pub base_url: String,
}

/// A table as loaded: its catalog record and current metadata.
pub struct Loaded {
    pub versioned: Versioned,
    pub metadata: TableMetadata,
    /// The metadata file as stored, for catalogs that serve it unchanged.
    pub metadata_json: serde_json::Value,
}

impl TableStore {
    /// The root every location starts with: the base URL and one '/' (`memory://` has it).
    fn root(&self) -> String {
        if self.base_url.ends_with('/') {
            self.base_url.clone()
        } else {
            format!("{}/", self.base_url)
        }
    }

    pub fn location(&self, object_key: &str) -> String {
        format!("{}{object_key}", self.root())
    }

    fn object_key<'p>(&self, location: &'p str) -> Option<&'p str> {
        location.strip_prefix(&self.root())
    }

    pub async fn load(&self, topic: &str) -> Result<Option<Loaded>, TableError> {
        let Some(versioned) = catalog::get(self.meta.as_ref(), topic).await? else {
            return Ok(None);
        };
        let bytes = self.read(&versioned.pointer.metadata_key).await?;
        let metadata_json: serde_json::Value = serde_json::from_slice(&bytes)?;
        let metadata = serde_json::from_value(metadata_json.clone())?;
        Ok(Some(Loaded {
            versioned,
            metadata,
            metadata_json,
        }))
    }

    /// The live entries (not DELETED) of the current snapshot.
    pub async fn live_entries(&self, metadata: &TableMetadata) -> Result<Vec<Entry>, TableError> {
        let Some(snapshot) = metadata.current_snapshot() else {
            return Ok(Vec::new());
        };
        let list_key = self.key_of(&snapshot.manifest_list)?;
        let mut out = Vec::new();
        for manifest_path in manifest::read_manifest_list(&self.read(&list_key).await?)? {
            let key = self.key_of(&manifest_path)?;
            let entries = manifest::read_manifest(&self.read(&key).await?)?;
            out.extend(entries.into_iter().filter(|e| e.status != Status::Deleted));
        }
        Ok(out)
    }

    /// Object keys of every data file a current snapshot of any table references: the files
    /// the compactor must not delete.
    pub async fn referenced_keys(&self) -> Result<HashSet<String>, TableError> {
        let mut keys = HashSet::new();
        for (topic, _) in catalog::list(self.meta.as_ref()).await? {
            let Some(loaded) = self.load(&topic).await? else {
                continue;
            };
            for e in self.live_entries(&loaded.metadata).await? {
                if let Some(key) = self.object_key(&e.file.path) {
                    keys.insert(key.to_string());
                }
            }
        }
        Ok(keys)
    }

    /// Commits `live` as the current snapshot of `topic`'s table if it differs from it,
    /// creating the table on first call. `topic_id` is the topic's Kafka id.
    pub async fn sync(
        &self,
        topic: &str,
        topic_id: &str,
        live: &[LiveFile],
        now_ms: u64,
    ) -> Result<Synced, TableError> {
        let current = match self.load(topic).await? {
            Some(loaded) if loaded.versioned.pointer.topic_id == topic_id => Some(loaded),
            // Another incarnation of the topic: its table is replaced whole.
            Some(loaded) => {
                catalog::remove(self.meta.as_ref(), topic, loaded.versioned.version_id).await?;
                None
            }
            None => None,
        };
        let previous = match &current {
            Some(loaded) => self.live_entries(&loaded.metadata).await?,
            None => Vec::new(),
        };
        let before: HashMap<&str, &Entry> =
            previous.iter().map(|e| (e.file.path.as_str(), e)).collect();
        let wanted: HashMap<String, &LiveFile> = live
            .iter()
            .map(|f| (self.location(&f.object_key), f))
            .collect();
        let removed: Vec<&Entry> = previous
            .iter()
            .filter(|e| !wanted.contains_key(&e.file.path))
            .collect();
        let mut added = Vec::new();
        for (path, f) in &wanted {
            if !before.contains_key(path.as_str()) {
                added.push(self.data_file(path, f).await?);
            }
        }
        if current.is_some() && added.is_empty() && removed.is_empty() {
            return Ok(Synced::Unchanged);
        }
        added.sort_by(|a, b| a.path.cmp(&b.path));
        let plan = Plan {
            topic,
            topic_id,
            kept: previous
                .iter()
                .filter(|e| wanted.contains_key(&e.file.path))
                .collect(),
            added,
            removed,
            now_ms,
        };
        self.commit(current.as_ref(), plan).await
    }

    async fn data_file(&self, path: &str, f: &LiveFile) -> Result<DataFile, TableError> {
        let rows = self.row_count(&f.object_key, f.file_size_bytes).await?;
        Ok(DataFile {
            path: path.to_string(),
            partition: f.partition,
            record_count: rows,
            file_size_bytes: i64::try_from(f.file_size_bytes)
                .map_err(|_| TableError::Corrupt(format!("{}: size", f.object_key)))?,
        })
    }

    /// Rows of a compacted file, from its footer (one ranged GET, two for a large footer).
    async fn row_count(&self, object_key: &str, file_len: u64) -> Result<i64, TableError> {
        let path = Path::from(object_key);
        let mut tail_len = FOOTER_PREFETCH_BYTES.min(file_len);
        for _ in 0..2 {
            let tail = self
                .objects
                .get_range(&path, file_len - tail_len..file_len)
                .await?;
            match Footer::parse(&tail, file_len).map_err(|e| TableError::Corrupt(e.to_string()))? {
                ParsedTail::Footer(footer) => {
                    let rows: usize = footer.groups.iter().map(|g| g.rows).sum();
                    return i64::try_from(rows)
                        .map_err(|_| TableError::Corrupt(format!("{object_key}: rows")));
                }
                ParsedTail::NeedTailBytes(n) => tail_len = n.min(file_len),
            }
        }
        Err(TableError::Corrupt(format!("{object_key}: footer")))
    }

    async fn read(&self, key: &str) -> Result<bytes::Bytes, TableError> {
        Ok(self.objects.get(&Path::from(key)).await?.bytes().await?)
    }

    async fn write(&self, key: &str, bytes: Vec<u8>) -> Result<(), TableError> {
        self.objects
            .put(&Path::from(key), PutPayload::from(bytes))
            .await?;
        Ok(())
    }

    fn key_of(&self, location: &str) -> Result<String, TableError> {
        self.object_key(location)
            .map(str::to_string)
            .ok_or_else(|| TableError::Corrupt(format!("{location} is outside {}", self.base_url)))
    }
}

/// The difference one commit applies.
struct Plan<'a> {
    topic: &'a str,
    topic_id: &'a str,
    kept: Vec<&'a Entry>,
    added: Vec<DataFile>,
    removed: Vec<&'a Entry>,
    now_ms: u64,
}

impl TableStore {
    async fn commit(&self, current: Option<&Loaded>, plan: Plan<'_>) -> Result<Synced, TableError> {
        let sequence_number = current.map_or(0, |c| c.metadata.last_sequence_number) + 1;
        let snapshot_id = new_snapshot_id();
        let folder = format!("tables/{}/metadata", plan.topic_id);
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let (schema, last_column_id) = schema::table_schema()?;
        let spec_fields = json!([{
            "name": "partition", "transform": "identity",
            "source-id": PARTITION_FIELD_ID, "field-id": PARTITION_SPEC_FIELD_ID,
        }]);
        let entries = manifest_entries(&plan, snapshot_id, sequence_number);
        let header = ManifestHeader {
            schema_json: &schema.to_string(),
            partition_spec_json: &spec_fields.to_string(),
        };
        let manifest_key = format!("{folder}/{sequence_number:05}-{nonce}-m0.avro");
        let manifest_bytes = manifest::write_manifest(&header, &entries)?;
        let manifest_len = i64::try_from(manifest_bytes.len()).unwrap_or(i64::MAX);
        self.write(&manifest_key, manifest_bytes).await?;
        let counts = counts(&entries);
        let live: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.status != Status::Deleted)
            .collect();
        let bounds = live
            .iter()
            .map(|e| e.file.partition)
            .min()
            .zip(live.iter().map(|e| e.file.partition).max());
        let manifests = vec![ManifestFile {
            path: self.location(&manifest_key),
            length_bytes: manifest_len,
            sequence_number,
            min_sequence_number: entries
                .iter()
                .map(|e| e.sequence_number)
                .min()
                .unwrap_or(sequence_number),
            added_snapshot_id: snapshot_id,
            counts,
            partition_bounds: bounds,
        }];
        let parent = current.and_then(|c| c.metadata.current_snapshot_id);
        let list_key = format!("{folder}/{sequence_number:05}-snap-{snapshot_id}-{nonce}.avro");
        let list = manifest::write_manifest_list(snapshot_id, parent, sequence_number, &manifests)?;
        self.write(&list_key, list).await?;
        let records: i64 = live.iter().map(|e| e.file.record_count).sum();
        let snapshot = Snapshot {
            snapshot_id,
            parent_snapshot_id: parent,
            sequence_number,
            timestamp_ms: ms(plan.now_ms),
            manifest_list: self.location(&list_key),
            summary: summary(&plan, &counts, live.len(), records),
            schema_id: SCHEMA_ID,
        };
        let metadata = self.next_metadata(
            current,
            &plan,
            snapshot,
            schema,
            last_column_id,
            spec_fields,
        )?;
        let metadata_key = format!("{folder}/{sequence_number:05}-{nonce}.metadata.json");
        self.write(&metadata_key, serde_json::to_vec(&metadata)?)
            .await?;
        let pointer = TablePointer {
            topic_id: plan.topic_id.to_string(),
            metadata_location: self.location(&metadata_key),
            metadata_key,
            sequence_number,
            committed_ms: plan.now_ms,
            data_files: live.len() as u64,
            records,
        };
        let previous_version = current.map(|c| c.versioned.version_id);
        catalog::swap(self.meta.as_ref(), plan.topic, previous_version, &pointer).await?;
        tracing::info!(
            topic = plan.topic,
            sequence_number,
            files_added = plan.added.len(),
            files_removed = plan.removed.len(),
            data_files = live.len(),
            "committed table snapshot"
        );
        if let Err(error) = self
            .collect_garbage(&folder, sequence_number, plan.now_ms)
            .await
        {
            tracing::warn!(topic = plan.topic, %error, "cannot delete old table metadata");
        }
        Ok(Synced::Committed {
            sequence_number,
            added: plan.added.len(),
            removed: plan.removed.len(),
        })
    }

    fn next_metadata(
        &self,
        current: Option<&Loaded>,
        plan: &Plan<'_>,
        snapshot: Snapshot,
        schema: serde_json::Value,
        last_column_id: i32,
        spec_fields: serde_json::Value,
    ) -> Result<TableMetadata, TableError> {
        let now_ms = ms(plan.now_ms);
        let mut properties = BTreeMap::new();
        properties.insert("kafka.topic".to_string(), plan.topic.to_string());
        properties.insert("kafka.topic-id".to_string(), plan.topic_id.to_string());
        properties.insert(
            "schema.name-mapping.default".to_string(),
            schema::name_mapping(&schema).to_string(),
        );
        let kept_from = snapshot.sequence_number - METADATA_VERSIONS_KEPT + 1;
        // A commit that removes files expires every older snapshot: they list those files,
        // which the compactor may delete once this commit is current.
        let (mut snapshots, mut snapshot_log, mut metadata_log) = match current {
            Some(c) if plan.removed.is_empty() => (
                c.metadata.snapshots.clone(),
                c.metadata.snapshot_log.clone(),
                c.metadata.metadata_log.clone(),
            ),
            Some(c) => (Vec::new(), Vec::new(), c.metadata.metadata_log.clone()),
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        snapshots.retain(|s| s.sequence_number >= kept_from);
        let retained: HashSet<i64> = snapshots.iter().map(|s| s.snapshot_id).collect();
        snapshot_log.retain(|l| retained.contains(&l.snapshot_id));
        snapshot_log.push(SnapshotLogEntry {
            timestamp_ms: snapshot.timestamp_ms,
            snapshot_id: snapshot.snapshot_id,
        });
        if let Some(c) = current {
            metadata_log.push(MetadataLogEntry {
                timestamp_ms: c.metadata.last_updated_ms,
                metadata_file: c.versioned.pointer.metadata_location.clone(),
            });
        }
        let skip = metadata_log
            .len()
            .saturating_sub(usize::try_from(METADATA_VERSIONS_KEPT - 1).unwrap_or(0));
        metadata_log.drain(..skip);
        let snapshot_id = snapshot.snapshot_id;
        snapshots.push(snapshot);
        let mut refs = BTreeMap::new();
        refs.insert(
            "main".to_string(),
            SnapshotRef {
                snapshot_id,
                kind: "branch".into(),
            },
        );
        Ok(TableMetadata {
            format_version: 2,
            table_uuid: table_uuid(plan.topic_id),
            location: self.location(&format!("tables/{}", plan.topic_id)),
            last_sequence_number: snapshots.last().map_or(0, |s| s.sequence_number),
            last_updated_ms: now_ms,
            last_column_id,
            current_schema_id: SCHEMA_ID,
            schemas: vec![schema],
            default_spec_id: 0,
            partition_specs: vec![json!({"spec-id": 0, "fields": spec_fields})],
            last_partition_id: PARTITION_SPEC_FIELD_ID,
            default_sort_order_id: 0,
            sort_orders: vec![json!({"order-id": 0, "fields": []})],
            properties,
            current_snapshot_id: Some(snapshot_id),
            refs,
            snapshots,
            snapshot_log,
            metadata_log,
        })
    }

    /// Deletes metadata objects of versions no kept metadata can reach, and abandoned ones.
    async fn collect_garbage(
        &self,
        folder: &str,
        current: i64,
        now_ms: u64,
    ) -> Result<(), TableError> {
        let objects: Vec<_> = self
            .objects
            .list(Some(&Path::from(folder)))
            .try_collect()
            .await?;
        for meta in objects {
            let name = meta.location.filename().unwrap_or_default();
            let Some(version) = name.get(..5).and_then(|v| v.parse::<i64>().ok()) else {
                continue;
            };
            let modified_ms = u64::try_from(meta.last_modified.timestamp_millis()).unwrap_or(0);
            let expired = version + METADATA_VERSIONS_KEPT <= current;
            let abandoned =
                version > current && now_ms.saturating_sub(modified_ms) >= ABANDONED_AFTER_MS;
            if expired || abandoned {
                match self.objects.delete(&meta.location).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }
}

/// The new manifest: kept files as EXISTING with their original sequence numbers, new files
/// ADDED, removed files DELETED (for incremental readers; the next commit drops them).
fn manifest_entries(plan: &Plan<'_>, snapshot_id: i64, sequence_number: i64) -> Vec<Entry> {
    let mut entries: Vec<Entry> = plan
        .kept
        .iter()
        .map(|e| Entry {
            status: Status::Existing,
            ..(*e).clone()
        })
        .collect();
    entries.extend(plan.added.iter().map(|file| Entry {
        status: Status::Added,
        snapshot_id,
        sequence_number,
        file_sequence_number: sequence_number,
        file: file.clone(),
    }));
    entries.extend(plan.removed.iter().map(|e| Entry {
        status: Status::Deleted,
        snapshot_id,
        ..(*e).clone()
    }));
    entries
}

fn counts(entries: &[Entry]) -> Counts {
    let mut c = Counts::default();
    for e in entries {
        let rows = e.file.record_count;
        match e.status {
            Status::Added => (c.added_files += 1, c.added_rows += rows),
            Status::Existing => (c.existing_files += 1, c.existing_rows += rows),
            Status::Deleted => (c.deleted_files += 1, c.deleted_rows += rows),
        };
    }
    c
}

fn summary(plan: &Plan<'_>, c: &Counts, files: usize, records: i64) -> BTreeMap<String, String> {
    let operation = match (plan.added.is_empty(), plan.removed.is_empty()) {
        (_, true) => "append",
        (true, false) => "delete",
        (false, false) => "overwrite",
    };
    BTreeMap::from([
        ("operation".to_string(), operation.to_string()),
        ("added-data-files".to_string(), c.added_files.to_string()),
        (
            "deleted-data-files".to_string(),
            c.deleted_files.to_string(),
        ),
        ("added-records".to_string(), c.added_rows.to_string()),
        ("deleted-records".to_string(), c.deleted_rows.to_string()),
        ("total-data-files".to_string(), files.to_string()),
        ("total-records".to_string(), records.to_string()),
        ("total-delete-files".to_string(), "0".to_string()),
        ("total-position-deletes".to_string(), "0".to_string()),
        ("total-equality-deletes".to_string(), "0".to_string()),
    ])
}

/// A positive random snapshot id (Iceberg's are positive longs).
fn new_snapshot_id() -> i64 {
    let (high, _) = uuid::Uuid::new_v4().as_u64_pair();
    i64::try_from(high >> 1).unwrap_or(1).max(1)
}

/// The table's UUID is the topic's id: stable, and one table per topic incarnation.
fn table_uuid(topic_id: &str) -> String {
    uuid::Uuid::try_parse(topic_id)
        .map_or_else(|_| topic_id.to_string(), |u| u.hyphenated().to_string())
}

fn ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}
