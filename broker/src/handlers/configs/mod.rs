//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics (the four configs in
//! `topic_config`) and for this broker (described, read-only).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::{
    alter_configs_response, incremental_alter_configs_response, AlterConfigsRequest,
    AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::ResponseError;

use super::create_topics::{SOURCE_DEFAULT, SOURCE_TOPIC};
use super::str_bytes;
use crate::catalog::CatalogError;
use crate::context::Broker;
use crate::topic_config::{self, ConfigType, InvalidConfig, CLEANUP_POLICY, TOPIC_CONFIGS};

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
const SOURCE_STATIC_BROKER: i8 = 4;

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

type Refusal = (ResponseError, String);

/// One described config entry, before encoding.
struct Entry {
    name: String,
    value: String,
    source: i8,
    read_only: bool,
    config_type: ConfigType,
    doc: &'static str,
}

pub async fn describe(
    broker: &Arc<Broker>,
    version: i16,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let mut results = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.to_string();
        let entries = match resource.resource_type {
            RESOURCE_TOPIC => topic_entries(broker, &name).await,
            RESOURCE_BROKER => broker_entries(broker, &name),
            other => Err((
                ResponseError::InvalidRequest,
                format!("Unsupported resource type {other}"),
            )),
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
    let result = DescribeConfigsResourceResult::default()
        .with_name(str_bytes(&entry.name))
        .with_value(Some(str_bytes(&entry.value)))
        .with_read_only(entry.read_only)
        .with_config_source(entry.source)
        .with_config_type(entry.config_type as i8);
    if version >= 3 && include_documentation {
        result.with_documentation(Some(str_bytes(entry.doc)))
    } else {
        result
    }
}

async fn topic_entries(broker: &Arc<Broker>, name: &str) -> Result<Vec<Entry>, Refusal> {
    let topic = lookup_topic(broker, name).await?;
    Ok(TOPIC_CONFIGS
        .iter()
        .map(|def| {
            let (value, is_default) = topic_config::effective(&topic.record.configs, def);
            Entry {
                name: def.name.to_string(),
                value: value.to_string(),
                source: if is_default {
                    SOURCE_DEFAULT
                } else {
                    SOURCE_TOPIC
                },
                read_only: false,
                config_type: def.config_type,
                doc: def.doc,
            }
        })
        .collect())
}

async fn lookup_topic(
    broker: &Arc<Broker>,
    name: &str,
) -> Result<Arc<crate::catalog::Topic>, Refusal> {
    topic_config::validate_topic_name(name)
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

/// The broker settings clients may care about; all are static (set at startup).
fn broker_entries(broker: &Broker, name: &str) -> Result<Vec<Entry>, Refusal> {
    let me = broker.node.broker_id;
    if !name.is_empty() && name != me.to_string() {
        return Err((
            ResponseError::InvalidRequest,
            format!("Unexpected broker id {name}, this is broker {me}"),
        ));
    }
    let config = &broker.config;
    let stat = |name: &str, value: String, config_type: ConfigType, doc: &'static str| Entry {
        name: name.to_string(),
        value,
        source: SOURCE_STATIC_BROKER,
        read_only: true,
        config_type,
        doc,
    };
    let mut entries = vec![
        stat(
            "broker.id",
            me.to_string(),
            ConfigType::Int,
            "This broker's id (--broker-id).",
        ),
        stat(
            "num.partitions",
            config.default_partitions.to_string(),
            ConfigType::Int,
            "Partitions of auto-created topics (--default-partitions).",
        ),
        stat(
            "auto.create.topics.enable",
            config.auto_create_topics.to_string(),
            ConfigType::Boolean,
            "Metadata requests may create topics (--auto-create-topics).",
        ),
        stat(
            "socket.request.max.bytes",
            config.max_frame_bytes.to_string(),
            ConfigType::Int,
            "Largest request accepted (--max-frame-bytes).",
        ),
        stat(
            "default.replication.factor",
            "1".into(),
            ConfigType::Int,
            "Replication is the object store's job: always 1.",
        ),
    ];
    if let Some(rack) = &broker.node.rack {
        entries.push(stat(
            "broker.rack",
            rack.clone(),
            ConfigType::String,
            "Rack (zone) of this broker (--rack).",
        ));
    }
    for def in TOPIC_CONFIGS {
        entries.push(Entry {
            name: def.broker_synonym.to_string(),
            value: def.default.to_string(),
            source: SOURCE_DEFAULT,
            read_only: true,
            config_type: def.config_type,
            doc: def.doc,
        });
    }
    Ok(entries)
}

/// AlterConfigs replaces a topic's whole set of overrides.
pub async fn alter(broker: &Arc<Broker>, request: AlterConfigsRequest) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.to_string();
        let outcome = match resource.resource_type {
            RESOURCE_TOPIC => {
                let configs = topic_config::validate_all(
                    resource
                        .configs
                        .iter()
                        .map(|c| (c.name.as_str(), c.value.as_deref())),
                )
                .map_err(invalid);
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
            other => Err((
                ResponseError::InvalidRequest,
                format!("Unsupported resource type {other}"),
            )),
        };
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
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.to_string();
        let ops: Vec<(String, i8, Option<String>)> = resource
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
        let outcome = match resource.resource_type {
            RESOURCE_TOPIC => match check_ops(&ops) {
                Ok(()) => {
                    apply(broker, &name, request.validate_only, |current| {
                        apply_ops(current, &ops)
                    })
                    .await
                }
                Err(refusal) => Err(refusal),
            },
            RESOURCE_BROKER => Err(read_only_broker()),
            other => Err((
                ResponseError::InvalidRequest,
                format!("Unsupported resource type {other}"),
            )),
        };
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

fn check_ops(ops: &[(String, i8, Option<String>)]) -> Result<(), Refusal> {
    let mut seen = BTreeSet::new();
    for (name, _, _) in ops {
        if !seen.insert(name) {
            return Err((
                ResponseError::InvalidRequest,
                format!("Duplicate config key in request: {name}"),
            ));
        }
    }
    Ok(())
}

fn apply_ops(
    current: &mut BTreeMap<String, String>,
    ops: &[(String, i8, Option<String>)],
) -> Result<(), Refusal> {
    for (name, op, value) in ops {
        let def = topic_config::definition(name)
            .ok_or_else(|| invalid(InvalidConfig(format!("Unknown topic config name: {name}"))))?;
        let is_list = def.config_type == ConfigType::List;
        match *op {
            OP_SET => {
                let value = value
                    .as_deref()
                    .ok_or_else(|| invalid(InvalidConfig(format!("Null value for {name}"))))?;
                topic_config::validate(name, value).map_err(invalid)?;
                current.insert(name.clone(), value.trim().to_string());
            }
            OP_DELETE => {
                current.remove(name);
            }
            OP_APPEND | OP_SUBTRACT if is_list => {
                let value = value.as_deref().unwrap_or_default();
                let (base, _) = topic_config::effective(current, def);
                let mut items: Vec<String> = base
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    if *op == OP_APPEND {
                        if !items.iter().any(|i| i == item) {
                            items.push(item.to_string());
                        }
                    } else {
                        items.retain(|i| i != item);
                    }
                }
                let joined = items.join(",");
                if name == CLEANUP_POLICY && joined.is_empty() {
                    return Err(invalid(InvalidConfig(
                        "cleanup.policy must not be empty".into(),
                    )));
                }
                topic_config::validate(name, &joined).map_err(invalid)?;
                current.insert(name.clone(), joined);
            }
            OP_APPEND | OP_SUBTRACT => {
                return Err(invalid(InvalidConfig(format!(
                    "Config value append/subtract is not allowed for config key {name}"
                ))))
            }
            other => {
                return Err((
                    ResponseError::InvalidRequest,
                    format!("Unknown config operation {other}"),
                ))
            }
        }
    }
    Ok(())
}

/// Runs `change` on a topic's overrides; stores the result unless `validate_only`.
async fn apply(
    broker: &Arc<Broker>,
    name: &str,
    validate_only: bool,
    change: impl Fn(&mut BTreeMap<String, String>) -> Result<(), Refusal>,
) -> Result<(), Refusal> {
    if validate_only {
        let topic = lookup_topic(broker, name).await?;
        let mut configs = topic.record.configs.clone();
        return change(&mut configs);
    }
    topic_config::validate_topic_name(name)
        .map_err(|m| (ResponseError::InvalidTopicException, m))?;
    match broker
        .catalog
        .update(name, |record| change(&mut record.configs))
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

fn invalid(error: InvalidConfig) -> Refusal {
    (ResponseError::InvalidConfig, error.0)
}

fn read_only_broker() -> Refusal {
    (
        ResponseError::InvalidConfig,
        "Broker configs are static on this broker; set them with flags and restart".into(),
    )
}
