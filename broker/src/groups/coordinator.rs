//! The classic groups this broker coordinates (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)
//! and committed offsets; loading, locking, timers and persistence are the [`GroupHost`]'s.
//! Errors come back as Kafka error codes, since that is what every caller answers with.

use std::sync::Arc;

use kafka_protocol::ResponseError;
use metastore::MetaStore;

use super::clock::Clock;
use super::consumer::ConsumerCoordinator;
use super::expiry::Ownership;
use super::group::{Group, GroupDescription, GroupState, JoinRequest, Outcome, SyncRequest};
use super::host::GroupHost;
use super::member::{JoinResponse, SyncResponse};
use super::store::{CommittedOffset, GroupStore, StoreError};
use super::GroupConfig;

mod expire;

/// A row of ListGroups.
#[derive(Debug, Clone)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    pub state: GroupState,
}

pub struct GroupCoordinator {
    /// Group records and committed offsets.
    store: GroupStore,
    groups: Arc<GroupHost<Group>>,
    /// Groups of the consumer protocol (KIP-848); a group id is one kind or the other.
    consumer: Arc<ConsumerCoordinator>,
}

impl GroupCoordinator {
    /// Loads every stored group of both protocols and starts their timer tasks.
    pub async fn open(
        meta: Arc<dyn MetaStore>,
        config: GroupConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<GroupCoordinator>, StoreError> {
        let store = GroupStore::new(meta.clone());
        let groups = GroupHost::open(store.records().clone(), config, clock.clone()).await?;
        let consumer = ConsumerCoordinator::open(meta, config.consumer, clock).await?;
        Ok(Arc::new(GroupCoordinator {
            store,
            groups,
            consumer,
        }))
    }

    pub fn config(&self) -> &GroupConfig {
        self.groups.config()
    }

    /// The consumer-protocol groups.
    pub fn consumer(&self) -> &Arc<ConsumerCoordinator> {
        &self.consumer
    }

    /// For OffsetFetch v9+: `Err` when `group_id` is a consumer-protocol group and the member
    /// is not in it at `member_epoch`.
    pub async fn check_consumer_fetch(
        &self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
    ) -> Result<(), ResponseError> {
        if !self.may_be_consumer_group(group_id) {
            return Ok(());
        }
        match self
            .consumer
            .check_fetch(group_id, member_id, member_epoch)
            .await
        {
            Some(result) => result,
            None => Ok(()),
        }
    }

    /// A classic group held here, with no consumer group of that id cached, is not a consumer
    /// group: that spares its commits and fetches a MetaStore read.
    fn may_be_consumer_group(&self, group_id: &str) -> bool {
        self.consumer.is_cached(group_id) || !self.groups.is_cached(group_id)
    }

    /// Whether a classic group with members holds `group_id` (a consumer-protocol member
    /// cannot join it).
    pub async fn classic_group_in_use(&self, group_id: &str) -> Result<bool, ResponseError> {
        let Some(group) = self.groups.existing(group_id).await? else {
            return Ok(false);
        };
        let state = group.lock().await.state();
        Ok(!matches!(state, GroupState::Empty | GroupState::Dead))
    }

    /// Tells both protocols' hosts which groups are this broker's from now on.
    pub fn set_ownership(&self, owns: Ownership) {
        self.consumer.set_ownership(owns.clone());
        self.groups.set_ownership(owns);
    }

    /// Runs every classic group's timers once (see [`GroupHost::tick_all`]).
    pub async fn tick_all(&self) {
        self.groups.tick_all().await
    }

    /// Answers every waiting JoinGroup/SyncGroup with NOT_COORDINATOR so that shutdown does
    /// not wait for rebalances, and stops the timers.
    pub async fn shutdown(&self) {
        self.groups.shutdown().await;
        self.consumer.shutdown().await;
    }

    pub async fn join(&self, group_id: &str, request: JoinRequest) -> JoinResponse {
        let member_id = request.member_id.clone();
        if let Err(error) = self.validate_join(group_id, &request) {
            return JoinResponse::error(error, &member_id);
        }
        // An empty consumer-protocol group becomes a classic one; a live one refuses classic
        // members, as Kafka does without a migration policy.
        match self.consumer.remove_if_empty(group_id).await {
            Ok(_) => {}
            Err(ResponseError::NonEmptyGroup) => {
                return JoinResponse::error(ResponseError::InconsistentGroupProtocol, &member_id)
            }
            Err(error) => return JoinResponse::error(error, &member_id),
        }
        let group = if member_id.is_empty() {
            self.groups.get_or_create(group_id).await
        } else {
            self.groups.existing(group_id).await
        };
        let group = match group {
            Ok(Some(group)) => group,
            Ok(None) => return JoinResponse::error(ResponseError::UnknownMemberId, &member_id),
            Err(error) => return JoinResponse::error(error, &member_id),
        };
        let outcome = {
            let mut group = group.lock().await;
            let outcome = group.join(request, self.groups.now_ms());
            self.groups.persist(&mut group).await;
            outcome
        };
        match outcome {
            Outcome::Ready(response) => response,
            Outcome::Waiting(answer) => answer.await.unwrap_or_else(|_| {
                JoinResponse::error(ResponseError::CoordinatorNotAvailable, &member_id)
            }),
        }
    }

    fn validate_join(&self, group_id: &str, request: &JoinRequest) -> Result<(), ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let session = request.session_timeout_ms;
        if session < self.config().min_session_timeout_ms
            || session > self.config().max_session_timeout_ms
        {
            return Err(ResponseError::InvalidSessionTimeout);
        }
        let metadata_bytes: usize = request
            .protocols
            .iter()
            .map(|p| p.metadata.len() + p.name.len())
            .sum();
        if request.protocols.len() > self.config().member_protocols_max
            || metadata_bytes > self.config().member_metadata_bytes_max
        {
            tracing::warn!(
                group = group_id,
                protocols = request.protocols.len(),
                metadata_bytes,
                "join refused: member metadata too large"
            );
            return Err(ResponseError::InvalidRequest);
        }
        Ok(())
    }

