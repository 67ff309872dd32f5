//! The idempotent producer at the protocol level: InitProducerId, duplicates answered with
//! their original offset, sequence gaps and fencing, and state kept across a restart.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::{create_topic, encode_batch, name, s, Client, TestBroker};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::records::{Record, TimestampType};
use kafka_protocol::ResponseError;

const TOPIC: &str = "idem";

fn batch(producer_id: i64, epoch: i16, base_sequence: i32, count: i32) -> Bytes {
    let records: Vec<Record> = (0..count)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id,
            producer_epoch: epoch,
            sequence: base_sequence + i,
            timestamp_type: TimestampType::Creation,
            offset: i64::from(i),
            timestamp: 1_700_000_000_000 + i64::from(i),
            key: None,
            value: Some(Bytes::from(format!("v{}", base_sequence + i))),
            headers: Default::default(),
        })
        .collect();
    encode_batch(&records)
}

async fn init_producer_id(client: &mut Client, transactional_id: Option<&str>) -> (i16, i64, i16) {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(transactional_id.map(|t| TransactionalId(s(t))))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let response = expect_kind!(
        client.call(ApiKey::InitProducerId, 4, request).await,
        InitProducerId
    );
    (
        response.error_code,
        response.producer_id.0,
        response.producer_epoch,
    )
}

/// Produces one batch; returns (error code, base offset).
async fn produce(client: &mut Client, records: Bytes) -> (i16, i64) {
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(TOPIC))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(records))])]);
    let response = expect_kind!(client.call(ApiKey::Produce, 9, request).await, Produce);
    let partition = &response.responses[0].partition_responses[0];
    (partition.error_code, partition.base_offset)
}

#[tokio::test]
async fn init_producer_id_gives_fresh_ids_and_bumps_the_epoch_of_transactional_ids() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    let (error, first, epoch) = init_producer_id(&mut client, None).await;
    assert_eq!((error, epoch), (0, 0));
    let (_, second, _) = init_producer_id(&mut client, None).await;
    assert_ne!(first, second);
    let (error, id, epoch) = init_producer_id(&mut client, Some("tx-1")).await;
    assert_eq!((error, epoch), (0, 0));
    assert!(id > second, "a fresh id for a new transactional id");
    let again = init_producer_id(&mut client, Some("tx-1")).await;
    assert_eq!(again, (0, id, 1), "the same id, the next epoch");

    // Every listed version answers with a fresh id.
    let (min, max) = protocol::versions::supported_range(ApiKey::InitProducerId).unwrap();
    for version in min..=max {
        let mut request = InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_transaction_timeout_ms(60_000);
        if version >= 3 {
            request = request
                .with_producer_id(ProducerId(second))
                .with_producer_epoch(0);
        }
        let response = expect_kind!(
            client.call(ApiKey::InitProducerId, version, request).await,
            InitProducerId
        );
        assert_eq!(response.error_code, 0, "v{version}");
        assert!(response.producer_id.0 > second, "v{version}");
    }

    let broker = broker.restart(&[]).await;
    let mut client = broker.client().await;
    let (_, after_restart, _) = init_producer_id(&mut client, None).await;
    assert!(after_restart != first && after_restart != second);
}

#[tokio::test]
async fn a_retried_batch_returns_its_original_offset_and_is_written_once() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    create_topic(&mut client, TOPIC, 1).await;
    let (_, pid, _) = init_producer_id(&mut client, None).await;

    assert_eq!(produce(&mut client, batch(pid, 0, 0, 3)).await, (0, 0));
    assert_eq!(produce(&mut client, batch(pid, 0, 3, 2)).await, (0, 3));
    // Retries of either batch answer with the first write's offset.
    assert_eq!(produce(&mut client, batch(pid, 0, 0, 3)).await, (0, 0));
    assert_eq!(produce(&mut client, batch(pid, 0, 3, 2)).await, (0, 3));
    // A gap is refused.
    let (error, _) = produce(&mut client, batch(pid, 0, 9, 1)).await;
    assert_eq!(error, ResponseError::OutOfOrderSequenceNumber.code());
    // Nothing was written twice: the next batch lands right after the first two.
    assert_eq!(produce(&mut client, batch(pid, 0, 5, 1)).await, (0, 5));
    // A new epoch fences the old one.
    assert_eq!(produce(&mut client, batch(pid, 1, 0, 1)).await, (0, 6));
    let (error, _) = produce(&mut client, batch(pid, 0, 6, 1)).await;
    assert_eq!(error, ResponseError::InvalidProducerEpoch.code());
    // A producer without ids is unaffected.
    assert_eq!(produce(&mut client, batch(-1, -1, -1, 2)).await, (0, 7));
}

#[tokio::test]
async fn producer_state_is_rebuilt_from_the_log_after_a_restart() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    create_topic(&mut client, TOPIC, 1).await;
    let (_, pid, _) = init_producer_id(&mut client, None).await;
    assert_eq!(produce(&mut client, batch(pid, 0, 0, 3)).await, (0, 0));
    assert_eq!(produce(&mut client, batch(pid, 0, 3, 3)).await, (0, 3));
    drop(client);

    let broker = broker.restart(&[]).await;
    let mut client = broker.client().await;
    assert_eq!(produce(&mut client, batch(pid, 0, 3, 3)).await, (0, 3));
    assert_eq!(produce(&mut client, batch(pid, 0, 0, 3)).await, (0, 0));
    let (error, _) = produce(&mut client, batch(pid, 0, 7, 1)).await;
    assert_eq!(error, ResponseError::OutOfOrderSequenceNumber.code());
    assert_eq!(produce(&mut client, batch(pid, 0, 6, 2)).await, (0, 6));
}
