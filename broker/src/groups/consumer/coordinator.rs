//! The consumer groups this broker coordinates: one lock per group, a timer task for session
//! and revocation deadlines, and persistence of each group's record after every change.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use kafka_protocol::ResponseError;
use storage::meta::{MetaError, MetaStore};
use tokio::sync::Mutex;

use super::group::{
    ConsumerGroup, ConsumerGroupState, GroupDescription, Heartbeat, HeartbeatAnswer, Refusal,
};
use super::store::ConsumerGroupStore;
use super::{ConsumerGroupConfig, TopicMeta};
use crate::groups::clock::Clock;
use crate::groups::expiry::{expire_group_offsets, GroupExpiry, SweepReport};
use crate::groups::store::{GroupStore, StoreError};

type SharedGroup = Arc<Mutex<ConsumerGroup>>;

/// A row of ListGroups.
#[derive(Debug, Clone)]
pub struct ListedConsumerGroup {
    pub group_id: String,
    pub state: ConsumerGroupState,
}

pub struct ConsumerCoordinator {
    config: ConsumerGroupConfig,
    store: ConsumerGroupStore,
    /// Committed offsets (shared with classic groups), for their expiry.
    offsets: GroupStore,
    clock: Arc<dyn Clock>,
    groups: StdMutex<HashMap<String, SharedGroup>>,
    closed: AtomicBool,
}

