//! OffsetCommit: validates partitions against the catalog, then commits through the group
//! coordinator. Errors are per partition, as in Kafka: READ on a topic is checked before its
//! existence (READ on the group was checked before the request got here).

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};
use kafka_protocol::ResponseError;

use super::RequestContext;
use crate::context::Broker;
use crate::groups::store::{CommittedOffset, OffsetRecord};
use crate::security::authorizer::operations;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    version: i16,
    request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let now_ms = i64::try_from(storage::clock::system_now_ms()).unwrap_or(i64::MAX);
    let metadata_max = broker.groups.config().offset_metadata_bytes_max;
    // (topic index, partition index, error or position in `to_commit`)
    let mut slots: Vec<Vec<(i32, Result<usize, ResponseError>)>> =
        Vec::with_capacity(request.topics.len());
    let mut to_commit = Vec::new();
    for topic in &request.topics {
        let allowed = broker
            .authorizer
            .allows(context, &operations::OFFSET_COMMIT, &topic.name.0);
        let known = broker.catalog.get(&topic.name.0);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for partition in &topic.partitions {
            let index = partition.partition_index;
            let exists = known
                .as_ref()
                .is_some_and(|t| index >= 0 && index < t.record.partitions);
            let metadata = partition
                .committed_metadata
                .as_ref()
                .map(|m| m.to_string())
                .unwrap_or_default();
            let slot = if !allowed {
                Err(ResponseError::TopicAuthorizationFailed)
            } else if !exists {
                Err(ResponseError::UnknownTopicOrPartition)
            } else if metadata.len() > metadata_max {
                Err(ResponseError::OffsetMetadataTooLarge)
            } else {
                to_commit.push(CommittedOffset {
                    topic: topic.name.0.to_string(),
                    partition: index,
                    record: OffsetRecord {
                        offset: partition.committed_offset,
                        leader_epoch: if version >= 6 {
                            partition.committed_leader_epoch
                        } else {
                            -1
                        },
                        metadata,
                        commit_timestamp_ms: now_ms,
                    },
                });
                Ok(to_commit.len() - 1)
            };
            partitions.push((index, slot));
        }
        slots.push(partitions);
    }
    let instance = if version >= 7 {
        request.group_instance_id.as_deref()
    } else {
        None
    };
    let committed = if to_commit.is_empty() {
        Vec::new()
    } else {
        broker
            .groups
            .commit_offsets(
                &request.group_id.0,
                &request.member_id,
                instance,
                request.generation_id_or_member_epoch,
                &to_commit,
            )
            .await
    };
    let topics = request
        .topics
        .iter()
        .zip(slots)
        .map(|(topic, partitions)| {
            let partitions = partitions
                .into_iter()
                .map(|(index, slot)| {
                    let result = match slot {
                        Ok(position) => committed
                            .get(position)
                            .copied()
                            .unwrap_or(Err(ResponseError::UnknownServerError)),
                        Err(error) => Err(error),
                    };
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(index)
                        .with_error_code(result.err().map_or(0, |e| e.code()))
                })
                .collect();
            OffsetCommitResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}
