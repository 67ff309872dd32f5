//! The classic group state machine, after Kafka's `GroupCoordinator`/`GroupMetadata`.
//!
//! Synchronous and clock-free: every operation takes `now_ms`, and answers that must wait for
//! other members (JoinGroup during a rebalance, a follower's SyncGroup) are handed out as
//! oneshot receivers that a later operation or [`Group::tick`] completes. Every operation
//! first acts on the deadlines that passed (as [`Group::tick`]), so that it sees the group as
//! Kafka's timers would have left it, however late the coordinator's tick runs. The coordinator
//! serialises operations on one group behind a lock and persists the group when
//! [`Group::take_dirty`] says a generation ended.
//!
//! - [`rebalance`]: the join and sync phases and every timer (sessions, rebalance timeout,
//!   initial delay, sync deadline);
//! - [`static_member`]: a static member coming back under a new member id (KIP-345).

mod rebalance;
mod static_member;

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::{Buf, Bytes};
use kafka_protocol::messages::ConsumerProtocolSubscription;
use kafka_protocol::protocol::Decodable;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::member::{timeout_ms, JoinResponse, JoinedMember, Member, Protocol, SyncResponse};
use super::store::GroupRecord;
use super::GroupConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    /// The name Kafka uses in DescribeGroups and ListGroups.
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// A JoinGroup as the state machine sees it (already validated for sizes and timeouts).
#[derive(Debug, Clone)]
pub struct JoinRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<Protocol>,
    /// JoinGroup v4+: a member without an id first gets MEMBER_ID_REQUIRED and an id.
    pub require_known_member_id: bool,
    /// JoinGroup v9+: the answer may tell a leader to skip the assignment.
    pub supports_skip_assignment: bool,
}

#[derive(Debug, Clone)]
pub struct SyncRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignments: Vec<(String, Bytes)>,
}

/// An answer now, or later.
#[derive(Debug)]
pub enum Outcome<T> {
    Ready(T),
    Waiting(oneshot::Receiver<T>),
}

/// DescribeGroups' view of a group.
#[derive(Debug, Clone)]
pub struct GroupDescription {
    pub state: GroupState,
    pub protocol_type: String,
    pub protocol_name: String,
    pub members: Vec<DescribedMember>,
}

#[derive(Debug, Clone)]
pub struct DescribedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Bytes,
    pub assignment: Bytes,
}

pub struct Group {
    group_id: String,
    config: GroupConfig,
    state: GroupState,
    protocol_type: Option<String>,
    protocol_name: Option<String>,
    generation_id: i32,
    leader_id: Option<String>,
    /// Ordered so that leader choice and responses are deterministic.
    members: BTreeMap<String, Member>,
    /// `group.instance.id` -> member id.
    static_members: HashMap<String, String>,
    /// Ids handed out with MEMBER_ID_REQUIRED, with the instant they lapse if unused.
    pending_members: HashMap<String, u64>,
    /// When the join phase ends whoever has rejoined (the rebalance timeout).
    rebalance_deadline_ms: u64,
    /// While the first rebalance of an empty group waits for more members to arrive.
    initial_delay: Option<rebalance::InitialDelay>,
    /// Members of the generation that have not sent SyncGroup yet, and until when they may.
    pending_sync: Option<rebalance::PendingSync>,
    /// When the group last became Empty (Kafka's `currentStateTimestamp`; offsets expire
    /// counting from it). `None` while it has members, or when it never had any.
    empty_since_ms: Option<u64>,
    dirty: bool,
    /// Version of the stored record, for conditional writes.
    pub store_version: Option<i64>,
}

impl Group {
    pub fn new(group_id: &str, config: GroupConfig) -> Group {
        Group {
            group_id: group_id.to_string(),
            config,
            state: GroupState::Empty,
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_members: HashMap::new(),
            rebalance_deadline_ms: 0,
            initial_delay: None,
            pending_sync: None,
            empty_since_ms: None,
            dirty: false,
            store_version: None,
        }
    }

