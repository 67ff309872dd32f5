//! ApiVersions, Metadata, topic admin and config APIs, at every version the table lists.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and times of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod common;

use common::{name, s, TestBroker};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use protocol::versions::supported_range;

fn versions(api_key: ApiKey) -> std::ops::RangeInclusive<i16> {
    let (min, max) = supported_range(api_key).expect("api in the table");
    min..=max
}

fn create_request(topic: &str, partitions: i32, configs: &[(&str, &str)]) -> CreateTopicsRequest {
    let configs = configs
        .iter()
        .map(|(k, v)| {
            CreatableTopicConfig::default()
                .with_name(s(k))
                .with_value(Some(s(v)))
        })
        .collect();
    CreateTopicsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(-1)
            .with_configs(configs)])
}

async fn create(
    client: &mut common::Client,
    version: i16,
    request: CreateTopicsRequest,
) -> (i16, Option<String>) {
    let response = expect_kind!(
        client.call(ApiKey::CreateTopics, version, request).await,
        CreateTopics
    );
    let topic = &response.topics[0];
    (
        topic.error_code,
        topic.error_message.as_ref().map(|m| m.to_string()),
    )
}

fn metadata_for(topics: &[&str], auto_create: bool) -> MetadataRequest {
    MetadataRequest::default()
        .with_topics(Some(
            topics
                .iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(name(t))))
                .collect(),
        ))
        .with_allow_auto_topic_creation(auto_create)
}

#[tokio::test]
async fn api_versions_lists_the_table_and_kafkas_feature_levels() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    for version in versions(ApiKey::ApiVersions) {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(s("broker-tests"))
            .with_client_software_version(s("1.0"));
        let response = expect_kind!(
            client.call(ApiKey::ApiVersions, version, request).await,
            ApiVersions
        );
        assert_eq!(response.error_code, 0, "v{version}");
        assert_eq!(
            response.api_keys.len(),
            protocol::versions::SUPPORTED_APIS.len()
        );
        assert!(
            !response.zk_migration_ready,
            "v{version}: a default Kafka omits"
        );
        if version < 3 {
            assert_eq!(response.finalized_features_epoch, -1);
            assert!(response.supported_features.is_empty());
            continue;
        }
        // Kafka 4.1's feature lists: transaction.version 1 (no KIP-890 part 2) finalized.
        assert!(response.finalized_features_epoch >= 0, "v{version}");
        // Before v4 Kafka lists no supported feature whose minimum is 0 (KIP-1022).
        let supported = response
            .supported_features
            .iter()
            .find(|f| &*f.name == "transaction.version");
        assert_eq!(
            supported.map(|f| f.max_version),
            (version >= 4).then_some(1)
        );
        let finalized = response
            .finalized_features
            .iter()
            .find(|f| &*f.name == "transaction.version")
            .expect("transaction.version is finalized");
        assert_eq!(finalized.max_version_level, 1);
    }
    // Raw check for librdkafka 2.0.2, which mis-parses tagged fields at their default values:
    // a v3 response carries the epoch (1) and the finalized levels (2), as Kafka's does for a
    // v3 request, and neither SupportedFeatures (0, empty) nor ZkMigrationReady (3, false).
    let header = client.header(ApiKey::ApiVersions, 3);
    let request = ApiVersionsRequest::default()
        .with_client_software_name(s("t"))
        .with_client_software_version(s("1"));
    let frame =
        protocol::codec::encode_request(&header, &RequestKind::ApiVersions(request)).unwrap();
    client.send_raw(&frame).await;
    let raw = client.read_raw().await.unwrap();
    assert_eq!(top_level_tags(&raw), vec![1, 2]);
}

/// The tags of a v3 ApiVersions response's top-level tagged fields (from the correlation id on).
fn top_level_tags(raw: &[u8]) -> Vec<u64> {
    fn uvarint(raw: &[u8], pos: &mut usize) -> u64 {
        let (mut value, mut shift) = (0u64, 0);
        loop {
            let byte = raw[*pos];
            *pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return value;
            }
            shift += 7;
        }
    }
    // Correlation id and error code, then the compact array of (key, min, max, no tags).
    let mut pos = 6;
    let keys = uvarint(raw, &mut pos).saturating_sub(1);
    pos += keys as usize * 7 + 4;
    let count = uvarint(raw, &mut pos);
    let mut tags = Vec::new();
    for _ in 0..count {
        tags.push(uvarint(raw, &mut pos));
        pos += uvarint(raw, &mut pos) as usize;
    }
    assert_eq!(pos, raw.len(), "bytes after the tagged fields");
    tags
}

