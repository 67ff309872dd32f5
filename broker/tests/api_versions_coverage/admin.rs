//! Topic, config and cluster APIs, InitProducerId and DeleteRecords, one version at a time;
//! each change is read back through another API.

use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request as incremental;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use protocol::versions::SUPPORTED_APIS;

use crate::common::{name, s};
use crate::ctx::Ctx;
use crate::expect_kind;
use crate::log::{append, batch_now, read};

const TOPIC_RESOURCE: i8 = 2;
const DEFAULT_RETENTION_MS: &str = "604800000";

fn metadata_request(version: i16, topics: &[&str]) -> MetadataRequest {
    let topics = topics
        .iter()
        .map(|t| MetadataRequestTopic::default().with_name(Some(name(t))))
        .collect();
    let request = MetadataRequest::default().with_topics(Some(topics));
    // Auto-creation is a v4+ flag (older versions always ask for it).
    if version >= 4 {
        request.with_allow_auto_topic_creation(false)
    } else {
        request
    }
}

/// `(error, partitions)` of a topic as Metadata (latest version) describes it.
async fn described(ctx: &mut Ctx, topic: &str) -> (i16, usize) {
    let request = metadata_request(12, &[topic]);
    let response = expect_kind!(ctx.call(ApiKey::Metadata, 12, request).await, Metadata);
    let t = &response.topics[0];
    (t.error_code, t.partitions.len())
}

pub async fn metadata(ctx: &mut Ctx, version: i16) {
    let topic = format!("metadata-v{version}");
    let id = ctx.create_topic(&topic, 2).await;
    let port = i32::from(ctx.broker.addr().port());
    let response = expect_kind!(
        ctx.call(
            ApiKey::Metadata,
            version,
            metadata_request(version, &[&topic])
        )
        .await,
        Metadata
    );
    assert_eq!(response.brokers.len(), 1);
    let broker = &response.brokers[0];
    assert_eq!(
        (broker.node_id.0, &*broker.host, broker.port),
        (1, "127.0.0.1", port)
    );
    if version >= 1 {
        assert_eq!(response.controller_id.0, 1);
    }
    if version >= 2 {
        assert!(response
            .cluster_id
            .as_deref()
            .is_some_and(|c| !c.is_empty()));
    }
    assert_eq!(response.topics.len(), 1);
    let t = &response.topics[0];
    assert_eq!(t.error_code, 0);
    assert_eq!(
        t.name.as_ref().map(|n| n.0.to_string()),
        Some(topic.clone())
    );
    if version >= 10 {
        assert_eq!(t.topic_id, id);
    }
    let mut partitions: Vec<(i32, i32, usize)> = t
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.leader_id.0, p.replica_nodes.len()))
        .collect();
    partitions.sort();
    assert_eq!(partitions, vec![(0, 1, 1), (1, 1, 1)]);

    let unknown = format!("missing-v{version}");
    let response = expect_kind!(
        ctx.call(
            ApiKey::Metadata,
            version,
            metadata_request(version, &[&unknown])
        )
        .await,
        Metadata
    );
    // v0-3 cannot say "do not create": the topic is auto-created (told to retry) instead.
    let expected = if version >= 4 {
        ResponseError::UnknownTopicOrPartition
    } else {
        ResponseError::LeaderNotAvailable
    };
    assert_eq!(response.topics[0].error_code, expected.code());

    // Every topic: an empty list in v0, a null one from v1.
    let all = if version >= 1 {
        MetadataRequest::default().with_topics(None)
    } else {
        MetadataRequest::default().with_topics(Some(vec![]))
    };
    let response = expect_kind!(ctx.call(ApiKey::Metadata, version, all).await, Metadata);
    assert!(response
        .topics
        .iter()
        .any(|t| t.name.as_ref().is_some_and(|n| *n.0 == *topic)));
}

pub async fn api_versions(ctx: &mut Ctx, version: i16) {
    let request = if version >= 3 {
        ApiVersionsRequest::default()
            .with_client_software_name(s("coverage"))
            .with_client_software_version(s("1.0"))
    } else {
        ApiVersionsRequest::default()
    };
    let response = expect_kind!(
        ctx.call(ApiKey::ApiVersions, version, request).await,
        ApiVersions
    );
    assert_eq!(response.error_code, 0);
    let listed: Vec<(i16, i16, i16)> = response
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version))
        .collect();
    let table: Vec<(i16, i16, i16)> = SUPPORTED_APIS
        .iter()
        .map(|&(api, min, max)| (api as i16, min, max))
        .collect();
    assert_eq!(listed, table);
    api_versions_features(&response, version);
}

