//! AddOffsetsToTxn: WRITE on the transactional id, READ on the group; the group joins the
//! transaction, whose TxnOffsetCommit offsets then commit or abort with it.

use std::sync::Arc;

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};
use kafka_protocol::ResponseError;

use super::RequestContext;
use crate::context::Broker;
use crate::security::authorizer::operations;
use crate::transactions::coordinator;

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    request: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    let id = request.transactional_id.0.to_string();
    let group = request.group_id.0.to_string();
    let authorizer = &broker.authorizer;
    let outcome = if !authorizer.allows(context, &operations::ADD_OFFSETS_TO_TXN_ID, &id) {
        Err(ResponseError::TransactionalIdAuthorizationFailed)
    } else if !authorizer.allows(context, &operations::ADD_OFFSETS_TO_TXN, &group) {
        Err(ResponseError::GroupAuthorizationFailed)
    } else if !coordinator::is_coordinator(broker, &id) {
        Err(ResponseError::NotCoordinator)
    } else {
        coordinator::add_offsets(
            broker,
            &id,
            request.producer_id.0,
            request.producer_epoch,
            &group,
        )
        .await
    };
    AddOffsetsToTxnResponse::default().with_error_code(outcome.err().map_or(0, |e| e.code()))
}
