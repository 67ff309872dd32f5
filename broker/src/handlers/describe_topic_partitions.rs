//! DescribeTopicPartitions v0 (KIP-966; Kafka 4 admin clients use it for `describeTopics`, so
//! `kafka-topics --describe`), answered as Kafka 4.1's `DescribeTopicPartitionsRequestHandler`:
//! the named topics, or every topic when none is named, sorted by name and starting at the
//! cursor; at most `response_partition_limit` partitions (capped at Kafka's default
//! `max.request.partition.size.limit`, 2000, and at least 1) per response, with `next_cursor`
//! naming where the next page starts. Leaders are Metadata's, for the client's listener and
//! zone. Topics the principal may not DESCRIBE are left out of an all-topics answer and listed
//! TOPIC_AUTHORIZATION_FAILED by name (without their id) when named.

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition as Partition,
    DescribeTopicPartitionsResponseTopic as TopicAnswer,
};
use kafka_protocol::messages::{DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse};
use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::{broker_id, topic_name, RequestContext};
use crate::catalog::Topic;
use crate::cluster::Placement;
use crate::context::Broker;
use crate::security::acl::ResourceType;
use crate::security::authorizer::operations;

/// Kafka's default `max.request.partition.size.limit`.
const MAX_PARTITIONS_PER_RESPONSE: i32 = 2000;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    zone: Option<&str>,
    request: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let all_topics = request.topics.is_empty();
    let mut names: Vec<String> = if all_topics {
        broker
            .catalog
            .list()
            .iter()
            .map(|t| t.name.clone())
            .collect()
    } else {
        request
            .topics
            .iter()
            .map(|t| t.name.0.to_string())
            .collect()
    };
    names.sort();
    names.dedup();
    let start = request
        .cursor
        .as_ref()
        .map(|c| (c.topic_name.0.to_string(), c.partition_index));
    if let Some((cursor_topic, index)) = &start {
        // Kafka: the cursor's topic must be one of those asked for, its partition valid.
        if !names.contains(cursor_topic) || *index < 0 {
            return invalid(&request);
        }
    }
    let mut refused = Vec::new();
    let mut described = Vec::new();
    for name in names {
        if start.as_ref().is_some_and(|(topic, _)| name < *topic) {
            continue;
        }
        let allowed = if all_topics {
            broker
                .authorizer
                .allows_quietly(context, &operations::DESCRIBE_TOPIC_PARTITIONS, &name)
        } else {
            broker
                .authorizer
                .allows(context, &operations::DESCRIBE_TOPIC_PARTITIONS, &name)
        };
        match (allowed, all_topics) {
            (true, _) => described.push(name),
            (false, false) => refused.push(name),
            (false, true) => {}
        }
    }
    let page = Page {
        broker,
        context,
        zone,
        placement: broker.membership.placement(),
        all_topics,
    };
    let first_index = |name: &str| match &start {
        Some((topic, index)) if topic == name => *index,
        _ => 0,
    };
    let limit = request
        .response_partition_limit
        .clamp(1, MAX_PARTITIONS_PER_RESPONSE);
    let mut response = page.answer(described, first_index, limit).await;
    response.topics.extend(refused.into_iter().map(|name| {
        TopicAnswer::default()
            .with_error_code(ResponseError::TopicAuthorizationFailed.code())
            .with_name(Some(topic_name(&name)))
            .with_topic_id(Uuid::nil())
    }));
    response
}

/// Kafka's error response: each topic named, with the error and no partitions.
fn invalid(request: &DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            TopicAnswer::default()
                .with_error_code(ResponseError::InvalidRequest.code())
                .with_name(Some(t.name.clone()))
                .with_topic_id(Uuid::nil())
        })
        .collect();
    DescribeTopicPartitionsResponse::default().with_topics(topics)
}

/// What one response is computed from.
struct Page<'a> {
    broker: &'a Broker,
    context: &'a RequestContext,
    zone: Option<&'a str>,
    placement: std::sync::Arc<Placement>,
    /// An all-topics answer leaves out topics gone since they were listed, as Kafka does.
    all_topics: bool,
}

