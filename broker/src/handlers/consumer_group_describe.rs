//! ConsumerGroupDescribe (KIP-848): epochs, assignor and members with their current and
//! target assignments. A classic group, or none, is GROUP_ID_NOT_FOUND, as in Kafka (the
//! Java admin then falls back to DescribeGroups). DESCRIBE on each group is checked first
//! (GROUP_AUTHORIZATION_FAILED); a group with a topic assigned that the principal may not
//! describe is refused TOPIC_AUTHORIZATION_FAILED, without its members, as Kafka 4.1 does.

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse};
use kafka_protocol::ResponseError;

use super::metadata::OPERATIONS_NOT_REQUESTED;
use super::{str_bytes, topic_name, RequestContext};
use crate::context::Broker;
use crate::groups::consumer::group::GroupDescription;
use crate::groups::consumer::{self, TopicsMeta};
use crate::security::acl::ResourceType;
use crate::security::authorizer::operations;

const TOPICS_REFUSED: &str =
    "The group has described topic(s) that the client is not authorized to describe.";
/// `member_type` of a member that speaks the consumer protocol.
const CONSUMER_MEMBER: i8 = 1;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    version: i16,
    request: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let authorizer = &broker.authorizer;
    let mut groups = Vec::with_capacity(request.group_ids.len());
    for group_id in request.group_ids {
        let base = DescribedGroup::default()
            .with_group_id(group_id.clone())
            .with_authorized_operations(OPERATIONS_NOT_REQUESTED);
        if !authorizer.allows(context, &operations::CONSUMER_GROUP_DESCRIBE, &group_id.0) {
            groups.push(base.with_error_code(ResponseError::GroupAuthorizationFailed.code()));
            continue;
        }
        let described = match broker.groups.consumer().describe(&group_id.0).await {
            Ok(Some(group)) => {
                let described = describe(broker, version, base.clone(), group);
                if !topics_allowed(broker, context, &described) {
                    groups.push(
                        base.with_error_code(ResponseError::TopicAuthorizationFailed.code())
                            .with_error_message(Some(str_bytes(TOPICS_REFUSED))),
                    );
                    continue;
                }
                if request.include_authorized_operations {
                    let ops =
                        authorizer.authorized_operations(context, ResourceType::Group, &group_id.0);
                    described.with_authorized_operations(ops)
                } else {
                    described
                }
            }
            Ok(None) => base
                .with_error_code(ResponseError::GroupIdNotFound.code())
                .with_error_message(Some(str_bytes(&format!(
                    "group {} is not a consumer group",
                    &*group_id.0
                )))),
            Err(error) => base.with_error_code(error.code()),
        };
        groups.push(described);
    }
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}

/// Whether the principal may describe every topic assigned, or to be assigned, in the group.
fn topics_allowed(broker: &Broker, context: &RequestContext, group: &DescribedGroup) -> bool {
    let mut names: Vec<&str> = group
        .members
        .iter()
        .flat_map(|m| [&m.assignment, &m.target_assignment])
        .flat_map(|a| a.topic_partitions.iter().map(|t| t.topic_name.0.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter().all(|name| {
        broker
            .authorizer
            .allows(context, &operations::CONSUMER_GROUP_DESCRIBE_TOPICS, name)
    })
}

fn describe(
    broker: &Broker,
    version: i16,
    base: DescribedGroup,
    group: GroupDescription,
) -> DescribedGroup {
    let members = group
        .members
        .iter()
        .map(|m| {
            let member = Member::default()
                .with_member_id(str_bytes(&m.member.member_id))
                .with_instance_id(m.member.instance_id.as_deref().map(str_bytes))
                .with_rack_id(m.member.rack_id.as_deref().map(str_bytes))
                .with_member_epoch(m.member.reconciliation.member_epoch)
                .with_client_id(str_bytes(&m.member.client_id))
                .with_client_host(str_bytes(&m.member.client_host))
                .with_subscribed_topic_names(
                    m.member
                        .subscribed_names
                        .iter()
                        .map(|t| topic_name(t))
                        .collect(),
                )
                .with_subscribed_topic_regex(m.member.subscribed_regex.as_deref().map(str_bytes))
                .with_assignment(assignment(
                    broker,
                    &group.topics,
                    &m.member.reconciliation.assigned,
                ))
                .with_target_assignment(assignment(broker, &group.topics, &m.target));
            if version >= 1 {
                member.with_member_type(CONSUMER_MEMBER)
            } else {
                member
            }
        })
        .collect();
    base.with_group_state(str_bytes(group.state.name()))
        .with_group_epoch(group.group_epoch)
        .with_assignment_epoch(group.assignment_epoch)
        .with_assignor_name(str_bytes(group.assignor.name()))
        .with_members(members)
}

fn assignment(
    broker: &Broker,
    topics: &TopicsMeta,
    partitions: &consumer::Assignment,
) -> Assignment {
    let topic_partitions = partitions
        .iter()
        .map(|(id, ps)| {
            let name = topics
                .values()
                .find(|t| t.id == *id)
                .map(|t| t.name.clone())
                .or_else(|| broker.catalog.get_by_id(*id).map(|t| t.name.clone()))
                .unwrap_or_default();
            TopicPartitions::default()
                .with_topic_id(*id)
                .with_topic_name(topic_name(&name))
                .with_partitions(ps.iter().copied().collect())
        })
        .collect();
    Assignment::default().with_topic_partitions(topic_partitions)
}
