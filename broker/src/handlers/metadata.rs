//! Metadata: the live brokers at their addresses for the listener the request came through,
//! and every requested topic with each partition's leader chosen by `cluster::placement`
//! (preferring the client's zone). Unknown topics are created when both the broker setting
//! and the request allow it.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{MetadataRequest, MetadataResponse};
use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::{broker_id, create_topics, str_bytes, topic_name, RequestContext};
use crate::catalog::Topic;
use crate::cluster::Placement;
use crate::context::Broker;

/// Kafka's "authorized operations not requested" marker.
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;
/// READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: everything is
/// allowed without an authorizer.
const TOPIC_OPERATIONS: i32 =
    (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);
/// CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
pub(super) const CLUSTER_OPERATIONS: i32 =
    (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    version: i16,
    zone: Option<&str>,
    request: MetadataRequest,
) -> MetadataResponse {
    let node = &broker.node;
    let placement = broker.membership.placement();
    let at = Leaders {
        placement: &placement,
        zone,
        listener: &context.listener,
        version,
    };
    // Brokers without this listener are left out, as Kafka leaves them out.
    let brokers = placement
        .members()
        .iter()
        .filter_map(|m| {
            let (host, port) = m.endpoint(&context.listener)?;
            Some(
                MetadataResponseBroker::default()
                    .with_node_id(broker_id(m.broker_id))
                    .with_host(str_bytes(host))
                    .with_port(port)
                    .with_rack(m.rack.as_deref().map(str_bytes)),
            )
        })
        .collect();
    let include_ops = version >= 8 && request.include_topic_authorized_operations;
    // v0 has no null array: an empty list means all topics.
    let all_topics = match &request.topics {
        None => true,
        Some(list) => version == 0 && list.is_empty(),
    };
    let mut topics = Vec::new();
    if all_topics {
        for topic in broker.catalog.list() {
            topics.push(describe(&at, &topic, include_ops));
        }
    } else {
        let auto_create =
            broker.config.auto_create_topics && (version < 4 || request.allow_auto_topic_creation);
        let mut seen_names = BTreeSet::new();
        let mut seen_ids = BTreeSet::new();
        for requested in request.topics.unwrap_or_default() {
            // A topic asked for by id has a null name; tolerate an empty one too.
            let name = requested
                .name
                .filter(|n| !n.0.is_empty() || requested.topic_id.is_nil());
            match name {
                Some(name) => {
                    if seen_names.insert(name.0.to_string()) {
                        topics.push(by_name(broker, &at, &name.0, auto_create, include_ops).await);
                    }
                }
                None => {
                    if seen_ids.insert(requested.topic_id) {
                        topics.push(by_id(broker, &at, requested.topic_id, include_ops));
                    }
                }
            }
        }
    }
    let cluster_ops =
        if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
            CLUSTER_OPERATIONS
        } else {
            OPERATIONS_NOT_REQUESTED
        };
    MetadataResponse::default()
        .with_brokers(brokers)
        .with_cluster_id(Some(str_bytes(&broker.cluster_id)))
        // Any broker can do what a controller does (topics live in the MetaStore); name the
        // lowest live id so every broker names the same one.
        .with_controller_id(broker_id(
            placement
                .members()
                .first()
                .map_or(node.broker_id, |m| m.broker_id),
        ))
        .with_topics(topics)
        .with_cluster_authorized_operations(cluster_ops)
}

async fn by_name(
    broker: &Arc<Broker>,
    at: &Leaders<'_>,
    name: &str,
    auto_create: bool,
    include_ops: bool,
) -> MetadataResponseTopic {
    let error = |code: ResponseError| {
        MetadataResponseTopic::default()
            .with_name(Some(topic_name(name)))
            .with_error_code(code.code())
            .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED)
    };
    if crate::topic_names::validate_topic_name(name).is_err() {
        return error(ResponseError::InvalidTopicException);
    }
    if let Some(topic) = broker.catalog.get(name) {
        return describe(at, &topic, include_ops);
    }
    // Another broker may have created it since our last notification.
    match broker.catalog.refresh(name).await {
        Ok(Some(topic)) => return describe(at, &topic, include_ops),
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(topic = name, error = %e, "cannot read topic from the metadata store");
            return error(ResponseError::LeaderNotAvailable);
        }
    }
    if !auto_create {
        return error(ResponseError::UnknownTopicOrPartition);
    }
    let partitions = broker.config.default_partitions;
    match create_topics::create_topic(broker, name, partitions, Default::default()).await {
        // As Kafka does: the request that triggers creation learns the topic is coming
        // (retriable), the next one describes it. Clients retry; admin clients polling for a
        // deleted topic while another client auto-creates it see "not there yet", as with Kafka.
        Ok(_) => error(ResponseError::LeaderNotAvailable),
        Err((ResponseError::TopicAlreadyExists, _)) => match broker.catalog.get(name) {
            Some(topic) => describe(at, &topic, include_ops),
            None => error(ResponseError::LeaderNotAvailable),
        },
        Err((code, message)) => {
            tracing::warn!(topic = name, %message, "auto-create refused");
            error(code)
        }
    }
}

fn partition(at: &Leaders<'_>, topic: &Topic, index: i32) -> MetadataResponsePartition {
    let leader = at.placement.partition_leader(&topic.name, index, at.zone);
    if leader.endpoint(at.listener).is_none() {
        // Kafka's answer when the leader has no endpoint for the client's listener.
        let error = if at.version >= 6 {
            ResponseError::ListenerNotFound
        } else {
            ResponseError::LeaderNotAvailable
        };
        return MetadataResponsePartition::default()
            .with_partition_index(index)
            .with_error_code(error.code())
            .with_leader_id(broker_id(-1));
    }
    let leader = broker_id(leader.broker_id);
    // Data lives in shared storage, so the leader is the only "replica" worth naming; the
    // epoch stays 0 because leadership carries no state to fence.
    MetadataResponsePartition::default()
        .with_partition_index(index)
        .with_leader_id(leader)
        .with_leader_epoch(0)
        .with_replica_nodes(vec![leader])
        .with_isr_nodes(vec![leader])
}

fn by_id(
    broker: &Arc<Broker>,
    at: &Leaders<'_>,
    id: Uuid,
    include_ops: bool,
) -> MetadataResponseTopic {
    match broker.catalog.get_by_id(id) {
        Some(topic) => describe(at, &topic, include_ops),
        None => MetadataResponseTopic::default()
            .with_topic_id(id)
            .with_error_code(ResponseError::UnknownTopicId.code())
            .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED),
    }
}

/// The membership snapshot, client zone and listener one Metadata answer is computed from.
struct Leaders<'a> {
    placement: &'a Placement,
    zone: Option<&'a str>,
    listener: &'a str,
    version: i16,
}

fn describe(at: &Leaders<'_>, topic: &Topic, include_ops: bool) -> MetadataResponseTopic {
    let partitions = (0..topic.record.partitions)
        .map(|index| partition(at, topic, index))
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(topic_name(&topic.name)))
        .with_topic_id(topic.record.id)
        .with_partitions(partitions)
        .with_topic_authorized_operations(if include_ops {
            TOPIC_OPERATIONS
        } else {
            OPERATIONS_NOT_REQUESTED
        })
}
