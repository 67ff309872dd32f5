//! The consumer groups (KIP-848) this broker coordinates: heartbeats, member checks for
//! offsets, and offset expiry; loading, locking, timers and persistence are the
//! [`GroupHost`]'s.

use std::sync::Arc;

use kafka_protocol::ResponseError;
use metastore::{MetaError, MetaStore};

use super::group::{
    ConsumerGroup, ConsumerGroupState, GroupDescription, Heartbeat, HeartbeatAnswer, Refusal,
};
use super::store::ConsumerGroupStore;
use super::topic_regex::RegexCache;
use super::{ConsumerGroupConfig, TopicSource};
use crate::groups::clock::Clock;
use crate::groups::expiry::{expire_group_offsets, GroupExpiry, Ownership, SweepReport};
use crate::groups::host::GroupHost;
use crate::groups::store::{GroupStore, StoreError};
use crate::groups::stored::catch_up_for_expiry;

/// A row of ListGroups.
#[derive(Debug, Clone)]
pub struct ListedConsumerGroup {
    pub group_id: String,
    pub state: ConsumerGroupState,
}

pub struct ConsumerCoordinator {
    store: ConsumerGroupStore,
    /// Committed offsets (shared with classic groups), for their expiry.
    offsets: GroupStore,
    groups: Arc<GroupHost<ConsumerGroup>>,
    /// Subscription regexes of all groups, compiled, with what they matched.
    regexes: RegexCache,
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
        let groups = GroupHost::open(store.records().clone(), config, clock).await?;
        Ok(Arc::new(ConsumerCoordinator {
            store,
            offsets,
            groups,
            regexes: RegexCache::default(),
        }))
    }

    pub fn config(&self) -> &ConsumerGroupConfig {
        self.groups.config()
    }

    pub fn regexes(&self) -> &RegexCache {
        &self.regexes
    }

    /// Whether this coordinator holds `group_id` in memory (without asking the store).
    pub fn is_cached(&self, group_id: &str) -> bool {
        self.groups.is_cached(group_id)
    }

    /// Stops the timers and writes what is still unwritten.
    pub async fn shutdown(&self) {
        self.groups.shutdown().await
    }

    pub fn set_ownership(&self, owns: Ownership) {
        self.groups.set_ownership(owns);
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
            self.groups.get_or_create(group_id).await
        } else {
            self.groups.existing(group_id).await
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
        let answer = group.heartbeat(request, topics, self.groups.now_ms());
        if !self.groups.persist(&mut group).await {
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
        let group = match self.groups.existing(group_id).await {
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
        let Some(shared) = self.groups.existing(group_id).await? else {
            return Ok(None);
        };
        // A member whose deadline passed is not shown, however late the timer task runs.
        let group = self.groups.lock_current(&shared).await;
        Ok(Some(group.describe()))
    }

    /// Whether a member of the group subscribes to `topic` (`None`: not a consumer group).
    pub async fn is_subscribed_to(&self, group_id: &str, topic: &str) -> Option<bool> {
        let group = self.groups.existing(group_id).await.ok()??;
        let group = group.lock().await;
        Some(group.is_subscribed_to(topic))
    }

    pub async fn list(&self) -> Vec<ListedConsumerGroup> {
        self.groups
            .list(|group| {
                // A group whose first join was refused was never stored: nobody knows it.
                let unknown = group.store_version.is_none() && group.is_empty();
                (!unknown).then(|| ListedConsumerGroup {
                    group_id: group.group_id().to_string(),
                    state: group.state(),
                })
            })
            .await
    }

    /// Drops an empty consumer group's record, so that the id can become a classic group or
    /// be deleted. `Ok(false)`: no such consumer group; `NON_EMPTY_GROUP` if it has members.
    pub async fn remove_if_empty(&self, group_id: &str) -> Result<bool, ResponseError> {
        let Some(shared) = self.groups.existing(group_id).await? else {
            return Ok(false);
        };
        // Members whose session ran out are gone by now, however late the timer task runs.
        let group = self.groups.lock_current(&shared).await;
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
        let Ok(Some(shared)) = self.groups.existing(group_id).await else {
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
            ConsumerGroup::from_record(group_id, *self.config(), fresh, fresh_version, now_ms)
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
}
