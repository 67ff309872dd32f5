//! DescribeGroups: state, protocol and members of each group; unknown groups are reported
//! as Dead (GROUP_ID_NOT_FOUND from v6 on, as in Kafka 4). Consumer-protocol groups are shown
//! too, with protocol type "consumer". Each group needs DESCRIBE on it
//! (GROUP_AUTHORIZATION_FAILED); `authorized_operations` (v3+, when asked) are the principal's
//! on the group.

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};
use kafka_protocol::ResponseError;

use super::metadata::OPERATIONS_NOT_REQUESTED;
use super::{str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::acl::ResourceType;
use crate::security::authorizer::operations;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    version: i16,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let authorizer = &broker.authorizer;
    let include_ops = version >= 3 && request.include_authorized_operations;
    let mut groups = Vec::with_capacity(request.groups.len());
    for group_id in request.groups {
        let base = DescribedGroup::default()
            .with_group_id(group_id.clone())
            .with_authorized_operations(OPERATIONS_NOT_REQUESTED);
        if !authorizer.allows(context, &operations::DESCRIBE_GROUPS, &group_id.0) {
            let refused = ResponseError::GroupAuthorizationFailed.code();
            groups.push(
                base.with_error_code(refused)
                    .with_group_state(str_bytes("")),
            );
            continue;
        }
        let ops = if include_ops {
            authorizer.authorized_operations(context, ResourceType::Group, &group_id.0)
        } else {
            OPERATIONS_NOT_REQUESTED
        };
        if let Ok(Some(group)) = broker.groups.consumer().describe(&group_id.0).await {
            groups.push(describe_consumer_group(
                base.with_authorized_operations(ops),
                version,
                group,
            ));
            continue;
        }
        let base = base.with_authorized_operations(ops);
        let described = match broker.groups.describe(&group_id.0).await {
            Ok(Some(group)) => {
                let members = group
                    .members
                    .into_iter()
                    .map(|m| {
                        let member = DescribedGroupMember::default()
                            .with_member_id(str_bytes(&m.member_id))
                            .with_client_id(str_bytes(&m.client_id))
                            .with_client_host(str_bytes(&m.client_host))
                            .with_member_metadata(m.metadata)
                            .with_member_assignment(m.assignment);
                        if version >= 4 {
                            member.with_group_instance_id(
                                m.group_instance_id.as_deref().map(str_bytes),
                            )
                        } else {
                            member
                        }
                    })
                    .collect();
                base.with_group_state(str_bytes(group.state.name()))
                    .with_protocol_type(str_bytes(&group.protocol_type))
                    .with_protocol_data(str_bytes(&group.protocol_name))
                    .with_members(members)
            }
            Ok(None) if version >= 6 => base
                .with_authorized_operations(OPERATIONS_NOT_REQUESTED)
                .with_error_code(ResponseError::GroupIdNotFound.code())
                .with_error_message(Some(str_bytes(&format!(
                    "group {} not found",
                    &*group_id.0
                ))))
                .with_group_state(str_bytes("Dead")),
            Ok(None) => base.with_group_state(str_bytes("Dead")),
            Err(error) => base
                .with_error_code(error.code())
                .with_authorized_operations(OPERATIONS_NOT_REQUESTED),
        };
        groups.push(described);
    }
    DescribeGroupsResponse::default().with_groups(groups)
}

/// A consumer-protocol group as classic tools see it: its state, protocol type "consumer",
/// the server assignor as protocol, and members without client metadata.
fn describe_consumer_group(
    base: DescribedGroup,
    version: i16,
    group: crate::groups::consumer::group::GroupDescription,
) -> DescribedGroup {
    let members = group
        .members
        .into_iter()
        .map(|m| {
            let member = DescribedGroupMember::default()
                .with_member_id(str_bytes(&m.member.member_id))
                .with_client_id(str_bytes(&m.member.client_id))
                .with_client_host(str_bytes(&m.member.client_host));
            if version >= 4 {
                member.with_group_instance_id(m.member.instance_id.as_deref().map(str_bytes))
            } else {
                member
            }
        })
        .collect();
    base.with_group_state(str_bytes(group.state.name()))
        .with_protocol_type(str_bytes("consumer"))
        .with_protocol_data(str_bytes(group.assignor.name()))
        .with_members(members)
}
