//! InitProducerId. Without a transactional id every call gets a fresh producer id at epoch 0,
//! as Kafka does (a KIP-360 bump request included: a new id is always a valid answer); an
//! idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679),
//! else CLUSTER_AUTHORIZATION_FAILED. With one, WRITE on it, then the transaction coordinator
//! (`transactions::coordinator`) bumps the epoch, fencing earlier instances.

use std::sync::Arc;

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use kafka_protocol::ResponseError;

use super::RequestContext;
use crate::context::Broker;
use crate::security::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::security::authorizer::operations;
use crate::transactions::coordinator;

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let response = InitProducerIdResponse::default()
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let authorizer = &broker.authorizer;
    if let Some(id) = request.transactional_id.as_deref() {
        let outcome =
            if !authorizer.allows(context, &operations::INIT_PRODUCER_ID_TRANSACTIONAL, id) {
                Err(ResponseError::TransactionalIdAuthorizationFailed)
            } else if id.is_empty() {
                Err(ResponseError::InvalidRequest)
            } else if !coordinator::is_coordinator(broker, id) {
                Err(ResponseError::NotCoordinator)
            } else {
                coordinator::init_producer_id(broker, id, request.transaction_timeout_ms).await
            };
        return match outcome {
            Ok((producer_id, epoch)) => response
                .with_producer_id(ProducerId(producer_id))
                .with_producer_epoch(epoch),
            Err(error) => response.with_error_code(error.code()),
        };
    }
    let idempotent =
        authorizer.allows_quietly(
            context,
            &operations::INIT_PRODUCER_ID_IDEMPOTENT,
            CLUSTER_NAME,
        ) || authorizer.allows_on_any(context, AclOperation::Write, ResourceType::Topic);
    if !idempotent {
        // Logged as Kafka would: the cluster check, now that no topic grant saved it.
        authorizer.allows(
            context,
            &operations::INIT_PRODUCER_ID_IDEMPOTENT,
            CLUSTER_NAME,
        );
        return response.with_error_code(ResponseError::ClusterAuthorizationFailed.code());
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