impl ConsumerCoordinator {
    /// Loads every stored consumer group and starts the timer task.
    pub async fn open(
        meta: Arc<dyn MetaStore>,
        config: ConsumerGroupConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<ConsumerCoordinator>, StoreError> {
        let offsets = GroupStore::new(meta.clone());
        let store = ConsumerGroupStore::new(meta);
        let now_ms = clock.now_ms();
        let mut groups = HashMap::new();
        for (group_id, record, version) in store.load_all().await? {
            let group = ConsumerGroup::from_record(&group_id, config, record, version, now_ms);
            groups.insert(group_id, Arc::new(Mutex::new(group)));
        }
        tracing::info!(groups = groups.len(), "consumer group coordinator loaded");
        let coordinator = Arc::new(ConsumerCoordinator {
            config,
            store,
            offsets,
            clock,
            groups: StdMutex::new(groups),
            closed: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&coordinator);
        let tick_interval = Duration::from_millis(config.tick_interval_ms.max(1));
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(tick_interval);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                interval.tick().await;
                let Some(coordinator) = weak.upgrade() else {
                    return;
                };
                if coordinator.closed.load(Ordering::SeqCst) {
                    return;
                }
                coordinator.tick_all().await;
            }
        });
        Ok(coordinator)
    }

    pub fn config(&self) -> &ConsumerGroupConfig {
        &self.config
    }

    /// Whether this coordinator holds `group_id` in memory (without asking the store).
    pub fn is_cached(&self, group_id: &str) -> bool {
        self.groups_lock().contains_key(group_id)
    }

    pub fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    pub async fn tick_all(&self) {
        for group in self.snapshot() {
            let mut group = group.lock().await;
            group.tick(self.clock.now_ms());
            self.persist(&mut group).await;
        }
    }

    /// Serves a heartbeat; a joining heartbeat creates the group. The answer is sent only
    /// after the group record that it reflects is durable.
    pub async fn heartbeat(
        &self,
        group_id: &str,
        request: Heartbeat,
        topics: &(dyn Fn(&str) -> Option<TopicMeta> + Sync),
    ) -> Result<HeartbeatAnswer, Refusal> {
        let unavailable = |message: &str| Refusal {
            error: ResponseError::CoordinatorNotAvailable,
            message: message.to_string(),
        };
        let group = if request.member_epoch == super::group::JOIN_EPOCH {
            self.get_or_create(group_id).await
        } else {
            self.existing(group_id).await
        };
        let group = match group {
            Ok(Some(group)) => group,
            Ok(None) => {
                return Err(Refusal {
                    error: ResponseError::UnknownMemberId,
                    message: format!("group {group_id} has no members"),
                })
            }
            Err(error) => {
                return Err(Refusal {
                    error,
                    message: "group unavailable".into(),
                })
            }
        };
        let mut group = group.lock().await;
        let answer = group.heartbeat(request, topics, self.clock.now_ms());
        if !self.persist(&mut group).await {
            return Err(unavailable("group state could not be stored"));
        }
        answer
    }

    /// `None` when `group_id` is not a consumer group, else whether a member may commit.
    pub async fn check_commit(
        &self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
    ) -> Option<Result<(), ResponseError>> {
        let group = match self.existing(group_id).await {
            Ok(Some(group)) => group,
            Ok(None) => return None,
            Err(error) => return Some(Err(error)),
        };
        let group = group.lock().await;
        Some(group.check_commit(member_id, member_epoch))
    }

    /// `None` when `group_id` is not a consumer group, else whether a member may fetch.
    pub async fn check_fetch(
        &self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
    ) -> Option<Result<(), ResponseError>> {
        let group = match self.existing(group_id).await {
            Ok(Some(group)) => group,
            Ok(None) => return None,
            Err(error) => return Some(Err(error)),
        };
        let group = group.lock().await;
        Some(group.check_fetch(member_id, member_epoch))
    }

    pub async fn describe(
        &self,
        group_id: &str,
    ) -> Result<Option<GroupDescription>, ResponseError> {
        let Some(group) = self.existing(group_id).await? else {
            return Ok(None);
        };
        let group = group.lock().await;
        Ok(Some(group.describe()))
    }

    /// Whether a member of the group subscribes to `topic` (`None`: not a consumer group).
    pub async fn is_subscribed_to(&self, group_id: &str, topic: &str) -> Option<bool> {
        let group = self.existing(group_id).await.ok()??;
        let group = group.lock().await;
        Some(group.is_subscribed_to(topic))
    }

    pub async fn list(&self) -> Vec<ListedConsumerGroup> {
        let mut listed = Vec::new();
        for group in self.snapshot() {
            let group = group.lock().await;
            // A group whose first join was refused was never stored: nobody knows it.
            if group.store_version.is_none() && group.is_empty() {
                continue;
            }
            listed.push(ListedConsumerGroup {
                group_id: group.group_id().to_string(),
                state: group.state(),
            });
        }
        listed.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        listed
    }

    /// Drops an empty consumer group's record, so that the id can become a classic group or
    /// be deleted. `Ok(false)`: no such consumer group; `NON_EMPTY_GROUP` if it has members.
    pub async fn remove_if_empty(&self, group_id: &str) -> Result<bool, ResponseError> {
        let Some(shared) = self.existing(group_id).await? else {
            return Ok(false);
        };
        let group = shared.lock().await;
        if !group.is_empty() {
            return Err(ResponseError::NonEmptyGroup);
        }
        if let Err(error) = self.store.delete(group_id, group.store_version).await {
            tracing::warn!(group = group_id, %error, "consumer group delete failed");
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        let mut groups = self.groups_lock();
        if groups
            .get(group_id)
            .is_some_and(|g| Arc::ptr_eq(g, &shared))
        {
            groups.remove(group_id);
        }
        tracing::info!(group = group_id, "consumer group removed");
        Ok(true)
    }

    /// Offset expiry over up to `limit` stored consumer groups after the key `after`: the
    /// empty ones `owns` names lose their due offsets, and the group goes when none is left.
    /// Returns the cursor of the next page (`None`: all read).
    pub async fn expire_offsets_page(
        &self,
        after: Option<&str>,
        limit: usize,
        owns: &(dyn Fn(&str) -> bool + Send + Sync),
        now_ms: u64,
        retention_ms: u64,
    ) -> Result<(SweepReport, Option<String>), StoreError> {
        let (page, next) = self.store.scan_page(after, limit).await?;
        let mut report = SweepReport::default();
        for (group_id, has_members, version) in page {
            report.groups_examined += 1;
            if has_members || !owns(&group_id) {
                continue;
            }
            match self
                .expire_group(&group_id, version, now_ms, retention_ms)
                .await
            {
                Ok(expiry) => report.add(expiry),
                Err(error) => {
                    tracing::warn!(group = %group_id, %error, "offset expiry failed for consumer group")
                }
            }
        }
        Ok((report, next))
    }

    /// Kafka counts a consumer group's offsets from their commits (there is no "became empty"
    /// time in KIP-848 groups).
    async fn expire_group(
        &self,
        group_id: &str,
        version: i64,
        now_ms: u64,
        retention_ms: u64,
    ) -> Result<GroupExpiry, StoreError> {
        let Ok(Some(shared)) = self.existing(group_id).await else {
            return Ok(GroupExpiry::default());
        };
        let mut group = shared.lock().await;
        if !group.is_empty() {
            return Ok(GroupExpiry::default());
        }
        if group.store_version != Some(version) {
            // The scan or this broker's copy is behind: decide on what is stored now.
            match self.store.load(group_id).await? {
                None => return Ok(GroupExpiry::default()),
                Some((fresh, fresh_version)) if group.store_version != Some(fresh_version) => {
                    if !fresh.members.is_empty() {
                        return Ok(GroupExpiry::default());
                    }
                    if group.take_dirty() {
                        group.mark_dirty();
                        return Ok(GroupExpiry::default());
                    }
                    *group = ConsumerGroup::from_record(
                        group_id,
                        self.config,
                        fresh,
                        fresh_version,
                        now_ms,
                    );
                }
                Some(_) => {}
            }
        }
        let (offsets_deleted, remaining) =
            expire_group_offsets(&self.offsets, group_id, None, now_ms, retention_ms).await?;
        let mut expiry = GroupExpiry {
            offsets_deleted,
            group_deleted: false,
        };
        if offsets_deleted > 0 {
            tracing::info!(
                group = group_id,
                offsets = offsets_deleted,
                "committed offsets expired"
            );
        }
        let (0, Some(version)) = (remaining, group.store_version) else {
            return Ok(expiry);
        };
        match self.store.delete(group_id, Some(version)).await {
            Ok(()) => {}
            Err(StoreError::Meta(MetaError::UnexpectedVersion)) => return Ok(expiry),
            Err(error) => return Err(error),
        }
        drop(group);
        let mut groups = self.groups_lock();
        if groups
            .get(group_id)
            .is_some_and(|g| Arc::ptr_eq(g, &shared))
        {
            groups.remove(group_id);
        }
        expiry.group_deleted = true;
        tracing::info!(
            group = group_id,
            "empty consumer group without offsets deleted"
        );
        Ok(expiry)
    }

    async fn existing(&self, group_id: &str) -> Result<Option<SharedGroup>, ResponseError> {
        if let Some(group) = self.groups_lock().get(group_id) {
            return Ok(Some(group.clone()));
        }
        // Another broker may have coordinated the group since we loaded.
        match self.store.load(group_id).await {
            Ok(Some((record, version))) => {
                let group = ConsumerGroup::from_record(
                    group_id,
                    self.config,
                    record,
                    version,
                    self.clock.now_ms(),
                );
                let mut groups = self.groups_lock();
                Ok(Some(
                    groups
                        .entry(group_id.to_string())
                        .or_insert_with(|| Arc::new(Mutex::new(group)))
                        .clone(),
                ))
            }
            Ok(None) => Ok(None),
            Err(error) => {
                tracing::warn!(group = group_id, %error, "cannot load consumer group");
                Err(ResponseError::CoordinatorNotAvailable)
            }
        }
    }

    async fn get_or_create(&self, group_id: &str) -> Result<Option<SharedGroup>, ResponseError> {
        if let Some(group) = self.existing(group_id).await? {
            return Ok(Some(group));
        }
        let mut groups = self.groups_lock();
        if !groups.contains_key(group_id) && groups.len() >= self.config.groups_max {
            tracing::warn!(
                group = group_id,
                groups_max = self.config.groups_max,
                "consumer group refused: too many groups"
            );
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        let group = groups
            .entry(group_id.to_string())
            .or_insert_with(|| Arc::new(Mutex::new(ConsumerGroup::new(group_id, self.config))));
        Ok(Some(group.clone()))
    }

    /// Writes the group record if it changed. `false` when the write failed (the group stays
    /// dirty and the next tick retries).
    async fn persist(&self, group: &mut ConsumerGroup) -> bool {
        if !group.take_dirty() {
            return true;
        }
        let group_id = group.group_id().to_string();
        match self
            .store
            .save(&group_id, &group.to_record(), group.store_version)
            .await
        {
            Ok(version) => {
                group.store_version = Some(version);
                true
            }
            Err(StoreError::Meta(MetaError::UnexpectedVersion | MetaError::KeyNotFound)) => {
                // Another coordinator wrote the record: this one owns the group now (the
                // hash says so), so adopt the stored version and write again.
                tracing::warn!(group = %group_id, "consumer group record changed behind this coordinator");
                group.store_version = match self.store.load(&group_id).await {
                    Ok(found) => found.map(|(_, version)| version),
                    Err(_) => group.store_version,
                };
                group.mark_dirty();
                false
            }
            Err(error) => {
                tracing::warn!(group = %group_id, %error, "cannot persist consumer group");
                group.mark_dirty();
                false
            }
        }
    }

    fn snapshot(&self) -> Vec<SharedGroup> {
        self.groups_lock().values().cloned().collect()
    }

    // The map is only changed by single inserts/removes, so a poisoned lock still holds a
    // consistent map.
    fn groups_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SharedGroup>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }
}
