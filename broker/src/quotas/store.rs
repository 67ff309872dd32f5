//! Client quotas in the coordination MetaStore, one key per entity,
//! `quotas/user=alice,client-id=<default>`, whose value is its quotas in JSON. Names are
//! percent-encoded where they hold `%`, `,`, `=`, `<`, `/` or control characters, so a key
//! always parses back and no name reads as the default. Every broker keeps all of them in
//! memory ([`QuotaStore`]), loaded before its listener opens and kept current by the store's
//! change notifications, as SCRAM credentials are.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use futures::StreamExt;
use metastore::{Comparison, Expect, MetaError, MetaStore, Notification, PutOptions};

use super::entity::{Entity, Name, Values};

use crate::key_escape::{escape, unescape};

/// Characters escaped in names: the separators of an entity key, and `<` so no name reads as `<default>`.
const RESERVED: &[char] = &[',', '=', '<', '/'];

pub const PREFIX: &str = "quotas/";
/// Entities the cluster may hold quotas for (each broker keeps them all in memory).
pub const ENTITIES_MAX: usize = 100_000;
const SCAN_PAGE: usize = 1000;
const DEFAULT: &str = "<default>";

#[derive(Debug, thiserror::Error)]
pub enum QuotaStoreError {
    #[error("the cluster holds quotas for {ENTITIES_MAX} entities, the most it may")]
    Full,
    #[error("quota record {key} is unreadable: {reason}")]
    Corrupt { key: String, reason: String },
    #[error(transparent)]
    Meta(#[from] MetaError),
}

pub fn key(entity: &Entity) -> String {
    let parts: Vec<String> = entity
        .components()
        .into_iter()
        .map(|(t, name)| match name {
            Name::Default => format!("{t}={DEFAULT}"),
            Name::Named(n) => format!("{t}={}", escape(n, RESERVED)),
        })
        .collect();
    format!("{PREFIX}{}", parts.join(","))
}

pub fn decode_key(key: &str) -> Option<Entity> {
    let mut components = Vec::new();
    for part in key.strip_prefix(PREFIX)?.split(',') {
        let (entity_type, name) = part.split_once('=')?;
        let name = if name == DEFAULT {
            None
        } else {
            Some(unescape(name)?)
        };
        components.push((entity_type.to_string(), name));
    }
    let borrowed = components.iter().map(|(t, n)| (t.as_str(), n.as_deref()));
    Entity::from_components(borrowed).ok()
}

type Cache = BTreeMap<Entity, Values>;

pub struct QuotaStore {
    meta: Arc<dyn MetaStore>,
    cache: RwLock<Cache>,
    /// Whether `cache` holds no entity, kept in step by every write: with no quota set, as on
    /// most clusters, a request learns that without taking the lock (see [`QuotaStore::is_empty`]).
    empty: std::sync::atomic::AtomicBool,
}

impl QuotaStore {
    /// Loads every entity's quotas and starts following changes made by other brokers.
    pub async fn open(meta: Arc<dyn MetaStore>) -> Result<Arc<QuotaStore>, QuotaStoreError> {
        let store = Arc::new(QuotaStore {
            meta: meta.clone(),
            cache: RwLock::new(Cache::new()),
            empty: std::sync::atomic::AtomicBool::new(true),
        });
        // Subscribe before the scan so that no change falls between the two.
        let mut notifications = meta.notifications().await?;
        store.reload_all().await?;
        let weak = Arc::downgrade(&store);
        tokio::spawn(async move {
            while let Some(notification) = notifications.next().await {
                let Some(store) = weak.upgrade() else { return };
                store.apply(notification).await;
            }
        });
        Ok(store)
    }

    async fn reload_all(&self) -> Result<(), QuotaStoreError> {
        let mut loaded = Cache::new();
        let end = format!("{PREFIX}\u{7f}");
        let mut start = PREFIX.to_string();
        loop {
            let page = self.meta.range_scan(&start, &end, None, SCAN_PAGE).await?;
            for record in &page {
                if let Some((entity, values)) = decode(&record.key, &record.value)? {
                    loaded.insert(entity, values);
                }
            }
            match page.last() {
                Some(last) if page.len() == SCAN_PAGE => start = format!("{}\u{1}", last.key),
                _ => break,
            }
        }
        *self.write() = loaded;
        Ok(())
    }

    async fn apply(&self, notification: Notification) {
        let result = match &notification {
            Notification::KeyRangeDeleted { .. } => self.reload_all().await,
            other if other.key().starts_with(PREFIX) => self.refresh(other.key()).await,
            _ => Ok(()),
        };
        if let Err(error) = result {
            tracing::warn!(%error, key = notification.key(), "cannot follow a client quota change");
        }
    }

    /// Re-reads one key: the cache ends as the store is, whatever order changes arrive in.
    async fn refresh(&self, key: &str) -> Result<(), QuotaStoreError> {
        let Some(entity) = decode_key(key) else {
            return Ok(());
        };
        let record = self.meta.get(key, Comparison::Equal, None).await?;
        let decoded = match record {
            Some(record) => decode(&record.key, &record.value)?,
            None => None,
        };
        let mut cache = self.write();
        match decoded {
            Some((_, values)) => cache.insert(entity, values),
            None => cache.remove(&entity),
        };
        Ok(())
    }

