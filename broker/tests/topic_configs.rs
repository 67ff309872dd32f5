//! Kafka's topic configs at the protocol level: CreateTopics with many configs, describe with
//! sources, synonyms, types and documentation, AlterConfigs and IncrementalAlterConfigs,
//! `validate_only`, TOPIC_ALREADY_EXISTS before config errors, broker-level defaults, and the
//! configs the produce path honours (LogAppendTime, timestamp bounds, compression).

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and times of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod common;

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use common::{name, s, Client, TestBroker};
use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::incremental_alter_configs_request as inc;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol::messages::*;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use kafka_protocol::ResponseError;

const DYNAMIC_TOPIC: i8 = 1;
const STATIC_BROKER: i8 = 4;
const DEFAULT: i8 = 5;
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn create_request(
    topic: &str,
    configs: &[(&str, &str)],
    validate_only: bool,
) -> CreateTopicsRequest {
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
        .with_validate_only(validate_only)
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(1)
            .with_replication_factor(-1)
            .with_configs(configs)])
}

/// (error code, message) of creating one topic.
async fn create(
    client: &mut Client,
    topic: &str,
    configs: &[(&str, &str)],
    validate_only: bool,
) -> (i16, String) {
    let request = create_request(topic, configs, validate_only);
    let response = expect_kind!(
        client.call(ApiKey::CreateTopics, 7, request).await,
        CreateTopics
    );
    let t = &response.topics[0];
    (
        t.error_code,
        t.error_message.as_deref().unwrap_or_default().to_string(),
    )
}

/// Every entry of a topic (resource 2) or broker (resource 4), with synonyms and documentation.
async fn describe(
    client: &mut Client,
    resource_type: i8,
    resource: &str,
) -> Vec<DescribeConfigsResourceResult> {
    let request = DescribeConfigsRequest::default()
        .with_include_synonyms(true)
        .with_include_documentation(true)
        .with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(s(resource))]);
    let response = expect_kind!(
        client.call(ApiKey::DescribeConfigs, 4, request).await,
        DescribeConfigs
    );
    assert_eq!(
        response.results[0].error_code, 0,
        "{:?}",
        response.results[0].error_message
    );
    response.results[0].configs.clone()
}

fn entry<'a>(
    entries: &'a [DescribeConfigsResourceResult],
    key: &str,
) -> &'a DescribeConfigsResourceResult {
    entries
        .iter()
        .find(|e| e.name.as_str() == key)
        .unwrap_or_else(|| panic!("{key} described"))
}

/// (value, source) of one entry.
fn value_and_source(entries: &[DescribeConfigsResourceResult], key: &str) -> (String, i8) {
    let e = entry(entries, key);
    (
        e.value.as_deref().unwrap_or("null").to_string(),
        e.config_source,
    )
}

fn synonyms(e: &DescribeConfigsResourceResult) -> Vec<(String, String, i8)> {
    e.synonyms
        .iter()
        .map(|s| {
            (
                s.name.to_string(),
                s.value.as_deref().unwrap_or("null").to_string(),
                s.source,
            )
        })
        .collect()
}

fn syn(name: &str, value: &str, source: i8) -> (String, String, i8) {
    (name.to_string(), value.to_string(), source)
}

async fn incremental(
    client: &mut Client,
    topic: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, String) {
    let request = IncrementalAlterConfigsRequest::default()
        .with_validate_only(validate_only)
        .with_resources(vec![inc::AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s(topic))
            .with_configs(
                ops.iter()
                    .map(|(k, op, v)| {
                        inc::AlterableConfig::default()
                            .with_name(s(k))
                            .with_config_operation(*op)
                            .with_value(v.map(s))
                    })
                    .collect(),
            )]);
    let response = expect_kind!(
        client
            .call(ApiKey::IncrementalAlterConfigs, 1, request)
            .await,
        IncrementalAlterConfigs
    );
    let r = &response.responses[0];
    (
        r.error_code,
        r.error_message.as_deref().unwrap_or_default().to_string(),
    )
}

fn records(timestamps: &[i64]) -> Vec<Record> {
    timestamps
        .iter()
        .enumerate()
        .map(|(i, ts)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            // Offset minus sequence constant: the encoder keeps the records in one batch.
            sequence: i as i32,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            timestamp: *ts,
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from(format!("value-{i}-").repeat(20))),
            headers: Default::default(),
        })
        .collect()
}

