//! CreateTopics in Kafka's order of checks: name rules, existence (an existing topic is
//! TOPIC_ALREADY_EXISTS whatever else the request says), configs, then partition count,
//! replication factor (-1 or 1), replica assignments naming only this broker, and name
//! collisions. `validate_only` runs every check and creates nothing. Authorization comes before
//! all of them but the duplicate check, as in Kafka's controller: CREATE on the cluster, else on
//! each topic; the configs of a created topic are shown only with DESCRIBE_CONFIGS on it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::ResponseError;

use super::configs::{config_refusal, topic_entries};
use super::{str_bytes, topic_name, RequestContext};
use crate::catalog::{CatalogError, Topic};
use crate::context::Broker;
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;
use crate::topic_names;

/// Partitions per topic at most; every partition costs index keys and per-stream state.
pub const MAX_PARTITIONS: i32 = 10_000;
/// Kafka's config source codes.
type Refusal = (ResponseError, String);

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    version: i16,
    request: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for topic in &request.topics {
        *counts.entry(topic.name.0.to_string()).or_default() += 1;
    }
    let validate_only = version >= 1 && request.validate_only;
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.name.0.to_string();
        let outcome = if counts.get(&name).copied().unwrap_or(0) > 1 {
            Err((
                ResponseError::InvalidRequest,
                format!("Create topics request contains topic {name} more than once"),
            ))
        } else if !may_create(broker, context, &name) {
            Err((
                ResponseError::TopicAuthorizationFailed,
                "Authorization failed.".to_string(),
            ))
        } else {
            create_one(broker, &name, topic, validate_only).await
        };
        let result = CreatableTopicResult::default().with_name(topic_name(&name));
        results.push(match outcome {
            Ok(created) => {
                let result = result
                    .with_topic_id(created.id)
                    .with_num_partitions(created.partitions)
                    .with_replication_factor(1);
                let configs_allowed = broker.authorizer.allows_quietly(
                    context,
                    &operations::CREATE_TOPICS_CONFIGS,
                    &name,
                );
                match (version >= 5, configs_allowed) {
                    (true, true) => {
                        result.with_configs(Some(describe_configs(broker, &created.configs)))
                    }
                    (true, false) => result.with_topic_config_error_code(
                        ResponseError::TopicAuthorizationFailed.code(),
                    ),
                    (false, _) => result,
                }
            }
            Err((code, message)) => {
                context.refused("create_topics", &name, code, &message);
                result
                    .with_error_code(code.code())
                    .with_error_message(Some(str_bytes(&message)))
                    .with_num_partitions(-1)
                    .with_replication_factor(-1)
            }
        });
    }
    CreateTopicsResponse::default().with_topics(results)
}

/// CREATE on the cluster allows every topic; else CREATE on the topic.
fn may_create(broker: &Broker, context: &RequestContext, name: &str) -> bool {
    let authorizer = &broker.authorizer;
    authorizer.allows_quietly(context, &operations::CREATE_TOPICS_CLUSTER, CLUSTER_NAME)
        || authorizer.allows(context, &operations::CREATE_TOPICS, name)
}

/// What a successful (or validated) creation reports.
struct Created {
    id: uuid::Uuid,
    partitions: i32,
    configs: BTreeMap<String, String>,
}

async fn create_one(
    broker: &Arc<Broker>,
    name: &str,
    topic: CreatableTopic,
    validate_only: bool,
) -> Result<Created, Refusal> {
    check_new_name(broker, name)?;
    let configs = storage::topics::validate_overrides(
        topic
            .configs
            .iter()
            .map(|c| (c.name.as_str(), c.value.as_deref())),
        broker.catalog.defaults(),
    )
    .map_err(config_refusal)?;
    let partitions = partition_count(broker, &topic)?;
    if validate_only {
        check_collision(broker, name)?;
        return Ok(Created {
            id: uuid::Uuid::nil(),
            partitions,
            configs,
        });
    }
    let created = create_topic(broker, name, partitions, configs).await?;
    Ok(Created {
        id: created.record.id,
        partitions: created.record.partitions,
        configs: created.record.configs.clone(),
    })
}

