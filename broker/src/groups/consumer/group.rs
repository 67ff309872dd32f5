//! One consumer group (KIP-848): members, the group epoch (bumped whenever membership,
//! subscriptions or subscribed topics change), the target assignment computed at that epoch,
//! and each member's reconciliation towards it. Pure: time comes in as `now_ms`, topics
//! through a [`TopicSource`], and the caller persists when [`ConsumerGroup::take_dirty`] says so.
//!
//! A member subscribes by names, by a regular expression, or both: what the assignors see is
//! the union of its names and the existing topics its regex matches, resolved again at every
//! heartbeat so that topics created or deleted since are picked up or dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::assignor::{Assignor, MemberSpec};
use super::reconcile::{MemberState, Reconciliation};
use super::store::{ConsumerGroupRecord, MemberRecord};
use super::{Assignment, ConsumerGroupConfig, TopicSource, TopicsMeta};

/// Member epoch of a heartbeat that joins the group.
pub const JOIN_EPOCH: i32 = 0;
/// Member epoch of a heartbeat that leaves the group.
pub const LEAVE_EPOCH: i32 = -1;
/// Member epoch of a static member leaving temporarily (it may return under its instance id).
pub const STATIC_LEAVE_EPOCH: i32 = -2;

/// A heartbeat, decoded and checked for shape by the handler.
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    /// `None`: unchanged since the last heartbeat.
    pub subscribed_topic_names: Option<Vec<String>>,
    /// `None`: unchanged since the last heartbeat; empty: no regex any more.
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    /// What the member owns now; `None`: unchanged since the last heartbeat.
    pub owned: Option<Assignment>,
}

/// What a heartbeat is answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatAnswer {
    pub member_id: String,
    pub member_epoch: i32,
    /// The partitions the member may own now (absent for a leaving member).
    pub assignment: Option<Assignment>,
}

/// A refused heartbeat: the error and a message for the client's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub error: ResponseError,
    pub message: String,
}

