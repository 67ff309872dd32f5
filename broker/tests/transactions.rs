//! Transactions end to end on in-process brokers: timeouts, fencing, a coordinator that died
//! after deciding, and markers of a partition writer that left the cluster.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{create_topic, name, s, txn_batch, Client, TestBroker};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

/// Timeouts are looked for every 100 ms here.
const BROKER_ARGS: &[&str] = &[
    "--compaction",
    "false",
    "--transaction-abort-timed-out-transaction-cleanup-interval-ms",
    "100",
];

macro_rules! expect_kind {
    ($response:expr, $kind:ident) => {
        match $response {
            ResponseKind::$kind(r) => r,
            other => panic!("expected {}, got {other:?}", stringify!($kind)),
        }
    };
}

fn code(error: ResponseError) -> i16 {
    error.code()
}

/// InitProducerId, retried while the coordinator aborts what a previous instance left open.
async fn init(client: &mut Client, id: &str, timeout_ms: i32) -> (i64, i16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(s(id))))
            .with_transaction_timeout_ms(timeout_ms);
        let response = expect_kind!(
            client.call(ApiKey::InitProducerId, 4, request).await,
            InitProducerId
        );
        if response.error_code == 0 {
            return (response.producer_id.0, response.producer_epoch);
        }
        assert_eq!(
            response.error_code,
            code(ResponseError::ConcurrentTransactions)
        );
        assert!(Instant::now() < deadline, "init of {id} never completed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn add_partition(
    client: &mut Client,
    id: &str,
    producer: (i64, i16),
    topic: &str,
    partition: i32,
) -> i16 {
    let request = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(TransactionalId(s(id)))
        .with_v3_and_below_producer_id(ProducerId(producer.0))
        .with_v3_and_below_producer_epoch(producer.1)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![partition])]);
    let response = expect_kind!(
        client.call(ApiKey::AddPartitionsToTxn, 3, request).await,
        AddPartitionsToTxn
    );
    response.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
}

async fn produce(
    client: &mut Client,
    id: Option<&str>,
    topic: &str,
    partition: i32,
    batch: Bytes,
) -> i16 {
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_transactional_id(id.map(|id| TransactionalId(s(id))))
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(batch))])]);
    let response = expect_kind!(client.call(ApiKey::Produce, 9, request).await, Produce);
    response.responses[0].partition_responses[0].error_code
}

async fn end_txn(client: &mut Client, id: &str, producer: (i64, i16), commit: bool) -> i16 {
    let request = EndTxnRequest::default()
        .with_transactional_id(TransactionalId(s(id)))
        .with_producer_id(ProducerId(producer.0))
        .with_producer_epoch(producer.1)
        .with_committed(commit);
    expect_kind!(client.call(ApiKey::EndTxn, 3, request).await, EndTxn).error_code
}

async fn fetch_committed(client: &mut Client, topic: &str, partition: i32) -> PartitionData {
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_isolation_level(1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(0)
                .with_log_start_offset(-1)
                .with_partition_max_bytes(1 << 20)])]);
    let response = expect_kind!(client.call(ApiKey::Fetch, 12, request).await, Fetch);
    response.responses[0].partitions[0].clone()
}

/// Polls until the partition's last stable offset reaches its high watermark.
async fn settled(client: &mut Client, topic: &str, partition: i32) -> PartitionData {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let data = fetch_committed(client, topic, partition).await;
        if data.last_stable_offset == data.high_watermark {
            return data;
        }
        assert!(
            Instant::now() < deadline,
            "the partition never settled: {data:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn aborted_producers(data: &PartitionData) -> Vec<i64> {
    let aborted = data.aborted_transactions.clone().unwrap_or_default();
    aborted.iter().map(|a| a.producer_id.0).collect()
}

#[tokio::test]
async fn a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "slow", 1).await;
    let producer = init(&mut client, "slow-tx", 500).await;
    assert_eq!(
        add_partition(&mut client, "slow-tx", producer, "slow", 0).await,
        0
    );
    let batch = txn_batch(producer, 0, &["a", "b"]);
    assert_eq!(
        produce(&mut client, Some("slow-tx"), "slow", 0, batch).await,
        0
    );
    let open = fetch_committed(&mut client, "slow", 0).await;
    assert_eq!((open.last_stable_offset, open.high_watermark), (0, 2));
    let aborted = settled(&mut client, "slow", 0).await;
    assert_eq!(aborted_producers(&aborted), vec![producer.0]);
    assert_eq!(
        aborted.high_watermark, 3,
        "two records and the abort marker"
    );
    let fenced = end_txn(&mut client, "slow-tx", producer, true).await;
    assert_eq!(fenced, code(ResponseError::ProducerFenced));
}

