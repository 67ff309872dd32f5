//! Connection limits: idle connections and slow frames are closed, request bytes in flight
//! are bounded across connections, one address gets at most its share of connections, and
//! thousands of silent connections cannot lock a working client out.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and times of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod common;

use std::time::{Duration, Instant};

use common::{Client, TestBroker};
use kafka_protocol::messages::*;
use tokio::net::TcpStream;

/// An ApiVersions v0 request: header v1 (key 18, version 0, correlation 9, client id "t").
const API_VERSIONS_V0: [u8; 15] = [0, 0, 0, 11, 0, 18, 0, 0, 0, 0, 0, 9, 0, 1, b't'];

async fn api_versions_ok(client: &mut Client) -> bool {
    client.send_raw(&API_VERSIONS_V0).await;
    client.read_raw().await.is_some()
}

/// Whether the broker closes `client` within `within` (reading nothing else first).
async fn closed_within(client: &mut Client, within: Duration) -> bool {
    let mut buf = [0u8; 64];
    match tokio::time::timeout(within, client.stream.readable()).await {
        Err(_) => false,
        Ok(_) => matches!(client.stream.try_read(&mut buf), Ok(0) | Err(_)),
    }
}

#[tokio::test]
async fn an_idle_connection_is_closed_and_a_busy_one_is_not() {
    let broker = TestBroker::start(&["--connections-max-idle-ms", "300"]).await;
    let mut idle = broker.client().await;
    let mut busy = broker.client().await;
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(900) {
        assert!(
            api_versions_ok(&mut busy).await,
            "a busy connection stays open"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(closed_within(&mut idle, Duration::from_secs(5)).await);
    assert!(api_versions_ok(&mut busy).await);
}

#[tokio::test]
async fn a_frame_that_stops_arriving_closes_its_connection() {
    let broker = TestBroker::start(&["--frame-read-timeout-ms", "300"]).await;
    // Half a length prefix, then nothing.
    let mut stalled_len = broker.client().await;
    stalled_len.send_raw(&[0, 0]).await;
    // A whole length prefix and part of the body.
    let mut stalled_body = broker.client().await;
    stalled_body.send_raw(&[0, 0, 0, 100, 0, 18, 0, 0]).await;
    assert!(closed_within(&mut stalled_len, Duration::from_secs(5)).await);
    assert!(closed_within(&mut stalled_body, Duration::from_secs(5)).await);
    assert!(api_versions_ok(&mut broker.client().await).await);
}

/// A Produce v8 request for a topic that does not exist, padded to about `bytes` with one
/// record value, so that it is answered (UNKNOWN_TOPIC_OR_PARTITION) once it was read.
fn big_produce(client: &mut Client, bytes: usize) -> Vec<u8> {
    let batch = common::encode_batch(&[kafka_protocol::records::Record {
        transactional: false,
        control: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: kafka_protocol::records::TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: 0,
        key: None,
        value: Some(bytes::Bytes::from(vec![7u8; bytes])),
        headers: Default::default(),
        delete_horizon: false,
    }]);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(common::name("no-such-topic"))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch)),
            ])]);
    let header = client.header(ApiKey::Produce, 8);
    protocol::codec::encode_request(&header, &request.into())
        .unwrap()
        .to_vec()
}

/// A broker whose request-byte budget is 2 MiB, with frames up to 1.5 MiB.
async fn small_budget_broker(stall_ms: &str) -> TestBroker {
    let mib = 1 << 20;
    TestBroker::start(&[
        "--max-frame-bytes",
        &(3 * mib / 2).to_string(),
        "--queued-max-request-bytes",
        &(2 * mib).to_string(),
        "--frame-stall-timeout-ms",
        stall_ms,
    ])
    .await
}

/// 21 steps of 64 KiB (1.3 MiB): a frame that sent 20 of them holds all it will need.
const ANNOUNCED_BYTES: usize = 21 * STEP_BYTES;
const STEP_BYTES: usize = 64 << 10;