fn refuse(error: ResponseError, message: impl Into<String>) -> Refusal {
    Refusal {
        error,
        message: message.into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerGroupState {
    Empty,
    Reconciling,
    Stable,
}

impl ConsumerGroupState {
    /// The name Kafka uses in ConsumerGroupDescribe, DescribeGroups and ListGroups.
    pub fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Member {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    /// The topic names the member sent.
    pub subscribed_names: BTreeSet<String>,
    /// The regular expression the member sent (never empty).
    pub subscribed_regex: Option<String>,
    /// The existing topics `subscribed_regex` matched when last resolved.
    pub regex_topics: BTreeSet<String>,
    /// `subscribed_names ∪ regex_topics`: what the member is assigned from (see
    /// [`Member::resubscribe`], the one place that computes it).
    pub subscribed: BTreeSet<String>,
    pub server_assignor: Option<String>,
    pub reconciliation: Reconciliation,
    pub left_static: bool,
    pub session_deadline_ms: u64,
    /// Set while the member has partitions to revoke: past it, the member is fenced.
    pub revocation_deadline_ms: Option<u64>,
}

impl Member {
    /// Recomputes the subscription from the names and the regex matches; whether it changed.
    fn resubscribe(&mut self) -> bool {
        let subscribed: BTreeSet<String> = self
            .subscribed_names
            .union(&self.regex_topics)
            .cloned()
            .collect();
        if subscribed == self.subscribed {
            return false;
        }
        self.subscribed = subscribed;
        true
    }
}

/// A member as ConsumerGroupDescribe shows it.
#[derive(Debug, Clone)]
pub struct MemberDescription {
    pub member: Member,
    pub target: Assignment,
}

#[derive(Debug, Clone)]
pub struct GroupDescription {
    pub state: ConsumerGroupState,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub assignor: Assignor,
    pub topics: TopicsMeta,
    pub members: Vec<MemberDescription>,
}

pub struct ConsumerGroup {
    group_id: String,
    config: ConsumerGroupConfig,
    group_epoch: i32,
    assignment_epoch: i32,
    topics: TopicsMeta,
    target: BTreeMap<String, Assignment>,
    members: BTreeMap<String, Member>,
    dirty: bool,
    pub store_version: Option<i64>,
}

impl ConsumerGroup {
    pub fn new(group_id: &str, config: ConsumerGroupConfig) -> ConsumerGroup {
        ConsumerGroup {
            group_id: group_id.to_string(),
            config,
            group_epoch: 0,
            assignment_epoch: 0,
            topics: TopicsMeta::new(),
            target: BTreeMap::new(),
            members: BTreeMap::new(),
            dirty: false,
            store_version: None,
        }
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    pub fn group_epoch(&self) -> i32 {
        self.group_epoch
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.members.values().all(|m| {
            m.reconciliation.state == MemberState::Stable
                && m.reconciliation.member_epoch == self.assignment_epoch
        }) {
            ConsumerGroupState::Stable
        } else {
            ConsumerGroupState::Reconciling
        }
    }

    /// Whether any member subscribes to `topic`.
    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        self.members.values().any(|m| m.subscribed.contains(topic))
    }

    /// Every topic some member subscribes to.
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        self.members
            .values()
            .flat_map(|m| m.subscribed.iter().cloned())
            .collect()
    }

    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Serves one heartbeat. `topics` tells which topics exist, with their metadata.
    pub fn heartbeat(
        &mut self,
        request: Heartbeat,
        topics: &dyn TopicSource,
        now_ms: u64,
    ) -> Result<HeartbeatAnswer, Refusal> {
        // Checked before anything changes, so that a refused heartbeat leaves no trace.
        if let Some(pattern) = request.subscribed_topic_regex.as_deref() {
            if !pattern.is_empty() {
                if let Err(error) = topics.matching(pattern) {
                    return Err(refuse(
                        ResponseError::InvalidRegularExpression,
                        format!(
                            "SubscribedTopicRegex `{pattern}` is not a valid regular expression: {error}"
                        ),
                    ));
                }
            }
        }
        // Deadlines that passed act first, as Kafka's timers would have, however late the
        // coordinator's tick runs.
        self.tick(now_ms);
        if request.member_epoch != JOIN_EPOCH {
            self.check_static_member(&request)?;
        }
        // Whether the group needs a new epoch (and target assignment) after this heartbeat.
        let mut changed = match request.member_epoch {
            LEAVE_EPOCH => return self.leave(&request.member_id),
            STATIC_LEAVE_EPOCH => return self.leave_static(&request),
            JOIN_EPOCH => self.join(&request, now_ms)?,
            epoch if epoch > 0 => {
                self.check_epoch(&request)?;
                false
            }
            epoch => {
                return Err(refuse(
                    ResponseError::InvalidRequest,
                    format!("member epoch {epoch} is not valid"),
                ))
            }
        };
        let member_id = request.member_id.clone();
        let Some(member) = self.members.get_mut(&member_id) else {
            return Err(refuse(
                ResponseError::UnknownMemberId,
                "member is not in the group",
            ));
        };
        // Stored even when the subscription as a whole stays the same (a regex replacing the
        // names it matches): later topics are matched against the member's latest choice.
        let mut declared_changed = false;
        if let Some(names) = &request.subscribed_topic_names {
            let names: BTreeSet<String> = names.iter().cloned().collect();
            if names != member.subscribed_names {
                member.subscribed_names = names;
                declared_changed = true;
            }
        }
        if let Some(pattern) = &request.subscribed_topic_regex {
            let pattern = (!pattern.is_empty()).then(|| pattern.clone());
            if pattern != member.subscribed_regex {
                member.subscribed_regex = pattern;
                declared_changed = true;
            }
        }
        if request.server_assignor.is_some() && request.server_assignor != member.server_assignor {
            member.server_assignor = request.server_assignor.clone();
            changed = true;
        }
        if request.rebalance_timeout_ms > 0 {
            member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        }
        member.client_id = request.client_id.clone();
        member.client_host = request.client_host.clone();
        member.rack_id = request.rack_id.clone().or(member.rack_id.take());
        member.session_deadline_ms = now_ms + timeout_ms(self.config.session_timeout_ms);

        // Regexes first, so that the member's subscription is compared once, complete.
        changed |= self.resolve_regexes(topics);
        if declared_changed {
            self.dirty = true;
            if let Some(member) = self.members.get_mut(&member_id) {
                changed |= member.resubscribe();
            }
        }
        let metadata: TopicsMeta = self
            .subscribed_topics()
            .into_iter()
            .filter_map(|name| topics.topic(&name).map(|meta| (name, meta)))
            .collect();
        if metadata != self.topics {
            self.topics = metadata;
            changed = true;
        }
        if changed {
            self.bump_and_assign();
        }
        self.reconcile(&member_id, request.owned.as_ref(), now_ms);
        let member = self
            .members
            .get(&member_id)
            .ok_or_else(|| refuse(ResponseError::UnknownMemberId, "member is not in the group"))?;
        Ok(HeartbeatAnswer {
            member_id,
            member_epoch: member.reconciliation.member_epoch,
            assignment: Some(member.reconciliation.assigned.clone()),
        })
    }

    /// Matches every member's regex against the topics that exist now (each distinct pattern
    /// once); whether any member's subscription changed.
    fn resolve_regexes(&mut self, topics: &dyn TopicSource) -> bool {
        let mut resolved: BTreeMap<String, Arc<BTreeSet<String>>> = BTreeMap::new();
        let mut changed = false;
        for member in self.members.values_mut() {
            let Some(pattern) = &member.subscribed_regex else {
                if !member.regex_topics.is_empty() {
                    member.regex_topics.clear();
                    changed |= member.resubscribe();
                }
                continue;
            };
            let matched = match resolved.get(pattern) {
                Some(matched) => matched.clone(),
                None => {
                    let matched = topics.matching(pattern).unwrap_or_else(|error| {
                        // Patterns are checked when sent: only one stored by an older
                        // version of the syntax can fail here.
                        tracing::warn!(
                            group = %self.group_id,
                            member = %member.member_id,
                            %pattern,
                            %error,
                            "stored subscription regex is invalid, it matches nothing"
                        );
                        Arc::default()
                    });
                    // The same bound as on subscribed names: the first ones by name are kept.
                    let max = self.config.subscribed_topics_max;
                    let matched = if matched.len() > max {
                        Arc::new(matched.iter().take(max).cloned().collect())
                    } else {
                        matched
                    };
                    resolved.insert(pattern.clone(), matched.clone());
                    matched
                }
            };
            if *matched != member.regex_topics {
                if matched.len() >= self.config.subscribed_topics_max {
                    tracing::warn!(
                        group = %self.group_id,
                        member = %member.member_id,
                        %pattern,
                        subscribed_topics_max = self.config.subscribed_topics_max,
                        "subscription regex matches at least subscribed_topics_max topics, any beyond are not assigned"
                    );
                }
                tracing::debug!(
                    group = %self.group_id,
                    member = %member.member_id,
                    topics = matched.len(),
                    "consumer group member regex matches other topics now"
                );
                member.regex_topics = (*matched).clone();
                changed |= member.resubscribe();
            }
        }
        changed
    }

    /// Admits a joining member; `Ok(true)` when it is new to the group.
    fn join(&mut self, request: &Heartbeat, now_ms: u64) -> Result<bool, Refusal> {
        if request.member_id.is_empty() {
            return Err(refuse(ResponseError::InvalidRequest, "member id is empty"));
        }
        if let Some(instance_id) = &request.instance_id {
            let holder = self
                .members
                .values()
                .find(|m| {
                    m.instance_id.as_ref() == Some(instance_id) && m.member_id != request.member_id
                })
                .map(|m| (m.member_id.clone(), m.left_static));
            match holder {
                Some((old_id, true)) => {
                    self.rejoin_static(&old_id, &request.member_id, now_ms);
                    return Ok(false);
                }
                Some((_, false)) => {
                    return Err(refuse(
                        ResponseError::UnreleasedInstanceId,
                        format!("instance id {instance_id} is used by another member"),
                    ))
                }
                None => {}
            }
        }
        if let Some(member) = self.members.get_mut(&request.member_id) {
            // A known member joining again owns nothing any more (it lost its epoch).
            member.reconciliation = Reconciliation::joining();
            member.revocation_deadline_ms = None;
            member.left_static = false;
            self.dirty = true;
            return Ok(false);
        }
        if self.members.len() >= self.config.members_max {
            return Err(refuse(
                ResponseError::GroupMaxSizeReached,
                format!("the group has {} members", self.members.len()),
            ));
        }
        if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none() {
            return Err(refuse(
                ResponseError::InvalidRequest,
                "a joining member must send its subscribed topic names or regex",
            ));
        }
        // Names and regex are taken, and the regex resolved, by the rest of the heartbeat.
        self.members.insert(
            request.member_id.clone(),
            Member {
                member_id: request.member_id.clone(),
                instance_id: request.instance_id.clone(),
                rack_id: request.rack_id.clone(),
                client_id: request.client_id.clone(),
                client_host: request.client_host.clone(),
                rebalance_timeout_ms: request.rebalance_timeout_ms,
                subscribed_names: BTreeSet::new(),
                subscribed_regex: None,
                regex_topics: BTreeSet::new(),
                subscribed: BTreeSet::new(),
                server_assignor: request.server_assignor.clone(),
                reconciliation: Reconciliation::joining(),
                left_static: false,
                session_deadline_ms: now_ms + timeout_ms(self.config.session_timeout_ms),
                revocation_deadline_ms: None,
            },
        );
        tracing::info!(group = %self.group_id, member = %request.member_id, "consumer group member joined");
        Ok(true)
    }

    /// A heartbeat with a positive epoch must carry the member's epoch, or its previous one
    /// when the answer that moved it on was lost (then it may only own what it was given).
    fn check_epoch(&self, request: &Heartbeat) -> Result<(), Refusal> {
        let Some(member) = self.members.get(&request.member_id) else {
            return Err(refuse(
                ResponseError::UnknownMemberId,
                "member is not in the group",
            ));
        };
        let current = &member.reconciliation;
        let epoch = request.member_epoch;
        let fenced = || {
            refuse(
                ResponseError::FencedMemberEpoch,
                format!(
                    "member epoch {epoch} is fenced, the member is at {}",
                    current.member_epoch
                ),
            )
        };
        if epoch > current.member_epoch {
            return Err(fenced());
        }
        if epoch < current.member_epoch {
            let lost_answer = epoch == current.previous_member_epoch
                && request
                    .owned
                    .as_ref()
                    .is_some_and(|owned| super::minus(owned, &current.assigned).is_empty());
            if !lost_answer {
                return Err(fenced());
            }
        }
        Ok(())
    }

    fn leave(&mut self, member_id: &str) -> Result<HeartbeatAnswer, Refusal> {
        if self.members.remove(member_id).is_none() {
            return Err(refuse(
                ResponseError::UnknownMemberId,
                "member is not in the group",
            ));
        }
        tracing::info!(group = %self.group_id, member = %member_id, "consumer group member left");
        self.target.remove(member_id);
        self.bump_and_assign();
        Ok(HeartbeatAnswer {
            member_id: member_id.to_string(),
            member_epoch: LEAVE_EPOCH,
            assignment: None,
        })
    }

    fn leave_static(&mut self, request: &Heartbeat) -> Result<HeartbeatAnswer, Refusal> {
        if request.instance_id.is_none() {
            return Err(refuse(
                ResponseError::InvalidRequest,
                "epoch -2 is for static members; send an instance id",
            ));
        }
        let Some(member) = self.members.get_mut(&request.member_id) else {
            return Err(refuse(
                ResponseError::UnknownMemberId,
                "member is not in the group",
            ));
        };
        if member.instance_id != request.instance_id {
            return Err(refuse(
                ResponseError::FencedInstanceId,
                "instance id does not match",
            ));
        }
        // As Kafka: its partitions stay reserved for the instance until the session its last
        // heartbeat started runs out (this one does not extend it); what it was still revoking
        // is released now, and it has no epoch until it comes back.
        member.left_static = true;
        member.reconciliation.member_epoch = STATIC_LEAVE_EPOCH;
        member.reconciliation.pending_revocation.clear();
        member.revocation_deadline_ms = None;
        tracing::info!(group = %self.group_id, member = %request.member_id, instance = ?request.instance_id, "consumer group static member left temporarily");
        self.dirty = true;
        Ok(HeartbeatAnswer {
            member_id: request.member_id.clone(),
            member_epoch: STATIC_LEAVE_EPOCH,
            assignment: None,
        })
    }

    /// The instance of a static member that left (epoch -2) comes back as `new_id`: it takes
    /// over the departed member's place and partitions at epoch 0, as Kafka, so that this
    /// heartbeat's reconciliation hands them back at the current epoch. The group epoch does
    /// not move, and nobody else is affected.
    fn rejoin_static(&mut self, old_id: &str, new_id: &str, now_ms: u64) {
        if let Some(mut member) = self.members.remove(old_id) {
            member.member_id = new_id.to_string();
            member.left_static = false;
            member.reconciliation =
                Reconciliation::rejoining(std::mem::take(&mut member.reconciliation.assigned));
            member.revocation_deadline_ms = None;
            member.session_deadline_ms = now_ms + timeout_ms(self.config.session_timeout_ms);
            tracing::info!(group = %self.group_id, %old_id, %new_id, instance = ?member.instance_id, "consumer group static member rejoined");
            self.members.insert(new_id.to_string(), member);
        }
        if let Some(target) = self.target.remove(old_id) {
            self.target.insert(new_id.to_string(), target);
        }
        self.dirty = true;
    }

    /// A heartbeat naming an instance id must come from the member that holds it, as Kafka:
    /// UNKNOWN_MEMBER_ID if none does, FENCED_INSTANCE_ID if another member id does (the
    /// instance came back under a new id).
    fn check_static_member(&self, request: &Heartbeat) -> Result<(), Refusal> {
        let Some(instance_id) = &request.instance_id else {
            return Ok(());
        };
        let holder = self
            .members
            .values()
            .find(|m| m.instance_id.as_ref() == Some(instance_id));
        match holder {
            None => Err(refuse(
                ResponseError::UnknownMemberId,
                format!("no member has instance id {instance_id}"),
            )),
            Some(member) if member.member_id != request.member_id => Err(refuse(
                ResponseError::FencedInstanceId,
                format!(
                    "instance id {instance_id} belongs to member {}",
                    member.member_id
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// Moves one member a step towards its target.
    fn reconcile(&mut self, member_id: &str, owned: Option<&Assignment>, now_ms: u64) {
        let Some(member) = self.members.get(member_id) else {
            return;
        };
        let target = self.target.get(member_id).cloned().unwrap_or_default();
        let others: Vec<&Reconciliation> = self
            .members
            .values()
            .filter(|m| m.member_id != member_id)
            .map(|m| &m.reconciliation)
            .collect();
        let owned_elsewhere =
            |topic: &Uuid, partition: i32| others.iter().any(|r| r.owns(topic, partition));
        let next =
            member
                .reconciliation
                .next(&target, self.assignment_epoch, owned, &owned_elsewhere);
        if next == member.reconciliation {
            return;
        }
        let revoking = next.state == MemberState::UnrevokedPartitions;
        let rebalance_timeout_ms = member.rebalance_timeout_ms;
        if let Some(member) = self.members.get_mut(member_id) {
            // As Kafka: each step that leaves the member revoking gives it a rebalance timeout
            // from now to acknowledge; a step that does not stops the clock.
            member.revocation_deadline_ms =
                revoking.then(|| now_ms + timeout_ms(rebalance_timeout_ms));
            tracing::debug!(
                group = %self.group_id,
                member = %member_id,
                epoch = next.member_epoch,
                state = ?next.state,
                "consumer group member reconciled"
            );
            member.reconciliation = next;
            self.dirty = true;
        }
    }

    /// A new group epoch, and the target assignment for it.
    fn bump_and_assign(&mut self) {
        self.group_epoch += 1;
        let specs: BTreeMap<String, MemberSpec> = self
            .members
            .iter()
            .map(|(id, m)| {
                (
                    id.clone(),
                    MemberSpec {
                        subscribed: m.subscribed.clone(),
                        current: self.target.get(id).cloned().unwrap_or_default(),
                    },
                )
            })
            .collect();
        self.target = self.assignor().assign(&specs, &self.topics);
        self.assignment_epoch = self.group_epoch;
        self.dirty = true;
    }

    /// The assignor most members ask for (ties: the default, then by name), as Kafka picks it.
    pub fn assignor(&self) -> Assignor {
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for member in self.members.values() {
            if let Some(name) = &member.server_assignor {
                *votes.entry(name.as_str()).or_default() += 1;
            }
        }
        let best = votes.values().copied().max().unwrap_or(0);
        if best == 0 || votes.get(Assignor::DEFAULT.name()) == Some(&best) {
            return Assignor::DEFAULT;
        }
        votes
            .iter()
            .filter(|(_, count)| **count == best)
            .find_map(|(name, _)| Assignor::parse(name))
            .unwrap_or(Assignor::DEFAULT)
    }

    /// Removes members whose session ran out, and members that did not revoke in time.
    pub fn tick(&mut self, now_ms: u64) {
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| {
                m.session_deadline_ms <= now_ms
                    || m.revocation_deadline_ms.is_some_and(|d| d <= now_ms)
            })
            .map(|m| m.member_id.clone())
            .collect();
        if expired.is_empty() {
            return;
        }
        for member_id in &expired {
            tracing::info!(group = %self.group_id, member = %member_id, "consumer group member expired");
            self.members.remove(member_id);
            self.target.remove(member_id);
        }
        self.bump_and_assign();
    }

    /// OffsetCommit by a member: it must be in the group at its current epoch. A commit with
    /// no member (epoch < 0, empty id) is allowed only while the group is empty.
    pub fn check_commit(&self, member_id: &str, member_epoch: i32) -> Result<(), ResponseError> {
        if member_epoch < 0 && member_id.is_empty() && self.members.is_empty() {
            return Ok(());
        }
        self.check_member_epoch(member_id, member_epoch)
    }

    /// OffsetFetch (v9+) by a member; a fetch with no member id is an admin's and is allowed.
    pub fn check_fetch(&self, member_id: &str, member_epoch: i32) -> Result<(), ResponseError> {
        if member_id.is_empty() && member_epoch < 0 {
            return Ok(());
        }
        self.check_member_epoch(member_id, member_epoch)
    }

    fn check_member_epoch(&self, member_id: &str, member_epoch: i32) -> Result<(), ResponseError> {
        let member = self
            .members
            .get(member_id)
            .ok_or(ResponseError::UnknownMemberId)?;
        if member.reconciliation.member_epoch != member_epoch {
            return Err(ResponseError::StaleMemberEpoch);
        }
        Ok(())
    }

    pub fn describe(&self) -> GroupDescription {
        GroupDescription {
            state: self.state(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            assignor: self.assignor(),
            topics: self.topics.clone(),
            members: self
                .members
                .values()
                .map(|m| MemberDescription {
                    member: m.clone(),
                    target: self.target.get(&m.member_id).cloned().unwrap_or_default(),
                })
                .collect(),
        }
    }

    pub fn to_record(&self) -> ConsumerGroupRecord {
        ConsumerGroupRecord {
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            topics: self.topics.clone(),
            target: self.target.clone(),
            members: self
                .members
                .values()
                .map(|m| MemberRecord {
                    member_id: m.member_id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: m.rack_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    subscribed: m.subscribed_names.clone(),
                    subscribed_regex: m.subscribed_regex.clone(),
                    regex_topics: m.regex_topics.clone(),
                    server_assignor: m.server_assignor.clone(),
                    reconciliation: m.reconciliation.clone(),
                    left_static: m.left_static,
                })
                .collect(),
        }
    }

    /// A stored group; every member gets a fresh session from `now_ms`.
    pub fn from_record(
        group_id: &str,
        config: ConsumerGroupConfig,
        record: ConsumerGroupRecord,
        version: i64,
        now_ms: u64,
    ) -> ConsumerGroup {
        let members = record
            .members
            .into_iter()
            .map(|m| {
                let revoking = m.reconciliation.state == MemberState::UnrevokedPartitions;
                let mut member = Member {
                    revocation_deadline_ms: revoking
                        .then(|| now_ms + timeout_ms(m.rebalance_timeout_ms)),
                    member_id: m.member_id,
                    instance_id: m.instance_id,
                    rack_id: m.rack_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    subscribed_names: m.subscribed,
                    subscribed_regex: m.subscribed_regex.filter(|p| !p.is_empty()),
                    regex_topics: m.regex_topics,
                    subscribed: BTreeSet::new(),
                    server_assignor: m.server_assignor,
                    reconciliation: m.reconciliation,
                    left_static: m.left_static,
                    session_deadline_ms: now_ms + timeout_ms(config.session_timeout_ms),
                };
                member.resubscribe();
                (member.member_id.clone(), member)
            })
            .collect();
        ConsumerGroup {
            group_id: group_id.to_string(),
            config,
            group_epoch: record.group_epoch,
            assignment_epoch: record.assignment_epoch,
            topics: record.topics,
            target: record.target,
            members,
            dirty: false,
            store_version: Some(version),
        }
    }
}

fn timeout_ms(ms: i32) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}
