//! SaslHandshake and SaslAuthenticate, served only on SASL listeners by the connection's SASL
//! state. Every version in `protocol::versions::SASL_APIS` is sent through the real codecs
//! (encoded as a client does, decoded as a SASL listener does, answered by
//! `handlers::sasl::serve` on a `SaslServer` of the in-process broker, the answer encoded and
//! decoded back) with SCRAM credentials stored through AlterUserScramCredentials. The same
//! exchanges over sockets, through the connection layer, are in `broker/tests/sasl.rs`.

use base64::Engine;
use broker::handlers::sasl::{serve, After};
use broker::security::sasl::SaslServer;
use broker::security::scram::ScramMechanism;
use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use protocol::codec;

use crate::ctx::Ctx;
use crate::scram::{alter, upsertion};

const REAUTH_MS: i64 = 60_000;

/// One request through the codecs and the SASL handlers.
async fn round_trip(
    server: &mut SaslServer,
    api: ApiKey,
    version: i16,
    body: RequestKind,
) -> (ResponseKind, After) {
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(StrBytes::from_static_str("sasl-coverage")));
    let frame = codec::encode_request(&header, &body).unwrap().slice(4..);
    assert!(
        codec::decode_request(frame.clone()).is_err(),
        "{api:?} decoded off a SASL listener"
    );
    let request = codec::decode_request_on(frame, true).unwrap();
    let served = serve(server, &request).await.expect("a SASL request");
    let encoded = codec::encode_response(api, version, 7, &served.response).unwrap();
    let (response_header, response) =
        codec::decode_response(api, version, encoded.slice(4..)).unwrap();
    assert_eq!(response_header.correlation_id, 7);
    (response, served.after)
}

async fn handshake(
    server: &mut SaslServer,
    version: i16,
    mechanism: &str,
) -> SaslHandshakeResponse {
    let body =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_string(mechanism.into()));
    let (response, _) = round_trip(server, ApiKey::SaslHandshake, version, body.into()).await;
    match response {
        ResponseKind::SaslHandshake(r) => r,
        other => panic!("{other:?}"),
    }
}

async fn authenticate(
    server: &mut SaslServer,
    version: i16,
    token: Vec<u8>,
) -> (SaslAuthenticateResponse, After) {
    let body = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
    let (response, after) =
        round_trip(server, ApiKey::SaslAuthenticate, version, body.into()).await;
    match response {
        ResponseKind::SaslAuthenticate(r) => (r, after),
        other => panic!("{other:?}"),
    }
}

fn server(ctx: &Ctx) -> SaslServer {
    ctx.broker
        .running
        .broker
        .sasl
        .server("127.0.0.1:1".parse().unwrap())
}

pub async fn sasl_handshake(ctx: &mut Ctx, version: i16) {
    let mut refused = server(ctx);
    let response = handshake(&mut refused, version, "GSSAPI").await;
    assert_eq!(
        response.error_code,
        ResponseError::UnsupportedSaslMechanism.code()
    );
    let mechanisms: Vec<String> = response.mechanisms.iter().map(|m| m.to_string()).collect();
    assert_eq!(mechanisms, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);

    let user = format!("handshake-v{version}");
    alter(
        ctx,
        0,
        vec![],
        vec![upsertion(&user, ScramMechanism::Sha512, "pw", 4096)],
    )
    .await;
    let mut server = server(ctx);
    let response = handshake(&mut server, version, "PLAIN").await;
    assert_eq!(response.error_code, 0);
    let token = format!("\0{user}\0pw").into_bytes();
    if version == 0 {
        // Raw tokens follow a v0 handshake: no SaslAuthenticate.
        assert!(server.expects_raw_tokens());
        let step = server.authenticate(&token).await;
        assert!(
            matches!(step, broker::security::sasl::Step::Done { .. }),
            "{step:?}"
        );
    } else {
        let (response, after) = authenticate(&mut server, 0, token).await;
        assert_eq!(response.error_code, 0);
        assert!(matches!(after, After::Authenticated(p) if p.name == user));
    }
    assert!(server.is_authenticated());
}

pub async fn sasl_authenticate(ctx: &mut Ctx, version: i16) {
    let user = format!("authenticate-v{version}");
    alter(
        ctx,
        0,
        vec![],
        vec![upsertion(&user, ScramMechanism::Sha256, "secret", 4096)],
    )
    .await;
    let mut server = server(ctx);
    assert_eq!(
        handshake(&mut server, 1, "SCRAM-SHA-256").await.error_code,
        0
    );
    let first = format!("n,,n={user},r=coveragenonce");
    let (response, after) = authenticate(&mut server, version, first.clone().into_bytes()).await;
    assert_eq!((response.error_code, after), (0, After::Continue));
    let server_first = String::from_utf8(response.auth_bytes.to_vec()).unwrap();
    let last = client_final(&first["n,,".len()..], &server_first, b"secret");
    let (response, after) = authenticate(&mut server, version, last).await;
    assert_eq!(response.error_code, 0, "{:?}", response.error_message);
    assert!(response.auth_bytes.starts_with(b"v="));
    assert!(matches!(after, After::Authenticated(p) if p.name == user));
    // v0 has no session lifetime field.
    let expected = if version >= 1 { REAUTH_MS } else { 0 };
    assert_eq!(response.session_lifetime_ms, expected);

    let mut server2 = self::server(ctx);
    handshake(&mut server2, 1, "PLAIN").await;
    let (response, after) = authenticate(
        &mut server2,
        version,
        format!("\0{user}\0wrong").into_bytes(),
    )
    .await;
    assert_eq!(
        response.error_code,
        ResponseError::SaslAuthenticationFailed.code()
    );
    assert_eq!(
        response.error_message.as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
    assert_eq!(after, After::Close);
    let mut server3 = self::server(ctx);
    let (response, after) = authenticate(&mut server3, version, b"early".to_vec()).await;
    assert_eq!(
        (response.error_code, after),
        (ResponseError::IllegalSaslState.code(), After::Close)
    );
}

/// RFC 5802's client-final for `bare` and `server_first`.
fn client_final(bare: &str, server_first: &str, password: &[u8]) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let m = ScramMechanism::Sha256;
    let attr = |k: &str| {
        server_first
            .split(',')
            .find_map(|f| f.strip_prefix(k))
            .unwrap()
    };
    let salt = b64.decode(attr("s=")).unwrap();
    let salted = m
        .salted_password(password, &salt, attr("i=").parse().unwrap())
        .unwrap();
    let client_key = m.client_key(&salted).unwrap();
    let without_proof = format!("c=biws,r={}", attr("r="));
    let auth = format!("{bare},{server_first},{without_proof}");
    let signature = m.hmac(&m.stored_key(&client_key), auth.as_bytes()).unwrap();
    let proof: Vec<u8> = client_key
        .iter()
        .zip(signature)
        .map(|(k, s)| k ^ s)
        .collect();
    format!("{without_proof},p={}", b64.encode(proof)).into_bytes()
}
