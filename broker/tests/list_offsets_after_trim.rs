//! ListOffsets by timestamp once DeleteRecords moved the log start into the middle of what one
//! produce request wrote. Kafka answers the first record at or after the time among the
//! records still in the log, skipping batches that lie below the log start.

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
use common::{create_topic, encode_batch, name, TestBroker};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::records::{Record, TimestampType};

const TOPIC: &str = "trimmed-by-time";

/// Three records at `t0`, `t0 + 1`, `t0 + 2` in one batch (the encoder keeps records together
/// while `offset - sequence` stays the same).
fn three_records(t0: i64) -> Bytes {
    let records: Vec<Record> = (0..3)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            sequence: i as i32,
            timestamp_type: TimestampType::Creation,
            offset: i,
            timestamp: t0 + i,
            key: None,
            value: Some(Bytes::from(format!("v{i}"))),
            headers: Default::default(),
        })
        .collect();
    encode_batch(&records)
}

async fn offset_for_time(client: &mut common::Client, timestamp: i64) -> (i16, i64) {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(TOPIC))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(timestamp)])]);
    let response = expect_kind!(
        client.call(ApiKey::ListOffsets, 7, request).await,
        ListOffsets
    );
    let p = &response.topics[0].partitions[0];
    (p.error_code, p.offset)
}

#[tokio::test]
async fn a_time_before_the_log_start_finds_the_first_record_kept() {
    let broker = TestBroker::start(&["--compaction", "false"]).await;
    let mut client = broker.client().await;
    create_topic(&mut client, TOPIC, 1).await;
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 60_000;
    let produce = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(TOPIC))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(three_records(t0)))])]);
    let response = expect_kind!(client.call(ApiKey::Produce, 9, produce).await, Produce);
    assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
    assert_eq!(offset_for_time(&mut client, t0).await, (0, 0));

    let trim = DeleteRecordsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![DeleteRecordsTopic::default()
            .with_name(name(TOPIC))
            .with_partitions(vec![DeleteRecordsPartition::default()
                .with_partition_index(0)
                .with_offset(1)])]);
    let response = expect_kind!(
        client.call(ApiKey::DeleteRecords, 2, trim).await,
        DeleteRecords
    );
    assert_eq!(response.topics[0].partitions[0].error_code, 0);
    // The record at t0 is gone; the first one kept (offset 1, at t0 + 1) is the answer.
    assert_eq!(offset_for_time(&mut client, t0).await, (0, 1));
}
