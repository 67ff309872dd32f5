//! One broker and one connection per API's test, recording every `(api, version)` that was
//! sent and answered.

use std::collections::BTreeSet;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use protocol::codec;

use crate::common::{create_topic, Client, TestBroker};

/// No initial rebalance delay and short sessions keep group scenarios quick; without
/// in-process compaction only DeleteRecords moves a log start.
const BROKER_ARGS: &[&str] = &[
    "--group-initial-rebalance-delay-ms",
    "0",
    "--group-min-session-timeout-ms",
    "500",
    "--compaction",
    "false",
    "--sasl-enabled-mechanisms",
    "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "--connections-max-reauth-ms",
    "60000",
];

pub struct Ctx {
    pub broker: TestBroker,
    client: Client,
    sent: BTreeSet<(i16, i16)>,
}

impl Ctx {
    pub async fn start() -> Ctx {
        Ctx::start_with(&[]).await
    }

    /// A broker started with `extra_args` besides the usual ones.
    pub async fn start_with(extra_args: &[&str]) -> Ctx {
        let args: Vec<&str> = BROKER_ARGS.iter().chain(extra_args).copied().collect();
        let broker = TestBroker::start(&args).await;
        let client = broker.client().await;
        Ctx {
            broker,
            client,
            sent: BTreeSet::new(),
        }
    }

    /// Sends a request and returns the decoded answer (the harness checks the correlation id).
    pub async fn call(
        &mut self,
        api: ApiKey,
        version: i16,
        body: impl Into<RequestKind>,
    ) -> ResponseKind {
        let response = self.client.call(api, version, body).await;
        self.sent.insert((api as i16, version));
        response
    }

    /// Sends a request that gets no answer (Produce with acks=0). It counts as served once a
    /// later request on this connection is answered, which [`Self::call`] checks.
    pub async fn send_unanswered(
        &mut self,
        api: ApiKey,
        version: i16,
        body: impl Into<RequestKind>,
    ) {
        let header = self.client.header(api, version);
        let frame = codec::encode_request(&header, &body.into()).unwrap();
        self.client.send_raw(&frame).await;
        self.sent.insert((api as i16, version));
    }

    /// Creates `topic` (the test fails otherwise); returns its id.
    pub async fn create_topic(&mut self, topic: &str, partitions: i32) -> uuid::Uuid {
        create_topic(&mut self.client, topic, partitions).await
    }

    /// Another connection to the same broker (for requests that must run side by side).
    pub async fn connect(&self) -> Client {
        self.broker.client().await
    }

    pub fn clear_sent(&mut self) {
        self.sent.clear();
    }

    pub fn sent(&self, api: ApiKey, version: i16) -> bool {
        self.sent.contains(&(api as i16, version))
    }
}

/// Names the API and version under test when a scenario fails.
pub struct Announce {
    pub api: ApiKey,
    pub version: i16,
}

impl Drop for Announce {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("failed while exercising {:?} v{}", self.api, self.version);
        }
    }
}
