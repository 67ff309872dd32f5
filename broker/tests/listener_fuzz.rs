//! Fuzzing of what a listener reads before a client is known, through a real broker: random
//! bytes and mutations of valid first flights (a TLS ClientHello, ApiVersions, SaslHandshake v0
//! and v1, SaslAuthenticate, raw PLAIN tokens) sent to PLAINTEXT, SSL, SASL_PLAINTEXT and
//! SASL_SSL listeners, and the same SASL frames mutated inside a completed TLS session. Nothing
//! may panic anywhere in the process, and the broker must keep serving: after every batch a
//! PLAIN client authenticates on both SASL listeners and ApiVersions is answered in clear.
//!
//! CI runs a bounded number of batches (`PROPTEST_CASES`, default 48 here, 8 connections each,
//! each read cut after 150 ms); `scripts/fuzz-sasl.sh` runs many more.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::pki::{self, Ca, Files};
use common::{call_on, TestBroker};
use kafka_protocol::messages::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use protocol::codec;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls;

const LISTENERS: [&str; 4] = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];
const READ_CUT: Duration = Duration::from_millis(150);

static PANICS: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, bit: u8 },
    Insert { at: usize, byte: u8 },
    Delete { at: usize },
    Truncate { at: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Insert { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Delete { at }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

fn mutate(message: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut out = message.to_vec();
    for m in mutations {
        let len = out.len();
        match *m {
            Mutation::Flip { at, bit } if len > 0 => out[at % len] ^= 1 << bit,
            Mutation::Insert { at, byte } => out.insert(at % (len + 1), byte),
            Mutation::Delete { at } if len > 0 => {
                out.remove(at % len);
            }
            Mutation::Truncate { at } => out.truncate(at % (len + 1)),
            _ => {}
        }
    }
    out
}

/// One connection of a batch: where it goes and what it sends.
#[derive(Debug, Clone)]
enum Input {
    /// Bytes straight onto the TCP connection of listener `listener`.
    Raw { listener: usize, bytes: Vec<u8> },
    /// A mutated first flight onto listener `listener`.
    Mutated {
        listener: usize,
        seed: usize,
        mutations: Vec<Mutation>,
    },
    /// A TLS session with the SASL_SSL listener, then mutated SASL frames inside it.
    InsideTls {
        seed: usize,
        mutations: Vec<Mutation>,
    },
}

fn input(seeds: usize) -> impl Strategy<Value = Input> {
    let mutations = || proptest::collection::vec(mutation(), 1..5);
    prop_oneof![
        (
            0..LISTENERS.len(),
            proptest::collection::vec(any::<u8>(), 0..600)
        )
            .prop_map(|(listener, bytes)| Input::Raw { listener, bytes }),
        (0..LISTENERS.len(), 0..seeds, mutations()).prop_map(|(listener, seed, mutations)| {
            Input::Mutated {
                listener,
                seed,
                mutations,
            }
        }),
        (0..seeds, mutations()).prop_map(|(seed, mutations)| Input::InsideTls { seed, mutations }),
    ]
}

fn frame(api_key: ApiKey, version: i16, body: impl Into<RequestKind>) -> Vec<u8> {
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(common::s("fuzz")));
    codec::encode_request(&header, &body.into())
        .unwrap()
        .to_vec()
}

fn handshake(version: i16) -> Vec<u8> {
    let body = SaslHandshakeRequest::default().with_mechanism(common::s("PLAIN"));
    frame(ApiKey::SaslHandshake, version, body)
}

fn authenticate(token: &[u8]) -> Vec<u8> {
    let body = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(token));
    frame(ApiKey::SaslAuthenticate, 2, body)
}

/// Valid first flights: what real clients send before they are authenticated.
fn seeds(ca: &Ca) -> Vec<Vec<u8>> {
    let api_versions = frame(ApiKey::ApiVersions, 3, ApiVersionsRequest::default());
    let token = b"\0alice\0alice-secret";
    let raw_token = broker::security::sasl::raw_token_frame(token).to_vec();
    vec![
        client_hello(ca),
        api_versions.clone(),
        [api_versions, handshake(1), authenticate(token)].concat(),
        [handshake(1), authenticate(b"n,,n=alice,r=fuzznonce")].concat(),
        [handshake(0), raw_token].concat(),
        frame(ApiKey::Metadata, 12, MetadataRequest::default()),
    ]
}

/// The first bytes a rustls client sends: its ClientHello.
fn client_hello(ca: &Ca) -> Vec<u8> {
    let config = pki::client_config(ca, None, None);
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut client = rustls::ClientConnection::new(config, name).unwrap();
    let mut hello = Vec::new();
    client.write_tls(&mut hello).unwrap();
    hello
}

