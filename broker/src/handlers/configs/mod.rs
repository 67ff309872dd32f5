//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics (every Kafka topic
//! config, see `storage::topics`) and for this broker (described, read-only: its settings are
//! flags). DESCRIBE_CONFIGS (describe) and ALTER_CONFIGS (alter) on the topic, or on the
//! cluster for a broker, are checked before anything else about each resource.

mod broker_entries;
mod entries;
mod incremental;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{
    alter_configs_response, incremental_alter_configs_response, AlterConfigsRequest,
    AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::ResponseError;
use storage::topics::{validate_overrides, ConfigError, TopicConfig};

use super::{str_bytes, RequestContext};
use crate::catalog::CatalogError;
use crate::context::Broker;
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;
use crate::topic_names;
pub(super) use entries::topic_entries;
use entries::Entry;
use incremental::{apply_ops, check_ops, Op};

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;

type Refusal = (ResponseError, String);

/// A config refused: INVALID_CONFIG with Kafka's message.
pub(super) fn config_refusal(error: ConfigError) -> Refusal {
    (ResponseError::InvalidConfig, error.to_string())
}

pub async fn describe(
    broker: &Arc<Broker>,
    context: &RequestContext,
    version: i16,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let mut results = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.to_string();
        let synonyms = request.include_synonyms;
        let access = Access::Describe.check(broker, context, resource.resource_type, &name);
        let entries = match resource.resource_type {
            _ if access.is_err() => access.map(|()| Vec::new()),
            RESOURCE_TOPIC => lookup_topic(broker, &name)
                .await
                .map(|t| topic_entries(&t.record.configs, broker.catalog.defaults(), synonyms)),
            RESOURCE_BROKER => check_broker(broker, &name)
                .map(|()| broker_entries::broker_entries(broker, synonyms)),
            other => Err(unsupported_resource(other)),
        };
        let result = DescribeConfigsResult::default()
            .with_resource_type(resource.resource_type)
            .with_resource_name(resource.resource_name);
        results.push(match entries {
            Ok(entries) => {
                // Null or empty means every config, as in Kafka.
                let wanted: Option<BTreeSet<String>> = resource
                    .configuration_keys
                    .filter(|keys| !keys.is_empty())
                    .map(|keys| keys.iter().map(|k| k.to_string()).collect());
                let configs = entries
                    .into_iter()
                    .filter(|e| wanted.as_ref().is_none_or(|w| w.contains(&e.name)))
                    .map(|e| encode_entry(e, version, request.include_documentation))
                    .collect();
                result.with_configs(configs)
            }
            Err((code, message)) => result
                .with_error_code(code.code())
                .with_error_message(Some(str_bytes(&message))),
        });
    }
    DescribeConfigsResponse::default().with_results(results)
}

fn encode_entry(
    entry: Entry,
    version: i16,
    include_documentation: bool,
) -> DescribeConfigsResourceResult {
    let synonyms = entry
        .synonyms
        .iter()
        .map(|s| {
            DescribeConfigsSynonym::default()
                .with_name(str_bytes(&s.name))
                .with_value(s.value.as_deref().map(str_bytes))
                .with_source(s.source as i8)
        })
        .collect();
    let result = DescribeConfigsResourceResult::default()
        .with_name(str_bytes(&entry.name))
        .with_value(entry.value.as_deref().map(str_bytes))
        .with_read_only(entry.read_only)
        .with_config_source(entry.source as i8)
        .with_config_type(entry.config_type.describe_code())
        .with_synonyms(synonyms);
    if version >= 3 && include_documentation {
        result.with_documentation(Some(str_bytes(&entry.doc)))
    } else {
        result
    }
}

async fn lookup_topic(
    broker: &Arc<Broker>,
    name: &str,
) -> Result<Arc<crate::catalog::Topic>, Refusal> {
    topic_names::validate_topic_name(name)
        .map_err(|m| (ResponseError::InvalidTopicException, m))?;
    match broker.catalog.refresh(name).await {
        Ok(Some(topic)) => Ok(topic),
        Ok(None) => Err(unknown_topic(name)),
        Err(e) => Err((ResponseError::RequestTimedOut, e.to_string())),
    }
}

