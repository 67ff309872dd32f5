//! The topic catalog: `topics/<name>` -> JSON [`TopicRecord`] in the coordination MetaStore.
//!
//! Writes are conditional on the version read (or on absence for creation), so two brokers never
//! overwrite each other's changes. Every broker keeps an in-memory copy, updated by its own
//! writes and by the store's change notifications.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use storage::clock::system_now_ms as now_ms;

use bytes::Bytes;
use futures::StreamExt;
use metastore::{Comparison, Expect, MetaError, MetaStore, Notification, PutOptions};
use storage::topics::{
    topic_key, TopicConfig, TopicDefaults, TopicError, TOPICS_END, TOPICS_PREFIX,
};
use uuid::Uuid;

const SCAN_PAGE: usize = 1000;
/// Conditional updates retried this many times when another writer wins the race.
const UPDATE_ATTEMPTS: usize = 16;

/// What the store holds for a topic (shared with the compactor, which reads retention).
pub use storage::topics::TopicRecord;

/// A topic as cached, with the store version it was read at and its typed config (resolved
/// once, when the record is cached: the produce path reads it on every batch).
#[derive(Debug, Clone)]
pub struct Topic {
    pub name: String,
    pub record: TopicRecord,
    pub version_id: i64,
    pub config: TopicConfig,
}

impl Topic {
    /// The storage stream holding one partition's log (no '/', as stream ids require).
    pub fn stream_id(&self, partition: i32) -> String {
        self.record.stream_id(partition)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("topic {0} already exists")]
    AlreadyExists(String),
    #[error("topic {0} does not exist")]
    NotFound(String),
    /// Too many concurrent writers to the same topic; the caller may retry.
    #[error("topic {0} is being changed concurrently")]
    Contended(String),
    #[error("topic record {key} is unreadable: {reason}")]
    Corrupt { key: String, reason: String },
    #[error(transparent)]
    Meta(#[from] MetaError),
}

pub struct Catalog {
    meta: Arc<dyn MetaStore>,
    /// The broker settings topics without an override take their configs from.
    defaults: TopicDefaults,
    topics: RwLock<HashMap<String, Arc<Topic>>>,
    /// Changes whenever the set of topic names does (changed under the write lock), so that
    /// regex subscriptions know when to match again without listing the names.
    names_generation: AtomicU64,
}

impl Catalog {
    /// Loads every topic and starts following changes made by other brokers.
    pub async fn open(
        meta: Arc<dyn MetaStore>,
        defaults: TopicDefaults,
    ) -> Result<Arc<Catalog>, CatalogError> {
        let catalog = Arc::new(Catalog {
            meta: meta.clone(),
            defaults,
            topics: RwLock::new(HashMap::new()),
            names_generation: AtomicU64::new(0),
        });
        // Subscribe before the scan so that no change falls between the two.
        let notifications = meta.notifications().await?;
        catalog.reload_all().await?;
        let weak = Arc::downgrade(&catalog);
        tokio::spawn(async move {
            let mut notifications = notifications;
            while let Some(notification) = notifications.next().await {
                let Some(catalog) = weak.upgrade() else {
                    return;
                };
                catalog.apply_notification(notification).await;
            }
        });
        Ok(catalog)
    }