    /// A group loaded from the store: Stable with its members when it had any (their session
    /// timers start now; members that do not come back expire), else Empty.
    pub fn from_record(
        group_id: &str,
        config: GroupConfig,
        record: GroupRecord,
        version: i64,
        now_ms: u64,
    ) -> Group {
        let mut group = Group::new(group_id, config);
        group.protocol_type = record.protocol_type;
        group.protocol_name = record.protocol_name;
        group.generation_id = record.generation_id;
        group.leader_id = record.leader_id;
        group.empty_since_ms = record.empty_since_ms;
        group.store_version = Some(version);
        for member in record.members {
            let member = Member::from_record(member, now_ms);
            if let Some(instance) = &member.group_instance_id {
                group
                    .static_members
                    .insert(instance.clone(), member.member_id.clone());
            }
            group.members.insert(member.member_id.clone(), member);
        }
        if group.members.is_empty() {
            group.leader_id = None;
        } else {
            group.empty_since_ms = None;
            group.state = GroupState::Stable;
            if group
                .leader_id
                .as_ref()
                .is_none_or(|l| !group.members.contains_key(l))
            {
                group.leader_id = group.members.keys().next().cloned();
            }
        }
        group
    }

    pub fn to_record(&self) -> GroupRecord {
        GroupRecord {
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            generation_id: self.generation_id,
            leader_id: self.leader_id.clone(),
            members: self.members.values().map(Member::to_record).collect(),
            empty_since_ms: self.empty_since_ms,
        }
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }
    pub fn state(&self) -> GroupState {
        self.state
    }
    pub fn generation_id(&self) -> i32 {
        self.generation_id
    }
    pub fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
    }
    pub fn protocol_name(&self) -> Option<&str> {
        self.protocol_name.as_deref()
    }
    pub fn member_count(&self) -> usize {
        self.members.len()
    }
    pub fn empty_since_ms(&self) -> Option<u64> {
        self.empty_since_ms
    }

    /// Whether the group changed in a way that must be persisted; clears the flag.
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// Deleted (or unloaded): every waiting member gets `error`.
    pub fn mark_dead(&mut self, error: ResponseError) {
        for member in self.members.values_mut() {
            let id = member.member_id.clone();
            member.answer_join(JoinResponse::error(error, &id));
            member.answer_sync(SyncResponse::error(error));
        }
        self.state = GroupState::Dead;
    }

    /// Answers every waiting member with `error` without changing the group (shutdown).
    pub fn fail_waiters(&mut self, error: ResponseError) {
        for member in self.members.values_mut() {
            let id = member.member_id.clone();
            member.answer_join(JoinResponse::error(error, &id));
            member.answer_sync(SyncResponse::error(error));
        }
    }

    pub fn join(&mut self, request: JoinRequest, now_ms: u64) -> Outcome<JoinResponse> {
        self.tick(now_ms);
        let member_id = request.member_id.clone();
        if self.state == GroupState::Dead {
            return Outcome::Ready(JoinResponse::error(
                ResponseError::CoordinatorNotAvailable,
                &member_id,
            ));
        }
        if !self.supports_protocols(&request.protocol_type, &request.protocols) {
            return Outcome::Ready(JoinResponse::error(
                ResponseError::InconsistentGroupProtocol,
                &member_id,
            ));
        }
        let known =
            self.members.contains_key(&member_id) || self.pending_members.contains_key(&member_id);
        let replacing_static = request
            .group_instance_id
            .as_ref()
            .is_some_and(|instance| self.static_members.contains_key(instance));
        if !known
            && !replacing_static
            && self.members.len() + self.pending_members.len() >= self.config.members_max
        {
            return Outcome::Ready(JoinResponse::error(
                ResponseError::GroupMaxSizeReached,
                &member_id,
            ));
        }
        if self.pending_members.remove(&member_id).is_some() {
            return self.add_member_and_rebalance(member_id, request, now_ms);
        }
        if member_id.is_empty() {
            self.join_new_member(request, now_ms)
        } else {
            self.join_known_member(request, now_ms)
        }
    }

    fn join_new_member(&mut self, request: JoinRequest, now_ms: u64) -> Outcome<JoinResponse> {
        let new_id = format!("{}-{}", request.client_id, uuid::Uuid::new_v4());
        if let Some(instance) = &request.group_instance_id {
            if let Some(old_id) = self.static_members.get(instance).cloned() {
                return self.replace_static_member(old_id, new_id, request, now_ms);
            }
            return self.add_member_and_rebalance(new_id, request, now_ms);
        }
        if request.require_known_member_id {
            let deadline = now_ms + timeout_ms(request.session_timeout_ms);
            self.pending_members.insert(new_id.clone(), deadline);
            return Outcome::Ready(JoinResponse::error(
                ResponseError::MemberIdRequired,
                &new_id,
            ));
        }
        self.add_member_and_rebalance(new_id, request, now_ms)
    }

    fn join_known_member(&mut self, request: JoinRequest, now_ms: u64) -> Outcome<JoinResponse> {
        let member_id = request.member_id.clone();
        if let Err(error) = self.check_member(&member_id, request.group_instance_id.as_deref()) {
            return Outcome::Ready(JoinResponse::error(error, &member_id));
        }
        let Some(member) = self.members.get(&member_id) else {
            return Outcome::Ready(JoinResponse::error(
                ResponseError::UnknownMemberId,
                &member_id,
            ));
        };
        let unchanged = member.protocols == request.protocols;
        let is_leader = self.leader_id.as_deref() == Some(member_id.as_str());
        match self.state {
            GroupState::PreparingRebalance => self.update_member_and_rebalance(request, now_ms),
            GroupState::CompletingRebalance if unchanged => {
                // A retried join of the generation being completed: answer it again.
                Outcome::Ready(self.current_join_response(&member_id, is_leader))
            }
            GroupState::Stable if unchanged && !is_leader => {
                Outcome::Ready(self.current_join_response(&member_id, false))
            }
            // The leader rejoining a stable group asks for a rebalance (e.g. new topics match).
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member_and_rebalance(request, now_ms)
            }
            GroupState::Empty | GroupState::Dead => Outcome::Ready(JoinResponse::error(
                ResponseError::UnknownMemberId,
                &member_id,
            )),
        }
    }

    fn add_member_and_rebalance(
        &mut self,
        member_id: String,
        request: JoinRequest,
        now_ms: u64,
    ) -> Outcome<JoinResponse> {
        let mut member = new_member(member_id.clone(), &request, now_ms);
        member.is_new = true;
        member.session_deadline_ms = now_ms + self.config.new_member_join_timeout_ms;
        let (waiter, answer) = oneshot::channel();
        member.awaiting_join = Some(waiter);
        if self.members.is_empty() {
            self.protocol_type = Some(request.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member_id.clone());
        }
        if let Some(instance) = &request.group_instance_id {
            self.static_members
                .insert(instance.clone(), member_id.clone());
        }
        self.members.insert(member_id, member);
        match self.state {
            GroupState::PreparingRebalance => {
                // A newcomer during the initial delay buys the others another window.
                if let Some(delay) = self.initial_delay.as_mut() {
                    delay.member_added = true;
                }
            }
            _ => self.prepare_rebalance(now_ms),
        }
        self.maybe_complete_join(now_ms);
        Outcome::Waiting(answer)
    }

    fn update_member_and_rebalance(
        &mut self,
        request: JoinRequest,
        now_ms: u64,
    ) -> Outcome<JoinResponse> {
        let (waiter, answer) = oneshot::channel();
        let Some(member) = self.members.get_mut(&request.member_id) else {
            return Outcome::Ready(JoinResponse::error(
                ResponseError::UnknownMemberId,
                &request.member_id,
            ));
        };
        // A second join from the same member supersedes the first.
        let id = member.member_id.clone();
        member.answer_join(JoinResponse::error(ResponseError::RebalanceInProgress, &id));
        member.protocols = request.protocols;
        member.session_timeout_ms = request.session_timeout_ms;
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        // No new session: waiting for the answer keeps it alive, and the answer restarts it.
        member.awaiting_join = Some(waiter);
        if self.state != GroupState::PreparingRebalance {
            self.prepare_rebalance(now_ms);
        }
        self.maybe_complete_join(now_ms);
        Outcome::Waiting(answer)
    }

    pub fn sync(&mut self, request: SyncRequest, now_ms: u64) -> Outcome<SyncResponse> {
        self.tick(now_ms);
        let ready = |error| Outcome::Ready(SyncResponse::error(error));
        if self.state == GroupState::Dead {
            return ready(ResponseError::CoordinatorNotAvailable);
        }
        if let Err(error) =
            self.check_member(&request.member_id, request.group_instance_id.as_deref())
        {
            return ready(error);
        }
        if request.generation_id != self.generation_id {
            return ready(ResponseError::IllegalGeneration);
        }
        let type_mismatch =
            request.protocol_type.is_some() && request.protocol_type != self.protocol_type;
        let name_mismatch =
            request.protocol_name.is_some() && request.protocol_name != self.protocol_name;
        if type_mismatch || name_mismatch {
            return ready(ResponseError::InconsistentGroupProtocol);
        }
        // A SyncGroup does not restart the session (a waiting member is alive anyway), as Kafka.
        match self.state {
            GroupState::Empty | GroupState::Dead => ready(ResponseError::UnknownMemberId),
            GroupState::PreparingRebalance => ready(ResponseError::RebalanceInProgress),
            GroupState::Stable => {
                self.synced(&request.member_id);
                let Some(member) = self.members.get(&request.member_id) else {
                    return ready(ResponseError::UnknownMemberId);
                };
                Outcome::Ready(SyncResponse {
                    error: None,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol_name.clone(),
                    assignment: member.assignment.clone(),
                })
            }
            GroupState::CompletingRebalance => {
                self.synced(&request.member_id);
                let (waiter, answer) = oneshot::channel();
                let Some(member) = self.members.get_mut(&request.member_id) else {
                    return ready(ResponseError::UnknownMemberId);
                };
                member.answer_sync(SyncResponse::error(ResponseError::RebalanceInProgress));
                member.awaiting_sync = Some(waiter);
                if self.leader_id.as_deref() == Some(request.member_id.as_str()) {
                    self.apply_assignments(request.assignments, now_ms);
                }
                Outcome::Waiting(answer)
            }
        }
    }

    /// The leader's assignment ends the rebalance: every member gets its part (members the
    /// leader left out get an empty one), and the generation becomes durable. Members that
    /// were waiting for it start a new session with the answer, as in Kafka; the others still
    /// have to send SyncGroup before the sync deadline.
    fn apply_assignments(&mut self, assignments: Vec<(String, Bytes)>, now_ms: u64) {
        let mut assignments: HashMap<String, Bytes> = assignments.into_iter().collect();
        self.state = GroupState::Stable;
        self.dirty = true;
        for member in self.members.values_mut() {
            member.assignment = assignments.remove(&member.member_id).unwrap_or_default();
            if member.awaiting_sync.is_none() {
                continue;
            }
            member.touch(now_ms);
            let response = SyncResponse {
                error: None,
                protocol_type: self.protocol_type.clone(),
                protocol_name: self.protocol_name.clone(),
                assignment: member.assignment.clone(),
            };
            member.answer_sync(response);
        }
        tracing::info!(group = %self.group_id, generation = self.generation_id, members = self.members.len(), "group stable");
    }

    pub fn heartbeat(
        &mut self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        now_ms: u64,
    ) -> Result<(), ResponseError> {
        self.tick(now_ms);
        if self.state == GroupState::Dead {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        self.check_member(member_id, group_instance_id)?;
        if generation_id != self.generation_id {
            return Err(ResponseError::IllegalGeneration);
        }
        let state = self.state;
        let member = self
            .members
            .get_mut(member_id)
            .ok_or(ResponseError::UnknownMemberId)?;
        match state {
            GroupState::Empty | GroupState::Dead => Err(ResponseError::UnknownMemberId),
            GroupState::PreparingRebalance => {
                member.touch(now_ms);
                Err(ResponseError::RebalanceInProgress)
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                member.touch(now_ms);
                Ok(())
            }
        }
    }

    /// LeaveGroup for one member. An empty member id with an instance id removes that static
    /// member (what admin tools send).
    pub fn leave(
        &mut self,
        member_id: &str,
        group_instance_id: Option<&str>,
        now_ms: u64,
    ) -> Result<(), ResponseError> {
        self.tick(now_ms);
        if self.state == GroupState::Dead {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        let member_id = match (member_id.is_empty(), group_instance_id) {
            (true, Some(instance)) => self
                .static_members
                .get(instance)
                .cloned()
                .ok_or(ResponseError::UnknownMemberId)?,
            _ => {
                self.check_member(member_id, group_instance_id)
                    .or_else(|error| {
                        if self.pending_members.contains_key(member_id) {
                            Ok(())
                        } else {
                            Err(error)
                        }
                    })?;
                member_id.to_string()
            }
        };
        if self.pending_members.remove(&member_id).is_some() {
            self.complete_join_if_all_joined(now_ms);
            return Ok(());
        }
        if !self.members.contains_key(&member_id) {
            return Err(ResponseError::UnknownMemberId);
        }
        tracing::info!(group = %self.group_id, %member_id, "member left");
        self.remove_member(&member_id, ResponseError::UnknownMemberId);
        self.after_removal(now_ms);
        Ok(())
    }

    /// Checks that a member may commit offsets for `generation_id`. A negative generation with
    /// an empty group is a commit from a client that manages partitions itself.
    pub fn check_commit(
        &mut self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        now_ms: u64,
    ) -> Result<(), ResponseError> {
        self.tick(now_ms);
        if self.state == GroupState::Dead {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        if generation_id < 0 && self.state == GroupState::Empty {
            return Ok(());
        }
        self.check_member(member_id, group_instance_id)?;
        if generation_id != self.generation_id {
            return Err(ResponseError::IllegalGeneration);
        }
        let state = self.state;
        let member = self
            .members
            .get_mut(member_id)
            .ok_or(ResponseError::UnknownMemberId)?;
        match state {
            GroupState::Stable | GroupState::PreparingRebalance => {
                member.touch(now_ms);
                Ok(())
            }
            GroupState::CompletingRebalance => Err(ResponseError::RebalanceInProgress),
            GroupState::Empty | GroupState::Dead => Err(ResponseError::UnknownMemberId),
        }
    }

    pub fn describe(&self) -> GroupDescription {
        let stable = self.state == GroupState::Stable;
        let protocol_name = if stable {
            self.protocol_name.clone().unwrap_or_default()
        } else {
            String::new()
        };
        let members = self
            .members
            .values()
            .map(|m| DescribedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: if stable {
                    m.metadata_for(&protocol_name).cloned().unwrap_or_default()
                } else {
                    Bytes::new()
                },
                assignment: if stable {
                    m.assignment.clone()
                } else {
                    Bytes::new()
                },
            })
            .collect();
        GroupDescription {
            state: self.state,
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol_name,
            members,
        }
    }

    /// Whether deleting offsets of `topic` must be refused: a consumer group whose members
    /// subscribe to it. Unreadable subscriptions count as subscribed to everything.
    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        let Some(protocol) = &self.protocol_name else {
            return false;
        };
        self.members
            .values()
            .any(|m| match m.metadata_for(protocol).map(subscribed_topics) {
                Some(Some(topics)) => topics.contains(topic),
                Some(None) | None => true,
            })
    }

    fn remove_member(&mut self, member_id: &str, error: ResponseError) {
        let Some(mut member) = self.members.remove(member_id) else {
            return;
        };
        member.answer_join(JoinResponse::error(error, member_id));
        member.answer_sync(SyncResponse::error(error));
        self.synced(member_id);
        if let Some(instance) = &member.group_instance_id {
            if self.static_members.get(instance).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance);
            }
        }
        if self.leader_id.as_deref() == Some(member_id) {
            // Prefer a member already waiting in the rebalance, as Kafka does.
            self.leader_id = self
                .members
                .values()
                .find(|m| m.awaiting_join.is_some())
                .or_else(|| self.members.values().next())
                .map(|m| m.member_id.clone());
        }
    }

    /// Static fencing, then membership.
    fn check_member(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Result<(), ResponseError> {
        if let Some(instance) = group_instance_id {
            if let Some(current) = self.static_members.get(instance) {
                if current != member_id {
                    return Err(ResponseError::FencedInstanceId);
                }
            }
        }
        if self.members.contains_key(member_id) {
            Ok(())
        } else {
            Err(ResponseError::UnknownMemberId)
        }
    }

    fn supports_protocols(&self, protocol_type: &str, protocols: &[Protocol]) -> bool {
        if protocol_type.is_empty() || protocols.is_empty() {
            return false;
        }
        if self.members.is_empty() {
            return true;
        }
        if self.protocol_type.as_deref() != Some(protocol_type) {
            return false;
        }
        let candidates = self.candidate_protocols();
        protocols
            .iter()
            .any(|p| candidates.contains(p.name.as_str()))
    }

    /// Protocols every current member supports.
    fn candidate_protocols(&self) -> HashSet<&str> {
        let mut members = self.members.values();
        let Some(first) = members.next() else {
            return HashSet::new();
        };
        let mut candidates: HashSet<&str> =
            first.protocols.iter().map(|p| p.name.as_str()).collect();
        for member in members {
            let names: HashSet<&str> = member.protocols.iter().map(|p| p.name.as_str()).collect();
            candidates.retain(|c| names.contains(c));
        }
        candidates
    }

    /// Each member votes for its most preferred candidate; most votes wins, ties go to the
    /// candidate the leader prefers.
    fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: HashMap<&str, usize> = HashMap::new();
        for member in self.members.values() {
            if let Some(choice) = member
                .protocols
                .iter()
                .find(|p| candidates.contains(p.name.as_str()))
            {
                *votes.entry(choice.name.as_str()).or_default() += 1;
            }
        }
        let preference = self
            .leader_id
            .as_ref()
            .and_then(|l| self.members.get(l))
            .or_else(|| self.members.values().next())?;
        let mut best: Option<(&str, usize)> = None;
        for protocol in &preference.protocols {
            let count = votes.get(protocol.name.as_str()).copied().unwrap_or(0);
            if count > 0 && best.is_none_or(|(_, c)| count > c) {
                best = Some((protocol.name.as_str(), count));
            }
        }
        best.map(|(name, _)| name.to_string())
    }

    fn joined_members(&self) -> Vec<JoinedMember> {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        self.members
            .values()
            .map(|m| JoinedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata_for(&protocol).cloned().unwrap_or_default(),
            })
            .collect()
    }

    fn current_join_response(&self, member_id: &str, is_leader: bool) -> JoinResponse {
        JoinResponse {
            error: None,
            generation_id: self.generation_id,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader_id: self.leader_id.clone().unwrap_or_default(),
            member_id: member_id.to_string(),
            members: if is_leader {
                self.joined_members()
            } else {
                Vec::new()
            },
            skip_assignment: false,
        }
    }
}

fn new_member(member_id: String, request: &JoinRequest, now_ms: u64) -> Member {
    let mut member = Member {
        member_id,
        group_instance_id: request.group_instance_id.clone(),
        client_id: request.client_id.clone(),
        client_host: request.client_host.clone(),
        session_timeout_ms: request.session_timeout_ms,
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        protocols: request.protocols.clone(),
        assignment: Bytes::new(),
        session_deadline_ms: 0,
        is_new: false,
        awaiting_join: None,
        awaiting_sync: None,
    };
    member.touch(now_ms);
    member
}

/// Topics of a consumer-protocol subscription (version prefix, then the body at that version).
fn subscribed_topics(metadata: &Bytes) -> Option<HashSet<String>> {
    let mut buf = metadata.clone();
    if buf.remaining() < 2 {
        return None;
    }
    // Newer versions only append fields, so read them as the newest version we know.
    let version = buf.get_i16().clamp(0, 3);
    let subscription = ConsumerProtocolSubscription::decode(&mut buf, version).ok()?;
    Some(subscription.topics.iter().map(|t| t.to_string()).collect())
}
