use std::collections::HashMap;

use jsonwebtoken::{encode, EncodingKey, Header};
use storage::clock::ManualClock;

use super::*;
use crate::security::sasl::config::SaslConfig;
use crate::security::sasl::failure_log::FailureLog;
use crate::security::sasl::jwt::{JwtConfig, JwtValidator};
use crate::security::scram::{ScramCredential, ScramMechanism};

const NOW_MS: u64 = 1_800_000_000_000;
const SHA256: Mechanism = Mechanism::Scram(ScramMechanism::Sha256);

struct Fixture {
    shared: Arc<SaslAuthenticator>,
    clock: Arc<ManualClock>,
}

async fn fixture(max_reauth_ms: u64) -> Fixture {
    let mut scram = HashMap::new();
    for (user, password) in [("alice", "alice-secret"), ("bob", "bob-secret")] {
        let credential =
            ScramCredential::from_password(ScramMechanism::Sha256, password.as_bytes(), 4096)
                .unwrap();
        scram.insert((user.to_string(), ScramMechanism::Sha256), credential);
    }
    let jwt = JwtConfig {
        jwks_file: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/security/sasl/testdata/jwks.json"
        )
        .into(),
        expected_issuer: None,
        expected_audience: Vec::new(),
        sub_claim_name: "sub".into(),
        clock_skew_s: 30,
    };
    let config = SaslConfig {
        enabled_mechanisms: vec![Mechanism::Plain, SHA256, Mechanism::OAuthBearer],
        plain_users_file: None,
        oauthbearer: Some(jwt.clone()),
        connections_max_reauth_ms: max_reauth_ms,
        failed_authentication_delay_ms: 0,
    };
    let clock = Arc::new(ManualClock::new(NOW_MS));
    let shared = Arc::new(SaslAuthenticator {
        config,
        scram: Arc::new(scram),
        plain_users: None,
        jwt: Some(JwtValidator::open(jwt).await.unwrap()),
        clock: clock.clone(),
        decoy_key: [7; 32],
        failures: FailureLog::default(),
    });
    Fixture { shared, clock }
}

fn peer() -> SocketAddr {
    "127.0.0.1:40000".parse().unwrap()
}

fn plain(user: &str, password: &str) -> Vec<u8> {
    format!("\0{user}\0{password}").into_bytes()
}

async fn plain_login(server: &mut SaslServer, user: &str, password: &str) -> Step {
    server.handshake(1, "PLAIN").unwrap();
    server.authenticate(&plain(user, password)).await
}

#[tokio::test]
async fn only_api_versions_and_the_handshake_come_before_authentication() {
    let f = fixture(0).await;
    let mut server = f.shared.server(peer());
    assert_eq!(server.admit(ApiKey::ApiVersions), Admission::Serve);
    assert_eq!(server.admit(ApiKey::SaslHandshake), Admission::Sasl);
    assert_eq!(server.admit(ApiKey::Metadata), Admission::Close);
    assert_eq!(server.admit(ApiKey::Produce), Admission::Close);
    server.handshake(1, "PLAIN").unwrap();
    assert_eq!(server.admit(ApiKey::SaslAuthenticate), Admission::Sasl);
    assert_eq!(server.admit(ApiKey::ApiVersions), Admission::Close);
    assert_eq!(server.admit(ApiKey::Metadata), Admission::Close);
    assert!(!server.is_authenticated());
    assert!(matches!(
        server.authenticate(&plain("alice", "alice-secret")).await,
        Step::Done { .. }
    ));
    assert!(server.is_authenticated());
    assert_eq!(server.admit(ApiKey::Metadata), Admission::Serve);
}

#[tokio::test]
async fn an_unsupported_mechanism_is_refused_with_the_enabled_list() {
    let f = fixture(0).await;
    let mut server = f.shared.server(peer());
    assert_eq!(
        server.handshake(1, "GSSAPI"),
        Err(SaslRefusal::UnsupportedMechanism)
    );
    assert_eq!(
        server.enabled_mechanisms(),
        vec!["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"]
    );
    let mut server = f.shared.server(peer());
    assert_eq!(
        server.handshake(1, "SCRAM-SHA-512"),
        Err(SaslRefusal::UnsupportedMechanism)
    );
}

#[tokio::test]
async fn out_of_order_requests_are_illegal_states() {
    let f = fixture(0).await;
    let mut server = f.shared.server(peer());
    assert_eq!(
        server.check_authenticate_request(),
        Err(SaslRefusal::IllegalState { close: true })
    );
    server.handshake(1, "PLAIN").unwrap();
    assert_eq!(
        server.handshake(1, "PLAIN"),
        Err(SaslRefusal::IllegalState { close: true })
    );
    let mut server = f.shared.server(peer());
    plain_login(&mut server, "alice", "alice-secret").await;
    assert_eq!(
        server.check_authenticate_request(),
        Err(SaslRefusal::IllegalState { close: false })
    );
    // No session lifetime: no re-authentication, and the connection stays open.
    assert_eq!(
        server.handshake(1, "PLAIN"),
        Err(SaslRefusal::IllegalState { close: false })
    );
    assert_eq!(server.admit(ApiKey::Metadata), Admission::Serve);
}