/// Feature flags are tagged fields, so v3 on; the ranges starting at 0 from v4 only.
fn api_versions_features(response: &ApiVersionsResponse, version: i16) {
    let finalized: Vec<(String, i16, i16)> = response
        .finalized_features
        .iter()
        .map(|f| (f.name.to_string(), f.min_version_level, f.max_version_level))
        .collect();
    let supported: Vec<(String, i16, i16)> = response
        .supported_features
        .iter()
        .map(|f| (f.name.to_string(), f.min_version, f.max_version))
        .collect();
    if version < 3 {
        assert!(finalized.is_empty() && supported.is_empty());
        return;
    }
    assert_eq!(response.finalized_features_epoch, 1);
    assert!(finalized.contains(&("transaction.version".into(), 1, 1)));
    assert!(finalized.contains(&("group.version".into(), 1, 1)));
    let group_range = ("group.version".to_string(), 0, 1);
    assert_eq!(supported.contains(&group_range), version >= 4);
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

pub async fn create_topics(ctx: &mut Ctx, version: i16) {
    let topic = format!("created-v{version}");
    let request = create_request(&topic, 3, &[("retention.ms", "1000")]);
    let response = expect_kind!(
        ctx.call(ApiKey::CreateTopics, version, request).await,
        CreateTopics
    );
    let created = &response.topics[0];
    assert_eq!((created.error_code, &*created.name.0), (0, topic.as_str()));
    if version >= 5 {
        assert_eq!(created.num_partitions, 3);
        let configs = created.configs.as_deref().unwrap_or_default();
        let retention = configs.iter().find(|c| &*c.name == "retention.ms");
        assert_eq!(retention.and_then(|c| c.value.as_deref()), Some("1000"));
    }
    if version >= 7 {
        assert!(!created.topic_id.is_nil());
    }
    assert_eq!(described(ctx, &topic).await, (0, 3));
    assert_eq!(topic_config(ctx, 4, &topic, "retention.ms").await, "1000");
    let again = create_request(&topic, 3, &[]);
    let response = expect_kind!(
        ctx.call(ApiKey::CreateTopics, version, again).await,
        CreateTopics
    );
    let code = response.topics[0].error_code;
    assert_eq!(code, ResponseError::TopicAlreadyExists.code());
}

pub async fn delete_topics(ctx: &mut Ctx, version: i16) {
    let topic = format!("doomed-v{version}");
    let id = ctx.create_topic(&topic, 2).await;
    // By name until v5; v6 names topics in `topics`, by id here.
    let request = if version >= 6 {
        DeleteTopicsRequest::default()
            .with_topics(vec![DeleteTopicState::default().with_topic_id(id)])
    } else {
        DeleteTopicsRequest::default().with_topic_names(vec![name(&topic)])
    };
    let request = request.with_timeout_ms(5000);
    let response = expect_kind!(
        ctx.call(ApiKey::DeleteTopics, version, request.clone())
            .await,
        DeleteTopics
    );
    assert_eq!(response.responses[0].error_code, 0);
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    assert_eq!(described(ctx, &topic).await.0, unknown);
    let again = expect_kind!(
        ctx.call(ApiKey::DeleteTopics, version, request).await,
        DeleteTopics
    );
    let expected = if version >= 6 {
        ResponseError::UnknownTopicId
    } else {
        ResponseError::UnknownTopicOrPartition
    };
    assert_eq!(again.responses[0].error_code, expected.code());
}

/// The value of one topic config, as DescribeConfigs `version` shows it.
async fn topic_config(ctx: &mut Ctx, version: i16, topic: &str, key: &str) -> String {
    let request =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(TOPIC_RESOURCE)
            .with_resource_name(s(topic))]);
    let response = expect_kind!(
        ctx.call(ApiKey::DescribeConfigs, version, request).await,
        DescribeConfigs
    );
    let result = &response.results[0];
    assert_eq!((result.error_code, &*result.resource_name), (0, topic));
    let entry = result.configs.iter().find(|c| &*c.name == key);
    let entry = entry.unwrap_or_else(|| panic!("{key} not described"));
    entry.value.as_deref().unwrap_or_default().to_string()
}

