//! LeaveGroup: one member (v0-v2) or a batch of members, static ones by instance id (v3+).

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};

use super::str_bytes;
use crate::context::Broker;

pub async fn handle(
    broker: &Broker,
    version: i16,
    request: LeaveGroupRequest,
) -> LeaveGroupResponse {
    let leaving: Vec<(String, Option<String>)> = if version >= 3 {
        request
            .members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(|s| s.to_string()),
                )
            })
            .collect()
    } else {
        vec![(request.member_id.to_string(), None)]
    };
    let results = match broker.groups.leave(&request.group_id.0, &leaving).await {
        Ok(results) => results,
        Err(error) => return LeaveGroupResponse::default().with_error_code(error.code()),
    };
    if version < 3 {
        let code = results
            .first()
            .and_then(|r| r.err())
            .map_or(0, |e| e.code());
        return LeaveGroupResponse::default().with_error_code(code);
    }
    let members = leaving
        .iter()
        .zip(results)
        .map(|((member_id, instance), result)| {
            MemberResponse::default()
                .with_member_id(str_bytes(member_id))
                .with_group_instance_id(instance.as_deref().map(str_bytes))
                .with_error_code(result.err().map_or(0, |e| e.code()))
        })
        .collect();
    LeaveGroupResponse::default().with_members(members)
}
