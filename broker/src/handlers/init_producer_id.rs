//! InitProducerId for idempotent producers. Every call gets a fresh producer id at epoch 0,
//! as Kafka does without a transactional id (a KIP-360 bump request included: a new id is
//! always a valid answer). Transactional ids are refused: this broker has no transactions.

use std::sync::Arc;

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use kafka_protocol::ResponseError;

use crate::context::Broker;

pub async fn handle(
    broker: &Arc<Broker>,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let response = InitProducerIdResponse::default()
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    if request.transactional_id.is_some() {
        tracing::debug!("refused init producer id with a transactional id");
        return response.with_error_code(ResponseError::TransactionalIdAuthorizationFailed.code());
    }
    match broker.producers.ids.next().await {
        Ok(id) => response
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(0),
        Err(e) => {
            tracing::warn!(error = %e, "producer id allocation failed");
            response.with_error_code(ResponseError::CoordinatorNotAvailable.code())
        }
    }
}
