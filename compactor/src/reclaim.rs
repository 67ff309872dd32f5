//! WAL object reclamation with a lifecycle recorded in the MetaStore:
//! (no record = ACTIVE) -> MARKED (unreferenced, grace period starts) -> DELETING -> DELETED.
//! An object is deleted only when no RAW index entry of any stream its directory names still
//! points at it, and the grace period since it was marked has passed (in-flight reads finish,
//! late commits land). A crash in DELETING resumes the delete on the next pass.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use metastore::{Comparison, MetaStore, PutOptions};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::{Deserialize, Serialize};
use storage::FileType;

use crate::referenced;
use crate::wal_scan::WalObject;
use crate::{CompactorConfig, CompactorError};

const LIFECYCLE_PREFIX: &str = "compactor/objects/";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum State {
    Marked,
    Deleting,
    Deleted,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Lifecycle {
    state: State,
    marked_ms: u64,
}

/// Object keys hold '/', which the MetaStore treats as a hierarchy separator.
fn lifecycle_key(object_key: &str) -> String {
    format!("{LIFECYCLE_PREFIX}{}", object_key.replace('/', "|"))
}

pub struct Reclaimer<'a> {
    pub objects: &'a Arc<dyn ObjectStore>,
    pub meta: &'a Arc<dyn MetaStore>,
    pub config: &'a CompactorConfig,
}

impl Reclaimer<'_> {
    /// One reclamation pass over the listed objects; returns how many were deleted.
    pub async fn run(&self, wal: &[WalObject], now_ms: u64) -> Result<u64, CompactorError> {
        let mut referenced: HashMap<String, HashSet<String>> = HashMap::new();
        let mut deleted = 0;
        for object in wal {
            let mut in_use = false;
            for s in &object.streams {
                if !referenced.contains_key(s) {
                    let keys =
                        referenced::object_keys(self.meta.as_ref(), s, FileType::Raw).await?;
                    referenced.insert(s.clone(), keys);
                }
                in_use |= referenced.get(s).is_some_and(|k| k.contains(&object.key));
            }
            let key = lifecycle_key(&object.key);
            let current = self.lifecycle(&key).await?;
            if in_use {
                if current.is_some() {
                    // Marked too early (a late commit); it is active again.
                    self.meta.delete(&key, Default::default(), None).await.ok();
                }
                continue;
            }
            let state = match current {
                None => {
                    // A commit for a freshly written object may still be on its way.
                    if now_ms.saturating_sub(object.last_modified_ms) < self.config.grace_period_ms
                    {
                        continue;
                    }
                    self.set(&key, State::Marked, now_ms).await?;
                    Lifecycle {
                        state: State::Marked,
                        marked_ms: now_ms,
                    }
                }
                Some(l) => l,
            };
            if state.state == State::Marked
                && now_ms.saturating_sub(state.marked_ms) < self.config.grace_period_ms
            {
                continue;
            }
            self.set(&key, State::Deleting, state.marked_ms).await?;
            match self.objects.delete(&Path::from(object.key.as_str())).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            self.set(&key, State::Deleted, state.marked_ms).await?;
            tracing::info!(object_key = %object.key, "reclaimed wal object");
            deleted += 1;
        }
        self.forget_deleted(wal).await?;
        Ok(deleted)
    }

    async fn lifecycle(&self, key: &str) -> Result<Option<Lifecycle>, CompactorError> {
        let Some(r) = self.meta.get(key, Comparison::Equal, None).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&r.value)
            .map(Some)
            .map_err(|e| CompactorError::Corrupt(format!("{key}: {e}")))
    }

    async fn set(&self, key: &str, state: State, marked_ms: u64) -> Result<(), CompactorError> {
        let value = serde_json::to_vec(&Lifecycle { state, marked_ms })
            .map_err(|e| CompactorError::Corrupt(e.to_string()))?;
        self.meta
            .put(key, value.into(), PutOptions::default())
            .await?;
        Ok(())
    }

    /// Lifecycle records of objects no longer listed: DELETING ones are finished (the listing
    /// alone is not trusted: the delete is repeated), DELETED ones are dropped.
    async fn forget_deleted(&self, wal: &[WalObject]) -> Result<(), CompactorError> {
        let listed: HashSet<String> = wal.iter().map(|o| lifecycle_key(&o.key)).collect();
        let end = format!("{LIFECYCLE_PREFIX}\u{7f}");
        let keys = self.meta.list(LIFECYCLE_PREFIX, &end, None).await?;
        for key in keys {
            if listed.contains(&key) {
                continue;
            }
            let Some(state) = self.lifecycle(&key).await? else {
                continue;
            };
            if state.state == State::Deleting {
                let object_key = key[LIFECYCLE_PREFIX.len()..].replace('|', "/");
                match self.objects.delete(&Path::from(object_key.as_str())).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            if state.state != State::Marked {
                match self.meta.delete(&key, Default::default(), None).await {
                    Ok(()) | Err(metastore::MetaError::KeyNotFound) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }
}
