//! DescribeTransactions, served by each transactional id's coordinator: its state, producer,
//! timeout, start time and partitions. DESCRIBE on the id, else
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an unknown id is TRANSACTIONAL_ID_NOT_FOUND.

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::{topic_name, RequestContext};
use crate::context::Broker;
use crate::security::authorizer::operations;
use crate::transactions::coordinator;
use crate::transactions::records::{Status, TxnState};

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let mut states = Vec::with_capacity(request.transactional_ids.len());
    for id in request.transactional_ids {
        states.push(describe(broker, context, id).await);
    }
    DescribeTransactionsResponse::default().with_transaction_states(states)
}

async fn describe(
    broker: &Broker,
    context: &RequestContext,
    id: TransactionalId,
) -> TransactionState {
    let answer = TransactionState::default()
        .with_transactional_id(id.clone())
        .with_transaction_state(StrBytes::from_static_str(""))
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1)
        .with_transaction_start_time_ms(-1);
    let refused = |error: ResponseError| answer.clone().with_error_code(error.code());
    if !broker
        .authorizer
        .allows(context, &operations::DESCRIBE_TRANSACTIONS, &id.0)
    {
        return refused(ResponseError::TransactionalIdAuthorizationFailed);
    }
    if !coordinator::is_coordinator(broker, &id.0) {
        return refused(ResponseError::NotCoordinator);
    }
    match broker.transactions.load(&id.0).await {
        Ok(Some((state, _))) => described(answer, &state),
        Ok(None) => refused(ResponseError::TransactionalIdNotFound),
        Err(error) => refused(error),
    }
}

fn described(answer: TransactionState, state: &TxnState) -> TransactionState {
    let mut topics: Vec<TopicData> = Vec::new();
    for p in &state.partitions {
        match topics.last_mut() {
            Some(t) if t.topic.0.as_str() == p.topic => t.partitions.push(p.partition),
            _ => topics.push(
                TopicData::default()
                    .with_topic(topic_name(&p.topic))
                    .with_partitions(vec![p.partition]),
            ),
        }
    }
    let started = if state.status == Status::Empty {
        -1
    } else {
        i64::try_from(state.start_ms).unwrap_or(-1)
    };
    answer
        .with_transaction_state(StrBytes::from_static_str(state.status.kafka_name()))
        .with_transaction_timeout_ms(state.timeout_ms)
        .with_transaction_start_time_ms(started)
        .with_producer_id(ProducerId(state.producer_id))
        .with_producer_epoch(state.epoch)
        .with_topics(topics)
}
