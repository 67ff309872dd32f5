//! Group requests reaching a broker that does not coordinate the group are answered
//! `NOT_COORDINATOR`, so that every member of a group meets at the one broker the hash names
//! and two brokers never run the same group's state machine at once. The client looks the
//! coordinator up again. OffsetFetch, DescribeGroups and ListGroups read the MetaStore and are
//! served anywhere.

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, OffsetCommitResponse, RequestKind,
    ResponseKind, SyncGroupResponse,
};
use kafka_protocol::ResponseError;

use super::Placement;

/// `Some(answer)` when `request` is a group request for a group `my_id` does not coordinate.
pub fn refuse(placement: &Placement, my_id: i32, request: &RequestKind) -> Option<ResponseKind> {
    let group_id = group_of(request)?;
    if placement.group_coordinator(group_id).broker_id == my_id {
        return None;
    }
    answer(request, ResponseError::NotCoordinator)
}

/// The group of a request only its coordinator serves.
pub fn group_of(request: &RequestKind) -> Option<&str> {
    let group_id = match request {
        RequestKind::JoinGroup(r) => &r.group_id,
        RequestKind::SyncGroup(r) => &r.group_id,
        RequestKind::Heartbeat(r) => &r.group_id,
        RequestKind::LeaveGroup(r) => &r.group_id,
        RequestKind::OffsetCommit(r) => &r.group_id,
        _ => return None,
    };
    Some(&group_id.0)
}

/// Such a request refused whole with `error`.
pub fn answer(request: &RequestKind, error: ResponseError) -> Option<ResponseKind> {
    let code = error.code();
    Some(match request {
        RequestKind::JoinGroup(_) => {
            ResponseKind::JoinGroup(JoinGroupResponse::default().with_error_code(code))
        }
        RequestKind::SyncGroup(_) => {
            ResponseKind::SyncGroup(SyncGroupResponse::default().with_error_code(code))
        }
        RequestKind::Heartbeat(_) => {
            ResponseKind::Heartbeat(HeartbeatResponse::default().with_error_code(code))
        }
        RequestKind::LeaveGroup(r) => ResponseKind::LeaveGroup(
            LeaveGroupResponse::default()
                .with_error_code(code)
                .with_members(
                    r.members
                        .iter()
                        .map(|m| {
                            MemberResponse::default()
                                .with_member_id(m.member_id.clone())
                                .with_group_instance_id(m.group_instance_id.clone())
                                .with_error_code(code)
                        })
                        .collect(),
                ),
        ),
        RequestKind::OffsetCommit(r) => ResponseKind::OffsetCommit(
            OffsetCommitResponse::default().with_topics(
                r.topics
                    .iter()
                    .map(|t| {
                        OffsetCommitResponseTopic::default()
                            .with_name(t.name.clone())
                            .with_partitions(
                                t.partitions
                                    .iter()
                                    .map(|p| {
                                        OffsetCommitResponsePartition::default()
                                            .with_partition_index(p.partition_index)
                                            .with_error_code(code)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            ),
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::{GroupId, HeartbeatRequest};
    use kafka_protocol::protocol::StrBytes;

    use super::*;
    use crate::cluster::Member;

    fn member(id: i32) -> Member {
        Member {
            broker_id: id,
            host: "h".into(),
            port: 1,
            rack: None,
            listeners: Vec::new(),
        }
    }

    #[test]
    fn only_the_hashed_coordinator_serves_a_group() {
        let placement = Placement::new(vec![member(1), member(2)], &member(3));
        let group = "g";
        let coordinator = placement.group_coordinator(group).broker_id;
        let request = RequestKind::Heartbeat(
            HeartbeatRequest::default().with_group_id(GroupId(StrBytes::from_static_str(group))),
        );
        assert!(refuse(&placement, coordinator, &request).is_none());
        for other in (1..=3).filter(|&id| id != coordinator) {
            match refuse(&placement, other, &request) {
                Some(ResponseKind::Heartbeat(r)) => {
                    assert_eq!(r.error_code, ResponseError::NotCoordinator.code())
                }
                other => panic!("expected a heartbeat refusal, got {other:?}"),
            }
        }
    }
}
