//! Heartbeat: keeps a member's session alive and tells it when to rejoin.

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use crate::context::Broker;

pub async fn handle(broker: &Broker, request: HeartbeatRequest) -> HeartbeatResponse {
    let result = broker
        .groups
        .heartbeat(
            &request.group_id.0,
            &request.member_id,
            request.group_instance_id.as_deref(),
            request.generation_id,
        )
        .await;
    HeartbeatResponse::default().with_error_code(result.err().map_or(0, |e| e.code()))
}
