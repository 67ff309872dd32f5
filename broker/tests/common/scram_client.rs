//! A SCRAM-SHA-512 client (RFC 5802) for tests that log in over a socket.

use base64::Engine;
use broker::security::scram::ScramMechanism;

/// A SCRAM-SHA-512 client's side of RFC 5802, for `user` with `password`.
pub struct ScramClient {
    password: Vec<u8>,
    first_bare: String,
    server_signature: Vec<u8>,
}

impl ScramClient {
    pub const MECHANISM: ScramMechanism = ScramMechanism::Sha512;

    pub fn new(user: &str, password: &str) -> ScramClient {
        ScramClient {
            password: password.as_bytes().to_vec(),
            first_bare: format!("n={user},r=socketnonce"),
            server_signature: Vec::new(),
        }
    }

    pub fn first(&self) -> Vec<u8> {
        format!("n,,{}", self.first_bare).into_bytes()
    }

    /// The client-final for `server_first`; `tamper` flips a bit of the proof.
    pub fn last(&mut self, server_first: &[u8], tamper: bool) -> Vec<u8> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let first = std::str::from_utf8(server_first).unwrap();
        let attr = |k: &str| first.split(',').find_map(|f| f.strip_prefix(k)).unwrap();
        let salt = b64.decode(attr("s=")).unwrap();
        let m = Self::MECHANISM;
        let salted = m
            .salted_password(&self.password, &salt, attr("i=").parse().unwrap())
            .unwrap();
        let client_key = m.client_key(&salted).unwrap();
        let without_proof = format!("c=biws,r={}", attr("r="));
        let auth = format!("{},{first},{without_proof}", self.first_bare);
        let signature = m.hmac(&m.stored_key(&client_key), auth.as_bytes()).unwrap();
        let mut proof: Vec<u8> = client_key
            .iter()
            .zip(signature)
            .map(|(k, s)| k ^ s)
            .collect();
        if tamper {
            proof[0] ^= 1;
        }
        let server_key = m.server_key(&salted).unwrap();
        self.server_signature = m.hmac(&server_key, auth.as_bytes()).unwrap();
        format!("{without_proof},p={}", b64.encode(proof)).into_bytes()
    }

    pub fn verifies(&self, server_final: &[u8]) -> bool {
        let b64 = base64::engine::general_purpose::STANDARD;
        server_final == format!("v={}", b64.encode(&self.server_signature)).as_bytes()
    }
}

/// Logs in as `user` with SCRAM-SHA-512 (SaslHandshake v1, SaslAuthenticate v2): whether the
/// broker accepted and its server signature verified.
pub async fn login<S>(stream: &mut S, user: &str, password: &str) -> bool
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use bytes::Bytes;
    use kafka_protocol::messages::*;
    let mut client = ScramClient::new(user, password);
    let handshake = SaslHandshakeRequest::default().with_mechanism(super::s("SCRAM-SHA-512"));
    match super::call_on(stream, ApiKey::SaslHandshake, 1, handshake).await {
        Some(ResponseKind::SaslHandshake(r)) if r.error_code == 0 => {}
        _ => return false,
    }
    let token =
        |bytes: Vec<u8>| SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes));
    let server_first =
        match super::call_on(stream, ApiKey::SaslAuthenticate, 2, token(client.first())).await {
            Some(ResponseKind::SaslAuthenticate(r)) if r.error_code == 0 => r.auth_bytes,
            _ => return false,
        };
    let last = client.last(&server_first, false);
    match super::call_on(stream, ApiKey::SaslAuthenticate, 2, token(last)).await {
        Some(ResponseKind::SaslAuthenticate(r)) => {
            r.error_code == 0 && client.verifies(&r.auth_bytes)
        }
        _ => false,
    }
}
