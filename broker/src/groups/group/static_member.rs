//! A static member (KIP-345, `group.instance.id`) that comes back under a new member id, as
//! a restarted consumer does: as Kafka's `updateStaticMemberThenRebalanceOrCompleteJoin`, it
//! takes over its old id's place, assignment and leadership, the old id is fenced
//! (FENCED_INSTANCE_ID), and in a Stable group whose protocol it leaves unchanged nobody else
//! notices: no rebalance, the same generation.

use tokio::sync::oneshot;

use kafka_protocol::ResponseError;

use super::{new_member, Group, GroupState, JoinRequest, Outcome};
use crate::groups::member::{JoinResponse, SyncResponse};

impl Group {
    pub(super) fn replace_static_member(
        &mut self,
        old_id: String,
        new_id: String,
        request: JoinRequest,
        now_ms: u64,
    ) -> Outcome<JoinResponse> {
        let Some(mut old) = self.members.remove(&old_id) else {
            return self.add_member_and_rebalance(new_id, request, now_ms);
        };
        // The old incarnation may still wait for an answer: it is fenced now.
        old.answer_join(JoinResponse::error(
            ResponseError::FencedInstanceId,
            &old_id,
        ));
        old.answer_sync(SyncResponse::error(ResponseError::FencedInstanceId));
        let previous_leader = self.leader_id.clone().unwrap_or_default();
        if previous_leader == old_id {
            self.leader_id = Some(new_id.clone());
        }
        if let Some(instance) = &request.group_instance_id {
            self.static_members.insert(instance.clone(), new_id.clone());
        }
        self.replace_pending_sync(&old_id, &new_id);
        tracing::info!(group = %self.group_id, instance = ?request.group_instance_id, %old_id, %new_id, state = self.state.name(), "static member replaced");
        // Its session starts now; it is not new (no join timeout), as in Kafka.
        let mut member = new_member(new_id.clone(), &request, now_ms);
        member.assignment = std::mem::take(&mut old.assignment);
        self.members.insert(new_id.clone(), member);

        if self.state == GroupState::Stable && self.select_protocol() == self.protocol_name {
            self.dirty = true;
            return Outcome::Ready(self.returning_static_answer(
                &new_id,
                &previous_leader,
                request.supports_skip_assignment,
            ));
        }
        let (waiter, answer) = oneshot::channel();
        if let Some(member) = self.members.get_mut(&new_id) {
            member.awaiting_join = Some(waiter);
        }
        match self.state {
            // The leader may have assigned to the old id already: assign again.
            GroupState::Stable | GroupState::CompletingRebalance => self.prepare_rebalance(now_ms),
            GroupState::PreparingRebalance | GroupState::Empty | GroupState::Dead => {}
        }
        self.maybe_complete_join(now_ms);
        Outcome::Waiting(answer)
    }

    /// The current generation, for a static member back in a stable group. A leader that can
    /// be told to skip the assignment (JoinGroup v9+) learns it leads; an older client would
    /// assign anew, so it is named the previous leader and syncs as a follower.
    fn returning_static_answer(
        &self,
        member_id: &str,
        previous_leader: &str,
        supports_skip_assignment: bool,
    ) -> JoinResponse {
        let mut answer = self.current_join_response(member_id, false);
        let is_leader = self.leader_id.as_deref() == Some(member_id);
        if supports_skip_assignment {
            if is_leader {
                answer.members = self.joined_members();
                answer.skip_assignment = true;
            }
        } else {
            answer.leader_id = previous_leader.to_string();
        }
        answer
    }
}