fn encode(records: &[Record], compression: Compression) -> Bytes {
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .unwrap();
    buf.freeze()
}

async fn produce(client: &mut Client, topic: &str, batch: Bytes) -> PartitionProduceResponse {
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch))])]);
    let response = expect_kind!(client.call(ApiKey::Produce, 9, request).await, Produce);
    response.responses[0].partition_responses[0].clone()
}

/// The raw bytes Fetch returns from offset 0.
async fn fetch(client: &mut Client, topic: &str) -> Bytes {
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_log_start_offset(-1)
                .with_partition_max_bytes(1 << 20)])]);
    let response = expect_kind!(client.call(ApiKey::Fetch, 12, request).await, Fetch);
    let p = &response.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    p.records.clone().unwrap_or_default()
}

/// (offset, timestamp) ListOffsets answers for `timestamp` (-1: latest).
async fn list_offset(client: &mut Client, topic: &str, timestamp: i64) -> (i64, i64) {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(timestamp)])]);
    let response = expect_kind!(
        client.call(ApiKey::ListOffsets, 7, request).await,
        ListOffsets
    );
    let p = &response.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    (p.offset, p.timestamp)
}

fn attributes(batch: &[u8]) -> i16 {
    i16::from_be_bytes([batch[21], batch[22]])
}

fn max_timestamp(batch: &[u8]) -> i64 {
    i64::from_be_bytes(batch[35..43].try_into().unwrap())
}

#[tokio::test]
async fn a_topic_created_with_many_kafka_configs_describes_them_all() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    let configs = [
        ("cleanup.policy", "delete"),
        ("compression.type", "zstd"),
        ("compression.zstd.level", "5"),
        ("min.insync.replicas", "2"),
        ("message.timestamp.type", "CreateTime"),
        ("segment.ms", "600000"),
        ("segment.bytes", "1048576"),
        ("segment.jitter.ms", "10"),
        ("unclean.leader.election.enable", "TRUE"),
        ("retention.ms", " 86400000 "),
        ("max.message.bytes", "2000000"),
        ("preallocate", "false"),
        ("min.cleanable.dirty.ratio", "0.25"),
        ("leader.replication.throttled.replicas", "*"),
        ("local.retention.ms", "-2"),
        ("flush.messages", "1000"),
    ];
    assert_eq!(create(&mut client, "many", &configs, false).await.0, 0);
    let entries = describe(&mut client, 2, "many").await;
    assert_eq!(entries.len(), 33, "every public Kafka topic config");
    assert_eq!(
        value_and_source(&entries, "unclean.leader.election.enable"),
        ("true".into(), DYNAMIC_TOPIC)
    );
    assert_eq!(
        value_and_source(&entries, "retention.ms"),
        ("86400000".into(), DYNAMIC_TOPIC)
    );
    assert_eq!(
        value_and_source(&entries, "min.cleanable.dirty.ratio"),
        ("0.25".into(), DYNAMIC_TOPIC)
    );
    assert_eq!(
        value_and_source(&entries, "retention.bytes"),
        ("-1".into(), DEFAULT)
    );
    let compression = entry(&entries, "compression.type");
    assert_eq!(compression.config_type, 2, "STRING");
    assert_eq!(
        synonyms(compression),
        [
            syn("compression.type", "zstd", DYNAMIC_TOPIC),
            syn("compression.type", "producer", DEFAULT)
        ]
    );
    let doc = entry(&entries, "min.insync.replicas")
        .documentation
        .as_deref()
        .unwrap_or_default()
        .to_string();
    assert!(
        doc.contains("minimum") && doc.contains("no effect"),
        "{doc}"
    );
    assert_eq!(entry(&entries, "segment.bytes").config_type, 3, "INT");
    assert_eq!(entry(&entries, "cleanup.policy").config_type, 7, "LIST");
    assert_eq!(
        entry(&entries, "min.cleanable.dirty.ratio").config_type,
        6,
        "DOUBLE"
    );
    // Synonyms only when asked for; documentation from v3.
    let plain =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s("many"))
            .with_configuration_keys(Some(vec![s("compression.type")]))]);
    let response = expect_kind!(
        client.call(ApiKey::DescribeConfigs, 1, plain).await,
        DescribeConfigs
    );
    let only = &response.results[0].configs;
    assert_eq!(only.len(), 1);
    assert!(only[0].synonyms.is_empty());
    assert!(only[0]
        .documentation
        .as_deref()
        .unwrap_or_default()
        .is_empty());
}