pub async fn describe_configs(ctx: &mut Ctx, version: i16) {
    let topic = format!("described-v{version}");
    let request = create_request(&topic, 1, &[("retention.bytes", "12345")]);
    let created = expect_kind!(
        ctx.call(ApiKey::CreateTopics, 7, request).await,
        CreateTopics
    );
    assert_eq!(created.topics[0].error_code, 0);
    assert_eq!(
        topic_config(ctx, version, &topic, "retention.bytes").await,
        "12345"
    );
    assert_eq!(
        topic_config(ctx, version, &topic, "retention.ms").await,
        DEFAULT_RETENTION_MS
    );
    let missing =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(TOPIC_RESOURCE)
            .with_resource_name(s("no-such-topic"))]);
    let response = expect_kind!(
        ctx.call(ApiKey::DescribeConfigs, version, missing).await,
        DescribeConfigs
    );
    let code = response.results[0].error_code;
    assert_eq!(code, ResponseError::UnknownTopicOrPartition.code());
}

pub async fn alter_configs(ctx: &mut Ctx, version: i16) {
    let topic = format!("altered-v{version}");
    ctx.create_topic(&topic, 1).await;
    let value = format!("{}", 100_000 + i32::from(version));
    let request =
        AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(TOPIC_RESOURCE)
            .with_resource_name(s(&topic))
            .with_configs(vec![AlterableConfig::default()
                .with_name(s("retention.ms"))
                .with_value(Some(s(&value)))])]);
    let response = expect_kind!(
        ctx.call(ApiKey::AlterConfigs, version, request).await,
        AlterConfigs
    );
    assert_eq!(response.responses[0].error_code, 0);
    assert_eq!(topic_config(ctx, 4, &topic, "retention.ms").await, value);
    let bad = AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
        .with_resource_type(TOPIC_RESOURCE)
        .with_resource_name(s(&topic))
        .with_configs(vec![AlterableConfig::default()
            .with_name(s("retention.ms"))
            .with_value(Some(s("-7")))])]);
    let response = expect_kind!(
        ctx.call(ApiKey::AlterConfigs, version, bad).await,
        AlterConfigs
    );
    assert_eq!(
        response.responses[0].error_code,
        ResponseError::InvalidConfig.code()
    );
    assert_eq!(topic_config(ctx, 4, &topic, "retention.ms").await, value);
}

pub async fn incremental_alter_configs(ctx: &mut Ctx, version: i16) {
    let topic = format!("incremental-v{version}");
    let request = create_request(&topic, 1, &[("retention.ms", "5000")]);
    let created = expect_kind!(
        ctx.call(ApiKey::CreateTopics, 7, request).await,
        CreateTopics
    );
    assert_eq!(created.topics[0].error_code, 0);
    const SET: i8 = 0;
    const DELETE: i8 = 1;
    let config = |key: &str, op: i8, value: Option<&str>| {
        incremental::AlterableConfig::default()
            .with_name(s(key))
            .with_config_operation(op)
            .with_value(value.map(s))
    };
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        incremental::AlterConfigsResource::default()
            .with_resource_type(TOPIC_RESOURCE)
            .with_resource_name(s(&topic))
            .with_configs(vec![
                config("retention.bytes", SET, Some("777")),
                config("retention.ms", DELETE, None),
            ]),
    ]);
    let response = expect_kind!(
        ctx.call(ApiKey::IncrementalAlterConfigs, version, request)
            .await,
        IncrementalAlterConfigs
    );
    assert_eq!(response.responses[0].error_code, 0);
    assert_eq!(topic_config(ctx, 4, &topic, "retention.bytes").await, "777");
    assert_eq!(
        topic_config(ctx, 4, &topic, "retention.ms").await,
        DEFAULT_RETENTION_MS
    );
}

