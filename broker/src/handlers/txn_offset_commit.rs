//! TxnOffsetCommit, served by the group's coordinator: WRITE on the transactional id, READ on
//! the group and on each topic; the producer must be the transaction's current one and the
//! group in it (AddOffsetsToTxn), and from v3 the member must be the group's current one
//! (KIP-447 fencing). The offsets are staged and become the group's only if the transaction
//! commits.

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use kafka_protocol::ResponseError;

use super::RequestContext;
use crate::context::Broker;
use crate::security::authorizer::operations;
use crate::transactions::offsets;
use crate::transactions::records::{PendingOffset, Status};

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    version: i16,
    request: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let group = request.group_id.0.to_string();
    let whole = check_request(broker, context, version, &request)
        .await
        .err();
    let mut staged = Vec::new();
    let mut answers: Vec<(usize, i32, Option<ResponseError>)> = Vec::new();
    for (t, topic) in request.topics.iter().enumerate() {
        let allowed =
            broker
                .authorizer
                .allows(context, &operations::TXN_OFFSET_COMMIT, &topic.name.0);
        let known = broker.catalog.get(&topic.name.0);
        for p in &topic.partitions {
            let exists = known
                .as_ref()
                .is_some_and(|k| p.partition_index >= 0 && p.partition_index < k.record.partitions);
            let error = whole.or_else(|| {
                (!allowed)
                    .then_some(ResponseError::TopicAuthorizationFailed)
                    .or((!exists).then_some(ResponseError::UnknownTopicOrPartition))
            });
            if error.is_none() {
                staged.push(PendingOffset {
                    topic: topic.name.0.to_string(),
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if version >= 2 {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    metadata: p
                        .committed_metadata
                        .as_deref()
                        .unwrap_or_default()
                        .to_string(),
                });
            }
            answers.push((t, p.partition_index, error));
        }
    }
    let stage_error = if staged.is_empty() {
        None
    } else {
        let producer = (request.producer_id.0, request.producer_epoch);
        offsets::stage(
            broker,
            &group,
            &request.transactional_id.0,
            producer,
            staged,
        )
        .await
        .err()
    };
    respond(&request, answers, stage_error)
}

/// The checks that refuse the whole request.
async fn check_request(
    broker: &Broker,
    context: &RequestContext,
    version: i16,
    request: &TxnOffsetCommitRequest,
) -> Result<(), ResponseError> {
    let id = request.transactional_id.0.as_str();
    let group = request.group_id.0.as_str();
    let authorizer = &broker.authorizer;
    if !authorizer.allows(context, &operations::TXN_OFFSET_COMMIT_ID, id) {
        return Err(ResponseError::TransactionalIdAuthorizationFailed);
    }
    if !authorizer.allows(context, &operations::TXN_OFFSET_COMMIT_GROUP, group) {
        return Err(ResponseError::GroupAuthorizationFailed);
    }
    let placement = broker.membership.placement();
    if placement.group_coordinator(group).broker_id != broker.node.broker_id {
        return Err(ResponseError::NotCoordinator);
    }
    let Some((state, _)) = broker.transactions.load(id).await? else {
        return Err(ResponseError::InvalidProducerIdMapping);
    };
    if state.producer_id != request.producer_id.0 {
        return Err(ResponseError::InvalidProducerIdMapping);
    }
    if request.producer_epoch < state.epoch {
        return Err(ResponseError::ProducerFenced);
    }
    if request.producer_epoch > state.epoch
        || state.status != Status::Ongoing
        || !state.groups.iter().any(|g| g == group)
    {
        return Err(ResponseError::InvalidTxnState);
    }
    if version >= 3 {
        broker
            .groups
            .validate_commit(
                group,
                &request.member_id,
                request.group_instance_id.as_deref(),
                request.generation_id,
            )
            .await?;
    }
    Ok(())
}

fn respond(
    request: &TxnOffsetCommitRequest,
    answers: Vec<(usize, i32, Option<ResponseError>)>,
    stage_error: Option<ResponseError>,
) -> TxnOffsetCommitResponse {
    let topics = request
        .topics
        .iter()
        .enumerate()
        .map(|(t, topic)| {
            let partitions = answers
                .iter()
                .filter(|(at, _, _)| *at == t)
                .map(|(_, index, error)| {
                    let error = error.or(stage_error);
                    TxnOffsetCommitResponsePartition::default()
                        .with_partition_index(*index)
                        .with_error_code(error.map_or(0, |e| e.code()))
                })
                .collect();
            TxnOffsetCommitResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    TxnOffsetCommitResponse::default().with_topics(topics)
}