#[tokio::test]
async fn bad_configs_are_refused_with_kafkas_messages_and_validate_only_creates_nothing() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    let cases = [
        (("no.such.config", "1"), "Unknown topic config name: no.such.config"),
        (("segment.bytes", "1000"), "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"),
        (("retention.ms", "soon"), "Invalid value soon for configuration retention.ms: Not a number of type LONG"),
        (("compression.type", "GZIP"), "Invalid value GZIP for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
        (("min.insync.replicas", "0"), "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
        (("cleanup.policy", "abc"), "Invalid value abc for configuration cleanup.policy: String must be one of: compact, delete"),
    ];
    for ((key, value), message) in cases {
        assert_eq!(
            create(&mut client, "refused", &[(key, value)], false).await,
            (ResponseError::InvalidConfig.code(), message.to_string())
        );
    }
    let conflict = [
        ("min.compaction.lag.ms", "10"),
        ("max.compaction.lag.ms", "5"),
    ];
    assert_eq!(
        create(&mut client, "refused", &conflict, false).await.0,
        ResponseError::InvalidConfig.code()
    );
    assert_eq!(
        create(&mut client, "checked", &[("segment.ms", "1000")], true)
            .await
            .0,
        0
    );
    assert_eq!(
        create(&mut client, "checked", &[("segment.ms", "0")], true)
            .await
            .0,
        ResponseError::InvalidConfig.code()
    );
    let metadata = MetadataRequest::default()
        .with_topics(None)
        .with_allow_auto_topic_creation(false);
    let response = expect_kind!(client.call(ApiKey::Metadata, 12, metadata).await, Metadata);
    assert!(response.topics.is_empty(), "nothing was created");
}

#[tokio::test]
async fn an_existing_topic_is_topic_already_exists_whatever_configs_are_asked_for() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    assert_eq!(create(&mut client, "exists", &[], false).await.0, 0);
    for configs in [
        &[("retention.ms", "-7")][..],
        &[("no.such", "x")],
        &[("cleanup.policy", "compact")],
        &[],
    ] {
        for validate_only in [false, true] {
            assert_eq!(
                create(&mut client, "exists", configs, validate_only).await,
                (
                    ResponseError::TopicAlreadyExists.code(),
                    "Topic 'exists' already exists.".to_string()
                )
            );
        }
    }
}

#[tokio::test]
async fn configs_are_altered_whole_or_incrementally_as_kafka_alters_them() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    assert_eq!(
        create(&mut client, "altered", &[("retention.ms", "1000")], false)
            .await
            .0,
        0
    );
    // AlterConfigs replaces every override.
    let request =
        AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s("altered"))
            .with_configs(vec![AlterableConfig::default()
                .with_name(s("segment.ms"))
                .with_value(Some(s("5000")))])]);
    let response = expect_kind!(
        client.call(ApiKey::AlterConfigs, 2, request).await,
        AlterConfigs
    );
    assert_eq!(response.responses[0].error_code, 0);
    let entries = describe(&mut client, 2, "altered").await;
    assert_eq!(
        value_and_source(&entries, "segment.ms"),
        ("5000".into(), DYNAMIC_TOPIC)
    );
    assert_eq!(
        value_and_source(&entries, "retention.ms"),
        ("604800000".into(), DEFAULT)
    );
    // Incremental: SET, DELETE, APPEND and SUBTRACT on lists, validate_only changes nothing.
    let ops = [
        ("min.insync.replicas", SET, Some("3")),
        ("segment.ms", DELETE, None),
        (
            "leader.replication.throttled.replicas",
            APPEND,
            Some("0:1,1:1"),
        ),
    ];
    assert_eq!(incremental(&mut client, "altered", &ops, false).await.0, 0);
    let subtract = [(
        "leader.replication.throttled.replicas",
        SUBTRACT,
        Some("0:1"),
    )];
    assert_eq!(
        incremental(&mut client, "altered", &subtract, false)
            .await
            .0,
        0
    );
    let checked = [("message.timestamp.type", SET, Some("LogAppendTime"))];
    assert_eq!(
        incremental(&mut client, "altered", &checked, true).await.0,
        0
    );
    let entries = describe(&mut client, 2, "altered").await;
    assert_eq!(
        value_and_source(&entries, "min.insync.replicas"),
        ("3".into(), DYNAMIC_TOPIC)
    );
    assert_eq!(
        value_and_source(&entries, "segment.ms"),
        ("604800000".into(), DEFAULT)
    );
    assert_eq!(
        value_and_source(&entries, "leader.replication.throttled.replicas"),
        ("1:1".into(), DYNAMIC_TOPIC)
    );
    assert_eq!(
        value_and_source(&entries, "message.timestamp.type"),
        ("CreateTime".into(), DEFAULT)
    );
    let refused = [
        (
            ("retention.ms", APPEND, Some("5")),
            "Can't APPEND to key retention.ms because its type is not LIST.",
        ),
        (("nope", SET, Some("1")), "Unknown topic config name: nope"),
        (
            ("retention.ms", SET, Some("-5")),
            "Invalid value -5 for configuration retention.ms: Value must be at least -1",
        ),
    ];
    for (op, message) in refused {
        let (code, got) = incremental(&mut client, "altered", &[op], false).await;
        assert_eq!(code, ResponseError::InvalidConfig.code(), "{op:?}");
        assert!(got.contains(message), "{got}");
    }
    let null = incremental(
        &mut client,
        "altered",
        &[("retention.ms", SET, None)],
        false,
    )
    .await;
    assert_eq!(
        null,
        (
            ResponseError::InvalidRequest.code(),
            "Null value not supported for : retention.ms".into()
        )
    );
    let twice = [
        ("retention.ms", SET, Some("1")),
        ("retention.ms", DELETE, None),
    ];
    assert_eq!(
        incremental(&mut client, "altered", &twice, false).await.0,
        ResponseError::InvalidRequest.code()
    );
}

