//! ACLs in the coordination MetaStore, one key per binding (`acl::key`), and this broker's
//! in-memory index of them, kept current by the store's change notifications: a change made
//! on any broker reaches every other within the notification latency (~50 ms for the embedded
//! store across processes). The index is rebuilt from a listing of the keys at start, when the
//! notification stream ends, and every [`RESYNC_INTERVAL`] in case notifications were dropped
//! (the embedded store drops the oldest for a subscriber that falls 4096 behind).

use std::collections::HashSet;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use kafka_protocol::ResponseError;
use metastore::{Expect, MetaError, MetaStore, Notification, PutOptions};

use super::index::AclIndex;
use crate::security::acl::{key, AclBinding, AclBindingFilter, InvalidAcl};

/// How often the index is rebuilt from the store besides notifications.
pub const RESYNC_INTERVAL: Duration = Duration::from_secs(30);
/// Kafka's `MAX_RECORDS_PER_USER_OP`: ACLs one CreateAcls or one DeleteAcls filter may touch.
pub const ACLS_PER_OPERATION_MAX: usize = 10_000;
/// Pause before following notifications again after the stream failed.
const RESUBSCRIBE_DELAY: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum AclError {
    #[error("{0}")]
    Invalid(#[from] InvalidAcl),
    #[error("{0}")]
    InvalidFilter(&'static str),
    #[error("the cluster holds {count} ACLs, the most --acls-max allows")]
    Limit { count: usize },
    #[error("Cannot {what} more than {ACLS_PER_OPERATION_MAX} acls in a single {what} operation.")]
    TooMany { what: &'static str },
    #[error("metadata store: {0}")]
    Store(#[from] MetaError),
}

impl AclError {
    /// The code Kafka answers for the same failure.
    pub fn code(&self) -> ResponseError {
        match self {
            AclError::Invalid(_) | AclError::InvalidFilter(_) => ResponseError::InvalidRequest,
            AclError::Limit { .. } => ResponseError::PolicyViolation,
            AclError::TooMany { .. } => ResponseError::UnknownServerError,
            AclError::Store(e) if e.is_retriable() => ResponseError::RequestTimedOut,
            AclError::Store(_) => ResponseError::UnknownServerError,
        }
    }
}

pub struct AclStore {
    meta: Arc<dyn MetaStore>,
    index: RwLock<AclIndex>,
    acls_max: usize,
}

impl AclStore {
    /// Loads every ACL and starts following changes made through any broker.
    pub async fn open(
        meta: Arc<dyn MetaStore>,
        acls_max: usize,
    ) -> Result<Arc<AclStore>, MetaError> {
        let store = Arc::new(AclStore {
            meta: meta.clone(),
            index: RwLock::new(AclIndex::default()),
            acls_max,
        });
        // Subscribe before listing, so that no change falls between the two.
        let notifications = meta.notifications().await?;
        let count = store.reload().await?;
        tracing::info!(acls = count, "acls loaded");
        tokio::spawn(follow(Arc::downgrade(&store), notifications));
        Ok(store)
    }

    /// The index, for decisions and DescribeAcls. Held briefly: writers wait for readers.
    pub fn read(&self) -> RwLockReadGuard<'_, AclIndex> {
        // A poisoned lock means a panic while holding it; every change is one insert or
        // remove, so the index is consistent.
        self.index.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, AclIndex> {
        self.index.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Rebuilds the index from a listing of the keys; returns the number of ACLs.
    async fn reload(&self) -> Result<usize, MetaError> {
        let keys = self.meta.list(key::PREFIX, key::END, None).await?;
        let bindings: Vec<AclBinding> = keys.iter().filter_map(|k| key::decode(k)).collect();
        if bindings.len() < keys.len() {
            let ignored = keys.len() - bindings.len();
            tracing::warn!(ignored, "ignoring acl keys this broker cannot read");
        }
        let index = AclIndex::from_bindings(bindings);
        let count = index.len();
        if count > self.acls_max {
            tracing::warn!(
                acls = count,
                acls_max = self.acls_max,
                "more acls stored than --acls-max allows; all are enforced"
            );
        }
        *self.write() = index;
        Ok(count)
    }

    fn apply(&self, notification: &Notification) -> NeedsReload {
        match notification {
            Notification::KeyCreated { key, .. } | Notification::KeyModified { key, .. } => {
                if let Some(binding) = key::decode(key) {
                    self.write().insert(binding);
                }
            }
            Notification::KeyDeleted { key } => {
                if let Some(binding) = key::decode(key) {
                    self.write().remove(&binding);
                }
            }
            Notification::KeyRangeDeleted { key, end_key } => {
                let outside = metastore::compare_keys(end_key, key::PREFIX).is_le()
                    || metastore::compare_keys(key, key::END).is_ge();
                return NeedsReload(!outside);
            }
        }
        NeedsReload(false)
    }

    /// Stores each binding (an existing one is left as is: creating it again succeeds, as in
    /// Kafka); the answers are in the order of `bindings`.
    pub async fn create(&self, bindings: Vec<AclBinding>) -> Vec<Result<(), AclError>> {
        if bindings.len() > ACLS_PER_OPERATION_MAX {
            return bindings
                .iter()
                .map(|_| Err(AclError::TooMany { what: "create" }))
                .collect();
        }
        let mut results = Vec::with_capacity(bindings.len());
        for binding in bindings {
            results.push(self.create_one(binding).await);
        }
        results
    }

    async fn create_one(&self, binding: AclBinding) -> Result<(), AclError> {
        binding.validate()?;
        {
            let index = self.read();
            if index.len() >= self.acls_max && !index.contains(&binding) {
                return Err(AclError::Limit { count: index.len() });
            }
        }
        let options = PutOptions {
            expect: Expect::NotExists,
            ..Default::default()
        };
        match self
            .meta
            .put(&key::encode(&binding), key::value(&binding), options)
            .await
        {
            Ok(_) => tracing::info!(acl = %binding, "acl created"),
            Err(MetaError::UnexpectedVersion) => {}
            Err(e) => return Err(e.into()),
        }
        self.write().insert(binding);
        Ok(())
    }

    /// Deletes every stored binding each filter selects; answers, per filter, the bindings
    /// deleted. Reads the keys from the store rather than the index, so that an ACL another
    /// broker created a moment ago is not missed.
    pub async fn delete(
        &self,
        filters: &[AclBindingFilter],
    ) -> Vec<Result<Vec<AclBinding>, AclError>> {
        let stored = match self.meta.list(key::PREFIX, key::END, None).await {
            Ok(keys) => keys
                .iter()
                .filter_map(|k| key::decode(k))
                .collect::<Vec<_>>(),
            Err(e) => {
                return filters
                    .iter()
                    .map(|_| Err(AclError::Store(e.clone())))
                    .collect()
            }
        };
        // As Kafka, every filter answers all it matched, even what an earlier filter of the
        // same request deleted.
        let mut gone = HashSet::new();
        let mut results = Vec::with_capacity(filters.len());
        for filter in filters {
            results.push(self.delete_matching(filter, &stored, &mut gone).await);
        }
        results
    }

    async fn delete_matching(
        &self,
        filter: &AclBindingFilter,
        stored: &[AclBinding],
        gone: &mut HashSet<AclBinding>,
    ) -> Result<Vec<AclBinding>, AclError> {
        filter.check_known().map_err(AclError::InvalidFilter)?;
        let mut matching: Vec<AclBinding> = stored
            .iter()
            .filter(|b| filter.matches(b))
            .cloned()
            .collect();
        if matching.len() > ACLS_PER_OPERATION_MAX {
            return Err(AclError::TooMany { what: "remove" });
        }
        matching.sort();
        let mut deleted = Vec::with_capacity(matching.len());
        for binding in matching {
            if gone.contains(&binding) {
                deleted.push(binding);
                continue;
            }
            match self
                .meta
                .delete(&key::encode(&binding), Expect::Any, None)
                .await
            {
                Ok(()) => {
                    tracing::info!(acl = %binding, "acl deleted");
                    self.write().remove(&binding);
                    gone.insert(binding.clone());
                    deleted.push(binding);
                }
                // Another broker deleted it since the listing.
                Err(MetaError::KeyNotFound) => {
                    self.write().remove(&binding);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(deleted)
    }
}

struct NeedsReload(bool);

/// Applies notifications as they come and rebuilds the index every [`RESYNC_INTERVAL`], until
/// the store is dropped. One task does both, so a rebuild never overwrites a change applied
/// after its listing: changes after the listing arrive as notifications after the rebuild.
async fn follow(store: Weak<AclStore>, notifications: BoxStream<'static, Notification>) {
    let mut notifications = Some(notifications);
    let mut resync = tokio::time::interval(RESYNC_INTERVAL);
    resync.tick().await;
    loop {
        let next = match notifications.as_mut() {
            Some(stream) => tokio::select! {
                n = stream.next() => Event::Change(n),
                _ = resync.tick() => Event::Resync,
            },
            None => {
                tokio::time::sleep(RESUBSCRIBE_DELAY).await;
                Event::Resubscribe
            }
        };
        let Some(store) = store.upgrade() else {
            return;
        };
        let reload = match next {
            Event::Change(Some(n)) => store.apply(&n).0,
            Event::Change(None) => {
                tracing::warn!("acl change notifications ended; following them again");
                notifications = None;
                false
            }
            Event::Resync => true,
            Event::Resubscribe => match store.meta.notifications().await {
                Ok(stream) => {
                    notifications = Some(stream);
                    true
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot follow acl changes");
                    false
                }
            },
        };
        if reload {
            if let Err(error) = store.reload().await {
                tracing::warn!(%error, "cannot reload acls");
            }
        }
    }
}

enum Event {
    Change(Option<Notification>),
    Resync,
    Resubscribe,
}
