//! SASL listeners through the connection layer: authentication before anything else is served,
//! the principal it names seen by the authorizer, the legacy raw-token exchange (SaslHandshake
//! v0), failures closing the connection while others are served, KIP-368 re-authentication,
//! the pre-authentication frame bound, SASL_SSL, and unauthenticated connections giving up
//! their slot.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use bytes::Bytes;
use common::pki::{self, Ca, Files};
use common::scram_client::ScramClient;
use common::{call_on, TestBroker};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use protocol::frame;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

const USERS: &str = "alice:alice-secret\nbob:bob-secret\n";

/// A broker with a PLAINTEXT and a SASL_PLAINTEXT listener, PLAIN users alice and bob, and
/// ACLs on: alice is a super user, bob may do nothing.
struct Setup {
    broker: TestBroker,
    _users: tempfile::TempDir,
}

impl Setup {
    async fn start(extra: &[&str]) -> Setup {
        let users = tempfile::tempdir().unwrap();
        let file = users.path().join("users");
        std::fs::write(&file, USERS).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let file = file.display().to_string();
        let mut args = vec![
            "--listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "--sasl-enabled-mechanisms",
            "PLAIN,SCRAM-SHA-512",
            "--sasl-plain-users-file",
            &file,
            "--authorizer",
            "acl",
            "--super-users",
            "User:alice",
        ];
        args.extend_from_slice(extra);
        let broker = TestBroker::start(&args).await;
        Setup {
            broker,
            _users: users,
        }
    }

    fn sasl(&self) -> SocketAddr {
        self.broker.running.listener_addr("SASL_PLAINTEXT").unwrap()
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.sasl()).await.unwrap()
    }

    /// A connection authenticated as `user` with PLAIN (SaslHandshake v1, SaslAuthenticate v2).
    async fn authenticated(&self, user: &str, password: &str) -> TcpStream {
        let mut stream = self.connect().await;
        let done = plain_login(&mut stream, user, password).await.unwrap();
        assert_eq!(done.error_code, 0, "{:?}", done.error_message);
        stream
    }
}

fn handshake(mechanism: &str) -> SaslHandshakeRequest {
    SaslHandshakeRequest::default().with_mechanism(common::s(mechanism))
}

fn plain_token(user: &str, password: &str) -> Bytes {
    Bytes::from(format!("\0{user}\0{password}"))
}

/// PLAIN through SaslHandshake v1 and SaslAuthenticate v2; `None` if the broker closed first.
async fn plain_login<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    user: &str,
    password: &str,
) -> Option<SaslAuthenticateResponse> {
    let answer = call_on(stream, ApiKey::SaslHandshake, 1, handshake("PLAIN")).await?;
    let answer = expect_kind!(answer, SaslHandshake);
    assert_eq!(answer.error_code, 0);
    let request = SaslAuthenticateRequest::default().with_auth_bytes(plain_token(user, password));
    let answer = call_on(stream, ApiKey::SaslAuthenticate, 2, request).await?;
    Some(expect_kind!(answer, SaslAuthenticate))
}

fn metadata() -> MetadataRequest {
    MetadataRequest::default().with_topics(None)
}

async fn served<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) -> bool {
    call_on(stream, ApiKey::Metadata, 12, metadata())
        .await
        .is_some()
}

/// Whether the broker closed `stream` (without sending anything) within a few seconds.
async fn closed_unanswered(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

async fn create_topic<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S, topic: &str) -> i16 {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(common::name(topic))
            .with_num_partitions(1)
            .with_replication_factor(1)])
        .with_timeout_ms(5000);
    let answer = call_on(stream, ApiKey::CreateTopics, 7, request)
        .await
        .unwrap();
    expect_kind!(answer, CreateTopics).topics[0].error_code
}

#[tokio::test]
async fn an_authenticated_client_is_served_as_its_user_by_the_authorizer() {
    let setup = Setup::start(&[]).await;
    let mut alice = setup.authenticated("alice", "alice-secret").await;
    assert_eq!(create_topic(&mut alice, "sasl-alice").await, 0);
    let mut bob = setup.authenticated("bob", "bob-secret").await;
    assert_eq!(
        create_topic(&mut bob, "sasl-bob").await,
        ResponseError::TopicAuthorizationFailed.code()
    );
    // The PLAINTEXT listener's clients are User:ANONYMOUS, who may not either.
    let mut anonymous = setup.broker.client().await;
    assert_eq!(
        create_topic(&mut anonymous.stream, "sasl-anonymous").await,
        ResponseError::TopicAuthorizationFailed.code()
    );
}

