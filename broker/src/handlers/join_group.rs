//! JoinGroup: hands the request to the group coordinator and waits for the rebalance.

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse, RequestHeader};

use super::str_bytes;
use crate::context::Broker;
use crate::groups::group::JoinRequest;
use crate::groups::member::Protocol;

pub async fn handle(
    broker: &Broker,
    version: i16,
    header: &RequestHeader,
    request: JoinGroupRequest,
) -> JoinGroupResponse {
    // v0 has no rebalance timeout: Kafka uses the session timeout.
    let rebalance_timeout_ms = if version >= 1 && request.rebalance_timeout_ms > 0 {
        request.rebalance_timeout_ms
    } else {
        request.session_timeout_ms
    };
    let join = JoinRequest {
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.as_ref().map(|s| s.to_string()),
        client_id: header
            .client_id
            .as_ref()
            .map(|s| s.to_string())
            .unwrap_or_default(),
        client_host: String::new(),
        session_timeout_ms: request.session_timeout_ms,
        rebalance_timeout_ms,
        protocol_type: request.protocol_type.to_string(),
        protocols: request
            .protocols
            .into_iter()
            .map(|p| Protocol {
                name: p.name.to_string(),
                metadata: p.metadata,
            })
            .collect(),
        require_known_member_id: version >= 4,
        supports_skip_assignment: version >= 9,
    };
    let answer = broker.groups.join(&request.group_id.0, join).await;
    let members = answer
        .members
        .into_iter()
        .map(|m| {
            let member = JoinGroupResponseMember::default()
                .with_member_id(str_bytes(&m.member_id))
                .with_metadata(m.metadata);
            if version >= 5 {
                member.with_group_instance_id(m.group_instance_id.as_deref().map(str_bytes))
            } else {
                member
            }
        })
        .collect();
    // Before v7 the protocol name is not nullable.
    let protocol_name = match answer.protocol_name {
        Some(name) => Some(str_bytes(&name)),
        None if version < 7 => Some(str_bytes("")),
        None => None,
    };
    JoinGroupResponse::default()
        .with_error_code(answer.error.map_or(0, |e| e.code()))
        .with_generation_id(answer.generation_id)
        .with_protocol_type(answer.protocol_type.as_deref().map(str_bytes))
        .with_protocol_name(protocol_name)
        .with_leader(str_bytes(&answer.leader_id))
        .with_member_id(str_bytes(&answer.member_id))
        .with_members(members)
        .with_skip_assignment(version >= 9 && answer.skip_assignment)
}
