//! Connection behaviour: ordered pipelined responses, malformed input closing only the offending
//! connection, bounded memory, and Debian's kcat (librdkafka 2.0.2) getting through the handshake.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and times of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod common;

use common::{Client, TestBroker};
use kafka_protocol::messages::*;
use tokio::io::AsyncWriteExt;

/// An ApiVersions v0 request: header v1 (key 18, version 0, correlation 9, client id "t").
const API_VERSIONS_V0: [u8; 15] = [0, 0, 0, 11, 0, 18, 0, 0, 0, 0, 0, 9, 0, 1, b't'];

async fn assert_still_serving(broker: &TestBroker) {
    let mut client = broker.client().await;
    let response = client
        .call(ApiKey::ApiVersions, 0, ApiVersionsRequest::default())
        .await;
    assert_eq!(expect_kind!(response, ApiVersions).error_code, 0);
}

async fn assert_closed(client: &mut Client) {
    assert!(
        client.read_raw().await.is_none(),
        "the broker should close this connection"
    );
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    let mut expected = Vec::new();
    for i in 0..40 {
        let (key, version, body): (ApiKey, i16, RequestKind) = if i % 2 == 0 {
            (
                ApiKey::Metadata,
                12,
                MetadataRequest::default().with_topics(None).into(),
            )
        } else {
            (
                ApiKey::ApiVersions,
                3,
                ApiVersionsRequest::default()
                    .with_client_software_name(common::s("t"))
                    .with_client_software_version(common::s("1"))
                    .into(),
            )
        };
        let header = client.header(key, version);
        expected.push((header.correlation_id, key, version));
        let frame = protocol::codec::encode_request(&header, &body).unwrap();
        client.send_raw(&frame).await;
    }
    for (correlation_id, key, version) in expected {
        let raw = client.read_raw().await.unwrap();
        let (header, _) = protocol::codec::decode_response(key, version, raw).unwrap();
        assert_eq!(header.correlation_id, correlation_id);
    }
}

#[tokio::test]
async fn unknown_api_key_closes_only_that_connection() {
    let broker = TestBroker::start(&[]).await;
    let mut bad = broker.client().await;
    bad.send_raw(&[0, 0, 0, 10, 0x03, 0xe7, 0, 0, 0, 0, 0, 1, 0xff, 0xff])
        .await;
    assert_closed(&mut bad).await;
    assert_still_serving(&broker).await;
}

#[tokio::test]
async fn unsupported_version_of_another_api_closes_the_connection() {
    let broker = TestBroker::start(&[]).await;
    let mut bad = broker.client().await;
    // Metadata v99.
    bad.send_raw(&[0, 0, 0, 10, 0, 3, 0, 99, 0, 0, 0, 1, 0xff, 0xff])
        .await;
    assert_closed(&mut bad).await;
    assert_still_serving(&broker).await;
}

#[tokio::test]
async fn oversized_frame_closes_the_connection_without_reading_it() {
    let broker = TestBroker::start(&["--max-frame-bytes", "4096"]).await;
    let mut bad = broker.client().await;
    bad.send_raw(&100_000_000i32.to_be_bytes()).await;
    assert_closed(&mut bad).await;
    let mut negative = broker.client().await;
    negative.send_raw(&(-1i32).to_be_bytes()).await;
    assert_closed(&mut negative).await;
    assert_still_serving(&broker).await;
}

#[tokio::test]
async fn truncated_frame_and_garbage_after_a_header_close_the_connection() {
    let broker = TestBroker::start(&[]).await;
    let mut truncated = broker.client().await;
    truncated.send_raw(&[0, 0, 0, 100, 0, 18, 0, 0]).await;
    truncated.stream.shutdown().await.unwrap();
    assert_closed(&mut truncated).await;

    // A valid Metadata v1 header followed by bytes that are not a Metadata body.
    let mut garbage = broker.client().await;
    garbage
        .send_raw(&[
            0, 0, 0, 14, 0, 3, 0, 1, 0, 0, 0, 1, 0, 1, b'x', 0xde, 0xad, 0xbe,
        ])
        .await;
    assert_closed(&mut garbage).await;

    // A valid ApiVersions v0 followed by extra bytes is answered, as Kafka does.
    let mut trailing = broker.client().await;
    let mut frame = API_VERSIONS_V0.to_vec();
    frame[3] += 3;
    frame.extend_from_slice(b"xyz");
    trailing.send_raw(&frame).await;
    let answer = trailing.read_raw().await.expect("an ApiVersions response");
    assert_eq!(&answer[..4], &[0, 0, 0, 9], "correlation id of the request");

    assert_still_serving(&broker).await;
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn huge_array_counts_are_rejected_and_memory_stays_flat() {
    let broker = TestBroker::start(&[]).await;
    // Metadata v1 announcing 2^31-1 topics in a 15-byte frame: once enough to abort the process.
    let frame = [
        0, 0, 0, 11, 0, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0x7f, 0xff, 0xff, 0xff,
    ];
    let mut frame = frame.to_vec();
    frame[3] = (frame.len() - 4) as u8;
    let warm_up = broker.client().await;
    drop(warm_up);
    let before_kib = rss_kib();
    for _ in 0..300 {
        let mut bad = broker.client().await;
        bad.send_raw(&frame).await;
        assert_closed(&mut bad).await;
    }
    let after_kib = rss_kib();
    assert!(
        after_kib < before_kib + 64 * 1024,
        "rss grew from {before_kib} KiB to {after_kib} KiB"
    );
    assert_still_serving(&broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debian_kcat_lists_metadata() {
    let broker = TestBroker::start(&["--broker-id", "4"]).await;
    let mut client = broker.client().await;
    let create = CreateTopicsRequest::default().with_topics(vec![
        create_topics_request::CreatableTopic::default()
            .with_name(common::name("kcat-topic"))
            .with_num_partitions(3)
            .with_replication_factor(1),
    ]);
    let response = expect_kind!(
        client.call(ApiKey::CreateTopics, 5, create).await,
        CreateTopics
    );
    assert_eq!(response.topics[0].error_code, 0);
    let bootstrap = broker.addr().to_string();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("kcat")
            .args(["-b", &bootstrap, "-L", "-m", "10"])
            .output()
            .expect("kcat must be installed (see the repository's install script)")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "kcat failed: {stderr}");
    assert!(
        stdout.contains(&format!("broker 4 at {}", broker.addr())),
        "{stdout}"
    );
    assert!(
        stdout.contains("topic \"kcat-topic\" with 3 partitions"),
        "{stdout}"
    );
}
