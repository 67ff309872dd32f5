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
use serde_json::{json, Value};
use storage::compacted::{FileStats, Footer, ParsedTail, FOOTER_PREFETCH_BYTES};

use crate::catalog::{self, TablePointer, Versioned};
use crate::deletes::{self, PartitionState};
use crate::manifest::{
    self, Bounds, Content, Counts, DataFile, Entry, ManifestFile, ManifestHeader, Status,
};
use crate::metadata::{MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotRef, TableMetadata};
use crate::schema::{self, PARTITION_FIELD_ID, PARTITION_SPEC_FIELD_ID, SCHEMA_ID};
use crate::{typed, TableError};

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

/// Digests of delete files found to hide nothing remembered at most (see
/// `TableStore::remember_empty`).
const EMPTY_DELETES_MAX: usize = 100_000;

/// The tables of one object store, with their catalog records in one MetaStore.
#[derive(Clone)]
pub struct TableStore {
    pub objects: Arc<dyn ObjectStore>,
    pub meta: Arc<dyn MetaStore>,
    /// Absolute URL of the object store's root (`file:///…`, `s3://bucket/prefix`).
    pub base_url: String,
    empty_deletes: Arc<std::sync::Mutex<HashSet<String>>>,
}

/// A table as loaded: its catalog record and current metadata.
pub struct Loaded {
    pub versioned: Versioned,
    pub metadata: TableMetadata,
    /// The metadata file as stored, for catalogs that serve it unchanged.
    pub metadata_json: serde_json::Value,
}

