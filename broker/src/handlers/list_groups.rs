//! ListGroups with the state (v4+) and type (v5+) filters; every group here is "classic".

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};

use super::str_bytes;
use crate::context::Broker;

const GROUP_TYPE: &str = "classic";

pub async fn handle(
    broker: &Broker,
    version: i16,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let states: Vec<String> = request
        .states_filter
        .iter()
        .map(|s| s.to_lowercase())
        .collect();
    let types: Vec<String> = request
        .types_filter
        .iter()
        .map(|s| s.to_lowercase())
        .collect();
    if !types.is_empty() && !types.iter().any(|t| t == GROUP_TYPE) {
        return ListGroupsResponse::default();
    }
    let groups = broker
        .groups
        .list()
        .await
        .into_iter()
        .filter(|g| states.is_empty() || states.contains(&g.state.name().to_lowercase()))
        .map(|g| {
            let listed = ListedGroup::default()
                .with_group_id(GroupId(str_bytes(&g.group_id)))
                .with_protocol_type(str_bytes(&g.protocol_type));
            let listed = if version >= 4 {
                listed.with_group_state(str_bytes(g.state.name()))
            } else {
                listed
            };
            if version >= 5 {
                listed.with_group_type(str_bytes(GROUP_TYPE))
            } else {
                listed
            }
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}
