//! CreateTopics, DeleteTopics, CreatePartitions, the config APIs and DeleteRecords.

use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request as incremental;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::common::{name, s};
use crate::expect_kind;
use crate::harness::*;

const TAF: ResponseError = ResponseError::TopicAuthorizationFailed;
const CAF: ResponseError = ResponseError::ClusterAuthorizationFailed;
const TOPIC_RESOURCE: i8 = 2;
const BROKER_RESOURCE: i8 = 4;

async fn create_topic(a: &Authorized, user: &str, topic: &str) -> CreatableTopicResult {
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(1)
            .with_replication_factor(-1)]);
    let mut response = expect_kind!(
        a.call(user, ApiKey::CreateTopics, 7, request).await,
        CreateTopics
    );
    response.topics.remove(0)
}

use kafka_protocol::messages::create_topics_response::CreatableTopicResult;

#[tokio::test]
async fn create_topics_needs_create_on_the_cluster_or_the_topic() {
    let a = Authorized::start().await;
    let refused = create_topic(&a, ALICE, "new-1").await;
    assert_eq!(refused.error_code, code(TAF));
    assert_eq!(
        refused.error_message.as_deref(),
        Some("Authorization failed.")
    );
    a.allow(ALICE, TOPIC, "new-", PREFIXED, op::CREATE).await;
    let created = create_topic(&a, ALICE, "new-1").await;
    assert_eq!(created.error_code, 0);
    // Its configs are shown only with DESCRIBE_CONFIGS.
    assert_eq!(created.topic_config_error_code, code(TAF));
    assert!(created.configs.unwrap_or_default().is_empty());
    a.allow(ALICE, TOPIC, "new-", PREFIXED, op::ALTER_CONFIGS)
        .await;
    let created = create_topic(&a, ALICE, "new-2").await;
    assert_eq!(created.topic_config_error_code, 0);
    assert!(!created.configs.unwrap_or_default().is_empty());
    // The refusal comes before TOPIC_ALREADY_EXISTS, which would tell the topic is there.
    a.topic("existing", 1).await;
    assert_eq!(
        create_topic(&a, ALICE, "existing").await.error_code,
        code(TAF)
    );
    a.allow(ALICE, CLUSTER, "kafka-cluster", LITERAL, op::CREATE)
        .await;
    assert_eq!(
        create_topic(&a, ALICE, "existing").await.error_code,
        code(ResponseError::TopicAlreadyExists)
    );
    assert_eq!(create_topic(&a, ALICE, "other").await.error_code, 0);
}

async fn delete_topic(
    a: &Authorized,
    user: &str,
    topic: Option<&str>,
    id: uuid::Uuid,
) -> (Option<String>, i16) {
    let request = DeleteTopicsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![DeleteTopicState::default()
            .with_name(topic.map(name))
            .with_topic_id(id)]);
    let response = expect_kind!(
        a.call(user, ApiKey::DeleteTopics, 6, request).await,
        DeleteTopics
    );
    let result = &response.responses[0];
    (
        result.name.as_ref().map(|n| n.0.to_string()),
        result.error_code,
    )
}

#[tokio::test]
async fn delete_topics_needs_describe_before_telling_existence_and_delete_to_delete() {
    let a = Authorized::start().await;
    a.topic("doomed", 1).await;
    let nil = uuid::Uuid::nil();
    assert_eq!(
        delete_topic(&a, ALICE, Some("doomed"), nil).await,
        (Some("doomed".into()), code(TAF))
    );
    assert_eq!(
        delete_topic(&a, ALICE, Some("absent"), nil).await,
        (Some("absent".into()), code(TAF))
    );
    // By id, the name of a topic alice may not describe stays hidden.
    let id = a
        .broker
        .running
        .broker
        .catalog
        .get("doomed")
        .unwrap()
        .record
        .id;
    assert_eq!(delete_topic(&a, ALICE, None, id).await, (None, code(TAF)));
    a.allow(ALICE, TOPIC, "absent", LITERAL, op::DESCRIBE).await;
    assert_eq!(
        delete_topic(&a, ALICE, Some("absent"), nil).await.1,
        code(ResponseError::UnknownTopicOrPartition)
    );
    a.allow(ALICE, TOPIC, "doomed", LITERAL, op::DESCRIBE).await;
    assert_eq!(
        delete_topic(&a, ALICE, None, id).await,
        (Some("doomed".into()), code(TAF))
    );
    a.allow(ALICE, TOPIC, "doomed", LITERAL, op::DELETE).await;
    assert_eq!(delete_topic(&a, ALICE, Some("doomed"), nil).await.1, 0);
}

#[tokio::test]
async fn create_partitions_needs_alter_on_the_topic() {
    let a = Authorized::start().await;
    a.topic("grow", 1).await;
    let request = CreatePartitionsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![CreatePartitionsTopic::default()
            .with_name(name("grow"))
            .with_count(2)
            .with_assignments(None)]);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::CreatePartitions, 3, request.clone())
            .await,
        CreatePartitions
    );
    assert_eq!(answer.results[0].error_code, code(TAF));
    assert_eq!(answer.results[0].error_message, None);
    a.allow(ALICE, TOPIC, "grow", LITERAL, op::ALTER).await;
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::CreatePartitions, 3, request).await,
        CreatePartitions
    );
    assert_eq!(answer.results[0].error_code, 0);
}

