//! Metadata: the live brokers at their addresses for the listener the request came through,
//! and every requested topic with each partition's leader chosen
//! by `cluster::placement` (preferring the client's zone). Unknown topics are created when both
//! the broker setting and the request allow it, and the principal may create them. Topics the
//! principal may not describe are left out of an all-topics answer and refused by name.

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
use crate::security::acl::{ResourceType, CLUSTER_NAME};
use crate::security::authorizer::{operations, Rule};

/// Kafka's "authorized operations not requested" marker.
pub(super) const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    version: i16,
    zone: Option<&str>,
    request: MetadataRequest,
) -> MetadataResponse {
    let node = &broker.node;
    let placement = broker.membership.placement();
    let include_ops = version >= 8 && request.include_topic_authorized_operations;
    let at = Leaders {
        placement: &placement,
        zone,
        broker,
        context,
        include_ops,
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
    // v0 has no null array: an empty list means all topics.
    let all_topics = match &request.topics {
        None => true,
        Some(list) => version == 0 && list.is_empty(),
    };
    let mut topics = Vec::new();
    if all_topics {
        let authorizer = &broker.authorizer;
        for topic in broker.catalog.list() {
            if authorizer.allows_quietly(context, &operations::METADATA, &topic.name) {
                topics.push(describe(&at, &topic));
            }
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
                        topics.push(by_name(&at, &name.0, auto_create).await);
                    }
                }
                None => {
                    if seen_ids.insert(requested.topic_id) {
                        topics.push(by_id(&at, requested.topic_id));
                    }
                }
            }
        }
    }
    let cluster_ops =
        if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
            cluster_operations(broker, context, &operations::METADATA_CLUSTER_OPERATIONS)
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

async fn by_name(at: &Leaders<'_>, name: &str, auto_create: bool) -> MetadataResponseTopic {
    let (broker, context) = (at.broker, at.context);
    let error = |code: ResponseError| {
        MetadataResponseTopic::default()
            .with_name(Some(topic_name(name)))
            .with_error_code(code.code())
            .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED)
    };
    // Before anything about the topic is told, even whether it exists.
    if !broker
        .authorizer
        .allows(context, &operations::METADATA, name)
    {
        return error(ResponseError::TopicAuthorizationFailed);
    }
    let may_create = || {
        let authorizer = &broker.authorizer;
        authorizer.allows_quietly(
            context,
            &operations::METADATA_AUTO_CREATE_CLUSTER,
            CLUSTER_NAME,
        ) || authorizer.allows(context, &operations::METADATA_AUTO_CREATE, name)
    };
    if crate::topic_names::validate_topic_name(name).is_err() {
        if auto_create && !may_create() {
            return error(ResponseError::TopicAuthorizationFailed);
        }
        return error(ResponseError::InvalidTopicException);
    }
    if let Some(topic) = broker.catalog.get(name) {
        return describe(at, &topic);
    }
    // Another broker may have created it since our last notification.
    match broker.catalog.refresh(name).await {
        Ok(Some(topic)) => return describe(at, &topic),
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(topic = name, error = %e, "cannot read topic from the metadata store");
            return error(ResponseError::LeaderNotAvailable);
        }
    }
    if !auto_create {
        return error(ResponseError::UnknownTopicOrPartition);
    }
    if !may_create() {
        return error(ResponseError::TopicAuthorizationFailed);
    }
    let partitions = broker.config.default_partitions;
    match create_topics::create_topic(broker, name, partitions, Default::default()).await {
        // As Kafka does: the request that triggers creation learns the topic is coming
        // (retriable), the next one describes it. Clients retry; admin clients polling for a
        // deleted topic while another client auto-creates it see "not there yet", as with Kafka.
        Ok(_) => error(ResponseError::LeaderNotAvailable),
        Err((ResponseError::TopicAlreadyExists, _)) => match broker.catalog.get(name) {
            Some(topic) => describe(at, &topic),
            None => error(ResponseError::LeaderNotAvailable),
        },
        Err((code, message)) => {
            tracing::warn!(topic = name, %message, "auto-create refused");
            error(code)
        }
    }
}

fn by_id(at: &Leaders<'_>, id: Uuid) -> MetadataResponseTopic {
    let refused = |code: ResponseError| {
        MetadataResponseTopic::default()
            .with_topic_id(id)
            .with_error_code(code.code())
            .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED)
    };
    match at.broker.catalog.get_by_id(id) {
        // Kafka does not hold topic ids secret, only names: the id comes back, the name not.
        Some(topic)
            if !at
                .broker
                .authorizer
                .allows(at.context, &operations::METADATA, &topic.name) =>
        {
            refused(ResponseError::TopicAuthorizationFailed)
        }
        Some(topic) => describe(at, &topic),
        None => refused(ResponseError::UnknownTopicId),
    }
}

/// Kafka's cluster `authorized_operations`: none without DESCRIBE on the cluster.
pub(super) fn cluster_operations(broker: &Broker, context: &RequestContext, rule: &Rule) -> i32 {
    if broker.authorizer.allows(context, rule, CLUSTER_NAME) {
        broker
            .authorizer
            .authorized_operations(context, ResourceType::Cluster, CLUSTER_NAME)
    } else {
        0
    }
}

/// The membership snapshot and client zone one Metadata answer is computed from, and who asks
/// (through which listener, at which version).
struct Leaders<'a> {
    placement: &'a Placement,
    zone: Option<&'a str>,
    broker: &'a Arc<Broker>,
    context: &'a RequestContext,
    include_ops: bool,
    version: i16,
}

fn partition(at: &Leaders<'_>, topic: &Topic, index: i32) -> MetadataResponsePartition {
    let leader = at.placement.partition_leader(&topic.name, index, at.zone);
    if leader.endpoint(&at.context.listener).is_none() {
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

fn describe(at: &Leaders<'_>, topic: &Topic) -> MetadataResponseTopic {
    let partitions = (0..topic.record.partitions)
        .map(|index| partition(at, topic, index))
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(topic_name(&topic.name)))
        .with_topic_id(topic.record.id)
        .with_partitions(partitions)
        .with_topic_authorized_operations(if at.include_ops {
            at.broker
                .authorizer
                .authorized_operations(at.context, ResourceType::Topic, &topic.name)
        } else {
            OPERATIONS_NOT_REQUESTED
        })
}
