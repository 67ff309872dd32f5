//! DeleteRecords: moves a partition's log start offset forward. Records below it are unreadable
//! at once (Fetch answers OFFSET_OUT_OF_RANGE, ListOffsets earliest moves); the compactor frees
//! their storage later. Only the partition's leader answers, as for Produce, so that a client
//! retrying after NOT_LEADER_OR_FOLLOWER reaches the broker the Metadata named. DELETE on each
//! topic is checked first (TOPIC_AUTHORIZATION_FAILED, whether the topic exists or not).

use std::sync::Arc;

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use kafka_protocol::ResponseError;

use super::{kafka_offset, RequestContext};
use crate::cluster::Placement;
use crate::context::Broker;
use crate::security::authorizer::operations;
use crate::storage_errors::read_error;

/// The offset a client sends to delete everything up to the high watermark.
const HIGH_WATERMARK: i64 = -1;

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    zone: Option<&str>,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let placement = broker.membership.placement();
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.name.0.to_string();
        let allowed = broker
            .authorizer
            .allows(context, &operations::DELETE_RECORDS, &name);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for partition in topic.partitions {
            let index = partition.partition_index;
            let answer = if allowed {
                delete(broker, &placement, zone, &name, index, partition.offset).await
            } else {
                Err(ResponseError::TopicAuthorizationFailed)
            };
            let result = DeleteRecordsPartitionResult::default().with_partition_index(index);
            partitions.push(match answer {
                Ok(low_watermark) => result.with_low_watermark(kafka_offset(low_watermark)),
                Err(error) => {
                    let resource = format!("{name}-{index}");
                    let reason = format!("offset {}", partition.offset);
                    context.refused("delete_records", &resource, error, &reason);
                    result.with_low_watermark(-1).with_error_code(error.code())
                }
            });
        }
        topics.push(
            DeleteRecordsTopicResult::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    DeleteRecordsResponse::default().with_topics(topics)
}

/// Trims one partition to `offset`; returns its log start offset afterwards.
async fn delete(
    broker: &Broker,
    placement: &Placement,
    zone: Option<&str>,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Result<u64, ResponseError> {
    let stream = broker
        .catalog
        .get(topic)
        .filter(|t| partition >= 0 && partition < t.record.partitions)
        .map(|t| t.stream_id(partition))
        .ok_or(ResponseError::UnknownTopicOrPartition)?;
    if placement.partition_leader(topic, partition, zone).broker_id != broker.node.broker_id {
        return Err(ResponseError::NotLeaderOrFollower);
    }
    // Fresh bounds: another broker may have appended (or trimmed) since this one looked.
    let bounds = broker
        .storage
        .refresh_bounds(&stream)
        .await
        .map_err(|e| read_error(&e))?;
    let target = match offset {
        HIGH_WATERMARK => bounds.high_watermark,
        o => match u64::try_from(o) {
            Ok(o) if o <= bounds.high_watermark => o,
            _ => return Err(ResponseError::OffsetOutOfRange),
        },
    };
    // Below the current log start nothing moves; Kafka answers the current low watermark.
    let after = broker
        .storage
        .trim(&stream, target)
        .await
        .map_err(|e| read_error(&e))?;
    if after.log_start_offset > bounds.log_start_offset {
        tracing::info!(
            topic,
            partition,
            log_start_offset = after.log_start_offset,
            "records deleted"
        );
    }
    Ok(after.log_start_offset)
}
