//! ListOffsets: earliest (-2), latest (-1), max timestamp (-3), and the first offset whose
//! record timestamp is at or after a time. The index narrows a time lookup to one batch; only
//! that batch is decoded to find the exact record.

use std::sync::Arc;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use kafka_protocol::ResponseError;
use record_batch::rewrite::record_timestamps;
use record_batch::DECOMPRESSED_BYTES_MAX;
use storage::{ReadChunk, StreamBounds};

use super::{kafka_offset, RequestContext};
use crate::context::Broker;
use crate::security::authorizer::operations;
use crate::storage_errors::read_error;
use crate::transactions;

const LATEST_TIMESTAMP: i64 = -1;
const EARLIEST_TIMESTAMP: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    version: i16,
    request: ListOffsetsRequest,
) -> ListOffsetsResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let allowed = broker
            .authorizer
            .allows(context, &operations::LIST_OFFSETS, &topic.name.0);
        let found = broker.catalog.get(&topic.name.0);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for partition in topic.partitions {
            // Leader epochs exist from v4; the encoder refuses them in older versions.
            let leader_epoch = if version >= 4 { 0 } else { -1 };
            let response = ListOffsetsPartitionResponse::default()
                .with_partition_index(partition.partition_index)
                .with_leader_epoch(leader_epoch);
            if !allowed {
                let refused = ResponseError::TopicAuthorizationFailed.code();
                let response = response.with_error_code(refused).with_leader_epoch(-1);
                partitions.push(unknown(response));
                continue;
            }
            let stream = found
                .as_ref()
                .filter(|t| {
                    partition.partition_index >= 0
                        && partition.partition_index < t.record.partitions
                })
                .map(|t| t.stream_id(partition.partition_index));
            let Some(stream) = stream else {
                partitions.push(unknown(
                    response.with_error_code(ResponseError::UnknownTopicOrPartition.code()),
                ));
                continue;
            };
            let answer = match partition.timestamp {
                MAX_TIMESTAMP if version < 7 => Err(ResponseError::UnsupportedVersion),
                ts if ts < MAX_TIMESTAMP => Err(ResponseError::UnsupportedVersion),
                // A read_committed consumer's end of the log is the last stable offset.
                LATEST_TIMESTAMP if version >= 2 && request.isolation_level == 1 => {
                    transactions::stable::last_stable_offset(broker, &stream)
                        .await
                        .map(|(lso, _)| Some((kafka_offset(lso), -1)))
                }
                ts => lookup(broker, &stream, ts).await,
            };
            partitions.push(match answer {
                Ok(Some((offset, timestamp))) => {
                    response.with_offset(offset).with_timestamp(timestamp)
                }
                Ok(None) => unknown(response),
                Err(error) => unknown(response.with_error_code(error.code())),
            });
        }
        topics.push(
            ListOffsetsTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    ListOffsetsResponse::default().with_topics(topics)
}

fn unknown(response: ListOffsetsPartitionResponse) -> ListOffsetsPartitionResponse {
    response.with_offset(-1).with_timestamp(-1)
}

/// `(offset, timestamp)` for one partition, `None` when no record matches.
async fn lookup(
    broker: &Broker,
    stream: &str,
    timestamp: i64,
) -> Result<Option<(i64, i64)>, ResponseError> {
    let storage = &broker.storage;
    let bounds = storage.bounds(stream).await.map_err(|e| read_error(&e))?;
    match timestamp {
        LATEST_TIMESTAMP => Ok(Some((kafka_offset(bounds.high_watermark), -1))),
        EARLIEST_TIMESTAMP => Ok(Some((kafka_offset(bounds.log_start_offset), -1))),
        MAX_TIMESTAMP => {
            let batch = storage
                .find_batch_with_max_timestamp(stream)
                .await
                .map_err(|e| read_error(&e))?;
            match batch {
                None => Ok(None),
                Some(batch) => {
                    let max = batch.batches[0].max_timestamp;
                    first_record_at_or_after(&batch, max, bounds)
                }
            }
        }
        at => {
            // Batches reaching the time whose records at or after it all lie below the log
            // start give way to the next such batch, as in Kafka.
            let mut from_offset = bounds.log_start_offset;
            loop {
                let batch = storage
                    .find_batch_by_timestamp(stream, at, from_offset)
                    .await
                    .map_err(|e| read_error(&e))?;
                let Some(batch) = batch else { return Ok(None) };
                if let Some(found) = first_record_at_or_after(&batch, at, bounds)? {
                    return Ok(Some(found));
                }
                from_offset = batch.end_offset();
            }
        }
    }
}

/// Reads the one batch the index pointed at and finds the first record with a timestamp at
/// or after `at` that is still inside the log. In a log-append-time batch every record has the
/// batch's max timestamp (its records keep the producer's, which consumers ignore too). The
/// records are read through the bounded streaming decoder: nothing of them is kept.
fn first_record_at_or_after(
    batch: &ReadChunk,
    at: i64,
    bounds: StreamBounds,
) -> Result<Option<(i64, i64)>, ResponseError> {
    let times = record_timestamps(&batch.bytes, DECOMPRESSED_BYTES_MAX).map_err(|e| {
        tracing::error!(error = %e, base_offset = batch.base_offset, "stored batch does not decode");
        ResponseError::KafkaStorageError
    })?;
    let base_offset = kafka_offset(batch.base_offset);
    let log_start_offset = kafka_offset(bounds.log_start_offset);
    Ok(times
        .iter()
        .map(|t| (base_offset + i64::from(t.offset_delta), t.timestamp))
        .find(|(offset, timestamp)| *timestamp >= at && *offset >= log_start_offset))
}
