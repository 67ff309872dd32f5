//! ListGroups with the state (v4+) and type (v5+) filters: classic groups, then groups of the
//! consumer protocol (KIP-848), which Kafka lists with protocol type and group type "consumer".
//! DESCRIBE on the cluster lists every group; without it, only the groups the principal may
//! describe.

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};

use super::{str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;

const CLASSIC: &str = "classic";
const CONSUMER: &str = "consumer";

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    version: i16,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let authorizer = &broker.authorizer;
    let sees_all =
        authorizer.allows_quietly(context, &operations::LIST_GROUPS_CLUSTER, CLUSTER_NAME);
    let visible = |group_id: &str| {
        sees_all || authorizer.allows_quietly(context, &operations::LIST_GROUPS, group_id)
    };
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
    let wants = |group_type: &str| types.is_empty() || types.iter().any(|t| t == group_type);
    let mut rows: Vec<(String, String, &'static str, &'static str)> = Vec::new();
    let consumer_groups = broker.groups.consumer().list().await;
    if wants(CLASSIC) {
        for g in broker.groups.list().await {
            // A consumer group that took over an empty classic group's id shadows it.
            if !consumer_groups.iter().any(|c| c.group_id == g.group_id) {
                rows.push((g.group_id, g.protocol_type, g.state.name(), CLASSIC));
            }
        }
    }
    if wants(CONSUMER) {
        for g in consumer_groups {
            rows.push((g.group_id, CONSUMER.to_string(), g.state.name(), CONSUMER));
        }
    }
    let groups = rows
        .into_iter()
        .filter(|(_, _, state, _)| states.is_empty() || states.contains(&state.to_lowercase()))
        .filter(|(group_id, _, _, _)| visible(group_id))
        .map(|(group_id, protocol_type, state, group_type)| {
            let listed = ListedGroup::default()
                .with_group_id(GroupId(str_bytes(&group_id)))
                .with_protocol_type(str_bytes(&protocol_type));
            let listed = if version >= 4 {
                listed.with_group_state(str_bytes(state))
            } else {
                listed
            };
            if version >= 5 {
                listed.with_group_type(str_bytes(group_type))
            } else {
                listed
            }
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}