#[tokio::test]
async fn a_new_instance_fences_the_zombie_and_aborts_what_it_left_open() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "fenced", 1).await;
    let zombie = init(&mut client, "fenced-tx", 60_000).await;
    assert_eq!(
        add_partition(&mut client, "fenced-tx", zombie, "fenced", 0).await,
        0
    );
    let batch = txn_batch(zombie, 0, &["zombie-1"]);
    assert_eq!(
        produce(&mut client, Some("fenced-tx"), "fenced", 0, batch).await,
        0
    );

    let fresh = init(&mut client, "fenced-tx", 60_000).await;
    assert_eq!(
        fresh,
        (zombie.0, zombie.1 + 2),
        "fenced once, then the new instance's epoch"
    );
    let late = txn_batch(zombie, 1, &["zombie-2"]);
    let refused = produce(&mut client, Some("fenced-tx"), "fenced", 0, late).await;
    assert_eq!(refused, code(ResponseError::InvalidProducerEpoch));
    let refused = add_partition(&mut client, "fenced-tx", zombie, "fenced", 0).await;
    assert_eq!(refused, code(ResponseError::ProducerFenced));

    assert_eq!(
        add_partition(&mut client, "fenced-tx", fresh, "fenced", 0).await,
        0
    );
    let batch = txn_batch(fresh, 0, &["fresh"]);
    assert_eq!(
        produce(&mut client, Some("fenced-tx"), "fenced", 0, batch).await,
        0
    );
    assert_eq!(end_txn(&mut client, "fenced-tx", fresh, true).await, 0);
    let data = settled(&mut client, "fenced", 0).await;
    assert_eq!(
        aborted_producers(&data),
        vec![zombie.0],
        "the zombie's record is aborted"
    );
}

#[tokio::test]
async fn a_transactional_batch_needs_its_transactional_id_and_an_added_partition() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "strict", 2).await;
    let producer = init(&mut client, "strict-tx", 60_000).await;
    let batch = txn_batch(producer, 0, &["x"]);
    let refused = produce(&mut client, None, "strict", 0, batch.clone()).await;
    assert_eq!(refused, code(ResponseError::InvalidRecord));
    assert_eq!(
        add_partition(&mut client, "strict-tx", producer, "strict", 0).await,
        0
    );
    let refused = produce(&mut client, Some("strict-tx"), "strict", 1, batch.clone()).await;
    assert_eq!(
        refused,
        code(ResponseError::InvalidTxnState),
        "partition 1 was not added"
    );
    assert_eq!(
        produce(&mut client, Some("strict-tx"), "strict", 0, batch).await,
        0
    );
    assert_eq!(end_txn(&mut client, "strict-tx", producer, false).await, 0);
}

#[tokio::test]
async fn a_decided_transaction_left_by_its_coordinator_is_completed_by_the_sweep() {
    use broker::transactions::records::Status;
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "orphan", 1).await;
    let producer = init(&mut client, "orphan-tx", 60_000).await;
    assert_eq!(
        add_partition(&mut client, "orphan-tx", producer, "orphan", 0).await,
        0
    );
    let batch = txn_batch(producer, 0, &["kept"]);
    assert_eq!(
        produce(&mut client, Some("orphan-tx"), "orphan", 0, batch).await,
        0
    );
    // What a coordinator that died right after deciding leaves behind: PrepareCommit stored.
    let txns = &broker.running.broker.transactions;
    let (mut state, version) = txns.load("orphan-tx").await.unwrap().unwrap();
    state.status = Status::PrepareCommit;
    txns.store("orphan-tx", &state, Some(version))
        .await
        .unwrap();

    let data = settled(&mut client, "orphan", 0).await;
    assert!(aborted_producers(&data).is_empty());
    assert_eq!(data.high_watermark, 2, "the record and its commit marker");
    let deadline = Instant::now() + Duration::from_secs(20);
    while txns.load("orphan-tx").await.unwrap().unwrap().0.status != Status::CompleteCommit {
        assert!(Instant::now() < deadline, "never completed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `broker`'s view of the cluster has `members` brokers.
async fn members_become(broker: &broker::app::Running, members: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while broker.broker.membership.placement().members().len() != members {
        assert!(
            Instant::now() < deadline,
            "membership never reached {members}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn markers_of_a_writer_that_left_the_cluster_are_written_by_the_partitions_new_leader() {
    let first = TestBroker::start(BROKER_ARGS).await;
    let mut args = BROKER_ARGS.to_vec();
    args.extend(["--broker-id", "2"]);
    let second = common::start_in(&first.dir, &args).await;
    members_become(&first.running, 2).await;
    members_become(&second, 2).await;
    let mut client = first.client().await;
    create_topic(&mut client, "handover", 8).await;
    // A transactional id the first broker coordinates, a partition the second one leads.
    let placement = first.running.broker.membership.placement();
    let id = (0..)
        .map(|i| format!("handover-{i}"))
        .find(|id| placement.transaction_coordinator(id).broker_id == 1)
        .unwrap();
    let partition = (0..8)
        .find(|p| placement.partition_leader("handover", *p, None).broker_id == 2)
        .expect("some partition led by the second broker");
    let producer = init(&mut client, &id, 60_000).await;
    assert_eq!(
        add_partition(&mut client, &id, producer, "handover", partition).await,
        0
    );
    let mut on_second = Client::connect(second.local_addr).await;
    let batch = txn_batch(producer, 0, &["v"]);
    assert_eq!(
        produce(&mut on_second, Some(&id), "handover", partition, batch).await,
        0
    );
    drop(on_second);
    second.shutdown().await;
    members_become(&first.running, 1).await;

    assert_eq!(end_txn(&mut client, &id, producer, false).await, 0);
    let data = settled(&mut client, "handover", partition).await;
    assert_eq!(aborted_producers(&data), vec![producer.0]);
    assert_eq!(data.high_watermark, 2, "the record and the abort marker");
}
