//! FindCoordinator: the group's coordinator is chosen by `cluster::placement` over the live
//! brokers, and named by its address for the listener the request came through (v4+ answers
//! batched keys). Committed offsets and group records live in the
//! MetaStore, so a coordinator change loses no committed offset.
//! A transactional id's coordinator is chosen by the same hash (`transaction_coordinator`).
//! DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or the transactional id
//! (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) is checked first.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::{broker_id, str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::authorizer::operations;

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

pub fn handle(
    broker: &Broker,
    context: &RequestContext,
    version: i16,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let key_type = if version >= 1 {
        request.key_type
    } else {
        KEY_TYPE_GROUP
    };
    if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .into_iter()
            .map(|key| coordinator(broker, context, key_type, key))
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let found = coordinator(broker, context, key_type, request.key);
    let response = FindCoordinatorResponse::default()
        .with_error_code(found.error_code)
        .with_node_id(found.node_id)
        .with_host(found.host)
        .with_port(found.port);
    if version >= 1 {
        response.with_error_message(found.error_message)
    } else {
        response
    }
}

fn coordinator(
    broker: &Broker,
    context: &RequestContext,
    key_type: i8,
    key: StrBytes,
) -> Coordinator {
    let refuse = |error: ResponseError, message: &str| {
        Coordinator::default()
            .with_key(key.clone())
            .with_node_id(broker_id(-1))
            .with_host(str_bytes(""))
            .with_port(-1)
            .with_error_code(error.code())
            .with_error_message(Some(str_bytes(message)))
    };
    let authorizer = &broker.authorizer;
    match key_type {
        KEY_TYPE_GROUP
            if !authorizer.allows(context, &operations::FIND_COORDINATOR_GROUP, &key) =>
        {
            refuse(
                ResponseError::GroupAuthorizationFailed,
                "Group authorization failed.",
            )
        }
        KEY_TYPE_TRANSACTION
            if !authorizer.allows(context, &operations::FIND_COORDINATOR_TRANSACTION, &key) =>
        {
            refuse(
                ResponseError::TransactionalIdAuthorizationFailed,
                "Transactional Id authorization failed.",
            )
        }
        KEY_TYPE_GROUP | KEY_TYPE_TRANSACTION => {
            let placement = broker.membership.placement();
            let chosen = if key_type == KEY_TYPE_GROUP {
                placement.group_coordinator(&key)
            } else {
                placement.transaction_coordinator(&key)
            };
            // As Kafka: a coordinator without this listener cannot be reached by this client.
            let Some((host, port)) = chosen.endpoint(&context.listener) else {
                return refuse(
                    ResponseError::CoordinatorNotAvailable,
                    "the coordinator has no endpoint for this listener",
                );
            };
            Coordinator::default()
                .with_key(key.clone())
                .with_node_id(broker_id(chosen.broker_id))
                .with_host(str_bytes(host))
                .with_port(port)
                .with_error_message(None)
        }
        _ => refuse(
            ResponseError::InvalidRequest,
            "unknown coordinator key type",
        ),
    }
}
