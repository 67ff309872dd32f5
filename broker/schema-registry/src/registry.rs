//! The registry's operations, as Confluent's API defines them, over [`Store`]. Every broker of
//! a cluster runs one over the same MetaStore; nothing is cached that another broker could
//! change, except the parsed schema of an id (ids are immutable) and, for record validation,
//! the ids a subject holds (refreshed on a miss; see [`Registry::subject_has_id`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metastore::MetaStore;
use sha2::{Digest, Sha256};

use crate::compatibility::{self, Level};
use crate::error::{RegistryError, RegistryResult};
use crate::mode::Mode;
use crate::schema::{Dependency, Parsed, Reference, SchemaType};
use crate::store::{Config, ModeRecord, Store, StoredSchema, SubjectVersion, VersionEntry};

/// Conditional writes retried when another broker wrote first.
const WRITE_ATTEMPTS: usize = 32;
/// References followed, in depth and in all, from one schema.
const REFERENCE_DEPTH_MAX: usize = 16;
const REFERENCES_MAX: usize = 256;
/// The longest subject name accepted (bytes).
pub const SUBJECT_BYTES_MAX: usize = 1024;
/// Parsed schemas kept for record validation; past it the cache starts over.
const PARSED_CACHED_MAX: usize = 10_000;
const SUBJECTS_CACHED_MAX: usize = 10_000;
/// How old a subject's cached ids may be before a miss reads them again.
const SUBJECT_REFRESH_MIN: Duration = Duration::from_millis(100);
/// How long a subject's cached ids are trusted at all: a version deleted through another
/// broker stops validating records here within this time.
const SUBJECT_CACHED_FOR: Duration = Duration::from_secs(5);

/// A schema as a register or lookup request carries it.
#[derive(Debug, Clone, Default)]
pub struct SchemaRequest {
    pub schema: String,
    pub schema_type: Option<SchemaType>,
    pub references: Vec<Reference>,
    /// IMPORT mode only: the id and version to register under.
    pub id: Option<i32>,
    pub version: Option<i32>,
}

/// A version of a subject, as the API answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaView {
    pub subject: String,
    pub version: i32,
    pub id: i32,
    pub schema: StoredSchema,
}

/// `latest` (or -1) or a version number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSpec {
    Latest,
    Number(i32),
}

impl VersionSpec {
    pub fn parse(text: &str) -> RegistryResult<VersionSpec> {
        if text.eq_ignore_ascii_case("latest") || text == "-1" {
            return Ok(VersionSpec::Latest);
        }
        match text.parse::<i32>() {
            Ok(n) if n >= 1 => Ok(VersionSpec::Number(n)),
            _ => Err(RegistryError::InvalidVersion(text.to_string())),
        }
    }
}

/// The live ids of a subject, and when they were read.
type SubjectIds = (Instant, Arc<HashSet<i32>>);

