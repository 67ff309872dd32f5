//! DescribeCluster: the live brokers, at their addresses for the listener the request came
//! through; the lowest live id is the "controller" clients are told about.

use std::sync::Arc;

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::ResponseError;

use super::metadata::{cluster_operations, OPERATIONS_NOT_REQUESTED};
use super::{broker_id, str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::authorizer::operations;

const ENDPOINT_BROKERS: i8 = 1;

/// Anyone may describe the cluster, as in Kafka; DESCRIBE on it only shows in the authorized
/// operations.
pub fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let placement = broker.membership.placement();
    let controller = placement
        .members()
        .first()
        .map_or(broker.node.broker_id, |m| m.broker_id);
    let response = DescribeClusterResponse::default()
        .with_endpoint_type(request.endpoint_type)
        .with_cluster_id(str_bytes(&broker.cluster_id))
        .with_controller_id(broker_id(controller));
    // v0 requests carry no endpoint type and decode as the default, 1 (brokers).
    if request.endpoint_type != ENDPOINT_BROKERS {
        return response
            .with_error_code(ResponseError::UnsupportedEndpointType.code())
            .with_error_message(Some(str_bytes(
                "Only the brokers endpoint type is supported",
            )))
            .with_controller_id(broker_id(-1));
    }
    let ops = if request.include_cluster_authorized_operations {
        cluster_operations(broker, context, &operations::DESCRIBE_CLUSTER_OPERATIONS)
    } else {
        OPERATIONS_NOT_REQUESTED
    };
    response
        .with_brokers(
            placement
                .members()
                .iter()
                .filter_map(|m| {
                    let (host, port) = m.endpoint(&context.listener)?;
                    Some(
                        DescribeClusterBroker::default()
                            .with_broker_id(broker_id(m.broker_id))
                            .with_host(str_bytes(host))
                            .with_port(port)
                            .with_rack(m.rack.as_deref().map(str_bytes)),
                    )
                })
                .collect(),
        )
        .with_cluster_authorized_operations(ops)
}