    /// Writes `values` as the entity's quotas; an empty map deletes its record.
    pub async fn set(&self, entity: &Entity, values: Values) -> Result<(), QuotaStoreError> {
        let key = key(entity);
        if values.is_empty() {
            match self.meta.delete(&key, Expect::Any, None).await {
                Ok(()) | Err(MetaError::KeyNotFound) => {}
                Err(e) => return Err(e.into()),
            }
            self.write().remove(entity);
            return Ok(());
        }
        {
            let cache = self.read();
            if cache.len() >= ENTITIES_MAX && !cache.contains_key(entity) {
                return Err(QuotaStoreError::Full);
            }
        }
        let json: serde_json::Map<String, serde_json::Value> = values
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::from(*v)))
            .collect();
        let value = Bytes::from(serde_json::Value::Object(json).to_string());
        self.meta.put(&key, value, PutOptions::default()).await?;
        self.write().insert(entity.clone(), values);
        Ok(())
    }

    pub fn get(&self, entity: &Entity) -> Values {
        self.read().get(entity).cloned().unwrap_or_default()
    }

    /// One quota of one entity, if set.
    pub fn value(&self, entity: &Entity, quota: &str) -> Option<f64> {
        self.read().get(entity).and_then(|v| v.get(quota).copied())
    }

    pub fn all(&self) -> Vec<(Entity, Values)> {
        self.read()
            .iter()
            .map(|(e, v)| (e.clone(), v.clone()))
            .collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Cache> {
        self.cache
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> CacheWrite<'_> {
        CacheWrite {
            cache: self
                .cache
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
            empty: &self.empty,
        }
    }

    /// No quota is set for any entity.
    pub fn is_empty(&self) -> bool {
        self.empty.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// The cache held for writing; releasing it records whether it is empty.
struct CacheWrite<'a> {
    cache: std::sync::RwLockWriteGuard<'a, Cache>,
    empty: &'a std::sync::atomic::AtomicBool,
}

impl std::ops::Deref for CacheWrite<'_> {
    type Target = Cache;
    fn deref(&self) -> &Cache {
        &self.cache
    }
}

impl std::ops::DerefMut for CacheWrite<'_> {
    fn deref_mut(&mut self) -> &mut Cache {
        &mut self.cache
    }
}

impl Drop for CacheWrite<'_> {
    fn drop(&mut self) {
        let empty = self.cache.is_empty();
        self.empty
            .store(empty, std::sync::atomic::Ordering::Release);
    }
}

fn decode(key: &str, value: &[u8]) -> Result<Option<(Entity, Values)>, QuotaStoreError> {
    let Some(entity) = decode_key(key) else {
        return Ok(None);
    };
    let corrupt = |reason: String| QuotaStoreError::Corrupt {
        key: key.to_string(),
        reason,
    };
    let parsed: serde_json::Value =
        serde_json::from_slice(value).map_err(|e| corrupt(e.to_string()))?;
    let Some(object) = parsed.as_object() else {
        return Err(corrupt("not an object".into()));
    };
    let mut values = Values::new();
    for (k, v) in object {
        let v = v
            .as_f64()
            .ok_or_else(|| corrupt(format!("{k} is not a number")))?;
        values.insert(k.clone(), v);
    }
    Ok(Some((entity, values)))
}

#[cfg(test)]
mod tests {
    use super::super::entity::{CLIENT_ID, IP, USER};
    use super::*;

    #[test]
    fn keys_parse_back_whatever_the_names_hold() {
        for components in [
            vec![(USER, Some("alice"))],
            vec![(USER, None), (CLIENT_ID, Some("a,b=c<default>%/"))],
            vec![(CLIENT_ID, None)],
            vec![(IP, Some("10.1.2.3"))],
        ] {
            let entity = Entity::from_components(components).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                decode_key(&key(&entity)),
                Some(entity.clone()),
                "{}",
                key(&entity)
            );
        }
        assert_eq!(
            key(
                &Entity::from_components([(USER, Some("alice")), (CLIENT_ID, None)])
                    .unwrap_or_else(|e| panic!("{e}"))
            ),
            "quotas/user=alice,client-id=<default>"
        );
    }

    #[tokio::test]
    async fn the_store_knows_when_no_quota_is_set() {
        let meta: Arc<dyn MetaStore> =
            Arc::new(metastore::MemoryMetaStore::open(Default::default()));
        let store = QuotaStore::open(meta)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(store.is_empty());
        let entity =
            Entity::from_components([(USER, Some("alice"))]).unwrap_or_else(|e| panic!("{e}"));
        let values: Values = [("producer_byte_rate".to_string(), 1024.0)].into();
        store
            .set(&entity, values)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!store.is_empty());
        store
            .set(&entity, Values::new())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(store.is_empty());
    }
}