fn unknown_topic(name: &str) -> Refusal {
    (
        ResponseError::UnknownTopicOrPartition,
        format!("The topic '{name}' does not exist."),
    )
}

fn check_broker(broker: &Broker, name: &str) -> Result<(), Refusal> {
    let me = broker.node.broker_id;
    if !name.is_empty() && name != me.to_string() {
        return Err((
            ResponseError::InvalidRequest,
            format!("Unexpected broker id {name}, this is broker {me}"),
        ));
    }
    Ok(())
}

/// What a configs request does to a resource, for its authorization.
#[derive(Clone, Copy)]
enum Access {
    Describe,
    Alter,
    IncrementalAlter,
}

impl Access {
    /// Kafka's refusal (`Topic authorization failed.`, `Cluster authorization failed.`) when
    /// the principal may not; other resource types are refused later, as unsupported.
    fn check(
        self,
        broker: &Broker,
        context: &RequestContext,
        resource_type: i8,
        name: &str,
    ) -> Result<(), Refusal> {
        use operations as ops;
        let (rule, resource, message) = match (self, resource_type) {
            (Access::Describe, RESOURCE_TOPIC) => {
                (&ops::DESCRIBE_CONFIGS_TOPIC, name, TOPIC_REFUSED)
            }
            (Access::Describe, RESOURCE_BROKER) => {
                (&ops::DESCRIBE_CONFIGS_BROKER, CLUSTER_NAME, CLUSTER_REFUSED)
            }
            (Access::Alter, RESOURCE_TOPIC) => (&ops::ALTER_CONFIGS_TOPIC, name, TOPIC_REFUSED),
            (Access::Alter, RESOURCE_BROKER) => {
                (&ops::ALTER_CONFIGS_BROKER, CLUSTER_NAME, CLUSTER_REFUSED)
            }
            (Access::IncrementalAlter, RESOURCE_TOPIC) => {
                (&ops::INCREMENTAL_ALTER_CONFIGS_TOPIC, name, TOPIC_REFUSED)
            }
            (Access::IncrementalAlter, RESOURCE_BROKER) => (
                &ops::INCREMENTAL_ALTER_CONFIGS_BROKER,
                CLUSTER_NAME,
                CLUSTER_REFUSED,
            ),
            _ => return Ok(()),
        };
        broker
            .authorizer
            .check(context, rule, resource)
            .map_err(|code| (code, message.to_string()))
    }
}

const TOPIC_REFUSED: &str = "Topic authorization failed.";
const CLUSTER_REFUSED: &str = "Cluster authorization failed.";

fn unsupported_resource(resource_type: i8) -> Refusal {
    (
        ResponseError::InvalidRequest,
        format!("Unsupported resource type {resource_type}"),
    )
}

/// The resource a refusal is logged with.
fn resource_label(resource_type: i8, name: &str) -> String {
    match resource_type {
        RESOURCE_TOPIC => name.to_string(),
        RESOURCE_BROKER => format!("broker {name}"),
        other => format!("resource type {other} {name}"),
    }
}