#[tokio::test]
async fn api_versions_lists_the_sasl_apis_before_authentication_on_sasl_listeners_only() {
    let setup = Setup::start(&[]).await;
    let request = ApiVersionsRequest::default();
    let mut sasl = setup.connect().await;
    let answer = call_on(&mut sasl, ApiKey::ApiVersions, 3, request.clone()).await;
    let keys: Vec<i16> = expect_kind!(answer.unwrap(), ApiVersions)
        .api_keys
        .iter()
        .map(|k| k.api_key)
        .collect();
    assert!(keys.contains(&(ApiKey::SaslHandshake as i16)));
    assert!(keys.contains(&(ApiKey::SaslAuthenticate as i16)));
    let mut plaintext = setup.broker.client().await;
    let answer = call_on(&mut plaintext.stream, ApiKey::ApiVersions, 3, request).await;
    let listed = expect_kind!(answer.unwrap(), ApiVersions).api_keys;
    assert!(!listed
        .iter()
        .any(|k| k.api_key == ApiKey::SaslHandshake as i16));
}

#[tokio::test]
async fn a_request_before_authentication_closes_the_connection_and_others_are_served() {
    let setup = Setup::start(&[]).await;
    let mut early = setup.connect().await;
    assert!(call_on(&mut early, ApiKey::Metadata, 12, metadata())
        .await
        .is_none());
    // After the handshake, still before SaslAuthenticate: the same.
    let mut midway = setup.connect().await;
    let answer = call_on(&mut midway, ApiKey::SaslHandshake, 1, handshake("PLAIN")).await;
    assert_eq!(expect_kind!(answer.unwrap(), SaslHandshake).error_code, 0);
    assert!(call_on(&mut midway, ApiKey::Metadata, 12, metadata())
        .await
        .is_none());
    let mut alice = setup.authenticated("alice", "alice-secret").await;
    assert!(served(&mut alice).await);
}

