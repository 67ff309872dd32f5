//! EndTxn (v0-4, without KIP-890 part 2: the epoch stays): commits or aborts the producer's
//! transaction; answered once the outcome is durable and, normally, its markers written.

use std::sync::Arc;

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId};
use kafka_protocol::ResponseError;

use super::RequestContext;
use crate::context::Broker;
use crate::security::authorizer::operations;
use crate::transactions::coordinator;

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    request: EndTxnRequest,
) -> EndTxnResponse {
    let id = request.transactional_id.0.to_string();
    let outcome = if !broker.authorizer.allows(context, &operations::END_TXN, &id) {
        Err(ResponseError::TransactionalIdAuthorizationFailed)
    } else if !coordinator::is_coordinator(broker, &id) {
        Err(ResponseError::NotCoordinator)
    } else {
        coordinator::end_txn(
            broker,
            &id,
            request.producer_id.0,
            request.producer_epoch,
            request.committed,
        )
        .await
    };
    EndTxnResponse::default()
        .with_error_code(outcome.err().map_or(0, |e| e.code()))
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1)
}