/// AlterConfigs replaces a topic's whole set of overrides.
pub async fn alter(
    broker: &Arc<Broker>,
    context: &RequestContext,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.to_string();
        let access = Access::Alter.check(broker, context, resource.resource_type, &name);
        let outcome = match resource.resource_type {
            _ if access.is_err() => access,
            RESOURCE_TOPIC => {
                let configs = validate_overrides(
                    resource
                        .configs
                        .iter()
                        .map(|c| (c.name.as_str(), c.value.as_deref())),
                    broker.catalog.defaults(),
                )
                .map_err(config_refusal);
                match configs {
                    Ok(configs) => {
                        apply(broker, &name, request.validate_only, move |current| {
                            *current = configs.clone();
                            Ok(())
                        })
                        .await
                    }
                    Err(refusal) => Err(refusal),
                }
            }
            RESOURCE_BROKER => Err(read_only_broker()),
            other => Err(unsupported_resource(other)),
        };
        if let Err((code, message)) = &outcome {
            let label = resource_label(resource.resource_type, &name);
            context.refused("alter_configs", &label, *code, message);
        }
        let response = alter_configs_response::AlterConfigsResourceResponse::default()
            .with_resource_type(resource.resource_type)
            .with_resource_name(resource.resource_name);
        responses.push(match outcome {
            Ok(()) => response,
            Err((code, message)) => response
                .with_error_code(code.code())
                .with_error_message(Some(str_bytes(&message))),
        });
    }
    AlterConfigsResponse::default().with_responses(responses)
}

/// IncrementalAlterConfigs: SET / DELETE per key, APPEND / SUBTRACT on list configs.
pub async fn incremental_alter(
    broker: &Arc<Broker>,
    context: &RequestContext,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.to_string();
        let ops: Vec<Op> = resource
            .configs
            .iter()
            .map(|c| {
                (
                    c.name.to_string(),
                    c.config_operation,
                    c.value.as_ref().map(|v| v.to_string()),
                )
            })
            .collect();
        let access = Access::IncrementalAlter.check(broker, context, resource.resource_type, &name);
        let outcome = match resource.resource_type {
            _ if access.is_err() => access,
            RESOURCE_TOPIC => match check_ops(&ops) {
                Ok(()) => {
                    let defaults = broker.catalog.defaults();
                    apply(broker, &name, request.validate_only, |current| {
                        apply_ops(current, &ops, defaults)
                    })
                    .await
                }
                Err(refusal) => Err(refusal),
            },
            RESOURCE_BROKER => Err(read_only_broker()),
            other => Err(unsupported_resource(other)),
        };
        if let Err((code, message)) = &outcome {
            let label = resource_label(resource.resource_type, &name);
            context.refused("incremental_alter_configs", &label, *code, message);
        }
        let response = incremental_alter_configs_response::AlterConfigsResourceResponse::default()
            .with_resource_type(resource.resource_type)
            .with_resource_name(resource.resource_name);
        responses.push(match outcome {
            Ok(()) => response,
            Err((code, message)) => response
                .with_error_code(code.code())
                .with_error_message(Some(str_bytes(&message))),
        });
    }
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

/// Runs `change` on a topic's overrides and checks that the topic's config still resolves;
/// stores the result unless `validate_only`.
async fn apply(
    broker: &Arc<Broker>,
    name: &str,
    validate_only: bool,
    change: impl Fn(&mut BTreeMap<String, String>) -> Result<(), Refusal>,
) -> Result<(), Refusal> {
    let defaults = broker.catalog.defaults();
    let checked = |configs: &mut BTreeMap<String, String>| -> Result<(), Refusal> {
        change(configs)?;
        TopicConfig::resolve(configs, defaults).map_err(config_refusal)?;
        Ok(())
    };
    if validate_only {
        let topic = lookup_topic(broker, name).await?;
        let mut configs = topic.record.configs.clone();
        return checked(&mut configs);
    }
    topic_names::validate_topic_name(name)
        .map_err(|m| (ResponseError::InvalidTopicException, m))?;
    match broker
        .catalog
        .update(name, |record| checked(&mut record.configs))
        .await
    {
        Ok(Ok(topic)) => {
            tracing::info!(topic = name, configs = ?topic.record.configs, "topic configs changed");
            Ok(())
        }
        Ok(Err(refusal)) => Err(refusal),
        Err(CatalogError::NotFound(_)) => Err(unknown_topic(name)),
        Err(error) => Err((ResponseError::RequestTimedOut, error.to_string())),
    }
}

fn read_only_broker() -> Refusal {
    (
        ResponseError::InvalidConfig,
        "Broker configs are static on this broker; set them with flags and restart".into(),
    )
}
