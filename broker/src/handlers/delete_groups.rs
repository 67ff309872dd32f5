//! DeleteGroups: empty groups only (NON_EMPTY_GROUP otherwise); their offsets go with them.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};

use crate::context::Broker;

pub async fn handle(broker: &Broker, request: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let mut results = Vec::with_capacity(request.groups_names.len());
    for group_id in request.groups_names {
        let result = broker.groups.delete(&group_id.0).await;
        results.push(
            DeletableGroupResult::default()
                .with_group_id(group_id)
                .with_error_code(result.err().map_or(0, |e| e.code())),
        );
    }
    DeleteGroupsResponse::default().with_results(results)
}