    async fn reload_all(&self) -> Result<(), CatalogError> {
        let mut loaded = HashMap::new();
        let mut start = TOPICS_PREFIX.to_string();
        loop {
            let page = self
                .meta
                .range_scan(&start, TOPICS_END, None, SCAN_PAGE)
                .await?;
            let full = page.len() == SCAN_PAGE;
            for record in &page {
                let topic = self.decode(&record.key, &record.value, record.version.version_id)?;
                loaded.insert(topic.name.clone(), Arc::new(topic));
            }
            match page.last() {
                // Names never contain U+0001, so this is the smallest key after `last`.
                Some(last) if full => start = format!("{}\u{1}", last.key),
                _ => break,
            }
        }
        let mut topics = self.write_lock();
        *topics = loaded;
        self.names_generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    async fn apply_notification(&self, notification: Notification) {
        match notification {
            Notification::KeyCreated { key, .. } | Notification::KeyModified { key, .. } => {
                if let Some(name) = key.strip_prefix(TOPICS_PREFIX) {
                    if let Err(error) = self.refresh(name).await {
                        tracing::warn!(topic = name, %error, "cannot refresh topic after change");
                    }
                }
            }
            Notification::KeyDeleted { key } => {
                if let Some(name) = key.strip_prefix(TOPICS_PREFIX) {
                    self.forget(name);
                }
            }
            Notification::KeyRangeDeleted { .. } => {
                if let Err(error) = self.reload_all().await {
                    tracing::warn!(%error, "cannot reload topics after range delete");
                }
            }
        }
    }

    /// Re-reads one topic from the store into the cache.
    pub async fn refresh(&self, name: &str) -> Result<Option<Arc<Topic>>, CatalogError> {
        let key = topic_key(name);
        match self.meta.get(&key, Comparison::Equal, None).await? {
            Some(record) => {
                let topic =
                    Arc::new(self.decode(&record.key, &record.value, record.version.version_id)?);
                Ok(Some(self.remember(topic)))
            }
            None => {
                self.forget(name);
                Ok(None)
            }
        }
    }

    /// Keeps the newest of the cached and the given version.
    /// Caches a record this broker just wrote at `version_id`.
    fn remember_written(&self, name: &str, record: TopicRecord, version_id: i64) -> Arc<Topic> {
        let config = self.resolve(name, &record);
        self.remember(Arc::new(Topic {
            name: name.to_string(),
            record,
            version_id,
            config,
        }))
    }

    /// The broker settings topics without an override take their configs from.
    pub fn defaults(&self) -> &TopicDefaults {
        &self.defaults
    }

    /// A record's typed config. Overrides were validated when written; one that does not
    /// resolve here (a record from another version) is left out, loudly.
    fn resolve(&self, name: &str, record: &TopicRecord) -> TopicConfig {
        let (config, errors) = TopicConfig::resolve_lenient(&record.configs, &self.defaults);
        for error in errors {
            tracing::warn!(topic = name, %error, "ignoring a stored topic config");
        }
        config
    }

    fn decode(&self, key: &str, value: &[u8], version_id: i64) -> Result<Topic, CatalogError> {
        let (name, record) = storage::topics::decode(key, value).map_err(|e| match e {
            TopicError::Corrupt { key, reason } => CatalogError::Corrupt { key, reason },
            other => CatalogError::Corrupt {
                key: key.to_string(),
                reason: other.to_string(),
            },
        })?;
        let config = self.resolve(&name, &record);
        Ok(Topic {
            name,
            record,
            version_id,
            config,
        })
    }

    fn remember(&self, topic: Arc<Topic>) -> Arc<Topic> {
        let mut topics = self.write_lock();
        match topics.get(&topic.name) {
            Some(cached) if cached.version_id > topic.version_id => cached.clone(),
            _ => {
                if topics.insert(topic.name.clone(), topic.clone()).is_none() {
                    self.names_generation.fetch_add(1, Ordering::AcqRel);
                }
                topic
            }
        }
    }

    fn forget(&self, name: &str) {
        let mut topics = self.write_lock();
        if topics.remove(name).is_some() {
            self.names_generation.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// A number that changes whenever a topic name appears or goes.
    pub fn names_generation(&self) -> u64 {
        self.names_generation.load(Ordering::Acquire)
    }

    /// Every topic name, with the [`Self::names_generation`] they belong to.
    pub fn names(&self) -> (u64, Vec<String>) {
        let topics = self.read_lock();
        let generation = self.names_generation.load(Ordering::Acquire);
        (generation, topics.keys().cloned().collect())
    }

    pub fn get(&self, name: &str) -> Option<Arc<Topic>> {
        self.read_lock().get(name).cloned()
    }

    pub fn get_by_id(&self, id: Uuid) -> Option<Arc<Topic>> {
        self.read_lock()
            .values()
            .find(|t| t.record.id == id)
            .cloned()
    }

    /// Every topic, sorted by name.
    pub fn list(&self) -> Vec<Arc<Topic>> {
        let mut topics: Vec<_> = self.read_lock().values().cloned().collect();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        topics
    }

    /// Creates a topic; fails with `AlreadyExists` if any broker created it first.
    pub async fn create(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Arc<Topic>, CatalogError> {
        let record = TopicRecord {
            id: Uuid::new_v4(),
            partitions,
            configs,
            created_ms: now_ms(),
        };
        let options = PutOptions {
            expect: Expect::NotExists,
            ..Default::default()
        };
        match self
            .meta
            .put(&topic_key(name), encode(&record), options)
            .await
        {
            Ok(put) => {
                tracing::info!(topic = name, partitions, id = %record.id, "topic created");
                Ok(self.remember_written(name, record, put.version.version_id))
            }
            Err(MetaError::UnexpectedVersion) => {
                self.refresh(name).await?;
                Err(CatalogError::AlreadyExists(name.to_string()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Applies `change` to the stored record, retrying on concurrent updates. `change` may
    /// refuse by returning an error, which is passed through unchanged.
    pub async fn update<E>(
        &self,
        name: &str,
        change: impl Fn(&mut TopicRecord) -> Result<(), E>,
    ) -> Result<Result<Arc<Topic>, E>, CatalogError> {
        for _ in 0..UPDATE_ATTEMPTS {
            let current = self
                .refresh(name)
                .await?
                .ok_or_else(|| CatalogError::NotFound(name.to_string()))?;
            let mut record = current.record.clone();
            if let Err(refused) = change(&mut record) {
                return Ok(Err(refused));
            }
            let options = PutOptions {
                expect: Expect::Version(current.version_id),
                ..Default::default()
            };
            match self
                .meta
                .put(&topic_key(name), encode(&record), options)
                .await
            {
                Ok(put) => {
                    return Ok(Ok(self.remember_written(
                        name,
                        record,
                        put.version.version_id,
                    )));
                }
                Err(MetaError::UnexpectedVersion) => continue,
                Err(MetaError::KeyNotFound) => {
                    self.forget(name);
                    return Err(CatalogError::NotFound(name.to_string()));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(CatalogError::Contended(name.to_string()))
    }

    /// Deletes a topic record (the version read must still be current) and returns it.
    pub async fn delete(&self, name: &str) -> Result<Arc<Topic>, CatalogError> {
        for _ in 0..UPDATE_ATTEMPTS {
            let current = self
                .refresh(name)
                .await?
                .ok_or_else(|| CatalogError::NotFound(name.to_string()))?;
            match self
                .meta
                .delete(&topic_key(name), Expect::Version(current.version_id), None)
                .await
            {
                Ok(()) => {
                    self.forget(name);
                    tracing::info!(topic = name, id = %current.record.id, "topic deleted");
                    return Ok(current);
                }
                Err(MetaError::UnexpectedVersion) => continue,
                Err(MetaError::KeyNotFound) => {
                    self.forget(name);
                    return Err(CatalogError::NotFound(name.to_string()));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(CatalogError::Contended(name.to_string()))
    }

    // A poisoned lock only means a panic happened while holding it; the map itself is always
    // left consistent (single inserts/removes), so keep serving it.
    fn read_lock(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Topic>>> {
        self.topics.read().unwrap_or_else(|e| e.into_inner())
    }
    fn write_lock(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<Topic>>> {
        self.topics.write().unwrap_or_else(|e| e.into_inner())
    }
}

fn encode(record: &TopicRecord) -> Bytes {
    storage::topics::encode(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use metastore::{EmbeddedMetaStore, MetaOptions};

    #[tokio::test]
    async fn names_generation_changes_exactly_when_a_name_appears_or_goes() {
        let dir = tempfile::tempdir().unwrap();
        let meta = EmbeddedMetaStore::open_in_dir(dir.path(), MetaOptions::default())
            .await
            .unwrap();
        let catalog = Catalog::open(Arc::new(meta), TopicDefaults::kafka())
            .await
            .unwrap();
        let start = catalog.names_generation();
        catalog.create("a", 1, BTreeMap::new()).await.unwrap();
        let created = catalog.names_generation();
        assert_ne!(created, start);
        assert_eq!(catalog.names(), (created, vec!["a".to_string()]));
        // A new version of a known topic is not a new name.
        catalog.refresh("a").await.unwrap();
        assert_eq!(catalog.names_generation(), created);
        catalog.delete("a").await.unwrap();
        assert_ne!(catalog.names_generation(), created);
        assert!(catalog.names().1.is_empty());
    }
}
