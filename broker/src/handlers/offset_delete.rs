//! OffsetDelete: removes committed offsets of topics a group does not consume. DELETE on the
//! group is checked first (GROUP_AUTHORIZATION_FAILED), then READ on each topic.

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};
use kafka_protocol::ResponseError;

use super::RequestContext;
use crate::context::Broker;
use crate::security::authorizer::operations;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    let authorizer = &broker.authorizer;
    if !authorizer.allows(
        context,
        &operations::OFFSET_DELETE_GROUP,
        &request.group_id.0,
    ) {
        let refused = ResponseError::GroupAuthorizationFailed.code();
        return OffsetDeleteResponse::default().with_error_code(refused);
    }
    // Unknown and unreadable topics are answered without touching the group, as Kafka does.
    let mut known = Vec::new();
    let mut refused = Vec::new();
    for topic in &request.topics {
        if !authorizer.allows(context, &operations::OFFSET_DELETE, &topic.name.0) {
            refused.push(topic.name.0.to_string());
            continue;
        }
        let exists = broker.catalog.get(&topic.name.0);
        for partition in &topic.partitions {
            let index = partition.partition_index;
            if exists
                .as_ref()
                .is_some_and(|t| index >= 0 && index < t.record.partitions)
            {
                known.push((topic.name.0.to_string(), index));
            }
        }
    }
    let results = match broker
        .groups
        .delete_offsets(&request.group_id.0, &known)
        .await
    {
        Ok(results) => results,
        Err(error) => return OffsetDeleteResponse::default().with_error_code(error.code()),
    };
    let mut results = known.into_iter().zip(results);
    let mut next = results.next();
    let topics = request
        .topics
        .iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let code = match &next {
                        Some(((t, i), result))
                            if *t == *topic.name.0 && *i == p.partition_index =>
                        {
                            let code = result.err().map_or(0, |e| e.code());
                            next = results.next();
                            code
                        }
                        _ if refused.contains(&topic.name.0.to_string()) => {
                            ResponseError::TopicAuthorizationFailed.code()
                        }
                        _ => ResponseError::UnknownTopicOrPartition.code(),
                    };
                    OffsetDeleteResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code)
                })
                .collect();
            OffsetDeleteResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    OffsetDeleteResponse::default().with_topics(topics)
}