pub async fn create_partitions(ctx: &mut Ctx, version: i16) {
    let topic = format!("growing-v{version}");
    ctx.create_topic(&topic, 1).await;
    let grow = |count: i32| {
        CreatePartitionsRequest::default()
            .with_timeout_ms(5000)
            .with_topics(vec![CreatePartitionsTopic::default()
                .with_name(name(&topic))
                .with_count(count)])
    };
    let response = expect_kind!(
        ctx.call(ApiKey::CreatePartitions, version, grow(3)).await,
        CreatePartitions
    );
    let result = &response.results[0];
    assert_eq!((result.error_code, &*result.name.0), (0, topic.as_str()));
    assert_eq!(described(ctx, &topic).await, (0, 3));
    // The new partitions take records.
    append(ctx, &topic, 2, batch_now(&["new"])).await;
    assert_eq!(read(ctx, &topic, 2, 0).await, vec![(0, "new".to_string())]);
    let fewer = expect_kind!(
        ctx.call(ApiKey::CreatePartitions, version, grow(2)).await,
        CreatePartitions
    );
    let code = fewer.results[0].error_code;
    assert_eq!(code, ResponseError::InvalidPartitions.code());
    assert_eq!(described(ctx, &topic).await, (0, 3));
}

pub async fn describe_cluster(ctx: &mut Ctx, version: i16) {
    let port = i32::from(ctx.broker.addr().port());
    let response = expect_kind!(
        ctx.call(
            ApiKey::DescribeCluster,
            version,
            DescribeClusterRequest::default()
        )
        .await,
        DescribeCluster
    );
    assert_eq!(response.error_code, 0);
    assert!(!response.cluster_id.is_empty());
    assert_eq!(response.controller_id.0, 1);
    let brokers: Vec<(i32, &str, i32)> = response
        .brokers
        .iter()
        .map(|b| (b.broker_id.0, &*b.host, b.port))
        .collect();
    assert_eq!(brokers, vec![(1, "127.0.0.1", port)]);
    // The cluster id is the one Metadata reports.
    let metadata = expect_kind!(
        ctx.call(
            ApiKey::Metadata,
            12,
            MetadataRequest::default().with_topics(Some(vec![]))
        )
        .await,
        Metadata
    );
    assert_eq!(metadata.cluster_id.as_deref(), Some(&*response.cluster_id));
}

pub async fn init_producer_id(ctx: &mut Ctx, version: i16) {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000);
    let response = expect_kind!(
        ctx.call(ApiKey::InitProducerId, version, request).await,
        InitProducerId
    );
    assert_eq!(response.error_code, 0);
    let (id, epoch) = (response.producer_id.0, response.producer_epoch);
    assert!(id >= 0 && epoch >= 0, "id {id} epoch {epoch}");
    // The id works: an idempotent batch under it is written, and its retry is not written twice.
    let topic = format!("idempotent-v{version}");
    ctx.create_topic(&topic, 1).await;
    let batch = idempotent_batch(id, epoch);
    assert_eq!(append(ctx, &topic, 0, batch.clone()).await, 0);
    assert_eq!(
        append(ctx, &topic, 0, batch).await,
        0,
        "a retry gets its first offset"
    );
    assert_eq!(read(ctx, &topic, 0, 0).await.len(), 2);
    // A transactional id: the next call bumps the epoch of the same producer id.
    let id = format!("init-v{version}");
    let (first, epoch) = crate::transactions::init(ctx, &id, version).await;
    assert_eq!(epoch, 0);
    assert_eq!(
        crate::transactions::init(ctx, &id, version).await,
        (first, 1)
    );
    let too_long = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(s(&id))))
        .with_transaction_timeout_ms(i32::MAX);
    let response = expect_kind!(
        ctx.call(ApiKey::InitProducerId, version, too_long).await,
        InitProducerId
    );
    let code = ResponseError::InvalidTransactionTimeout.code();
    assert_eq!(response.error_code, code);
}

/// Two records of producer `id` at `epoch`, sequences 0 and 1.
fn idempotent_batch(id: i64, epoch: i16) -> bytes::Bytes {
    let records: Vec<kafka_protocol::records::Record> = (0..2)
        .map(|i| kafka_protocol::records::Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: id,
            producer_epoch: epoch,
            sequence: i,
            timestamp_type: kafka_protocol::records::TimestampType::Creation,
            offset: i64::from(i),
            timestamp: crate::log::now_ms(),
            key: None,
            value: Some(bytes::Bytes::from(format!("v{i}"))),
            headers: Default::default(),
        })
        .collect();
    crate::common::encode_batch(&records)
}

