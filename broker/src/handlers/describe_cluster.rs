//! DescribeCluster: this broker, which is also the "controller" clients are told about.

use std::sync::Arc;

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::ResponseError;

use super::metadata::CLUSTER_OPERATIONS;
use super::{broker_id, str_bytes};
use crate::context::Broker;

const ENDPOINT_BROKERS: i8 = 1;

pub fn handle(broker: &Arc<Broker>, request: DescribeClusterRequest) -> DescribeClusterResponse {
    let node = &broker.node;
    let response = DescribeClusterResponse::default()
        .with_endpoint_type(request.endpoint_type)
        .with_cluster_id(str_bytes(&broker.cluster_id))
        .with_controller_id(broker_id(node.broker_id));
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
        CLUSTER_OPERATIONS
    } else {
        i32::MIN
    };
    response
        .with_brokers(vec![DescribeClusterBroker::default()
            .with_broker_id(broker_id(node.broker_id))
            .with_host(str_bytes(&node.endpoint.host))
            .with_port(node.endpoint.port)
            .with_rack(node.rack.as_deref().map(str_bytes))])
        .with_cluster_authorized_operations(ops)
}