    pub async fn sync(&self, group_id: &str, request: SyncRequest) -> SyncResponse {
        if group_id.is_empty() {
            return SyncResponse::error(ResponseError::InvalidGroupId);
        }
        let assignment_bytes: usize = request
            .assignments
            .iter()
            .map(|(id, a)| id.len() + a.len())
            .sum();
        if assignment_bytes > self.config().assignment_bytes_max {
            tracing::warn!(
                group = group_id,
                assignment_bytes,
                "sync refused: assignments too large"
            );
            return SyncResponse::error(ResponseError::InvalidRequest);
        }
        let group = match self.groups.existing(group_id).await {
            Ok(Some(group)) => group,
            Ok(None) => return SyncResponse::error(ResponseError::UnknownMemberId),
            Err(error) => return SyncResponse::error(error),
        };
        let outcome = {
            let mut group = group.lock().await;
            let outcome = group.sync(request, self.groups.now_ms());
            self.groups.persist(&mut group).await;
            outcome
        };
        match outcome {
            Outcome::Ready(response) => response,
            Outcome::Waiting(answer) => answer
                .await
                .unwrap_or_else(|_| SyncResponse::error(ResponseError::CoordinatorNotAvailable)),
        }
    }

    pub async fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Result<(), ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let group = self
            .groups
            .existing(group_id)
            .await?
            .ok_or(ResponseError::UnknownMemberId)?;
        let mut group = group.lock().await;
        let result = group.heartbeat(
            member_id,
            group_instance_id,
            generation_id,
            self.groups.now_ms(),
        );
        // The heartbeat may have acted on deadlines that passed (a rebalance, an empty group).
        self.groups.persist(&mut group).await;
        result
    }

    /// One result per leaving `(member_id, group_instance_id)`, in order.
    pub async fn leave(
        &self,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<Result<(), ResponseError>>, ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let Some(group) = self.groups.existing(group_id).await? else {
            return Ok(members
                .iter()
                .map(|_| Err(ResponseError::UnknownMemberId))
                .collect());
        };
        let mut group = group.lock().await;
        let results = members
            .iter()
            .map(|(member_id, instance)| {
                group.leave(member_id, instance.as_deref(), self.groups.now_ms())
            })
            .collect();
        self.groups.persist(&mut group).await;
        Ok(results)
    }

    /// Commits offsets for a member of `generation_id` (or, with a negative generation, for a
    /// client outside group management). One result per offset, in order.
    pub async fn commit_offsets(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        offsets: &[CommittedOffset],
    ) -> Vec<Result<(), ResponseError>> {
        let all = |error: ResponseError| offsets.iter().map(|_| Err(error)).collect();
        if group_id.is_empty() {
            return all(ResponseError::InvalidGroupId);
        }
        if self.may_be_consumer_group(group_id) {
            match self
                .consumer
                .check_commit(group_id, member_id, generation_id)
                .await
            {
                Some(Ok(())) => return self.write_offsets(group_id, offsets).await,
                Some(Err(error)) => return all(error),
                None => {}
            }
        }
        let group = match self.groups.existing(group_id).await {
            Ok(Some(group)) => group,
            Ok(None) if generation_id < 0 => match self.groups.get_or_create(group_id).await {
                Ok(Some(group)) => group,
                Ok(None) => return all(ResponseError::CoordinatorNotAvailable),
                Err(error) => return all(error),
            },
            Ok(None) => return all(ResponseError::IllegalGeneration),
            Err(error) => return all(error),
        };
        // The group lock is held across the writes so that a concurrent DeleteGroups cannot
        // interleave with them.
        let mut group = group.lock().await;
        if let Err(error) = group.check_commit(
            member_id,
            group_instance_id,
            generation_id,
            self.groups.now_ms(),
        ) {
            return all(error);
        }
        if group.store_version.is_none() {
            // A group known only through its offsets still gets a record, so that ListGroups
            // and DeleteGroups see it.
            group.mark_dirty();
        }
        self.groups.persist(&mut group).await;
        if group.store_version.is_none() {
            return all(ResponseError::CoordinatorNotAvailable);
        }
        self.write_offsets(group_id, offsets).await
    }

    /// The member checks of an offset commit without the commit (TxnOffsetCommit: a
    /// transaction's offsets become committed only when it commits). A negative generation is
    /// a producer outside group management, accepted as Kafka does.
    pub async fn validate_commit(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Result<(), ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        if generation_id < 0 {
            return Ok(());
        }
        if self.may_be_consumer_group(group_id) {
            if let Some(checked) = self
                .consumer
                .check_commit(group_id, member_id, generation_id)
                .await
            {
                return checked;
            }
        }
        let Some(group) = self.groups.existing(group_id).await? else {
            return Err(ResponseError::IllegalGeneration);
        };
        let mut group = group.lock().await;
        group.check_commit(
            member_id,
            group_instance_id,
            generation_id,
            self.groups.now_ms(),
        )
    }

    /// Writes the offsets a committed transaction carried for the group.
    pub async fn write_committed_offsets(
        &self,
        group_id: &str,
        offsets: &[CommittedOffset],
    ) -> Result<(), ResponseError> {
        self.write_offsets(group_id, offsets)
            .await
            .into_iter()
            .collect()
    }

    async fn write_offsets(
        &self,
        group_id: &str,
        offsets: &[CommittedOffset],
    ) -> Vec<Result<(), ResponseError>> {
        // Commit times come from the coordinator's clock, which also judges their expiry.
        let now_ms = i64::try_from(self.groups.now_ms()).unwrap_or(i64::MAX);
        let stamped: Vec<CommittedOffset> = offsets
            .iter()
            .map(|o| {
                let mut o = o.clone();
                o.record.commit_timestamp_ms = now_ms;
                o
            })
            .collect();
        self.store
            .commit_offsets(group_id, &stamped)
            .await
            .into_iter()
            .map(|result| {
                result.map_err(|error| {
                    tracing::warn!(group = group_id, %error, "offset commit failed");
                    ResponseError::CoordinatorNotAvailable
                })
            })
            .collect()
    }

    /// Committed offsets of the group (all of them, or only of `topics`).
    pub async fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<&[String]>,
    ) -> Result<Vec<CommittedOffset>, ResponseError> {
        let result = match topics {
            None => self.store.fetch_offsets(group_id, None).await,
            Some(topics) => {
                let reads = topics
                    .iter()
                    .map(|t| self.store.fetch_offsets(group_id, Some(t)));
                futures::future::join_all(reads)
                    .await
                    .into_iter()
                    .collect::<Result<Vec<_>, _>>()
                    .map(|per_topic| per_topic.into_iter().flatten().collect())
            }
        };
        result.map_err(|error| {
            tracing::warn!(group = group_id, %error, "offset fetch failed");
            ResponseError::CoordinatorNotAvailable
        })
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

    /// Every group, sorted by id.
    pub async fn list(&self) -> Vec<ListedGroup> {
        self.groups
            .list(|group| {
                (group.state() != GroupState::Dead).then(|| ListedGroup {
                    group_id: group.group_id().to_string(),
                    protocol_type: group.protocol_type().unwrap_or_default().to_string(),
                    state: group.state(),
                })
            })
            .await
    }

    /// Deletes an empty group and its offsets.
    pub async fn delete(&self, group_id: &str) -> Result<(), ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        if self.consumer.remove_if_empty(group_id).await? {
            // Offsets go with the group (and a classic record left from before, if any).
            let classic = self.groups.existing(group_id).await?;
            if classic.is_none() {
                return self
                    .store
                    .delete_group(group_id, None)
                    .await
                    .map_err(|error| {
                        tracing::warn!(group = group_id, %error, "group offsets delete failed");
                        ResponseError::CoordinatorNotAvailable
                    });
            }
        }
        let shared = self
            .groups
            .existing(group_id)
            .await?
            .ok_or(ResponseError::GroupIdNotFound)?;
        // Members whose session ran out are gone by now, however late the timer task runs.
        let mut group = self.groups.lock_current(&shared).await;
        match group.state() {
            GroupState::Empty => {}
            GroupState::Dead => return Err(ResponseError::GroupIdNotFound),
            _ => return Err(ResponseError::NonEmptyGroup),
        }
        if let Err(error) = self.store.delete_group(group_id, group.store_version).await {
            tracing::warn!(group = group_id, %error, "group delete failed");
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        group.mark_dead(ResponseError::UnknownMemberId);
        self.groups.forget(group_id, &shared);
        tracing::info!(group = group_id, "group deleted");
        Ok(())
    }

    /// Deletes committed offsets of partitions the group does not consume. One result per
    /// partition, in order.
    pub async fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<Vec<Result<(), ResponseError>>, ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        if let Some(described) = self.consumer.describe(group_id).await? {
            let subscribed: std::collections::BTreeSet<&str> = described
                .members
                .iter()
                .flat_map(|m| m.member.subscribed.iter().map(String::as_str))
                .collect();
            let mut results = Vec::with_capacity(partitions.len());
            for (topic, partition) in partitions {
                if subscribed.contains(topic.as_str()) {
                    results.push(Err(ResponseError::GroupSubscribedToTopic));
                    continue;
                }
                results.push(self.delete_offset(group_id, topic, *partition).await);
            }
            return Ok(results);
        }
        let group = self
            .groups
            .existing(group_id)
            .await?
            .ok_or(ResponseError::GroupIdNotFound)?;
        let group = group.lock().await;
        if group.state() == GroupState::Dead {
            return Err(ResponseError::GroupIdNotFound);
        }
        let consumer = group.protocol_type() == Some("consumer");
        if !consumer && group.state() != GroupState::Empty {
            return Err(ResponseError::NonEmptyGroup);
        }
        let mut results = Vec::with_capacity(partitions.len());
        for (topic, partition) in partitions {
            if consumer && group.is_subscribed_to(topic) {
                results.push(Err(ResponseError::GroupSubscribedToTopic));
                continue;
            }
            results.push(self.delete_offset(group_id, topic, *partition).await);
        }
        Ok(results)
    }

    async fn delete_offset(
        &self,
        group_id: &str,
        topic: &str,
        partition: i32,
    ) -> Result<(), ResponseError> {
        self.store
            .delete_offset(group_id, topic, partition)
            .await
            .map_err(|error| {
                tracing::warn!(group = group_id, topic, partition, %error, "offset delete failed");
                ResponseError::CoordinatorNotAvailable
            })
    }
}