#[tokio::test]
async fn a_wrong_password_is_refused_then_the_connection_closes() {
    let setup = Setup::start(&[]).await;
    let mut stream = setup.connect().await;
    let answer = plain_login(&mut stream, "alice", "wrong").await.unwrap();
    assert_eq!(
        answer.error_code,
        ResponseError::SaslAuthenticationFailed.code()
    );
    assert_eq!(
        answer.error_message.as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
    assert!(closed_unanswered(&mut stream).await);
    let mut unknown = setup.connect().await;
    let answer = plain_login(&mut unknown, "mallory", "x").await.unwrap();
    assert_eq!(
        answer.error_code,
        ResponseError::SaslAuthenticationFailed.code()
    );
    let mut alice = setup.authenticated("alice", "alice-secret").await;
    assert!(served(&mut alice).await);
}

#[tokio::test]
async fn an_unknown_mechanism_is_refused_with_the_enabled_list() {
    let setup = Setup::start(&[]).await;
    let mut stream = setup.connect().await;
    let answer = call_on(&mut stream, ApiKey::SaslHandshake, 1, handshake("GSSAPI")).await;
    let answer = expect_kind!(answer.unwrap(), SaslHandshake);
    assert_eq!(
        answer.error_code,
        ResponseError::UnsupportedSaslMechanism.code()
    );
    let listed: Vec<&str> = answer.mechanisms.iter().map(|m| m.as_str()).collect();
    assert_eq!(listed, ["PLAIN", "SCRAM-SHA-512"]);
    assert!(closed_unanswered(&mut stream).await);
}

/// Writes one raw SASL token (length and bytes, no Kafka header) and reads the raw answer.
async fn raw_exchange(stream: &mut TcpStream, token: &[u8]) -> Option<Bytes> {
    stream
        .write_all(&broker::security::sasl::raw_token_frame(token))
        .await
        .ok()?;
    let read = tokio::time::timeout(Duration::from_secs(5), frame::read_frame(stream, 1 << 20));
    read.await.unwrap().ok().flatten()
}

#[tokio::test]
async fn the_v0_handshake_runs_the_unframed_token_exchange() {
    let setup = Setup::start(&[]).await;
    let mut stream = setup.connect().await;
    let answer = call_on(&mut stream, ApiKey::SaslHandshake, 0, handshake("PLAIN")).await;
    assert_eq!(expect_kind!(answer.unwrap(), SaslHandshake).error_code, 0);
    // PLAIN's answer is an empty token: a frame of length 0.
    let answer = raw_exchange(&mut stream, &plain_token("alice", "alice-secret")).await;
    assert!(answer.unwrap().is_empty());
    assert!(served(&mut stream).await);
    assert_eq!(create_topic(&mut stream, "sasl-raw").await, 0);

    // A failure in the raw exchange closes without a word.
    let mut wrong = setup.connect().await;
    let answer = call_on(&mut wrong, ApiKey::SaslHandshake, 0, handshake("PLAIN")).await;
    assert_eq!(expect_kind!(answer.unwrap(), SaslHandshake).error_code, 0);
    assert!(raw_exchange(&mut wrong, &plain_token("alice", "nope"))
        .await
        .is_none());
}

#[tokio::test]
async fn an_expired_session_is_closed_unless_the_client_reauthenticates() {
    let setup = Setup::start(&["--connections-max-reauth-ms", "1500"]).await;
    let mut lapsing = setup.connect().await;
    let done = plain_login(&mut lapsing, "alice", "alice-secret")
        .await
        .unwrap();
    assert_eq!(done.session_lifetime_ms, 1500);
    let mut renewing = setup.authenticated("alice", "alice-secret").await;
    assert!(served(&mut lapsing).await);
    tokio::time::sleep(Duration::from_millis(1700)).await;

    let renewed = plain_login(&mut renewing, "alice", "alice-secret")
        .await
        .unwrap();
    assert_eq!(renewed.error_code, 0, "{:?}", renewed.error_message);
    assert!(served(&mut renewing).await);
    // Re-authenticating as someone else is refused and closes.
    tokio::time::sleep(Duration::from_millis(1700)).await;
    let changed = plain_login(&mut renewing, "bob", "bob-secret")
        .await
        .unwrap();
    assert_eq!(
        changed.error_code,
        ResponseError::SaslAuthenticationFailed.code()
    );
    assert!(closed_unanswered(&mut renewing).await);

    assert!(call_on(&mut lapsing, ApiKey::Metadata, 12, metadata())
        .await
        .is_none());
}

#[tokio::test]
async fn a_frame_above_the_sasl_receive_bound_before_authentication_closes_the_connection() {
    let setup = Setup::start(&[]).await;
    let mut stream = setup.connect().await;
    let size = u32::try_from(broker::security::sasl::MAX_RECEIVE_BYTES + 1).unwrap();
    stream.write_all(&size.to_be_bytes()).await.unwrap();
    assert!(closed_unanswered(&mut stream).await);
    // Once authenticated, the listener's own frame limit applies: a Metadata request of
    // 600 KiB (2,500 long topic names) is read and answered.
    let mut alice = setup.authenticated("alice", "alice-secret").await;
    let topics = (0..2500)
        .map(|i| {
            metadata_request::MetadataRequestTopic::default()
                .with_name(Some(common::name(&format!("{i:0>249}"))))
        })
        .collect();
    let big = MetadataRequest::default()
        .with_topics(Some(topics))
        .with_allow_auto_topic_creation(false);
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::Metadata as i16)
        .with_request_api_version(12)
        .with_correlation_id(9);
    let frame = protocol::codec::encode_request(&header, &RequestKind::Metadata(big)).unwrap();
    assert!(frame.len() > broker::security::sasl::MAX_RECEIVE_BYTES);
    alice.write_all(&frame).await.unwrap();
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        frame::read_frame(&mut alice, 8 << 20),
    );
    assert!(answer.await.unwrap().unwrap().is_some());
}

