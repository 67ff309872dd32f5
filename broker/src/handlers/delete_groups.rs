//! DeleteGroups: empty groups only (NON_EMPTY_GROUP otherwise); their offsets go with them.
//! Each group needs DELETE on it (GROUP_AUTHORIZATION_FAILED).

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};

use kafka_protocol::ResponseError;

use super::RequestContext;
use crate::context::Broker;
use crate::security::authorizer::operations;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let mut results = Vec::with_capacity(request.groups_names.len());
    for group_id in request.groups_names {
        let result = if broker
            .authorizer
            .allows(context, &operations::DELETE_GROUPS, &group_id.0)
        {
            broker.groups.delete(&group_id.0).await
        } else {
            Err(ResponseError::GroupAuthorizationFailed)
        };
        results.push(
            DeletableGroupResult::default()
                .with_group_id(group_id)
                .with_error_code(result.err().map_or(0, |e| e.code())),
        );
    }
    DeleteGroupsResponse::default().with_results(results)
}