#[tokio::test]
async fn the_v0_handshake_switches_to_raw_tokens() {
    let f = fixture(0).await;
    let mut server = f.shared.server(peer());
    server.handshake(0, "PLAIN").unwrap();
    assert!(server.expects_raw_tokens());
    assert_eq!(server.admit(ApiKey::SaslAuthenticate), Admission::Close);
    let Step::Done {
        response,
        principal,
        ..
    } = server.authenticate(&plain("bob", "bob-secret")).await
    else {
        panic!("not authenticated");
    };
    assert!(response.is_empty());
    assert_eq!(principal, Principal::user("bob"));
    assert!(!server.expects_raw_tokens());
    assert_eq!(&super::super::raw_token_frame(b"")[..], &[0, 0, 0, 0]);
    assert_eq!(
        &super::super::raw_token_frame(b"ab")[..],
        &[0, 0, 0, 2, b'a', b'b']
    );
}

#[tokio::test]
async fn failures_use_kafkas_messages_and_end_the_connection() {
    let f = fixture(0).await;
    let mut server = f.shared.server(peer());
    assert_eq!(
        plain_login(&mut server, "alice", "wrong").await,
        Step::Failed {
            message: "Authentication failed: Invalid username or password".into()
        }
    );
    assert_eq!(server.admit(ApiKey::ApiVersions), Admission::Close);
    let mut server = f.shared.server(peer());
    server.handshake(1, "SCRAM-SHA-256").unwrap();
    assert_eq!(
        server.authenticate(b"garbage").await,
        Step::Failed {
            message: "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256".into()
        }
    );
}

#[tokio::test]
async fn scram_through_the_server_names_the_user() {
    let f = fixture(0).await;
    let mut server = f.shared.server(peer());
    server.handshake(1, "SCRAM-SHA-256").unwrap();
    let Step::Challenge(first) = server.authenticate(b"n,,n=alice,r=clientnonce").await else {
        panic!("no challenge");
    };
    let last = scram_client_final(&first, "alice", b"alice-secret");
    let Step::Done {
        response,
        principal,
        session_lifetime_ms,
    } = server.authenticate(&last).await
    else {
        panic!("not authenticated");
    };
    assert!(response.starts_with(b"v="));
    assert_eq!(
        (principal, session_lifetime_ms),
        (Principal::user("alice"), 0)
    );
}

/// The client-final of `n,,n=<user>,r=clientnonce` (RFC 5802's client side).
fn scram_client_final(server_first: &[u8], user: &str, password: &[u8]) -> Vec<u8> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let m = ScramMechanism::Sha256;
    let first = std::str::from_utf8(server_first).unwrap();
    let attr = |k: &str| first.split(',').find_map(|f| f.strip_prefix(k)).unwrap();
    let salt = b64.decode(attr("s=")).unwrap();
    let salted = m
        .salted_password(password, &salt, attr("i=").parse().unwrap())
        .unwrap();
    let client_key = m.client_key(&salted).unwrap();
    let without_proof = format!("c=biws,r={}", attr("r="));
    let auth = format!("n={user},r=clientnonce,{first},{without_proof}");
    let signature = m.hmac(&m.stored_key(&client_key), auth.as_bytes()).unwrap();
    let proof: Vec<u8> = client_key
        .iter()
        .zip(signature)
        .map(|(k, s)| k ^ s)
        .collect();
    format!("{without_proof},p={}", b64.encode(proof)).into_bytes()
}

#[test]
fn session_lifetimes_follow_kafkas_rule() {
    assert_eq!(session_lifetime_ms(1000, 0, None), None);
    assert_eq!(session_lifetime_ms(1000, 60_000, None), Some(60_000));
    assert_eq!(session_lifetime_ms(1000, 0, Some(31_000)), Some(30_000));
    assert_eq!(
        session_lifetime_ms(1000, 10_000, Some(31_000)),
        Some(10_000)
    );
    assert_eq!(
        session_lifetime_ms(1000, 60_000, Some(31_000)),
        Some(30_000)
    );
    assert_eq!(session_lifetime_ms(50_000, 0, Some(31_000)), Some(0));
}

