//! AddPartitionsToTxn v0-3 (the client's form; v4, the brokers', is
//! `add_partitions_to_txn_batched`): WRITE on the transactional id, then on each
//! topic; the partitions must exist. As Kafka, any partition refused leaves the others
//! OPERATION_NOT_ATTEMPTED and the transaction unchanged.

use std::sync::Arc;

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, TopicName};
use kafka_protocol::ResponseError;

use super::RequestContext;
use crate::context::Broker;
use crate::security::authorizer::operations;
use crate::transactions::coordinator;
use crate::transactions::records::TxnPartition;

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    version: i16,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    if version >= 4 {
        return super::add_partitions_to_txn_batched::handle(broker, context, request).await;
    }
    let id = request.v3_and_below_transactional_id.0.to_string();
    let topics: Vec<(TopicName, Vec<i32>)> = request
        .v3_and_below_topics
        .into_iter()
        .map(|t| (t.name, t.partitions))
        .collect();
    let authorizer = &broker.authorizer;
    let outcome = if !authorizer.allows(context, &operations::ADD_PARTITIONS_TO_TXN_ID, &id) {
        Err(vec![])
    } else {
        check_partitions(broker, context, &topics)
    };
    let results = match outcome {
        Err(refused) if refused.is_empty() => {
            all(&topics, ResponseError::TransactionalIdAuthorizationFailed)
        }
        Err(refused) => answer(&topics, |topic, p| {
            refused
                .iter()
                .find(|(t, q, _)| t == topic && *q == p)
                .map_or(Some(ResponseError::OperationNotAttempted), |(_, _, e)| {
                    Some(*e)
                })
        }),
        Ok(_) if !coordinator::is_coordinator(broker, &id) => {
            all(&topics, ResponseError::NotCoordinator)
        }
        Ok(partitions) => {
            let added = coordinator::add_partitions(
                broker,
                &id,
                request.v3_and_below_producer_id.0,
                request.v3_and_below_producer_epoch,
                partitions,
            )
            .await;
            match added {
                Ok(()) => answer(&topics, |_, _| None),
                Err(error) => all(&topics, error),
            }
        }
    };
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results)
}

/// The partitions as the transaction records them, or those refused with their errors
/// (an empty list: none refused, which does not happen).
pub(super) fn check_partitions(
    broker: &Broker,
    context: &RequestContext,
    topics: &[(TopicName, Vec<i32>)],
) -> Result<Vec<TxnPartition>, Vec<(String, i32, ResponseError)>> {
    let mut partitions = Vec::new();
    let mut refused = Vec::new();
    for (name, indexes) in topics {
        let allowed =
            broker
                .authorizer
                .allows(context, &operations::ADD_PARTITIONS_TO_TXN, &name.0);
        let topic = broker.catalog.get(&name.0);
        for &index in indexes {
            let error = match &topic {
                _ if !allowed => Some(ResponseError::TopicAuthorizationFailed),
                Some(t) if index >= 0 && index < t.record.partitions => None,
                _ => Some(ResponseError::UnknownTopicOrPartition),
            };
            match (error, &topic) {
                (Some(error), _) => refused.push((name.0.to_string(), index, error)),
                (None, Some(t)) => partitions.push(TxnPartition {
                    topic: name.0.to_string(),
                    partition: index,
                    stream: t.stream_id(index),
                }),
                (None, None) => {}
            }
        }
    }
    if refused.is_empty() {
        Ok(partitions)
    } else {
        Err(refused)
    }
}

pub(super) fn all(
    topics: &[(TopicName, Vec<i32>)],
    error: ResponseError,
) -> Vec<AddPartitionsToTxnTopicResult> {
    answer(topics, |_, _| Some(error))
}

pub(super) fn answer(
    topics: &[(TopicName, Vec<i32>)],
    error_of: impl Fn(&str, i32) -> Option<ResponseError>,
) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
        .iter()
        .map(|(name, partitions)| {
            AddPartitionsToTxnTopicResult::default()
                .with_name(name.clone())
                .with_results_by_partition(
                    partitions
                        .iter()
                        .map(|&p| {
                            AddPartitionsToTxnPartitionResult::default()
                                .with_partition_index(p)
                                .with_partition_error_code(
                                    error_of(&name.0, p).map_or(0, |e| e.code()),
                                )
                        })
                        .collect(),
                )
        })
        .collect()
}
