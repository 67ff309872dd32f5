//! Test harness: an in-process broker on a free loopback port with its own data directory, and
//! a minimal Kafka client speaking the protocol through `protocol::codec`.

#![allow(dead_code)]

pub mod pki;
pub mod scram_client;

use std::net::SocketAddr;
use std::time::Duration;

use broker::app::{self, Running};
use broker::config::Config;
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, RequestHeader, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};
use protocol::codec;
use protocol::frame;
use tempfile::TempDir;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use uuid::Uuid;

pub struct TestBroker {
    pub running: Running,
    pub dir: TempDir,
}

impl TestBroker {
    pub async fn start(extra_args: &[&str]) -> TestBroker {
        let dir = tempfile::tempdir().unwrap();
        let running = start_in(&dir, extra_args).await;
        TestBroker { running, dir }
    }

    /// A broker on a data directory prepared beforehand (e.g. by `broker scram set`).
    pub async fn start_on(dir: TempDir, extra_args: &[&str]) -> TestBroker {
        let running = start_in(&dir, extra_args).await;
        TestBroker { running, dir }
    }

    pub fn addr(&self) -> SocketAddr {
        self.running.local_addr
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.addr()).await
    }

    /// Stops the broker and starts a new one on the same data directory.
    pub async fn restart(self, extra_args: &[&str]) -> TestBroker {
        let TestBroker { running, dir } = self;
        running.shutdown().await;
        let running = start_in(&dir, extra_args).await;
        TestBroker { running, dir }
    }
}

/// A broker on `dir`, which another broker of this process may use too: they share the
/// embedded metadata store (and its notifications) and the object store, as brokers of one
/// cluster do.
pub async fn start_in(dir: &TempDir, extra_args: &[&str]) -> Running {
    let data_dir = dir.path().to_str().unwrap().to_string();
    let mut args = vec!["broker", "--data-dir", &data_dir];
    // A test that names its listeners does without the one of `--listen`.
    if !extra_args.contains(&"--listeners") {
        args.extend(["--listen", "127.0.0.1:0"]);
    }
    args.extend_from_slice(extra_args);
    let config = Config::load_from(args).unwrap();
    app::start(config).await.unwrap()
}

/// Sends one request on any stream (plain TCP or TLS); the response body, or `None` once the
/// broker closed the connection.
pub async fn call_on<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    api_key: ApiKey,
    version: i16,
    body: impl Into<RequestKind>,
) -> Option<ResponseKind> {
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(StrBytes::from_static_str("broker-tests")));
    let frame = codec::encode_request(&header, &body.into()).unwrap();
    stream.write_all(&frame).await.ok()?;
    let read = tokio::time::timeout(Duration::from_secs(10), frame::read_frame(stream, 64 << 20))
        .await
        .expect("no response within 10 s");
    let response = read.ok().flatten()?;
    let (header, body) = codec::decode_response(api_key, version, response).unwrap();
    assert_eq!(header.correlation_id, 7);
    Some(body)
}

pub struct Client {
    pub stream: TcpStream,
    next_correlation_id: i32,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        Client {
            stream: TcpStream::connect(addr).await.unwrap(),
            next_correlation_id: 1,
        }
    }

    pub fn header(&mut self, api_key: ApiKey, version: i16) -> RequestHeader {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        RequestHeader::default()
            .with_request_api_key(api_key as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("broker-tests")))
    }

    /// Sends a request and returns the response body, checking the correlation id.
    pub async fn call(
        &mut self,
        api_key: ApiKey,
        version: i16,
        body: impl Into<RequestKind>,
    ) -> ResponseKind {
        let header = self.header(api_key, version);
        let correlation_id = header.correlation_id;
        let frame = codec::encode_request(&header, &body.into()).unwrap();
        self.stream.write_all(&frame).await.unwrap();
        let response = self
            .read_raw()
            .await
            .expect("connection closed instead of answering");
        let (header, body) = codec::decode_response(api_key, version, response).unwrap();
        assert_eq!(header.correlation_id, correlation_id);
        body
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// The next response frame, or `None` once the broker closed the connection.
    pub async fn read_raw(&mut self) -> Option<Bytes> {
        let read = tokio::time::timeout(
            Duration::from_secs(10),
            frame::read_frame(&mut self.stream, 64 << 20),
        )
        .await
        .expect("no response within 10 s");
        read.ok().flatten()
    }
}

/// Unwraps a response of the expected kind.
#[macro_export]
macro_rules! expect_kind {
    ($response:expr, $kind:ident) => {
        match $response {
            kafka_protocol::messages::ResponseKind::$kind(body) => body,
            other => panic!("expected {} response, got {:?}", stringify!($kind), other),
        }
    };
}

pub fn name(value: &str) -> kafka_protocol::messages::TopicName {
    kafka_protocol::messages::TopicName(StrBytes::from_string(value.to_string()))
}

pub fn s(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

/// Creates `topic` with `partitions` partitions (the test fails otherwise); returns its id.
pub async fn create_topic(client: &mut Client, topic: &str, partitions: i32) -> Uuid {
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(-1)]);
    let response = expect_kind!(
        client.call(ApiKey::CreateTopics, 7, request).await,
        CreateTopics
    );
    assert_eq!(response.topics[0].error_code, 0);
    response.topics[0].topic_id
}

/// A transactional batch of `values` from `producer` (id, epoch), sequences from
/// `first_sequence`, stamped now.
pub fn txn_batch(producer: (i64, i16), first_sequence: i32, values: &[&str]) -> Bytes {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, value)| Record {
            transactional: true,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: producer.0,
            producer_epoch: producer.1,
            sequence: first_sequence + i32::try_from(i).unwrap(),
            timestamp_type: kafka_protocol::records::TimestampType::Creation,
            offset: i64::try_from(i).unwrap(),
            timestamp: i64::try_from(now).unwrap(),
            key: None,
            value: Some(Bytes::from(value.to_string())),
            headers: Default::default(),
        })
        .collect();
    encode_batch(&records)
}

/// One uncompressed v2 record batch holding `records`.
pub fn encode_batch(records: &[Record]) -> Bytes {
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records,
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .unwrap();
    buf.freeze()
}