#[tokio::test]
async fn unauthenticated_connections_give_their_slot_to_newcomers() {
    let setup = Setup::start(&["--max-connections", "3"]).await;
    // Every slot taken by connections that only asked ApiVersions.
    let mut silent = Vec::new();
    for _ in 0..3 {
        let mut stream = setup.connect().await;
        let answer = call_on(
            &mut stream,
            ApiKey::ApiVersions,
            3,
            ApiVersionsRequest::default(),
        );
        assert!(answer.await.is_some());
        silent.push(stream);
    }
    let mut alice = setup.authenticated("alice", "alice-secret").await;
    assert!(served(&mut alice).await);
    assert!(
        closed_unanswered(&mut silent[0]).await,
        "the oldest silent connection stays"
    );
    // An authenticated connection keeps its slot: the next newcomer takes another silent one.
    let mut bob = setup.authenticated("bob", "bob-secret").await;
    assert!(served(&mut bob).await);
    assert!(closed_unanswered(&mut silent[1]).await);
    assert!(served(&mut alice).await);
}

#[tokio::test]
async fn sasl_ssl_runs_the_tls_handshake_then_sasl() {
    let users = tempfile::tempdir().unwrap();
    let file = users.path().join("users");
    std::fs::write(&file, USERS).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ca = Ca::new("test ca");
    let files = Files::write(&ca, &ca.server("broker"));
    let mut args: Vec<String> = [
        "--listeners",
        "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "--sasl-enabled-mechanisms",
        "PLAIN",
        "--sasl-plain-users-file",
        file.to_str().unwrap(),
        "--ssl-client-auth",
        "requested",
        "--authorizer",
        "acl",
        "--super-users",
        "User:alice",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(files.args());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let broker = TestBroker::start(&args).await;
    let addr = broker.running.listener_addr("SASL_SSL").unwrap();

    // A certificate naming bob does not make the client bob: SASL names it.
    let bob_cert = ca.client("bob");
    let config = pki::client_config(&ca, Some(&bob_cert), None);
    let mut tls = pki::connect(addr, config.clone()).await.unwrap();
    assert!(call_on(&mut tls, ApiKey::Metadata, 12, metadata())
        .await
        .is_none());
    let mut tls = pki::connect(addr, config).await.unwrap();
    let done = plain_login(&mut tls, "alice", "alice-secret")
        .await
        .unwrap();
    assert_eq!(done.error_code, 0);
    assert_eq!(create_topic(&mut tls, "sasl-ssl").await, 0);

    // A plaintext client on the SASL_SSL port is refused by the TLS handshake.
    let mut plain = TcpStream::connect(addr).await.unwrap();
    assert!(plain_login(&mut plain, "alice", "alice-secret")
        .await
        .is_none());
}

/// A broker with a SASL_PLAINTEXT listener offering SCRAM-SHA-512, no authorizer, and `user`'s
/// credential stored through AlterUserScramCredentials on PLAINTEXT.
async fn scram_broker(user: &str, password: &str) -> TestBroker {
    let broker = TestBroker::start(&[
        "--listeners",
        "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "--sasl-enabled-mechanisms",
        "SCRAM-SHA-512",
    ])
    .await;
    let m = ScramClient::MECHANISM;
    let salt = b"socket-salt".to_vec();
    let salted = m.salted_password(password.as_bytes(), &salt, 4096).unwrap();
    let upsertion = alter_user_scram_credentials_request::ScramCredentialUpsertion::default()
        .with_name(common::s(user))
        .with_mechanism(m.type_code())
        .with_iterations(4096)
        .with_salt(Bytes::from(salt))
        .with_salted_password(Bytes::from(salted));
    let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![upsertion]);
    let mut admin = broker.client().await;
    let answer = admin
        .call(ApiKey::AlterUserScramCredentials, 0, request)
        .await;
    assert_eq!(
        expect_kind!(answer, AlterUserScramCredentials).results[0].error_code,
        0
    );
    broker
}

