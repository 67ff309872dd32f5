//! Produce, Fetch, ListOffsets, Metadata, InitProducerId and DescribeCluster.

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::records::{Record, TimestampType};
use kafka_protocol::ResponseError;

use crate::common::{encode_batch, name};
use crate::expect_kind;
use crate::harness::*;

fn batch() -> Bytes {
    encode_batch(&[Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        sequence: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        timestamp: 1_700_000_000_000,
        key: None,
        value: Some(Bytes::from_static(b"v")),
        headers: Default::default(),
    }])
}

/// The error of the one partition produced to.
async fn produce(a: &Authorized, user: &str, topic: &str) -> i16 {
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch()))])]);
    let response = expect_kind!(a.call(user, ApiKey::Produce, 9, request).await, Produce);
    response.responses[0].partition_responses[0].error_code
}

async fn fetch(a: &Authorized, user: &str, topic: &str) -> (i16, usize) {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let response = expect_kind!(a.call(user, ApiKey::Fetch, 12, request).await, Fetch);
    let partition = &response.responses[0].partitions[0];
    let bytes = partition.records.as_ref().map_or(0, |r| r.len());
    (partition.error_code, bytes)
}

async fn list_offsets(a: &Authorized, user: &str, topic: &str) -> i16 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(-1)])]);
    let response = expect_kind!(
        a.call(user, ApiKey::ListOffsets, 7, request).await,
        ListOffsets
    );
    response.topics[0].partitions[0].error_code
}

fn metadata_request(topics: Option<&[&str]>, auto_create: bool) -> MetadataRequest {
    MetadataRequest::default()
        .with_topics(topics.map(|names| {
            names
                .iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(name(t))))
                .collect()
        }))
        .with_allow_auto_topic_creation(auto_create)
        .with_include_topic_authorized_operations(true)
}

/// `(name, error, authorized operations)` of each topic in the answer.
async fn metadata(a: &Authorized, user: &str, request: MetadataRequest) -> Vec<(String, i16, i32)> {
    let response = expect_kind!(a.call(user, ApiKey::Metadata, 12, request).await, Metadata);
    response
        .topics
        .iter()
        .map(|t| {
            let topic = t.name.as_ref().map_or(String::new(), |n| n.0.to_string());
            (topic, t.error_code, t.topic_authorized_operations)
        })
        .collect()
}

const TAF: ResponseError = ResponseError::TopicAuthorizationFailed;

#[tokio::test]
async fn produce_needs_write_on_the_topic_even_to_tell_it_does_not_exist() {
    let a = Authorized::start().await;
    a.topic("orders", 1).await;
    assert_eq!(produce(&a, ALICE, "orders").await, code(TAF));
    assert_eq!(produce(&a, ALICE, "nowhere").await, code(TAF));
    a.allow(ALICE, TOPIC, "orders", LITERAL, op::WRITE).await;
    assert_eq!(produce(&a, ALICE, "orders").await, 0);
    a.allow(ALICE, TOPIC, "now", PREFIXED, op::WRITE).await;
    assert_eq!(
        produce(&a, ALICE, "nowhere").await,
        code(ResponseError::UnknownTopicOrPartition)
    );
    // The super user needs no ACL.
    assert_eq!(produce(&a, ADMIN, "orders").await, 0);
}

#[tokio::test]
async fn a_literal_deny_carves_a_topic_out_of_a_prefixed_allow() {
    let a = Authorized::start().await;
    a.topic("orders-eu", 1).await;
    a.topic("orders-secret", 1).await;
    a.allow(ALICE, TOPIC, "orders-", PREFIXED, op::WRITE).await;
    a.deny(ALICE, TOPIC, "orders-secret", LITERAL, op::WRITE)
        .await;
    assert_eq!(produce(&a, ALICE, "orders-eu").await, 0);
    assert_eq!(produce(&a, ALICE, "orders-secret").await, code(TAF));
}

#[tokio::test]
async fn fetch_needs_read_and_list_offsets_describe() {
    let a = Authorized::start().await;
    a.topic("logs", 1).await;
    assert_eq!(produce(&a, ADMIN, "logs").await, 0);
    assert_eq!(fetch(&a, ALICE, "logs").await, (code(TAF), 0));
    assert_eq!(list_offsets(&a, ALICE, "logs").await, code(TAF));
    a.allow(ALICE, TOPIC, "logs", LITERAL, op::DESCRIBE).await;
    assert_eq!(list_offsets(&a, ALICE, "logs").await, 0);
    assert_eq!(
        fetch(&a, ALICE, "logs").await.0,
        code(TAF),
        "DESCRIBE is not READ"
    );
    a.allow(ALICE, TOPIC, "logs", LITERAL, op::READ).await;
    let (error, bytes) = fetch(&a, ALICE, "logs").await;
    assert_eq!(error, 0);
    assert!(bytes > 0);
}