pub async fn delete_records(ctx: &mut Ctx, version: i16) {
    let topic = format!("trimmed-v{version}");
    ctx.create_topic(&topic, 1).await;
    append(ctx, &topic, 0, batch_now(&["a", "b"])).await;
    append(ctx, &topic, 0, batch_now(&["c", "d"])).await;
    let delete = |offset: i64| {
        DeleteRecordsRequest::default()
            .with_timeout_ms(5000)
            .with_topics(vec![DeleteRecordsTopic::default()
                .with_name(name(&topic))
                .with_partitions(vec![DeleteRecordsPartition::default()
                    .with_partition_index(0)
                    .with_offset(offset)])])
    };
    let response = expect_kind!(
        ctx.call(ApiKey::DeleteRecords, version, delete(2)).await,
        DeleteRecords
    );
    let p = &response.topics[0].partitions[0];
    assert_eq!(
        (p.partition_index, p.error_code, p.low_watermark),
        (0, 0, 2)
    );
    assert_eq!(
        read(ctx, &topic, 0, 2).await,
        vec![(2, "c".to_string()), (3, "d".to_string())]
    );
    // Past the high watermark is refused; -1 means "up to the high watermark".
    let response = expect_kind!(
        ctx.call(ApiKey::DeleteRecords, version, delete(9)).await,
        DeleteRecords
    );
    let code = response.topics[0].partitions[0].error_code;
    assert_eq!(code, ResponseError::OffsetOutOfRange.code());
    let response = expect_kind!(
        ctx.call(ApiKey::DeleteRecords, version, delete(-1)).await,
        DeleteRecords
    );
    let p = &response.topics[0].partitions[0];
    assert_eq!((p.error_code, p.low_watermark), (0, 4));
}

pub async fn describe_log_dirs(ctx: &mut Ctx, version: i16) {
    use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
    let topic = format!("sized-v{version}");
    ctx.create_topic(&topic, 2).await;
    let first = batch_now(&["a", "b"]);
    let second = batch_now(&["c"]);
    let written = (first.len() + second.len()) as i64;
    append(ctx, &topic, 0, first).await;
    append(ctx, &topic, 0, second).await;
    let all = expect_kind!(
        ctx.call(
            ApiKey::DescribeLogDirs,
            version,
            DescribeLogDirsRequest::default().with_topics(None)
        )
        .await,
        DescribeLogDirs
    );
    assert_eq!((all.error_code, all.results.len()), (0, 1));
    let dir = &all.results[0];
    assert!(dir.log_dir.starts_with("file://"), "{:?}", dir.log_dir);
    if version >= 4 {
        assert_eq!((dir.total_bytes, dir.usable_bytes), (-1, -1));
    }
    let sizes: Vec<(i32, i64)> = dir
        .topics
        .iter()
        .find(|t| t.name.0.as_str() == topic)
        .map(|t| {
            t.partitions
                .iter()
                .map(|p| (p.partition_index, p.partition_size))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(sizes, vec![(0, written), (1, 0)], "{dir:?}");
    let asked = DescribeLogDirsRequest::default().with_topics(Some(vec![
        DescribableLogDirTopic::default()
            .with_topic(name(&topic))
            .with_partitions(vec![1, 7]),
        DescribableLogDirTopic::default()
            .with_topic(name("no-such-topic"))
            .with_partitions(vec![0]),
    ]));
    let some = expect_kind!(
        ctx.call(ApiKey::DescribeLogDirs, version, asked).await,
        DescribeLogDirs
    );
    let topics: Vec<(&str, Vec<i32>)> = some.results[0]
        .topics
        .iter()
        .map(|t| {
            (
                t.name.0.as_str(),
                t.partitions.iter().map(|p| p.partition_index).collect(),
            )
        })
        .collect();
    assert_eq!(topics, vec![(topic.as_str(), vec![1])]);
}

pub async fn offset_for_leader_epoch(ctx: &mut Ctx, version: i16) {
    use kafka_protocol::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };
    let topic = format!("epochs-v{version}");
    ctx.create_topic(&topic, 1).await;
    append(ctx, &topic, 0, batch_now(&["a", "b", "c"])).await;
    let ask = |topic: &str, current: i32, epoch: i32| {
        OffsetForLeaderEpochRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![OffsetForLeaderTopic::default()
                .with_topic(name(topic))
                .with_partitions(vec![OffsetForLeaderPartition::default()
                    .with_partition(0)
                    .with_current_leader_epoch(current)
                    .with_leader_epoch(epoch)])])
    };
    let cases = [
        (topic.as_str(), 0, 0, (0, 0, 3)),
        (topic.as_str(), -1, 0, (0, 0, 3)),
        (topic.as_str(), 0, 5, (0, -1, -1)),
        (
            topic.as_str(),
            3,
            0,
            (ResponseError::UnknownLeaderEpoch.code(), -1, -1),
        ),
        (
            "no-such-topic",
            0,
            0,
            (ResponseError::UnknownTopicOrPartition.code(), -1, -1),
        ),
    ];
    for (asked, current, epoch, expected) in cases {
        let request = if version >= 3 {
            ask(asked, current, epoch)
        } else {
            ask(asked, current, epoch).with_replica_id(BrokerId(0))
        };
        let response = expect_kind!(
            ctx.call(ApiKey::OffsetForLeaderEpoch, version, request)
                .await,
            OffsetForLeaderEpoch
        );
        let p = &response.topics[0].partitions[0];
        assert_eq!(
            (p.error_code, p.leader_epoch, p.end_offset),
            expected,
            "{asked} {current} {epoch}"
        );
    }
}

