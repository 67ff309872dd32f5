//! A Fetch over many partitions shares its `max_bytes` as Kafka does, in partition order: each
//! partition gets whole batches up to its `partition_max_bytes` of what the earlier ones left,
//! the first partition with data gets at least one batch, and a partition left nothing still
//! reports its high watermark. Read cold (after a restart) and warm, since cold partitions are
//! read at the same time and cut to the budget afterwards.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::{create_topic, name, Client, TestBroker};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::records::{Record, TimestampType};
use record_batch::split_batches;

const TOPIC: &str = "budget";
/// Partitions with data; partition 0 stays empty, so the first one with data is partition 1.
const PARTITIONS: i32 = 7;
/// Batches produced to each partition with data.
const BATCHES: i64 = 3;

fn batch(partition: i32, n: usize) -> Bytes {
    common::encode_batch(&[Record {
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
        // The same length for every batch.
        value: Some(Bytes::from(format!(
            "p{partition}-b{n}-{}",
            "x".repeat(300)
        ))),
        headers: Default::default(),
    }])
}

async fn produce(client: &mut Client, partition: i32, records: Bytes) {
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(TOPIC))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])]);
    let response = expect_kind!(client.call(ApiKey::Produce, 9, request).await, Produce);
    assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
}

/// (batches, high watermark) per partition of one Fetch of every partition from offset 0.
async fn fetch(client: &mut Client, max_bytes: i32, partition_max_bytes: i32) -> Vec<(usize, i64)> {
    let partitions = (0..PARTITIONS)
        .map(|p| {
            FetchPartition::default()
                .with_partition(p)
                .with_fetch_offset(0)
                .with_log_start_offset(-1)
                .with_partition_max_bytes(partition_max_bytes)
        })
        .collect();
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(max_bytes)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(TOPIC))
            .with_partitions(partitions)]);
    let response = expect_kind!(client.call(ApiKey::Fetch, 12, request).await, Fetch);
    let mut out = vec![(0, -1); PARTITIONS as usize];
    for p in &response.responses[0].partitions {
        assert_eq!(p.error_code, 0);
        let records = p.records.clone().unwrap_or_default();
        let batches = split_batches(records).unwrap().len();
        out[usize::try_from(p.partition_index).unwrap()] = (batches, p.high_watermark);
    }
    out
}

async fn check_shares(client: &mut Client, len: i32) {
    let all = |n: usize| {
        std::iter::once((0, 0))
            .chain(std::iter::repeat_n((n, BATCHES), PARTITIONS as usize - 1))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        fetch(client, 1 << 20, 1 << 20).await,
        all(3),
        "room for all"
    );
    assert_eq!(
        fetch(client, 1 << 20, 2 * len + len / 2).await,
        all(2),
        "whole batches per partition"
    );
    assert_eq!(
        fetch(client, 5 * len, 1 << 20).await,
        vec![(0, 0), (3, 3), (2, 3), (0, 3), (0, 3), (0, 3), (0, 3)],
        "the response budget runs out in partition order"
    );
    assert_eq!(
        fetch(client, 10, 10).await,
        vec![(0, 0), (1, 3), (0, 3), (0, 3), (0, 3), (0, 3), (0, 3)],
        "the first partition with data gets one batch whatever the limits"
    );
    assert_eq!(
        fetch(client, 1 << 20, 10).await,
        vec![(0, 0), (1, 3), (0, 3), (0, 3), (0, 3), (0, 3), (0, 3)],
        "only the first partition with data may exceed its partition limit"
    );
    assert_eq!(
        fetch(client, 4 * len, 2 * len).await,
        vec![(0, 0), (2, 3), (2, 3), (0, 3), (0, 3), (0, 3), (0, 3)],
        "both limits at once"
    );
}

#[tokio::test]
async fn a_fetch_shares_its_byte_budget_across_partitions_in_order_cold_and_warm() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    create_topic(&mut client, TOPIC, PARTITIONS).await;
    let len = i32::try_from(batch(1, 0).len()).unwrap();
    for n in 0..3 {
        for partition in 1..PARTITIONS {
            let records = batch(partition, n);
            assert_eq!(i32::try_from(records.len()).unwrap(), len);
            produce(&mut client, partition, records).await;
        }
    }
    check_shares(&mut client, len).await;

    let broker = broker.restart(&[]).await;
    let mut client = broker.client().await;
    check_shares(&mut client, len).await;
    broker.running.shutdown().await;
}