pub struct Registry {
    store: Store,
    parsed: Mutex<HashMap<i32, Arc<Parsed>>>,
    subject_ids: Mutex<HashMap<String, SubjectIds>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn check_subject(subject: &str) -> RegistryResult<()> {
    if subject.is_empty()
        || subject.len() > SUBJECT_BYTES_MAX
        || subject.chars().any(char::is_control)
    {
        return Err(RegistryError::BadRequest(format!(
            "invalid subject name: empty, longer than {SUBJECT_BYTES_MAX} bytes or with control characters"
        )));
    }
    Ok(())
}

fn fingerprint(schema: &StoredSchema) -> String {
    let mut digest = Sha256::new();
    digest.update(serde_json::to_vec(schema).unwrap_or_default());
    digest
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Registry {
    pub fn new(meta: Arc<dyn MetaStore>) -> Registry {
        Registry {
            store: Store::new(meta),
            parsed: Mutex::new(HashMap::new()),
            subject_ids: Mutex::new(HashMap::new()),
        }
    }

    // ---- schemas and references ----

    /// The texts `references` stand for, dependencies first, references of references
    /// included, each name once.
    pub async fn resolve(&self, references: &[Reference]) -> RegistryResult<Vec<Dependency>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        self.resolve_into(references, 0, &mut seen, &mut out)
            .await?;
        Ok(out)
    }

    fn resolve_into<'a>(
        &'a self,
        references: &'a [Reference],
        depth: usize,
        seen: &'a mut HashSet<String>,
        out: &'a mut Vec<Dependency>,
    ) -> futures::future::BoxFuture<'a, RegistryResult<()>> {
        Box::pin(async move {
            if depth > REFERENCE_DEPTH_MAX || seen.len() + references.len() > REFERENCES_MAX {
                return Err(RegistryError::InvalidSchema(format!(
                    "references nested deeper than {REFERENCE_DEPTH_MAX} or more than {REFERENCES_MAX}"
                )));
            }
            for reference in references {
                if !seen.insert(reference.name.clone()) {
                    continue;
                }
                let view = self
                    .version(
                        &reference.subject,
                        VersionSpec::Number(reference.version),
                        true,
                    )
                    .await
                    .map_err(|e| {
                        RegistryError::InvalidSchema(format!(
                            "reference {} to {} version {}: {e}",
                            reference.name, reference.subject, reference.version
                        ))
                    })?;
                self.resolve_into(&view.schema.references, depth + 1, seen, out)
                    .await?;
                out.push(Dependency {
                    name: reference.name.clone(),
                    schema: view.schema.schema,
                });
            }
            Ok(())
        })
    }

    /// Parses a stored or requested schema with its references.
    pub async fn parse(
        &self,
        schema_type: SchemaType,
        text: &str,
        references: &[Reference],
    ) -> RegistryResult<Parsed> {
        let dependencies = self.resolve(references).await?;
        Parsed::parse(schema_type, text, &dependencies)
            .map_err(|e| RegistryError::InvalidSchema(e.0))
    }

    pub async fn schema_by_id(&self, id: i32) -> RegistryResult<StoredSchema> {
        self.store
            .schema(id)
            .await?
            .ok_or_else(|| RegistryError::SchemaNotFound(id.to_string()))
    }

    /// The parsed schema of `id` (cached: ids never change).
    pub async fn parsed(&self, id: i32) -> RegistryResult<Arc<Parsed>> {
        if let Some(parsed) = lock(&self.parsed).get(&id) {
            return Ok(parsed.clone());
        }
        let stored = self.schema_by_id(id).await?;
        let parsed = Arc::new(
            self.parse(stored.schema_type, &stored.schema, &stored.references)
                .await?,
        );
        let mut cache = lock(&self.parsed);
        if cache.len() >= PARSED_CACHED_MAX {
            cache.clear();
        }
        cache.insert(id, parsed.clone());
        Ok(parsed)
    }

    /// Every (subject, version) holding schema `id`, soft-deleted ones when `deleted`.
    pub async fn usages(&self, id: i32, deleted: bool) -> RegistryResult<Vec<(String, i32)>> {
        self.schema_by_id(id).await?;
        Ok(self
            .store
            .all_versions()
            .await?
            .into_iter()
            .filter(|e| e.record.id == id && (deleted || !e.record.deleted))
            .map(|e| (e.subject, e.version))
            .collect())
    }

    // ---- subjects and versions ----

    pub async fn subjects(&self, deleted: bool) -> RegistryResult<Vec<String>> {
        let mut subjects: Vec<String> = self
            .store
            .all_versions()
            .await?
            .into_iter()
            .filter(|e| deleted || !e.record.deleted)
            .map(|e| e.subject)
            .collect();
        subjects.dedup();
        Ok(subjects)
    }

    /// The subject's versions; `SubjectNotFound` when it has none (live ones unless `deleted`).
    async fn entries(&self, subject: &str, deleted: bool) -> RegistryResult<Vec<VersionEntry>> {
        check_subject(subject)?;
        let entries: Vec<VersionEntry> = self
            .store
            .versions(subject)
            .await?
            .into_iter()
            .filter(|e| deleted || !e.record.deleted)
            .collect();
        if entries.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        Ok(entries)
    }

    /// The live versions of `subject` with their schema ids, in version order (one read).
    pub async fn version_ids(&self, subject: &str) -> RegistryResult<Vec<(i32, i32)>> {
        Ok(self
            .entries(subject, false)
            .await?
            .iter()
            .map(|e| (e.version, e.record.id))
            .collect())
    }

    pub async fn versions(&self, subject: &str, deleted: bool) -> RegistryResult<Vec<i32>> {
        Ok(self
            .entries(subject, deleted)
            .await?
            .iter()
            .map(|e| e.version)
            .collect())
    }

    async fn entry(
        &self,
        subject: &str,
        spec: VersionSpec,
        deleted: bool,
    ) -> RegistryResult<VersionEntry> {
        let entries = self.entries(subject, deleted).await?;
        let found = match spec {
            VersionSpec::Latest => entries.last(),
            VersionSpec::Number(n) => entries.iter().find(|e| e.version == n),
        };
        found.cloned().ok_or_else(|| {
            RegistryError::VersionNotFound(match spec {
                VersionSpec::Latest => "latest".into(),
                VersionSpec::Number(n) => n.to_string(),
            })
        })
    }

    pub async fn version(
        &self,
        subject: &str,
        spec: VersionSpec,
        deleted: bool,
    ) -> RegistryResult<SchemaView> {
        let entry = self.entry(subject, spec, deleted).await?;
        Ok(SchemaView {
            subject: entry.subject,
            version: entry.version,
            id: entry.record.id,
            schema: self.schema_by_id(entry.record.id).await?,
        })
    }

    /// The version of `subject` holding the schema `request` describes.
    pub async fn lookup(
        &self,
        subject: &str,
        request: &SchemaRequest,
        deleted: bool,
    ) -> RegistryResult<SchemaView> {
        let entries = self.entries(subject, deleted).await?;
        let wanted = self.canonical(request).await?;
        for entry in entries.iter().rev() {
            let stored = self.schema_by_id(entry.record.id).await?;
            if stored == wanted {
                return Ok(SchemaView {
                    subject: entry.subject.clone(),
                    version: entry.version,
                    id: entry.record.id,
                    schema: stored,
                });
            }
        }
        Err(RegistryError::SchemaNotFound(String::new()))
    }

    /// What `request` would be stored as.
    async fn canonical(&self, request: &SchemaRequest) -> RegistryResult<StoredSchema> {
        let schema_type = request.schema_type.unwrap_or(SchemaType::Avro);
        let parsed = self
            .parse(schema_type, &request.schema, &request.references)
            .await?;
        Ok(StoredSchema {
            schema_type,
            schema: parsed.canonical(),
            references: request.references.clone(),
        })
    }

    /// The parsed live versions of `subject`, oldest first.
    async fn live_parsed(&self, entries: &[VersionEntry]) -> RegistryResult<Vec<(i32, Parsed)>> {
        let mut out = Vec::new();
        for entry in entries.iter().filter(|e| !e.record.deleted) {
            let parsed = self.parsed(entry.record.id).await?;
            out.push((entry.version, Parsed::clone(&parsed)));
        }
        Ok(out)
    }

    /// Why `request` may not become the next version of `subject` (or follow `against`).
    pub async fn check_compatibility(
        &self,
        subject: &str,
        against: Option<VersionSpec>,
        request: &SchemaRequest,
    ) -> RegistryResult<Vec<String>> {
        let schema_type = request.schema_type.unwrap_or(SchemaType::Avro);
        let new = self
            .parse(schema_type, &request.schema, &request.references)
            .await?;
        let level = self.level(Some(subject)).await?;
        let entries = match self.entries(subject, false).await {
            Ok(entries) => entries,
            // Nothing to be incompatible with, as Confluent answers.
            Err(RegistryError::SubjectNotFound(_)) if against.is_none() => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        let earlier = match against {
            None => self.live_parsed(&entries).await?,
            Some(spec) => {
                let entry = self.entry(subject, spec, false).await?;
                let parsed = self.parsed(entry.record.id).await?;
                // One version named: judged against it alone, whatever the transitivity.
                return Ok(compatibility::incompatibilities(
                    level,
                    &new,
                    &[(entry.version, Parsed::clone(&parsed))],
                ));
            }
        };
        Ok(compatibility::incompatibilities(level, &new, &earlier))
    }

    // ---- register ----

    /// Registers `request` under `subject`; the id of the schema (an existing one when the
    /// subject already holds it, or when it is registered under another subject).
    pub async fn register(&self, subject: &str, request: &SchemaRequest) -> RegistryResult<i32> {
        check_subject(subject)?;
        let mode = self.mode(Some(subject)).await?;
        match mode {
            Mode::ReadOnly | Mode::ReadOnlyOverride => {
                return Err(RegistryError::OperationNotPermitted(format!(
                    "Subject {subject} is in read-only mode"
                )))
            }
            Mode::ReadWrite if request.id.is_some() => {
                return Err(RegistryError::OperationNotPermitted(format!(
                    "Subject {subject} is not in import mode: a schema id cannot be given"
                )))
            }
            Mode::Import if request.id.is_none() => {
                return Err(RegistryError::OperationNotPermitted(format!(
                    "Subject {subject} is in import mode: a schema id must be given"
                )))
            }
            _ => {}
        }
        let stored = self.canonical(request).await?;
        for _ in 0..WRITE_ATTEMPTS {
            let entries = self.store.versions(subject).await?;
            if let Some(id) = self.registered_id(&entries, &stored).await? {
                return Ok(id);
            }
            if mode != Mode::Import {
                self.judge(subject, &entries, request, &stored).await?;
            }
            let id = match request.id {
                Some(id) => self.import_id(id, &stored).await?,
                None => self.id_for(&stored).await?,
            };
            let version = match request.version {
                Some(version) => version,
                None => entries.last().map_or(1, |e| e.version.saturating_add(1)),
            };
            for reference in &stored.references {
                self.store
                    .add_reference(&reference.subject, reference.version, id)
                    .await?;
            }
            let record = SubjectVersion { id, deleted: false };
            if self.store.create_version(subject, version, &record).await? {
                tracing::info!(subject, version, id, "schema registered");
                lock(&self.subject_ids).remove(subject);
                return Ok(id);
            }
            if request.version.is_some() {
                return Err(RegistryError::OperationNotPermitted(format!(
                    "Subject {subject} already has a version {version}"
                )));
            }
        }
        Err(RegistryError::Store(format!(
            "gave up registering under {subject} after {WRITE_ATTEMPTS} concurrent writes"
        )))
    }

    /// The id of a live version of the subject holding `stored`.
    async fn registered_id(
        &self,
        entries: &[VersionEntry],
        stored: &StoredSchema,
    ) -> RegistryResult<Option<i32>> {
        for entry in entries.iter().rev().filter(|e| !e.record.deleted) {
            if self.schema_by_id(entry.record.id).await? == *stored {
                return Ok(Some(entry.record.id));
            }
        }
        Ok(None)
    }

    async fn judge(
        &self,
        subject: &str,
        entries: &[VersionEntry],
        request: &SchemaRequest,
        stored: &StoredSchema,
    ) -> RegistryResult<()> {
        let level = self.level(Some(subject)).await?;
        if level == Level::None {
            return Ok(());
        }
        let new = self
            .parse(stored.schema_type, &request.schema, &stored.references)
            .await?;
        let earlier = self.live_parsed(entries).await?;
        let details = compatibility::incompatibilities(level, &new, &earlier);
        if details.is_empty() {
            Ok(())
        } else {
            Err(RegistryError::Incompatible {
                subject: subject.to_string(),
                details,
            })
        }
    }

    /// The id of `stored`: the one it already has, else the next free id. Ids are taken by a
    /// conditional create of the schema's record at the highest id + 1, so two brokers never
    /// take the same one and no id is skipped; when two register the same new schema at once,
    /// the loser's id stays a valid (unused) id of the same schema and both answer the
    /// winner's.
    async fn id_for(&self, stored: &StoredSchema) -> RegistryResult<i32> {
        let fingerprint = fingerprint(stored);
        if let Some(id) = self.store.fingerprint(&fingerprint).await? {
            return Ok(id);
        }
        for _ in 0..WRITE_ATTEMPTS {
            let id = self.store.highest_id().await?.saturating_add(1);
            if !self.store.create_schema(id, stored).await? {
                continue;
            }
            if self.store.create_fingerprint(&fingerprint, id).await? {
                return Ok(id);
            }
            return self
                .store
                .fingerprint(&fingerprint)
                .await?
                .ok_or_else(|| RegistryError::Store("fingerprint vanished".into()));
        }
        Err(RegistryError::Store(format!(
            "gave up taking a schema id after {WRITE_ATTEMPTS} concurrent writes"
        )))
    }

    /// IMPORT mode: `stored` under the id it had in the registry it comes from.
    async fn import_id(&self, id: i32, stored: &StoredSchema) -> RegistryResult<i32> {
        if id < 1 {
            return Err(RegistryError::BadRequest(format!("invalid schema id {id}")));
        }
        if !self.store.create_schema(id, stored).await?
            && self.store.schema(id).await?.as_ref() != Some(stored)
        {
            return Err(RegistryError::IdInUse(id));
        }
        // An existing fingerprint keeps pointing at its id: lookups answer the first.
        self.store
            .create_fingerprint(&fingerprint(stored), id)
            .await?;
        Ok(id)
    }

    // ---- deletes ----

    /// Soft-deletes the subject's live versions, or permanently deletes its soft-deleted
    /// ones; the versions deleted.
    pub async fn delete_subject(&self, subject: &str, permanent: bool) -> RegistryResult<Vec<i32>> {
        let entries = self.entries(subject, true).await?;
        let live: Vec<&VersionEntry> = entries.iter().filter(|e| !e.record.deleted).collect();
        self.check_mode_writable(subject).await?;
        if permanent {
            if !live.is_empty() {
                return Err(RegistryError::SubjectNotSoftDeleted(subject.to_string()));
            }
            for entry in &entries {
                self.store.delete_version(subject, entry.version).await?;
            }
            self.store.delete_scoped("config", Some(subject)).await?;
            self.store.delete_scoped("mode", Some(subject)).await?;
        } else {
            if live.is_empty() {
                return Err(RegistryError::SubjectSoftDeleted(subject.to_string()));
            }
            for entry in &live {
                self.soft_delete(entry).await?;
            }
        }
        lock(&self.subject_ids).remove(subject);
        let deleted = if permanent {
            entries.iter().collect()
        } else {
            live
        };
        Ok(deleted.iter().map(|e| e.version).collect())
    }

    pub async fn delete_version(
        &self,
        subject: &str,
        spec: VersionSpec,
        permanent: bool,
    ) -> RegistryResult<i32> {
        let entry = self.entry(subject, spec, true).await?;
        self.check_mode_writable(subject).await?;
        if permanent {
            if !entry.record.deleted {
                return Err(RegistryError::VersionNotSoftDeleted(
                    subject.to_string(),
                    entry.version,
                ));
            }
            self.store.delete_version(subject, entry.version).await?;
        } else {
            if entry.record.deleted {
                return Err(RegistryError::VersionSoftDeleted(
                    subject.to_string(),
                    entry.version,
                ));
            }
            self.soft_delete(&entry).await?;
        }
        lock(&self.subject_ids).remove(subject);
        Ok(entry.version)
    }

    async fn soft_delete(&self, entry: &VersionEntry) -> RegistryResult<()> {
        if !self
            .store
            .referenced_by(&entry.subject, entry.version)
            .await?
            .is_empty()
        {
            return Err(RegistryError::ReferenceExists(
                entry.subject.clone(),
                entry.version,
            ));
        }
        let record = SubjectVersion {
            id: entry.record.id,
            deleted: true,
        };
        if self.store.update_version(entry, &record).await? {
            Ok(())
        } else {
            Err(RegistryError::Store(format!(
                "subject {} version {} changed while being deleted; retry",
                entry.subject, entry.version
            )))
        }
    }

    pub async fn referenced_by(
        &self,
        subject: &str,
        spec: VersionSpec,
    ) -> RegistryResult<Vec<i32>> {
        let entry = self.entry(subject, spec, true).await?;
        self.store.referenced_by(subject, entry.version).await
    }

    async fn check_mode_writable(&self, subject: &str) -> RegistryResult<()> {
        match self.mode(Some(subject)).await? {
            Mode::ReadOnly | Mode::ReadOnlyOverride => Err(RegistryError::OperationNotPermitted(
                format!("Subject {subject} is in read-only mode"),
            )),
            _ => Ok(()),
        }
    }

    // ---- config and mode ----

    /// The compatibility level that applies to `subject` (its own, else the global one).
    pub async fn level(&self, subject: Option<&str>) -> RegistryResult<Level> {
        if let Some(subject) = subject {
            if let Some(config) = self.store.config(Some(subject)).await? {
                return Ok(Level::parse(&config.compatibility).unwrap_or(Level::DEFAULT));
            }
        }
        Ok(self
            .store
            .config(None)
            .await?
            .and_then(|c| Level::parse(&c.compatibility))
            .unwrap_or(Level::DEFAULT))
    }

    /// The level set on `subject` itself (`None`: the global one).
    pub async fn own_level(&self, subject: Option<&str>) -> RegistryResult<Option<Level>> {
        Ok(self
            .store
            .config(subject)
            .await?
            .and_then(|c| Level::parse(&c.compatibility)))
    }

    pub async fn set_level(&self, subject: Option<&str>, level: Level) -> RegistryResult<()> {
        if let Some(subject) = subject {
            check_subject(subject)?;
        }
        let config = Config {
            compatibility: level.name().to_string(),
        };
        self.store.set_config(subject, &config).await
    }

    pub async fn delete_level(&self, subject: Option<&str>) -> RegistryResult<Level> {
        let previous = self.level(subject).await?;
        self.store.delete_scoped("config", subject).await?;
        Ok(previous)
    }

    /// The mode that applies to `subject` (its own, else the global one).
    pub async fn mode(&self, subject: Option<&str>) -> RegistryResult<Mode> {
        if let Some(own) = self.own_mode(subject).await? {
            return Ok(own);
        }
        Ok(self.own_mode(None).await?.unwrap_or(Mode::ReadWrite))
    }

    pub async fn own_mode(&self, subject: Option<&str>) -> RegistryResult<Option<Mode>> {
        Ok(self
            .store
            .mode(subject)
            .await?
            .and_then(|m| Mode::parse(&m.mode)))
    }

    /// Sets the mode; IMPORT only on an empty registry (or subject) unless `force`.
    pub async fn set_mode(
        &self,
        subject: Option<&str>,
        mode: Mode,
        force: bool,
    ) -> RegistryResult<()> {
        if mode == Mode::Import && !force {
            let occupied = match subject {
                Some(subject) => !self.store.versions(subject).await?.is_empty(),
                None => !self.store.all_versions().await?.is_empty(),
            };
            if occupied {
                return Err(RegistryError::OperationNotPermitted(
                    "Cannot import since found existing subjects".into(),
                ));
            }
        }
        let record = ModeRecord {
            mode: mode.name().to_string(),
        };
        self.store.set_mode(subject, &record).await
    }

    pub async fn delete_mode(&self, subject: &str) -> RegistryResult<Mode> {
        let previous = self.mode(Some(subject)).await?;
        self.store.delete_scoped("mode", Some(subject)).await?;
        Ok(previous)
    }

    // ---- for record validation ----

    /// Whether schema `id` is a live version of `subject`. The subject's ids are cached; a
    /// miss reads them again (at most every [`SUBJECT_REFRESH_MIN`]), so a schema registered
    /// on another broker is accepted at once; one deleted through another broker is refused
    /// within [`SUBJECT_CACHED_FOR`].
    pub async fn subject_has_id(&self, subject: &str, id: i32) -> RegistryResult<bool> {
        let cached = lock(&self.subject_ids).get(subject).cloned();
        if let Some((read_at, ids)) = &cached {
            let age = read_at.elapsed();
            if age < SUBJECT_CACHED_FOR && (ids.contains(&id) || age < SUBJECT_REFRESH_MIN) {
                return Ok(ids.contains(&id));
            }
        }
        let ids: HashSet<i32> = match self.entries(subject, false).await {
            Ok(entries) => entries.iter().map(|e| e.record.id).collect(),
            Err(RegistryError::SubjectNotFound(_)) => HashSet::new(),
            Err(error) => return Err(error),
        };
        let found = ids.contains(&id);
        let mut cache = lock(&self.subject_ids);
        if cache.len() >= SUBJECTS_CACHED_MAX {
            cache.clear();
        }
        cache.insert(subject.to_string(), (Instant::now(), Arc::new(ids)));
        Ok(found)
    }
}