#[tokio::test]
async fn api_versions_at_an_unsupported_version_answers_v0_with_the_table() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    // ApiVersions v9, correlation id 5, header v2 (client id "t", no tagged fields), empty body.
    client
        .send_raw(&[0, 0, 0, 13, 0, 18, 0, 9, 0, 0, 0, 5, 0, 1, b't', 0, 0])
        .await;
    let raw = client
        .read_raw()
        .await
        .expect("an answer, not a disconnect");
    let (header, body) = protocol::codec::decode_response(ApiKey::ApiVersions, 0, raw).unwrap();
    assert_eq!(header.correlation_id, 5);
    let body = expect_kind!(body, ApiVersions);
    assert_eq!(body.error_code, ResponseError::UnsupportedVersion.code());
    assert!(!body.api_keys.is_empty());
}

#[tokio::test]
async fn metadata_auto_creates_topics_at_every_version() {
    let broker = TestBroker::start(&["--default-partitions", "2", "--broker-id", "7"]).await;
    let mut client = broker.client().await;
    for version in versions(ApiKey::Metadata) {
        let topic = format!("auto-v{version}");
        // As with Kafka, the request that creates the topic is told to retry...
        let creating = expect_kind!(
            client
                .call(ApiKey::Metadata, version, metadata_for(&[&topic], true))
                .await,
            Metadata
        );
        assert_eq!(
            creating.topics[0].error_code,
            ResponseError::LeaderNotAvailable.code(),
            "v{version}"
        );
        // ...and the next one describes it.
        let response = expect_kind!(
            client
                .call(ApiKey::Metadata, version, metadata_for(&[&topic], true))
                .await,
            Metadata
        );
        assert_eq!(response.brokers.len(), 1);
        assert_eq!(response.brokers[0].node_id.0, 7);
        assert_eq!(response.brokers[0].port, i32::from(broker.addr().port()));
        assert_eq!(response.brokers[0].host.as_str(), "127.0.0.1");
        let t = &response.topics[0];
        assert_eq!(t.error_code, 0, "v{version}");
        assert_eq!(t.name.as_ref().unwrap().0.as_str(), topic);
        assert_eq!(t.partitions.len(), 2);
        assert!(t
            .partitions
            .iter()
            .all(|p| p.leader_id.0 == 7 && p.isr_nodes.len() == 1));
        if version >= 1 {
            assert_eq!(response.controller_id.0, 7);
        }
        if version >= 10 {
            assert!(!t.topic_id.is_nil());
        }
    }
    // All topics: null list (v1+), every auto-created topic appears once.
    let all = expect_kind!(
        client
            .call(
                ApiKey::Metadata,
                12,
                MetadataRequest::default().with_topics(None)
            )
            .await,
        Metadata
    );
    assert_eq!(all.topics.len(), versions(ApiKey::Metadata).count());
}

