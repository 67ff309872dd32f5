//! OffsetForLeaderEpoch v2-4: the end offset of a leader epoch, which consumers ask after a
//! leader change to check that their position is still on the log. Leadership carries no state
//! here, so every partition has one epoch, 0, from offset 0 to the log end, and the answer is
//! Kafka's `LeaderEpochFileCache.endOffsetFor` over that one-entry cache: epoch 0 ends at the
//! high watermark, an epoch above it is unknown (-1, -1), and -1 asks for nothing (-1, -1).
//! A `current_leader_epoch` other than 0 (or -1, "not known") is fenced or unknown, as a
//! stale or future leader epoch is in Kafka.

use kafka_protocol::messages::offset_for_leader_epoch_request::OffsetForLeaderPartition;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use kafka_protocol::ResponseError;

use super::{kafka_offset, RequestContext};
use crate::context::Broker;
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;
use crate::storage_errors::read_error;

/// The one leader epoch every partition has.
const LEADER_EPOCH: i32 = 0;
const UNDEFINED_EPOCH: i32 = -1;
const UNDEFINED_OFFSET: i64 = -1;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let cluster_action = broker.authorizer.allows(
        context,
        &operations::OFFSET_FOR_LEADER_EPOCH_CLUSTER,
        CLUSTER_NAME,
    );
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let allowed = cluster_action
            || broker.authorizer.allows(
                context,
                &operations::OFFSET_FOR_LEADER_EPOCH,
                &topic.topic.0,
            );
        let found = broker.catalog.get(&topic.topic.0);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for partition in &topic.partitions {
            let answer = if !allowed {
                Err(ResponseError::TopicAuthorizationFailed)
            } else {
                let stream = found
                    .as_ref()
                    .filter(|t| (0..t.record.partitions).contains(&partition.partition))
                    .map(|t| t.stream_id(partition.partition));
                match stream {
                    None => Err(ResponseError::UnknownTopicOrPartition),
                    Some(stream) => end_offset(broker, &stream, partition).await,
                }
            };
            partitions.push(answered(partition.partition, answer));
        }
        topics.push(
            OffsetForLeaderTopicResult::default()
                .with_topic(topic.topic)
                .with_partitions(partitions),
        );
    }
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}

/// `(epoch, end offset)` of the requested epoch.
async fn end_offset(
    broker: &Broker,
    stream: &str,
    partition: &OffsetForLeaderPartition,
) -> Result<(i32, i64), ResponseError> {
    match partition.current_leader_epoch {
        UNDEFINED_EPOCH | LEADER_EPOCH => {}
        epoch if epoch < LEADER_EPOCH => return Err(ResponseError::FencedLeaderEpoch),
        _ => return Err(ResponseError::UnknownLeaderEpoch),
    }
    match partition.leader_epoch {
        UNDEFINED_EPOCH => Ok((UNDEFINED_EPOCH, UNDEFINED_OFFSET)),
        LEADER_EPOCH => {
            let bounds = broker
                .storage
                .bounds(stream)
                .await
                .map_err(|e| read_error(&e))?;
            Ok((LEADER_EPOCH, kafka_offset(bounds.high_watermark)))
        }
        epoch if epoch > LEADER_EPOCH => Ok((UNDEFINED_EPOCH, UNDEFINED_OFFSET)),
        // Below every epoch of the cache: the requested epoch ends where the first one starts.
        epoch => Ok((epoch, 0)),
    }
}

fn answered(partition: i32, answer: Result<(i32, i64), ResponseError>) -> EpochEndOffset {
    let response = EpochEndOffset::default().with_partition(partition);
    match answer {
        Ok((epoch, offset)) => response.with_leader_epoch(epoch).with_end_offset(offset),
        Err(error) => response
            .with_error_code(error.code())
            .with_leader_epoch(UNDEFINED_EPOCH)
            .with_end_offset(UNDEFINED_OFFSET),
    }
}
