//! DescribeProducers, served by each partition's leader: the producers its idempotence state
//! knows, with the first offset of each one's open transaction (Kafka's
//! `currentTxnStartOffset`). READ on the topic, else TOPIC_AUTHORIZATION_FAILED.

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};
use kafka_protocol::ResponseError;

use super::{kafka_offset, RequestContext};
use crate::context::Broker;
use crate::security::authorizer::operations;
use crate::transactions::keys;
use crate::transactions::records::{decode, OpenTxn};

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let allowed =
            broker
                .authorizer
                .allows(context, &operations::DESCRIBE_PRODUCERS, &topic.name.0);
        let mut partitions = Vec::with_capacity(topic.partition_indexes.len());
        for index in topic.partition_indexes {
            let answer = PartitionResponse::default().with_partition_index(index);
            let result = if allowed {
                producers(broker, &topic.name.0, index).await
            } else {
                Err(ResponseError::TopicAuthorizationFailed)
            };
            partitions.push(match result {
                Ok(active) => answer.with_active_producers(active),
                Err(error) => answer.with_error_code(error.code()),
            });
        }
        topics.push(
            TopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    DescribeProducersResponse::default().with_topics(topics)
}

async fn producers(
    broker: &Broker,
    topic: &str,
    partition: i32,
) -> Result<Vec<ProducerState>, ResponseError> {
    let found = broker.catalog.get(topic);
    let Some(found) = found.filter(|t| partition >= 0 && partition < t.record.partitions) else {
        return Err(ResponseError::UnknownTopicOrPartition);
    };
    let placement = broker.membership.placement();
    if placement.partition_leader(topic, partition, None).broker_id != broker.node.broker_id {
        return Err(ResponseError::NotLeaderOrFollower);
    }
    let stream = found.stream_id(partition);
    let views = broker
        .producers
        .partition(&stream)
        .describe(&broker.storage)
        .await
        .map_err(|error| {
            tracing::warn!(stream, %error, "producer state not readable");
            ResponseError::KafkaStorageError
        })?;
    let (start, end) = keys::open_range(&stream);
    let open: Vec<OpenTxn> = broker
        .transactions
        .meta()
        .range_scan(
            &start,
            &end,
            None,
            crate::transactions::stable::OPEN_SCAN_MAX,
        )
        .await
        .map_err(|_| ResponseError::KafkaStorageError)?
        .iter()
        .filter_map(|r| decode(&r.value).ok())
        .collect();
    Ok(views
        .into_iter()
        .map(|v| {
            let txn_start = open
                .iter()
                .find(|o| o.producer_id == v.producer_id)
                .map_or(-1, |o| kafka_offset(o.first_offset));
            ProducerState::default()
                .with_producer_id(ProducerId(v.producer_id))
                .with_producer_epoch(i32::from(v.epoch))
                .with_last_sequence(v.last_seq.unwrap_or(-1))
                .with_last_timestamp(i64::try_from(v.last_seen_ms).unwrap_or(-1))
                .with_coordinator_epoch(-1)
                .with_current_txn_start_offset(txn_start)
        })
        .collect())
}