/// Writes, then reads what comes back until the broker closes or the cut: errors are outcomes.
async fn poke<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S, bytes: &[u8]) {
    if stream.write_all(bytes).await.is_err() {
        return;
    }
    let mut sink = vec![0u8; 64 << 10];
    let _ = tokio::time::timeout(READ_CUT, async {
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

struct Target {
    broker: TestBroker,
    ca: Ca,
    _files: Files,
    _users: tempfile::TempDir,
    seeds: Vec<Vec<u8>>,
}

impl Target {
    async fn start() -> Target {
        let users = tempfile::tempdir().unwrap();
        let file = users.path().join("users");
        std::fs::write(&file, "alice:alice-secret\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let ca = Ca::new("fuzz ca");
        let files = Files::write(&ca, &ca.server("broker"));
        let listeners = LISTENERS
            .iter()
            .map(|name| format!("{name}://127.0.0.1:0"))
            .collect::<Vec<_>>()
            .join(",");
        let mut args: Vec<String> = [
            "--listeners",
            &listeners,
            "--sasl-enabled-mechanisms",
            "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "--sasl-plain-users-file",
            file.to_str().unwrap(),
            "--frame-read-timeout-ms",
            "500",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        args.extend(files.args());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let broker = TestBroker::start(&args).await;
        let seeds = seeds(&ca);
        Target {
            broker,
            ca,
            _files: files,
            _users: users,
            seeds,
        }
    }

    fn addr(&self, listener: usize) -> SocketAddr {
        self.broker
            .running
            .listener_addr(LISTENERS[listener])
            .unwrap()
    }

    async fn send(&self, input: Input) {
        let (listener, bytes) = match input {
            Input::Raw { listener, bytes } => (listener, bytes),
            Input::Mutated {
                listener,
                seed,
                mutations,
            } => (listener, mutate(&self.seeds[seed], &mutations)),
            Input::InsideTls { seed, mutations } => {
                let config = pki::client_config(&self.ca, None, None);
                if let Ok(mut tls) = pki::connect(self.addr(3), config).await {
                    poke(&mut tls, &mutate(&self.seeds[seed], &mutations)).await;
                }
                return;
            }
        };
        if let Ok(mut tcp) = TcpStream::connect(self.addr(listener)).await {
            poke(&mut tcp, &bytes).await;
        }
    }

    /// The broker still serves: ApiVersions in clear, PLAIN on both SASL listeners.
    async fn assert_serving(&self) {
        let mut plain = TcpStream::connect(self.addr(0)).await.unwrap();
        let answer = call_on(
            &mut plain,
            ApiKey::ApiVersions,
            3,
            ApiVersionsRequest::default(),
        );
        assert!(answer.await.is_some(), "ApiVersions not answered");
        let mut sasl = TcpStream::connect(self.addr(2)).await.unwrap();
        assert!(
            plain_login(&mut sasl).await,
            "PLAIN refused on SASL_PLAINTEXT"
        );
        let config = pki::client_config(&self.ca, None, None);
        let mut tls = pki::connect(self.addr(3), config).await.unwrap();
        assert!(plain_login(&mut tls).await, "PLAIN refused on SASL_SSL");
    }
}

async fn plain_login<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) -> bool {
    let body = SaslHandshakeRequest::default().with_mechanism(common::s("PLAIN"));
    if call_on(stream, ApiKey::SaslHandshake, 1, body)
        .await
        .is_none()
    {
        return false;
    }
    let body = SaslAuthenticateRequest::default()
        .with_auth_bytes(Bytes::from_static(b"\0alice\0alice-secret"));
    match call_on(stream, ApiKey::SaslAuthenticate, 2, body).await {
        Some(ResponseKind::SaslAuthenticate(r)) => r.error_code == 0,
        _ => false,
    }
}

#[test]
fn mangled_first_flights_never_panic_and_the_broker_keeps_serving() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let target = Arc::new(runtime.block_on(Target::start()));
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(48);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let batch = proptest::collection::vec(input(target.seeds.len()), 8);
    let result = runner.run(&batch, |inputs| {
        runtime.block_on(async {
            let sends = inputs.into_iter().map(|input| {
                let target = target.clone();
                tokio::spawn(async move { target.send(input).await })
            });
            for send in sends.collect::<Vec<_>>() {
                send.await.unwrap();
            }
            target.assert_serving().await;
        });
        prop_assert_eq!(PANICS.load(Ordering::SeqCst), 0);
        Ok(())
    });
    result.unwrap();
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "something panicked");
}
