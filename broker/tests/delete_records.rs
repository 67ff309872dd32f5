//! DeleteRecords at every listed version, and the log start offset it moves as Fetch and
//! ListOffsets report it.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and times of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod common;

use bytes::Bytes;
use common::{create_topic, encode_batch, name, Client, TestBroker};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::records::{Record, TimestampType};
use kafka_protocol::ResponseError;
use protocol::versions::supported_range;

const TOPIC: &str = "trimmed";
const RECORDS_PER_BATCH: i64 = 5;
/// In-process compaction (and so retention) stays off: only DeleteRecords moves the log start.
const BROKER_ARGS: &[&str] = &["--compaction", "false"];

fn batch(first: i64) -> Bytes {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let records: Vec<Record> = (0..RECORDS_PER_BATCH)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            // kafka-protocol's encoder starts a new batch whenever offset minus sequence
            // changes; a partition's records must be one batch (base sequence -1 here).
            sequence: i as i32 - 1,
            timestamp_type: TimestampType::Creation,
            offset: i,
            timestamp: now_ms,
            key: None,
            value: Some(Bytes::from(format!("v{}", first + i))),
            headers: Default::default(),
        })
        .collect();
    encode_batch(&records)
}

async fn setup(client: &mut Client, batches: i64) {
    create_topic(client, TOPIC, 1).await;
    for n in 0..batches {
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(name(TOPIC))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch(n * RECORDS_PER_BATCH)))])]);
        let response = expect_kind!(client.call(ApiKey::Produce, 9, request).await, Produce);
        assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
    }
}

/// (error code, low watermark) of one partition.
async fn delete_records(
    client: &mut Client,
    version: i16,
    topic: &str,
    partition: i32,
    offset: i64,
) -> (i16, i64) {
    let request = DeleteRecordsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![DeleteRecordsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![DeleteRecordsPartition::default()
                .with_partition_index(partition)
                .with_offset(offset)])]);
    let response = expect_kind!(
        client.call(ApiKey::DeleteRecords, version, request).await,
        DeleteRecords
    );
    assert_eq!(&*response.topics[0].name.0, topic);
    let p = &response.topics[0].partitions[0];
    assert_eq!(p.partition_index, partition);
    (p.error_code, p.low_watermark)
}

/// (error code, log start offset, base offset of the first batch returned).
async fn fetch(client: &mut Client, offset: i64) -> (i16, i64, Option<i64>) {
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(TOPIC))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(offset)
                .with_log_start_offset(-1)
                .with_partition_max_bytes(1 << 20)])]);
    let response = expect_kind!(client.call(ApiKey::Fetch, 12, request).await, Fetch);
    let p = &response.responses[0].partitions[0];
    let first_base = p
        .records
        .as_ref()
        .filter(|r| r.len() >= 8)
        .map(|r| i64::from_be_bytes(r[..8].try_into().unwrap()));
    (p.error_code, p.log_start_offset, first_base)
}

async fn earliest(client: &mut Client) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(TOPIC))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(-2)])]);
    let response = expect_kind!(
        client.call(ApiKey::ListOffsets, 7, request).await,
        ListOffsets
    );
    let p = &response.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    p.offset
}

#[tokio::test]
async fn delete_records_moves_the_log_start_at_every_version() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    setup(&mut client, 4).await;
    let (min, max) = supported_range(ApiKey::DeleteRecords).unwrap();
    assert_eq!((min, max), (0, 2));
    // v0 to offset 3, v1 to 7 (inside batches: whole batches are still returned), v2 to 12.
    for (version, offset) in (min..=max).zip([3i64, 7, 12]) {
        assert_eq!(
            delete_records(&mut client, version, TOPIC, 0, offset).await,
            (0, offset),
            "v{version}"
        );
        assert_eq!(earliest(&mut client).await, offset);
        let (error, log_start, _) = fetch(&mut client, offset - 1).await;
        assert_eq!(error, ResponseError::OffsetOutOfRange.code());
        assert_eq!(log_start, offset);
        let (error, log_start, first_base) = fetch(&mut client, offset).await;
        assert_eq!((error, log_start), (0, offset));
        let base = first_base.expect("records from the log start");
        assert!(base <= offset && offset < base + RECORDS_PER_BATCH);
    }
}

#[tokio::test]
async fn delete_records_refuses_offsets_past_the_end_and_ignores_ones_below_the_start() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    setup(&mut client, 2).await;
    assert_eq!(delete_records(&mut client, 2, TOPIC, 0, 4).await, (0, 4));
    assert_eq!(
        delete_records(&mut client, 2, TOPIC, 0, 11).await,
        (ResponseError::OffsetOutOfRange.code(), -1)
    );
    assert_eq!(
        delete_records(&mut client, 2, TOPIC, 0, -7).await,
        (ResponseError::OffsetOutOfRange.code(), -1)
    );
    assert_eq!(delete_records(&mut client, 1, TOPIC, 0, 2).await, (0, 4));
    // -1 means the high watermark: everything goes, the next append continues at 10.
    assert_eq!(delete_records(&mut client, 0, TOPIC, 0, -1).await, (0, 10));
    assert_eq!(earliest(&mut client).await, 10);
    let (error, log_start, first_base) = fetch(&mut client, 10).await;
    assert_eq!((error, log_start, first_base), (0, 10, None));
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    assert_eq!(
        delete_records(&mut client, 2, "nope", 0, 1).await,
        (unknown, -1)
    );
    assert_eq!(
        delete_records(&mut client, 2, TOPIC, 3, 1).await,
        (unknown, -1)
    );
}