#[tokio::test]
async fn scram_authenticates_in_sasl_authenticate_frames_and_in_the_raw_exchange() {
    let broker = scram_broker("carol", "carol-secret").await;
    let addr = broker.running.listener_addr("SASL_PLAINTEXT").unwrap();
    let authenticate =
        |bytes: Vec<u8>| SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes));

    let mut framed = TcpStream::connect(addr).await.unwrap();
    let mut client = ScramClient::new("carol", "carol-secret");
    let answer = call_on(
        &mut framed,
        ApiKey::SaslHandshake,
        1,
        handshake("SCRAM-SHA-512"),
    )
    .await;
    assert_eq!(expect_kind!(answer.unwrap(), SaslHandshake).error_code, 0);
    let answer = call_on(
        &mut framed,
        ApiKey::SaslAuthenticate,
        2,
        authenticate(client.first()),
    );
    let server_first = expect_kind!(answer.await.unwrap(), SaslAuthenticate).auth_bytes;
    let last = client.last(&server_first, false);
    let answer = call_on(&mut framed, ApiKey::SaslAuthenticate, 2, authenticate(last));
    let done = expect_kind!(answer.await.unwrap(), SaslAuthenticate);
    assert_eq!(done.error_code, 0);
    assert!(client.verifies(&done.auth_bytes));
    assert!(served(&mut framed).await);

    let mut raw = TcpStream::connect(addr).await.unwrap();
    let mut client = ScramClient::new("carol", "carol-secret");
    let answer = call_on(
        &mut raw,
        ApiKey::SaslHandshake,
        0,
        handshake("SCRAM-SHA-512"),
    )
    .await;
    assert_eq!(expect_kind!(answer.unwrap(), SaslHandshake).error_code, 0);
    let server_first = raw_exchange(&mut raw, &client.first()).await.unwrap();
    let last = client.last(&server_first, false);
    let server_final = raw_exchange(&mut raw, &last).await.unwrap();
    assert!(client.verifies(&server_final));
    assert!(served(&mut raw).await);
}

#[tokio::test]
async fn a_scram_proof_with_one_bit_flipped_is_refused_in_both_exchanges() {
    let broker = scram_broker("carol", "carol-secret").await;
    let addr = broker.running.listener_addr("SASL_PLAINTEXT").unwrap();

    let mut framed = TcpStream::connect(addr).await.unwrap();
    let mut client = ScramClient::new("carol", "carol-secret");
    let answer = call_on(
        &mut framed,
        ApiKey::SaslHandshake,
        1,
        handshake("SCRAM-SHA-512"),
    )
    .await;
    assert_eq!(expect_kind!(answer.unwrap(), SaslHandshake).error_code, 0);
    let first = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(client.first()));
    let answer = call_on(&mut framed, ApiKey::SaslAuthenticate, 2, first).await;
    let server_first = expect_kind!(answer.unwrap(), SaslAuthenticate).auth_bytes;
    let last = SaslAuthenticateRequest::default()
        .with_auth_bytes(Bytes::from(client.last(&server_first, true)));
    let answer = call_on(&mut framed, ApiKey::SaslAuthenticate, 2, last).await;
    let refused = expect_kind!(answer.unwrap(), SaslAuthenticate);
    assert_eq!(
        refused.error_code,
        ResponseError::SaslAuthenticationFailed.code()
    );
    assert!(closed_unanswered(&mut framed).await);

    let mut raw = TcpStream::connect(addr).await.unwrap();
    let mut client = ScramClient::new("carol", "carol-secret");
    let answer = call_on(
        &mut raw,
        ApiKey::SaslHandshake,
        0,
        handshake("SCRAM-SHA-512"),
    )
    .await;
    assert_eq!(expect_kind!(answer.unwrap(), SaslHandshake).error_code, 0);
    let server_first = raw_exchange(&mut raw, &client.first()).await.unwrap();
    let last = client.last(&server_first, true);
    assert!(raw_exchange(&mut raw, &last).await.is_none());
}

/// ApiVersions v5 (newer than served; franz-go 1.22 opens with it): header v2 and an empty
/// body, which is never read.
fn api_versions_v5_frame(correlation_id: i32) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend_from_slice(&(ApiKey::ApiVersions as i16).to_be_bytes());
    payload.extend_from_slice(&5i16.to_be_bytes());
    payload.extend_from_slice(&correlation_id.to_be_bytes());
    payload.extend_from_slice(&2i16.to_be_bytes());
    payload.extend_from_slice(b"fr");
    payload.extend_from_slice(&[0, 1, 1, 0]);
    let mut frame = i32::try_from(payload.len()).unwrap().to_be_bytes().to_vec();
    frame.extend_from_slice(&payload);
    frame
}