#[tokio::test]
async fn metadata_does_not_create_when_the_request_or_the_broker_forbids_it() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    let response = expect_kind!(
        client
            .call(ApiKey::Metadata, 9, metadata_for(&["nope"], false))
            .await,
        Metadata
    );
    assert_eq!(
        response.topics[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    let response = expect_kind!(
        client
            .call(ApiKey::Metadata, 9, metadata_for(&["bad/name"], true))
            .await,
        Metadata
    );
    assert_eq!(
        response.topics[0].error_code,
        ResponseError::InvalidTopicException.code()
    );

    let broker = TestBroker::start(&["--auto-create-topics", "false"]).await;
    let mut client = broker.client().await;
    let response = expect_kind!(
        client
            .call(ApiKey::Metadata, 9, metadata_for(&["nope"], true))
            .await,
        Metadata
    );
    assert_eq!(
        response.topics[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    let by_id = MetadataRequest::default().with_topics(Some(vec![MetadataRequestTopic::default()
        .with_name(None)
        .with_topic_id(uuid::Uuid::new_v4())]));
    let response = expect_kind!(client.call(ApiKey::Metadata, 12, by_id).await, Metadata);
    assert_eq!(
        response.topics[0].error_code,
        ResponseError::UnknownTopicId.code()
    );
}

#[tokio::test]
async fn create_topics_validates_and_refuses_duplicates_at_every_version() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    for version in versions(ApiKey::CreateTopics) {
        let topic = format!("created-v{version}");
        let request = create_request(&topic, 3, &[("retention.ms", "1000")]);
        let response = expect_kind!(
            client.call(ApiKey::CreateTopics, version, request).await,
            CreateTopics
        );
        let result = &response.topics[0];
        assert_eq!(
            result.error_code, 0,
            "v{version}: {:?}",
            result.error_message
        );
        if version >= 5 {
            assert_eq!(result.num_partitions, 3);
            let configs = result.configs.as_ref().unwrap();
            let retention = configs
                .iter()
                .find(|c| c.name.as_str() == "retention.ms")
                .unwrap();
            assert_eq!(retention.value.as_deref(), Some("1000"));
        }
        if version >= 7 {
            assert!(!result.topic_id.is_nil());
        }
        let (code, _) = create(&mut client, version, create_request(&topic, 3, &[])).await;
        assert_eq!(code, ResponseError::TopicAlreadyExists.code(), "v{version}");
    }
    assert_eq!(
        create(&mut client, 7, create_request("col_lide", 1, &[]))
            .await
            .0,
        0
    );
    let cases: [(CreateTopicsRequest, ResponseError); 6] = [
        (
            create_request("bad name", 1, &[]),
            ResponseError::InvalidTopicException,
        ),
        (
            create_request("zero", 0, &[]),
            ResponseError::InvalidPartitions,
        ),
        (
            create_request("compacted", 1, &[("cleanup.policy", "compact,squash")]),
            ResponseError::InvalidConfig,
        ),
        (
            create_request("unknown-config", 1, &[("no.such.config", "1")]),
            ResponseError::InvalidConfig,
        ),
        (
            create_request("bad-retention", 1, &[("retention.ms", "-7")]),
            ResponseError::InvalidConfig,
        ),
        (
            create_request("col.lide", 1, &[]),
            ResponseError::InvalidTopicException,
        ),
    ];
    for (request, expected) in cases {
        let (code, message) = create(&mut client, 7, request).await;
        assert_eq!(code, expected.code(), "{message:?}");
        assert!(message.is_some());
    }
    let mut rf3 = create_request("rf3", 1, &[]);
    rf3.topics[0].replication_factor = 3;
    assert_eq!(
        create(&mut client, 7, rf3).await.0,
        ResponseError::InvalidReplicationFactor.code()
    );
    let compact = create(
        &mut client,
        7,
        create_request("c", 1, &[("cleanup.policy", "compact")]),
    )
    .await;
    assert_eq!(compact.0, 0, "compacted topics are served: {:?}", compact.1);

    // validate_only checks everything but creates nothing.
    let mut dry = create_request("dry-run", 2, &[]);
    dry.validate_only = true;
    assert_eq!(create(&mut client, 7, dry).await.0, 0);
    let response = expect_kind!(
        client
            .call(ApiKey::Metadata, 9, metadata_for(&["dry-run"], false))
            .await,
        Metadata
    );
    assert_eq!(
        response.topics[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
}

#[tokio::test]
async fn delete_topics_by_name_and_by_id() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    for version in versions(ApiKey::DeleteTopics) {
        let topic = format!("doomed-v{version}");
        assert_eq!(
            create(&mut client, 7, create_request(&topic, 2, &[]))
                .await
                .0,
            0
        );
        let request = if version >= 6 {
            let meta = expect_kind!(
                client
                    .call(ApiKey::Metadata, 12, metadata_for(&[&topic], false))
                    .await,
                Metadata
            );
            let id = meta.topics[0].topic_id;
            DeleteTopicsRequest::default()
                .with_topics(vec![DeleteTopicState::default().with_topic_id(id)])
        } else {
            DeleteTopicsRequest::default().with_topic_names(vec![name(&topic)])
        };
        let response = expect_kind!(
            client
                .call(ApiKey::DeleteTopics, version, request.clone())
                .await,
            DeleteTopics
        );
        assert_eq!(response.responses[0].error_code, 0, "v{version}");
        let again = expect_kind!(
            client.call(ApiKey::DeleteTopics, version, request).await,
            DeleteTopics
        );
        let expected = if version >= 6 {
            ResponseError::UnknownTopicId
        } else {
            ResponseError::UnknownTopicOrPartition
        };
        assert_eq!(again.responses[0].error_code, expected.code(), "v{version}");
        let meta = expect_kind!(
            client
                .call(ApiKey::Metadata, 9, metadata_for(&[&topic], false))
                .await,
            Metadata
        );
        assert_eq!(
            meta.topics[0].error_code,
            ResponseError::UnknownTopicOrPartition.code()
        );
    }
}

#[tokio::test]
async fn create_partitions_only_increases() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    assert_eq!(
        create(&mut client, 7, create_request("growing", 1, &[]))
            .await
            .0,
        0
    );
    let grow = |count: i32, validate_only: bool| {
        CreatePartitionsRequest::default()
            .with_timeout_ms(5000)
            .with_validate_only(validate_only)
            .with_topics(vec![CreatePartitionsTopic::default()
                .with_name(name("growing"))
                .with_count(count)])
    };
    let mut expected_partitions = 1;
    for version in versions(ApiKey::CreatePartitions) {
        let dry = expect_kind!(
            client
                .call(
                    ApiKey::CreatePartitions,
                    version,
                    grow(expected_partitions + 5, true)
                )
                .await,
            CreatePartitions
        );
        assert_eq!(dry.results[0].error_code, 0);
        expected_partitions += 1;
        let response = expect_kind!(
            client
                .call(
                    ApiKey::CreatePartitions,
                    version,
                    grow(expected_partitions, false)
                )
                .await,
            CreatePartitions
        );
        assert_eq!(
            response.results[0].error_code, 0,
            "v{version}: {:?}",
            response.results[0].error_message
        );
        let same = expect_kind!(
            client
                .call(
                    ApiKey::CreatePartitions,
                    version,
                    grow(expected_partitions, false)
                )
                .await,
            CreatePartitions
        );
        assert_eq!(
            same.results[0].error_code,
            ResponseError::InvalidPartitions.code()
        );
        let fewer = expect_kind!(
            client
                .call(ApiKey::CreatePartitions, version, grow(1, false))
                .await,
            CreatePartitions
        );
        assert_eq!(
            fewer.results[0].error_code,
            ResponseError::InvalidPartitions.code()
        );
    }
    let meta = expect_kind!(
        client
            .call(ApiKey::Metadata, 9, metadata_for(&["growing"], false))
            .await,
        Metadata
    );
    assert_eq!(
        meta.topics[0].partitions.len(),
        expected_partitions as usize
    );
    let unknown =
        CreatePartitionsRequest::default().with_topics(vec![CreatePartitionsTopic::default()
            .with_name(name("missing"))
            .with_count(3)]);
    let response = expect_kind!(
        client.call(ApiKey::CreatePartitions, 3, unknown).await,
        CreatePartitions
    );
    assert_eq!(
        response.results[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
}

fn describe_topic(topic: &str) -> DescribeConfigsRequest {
    DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
        .with_resource_type(2)
        .with_resource_name(s(topic))])
}

async fn topic_config(
    client: &mut common::Client,
    version: i16,
    topic: &str,
    key: &str,
) -> (String, i8) {
    let response = expect_kind!(
        client
            .call(ApiKey::DescribeConfigs, version, describe_topic(topic))
            .await,
        DescribeConfigs
    );
    assert_eq!(response.results[0].error_code, 0);
    let entry = response.results[0]
        .configs
        .iter()
        .find(|c| c.name.as_str() == key)
        .unwrap();
    (
        entry.value.as_ref().unwrap().to_string(),
        entry.config_source,
    )
}

#[tokio::test]
async fn configs_can_be_described_and_altered_at_every_version() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    assert_eq!(
        create(&mut client, 7, create_request("configured", 1, &[]))
            .await
            .0,
        0
    );
    for version in versions(ApiKey::DescribeConfigs) {
        assert_eq!(
            topic_config(&mut client, version, "configured", "retention.ms").await,
            ("604800000".into(), 5)
        );
        assert_eq!(
            topic_config(&mut client, version, "configured", "cleanup.policy")
                .await
                .0,
            "delete"
        );
    }
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    for version in versions(ApiKey::AlterConfigs) {
        let value = format!("{}", 1000 + version);
        let request =
            AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(s("configured"))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(s("retention.ms"))
                    .with_value(Some(s(&value)))])]);
        let response = expect_kind!(
            client.call(ApiKey::AlterConfigs, version, request).await,
            AlterConfigs
        );
        assert_eq!(response.responses[0].error_code, 0);
        assert_eq!(
            topic_config(&mut client, 4, "configured", "retention.ms").await,
            (value, 1)
        );
    }
    use kafka_protocol::messages::incremental_alter_configs_request as inc;
    let incremental = |ops: Vec<(&str, i8, Option<&str>)>| {
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            inc::AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(s("configured"))
                .with_configs(
                    ops.into_iter()
                        .map(|(k, op, v)| {
                            inc::AlterableConfig::default()
                                .with_name(s(k))
                                .with_config_operation(op)
                                .with_value(v.map(s))
                        })
                        .collect(),
                ),
        ])
    };
    for version in versions(ApiKey::IncrementalAlterConfigs) {
        let set = incremental(vec![
            ("retention.bytes", 0, Some("5000")),
            ("retention.ms", 1, None),
        ]);
        let response = expect_kind!(
            client
                .call(ApiKey::IncrementalAlterConfigs, version, set)
                .await,
            IncrementalAlterConfigs
        );
        assert_eq!(response.responses[0].error_code, 0);
        assert_eq!(
            topic_config(&mut client, 4, "configured", "retention.bytes").await,
            ("5000".into(), 1)
        );
        assert_eq!(
            topic_config(&mut client, 4, "configured", "retention.ms").await,
            ("604800000".into(), 5)
        );
        let compact = incremental(vec![("cleanup.policy", 2, Some("compact"))]);
        let response = expect_kind!(
            client
                .call(ApiKey::IncrementalAlterConfigs, version, compact)
                .await,
            IncrementalAlterConfigs
        );
        assert_eq!(response.responses[0].error_code, 0, "APPEND compact");
        let squash = incremental(vec![("cleanup.policy", 2, Some("squash"))]);
        let response = expect_kind!(
            client
                .call(ApiKey::IncrementalAlterConfigs, version, squash)
                .await,
            IncrementalAlterConfigs
        );
        assert_eq!(
            response.responses[0].error_code,
            ResponseError::InvalidConfig.code()
        );
        assert!(response.responses[0]
            .error_message
            .as_ref()
            .unwrap()
            .contains("compact"));
    }
    // Broker configs are described read-only; altering them is refused.
    let describe_broker =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(s("1"))]);
    let response = expect_kind!(
        client
            .call(ApiKey::DescribeConfigs, 4, describe_broker)
            .await,
        DescribeConfigs
    );
    let partitions = response.results[0]
        .configs
        .iter()
        .find(|c| c.name.as_str() == "num.partitions")
        .unwrap();
    assert!(partitions.read_only);
    assert_eq!(partitions.value.as_deref(), Some("1"));
    let missing = expect_kind!(
        client
            .call(ApiKey::DescribeConfigs, 4, describe_topic("missing"))
            .await,
        DescribeConfigs
    );
    assert_eq!(
        missing.results[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
}

#[tokio::test]
async fn describe_cluster_reports_this_broker() {
    let broker = TestBroker::start(&["--broker-id", "3", "--rack", "zone-a"]).await;
    let mut client = broker.client().await;
    for version in versions(ApiKey::DescribeCluster) {
        let response = expect_kind!(
            client
                .call(
                    ApiKey::DescribeCluster,
                    version,
                    DescribeClusterRequest::default()
                )
                .await,
            DescribeCluster
        );
        assert_eq!(response.error_code, 0);
        assert_eq!(response.controller_id.0, 3);
        assert_eq!(response.brokers.len(), 1);
        assert_eq!(response.brokers[0].rack.as_deref(), Some("zone-a"));
        assert!(!response.cluster_id.is_empty());
    }
    let controllers = DescribeClusterRequest::default().with_endpoint_type(2);
    let response = expect_kind!(
        client.call(ApiKey::DescribeCluster, 1, controllers).await,
        DescribeCluster
    );
    assert_eq!(
        response.error_code,
        ResponseError::UnsupportedEndpointType.code()
    );
}

#[tokio::test]
async fn topics_and_cluster_id_survive_a_restart() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    assert_eq!(
        create(
            &mut client,
            7,
            create_request("durable", 4, &[("retention.bytes", "123")])
        )
        .await
        .0,
        0
    );
    let before = expect_kind!(
        client
            .call(ApiKey::Metadata, 12, metadata_for(&["durable"], false))
            .await,
        Metadata
    );
    drop(client);
    let broker = broker.restart(&[]).await;
    let mut client = broker.client().await;
    let after = expect_kind!(
        client
            .call(ApiKey::Metadata, 12, metadata_for(&["durable"], false))
            .await,
        Metadata
    );
    assert_eq!(after.cluster_id, before.cluster_id);
    assert_eq!(after.topics[0].topic_id, before.topics[0].topic_id);
    assert_eq!(after.topics[0].partitions.len(), 4);
    assert_eq!(
        topic_config(&mut client, 4, "durable", "retention.bytes").await,
        ("123".into(), 1)
    );
}