async fn describe_configs(
    a: &Authorized,
    resource_type: i8,
    resource: &str,
) -> (i16, Option<String>, usize) {
    let request =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(s(resource))
            .with_configuration_keys(None)]);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::DescribeConfigs, 4, request).await,
        DescribeConfigs
    );
    let result = &answer.results[0];
    (
        result.error_code,
        result.error_message.as_ref().map(|m| m.to_string()),
        result.configs.len(),
    )
}

#[tokio::test]
async fn config_apis_need_describe_configs_and_alter_configs() {
    let a = Authorized::start().await;
    a.topic("conf", 1).await;
    let (error, message, configs) = describe_configs(&a, TOPIC_RESOURCE, "conf").await;
    assert_eq!(
        (error, message.as_deref(), configs),
        (code(TAF), Some("Topic authorization failed."), 0)
    );
    let (error, message, _) = describe_configs(&a, BROKER_RESOURCE, "1").await;
    assert_eq!(
        (error, message.as_deref()),
        (code(CAF), Some("Cluster authorization failed."))
    );
    a.allow(ALICE, TOPIC, "conf", LITERAL, op::DESCRIBE_CONFIGS)
        .await;
    a.allow(
        ALICE,
        CLUSTER,
        "kafka-cluster",
        LITERAL,
        op::DESCRIBE_CONFIGS,
    )
    .await;
    assert_eq!(describe_configs(&a, TOPIC_RESOURCE, "conf").await.0, 0);
    assert_eq!(describe_configs(&a, BROKER_RESOURCE, "1").await.0, 0);

    let alter =
        AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(TOPIC_RESOURCE)
            .with_resource_name(s("conf"))
            .with_configs(vec![AlterableConfig::default()
                .with_name(s("retention.ms"))
                .with_value(Some(s("1000")))])]);
    let incremental = IncrementalAlterConfigsRequest::default().with_resources(vec![
        incremental::AlterConfigsResource::default()
            .with_resource_type(TOPIC_RESOURCE)
            .with_resource_name(s("conf"))
            .with_configs(vec![incremental::AlterableConfig::default()
                .with_name(s("retention.ms"))
                .with_config_operation(0)
                .with_value(Some(s("2000")))]),
    ]);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::AlterConfigs, 2, alter.clone()).await,
        AlterConfigs
    );
    assert_eq!(
        answer.responses[0].error_code,
        code(TAF),
        "DESCRIBE_CONFIGS is not ALTER_CONFIGS"
    );
    let answer = expect_kind!(
        a.call(
            ALICE,
            ApiKey::IncrementalAlterConfigs,
            1,
            incremental.clone()
        )
        .await,
        IncrementalAlterConfigs
    );
    assert_eq!(answer.responses[0].error_code, code(TAF));
    a.allow(ALICE, TOPIC, "conf", LITERAL, op::ALTER_CONFIGS)
        .await;
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::AlterConfigs, 2, alter).await,
        AlterConfigs
    );
    assert_eq!(answer.responses[0].error_code, 0);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::IncrementalAlterConfigs, 1, incremental)
            .await,
        IncrementalAlterConfigs
    );
    assert_eq!(answer.responses[0].error_code, 0);

    // A broker resource needs ALTER_CONFIGS on the cluster before it is refused as read-only.
    let broker_alter =
        AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(BROKER_RESOURCE)
            .with_resource_name(s("1"))
            .with_configs(vec![])]);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::AlterConfigs, 2, broker_alter.clone())
            .await,
        AlterConfigs
    );
    assert_eq!(answer.responses[0].error_code, code(CAF));
    a.allow(ALICE, CLUSTER, "kafka-cluster", LITERAL, op::ALTER_CONFIGS)
        .await;
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::AlterConfigs, 2, broker_alter).await,
        AlterConfigs
    );
    assert_eq!(
        answer.responses[0].error_code,
        code(ResponseError::InvalidConfig)
    );
}

#[tokio::test]
async fn delete_records_needs_delete_on_the_topic() {
    let a = Authorized::start().await;
    a.topic("trim", 1).await;
    let request = DeleteRecordsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![DeleteRecordsTopic::default()
            .with_name(name("trim"))
            .with_partitions(vec![DeleteRecordsPartition::default()
                .with_partition_index(0)
                .with_offset(-1)])]);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::DeleteRecords, 2, request.clone())
            .await,
        DeleteRecords
    );
    let partition = &answer.topics[0].partitions[0];
    assert_eq!(
        (partition.error_code, partition.low_watermark),
        (code(TAF), -1)
    );
    a.allow(ALICE, TOPIC, "trim", LITERAL, op::DELETE).await;
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::DeleteRecords, 2, request).await,
        DeleteRecords
    );
    assert_eq!(answer.topics[0].partitions[0].error_code, 0);
}