impl TableStore {
    pub fn new(objects: Arc<dyn ObjectStore>, meta: Arc<dyn MetaStore>, base_url: String) -> Self {
        TableStore {
            objects,
            meta,
            base_url,
            empty_deletes: Arc::default(),
        }
    }

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
            let entries = self.live_entries(&loaded.metadata).await?;
            for e in entries.iter().filter(|e| e.file.content == Content::Data) {
                if let Some(key) = self.object_key(&e.file.path) {
                    keys.insert(key.to_string());
                }
            }
        }
        Ok(keys)
    }

    /// Commits `live` as the current snapshot of `topic`'s table if it differs from it,
    /// creating the table on first call, with the position deletes that hide what `states`
    /// (by partition) hides from a read_committed consumer. `topic_id` is the topic's Kafka id.
    pub async fn sync(
        &self,
        topic: &str,
        topic_id: &str,
        live: &[LiveFile],
        states: &BTreeMap<i32, PartitionState>,
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
        let (data, deletes) = self.plan_data(&previous, live).await?;
        let deletes = self.plan_deletes(topic_id, &data, deletes, states).await?;
        if current.is_some() && data.is_unchanged() && deletes.is_unchanged() {
            return Ok(Synced::Unchanged);
        }
        let plan = Plan {
            topic,
            topic_id,
            data,
            deletes,
            now_ms,
        };
        self.commit(current.as_ref(), plan).await
    }

    /// The data files to keep, add and remove.
    async fn plan_data<'p>(
        &self,
        previous: &'p [Entry],
        live: &[LiveFile],
    ) -> Result<(Diff<'p>, Vec<&'p Entry>), TableError> {
        let wanted: HashMap<String, &LiveFile> = live
            .iter()
            .map(|f| (self.location(&f.object_key), f))
            .collect();
        let (mut diff, mut deletes) = (Diff::default(), Vec::new());
        let mut listed = HashSet::new();
        for e in previous {
            if e.file.content == Content::PositionDeletes {
                deletes.push(e);
            } else if wanted.contains_key(&e.file.path) && listed.insert(e.file.path.as_str()) {
                diff.kept.push(e);
            } else {
                diff.removed.push(e);
            }
        }
        for (path, f) in &wanted {
            if !listed.contains(path.as_str()) {
                diff.added.push(self.data_file(path, f).await?);
            }
        }
        diff.added.sort_by(|a, b| a.path.cmp(&b.path));
        debug_assert!(
            {
                let paths = diff
                    .kept
                    .iter()
                    .map(|e| &e.file.path)
                    .chain(diff.added.iter().map(|f| &f.path));
                let all: Vec<&String> = paths.collect();
                all.iter().collect::<HashSet<_>>().len() == all.len()
            },
            "a data file is listed once"
        );
        Ok((diff, deletes))
    }

    /// The position delete files the kept and added data files need under `states`: an
    /// existing one of the same digest is kept; another is made by reading the data file.
    async fn plan_deletes<'p>(
        &self,
        topic_id: &str,
        data: &Diff<'p>,
        mut existing: Vec<&'p Entry>,
        states: &BTreeMap<i32, PartitionState>,
    ) -> Result<Diff<'p>, TableError> {
        let default_state = PartitionState {
            log_start: 0,
            last_stable: u64::MAX,
            aborted: Vec::new(),
        };
        let mut diff = Diff::default();
        let files = data.kept.iter().map(|e| &e.file).chain(data.added.iter());
        for file in files {
            let state = states.get(&file.partition).unwrap_or(&default_state);
            if !deletes::may_hide(file.bounds, state) {
                continue;
            }
            let digest = deletes::digest(&file.path, file.bounds, state);
            let key = format!("tables/{topic_id}/deletes/{digest}.parquet");
            let path = self.location(&key);
            if let Some(i) = existing.iter().position(|e| e.file.path == path) {
                diff.kept.push(existing.swap_remove(i));
                continue;
            }
            if self.known_empty(&digest) {
                continue;
            }
            let data_key = self.key_of(&file.path)?;
            let positions = deletes::hidden_positions(&self.objects, &data_key, state).await?;
            if positions.is_empty() {
                self.remember_empty(digest);
                continue;
            }
            let bytes = deletes::write_delete_file(&file.path, &positions)?;
            let size = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
            self.write(&key, bytes).await?;
            diff.added.push(DataFile {
                content: Content::PositionDeletes,
                path,
                partition: file.partition,
                record_count: i64::try_from(positions.len()).unwrap_or(i64::MAX),
                file_size_bytes: size,
                bounds: None,
            });
        }
        diff.removed = existing;
        Ok(diff)
    }

    fn known_empty(&self, digest: &str) -> bool {
        self.empty_deletes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(digest)
    }

    /// Remembers that the file and state of `digest` hide nothing, so that the file is not
    /// read again each pass; the memory holds [`EMPTY_DELETES_MAX`] digests at most.
    fn remember_empty(&self, digest: String) {
        let mut known = self
            .empty_deletes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if known.len() >= EMPTY_DELETES_MAX {
            known.clear();
        }
        known.insert(digest);
    }

    async fn data_file(&self, path: &str, f: &LiveFile) -> Result<DataFile, TableError> {
        let stats = self.file_stats(&f.object_key, f.file_size_bytes).await?;
        let long = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        Ok(DataFile {
            content: Content::Data,
            path: path.to_string(),
            partition: f.partition,
            record_count: long(stats.rows),
            file_size_bytes: long(f.file_size_bytes),
            bounds: stats.offsets.map(|(low, high)| Bounds {
                offsets: (long(low), long(high)),
                transactional: stats.transactional,
                control: stats.control,
            }),
        })
    }

    /// A compacted file's row count and bounds, from its footer (one ranged GET, two for a
    /// large footer).
    async fn file_stats(&self, object_key: &str, file_len: u64) -> Result<FileStats, TableError> {
        let path = Path::from(object_key);
        let mut tail_len = FOOTER_PREFETCH_BYTES.min(file_len);
        for _ in 0..2 {
            let tail = self
                .objects
                .get_range(&path, file_len - tail_len..file_len)
                .await?;
            match Footer::parse(&tail, file_len).map_err(|e| TableError::Corrupt(e.to_string()))? {
                ParsedTail::Footer(footer) => return Ok(footer.stats()),
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

/// What a commit keeps, adds and removes of one kind of file.
#[derive(Default)]
struct Diff<'a> {
    kept: Vec<&'a Entry>,
    added: Vec<DataFile>,
    removed: Vec<&'a Entry>,
}

impl Diff<'_> {
    fn is_unchanged(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

/// The difference one commit applies.
struct Plan<'a> {
    topic: &'a str,
    topic_id: &'a str,
    data: Diff<'a>,
    deletes: Diff<'a>,
    now_ms: u64,
}

impl Plan<'_> {
    fn removes(&self) -> bool {
        !self.data.removed.is_empty() || !self.deletes.removed.is_empty()
    }
}

/// Names and numbers of the snapshot a commit writes.
struct Version {
    /// `tables/<topic id>/metadata/<sequence number>-<nonce>`: every object of the commit starts
    /// with it, so a commit that lost a race never overwrites the winner's.
    prefix: String,
    snapshot_id: i64,
    sequence_number: i64,
}

/// A manifest written for a commit, and its entries.
struct Written {
    file: ManifestFile,
    entries: Vec<Entry>,
}

impl TableStore {
    async fn write_manifest(
        &self,
        key: &str,
        header: &ManifestHeader<'_>,
        content: Content,
        entries: Vec<Entry>,
        snapshot_id: i64,
        sequence_number: i64,
    ) -> Result<Written, TableError> {
        let bytes = manifest::write_manifest(header, content, &entries)?;
        let length_bytes = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
        self.write(key, bytes).await?;
        let live = entries.iter().filter(|e| e.status != Status::Deleted);
        let partitions: Vec<i32> = live.map(|e| e.file.partition).collect();
        let partition_bounds = partitions
            .iter()
            .min()
            .copied()
            .zip(partitions.iter().max().copied());
        let file = ManifestFile {
            content,
            path: self.location(key),
            length_bytes,
            sequence_number,
            min_sequence_number: entries
                .iter()
                .map(|e| e.sequence_number)
                .min()
                .unwrap_or(sequence_number),
            added_snapshot_id: snapshot_id,
            counts: counts(&entries),
            partition_bounds,
        };
        Ok(Written { file, entries })
    }

    /// The data manifest, and the delete manifest when there are delete files.
    async fn write_manifests(
        &self,
        plan: &Plan<'_>,
        v: &Version,
        header: &ManifestHeader<'_>,
    ) -> Result<Vec<Written>, TableError> {
        let (id, seq) = (v.snapshot_id, v.sequence_number);
        let data = manifest_entries(&plan.data, id, seq);
        let key = format!("{}-m0.avro", v.prefix);
        let mut manifests = vec![
            self.write_manifest(&key, header, Content::Data, data, id, seq)
                .await?,
        ];
        let deletes = manifest_entries(&plan.deletes, id, seq);
        if !deletes.is_empty() {
            let key = format!("{}-m1.avro", v.prefix);
            let content = Content::PositionDeletes;
            manifests.push(
                self.write_manifest(&key, header, content, deletes, id, seq)
                    .await?,
            );
        }
        Ok(manifests)
    }

    async fn commit(&self, current: Option<&Loaded>, plan: Plan<'_>) -> Result<Synced, TableError> {
        let started = std::time::Instant::now();
        let sequence_number = current.map_or(0, |c| c.metadata.last_sequence_number) + 1;
        let snapshot_id = new_snapshot_id();
        let folder = format!("tables/{}/metadata", plan.topic_id);
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let typed = typed::load(self.meta.as_ref(), plan.topic_id).await?;
        let (schema, last_column_id) = schema::table_schema(typed.as_ref().map(|(c, _)| c))?;
        let (schema, schemas, schema_id) = evolve(current, schema);
        let spec_fields = json!([{
            "name": "partition", "transform": "identity",
            "source-id": PARTITION_FIELD_ID, "field-id": PARTITION_SPEC_FIELD_ID,
        }]);
        let header = ManifestHeader {
            schema_json: &schema.to_string(),
            partition_spec_json: &spec_fields.to_string(),
        };
        let version = Version {
            prefix: format!("{folder}/{sequence_number:05}-{nonce}"),
            snapshot_id,
            sequence_number,
        };
        let manifests = self.write_manifests(&plan, &version, &header).await?;
        crate::crash_point("table-manifests-written");
        let parent = current.and_then(|c| c.metadata.current_snapshot_id);
        let list_key = format!("{folder}/{sequence_number:05}-snap-{snapshot_id}-{nonce}.avro");
        let files: Vec<ManifestFile> = manifests.iter().map(|m| m.file.clone()).collect();
        let list = manifest::write_manifest_list(snapshot_id, parent, sequence_number, &files)?;
        self.write(&list_key, list).await?;
        crate::crash_point("table-manifest-list-written");
        let totals = Totals::of(&manifests);
        let snapshot = Snapshot {
            snapshot_id,
            parent_snapshot_id: parent,
            sequence_number,
            timestamp_ms: ms(plan.now_ms),
            manifest_list: self.location(&list_key),
            summary: summary(&plan, &manifests, &totals),
            schema_id,
        };
        let metadata = self.next_metadata(
            current,
            &plan,
            snapshot,
            (schema, schemas),
            last_column_id,
            spec_fields,
        )?;
        let metadata_key = format!("{folder}/{sequence_number:05}-{nonce}.metadata.json");
        self.write(&metadata_key, serde_json::to_vec(&metadata)?)
            .await?;
        crate::crash_point("table-metadata-written");
        let pointer = TablePointer {
            topic_id: plan.topic_id.to_string(),
            metadata_location: self.location(&metadata_key),
            metadata_key,
            sequence_number,
            committed_ms: plan.now_ms,
            data_files: totals.data_files,
            records: totals.records - totals.position_deletes,
        };
        let previous_version = current.map(|c| c.versioned.version_id);
        catalog::swap(self.meta.as_ref(), plan.topic, previous_version, &pointer).await?;
        crate::crash_point("table-pointer-swapped");
        tracing::info!(
            topic = plan.topic,
            sequence_number,
            files_added = plan.data.added.len(),
            files_removed = plan.data.removed.len(),
            deletes_added = plan.deletes.added.len(),
            deletes_removed = plan.deletes.removed.len(),
            data_files = totals.data_files,
            took_ms = started.elapsed().as_millis(),
            "committed table snapshot"
        );
        let live_deletes: HashSet<String> = manifests
            .iter()
            .flat_map(|m| &m.entries)
            .filter(|e| e.file.content == Content::PositionDeletes && e.status != Status::Deleted)
            .map(|e| e.file.path.clone())
            .collect();
        if let Err(error) = self
            .collect_garbage(plan.topic_id, sequence_number, &live_deletes, plan.now_ms)
            .await
        {
            tracing::warn!(topic = plan.topic, %error, "cannot delete old table metadata");
        }
        Ok(Synced::Committed {
            sequence_number,
            added: plan.data.added.len(),
            removed: plan.data.removed.len(),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn next_metadata(
        &self,
        current: Option<&Loaded>,
        plan: &Plan<'_>,
        snapshot: Snapshot,
        (schema, schemas): (serde_json::Value, Vec<serde_json::Value>),
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
            Some(c) if !plan.removes() => (
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
            last_column_id: current.map_or(last_column_id, |c| {
                c.metadata.last_column_id.max(last_column_id)
            }),
            current_schema_id: schema["schema-id"]
                .as_i64()
                .and_then(|id| i32::try_from(id).ok())
                .unwrap_or(SCHEMA_ID),
            schemas,
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

    /// Deletes metadata objects of versions no kept metadata can reach, abandoned ones, and
    /// delete files the current snapshot no longer lists (once engines that opened an older
    /// snapshot are done with them).
    async fn collect_garbage(
        &self,
        topic_id: &str,
        current: i64,
        live_deletes: &HashSet<String>,
        now_ms: u64,
    ) -> Result<(), TableError> {
        let age_ms = |meta: &object_store::ObjectMeta| {
            let modified_ms = u64::try_from(meta.last_modified.timestamp_millis()).unwrap_or(0);
            now_ms.saturating_sub(modified_ms)
        };
        let folder = Path::from(format!("tables/{topic_id}/metadata"));
        let objects: Vec<_> = self.objects.list(Some(&folder)).try_collect().await?;
        for meta in objects {
            let name = meta.location.filename().unwrap_or_default();
            let Some(version) = name.get(..5).and_then(|v| v.parse::<i64>().ok()) else {
                continue;
            };
            let expired = version + METADATA_VERSIONS_KEPT <= current;
            let abandoned = version > current && age_ms(&meta) >= ABANDONED_AFTER_MS;
            if expired || abandoned {
                self.delete(&meta.location).await?;
            }
        }
        let folder = Path::from(format!("tables/{topic_id}/deletes"));
        let objects: Vec<_> = self.objects.list(Some(&folder)).try_collect().await?;
        for meta in objects {
            let listed = live_deletes.contains(&self.location(meta.location.as_ref()));
            if !listed && age_ms(&meta) >= ABANDONED_AFTER_MS {
                self.delete(&meta.location).await?;
            }
        }
        Ok(())
    }

    async fn delete(&self, location: &Path) -> Result<(), TableError> {
        match self.objects.delete(location).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// A new manifest: kept files as EXISTING with their original sequence numbers, new files
/// ADDED, removed files DELETED (for incremental readers; the next commit drops them).
fn manifest_entries(diff: &Diff<'_>, snapshot_id: i64, sequence_number: i64) -> Vec<Entry> {
    let mut entries: Vec<Entry> = diff
        .kept
        .iter()
        .map(|e| Entry {
            status: Status::Existing,
            ..(*e).clone()
        })
        .collect();
    entries.extend(diff.added.iter().map(|file| Entry {
        status: Status::Added,
        snapshot_id,
        sequence_number,
        file_sequence_number: sequence_number,
        file: file.clone(),
    }));
    entries.extend(diff.removed.iter().map(|e| Entry {
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

/// What the new snapshot holds.
struct Totals {
    data_files: u64,
    records: i64,
    delete_files: u64,
    position_deletes: i64,
}

impl Totals {
    fn of(manifests: &[Written]) -> Totals {
        let mut t = Totals {
            data_files: 0,
            records: 0,
            delete_files: 0,
            position_deletes: 0,
        };
        let live = manifests.iter().flat_map(|m| &m.entries);
        for e in live.filter(|e| e.status != Status::Deleted) {
            match e.file.content {
                Content::Data => (t.data_files += 1, t.records += e.file.record_count),
                Content::PositionDeletes => (
                    t.delete_files += 1,
                    t.position_deletes += e.file.record_count,
                ),
            };
        }
        t
    }
}

fn summary(plan: &Plan<'_>, manifests: &[Written], t: &Totals) -> BTreeMap<String, String> {
    let operation = match (plan.data.added.is_empty(), plan.removes()) {
        (_, false) => "append",
        (true, true) => "delete",
        (false, true) => "overwrite",
    };
    let data = manifests.first().map(|m| m.file.counts).unwrap_or_default();
    let deletes = manifests.get(1).map(|m| m.file.counts).unwrap_or_default();
    BTreeMap::from([
        ("operation".to_string(), operation.to_string()),
        ("added-data-files".to_string(), data.added_files.to_string()),
        (
            "deleted-data-files".to_string(),
            data.deleted_files.to_string(),
        ),
        ("added-records".to_string(), data.added_rows.to_string()),
        ("deleted-records".to_string(), data.deleted_rows.to_string()),
        (
            "added-delete-files".to_string(),
            deletes.added_files.to_string(),
        ),
        (
            "removed-delete-files".to_string(),
            deletes.deleted_files.to_string(),
        ),
        ("total-data-files".to_string(), t.data_files.to_string()),
        ("total-records".to_string(), t.records.to_string()),
        ("total-delete-files".to_string(), t.delete_files.to_string()),
        (
            "total-position-deletes".to_string(),
            t.position_deletes.to_string(),
        ),
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

/// The table's schemas with `schema` current: an existing one with the same fields, or
/// `schema` added under the next schema id (older snapshots keep the schema they were
/// committed with, as Iceberg's schema evolution does).
fn evolve(current: Option<&Loaded>, mut schema: Value) -> (Value, Vec<Value>, i32) {
    let Some(c) = current else {
        return (schema.clone(), vec![schema], SCHEMA_ID);
    };
    let mut schemas = c.metadata.schemas.clone();
    let id_of = |s: &Value| {
        s["schema-id"]
            .as_i64()
            .and_then(|id| i32::try_from(id).ok())
    };
    if let Some(same) = schemas.iter().find(|s| s["fields"] == schema["fields"]) {
        let id = id_of(same).unwrap_or(SCHEMA_ID);
        return (same.clone(), schemas, id);
    }
    let next = schemas
        .iter()
        .filter_map(id_of)
        .max()
        .map_or(SCHEMA_ID, |m| m + 1);
    schema["schema-id"] = json!(next);
    schemas.push(schema.clone());
    (schema, schemas, next)
}
