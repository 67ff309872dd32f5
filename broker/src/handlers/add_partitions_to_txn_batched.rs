//! AddPartitionsToTxn v4, the batched form brokers send each other (KIP-890 part 1): several
//! transactions per request, each either added to (as v3) or, with `verify_only`, checked:
//! every partition answered NONE if it is in the producer's open transaction, else
//! INVALID_TXN_STATE (or the producer's error). It needs CLUSTER_ACTION on the cluster.

use std::sync::Arc;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTransaction;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, TopicName};
use kafka_protocol::ResponseError;

use super::add_partitions_to_txn::{all, answer, check_partitions};
use super::RequestContext;
use crate::context::Broker;
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;
use crate::transactions::coordinator;

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let response = AddPartitionsToTxnResponse::default();
    if !broker.authorizer.allows(
        context,
        &operations::ADD_PARTITIONS_TO_TXN_BATCHED,
        CLUSTER_NAME,
    ) {
        return response.with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let mut results = Vec::with_capacity(request.transactions.len());
    for transaction in request.transactions {
        let id = transaction.transactional_id.clone();
        let topic_results = transaction_results(broker, context, transaction).await;
        results.push(
            AddPartitionsToTxnResult::default()
                .with_transactional_id(id)
                .with_topic_results(topic_results),
        );
    }
    response.with_results_by_transaction(results)
}

async fn transaction_results(
    broker: &Arc<Broker>,
    context: &RequestContext,
    transaction: AddPartitionsToTxnTransaction,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let id = transaction.transactional_id.0.to_string();
    let producer = (transaction.producer_id.0, transaction.producer_epoch);
    let topics: Vec<(TopicName, Vec<i32>)> = transaction
        .topics
        .into_iter()
        .map(|t| (t.name, t.partitions))
        .collect();
    if !coordinator::is_coordinator(broker, &id) {
        return all(&topics, ResponseError::NotCoordinator);
    }
    let partitions = match check_partitions(broker, context, &topics) {
        Ok(partitions) => partitions,
        Err(refused) => {
            return answer(&topics, |topic, p| {
                let found = refused.iter().find(|(t, q, _)| t == topic && *q == p);
                Some(found.map_or(ResponseError::OperationNotAttempted, |(_, _, e)| *e))
            })
        }
    };
    if !transaction.verify_only {
        return match coordinator::add_partitions(broker, &id, producer.0, producer.1, partitions)
            .await
        {
            Ok(()) => answer(&topics, |_, _| None),
            Err(error) => all(&topics, error),
        };
    }
    let mut errors = Vec::with_capacity(partitions.len());
    for p in &partitions {
        let verified =
            coordinator::verify_partition(broker, &id, producer.0, producer.1, &p.stream).await;
        errors.push((p.topic.clone(), p.partition, verified.err()));
    }
    answer(&topics, |topic, partition| {
        errors
            .iter()
            .find(|(t, q, _)| t == topic && *q == partition)
            .and_then(|(_, _, e)| *e)
    })
}