#[tokio::test]
async fn broker_defaults_are_described_with_kafkas_sources_and_synonyms() {
    let broker = TestBroker::start(&[
        "--log-retention-ms",
        "5000",
        "--log-retention-hours",
        "2",
        "--compression-type",
        "lz4",
        "--log-roll-hours",
        "3",
    ])
    .await;
    let mut client = broker.client().await;
    assert_eq!(create(&mut client, "defaulted", &[], false).await.0, 0);
    let entries = describe(&mut client, 2, "defaulted").await;
    let retention = entry(&entries, "retention.ms");
    assert_eq!(
        (retention.value.as_deref(), retention.config_source),
        (Some("5000"), STATIC_BROKER)
    );
    assert_eq!(
        synonyms(retention),
        [
            syn("log.retention.ms", "5000", STATIC_BROKER),
            syn("log.retention.hours", "2", STATIC_BROKER),
            syn("log.retention.hours", "168", DEFAULT),
        ]
    );
    assert_eq!(
        value_and_source(&entries, "compression.type"),
        ("lz4".into(), STATIC_BROKER)
    );
    // As in Kafka: only a lower synonym (log.roll.hours) is set, so the source is DEFAULT.
    let segment = entry(&entries, "segment.ms");
    assert_eq!(
        (segment.value.as_deref(), segment.config_source),
        (Some("10800000"), DEFAULT)
    );
    assert!(segment.synonyms.is_empty());
    let broker_entries = describe(&mut client, 4, "1").await;
    assert_eq!(
        value_and_source(&broker_entries, "log.retention.ms"),
        ("5000".into(), STATIC_BROKER)
    );
    assert_eq!(
        value_and_source(&broker_entries, "log.retention.minutes"),
        ("null".into(), DEFAULT)
    );
    let hours = entry(&broker_entries, "log.roll.hours");
    assert_eq!(
        synonyms(hours),
        [
            syn("log.roll.hours", "3", STATIC_BROKER),
            syn("log.roll.hours", "168", DEFAULT)
        ]
    );
    assert!(broker_entries.iter().all(|e| e.read_only));
    assert_eq!(
        value_and_source(&broker_entries, "num.partitions"),
        ("1".into(), STATIC_BROKER)
    );
}