#[tokio::test]
async fn request_bytes_in_flight_are_bounded_across_connections() {
    let broker = small_budget_broker("60000").await;
    // A announces 1.3 MiB and sends all but its last step: the whole frame is taken.
    let mut a = broker.client().await;
    a.send_raw(&(ANNOUNCED_BYTES as i32).to_be_bytes()).await;
    a.send_raw(&vec![0u8; ANNOUNCED_BYTES - STEP_BYTES]).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // B's 1 MiB request does not fit in what is left: it is not read whole until A is done.
    let mut b = broker.client().await;
    let frame = big_produce(&mut b, 1 << 20);
    b.send_raw(&frame).await;
    let early = tokio::time::timeout(Duration::from_millis(700), b.stream.readable()).await;
    assert!(early.is_err(), "b was answered while a held the budget");
    // A's frame completes (garbage: A is closed), its bytes are released, B is answered.
    a.send_raw(&vec![0u8; STEP_BYTES]).await;
    assert_unknown_topic(b.read_raw().await.expect("b is answered once a is done"));
}

fn assert_unknown_topic(response: bytes::Bytes) {
    let (_, body) = protocol::codec::decode_response(ApiKey::Produce, 8, response).unwrap();
    let produce = expect_kind!(body, Produce);
    assert_eq!(
        produce.responses[0].partition_responses[0].error_code,
        kafka_protocol::ResponseError::UnknownTopicOrPartition.code()
    );
}

#[tokio::test]
async fn frames_declared_but_not_sent_hold_almost_nothing_of_the_budget() {
    // Before: three connections declaring 1.3 MiB each held the whole 2 MiB budget.
    let broker = small_budget_broker("60000").await;
    let mut silent = Vec::new();
    for _ in 0..3 {
        let mut client = broker.client().await;
        client
            .send_raw(&(ANNOUNCED_BYTES as i32).to_be_bytes())
            .await;
        silent.push(client);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut b = broker.client().await;
    let frame = big_produce(&mut b, 1 << 20);
    b.send_raw(&frame).await;
    let answer = tokio::time::timeout(Duration::from_secs(10), b.read_raw());
    assert_unknown_topic(answer.await.unwrap().expect("b is answered"));
    drop(silent);
}

#[tokio::test]
async fn a_stalled_frame_holding_the_budget_gives_way_to_a_waiting_request() {
    let broker = small_budget_broker("300").await;
    let mut a = broker.client().await;
    a.send_raw(&(ANNOUNCED_BYTES as i32).to_be_bytes()).await;
    a.send_raw(&vec![0u8; ANNOUNCED_BYTES - STEP_BYTES]).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut b = broker.client().await;
    let frame = big_produce(&mut b, 1 << 20);
    b.send_raw(&frame).await;
    // A sends nothing more: after the stall timeout it gives way, and B is served.
    let answer = tokio::time::timeout(Duration::from_secs(10), b.read_raw());
    assert_unknown_topic(answer.await.unwrap().expect("b is answered"));
    assert!(closed_within(&mut a, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn one_address_gets_at_most_max_connections_per_ip() {
    let broker = TestBroker::start(&["--max-connections-per-ip", "2"]).await;
    let mut first = broker.client().await;
    let mut second = broker.client().await;
    let mut third = broker.client().await;
    assert!(closed_within(&mut third, Duration::from_secs(5)).await);
    assert!(api_versions_ok(&mut first).await);
    assert!(api_versions_ok(&mut second).await);
    drop(first);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(api_versions_ok(&mut broker.client().await).await);
}

/// Raises this process's open-file limit as far as allowed; the limit afterwards.
fn raise_open_files() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed by reference.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        limit.rlim_cur = limit.rlim_max.min(65_536);
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
    }
    limit.rlim_cur
}

/// The bound this test promises: a client arriving after 10,000 silent connections is
/// answered within it.
const LOCKOUT_BOUND: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_silent_connections_do_not_lock_a_new_client_out() {
    let broker = TestBroker::start(&[]).await;
    // Client and server ends of 1,024 served connections live in this process.
    let silent = 10_000.min(raise_open_files().saturating_sub(2_000) as usize);
    assert!(silent >= 2_000, "open-file limit too low for this test");
    let addr = broker.addr();
    let mut held = Vec::with_capacity(silent);
    for chunk in 0..silent.div_ceil(500) {
        let n = 500.min(silent - chunk * 500);
        let connects = (0..n).map(|_| TcpStream::connect(addr));
        for stream in futures::future::join_all(connects).await {
            held.push(stream.expect("connect"));
        }
    }
    let started = Instant::now();
    let mut client = Client::connect(addr).await;
    let answered = tokio::time::timeout(LOCKOUT_BOUND, api_versions_ok(&mut client)).await;
    let waited = started.elapsed();
    println!("{silent} silent connections: a new client was answered after {waited:?}");
    assert!(
        matches!(answered, Ok(true)),
        "not answered within {LOCKOUT_BOUND:?}"
    );
    drop(held);
}
