//! A classic group's rebalance and every timer of the group, as Kafka's `GroupMetadataManager`
//! runs them (each deadline is an instant the operations set; [`Group::tick`] acts on those
//! that passed):
//!
//! - session: a member is removed `session_timeout_ms` after its last heartbeat, offset
//!   commit (Stable or PreparingRebalance), or the join/sync answer that ended its wait; while
//!   an answer is pending it is alive. A new member waiting for its first join answer lapses
//!   after `new_member_join_timeout_ms` instead, waiting or not;
//! - join phase: ends once every member and every id handed out with MEMBER_ID_REQUIRED has
//!   joined, or at the rebalance timeout (the largest of the members', from the start of the
//!   phase). Dynamic members that did not rejoin are removed then; static ones stay, for their
//!   session timeout to decide. If none rejoined at all, the phase waits another timeout;
//! - initial delay: the first rebalance of an empty group ends `initial_rebalance_delay_ms`
//!   after it began, one more such window after each window in which a member joined, while
//!   the rebalance timeout lasts. A member leaving or expiring still ends it when everyone
//!   left has joined;
//! - sync phase: members that have not sent SyncGroup a rebalance timeout after the join
//!   phase ended are removed, and the group rebalances.

use std::collections::HashSet;

use bytes::Bytes;
use kafka_protocol::ResponseError;

use super::{Group, GroupState};
use crate::groups::member::{timeout_ms, JoinResponse, SyncResponse};

/// Kafka's initial rebalance: windows of `initial_rebalance_delay_ms`, one more after each
/// window in which a member joined, while the rebalance timeout lasts.
#[derive(Debug, Clone, Copy)]
pub(super) struct InitialDelay {
    /// When the current window ends.
    until_ms: u64,
    /// What the rebalance timeout leaves for more windows.
    remaining_ms: u64,
    /// Whether a member joined during the current window.
    pub(super) member_added: bool,
}

/// Members of a new generation that have not sent SyncGroup yet.
#[derive(Debug, Clone)]
pub(super) struct PendingSync {
    members: HashSet<String>,
    deadline_ms: u64,
}

impl Group {
    /// Acts on every deadline that passed by `now_ms`: lapsed member ids, expired sessions,
    /// the sync deadline, the end of the join phase.
    pub fn tick(&mut self, now_ms: u64) {
        if self.state == GroupState::Dead {
            return;
        }
        self.expire_pending_members(now_ms);
        self.expire_sessions(now_ms);
        self.expire_pending_sync(now_ms);
        self.maybe_complete_join(now_ms);
    }

    fn expire_pending_members(&mut self, now_ms: u64) {
        let before = self.pending_members.len();
        self.pending_members
            .retain(|_, deadline| *deadline > now_ms);
        if self.pending_members.len() < before {
            self.complete_join_if_all_joined(now_ms);
        }
    }