fn partition_count(broker: &Broker, topic: &CreatableTopic) -> Result<i32, Refusal> {
    let me = broker.node.broker_id;
    if !topic.assignments.is_empty() {
        if topic.num_partitions != -1 || topic.replication_factor != -1 {
            return Err((
                ResponseError::InvalidRequest,
                "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.".into(),
            ));
        }
        let mut indexes: Vec<i32> = topic
            .assignments
            .iter()
            .map(|a| a.partition_index)
            .collect();
        indexes.sort_unstable();
        let contiguous = indexes
            .iter()
            .enumerate()
            .all(|(i, p)| usize::try_from(*p).is_ok_and(|p| p == i));
        let only_me = topic
            .assignments
            .iter()
            .all(|a| a.broker_ids.len() == 1 && a.broker_ids[0].0 == me);
        if !contiguous || !only_me {
            return Err((
                ResponseError::InvalidReplicaAssignment,
                format!(
                    "Replica assignments must cover partitions 0..n, each on broker {me} alone"
                ),
            ));
        }
        let count = i32::try_from(indexes.len()).unwrap_or(i32::MAX);
        return check_partitions(count);
    }
    match topic.replication_factor {
        -1 | 1 => {}
        rf if rf <= 0 => {
            return Err((ResponseError::InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.".into()))
        }
        rf => {
            return Err((
                ResponseError::InvalidReplicationFactor,
                format!("Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only 1 broker(s) are registered."),
            ))
        }
    }
    match topic.num_partitions {
        -1 => Ok(broker.config.default_partitions),
        n if n <= 0 => Err((
            ResponseError::InvalidPartitions,
            "Number of partitions must be larger than 0, or -1 to use the default value.".into(),
        )),
        n => check_partitions(n),
    }
}

fn check_partitions(count: i32) -> Result<i32, Refusal> {
    if count > MAX_PARTITIONS {
        return Err((
            ResponseError::InvalidPartitions,
            format!("Number of partitions {count} exceeds the limit of {MAX_PARTITIONS}"),
        ));
    }
    Ok(count)
}

/// A legal name no topic has yet: checked before anything else, as Kafka does, so that a
/// client creating its topics at every start sees TOPIC_ALREADY_EXISTS whatever it asks for.
fn check_new_name(broker: &Broker, name: &str) -> Result<(), Refusal> {
    topic_names::validate_topic_name(name)
        .map_err(|m| (ResponseError::InvalidTopicException, m))?;
    if broker.catalog.get(name).is_some() {
        return Err((
            ResponseError::TopicAlreadyExists,
            format!("Topic '{name}' already exists."),
        ));
    }
    Ok(())
}

/// Kafka refuses names that differ from an existing one only by '.' vs '_'.
fn check_collision(broker: &Broker, name: &str) -> Result<(), Refusal> {
    if let Some(other) = broker
        .catalog
        .list()
        .iter()
        .find(|t| topic_names::collides(&t.name, name))
    {
        return Err((
            ResponseError::InvalidTopicException,
            format!(
                "Topic '{name}' collides with existing topic: {}",
                other.name
            ),
        ));
    }
    Ok(())
}

/// Creates a topic after the checks every creation path shares (CreateTopics, auto-creation).
pub async fn create_topic(
    broker: &Arc<Broker>,
    name: &str,
    partitions: i32,
    configs: BTreeMap<String, String>,
) -> Result<Arc<Topic>, Refusal> {
    check_new_name(broker, name)?;
    check_collision(broker, name)?;
    broker
        .catalog
        .create(name, partitions, configs)
        .await
        .map_err(|e| match e {
            CatalogError::AlreadyExists(_) => (
                ResponseError::TopicAlreadyExists,
                format!("Topic '{name}' already exists."),
            ),
            other => {
                tracing::warn!(topic = name, error = %other, "topic creation failed");
                (ResponseError::RequestTimedOut, other.to_string())
            }
        })
}

/// The created topic's configs, as DescribeConfigs reports them (CreateTopics v5+).
fn describe_configs(
    broker: &Broker,
    overrides: &BTreeMap<String, String>,
) -> Vec<CreatableTopicConfigs> {
    topic_entries(overrides, broker.catalog.defaults(), false)
        .into_iter()
        .map(|entry| {
            CreatableTopicConfigs::default()
                .with_name(str_bytes(&entry.name))
                .with_value(entry.value.as_deref().map(str_bytes))
                .with_read_only(entry.read_only)
                .with_config_source(entry.source as i8)
        })
        .collect()
}