pub async fn elect_leaders(ctx: &mut Ctx, version: i16) {
    use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
    let topic = format!("elected-v{version}");
    ctx.create_topic(&topic, 2).await;
    let request = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_timeout_ms(5000)
        .with_topic_partitions(Some(vec![TopicPartitions::default()
            .with_topic(name(&topic))
            .with_partitions(vec![0, 1, 9])]));
    let response = expect_kind!(
        ctx.call(ApiKey::ElectLeaders, version, request).await,
        ElectLeaders
    );
    let codes: Vec<(i32, i16)> = response.replica_election_results[0]
        .partition_result
        .iter()
        .map(|p| (p.partition_id, p.error_code))
        .collect();
    let not_needed = ResponseError::ElectionNotNeeded.code();
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    assert_eq!(codes, vec![(0, not_needed), (1, not_needed), (9, unknown)]);
    let all = ElectLeadersRequest::default()
        .with_topic_partitions(None)
        .with_timeout_ms(5000);
    let response = expect_kind!(
        ctx.call(ApiKey::ElectLeaders, version, all).await,
        ElectLeaders
    );
    assert_eq!(
        (response.error_code, response.replica_election_results.len()),
        (0, 0)
    );
}

pub async fn list_partition_reassignments(ctx: &mut Ctx, version: i16) {
    let request = ListPartitionReassignmentsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(None);
    let response = expect_kind!(
        ctx.call(ApiKey::ListPartitionReassignments, version, request)
            .await,
        ListPartitionReassignments
    );
    assert_eq!((response.error_code, response.topics.len()), (0, 0));
}

pub async fn alter_partition_reassignments(ctx: &mut Ctx, version: i16) {
    use kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    let topic = format!("reassigned-v{version}");
    ctx.create_topic(&topic, 1).await;
    let metadata = expect_kind!(
        ctx.call(ApiKey::Metadata, 12, metadata_request(12, &[&topic]))
            .await,
        Metadata
    );
    let leader = metadata.topics[0].partitions[0].leader_id;
    let target = |replicas: Option<Vec<BrokerId>>| {
        ReassignablePartition::default()
            .with_partition_index(0)
            .with_replicas(replicas)
    };
    let request = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![ReassignableTopic::default()
            .with_name(name(&topic))
            .with_partitions(vec![target(Some(vec![leader]))])]);
    let codes = |response: &AlterPartitionReassignmentsResponse| -> Vec<i16> {
        response.responses[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect()
    };
    let same = expect_kind!(
        ctx.call(ApiKey::AlterPartitionReassignments, version, request)
            .await,
        AlterPartitionReassignments
    );
    assert_eq!((same.error_code, codes(&same)), (0, vec![0]));
    for (replicas, expected) in [
        (None, ResponseError::NoReassignmentInProgress.code()),
        (
            Some(vec![leader, BrokerId(leader.0 + 1)]),
            ResponseError::InvalidReplicaAssignment.code(),
        ),
    ] {
        let request = AlterPartitionReassignmentsRequest::default()
            .with_timeout_ms(5000)
            .with_topics(vec![ReassignableTopic::default()
                .with_name(name(&topic))
                .with_partitions(vec![target(replicas)])]);
        let response = expect_kind!(
            ctx.call(ApiKey::AlterPartitionReassignments, version, request)
                .await,
            AlterPartitionReassignments
        );
        assert_eq!(codes(&response), vec![expected]);
    }
}
