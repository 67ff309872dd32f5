//! Produce's authorization, before anything else about the request is looked at (as Kafka):
//! a transactional id needs WRITE on it, or every partition is refused; each topic needs WRITE,
//! or its partitions are refused with TOPIC_AUTHORIZATION_FAILED whether it exists or not.

use std::collections::HashMap;

use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::ResponseError;

use super::RequestContext;
use crate::security::authorizer::{operations, Authorizer};

/// Partitions taken out of a request because the principal may not write them.
#[derive(Debug, Default)]
pub struct Denied {
    topics: Vec<(TopicName, Vec<i32>, ResponseError)>,
}

/// Removes from `request` the partitions the principal may not write.
pub fn split(
    authorizer: &Authorizer,
    context: &RequestContext,
    mut request: ProduceRequest,
) -> (ProduceRequest, Denied) {
    let mut denied = Denied::default();
    let transactional_refused = request
        .transactional_id
        .as_deref()
        .is_some_and(|id| !authorizer.allows(context, &operations::PRODUCE_TRANSACTIONAL, id));
    // One decision per distinct topic, however many times the request names it.
    let mut allowed: HashMap<String, bool> = HashMap::new();
    request.topic_data.retain_mut(|topic| {
        let error = if transactional_refused {
            Some(ResponseError::TransactionalIdAuthorizationFailed)
        } else {
            let name = topic.name.0.to_string();
            let ok = *allowed
                .entry(name)
                .or_insert_with_key(|name| authorizer.allows(context, &operations::PRODUCE, name));
            (!ok).then_some(ResponseError::TopicAuthorizationFailed)
        };
        match error {
            Some(error) => {
                let partitions = topic.partition_data.iter().map(|p| p.index).collect();
                denied.topics.push((topic.name.clone(), partitions, error));
                false
            }
            None => true,
        }
    });
    (request, denied)
}

/// Adds the refusal of every denied partition to the response.
pub fn merge(mut response: ProduceResponse, denied: Denied) -> ProduceResponse {
    for (name, partitions, error) in denied.topics {
        let answers = partitions.into_iter().map(|index| {
            PartitionProduceResponse::default()
                .with_index(index)
                .with_error_code(error.code())
                .with_base_offset(-1)
                .with_log_append_time_ms(-1)
                .with_log_start_offset(-1)
        });
        match response.responses.iter_mut().find(|t| t.name == name) {
            Some(topic) => topic.partition_responses.extend(answers),
            None => response.responses.push(
                TopicProduceResponse::default()
                    .with_name(name)
                    .with_partition_responses(answers.collect()),
            ),
        }
    }
    response
}
