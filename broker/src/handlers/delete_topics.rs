//! DeleteTopics by name (v0-5) or by name or topic id (v6). The catalog record goes first, so
//! the topic disappears for every broker at once; then the partitions' index is forgotten
//! (their WAL bytes are reclaimed by the compactor). Authorization as in Kafka's controller:
//! DELETE on the cluster allows every topic; else a topic named needs DESCRIBE before its
//! existence is told and DELETE to go; a topic given by id that may not be deleted is refused
//! with its name only if the principal may describe it.

use std::sync::Arc;

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse};
use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::{str_bytes, topic_name, RequestContext};
use crate::catalog::CatalogError;
use crate::context::Broker;
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;

/// `Err(whether the name may be shown)` when the principal may not delete the topic. A topic
/// named but not there is left to the caller (UNKNOWN_TOPIC_OR_PARTITION) once DESCRIBE
/// allows telling so.
async fn authorize(
    broker: &Broker,
    context: &RequestContext,
    name: &str,
    by_id: bool,
) -> Result<(), bool> {
    let authorizer = &broker.authorizer;
    if authorizer.allows_quietly(context, &operations::DELETE_TOPICS_CLUSTER, CLUSTER_NAME) {
        return Ok(());
    }
    let describable = authorizer.allows(context, &operations::DELETE_TOPICS_DESCRIBE, name);
    if !describable && !by_id {
        return Err(true);
    }
    if !by_id && !exists(broker, name).await {
        return Ok(());
    }
    if authorizer.allows(context, &operations::DELETE_TOPICS, name) {
        Ok(())
    } else {
        Err(describable)
    }
}

async fn exists(broker: &Broker, name: &str) -> bool {
    broker.catalog.get(name).is_some() || matches!(broker.catalog.refresh(name).await, Ok(Some(_)))
}

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    version: i16,
    request: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let targets: Vec<(Option<String>, Uuid)> = if version >= 6 {
        request
            .topics
            .into_iter()
            .map(|t| (t.name.map(|n| n.0.to_string()), t.topic_id))
            .collect()
    } else {
        request
            .topic_names
            .into_iter()
            .map(|n| (Some(n.0.to_string()), Uuid::nil()))
            .collect()
    };
    let mut responses = Vec::with_capacity(targets.len());
    for (name, id) in targets {
        responses.push(delete_one(broker, context, name, id).await);
    }
    DeleteTopicsResponse::default().with_responses(responses)
}

async fn delete_one(
    broker: &Arc<Broker>,
    context: &RequestContext,
    name: Option<String>,
    id: Uuid,
) -> DeletableTopicResult {
    let result = DeletableTopicResult::default()
        .with_name(name.as_deref().map(topic_name))
        .with_topic_id(id);
    let fail = |code: ResponseError, message: String| {
        result
            .clone()
            .with_error_code(code.code())
            .with_error_message(Some(str_bytes(&message)))
    };
    let name = match (name, id.is_nil()) {
        (Some(_), false) => {
            return fail(
                ResponseError::InvalidRequest,
                "Give a topic name or a topic id, not both".into(),
            )
        }
        (Some(name), true) => name,
        (None, false) => match broker.catalog.get_by_id(id) {
            Some(topic) => topic.name.clone(),
            None => {
                return fail(
                    ResponseError::UnknownTopicId,
                    format!("Topic id {id} not found"),
                )
            }
        },
        (None, true) => {
            return fail(
                ResponseError::InvalidRequest,
                "Topic name and id are both missing".into(),
            )
        }
    };
    if let Err(shown) = authorize(broker, context, &name, !id.is_nil()).await {
        let refused = ResponseError::TopicAuthorizationFailed;
        return result
            .with_name(shown.then(|| topic_name(&name)))
            .with_error_code(refused.code())
            .with_error_message(Some(str_bytes("Topic authorization failed.")));
    }
    match broker.catalog.delete(&name).await {
        Ok(topic) => {
            for partition in 0..topic.record.partitions {
                let stream = topic.stream_id(partition);
                if let Err(error) = broker.storage.delete_stream(&stream).await {
                    tracing::warn!(topic = %name, stream, %error, "cannot forget the index of a deleted partition");
                }
                if let Err(error) = broker.producers.forget(&stream).await {
                    tracing::warn!(topic = %name, stream, %error, "cannot forget the producer state of a deleted partition");
                }
                if let Err(error) = broker.transactions.forget_stream(&stream).await {
                    tracing::warn!(topic = %name, stream, %error, "cannot forget the transactions of a deleted partition");
                }
            }
            result
                .with_name(Some(topic_name(&name)))
                .with_topic_id(topic.record.id)
        }
        Err(CatalogError::NotFound(_)) => {
            if id.is_nil() {
                fail(
                    ResponseError::UnknownTopicOrPartition,
                    format!("Topic {name} not found"),
                )
            } else {
                fail(
                    ResponseError::UnknownTopicId,
                    format!("Topic id {id} not found"),
                )
            }
        }
        Err(error) => {
            tracing::warn!(topic = %name, %error, "topic deletion failed");
            fail(ResponseError::RequestTimedOut, error.to_string())
        }
    }
}
