//! The in-memory groups of one coordinator, classic or consumer alike: one lock per group,
//! loading from the store on a miss, and a bound on how many it holds.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex as StdMutex, MutexGuard};

use kafka_protocol::ResponseError;
use tokio::sync::Mutex;

use super::store::StoreError;

/// One group behind its own lock.
pub type Shared<G> = Arc<Mutex<G>>;

pub struct GroupRegistry<G> {
    /// Which kind of group this holds ("classic", "consumer"), for logs.
    kind: &'static str,
    groups_max: usize,
    groups: StdMutex<HashMap<String, Shared<G>>>,
}

impl<G> GroupRegistry<G> {
    /// A registry holding the groups loaded at start (the bound applies to new groups only,
    /// so that no stored group is lost).
    pub fn new(
        kind: &'static str,
        groups_max: usize,
        loaded: impl IntoIterator<Item = (String, G)>,
    ) -> GroupRegistry<G> {
        let groups: HashMap<String, Shared<G>> = loaded
            .into_iter()
            .map(|(group_id, group)| (group_id, Arc::new(Mutex::new(group))))
            .collect();
        tracing::info!(kind, groups = groups.len(), "group coordinator loaded");
        GroupRegistry {
            kind,
            groups_max,
            groups: StdMutex::new(groups),
        }
    }

    /// Whether `group_id` is held in memory (without asking the store).
    pub fn contains(&self, group_id: &str) -> bool {
        self.lock().contains_key(group_id)
    }

    /// The group if held in memory, else the one `read` finds in the store (another broker
    /// may have created or coordinated it since this one loaded), built by `from_record`.
    /// `read` runs only on a miss.
    pub async fn existing<R>(
        &self,
        group_id: &str,
        read: impl Future<Output = Result<Option<(R, i64)>, StoreError>>,
        from_record: impl FnOnce(R, i64) -> G,
    ) -> Result<Option<Shared<G>>, ResponseError> {
        if let Some(group) = self.lock().get(group_id) {
            return Ok(Some(group.clone()));
        }
        match read.await {
            Ok(Some((record, version))) => {
                let group = from_record(record, version);
                Ok(Some(self.insert_if_absent(group_id, || group)))
            }
            Ok(None) => Ok(None),
            Err(error) => {
                tracing::warn!(group = group_id, kind = self.kind, %error, "cannot load group");
                Err(ResponseError::CoordinatorNotAvailable)
            }
        }
    }

    /// The held group, or a new one from `new` if fewer than `groups_max` are held.
    pub fn get_or_insert_new(
        &self,
        group_id: &str,
        new: impl FnOnce() -> G,
    ) -> Result<Shared<G>, ResponseError> {
        let mut groups = self.lock();
        if !groups.contains_key(group_id) && groups.len() >= self.groups_max {
            tracing::warn!(
                group = group_id,
                kind = self.kind,
                groups_max = self.groups_max,
                "group refused: too many groups"
            );
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        Ok(groups
            .entry(group_id.to_string())
            .or_insert_with(|| Arc::new(Mutex::new(new())))
            .clone())
    }

    /// The held group, or the one `make` builds, held from now on (without the bound: it
    /// exists in the store already).
    pub fn insert_if_absent(&self, group_id: &str, make: impl FnOnce() -> G) -> Shared<G> {
        self.lock()
            .entry(group_id.to_string())
            .or_insert_with(|| Arc::new(Mutex::new(make())))
            .clone()
    }

    /// Drops `shared` if it is still the group held under `group_id` (a newer one stays).
    pub fn forget(&self, group_id: &str, shared: &Shared<G>) {
        let mut groups = self.lock();
        if groups.get(group_id).is_some_and(|g| Arc::ptr_eq(g, shared)) {
            groups.remove(group_id);
        }
    }

    /// Every held group, for a pass that locks them one at a time.
    pub fn snapshot(&self) -> Vec<Shared<G>> {
        self.lock().values().cloned().collect()
    }

    // The map is only ever changed by single inserts/removes, so a poisoned lock still holds
    // a consistent map.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Shared<G>>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(groups_max: usize) -> GroupRegistry<u32> {
        GroupRegistry::new("test", groups_max, [("a".to_string(), 1)])
    }

    async fn read(found: Option<(u32, i64)>) -> Result<Option<(u32, i64)>, StoreError> {
        Ok(found)
    }

    async fn read_must_not_run() -> Result<Option<(u32, i64)>, StoreError> {
        panic!("the store must not be read")
    }

    #[tokio::test]
    async fn held_group_is_served_without_reading_the_store() {
        let groups = registry(10);
        let found = groups
            .existing("a", read_must_not_run(), |r, _| r)
            .await
            .unwrap();
        assert_eq!(*found.unwrap().lock().await, 1);
    }

    #[tokio::test]
    async fn stored_group_is_loaded_and_held() {
        let groups = registry(10);
        let found = groups
            .existing("b", read(Some((7, 3))), |r, version| {
                r + u32::try_from(version).unwrap()
            })
            .await
            .unwrap();
        assert_eq!(*found.unwrap().lock().await, 10);
        assert!(groups.contains("b"));
    }

    #[tokio::test]
    async fn unknown_group_is_none_and_a_failed_read_is_unavailable() {
        let groups = registry(10);
        let none = groups.existing("b", read(None), |r, _| r).await;
        assert!(none.unwrap().is_none());
        let failed = async {
            Err::<Option<(u32, i64)>, _>(StoreError::Corrupt {
                key: "k".into(),
                reason: "bad".into(),
            })
        };
        let error = groups.existing("b", failed, |r, _| r).await.err();
        assert_eq!(error, Some(ResponseError::CoordinatorNotAvailable));
    }

    #[tokio::test]
    async fn new_groups_stop_at_the_bound_but_held_ones_are_still_served() {
        let groups = registry(2);
        assert!(groups.get_or_insert_new("b", || 2).is_ok());
        let refused = groups.get_or_insert_new("c", || 3).err();
        assert_eq!(refused, Some(ResponseError::CoordinatorNotAvailable));
        let held = groups.get_or_insert_new("b", || 9).unwrap();
        assert_eq!(*held.lock().await, 2);
    }

    #[tokio::test]
    async fn forget_leaves_a_newer_group_of_the_same_id() {
        let groups = registry(10);
        let old = groups.insert_if_absent("b", || 1);
        groups.forget("b", &old);
        let newer = groups.insert_if_absent("b", || 2);
        groups.forget("b", &old);
        assert!(groups.contains("b"));
        groups.forget("b", &newer);
        assert!(!groups.contains("b"));
        assert_eq!(groups.snapshot().len(), 1);
    }
}
