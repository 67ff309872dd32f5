//! ListConfigResources v0-1 (KIP-1142; v0 was ListClientMetricsResources, what
//! `kafka-client-metrics --list` sends), answered as Kafka 4.1 answers it. v0 lists
//! client-metrics resources; v1 lists the resources of the types asked for (all of them when
//! none is): TOPIC every topic, BROKER every live broker. CLIENT_METRICS and GROUP resources
//! are listed by Kafka when they have configs; none are stored here (client telemetry is not
//! served, group configs are not stored), so they list none, as Kafka lists none without
//! them. BROKER_LOGGER: Kafka lists every broker; broker loggers are not served here
//! (DescribeConfigs refuses the type), so none are listed rather than resources that cannot
//! be described. A type outside those five is UNSUPPORTED_VERSION, as Kafka answers.
//! DESCRIBE_CONFIGS on the cluster is required.

use kafka_protocol::messages::list_config_resources_response::ConfigResource;
use kafka_protocol::messages::{ListConfigResourcesRequest, ListConfigResourcesResponse};
use kafka_protocol::ResponseError;

use super::{str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const BROKER_LOGGER: i8 = 8;
const CLIENT_METRICS: i8 = 16;
const GROUP: i8 = 32;

/// The types v1 serves, in the order Kafka lists them.
const TYPES: [i8; 5] = [GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC];

pub fn handle(
    broker: &Broker,
    context: &RequestContext,
    version: i16,
    request: &ListConfigResourcesRequest,
) -> ListConfigResourcesResponse {
    let refuse =
        |error: ResponseError| ListConfigResourcesResponse::default().with_error_code(error.code());
    if !broker
        .authorizer
        .allows(context, &operations::LIST_CONFIG_RESOURCES, CLUSTER_NAME)
    {
        return refuse(ResponseError::ClusterAuthorizationFailed);
    }
    let asked: Vec<i8> = match (version, request.resource_types.is_empty()) {
        (0, _) => vec![CLIENT_METRICS],
        (_, true) => TYPES.to_vec(),
        (_, false) => request.resource_types.clone(),
    };
    if asked.iter().any(|t| !TYPES.contains(t)) {
        return refuse(ResponseError::UnsupportedVersion);
    }
    let resources = TYPES
        .iter()
        .filter(|t| asked.contains(t))
        .flat_map(|&t| names(broker, t).into_iter().map(move |name| (t, name)))
        .map(|(t, name)| {
            ConfigResource::default()
                .with_resource_name(str_bytes(&name))
                .with_resource_type(t)
        })
        .collect();
    ListConfigResourcesResponse::default().with_config_resources(resources)
}

/// The resources of one type.
fn names(broker: &Broker, resource_type: i8) -> Vec<String> {
    match resource_type {
        TOPIC => broker
            .catalog
            .list()
            .iter()
            .map(|t| t.name.clone())
            .collect(),
        BROKER => broker
            .membership
            .placement()
            .members()
            .iter()
            .map(|m| m.broker_id.to_string())
            .collect(),
        // None stored (group, client-metrics) or served (broker loggers) here.
        _ => Vec::new(),
    }
}