impl Page<'_> {
    /// Kafka's `describeTopicResponse`: topics in order until `limit` partitions are listed;
    /// the cursor then names the first partition left out.
    async fn answer(
        &self,
        names: Vec<String>,
        first_index: impl Fn(&str) -> i32,
        limit: i32,
    ) -> DescribeTopicPartitionsResponse {
        let mut response = DescribeTopicPartitionsResponse::default();
        let mut remaining = limit;
        for name in names {
            if remaining == 0 {
                response.next_cursor = Some(cursor(&name, 0));
                break;
            }
            let Some(topic) = self.find(&name).await else {
                if !self.all_topics {
                    let operations = self.operations(&name);
                    response
                        .topics
                        .push(missing(&name).with_topic_authorized_operations(operations));
                }
                continue;
            };
            let start = first_index(&name);
            let end = topic.record.partitions.min(start.saturating_add(remaining));
            let partitions: Vec<Partition> =
                (start..end).map(|i| self.partition(&topic, i)).collect();
            remaining -= i32::try_from(partitions.len()).unwrap_or(remaining);
            response.topics.push(self.topic(&topic, partitions));
            if end < topic.record.partitions {
                response.next_cursor = Some(cursor(&name, end));
                break;
            }
        }
        response
    }

    /// The topic from this broker's catalog, or the MetaStore (another broker may have
    /// created it since the last notification).
    async fn find(&self, name: &str) -> Option<std::sync::Arc<Topic>> {
        if let Some(topic) = self.broker.catalog.get(name) {
            return Some(topic);
        }
        match self.broker.catalog.refresh(name).await {
            Ok(topic) => topic,
            Err(error) => {
                tracing::warn!(topic = name, %error, "cannot read topic from the metadata store");
                None
            }
        }
    }

    /// Kafka sets them on every topic it answers but the refused ones, unknown ones included.
    fn operations(&self, name: &str) -> i32 {
        self.broker
            .authorizer
            .authorized_operations(self.context, ResourceType::Topic, name)
    }

    fn topic(&self, topic: &Topic, partitions: Vec<Partition>) -> TopicAnswer {
        TopicAnswer::default()
            .with_name(Some(topic_name(&topic.name)))
            .with_topic_id(topic.record.id)
            .with_partitions(partitions)
            .with_topic_authorized_operations(self.operations(&topic.name))
    }

    /// As Metadata answers it; no replica sets, so empty eligible-leader lists (KIP-966's
    /// ELR, which Kafka 4.1 lists, empty, for a healthy partition).
    fn partition(&self, topic: &Topic, index: i32) -> Partition {
        let leader = self
            .placement
            .partition_leader(&topic.name, index, self.zone);
        let answer = Partition::default()
            .with_partition_index(index)
            .with_leader_epoch(0)
            .with_eligible_leader_replicas(Some(vec![]))
            .with_last_known_elr(Some(vec![]));
        if leader.endpoint(&self.context.listener).is_none() {
            return answer
                .with_error_code(ResponseError::ListenerNotFound.code())
                .with_leader_id(broker_id(-1));
        }
        let leader = broker_id(leader.broker_id);
        answer
            .with_leader_id(leader)
            .with_replica_nodes(vec![leader])
            .with_isr_nodes(vec![leader])
    }
}

/// An unknown topic named in the request: Kafka tells a bad name from a missing one.
fn missing(name: &str) -> TopicAnswer {
    let error = match crate::topic_names::validate_topic_name(name) {
        Ok(()) => ResponseError::UnknownTopicOrPartition,
        Err(_) => ResponseError::InvalidTopicException,
    };
    TopicAnswer::default()
        .with_error_code(error.code())
        .with_name(Some(topic_name(name)))
        .with_topic_id(Uuid::nil())
}

fn cursor(topic: &str, partition: i32) -> Cursor {
    Cursor::default()
        .with_topic_name(topic_name(topic))
        .with_partition_index(partition)
}
