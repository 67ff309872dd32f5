//! ElectLeaders v0-2 (`kafka-leader-election`): a partition's leader here is always the broker
//! placement names, which is the preferred one by definition, so every existing partition
//! answers ELECTION_NOT_NEEDED, as Kafka answers for a partition already led by its preferred
//! replica; for a request of all partitions (null) those are left out, as Kafka's controller
//! leaves them out. ALTER on the cluster is required.

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};
use kafka_protocol::ResponseError;

use super::{str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;

const NOT_NEEDED: &str = "Leader election not needed for topic partition.";

pub fn handle(
    broker: &Broker,
    context: &RequestContext,
    version: i16,
    request: ElectLeadersRequest,
) -> ElectLeadersResponse {
    let allowed = broker
        .authorizer
        .allows(context, &operations::ELECT_LEADERS, CLUSTER_NAME);
    let Some(asked) = request.topic_partitions else {
        // Every partition: none needs an election, so none is listed.
        return ElectLeadersResponse::default().with_error_code(top_error(version, allowed));
    };
    let results = asked
        .into_iter()
        .map(|topic| {
            let found = broker.catalog.get(&topic.topic.0);
            let partitions = topic
                .partitions
                .iter()
                .map(|&partition| {
                    let exists = found
                        .as_ref()
                        .is_some_and(|t| (0..t.record.partitions).contains(&partition));
                    let (error, message) = match (allowed, exists) {
                        (false, _) => (ResponseError::ClusterAuthorizationFailed, None),
                        (true, false) => (ResponseError::UnknownTopicOrPartition, None),
                        (true, true) => (ResponseError::ElectionNotNeeded, Some(NOT_NEEDED)),
                    };
                    PartitionResult::default()
                        .with_partition_id(partition)
                        .with_error_code(error.code())
                        .with_error_message(message.map(str_bytes))
                })
                .collect();
            ReplicaElectionResult::default()
                .with_topic(TopicName(topic.topic.0))
                .with_partition_result(partitions)
        })
        .collect();
    ElectLeadersResponse::default()
        .with_error_code(top_error(version, allowed))
        .with_replica_election_results(results)
}

/// The top-level error exists from v1; v0 has only the partitions' errors.
fn top_error(version: i16, allowed: bool) -> i16 {
    if allowed || version < 1 {
        0
    } else {
        ResponseError::ClusterAuthorizationFailed.code()
    }
}