    fn expire_sessions(&mut self, now_ms: u64) {
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| m.session_expired(now_ms))
            .map(|m| m.member_id.clone())
            .collect();
        if expired.is_empty() {
            return;
        }
        for member_id in &expired {
            tracing::info!(group = %self.group_id, %member_id, "member session expired");
            self.remove_member(member_id, ResponseError::UnknownMemberId);
        }
        self.after_removal(now_ms);
    }

    fn expire_pending_sync(&mut self, now_ms: u64) {
        if !matches!(
            self.state,
            GroupState::CompletingRebalance | GroupState::Stable
        ) {
            return;
        }
        let Some(pending) = self.pending_sync.take_if(|p| p.deadline_ms <= now_ms) else {
            return;
        };
        for member_id in &pending.members {
            tracing::info!(group = %self.group_id, %member_id, "member removed: no SyncGroup within the rebalance timeout");
            self.remove_member(member_id, ResponseError::UnknownMemberId);
        }
        self.prepare_rebalance(now_ms);
        self.maybe_complete_join(now_ms);
    }

    /// A member sent SyncGroup for this generation (or left it).
    pub(super) fn synced(&mut self, member_id: &str) {
        if let Some(pending) = self.pending_sync.as_mut() {
            pending.members.remove(member_id);
            if pending.members.is_empty() {
                self.pending_sync = None;
            }
        }
    }

    /// A static member replaced under a new id owes the SyncGroup its old id owed.
    pub(super) fn replace_pending_sync(&mut self, old_id: &str, new_id: &str) {
        if let Some(pending) = self.pending_sync.as_mut() {
            if pending.members.remove(old_id) {
                pending.members.insert(new_id.to_string());
            }
        }
    }

    /// After members were removed: a group that had settled rebalances, one rebalancing may
    /// now have every remaining member joined (even in its initial delay, as Kafka).
    pub(super) fn after_removal(&mut self, now_ms: u64) {
        match self.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.prepare_rebalance(now_ms);
                self.maybe_complete_join(now_ms);
            }
            GroupState::PreparingRebalance => self.complete_join_if_all_joined(now_ms),
            GroupState::Empty | GroupState::Dead => {}
        }
    }

    pub(super) fn complete_join_if_all_joined(&mut self, now_ms: u64) {
        if self.state == GroupState::PreparingRebalance && self.all_joined() {
            self.complete_join(now_ms);
        }
    }

    fn all_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.values().all(|m| m.awaiting_join.is_some())
    }

    /// The largest rebalance timeout of the members: how long the join and sync phases last.
    fn rebalance_timeout_ms(&self) -> u64 {
        self.members
            .values()
            .map(|m| timeout_ms(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    pub(super) fn prepare_rebalance(&mut self, now_ms: u64) {
        if self.state == GroupState::CompletingRebalance {
            for member in self.members.values_mut() {
                member.assignment = Bytes::new();
                if member.awaiting_sync.is_some() {
                    member.answer_sync(SyncResponse::error(ResponseError::RebalanceInProgress));
                    // Its session restarts with the answer, as Kafka's propagateAssignment.
                    member.touch(now_ms);
                }
            }
        }
        self.pending_sync = None;
        let initial = self.state == GroupState::Empty;
        let timeout = self.rebalance_timeout_ms();
        self.state = GroupState::PreparingRebalance;
        self.empty_since_ms = None;
        self.rebalance_deadline_ms = now_ms + timeout;
        let delay = self.config.initial_rebalance_delay_ms;
        self.initial_delay = initial.then_some(InitialDelay {
            until_ms: now_ms + delay,
            remaining_ms: timeout.saturating_sub(delay),
            member_added: false,
        });
        tracing::debug!(group = %self.group_id, generation = self.generation_id, members = self.members.len(), "preparing rebalance");
    }

    /// Ends the join phase if it is due: after the initial delay, or once every member has
    /// joined, or at the rebalance deadline.
    pub(super) fn maybe_complete_join(&mut self, now_ms: u64) {
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        let due = if self.initial_delay.is_some() {
            self.initial_delay_over(now_ms)
        } else {
            self.all_joined() || now_ms >= self.rebalance_deadline_ms
        };
        if due {
            self.complete_join(now_ms);
        }
    }

    /// Moves the initial delay on to `now_ms`, window by window; whether it is over.
    fn initial_delay_over(&mut self, now_ms: u64) -> bool {
        let step_ms = self.config.initial_rebalance_delay_ms;
        let Some(delay) = self.initial_delay.as_mut() else {
            return true;
        };
        while now_ms >= delay.until_ms {
            if !delay.member_added || delay.remaining_ms == 0 || step_ms == 0 {
                return true;
            }
            // From the end of the window, not from this tick: ticks add no delay.
            let window_ms = step_ms.min(delay.remaining_ms);
            delay.until_ms += window_ms;
            delay.remaining_ms -= window_ms;
            delay.member_added = false;
        }
        false
    }

    fn complete_join(&mut self, now_ms: u64) {
        self.initial_delay = None;
        let missing: Vec<String> = self
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.group_instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in missing {
            tracing::info!(group = %self.group_id, %member_id, "member removed: did not rejoin in time");
            self.remove_member(&member_id, ResponseError::UnknownMemberId);
        }
        if !self.members.is_empty() && !self.elect_joined_leader() {
            // Only static members that have not rejoined are left: they get another rebalance
            // timeout, unless their sessions run out first.
            tracing::info!(group = %self.group_id, members = self.members.len(), "rebalance extended: no member rejoined");
            self.rebalance_deadline_ms = now_ms + self.rebalance_timeout_ms();
            return;
        }
        self.generation_id = self.generation_id.wrapping_add(1).max(1);
        if self.members.is_empty() {
            self.state = GroupState::Empty;
            self.empty_since_ms = Some(now_ms);
            self.protocol_name = None;
            self.leader_id = None;
            self.dirty = true;
            tracing::info!(group = %self.group_id, generation = self.generation_id, "group is empty");
            return;
        }
        self.protocol_name = self.select_protocol();
        self.state = GroupState::CompletingRebalance;
        self.pending_sync = Some(PendingSync {
            members: self.members.keys().cloned().collect(),
            deadline_ms: now_ms + self.rebalance_timeout_ms(),
        });
        self.answer_joins(now_ms);
    }

    /// Keeps the leader if it rejoined, else makes a member that did the leader; `false`
    /// when none did.
    fn elect_joined_leader(&mut self) -> bool {
        let rejoined = |id: &String| {
            self.members
                .get(id)
                .is_some_and(|m| m.awaiting_join.is_some())
        };
        if self.leader_id.as_ref().is_some_and(rejoined) {
            return true;
        }
        let Some(leader) = self.members.values().find(|m| m.awaiting_join.is_some()) else {
            return false;
        };
        self.leader_id = Some(leader.member_id.clone());
        true
    }

    /// The new generation's JoinGroup answers; every member's session starts now.
    fn answer_joins(&mut self, now_ms: u64) {
        let leader_id = self.leader_id.clone().unwrap_or_default();
        let leader_view = self.joined_members();
        for member in self.members.values_mut() {
            member.touch(now_ms);
            member.is_new = false;
            let is_leader = member.member_id == leader_id;
            let response = JoinResponse {
                error: None,
                generation_id: self.generation_id,
                protocol_type: self.protocol_type.clone(),
                protocol_name: self.protocol_name.clone(),
                leader_id: leader_id.clone(),
                member_id: member.member_id.clone(),
                members: if is_leader {
                    leader_view.clone()
                } else {
                    Vec::new()
                },
                skip_assignment: false,
            };
            member.answer_join(response);
        }
        tracing::info!(group = %self.group_id, generation = self.generation_id, members = self.members.len(), protocol = ?self.protocol_name, leader = %leader_id, "rebalance joined");
    }
}
