//! DeleteTopics by name (v0-5) or by name or topic id (v6). The catalog record goes first, so
//! the topic disappears for every broker at once; then the partitions' index is forgotten
//! (their WAL bytes are reclaimed by the compactor).

use std::sync::Arc;

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse};
use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::{str_bytes, topic_name};
use crate::catalog::CatalogError;
use crate::context::Broker;

pub async fn handle(
    broker: &Arc<Broker>,
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
        responses.push(delete_one(broker, name, id).await);
    }
    DeleteTopicsResponse::default().with_responses(responses)
}

async fn delete_one(broker: &Arc<Broker>, name: Option<String>, id: Uuid) -> DeletableTopicResult {
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
