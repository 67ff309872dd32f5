//! DescribeTopicPartitions: DESCRIBE on each topic, as Metadata asks it.

use kafka_protocol::messages::describe_topic_partitions_request::TopicRequest;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use uuid::Uuid;

use crate::common::name;
use crate::expect_kind;
use crate::harness::*;

fn request(topics: &[&str]) -> DescribeTopicPartitionsRequest {
    DescribeTopicPartitionsRequest::default()
        .with_topics(
            topics
                .iter()
                .map(|t| TopicRequest::default().with_name(name(t)))
                .collect(),
        )
        .with_response_partition_limit(100)
}

#[tokio::test]
async fn describe_topic_partitions_needs_describe_on_each_topic() {
    let a = Authorized::start().await;
    a.topic("seen", 2).await;
    a.topic("hidden", 1).await;
    a.allow(ALICE, TOPIC, "seen", LITERAL, op::DESCRIBE).await;
    let named = expect_kind!(
        a.call(
            ALICE,
            ApiKey::DescribeTopicPartitions,
            0,
            request(&["seen", "hidden"])
        )
        .await,
        DescribeTopicPartitions
    );
    let answers: Vec<(String, i16, usize)> = named
        .topics
        .iter()
        .map(|t| {
            let topic = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            (topic, t.error_code, t.partitions.len())
        })
        .collect();
    let refused = code(ResponseError::TopicAuthorizationFailed);
    assert_eq!(
        answers,
        [("seen".into(), 0, 2), ("hidden".into(), refused, 0)]
    );
    // A refused topic's id is not told.
    assert_eq!(named.topics[1].topic_id, Uuid::nil());
    let all = expect_kind!(
        a.call(ALICE, ApiKey::DescribeTopicPartitions, 0, request(&[]))
            .await,
        DescribeTopicPartitions
    );
    let listed: Vec<String> = all
        .topics
        .iter()
        .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
        .collect();
    assert_eq!(listed, ["seen"]);
}
