//! CreatePartitions: only increases, conditionally on the catalog version read. ALTER on each
//! topic is checked after duplicates, before anything else (TOPIC_AUTHORIZATION_FAILED).

use std::collections::HashMap;
use std::sync::Arc;

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::ResponseError;

use super::create_topics::MAX_PARTITIONS;
use super::{str_bytes, topic_name, RequestContext};
use crate::catalog::CatalogError;
use crate::context::Broker;
use crate::security::authorizer::operations;

type Refusal = (ResponseError, String);

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for topic in &request.topics {
        *counts.entry(topic.name.0.to_string()).or_default() += 1;
    }
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let name = topic.name.0.to_string();
        let outcome = if counts.get(&name).copied().unwrap_or(0) > 1 {
            Err((
                ResponseError::InvalidRequest,
                format!("Duplicate topic in request: {name}"),
            ))
        } else if !broker
            .authorizer
            .allows(context, &operations::CREATE_PARTITIONS, &name)
        {
            Err((ResponseError::TopicAuthorizationFailed, String::new()))
        } else {
            grow(broker, &name, topic, request.validate_only).await
        };
        let result = CreatePartitionsTopicResult::default().with_name(topic_name(&name));
        results.push(match outcome {
            Ok(()) => result,
            // Kafka answers a refused topic without a message.
            Err((code, message)) if message.is_empty() => {
                result.with_error_code(code.code()).with_error_message(None)
            }
            Err((code, message)) => {
                context.refused("create_partitions", &name, code, &message);
                result
                    .with_error_code(code.code())
                    .with_error_message(Some(str_bytes(&message)))
            }
        });
    }
    CreatePartitionsResponse::default().with_results(results)
}

async fn grow(
    broker: &Arc<Broker>,
    name: &str,
    topic: &CreatePartitionsTopic,
    validate_only: bool,
) -> Result<(), Refusal> {
    let me = broker.node.broker_id;
    let check = |current: i32| -> Result<(), Refusal> {
        let requested = topic.count;
        if requested < current {
            return Err((
                ResponseError::InvalidPartitions,
                format!("Topic currently has {current} partitions, which is higher than the requested {requested}."),
            ));
        }
        if requested == current {
            return Err((
                ResponseError::InvalidPartitions,
                format!("Topic already has {current} partitions."),
            ));
        }
        if requested > MAX_PARTITIONS {
            return Err((
                ResponseError::InvalidPartitions,
                format!("Number of partitions {requested} exceeds the limit of {MAX_PARTITIONS}"),
            ));
        }
        // Null or empty: the broker places the new partitions (always on itself).
        if let Some(assignments) = topic.assignments.as_ref().filter(|a| !a.is_empty()) {
            // Positive (checked above); were it not, no list of assignments would match it.
            let added = usize::try_from(requested - current).unwrap_or(usize::MAX);
            let only_me = assignments
                .iter()
                .all(|a| a.broker_ids.len() == 1 && a.broker_ids[0].0 == me);
            if assignments.len() != added || !only_me {
                return Err((
                    ResponseError::InvalidReplicaAssignment,
                    format!("Expected {added} assignments, each naming broker {me} alone"),
                ));
            }
        }
        Ok(())
    };
    let unknown = || {
        (
            ResponseError::UnknownTopicOrPartition,
            format!("The topic '{name}' does not exist."),
        )
    };
    if validate_only {
        let current = match broker.catalog.refresh(name).await {
            Ok(Some(t)) => t.record.partitions,
            Ok(None) => return Err(unknown()),
            Err(e) => return Err((ResponseError::RequestTimedOut, e.to_string())),
        };
        return check(current);
    }
    let updated = broker
        .catalog
        .update(name, |record| {
            check(record.partitions)?;
            record.partitions = topic.count;
            Ok::<(), Refusal>(())
        })
        .await;
    match updated {
        Ok(Ok(topic)) => {
            tracing::info!(
                topic = name,
                partitions = topic.record.partitions,
                "partitions added"
            );
            Ok(())
        }
        Ok(Err(refusal)) => Err(refusal),
        Err(CatalogError::NotFound(_)) => Err(unknown()),
        Err(error) => Err((ResponseError::RequestTimedOut, error.to_string())),
    }
}
