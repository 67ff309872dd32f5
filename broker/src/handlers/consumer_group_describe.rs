//! ConsumerGroupDescribe (KIP-848): epochs, assignor and members with their current and
//! target assignments. A classic group, or none, is GROUP_ID_NOT_FOUND, as in Kafka (the
//! Java admin then falls back to DescribeGroups).

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse};
use kafka_protocol::ResponseError;

use super::{str_bytes, topic_name};
use crate::context::Broker;
use crate::groups::consumer::group::GroupDescription;
use crate::groups::consumer::{self, TopicsMeta};

/// No authorizer: Kafka answers INT32_MIN when operations were not requested.
const AUTHORIZED_OPERATIONS_UNKNOWN: i32 = i32::MIN;
/// `member_type` of a member that speaks the consumer protocol.
const CONSUMER_MEMBER: i8 = 1;

pub async fn handle(
    broker: &Broker,
    version: i16,
    request: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let mut groups = Vec::with_capacity(request.group_ids.len());
    for group_id in request.group_ids {
        let base = DescribedGroup::default()
            .with_group_id(group_id.clone())
            .with_authorized_operations(AUTHORIZED_OPERATIONS_UNKNOWN);
        let described = match broker.groups.consumer().describe(&group_id.0).await {
            Ok(Some(group)) => describe(broker, version, base, group),
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