#[tokio::test]
async fn a_newer_api_versions_gets_only_its_own_range_so_the_client_retries_and_sees_sasl() {
    let setup = Setup::start(&[]).await;
    for plaintext in [false, true] {
        let mut stream = if plaintext {
            setup.broker.client().await.stream
        } else {
            setup.connect().await
        };
        stream.write_all(&api_versions_v5_frame(11)).await.unwrap();
        let answer = tokio::time::timeout(
            Duration::from_secs(5),
            frame::read_frame(&mut stream, 1 << 20),
        );
        let answer = answer.await.unwrap().unwrap().expect("an answer");
        let (header, body) =
            protocol::codec::decode_response(ApiKey::ApiVersions, 0, answer).unwrap();
        assert_eq!(header.correlation_id, 11);
        let body = expect_kind!(body, ApiVersions);
        assert_eq!(body.error_code, ResponseError::UnsupportedVersion.code());
        let listed: Vec<(i16, i16, i16)> = body
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version))
            .collect();
        assert_eq!(listed, [(ApiKey::ApiVersions as i16, 0, 4)]);
        // The connection stays open: the retry at v3 lists the SASL APIs on the SASL listener.
        let retry = call_on(
            &mut stream,
            ApiKey::ApiVersions,
            3,
            ApiVersionsRequest::default(),
        );
        let keys = expect_kind!(retry.await.unwrap(), ApiVersions).api_keys;
        let sasl_listed = keys
            .iter()
            .any(|k| k.api_key == ApiKey::SaslAuthenticate as i16);
        assert_eq!(sasl_listed, !plaintext);
    }
}

#[tokio::test]
async fn a_failed_login_is_answered_only_after_the_failed_authentication_delay() {
    let setup = Setup::start(&["--connection-failed-authentication-delay-ms", "600"]).await;
    let mut stream = setup.connect().await;
    let started = std::time::Instant::now();
    let answer = plain_login(&mut stream, "alice", "wrong").await.unwrap();
    assert_eq!(
        answer.error_code,
        ResponseError::SaslAuthenticationFailed.code()
    );
    assert!(started.elapsed() >= Duration::from_millis(550));
    assert!(closed_unanswered(&mut stream).await);
    // A good login is not delayed by it.
    let mut alice = setup.authenticated("alice", "alice-secret").await;
    assert!(served(&mut alice).await);
}

/// Opens a SASL connection whose handshake succeeded, then declares a frame of
/// `declared_bytes` and sends `sent_bytes` of it.
async fn partial_sasl_frame(setup: &Setup, declared_bytes: usize, sent_bytes: usize) -> TcpStream {
    let mut stream = setup.connect().await;
    let answer = call_on(&mut stream, ApiKey::SaslHandshake, 1, handshake("PLAIN")).await;
    assert_eq!(expect_kind!(answer.unwrap(), SaslHandshake).error_code, 0);
    let declared = i32::try_from(declared_bytes).unwrap();
    stream.write_all(&declared.to_be_bytes()).await.unwrap();
    stream.write_all(&vec![0u8; sent_bytes]).await.unwrap();
    stream
}

#[tokio::test]
async fn connections_that_have_not_logged_in_cannot_spend_what_authenticated_clients_need() {
    // Old behaviour: the 20 partial frames below took 10 MiB of a 4 MiB shared budget, and
    // nobody (logged in or not, on any listener) was read again until they timed out.
    let setup = Setup::start(&[
        "--max-frame-bytes",
        "1048576",
        "--queued-max-request-bytes",
        "4194304",
        "--queued-max-unauthenticated-request-bytes",
        "1048576",
        "--frame-stall-timeout-ms",
        "300",
    ])
    .await;
    let mut alice = setup.authenticated("alice", "alice-secret").await;
    let mut attackers = Vec::new();
    for _ in 0..10 {
        // Declared, nothing sent: holds one step at most.
        attackers.push(partial_sasl_frame(&setup, 510 << 10, 0).await);
        // Sent, then silent: holds what it sent until it gives way.
        attackers.push(partial_sasl_frame(&setup, 510 << 10, 400 << 10).await);
    }
    let in_time = Duration::from_secs(10);
    assert!(tokio::time::timeout(in_time, served(&mut alice))
        .await
        .unwrap());
    let mut plaintext = setup.broker.client().await;
    let answered = tokio::time::timeout(in_time, served(&mut plaintext.stream));
    assert!(answered.await.unwrap());
    // A newcomer logs in: a silent frame gives way to its login.
    let login = setup.authenticated("bob", "bob-secret");
    let mut bob = tokio::time::timeout(in_time, login)
        .await
        .expect("a login is not locked out");
    assert!(served(&mut bob).await);
    drop(attackers);
}
