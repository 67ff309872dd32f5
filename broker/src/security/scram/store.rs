//! SCRAM credentials in the coordination MetaStore: one key per user and mechanism,
//! `scram/<mechanism>/<user>` (`scram/SCRAM-SHA-512/alice`), whose value is the credential
//! in JSON (salt, stored key, server key, iterations: never the password). User names are
//! percent-encoded where they hold `%`, `/` or control characters, so every key has exactly
//! two `/` and the keys of one mechanism form one range.
//!
//! Every broker keeps all credentials in memory ([`ScramCredentials`]), loaded before its
//! listener opens and kept current by the store's change notifications, so that a login
//! never waits on the store. `broker scram` uses the same functions without the cache.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use futures::StreamExt;
use metastore::{Comparison, Expect, MetaError, MetaStore, Notification, PutOptions};

use super::credential::ScramCredential;
use super::mechanism::ScramMechanism;
use super::server::CredentialLookup;

use crate::key_escape::{escape, unescape};

/// Characters escaped in names: the separator of a credential key.
const RESERVED: &[char] = &['/'];

pub const PREFIX: &str = "scram/";
/// Credentials the cluster may hold (each broker keeps them all in memory, ~300 bytes each).
pub const CREDENTIALS_MAX: usize = 100_000;
/// Longest user name accepted, in bytes.
pub const USER_NAME_BYTES_MAX: usize = 1024;
const SCAN_PAGE: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum ScramStoreError {
    #[error("the cluster holds {CREDENTIALS_MAX} SCRAM credentials, the most it may")]
    Full,
    #[error("credential record {key} is unreadable: {reason}")]
    Corrupt { key: String, reason: String },
    #[error(transparent)]
    Meta(#[from] MetaError),
}

/// The key of `user`'s credential for `mechanism`.
pub fn key(mechanism: ScramMechanism, user: &str) -> String {
    format!("{PREFIX}{}/{}", mechanism.name(), escape(user, RESERVED))
}

/// The mechanism and user a key names; `None` for keys this version does not understand.
pub fn decode_key(key: &str) -> Option<(ScramMechanism, String)> {
    let (mechanism, user) = key.strip_prefix(PREFIX)?.split_once('/')?;
    Some((ScramMechanism::from_name(mechanism)?, unescape(user)?))
}

/// One stored credential.
#[derive(Debug, Clone)]
pub struct StoredCredential {
    pub user: String,
    pub mechanism: ScramMechanism,
    pub credential: ScramCredential,
}

pub async fn put(
    meta: &dyn MetaStore,
    user: &str,
    mechanism: ScramMechanism,
    credential: &ScramCredential,
) -> Result<(), ScramStoreError> {
    let value = Bytes::from(credential.to_json());
    meta.put(&key(mechanism, user), value, PutOptions::default())
        .await?;
    Ok(())
}

/// Deletes one credential; `Ok(false)` when there was none.
pub async fn delete(
    meta: &dyn MetaStore,
    user: &str,
    mechanism: ScramMechanism,
) -> Result<bool, ScramStoreError> {
    match meta.delete(&key(mechanism, user), Expect::Any, None).await {
        Ok(()) => Ok(true),
        Err(MetaError::KeyNotFound) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Every credential in the store, by mechanism then key order.
pub async fn list(meta: &dyn MetaStore) -> Result<Vec<StoredCredential>, ScramStoreError> {
    let mut all = Vec::new();
    for mechanism in ScramMechanism::ALL {
        let end = format!("{PREFIX}{}//", mechanism.name());
        let mut start = format!("{PREFIX}{}/", mechanism.name());
        loop {
            let page = meta.range_scan(&start, &end, None, SCAN_PAGE).await?;
            for record in &page {
                all.extend(decode(&record.key, &record.value)?);
            }
            match page.last() {
                // Escaped names hold no control characters: this is the next possible key.
                Some(last) if page.len() == SCAN_PAGE => start = format!("{}\u{1}", last.key),
                _ => break,
            }
        }
    }
    Ok(all)
}

/// A stored record as a credential; `Ok(None)` for keys of another version's format.
fn decode(key: &str, value: &[u8]) -> Result<Option<StoredCredential>, ScramStoreError> {
    let Some((mechanism, user)) = decode_key(key) else {
        return Ok(None);
    };
    let credential =
        ScramCredential::from_json(value).map_err(|reason| ScramStoreError::Corrupt {
            key: key.to_string(),
            reason,
        })?;
    Ok(Some(StoredCredential {
        user,
        mechanism,
        credential,
    }))
}

type Cache = HashMap<(String, ScramMechanism), ScramCredential>;

/// All credentials of the cluster, in memory, following the store.
pub struct ScramCredentials {
    meta: Arc<dyn MetaStore>,
    cache: RwLock<Cache>,
}

impl ScramCredentials {
    /// Loads every credential and starts following changes made by other brokers.
    pub async fn open(meta: Arc<dyn MetaStore>) -> Result<Arc<ScramCredentials>, ScramStoreError> {
        let credentials = Arc::new(ScramCredentials {
            meta: meta.clone(),
            cache: RwLock::new(HashMap::new()),
        });
        // Subscribe before the scan so that no change falls between the two.
        let mut notifications = meta.notifications().await?;
        credentials.reload_all().await?;
        let weak = Arc::downgrade(&credentials);
        tokio::spawn(async move {
            while let Some(notification) = notifications.next().await {
                let Some(credentials) = weak.upgrade() else {
                    return;
                };
                credentials.apply(notification).await;
            }
        });
        Ok(credentials)
    }

    async fn reload_all(&self) -> Result<(), ScramStoreError> {
        let loaded: Cache = list(self.meta.as_ref())
            .await?
            .into_iter()
            .map(|c| ((c.user, c.mechanism), c.credential))
            .collect();
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
            tracing::warn!(%error, key = notification.key(), "cannot follow a scram credential change");
        }
    }

    /// Re-reads one key: the cache ends as the store is, whatever order changes arrive in.
    async fn refresh(&self, key: &str) -> Result<(), ScramStoreError> {
        let Some((mechanism, user)) = decode_key(key) else {
            return Ok(());
        };
        let record = self.meta.get(key, Comparison::Equal, None).await?;
        let decoded = match record {
            Some(record) => decode(&record.key, &record.value)?,
            None => None,
        };
        let mut cache = self.write();
        match decoded {
            Some(stored) => cache.insert((user, mechanism), stored.credential),
            None => cache.remove(&(user, mechanism)),
        };
        Ok(())
    }

    /// Stores `credential` (replacing any for the same user and mechanism).
    pub async fn upsert(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        credential: ScramCredential,
    ) -> Result<(), ScramStoreError> {
        let cache_key = (user.to_string(), mechanism);
        {
            let cache = self.read();
            if cache.len() >= CREDENTIALS_MAX && !cache.contains_key(&cache_key) {
                return Err(ScramStoreError::Full);
            }
        }
        put(self.meta.as_ref(), user, mechanism, &credential).await?;
        self.write().insert(cache_key, credential);
        Ok(())
    }

    /// Deletes one credential; `Ok(false)` when there was none.
    pub async fn delete(
        &self,
        user: &str,
        mechanism: ScramMechanism,
    ) -> Result<bool, ScramStoreError> {
        let existed = delete(self.meta.as_ref(), user, mechanism).await?;
        self.write().remove(&(user.to_string(), mechanism));
        Ok(existed)
    }

    pub fn contains(&self, user: &str, mechanism: ScramMechanism) -> bool {
        self.read().contains_key(&(user.to_string(), mechanism))
    }

    /// `(mechanism, iterations)` of each credential `user` has, by mechanism.
    pub fn describe(&self, user: &str) -> Vec<(ScramMechanism, i32)> {
        let cache = self.read();
        ScramMechanism::ALL
            .into_iter()
            .filter_map(|m| cache.get(&(user.to_string(), m)).map(|c| (m, c.iterations)))
            .collect()
    }

    /// Every user with a credential, in name order.
    pub fn users(&self) -> Vec<String> {
        let cache = self.read();
        let names: BTreeSet<&String> = cache.keys().map(|(user, _)| user).collect();
        names.into_iter().cloned().collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Cache> {
        self.cache
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Cache> {
        self.cache
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl CredentialLookup for ScramCredentials {
    fn scram_credential(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.read().get(&(user.to_string(), mechanism)).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_escape_what_would_break_them() {
        assert_eq!(
            key(ScramMechanism::Sha512, "alice"),
            "scram/SCRAM-SHA-512/alice"
        );
        for user in ["alice", "a/b", "50%", "tab\there", "é,=:"] {
            let k = key(ScramMechanism::Sha256, user);
            assert_eq!(k.matches('/').count(), 2, "{k}");
            assert_eq!(
                decode_key(&k),
                Some((ScramMechanism::Sha256, user.to_string()))
            );
        }
        assert_eq!(decode_key("scram/SCRAM-SHA-1/alice"), None);
        assert_eq!(decode_key("scram/SCRAM-SHA-256/%zz"), None);
    }

    /// A store of the test's own.
    async fn memory_store() -> Arc<dyn MetaStore> {
        Arc::new(metastore::MemoryMetaStore::open(Default::default()))
    }

    #[tokio::test]
    async fn the_cache_follows_writes_made_around_it() {
        let meta = memory_store().await;
        let ours = ScramCredentials::open(meta.clone()).await.unwrap();
        let credential =
            ScramCredential::from_password(ScramMechanism::Sha256, b"pw", 4096).unwrap();
        put(meta.as_ref(), "bob", ScramMechanism::Sha256, &credential)
            .await
            .unwrap();
        for _ in 0..100 {
            if ours.contains("bob", ScramMechanism::Sha256) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(ours.describe("bob"), vec![(ScramMechanism::Sha256, 4096)]);
        assert!(delete(meta.as_ref(), "bob", ScramMechanism::Sha256)
            .await
            .unwrap());
        for _ in 0..100 {
            if !ours.contains("bob", ScramMechanism::Sha256) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(ours.describe("bob").is_empty());
        assert!(!delete(meta.as_ref(), "bob", ScramMechanism::Sha256)
            .await
            .unwrap());
    }

    #[tokio::test]
    async fn list_reads_back_every_credential() {
        let meta = memory_store().await;
        let store = ScramCredentials::open(meta.clone()).await.unwrap();
        for (user, m) in [
            ("a", ScramMechanism::Sha256),
            ("a", ScramMechanism::Sha512),
            ("b/c", ScramMechanism::Sha512),
        ] {
            let credential = ScramCredential::from_password(m, b"pw", 4096).unwrap();
            store.upsert(user, m, credential).await.unwrap();
        }
        let listed: Vec<(String, ScramMechanism)> = list(meta.as_ref())
            .await
            .unwrap()
            .into_iter()
            .map(|c| (c.user, c.mechanism))
            .collect();
        assert_eq!(listed.len(), 3);
        assert!(listed.contains(&("b/c".to_string(), ScramMechanism::Sha512)));
        assert_eq!(store.users(), vec!["a".to_string(), "b/c".to_string()]);
    }
}