#[tokio::test]
async fn metadata_hides_topics_the_principal_may_not_describe() {
    let a = Authorized::start().await;
    a.topic("visible", 1).await;
    a.topic("hidden", 1).await;
    assert_eq!(
        metadata(&a, ALICE, metadata_request(None, false)).await,
        vec![]
    );
    a.allow(ALICE, TOPIC, "visible", LITERAL, op::READ).await;
    // READ implies DESCRIBE; the operations are READ and DESCRIBE.
    let read_describe = (1 << 3) | (1 << 8);
    assert_eq!(
        metadata(&a, ALICE, metadata_request(None, false)).await,
        vec![("visible".to_string(), 0, read_describe)]
    );
    let named = metadata(
        &a,
        ALICE,
        metadata_request(Some(&["visible", "hidden", "absent"]), false),
    )
    .await;
    assert_eq!(
        named,
        vec![
            ("visible".to_string(), 0, read_describe),
            ("hidden".to_string(), code(TAF), i32::MIN),
            ("absent".to_string(), code(TAF), i32::MIN),
        ]
    );
    // Everything for the super user, as without an authorizer.
    let all = metadata(&a, ADMIN, metadata_request(Some(&["hidden"]), false)).await;
    let topic_ops =
        (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);
    assert_eq!(all, vec![("hidden".to_string(), 0, topic_ops)]);
}

#[tokio::test]
async fn metadata_auto_creates_only_with_create() {
    let a = Authorized::start().await;
    a.allow(ALICE, TOPIC, "auto-", PREFIXED, op::DESCRIBE).await;
    let ask = metadata_request(Some(&["auto-1"]), true);
    assert_eq!(metadata(&a, ALICE, ask.clone()).await[0].1, code(TAF));
    a.allow(ALICE, TOPIC, "auto-", PREFIXED, op::CREATE).await;
    assert_eq!(
        metadata(&a, ALICE, ask.clone()).await[0].1,
        code(ResponseError::LeaderNotAvailable),
        "created"
    );
    assert_eq!(metadata(&a, ALICE, ask).await[0].1, 0);
    // CREATE on the cluster allows every name.
    a.allow(ALICE, TOPIC, "other-", PREFIXED, op::DESCRIBE)
        .await;
    a.allow(ALICE, CLUSTER, "kafka-cluster", LITERAL, op::CREATE)
        .await;
    let ask = metadata_request(Some(&["other-1"]), true);
    assert_eq!(
        metadata(&a, ALICE, ask).await[0].1,
        code(ResponseError::LeaderNotAvailable)
    );
}

async fn init_producer_id(a: &Authorized, user: &str) -> i16 {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let response = expect_kind!(
        a.call(user, ApiKey::InitProducerId, 5, request).await,
        InitProducerId
    );
    response.error_code
}

#[tokio::test]
async fn an_idempotent_producer_needs_idempotent_write_or_write_on_some_topic() {
    let a = Authorized::start().await;
    let refused = code(ResponseError::ClusterAuthorizationFailed);
    assert_eq!(init_producer_id(&a, ALICE).await, refused);
    // KIP-679: WRITE on any one topic is enough.
    a.allow(ALICE, TOPIC, "any-", PREFIXED, op::WRITE).await;
    assert_eq!(init_producer_id(&a, ALICE).await, 0);
    // ... unless a DENY on a shorter prefix dominates it.
    a.deny(ALICE, TOPIC, "an", PREFIXED, op::WRITE).await;
    assert_eq!(init_producer_id(&a, ALICE).await, refused);
    a.allow(
        ALICE,
        CLUSTER,
        "kafka-cluster",
        LITERAL,
        op::IDEMPOTENT_WRITE,
    )
    .await;
    assert_eq!(init_producer_id(&a, ALICE).await, 0);
}

#[tokio::test]
async fn describe_cluster_lists_brokers_to_anyone_and_operations_to_describers() {
    let a = Authorized::start().await;
    let ask = DescribeClusterRequest::default().with_include_cluster_authorized_operations(true);
    let response = expect_kind!(
        a.call(ALICE, ApiKey::DescribeCluster, 1, ask.clone()).await,
        DescribeCluster
    );
    assert_eq!(response.error_code, 0);
    assert_eq!(response.brokers.len(), 1);
    assert_eq!(response.cluster_authorized_operations, 0);
    a.allow(ALICE, CLUSTER, "kafka-cluster", LITERAL, op::ALTER)
        .await;
    let response = expect_kind!(
        a.call(ALICE, ApiKey::DescribeCluster, 1, ask).await,
        DescribeCluster
    );
    // ALTER implies DESCRIBE.
    assert_eq!(response.cluster_authorized_operations, (1 << 7) | (1 << 8));
}