#[tokio::test]
async fn a_session_past_its_lifetime_must_reauthenticate() {
    let f = fixture(10_000).await;
    let mut server = f.shared.server(peer());
    let Step::Done {
        session_lifetime_ms,
        ..
    } = plain_login(&mut server, "alice", "alice-secret").await
    else {
        panic!("not authenticated");
    };
    assert_eq!(session_lifetime_ms, 10_000);
    f.clock.advance_ms(9_999);
    assert_eq!(server.admit(ApiKey::Fetch), Admission::Serve);
    f.clock.advance_ms(1);
    assert!(server.is_expired());
    assert_eq!(server.admit(ApiKey::Fetch), Admission::Close);
    assert_eq!(server.admit(ApiKey::SaslHandshake), Admission::Sasl);
    // Re-authentication: the old session holds until it completes.
    server.handshake(1, "PLAIN").unwrap();
    assert_eq!(
        server.session().unwrap().principal,
        Principal::user("alice")
    );
    assert_eq!(server.admit(ApiKey::Fetch), Admission::Close);
    let Step::Done {
        session_lifetime_ms,
        ..
    } = server.authenticate(&plain("alice", "alice-secret")).await
    else {
        panic!("not re-authenticated");
    };
    assert_eq!(session_lifetime_ms, 10_000);
    assert_eq!(
        server.session().unwrap().expires_at_ms,
        Some(NOW_MS + 20_000)
    );
    assert_eq!(server.admit(ApiKey::Fetch), Admission::Serve);
    // At most once a second.
    f.clock.advance_ms(500);
    assert_eq!(
        server.handshake(1, "PLAIN"),
        Err(SaslRefusal::IllegalState { close: false })
    );
}

#[tokio::test]
async fn reauthentication_keeps_the_principal_and_the_mechanism() {
    let f = fixture(10_000).await;
    let mut server = f.shared.server(peer());
    plain_login(&mut server, "alice", "alice-secret").await;
    f.clock.advance_ms(2_000);
    assert_eq!(
        plain_login(&mut server, "bob", "bob-secret").await,
        Step::Failed {
            message: "Cannot change principals during re-authentication from User.alice: User.bob"
                .into()
        }
    );
    let mut server = f.shared.server(peer());
    plain_login(&mut server, "alice", "alice-secret").await;
    f.clock.advance_ms(2_000);
    server.handshake(1, "SCRAM-SHA-256").unwrap();
    assert_eq!(
        server.authenticate(b"n,,n=alice,r=x").await,
        Step::Failed {
            message: "SASL mechanism 'SCRAM-SHA-256' requested by client is not supported for re-authentication of mechanism 'PLAIN'".into()
        }
    );
}

fn token(claims: serde_json::Value) -> Vec<u8> {
    let mut header = Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("rsa-1".into());
    let key = EncodingKey::from_rsa_pem(include_bytes!("testdata/rsa.pem")).unwrap();
    let jwt = encode(&header, &claims, &key).unwrap();
    format!("n,,\x01auth=Bearer {jwt}\x01\x01").into_bytes()
}

#[tokio::test]
async fn an_oauth_session_lasts_as_long_as_its_token() {
    let now_s = NOW_MS / 1000;
    for (max_reauth_ms, expected) in [(0, 600_000), (60_000, 60_000)] {
        let f = fixture(max_reauth_ms).await;
        let mut server = f.shared.server(peer());
        server.handshake(1, "OAUTHBEARER").unwrap();
        let message = token(serde_json::json!({"sub": "svc", "iat": now_s, "exp": now_s + 600}));
        let Step::Done {
            principal,
            session_lifetime_ms,
            response,
        } = server.authenticate(&message).await
        else {
            panic!("not authenticated");
        };
        assert_eq!(
            (principal, session_lifetime_ms),
            (Principal::user("svc"), expected)
        );
        assert!(response.is_empty());
    }
}

#[tokio::test]
async fn a_refused_token_is_answered_by_kafkas_error_flow() {
    let now_s = NOW_MS / 1000;
    let f = fixture(0).await;
    let mut server = f.shared.server(peer());
    server.handshake(1, "OAUTHBEARER").unwrap();
    let expired =
        token(serde_json::json!({"sub": "svc", "iat": now_s - 7200, "exp": now_s - 3600}));
    assert_eq!(
        server.authenticate(&expired).await,
        Step::Challenge(br#"{"status":"invalid_token"}"#.to_vec())
    );
    assert_eq!(
        server.authenticate(b"\x01").await,
        Step::Failed {
            message: r#"{"status":"invalid_token"}"#.into()
        }
    );
    let mut server = f.shared.server(peer());
    server.handshake(1, "OAUTHBEARER").unwrap();
    assert!(matches!(
        server.authenticate(b"n,,\x01auth=Bearer\x01\x01").await,
        Step::Failed { message } if message.ends_with("with SASL mechanism OAUTHBEARER")
    ));
}
