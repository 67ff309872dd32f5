//! ListPartitionReassignments v0 and AlterPartitionReassignments v0-1
//! (`kafka-reassign-partitions`). Partitions are not replicated here: each has the one replica
//! Metadata names (its leader for this client), and nothing is ever being reassigned. So the
//! list is always empty; asking for the current replica set is a no-op that succeeds, as in
//! Kafka; cancelling answers NO_REASSIGNMENT_IN_PROGRESS, as Kafka does when none is ongoing;
//! any other target is refused INVALID_REPLICA_ASSIGNMENT with the reason. ALTER on the
//! cluster to alter, DESCRIBE to list, as in Kafka.

use kafka_protocol::messages::alter_partition_reassignments_request::ReassignablePartition;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};
use kafka_protocol::ResponseError;

use super::{str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;

const NOT_REPLICATED: &str =
    "Partitions of a diskless topic have no replicas to move: the only replica is the leader";

pub fn list(
    broker: &Broker,
    context: &RequestContext,
    _request: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let response = ListPartitionReassignmentsResponse::default().with_topics(Vec::new());
    if broker.authorizer.allows(
        context,
        &operations::LIST_PARTITION_REASSIGNMENTS,
        CLUSTER_NAME,
    ) {
        response
    } else {
        response.with_error_code(ResponseError::ClusterAuthorizationFailed.code())
    }
}

pub fn alter(
    broker: &Broker,
    context: &RequestContext,
    zone: Option<&str>,
    request: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let allowed = broker.authorizer.allows(
        context,
        &operations::ALTER_PARTITION_REASSIGNMENTS,
        CLUSTER_NAME,
    );
    let placement = broker.membership.placement();
    let responses = request
        .topics
        .into_iter()
        .map(|topic| {
            let found = broker.catalog.get(&topic.name.0);
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let exists = found
                        .as_ref()
                        .is_some_and(|t| (0..t.record.partitions).contains(&p.partition_index));
                    let leader = exists.then(|| {
                        placement
                            .partition_leader(&topic.name.0, p.partition_index, zone)
                            .broker_id
                    });
                    let (error, message) = decide(allowed, leader, p);
                    ReassignablePartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(error)
                        .with_error_message(message.map(str_bytes))
                })
                .collect();
            ReassignableTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    let response = AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(request.allow_replication_factor_change)
        .with_responses(responses);
    if allowed {
        response
    } else {
        response.with_error_code(ResponseError::ClusterAuthorizationFailed.code())
    }
}

fn decide(
    allowed: bool,
    leader: Option<i32>,
    partition: &ReassignablePartition,
) -> (i16, Option<&'static str>) {
    if !allowed {
        return (ResponseError::ClusterAuthorizationFailed.code(), None);
    }
    let Some(leader) = leader else {
        return (ResponseError::UnknownTopicOrPartition.code(), None);
    };
    match partition.replicas.as_deref() {
        None => (ResponseError::NoReassignmentInProgress.code(), None),
        Some([only]) if only.0 == leader => (0, None),
        Some(_) => (
            ResponseError::InvalidReplicaAssignment.code(),
            Some(NOT_REPLICATED),
        ),
    }
}