#[tokio::test]
async fn log_append_time_is_stamped_into_the_batch_and_seen_by_fetch_and_list_offsets() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    let configs = [
        ("message.timestamp.type", "LogAppendTime"),
        ("message.timestamp.before.max.ms", "1"),
    ];
    assert_eq!(create(&mut client, "stamped", &configs, false).await.0, 0);
    let before = now_ms();
    // Far in the past: the bounds do not apply to log append time.
    let response = produce(
        &mut client,
        "stamped",
        encode(&records(&[1_000, 2_000]), Compression::Lz4),
    )
    .await;
    let after = now_ms();
    assert_eq!(response.error_code, 0);
    let stamped = response.log_append_time_ms;
    assert!((before..=after).contains(&stamped), "{stamped}");
    let fetched = fetch(&mut client, "stamped").await;
    assert_eq!(
        attributes(&fetched) & 0x08,
        0x08,
        "timestamp type LogAppendTime"
    );
    assert_eq!(
        attributes(&fetched) & 0x07,
        3,
        "the producer's codec is kept"
    );
    assert_eq!(max_timestamp(&fetched), stamped);
    let decoded = RecordBatchDecoder::decode(&mut fetched.clone()).unwrap();
    assert_eq!(decoded.records.len(), 2);
    assert_eq!(
        list_offset(&mut client, "stamped", stamped).await,
        (0, stamped)
    );
    assert_eq!(list_offset(&mut client, "stamped", stamped + 1).await.0, -1);
    // A CreateTime topic answers -1.
    assert_eq!(create(&mut client, "created", &[], false).await.0, 0);
    let created = produce(
        &mut client,
        "created",
        encode(&records(&[now_ms()]), Compression::None),
    )
    .await;
    assert_eq!((created.error_code, created.log_append_time_ms), (0, -1));
}

#[tokio::test]
async fn timestamps_out_of_bounds_refuse_the_whole_batch() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    assert_eq!(
        create(
            &mut client,
            "bounded",
            &[("message.timestamp.before.max.ms", "60000")],
            false
        )
        .await
        .0,
        0
    );
    let now = now_ms();
    for (timestamps, compression) in [
        (vec![now, now - 3_600_000, now], Compression::None),
        (vec![now, now - 3_600_000], Compression::Gzip),
        (vec![now, now + 7_200_000], Compression::None),
        (vec![now, now + 7_200_000], Compression::Snappy),
    ] {
        let response = produce(
            &mut client,
            "bounded",
            encode(&records(&timestamps), compression),
        )
        .await;
        assert_eq!(
            response.error_code,
            ResponseError::InvalidTimestamp.code(),
            "{timestamps:?} {compression:?}"
        );
        assert_eq!(
            response.error_message.as_deref(),
            Some("One or more records have been rejected due to invalid timestamp")
        );
        assert_eq!(response.record_errors.len(), 1);
        let error = &response.record_errors[0];
        assert_eq!(error.batch_index, 1, "the second record");
        assert!(error
            .batch_index_error_message
            .as_deref()
            .unwrap()
            .contains("is out of range"));
        assert_eq!(
            list_offset(&mut client, "bounded", -1).await.0,
            0,
            "nothing stored"
        );
    }
    let ok = produce(
        &mut client,
        "bounded",
        encode(&records(&[now, now - 1000, -1]), Compression::None),
    )
    .await;
    assert_eq!(ok.error_code, 0);
}

#[tokio::test]
async fn a_topic_codec_reencodes_every_batch_with_its_crc() {
    let broker = TestBroker::start(&["--compression-type", "gzip"]).await;
    let mut client = broker.client().await;
    let now = now_ms();
    let cases = [
        ("to-gzip", vec![], Compression::None, 1),
        ("zstd-to-gzip", vec![], Compression::Zstd, 1),
        (
            "to-lz4",
            vec![("compression.type", "lz4")],
            Compression::Snappy,
            3,
        ),
        (
            "to-plain",
            vec![("compression.type", "uncompressed")],
            Compression::Gzip,
            0,
        ),
        (
            "kept",
            vec![("compression.type", "producer")],
            Compression::Snappy,
            2,
        ),
    ];
    for (topic, configs, sent, stored) in cases {
        assert_eq!(create(&mut client, topic, &configs, false).await.0, 0);
        let sent_records = records(&[now, now + 1, now + 2]);
        let response = produce(&mut client, topic, encode(&sent_records, sent)).await;
        assert_eq!(response.error_code, 0, "{topic}");
        let fetched = fetch(&mut client, topic).await;
        assert_eq!(attributes(&fetched) & 0x07, stored, "{topic}");
        // The decoder checks the CRC.
        let decoded = RecordBatchDecoder::decode(&mut fetched.clone()).unwrap();
        let values: Vec<_> = decoded
            .records
            .iter()
            .map(|r| (r.offset, r.timestamp, r.value.clone()))
            .collect();
        let expected: Vec<_> = sent_records
            .iter()
            .map(|r| (r.offset, r.timestamp, r.value.clone()))
            .collect();
        assert_eq!(values, expected, "{topic}");
    }
}
