//! The consumer groups this broker coordinates: one lock per group, a timer task for session
//! and revocation deadlines, and persistence of each group's record after every change.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use kafka_protocol::ResponseError;
use storage::meta::{MetaError, MetaStore};

use super::group::{
    ConsumerGroup, ConsumerGroupState, GroupDescription, Heartbeat, HeartbeatAnswer, Refusal,
};
use super::store::ConsumerGroupStore;
use super::topic_regex::RegexCache;
use super::{ConsumerGroupConfig, TopicSource};
use crate::groups::clock::Clock;
use crate::groups::expiry::{expire_group_offsets, GroupExpiry, Ownership, SweepReport};
use crate::groups::registry::{spawn_ticks, GroupRegistry, Shared, Ticking};
use crate::groups::store::{GroupStore, StoreError};
use crate::groups::stored::{catch_up_for_expiry, persist};

type SharedGroup = Shared<ConsumerGroup>;

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
    groups: GroupRegistry<ConsumerGroup>,
    /// Subscription regexes of all groups, compiled, with what they matched.
    regexes: RegexCache,
    closed: AtomicBool,
    /// Which groups the placement names this broker coordinator of; unset means all.
    ownership: OnceLock<Ownership>,
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
        let loaded = store
            .load_all()
            .await?
            .into_iter()
            .map(|(group_id, record, version)| {
                let group = ConsumerGroup::from_record(&group_id, config, record, version, now_ms);
                (group_id, group)
            });
        let groups = GroupRegistry::new("consumer", config.groups_max, loaded);
        let coordinator = Arc::new(ConsumerCoordinator {
            config,
            store,
            offsets,
            clock,
            groups,
            regexes: RegexCache::default(),
            closed: AtomicBool::new(false),
            ownership: OnceLock::new(),
        });
        spawn_ticks(&coordinator, config.tick_interval_ms);
        Ok(coordinator)
    }

    pub fn config(&self) -> &ConsumerGroupConfig {
        &self.config
    }

    pub fn regexes(&self) -> &RegexCache {
        &self.regexes
    }

    /// Whether this coordinator holds `group_id` in memory (without asking the store).
    pub fn is_cached(&self, group_id: &str) -> bool {
        self.groups.contains(group_id)
    }

    pub fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    pub async fn tick_all(&self) {
        for shared in self.groups.snapshot() {
            let mut group = shared.lock().await;
            // Another broker coordinates it now: drop it rather than expire its live members.
            if !self
                .ownership
                .get()
                .is_none_or(|owns| owns(group.group_id()))
            {
                let group_id = group.group_id().to_string();
                drop(group);
                self.groups.forget(&group_id, &shared);
                continue;
            }
            group.tick(self.clock.now_ms());
            self.persist(&mut group).await;
        }
    }

    pub fn set_ownership(&self, owns: Ownership) {
        let _ = self.ownership.set(owns);
    }

    /// Serves a heartbeat; a joining heartbeat creates the group. The answer is sent only
    /// after the group record that it reflects is durable.
    pub async fn heartbeat(
        &self,
        group_id: &str,
        request: Heartbeat,
        topics: &dyn TopicSource,
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
        self.check_member(group_id, |group| {
            group.check_commit(member_id, member_epoch)
        })
        .await
    }

    /// `None` when `group_id` is not a consumer group, else whether a member may fetch.
    pub async fn check_fetch(
        &self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
    ) -> Option<Result<(), ResponseError>> {
        self.check_member(group_id, |group| group.check_fetch(member_id, member_epoch))
            .await
    }

    /// `check` on the group, `None` when `group_id` is not a consumer group.
    async fn check_member(
        &self,
        group_id: &str,
        check: impl FnOnce(&ConsumerGroup) -> Result<(), ResponseError>,
    ) -> Option<Result<(), ResponseError>> {
        let group = match self.existing(group_id).await {
            Ok(Some(group)) => group,
            Ok(None) => return None,
            Err(error) => return Some(Err(error)),
        };
        let group = group.lock().await;
        Some(check(&group))
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
        for group in self.groups.snapshot() {
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
        let mut group = shared.lock().await;
        // Members whose session ran out are gone by now, however late the timer task runs.
        group.tick(self.clock.now_ms());
        if !group.is_empty() {
            return Err(ResponseError::NonEmptyGroup);
        }
        if let Err(error) = self.store.delete(group_id, group.store_version).await {
            tracing::warn!(group = group_id, %error, "consumer group delete failed");
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        self.groups.forget(group_id, &shared);
        tracing::info!(group = group_id, "consumer group removed");
        Ok(true)
    }

    /// Offset expiry over up to `limit` stored consumer groups after the key `after`, those
    /// `owns` names: offsets of topics no member subscribes to lose their due offsets, and an
    /// empty group goes when none is left. Returns the cursor of the next page (`None`: all
    /// read).
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
        // Groups with members are examined too: their unsubscribed topics expire.
        for (group_id, _has_members, version) in page {
            report.groups_examined += 1;
            if !owns(&group_id) {
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
    /// time in KIP-848 groups), and keeps those of topics a member subscribes to (its names
    /// and the topics its regex matched when last resolved).
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
        // Held until the offsets are deleted: a member subscribing again waits for the sweep.
        let mut group = shared.lock().await;
        // A copy with members that is out of step with the scanned record is left alone: its
        // subscriptions may be old (and catching up must not drop its members).
        if !group.is_empty() && group.store_version != Some(version) {
            return Ok(GroupExpiry::default());
        }
        let from_record = |fresh, fresh_version| {
            ConsumerGroup::from_record(group_id, self.config, fresh, fresh_version, now_ms)
        };
        let read = self.store.load(group_id);
        if !catch_up_for_expiry(&mut *group, version, read, from_record).await? {
            return Ok(GroupExpiry::default());
        }
        let subscribed = group.subscribed_topics();
        let keep = |topic: &str| subscribed.contains(topic);
        let (offsets_deleted, remaining) =
            expire_group_offsets(&self.offsets, group_id, &keep, None, now_ms, retention_ms)
                .await?;
        let mut expiry = GroupExpiry {
            offsets_deleted,
            group_deleted: false,
        };
        let (true, 0, Some(version)) = (group.is_empty(), remaining, group.store_version) else {
            return Ok(expiry);
        };
        match self.store.delete(group_id, Some(version)).await {
            Ok(()) => {}
            Err(StoreError::Meta(MetaError::UnexpectedVersion)) => return Ok(expiry),
            Err(error) => return Err(error),
        }
        drop(group);
        self.groups.forget(group_id, &shared);
        expiry.group_deleted = true;
        tracing::info!(
            group = group_id,
            "empty consumer group without offsets deleted"
        );
        Ok(expiry)
    }

    /// The group if this coordinator or the store knows it.
    async fn existing(&self, group_id: &str) -> Result<Option<SharedGroup>, ResponseError> {
        let from_record = |record, version| {
            let now_ms = self.clock.now_ms();
            ConsumerGroup::from_record(group_id, self.config, record, version, now_ms)
        };
        self.groups
            .existing(group_id, self.store.load(group_id), from_record)
            .await
    }

    async fn get_or_create(&self, group_id: &str) -> Result<Option<SharedGroup>, ResponseError> {
        if let Some(group) = self.existing(group_id).await? {
            return Ok(Some(group));
        }
        let new = || ConsumerGroup::new(group_id, self.config);
        self.groups.get_or_insert_new(group_id, new).map(Some)
    }

    /// Writes the group record if it changed (see [`persist`]); `false` when that failed.
    async fn persist(&self, group: &mut ConsumerGroup) -> bool {
        persist(self.store.records(), group).await
    }
}

impl Ticking for ConsumerCoordinator {
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    fn tick(&self) -> impl std::future::Future<Output = ()> + Send {
        self.tick_all()
    }
}
