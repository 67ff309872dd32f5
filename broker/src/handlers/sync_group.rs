//! SyncGroup: the leader's assignment in, every member's share out.

use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};

use super::str_bytes;
use crate::context::Broker;
use crate::groups::group::SyncRequest;

pub async fn handle(broker: &Broker, version: i16, request: SyncGroupRequest) -> SyncGroupResponse {
    let sync = SyncRequest {
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.as_ref().map(|s| s.to_string()),
        generation_id: request.generation_id,
        protocol_type: request.protocol_type.as_ref().map(|s| s.to_string()),
        protocol_name: request.protocol_name.as_ref().map(|s| s.to_string()),
        assignments: request
            .assignments
            .into_iter()
            .map(|a| (a.member_id.to_string(), a.assignment))
            .collect(),
    };
    let answer = broker.groups.sync(&request.group_id.0, sync).await;
    let response = SyncGroupResponse::default()
        .with_error_code(answer.error.map_or(0, |e| e.code()))
        .with_assignment(answer.assignment);
    if version >= 5 {
        response
            .with_protocol_type(answer.protocol_type.as_deref().map(str_bytes))
            .with_protocol_name(answer.protocol_name.as_deref().map(str_bytes))
    } else {
        response
    }
}
