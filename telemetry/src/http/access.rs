//! Who may read what the HTTP listener serves: TLS from the process that owns the certificate,
//! and `/metrics` behind HTTP Basic authentication (RFC 7617) decided by that process (the
//! broker checks its SASL users and its authorizer). `/healthz` and `/readyz` stay open, for
//! orchestrators' probes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use futures::future::BoxFuture;
use tokio_rustls::TlsAcceptor;

/// The longest `Authorization` header value looked at; longer ones are refused unread, so a
/// scraper cannot make the password check hash megabytes.
pub const AUTHORIZATION_BYTES_MAX: usize = 4096;

/// The user and password of an `Authorization: Basic` header.
/// Who called an HTTP API of ours once authenticated: a user name, or `None` when the
/// listener does not authenticate (the schema registry, the Iceberg catalog).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub user: Option<String>,
    pub peer: SocketAddr,
}

#[derive(Clone, PartialEq, Eq)]
pub struct BasicCredentials {
    pub user: String,
    pub password: Vec<u8>,
}

impl std::fmt::Debug for BasicCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicCredentials")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl BasicCredentials {
    /// The credentials of an `Authorization` header value; `None` unless it is a well-formed
    /// `Basic` one (scheme in any case, base64 of UTF-8 `user:password`, the user non-empty).
    pub fn parse(header: &[u8]) -> Option<BasicCredentials> {
        if header.len() > AUTHORIZATION_BYTES_MAX {
            return None;
        }
        let header = std::str::from_utf8(header).ok()?.trim();
        let (scheme, token) = header.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("basic") {
            return None;
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(token.trim())
            .ok()?;
        let colon = decoded.iter().position(|b| *b == b':')?;
        let user = std::str::from_utf8(&decoded[..colon]).ok()?;
        if user.is_empty() {
            return None;
        }
        Some(BasicCredentials {
            user: user.to_string(),
            password: decoded[colon + 1..].to_vec(),
        })
    }
}

/// What a request for a protected path is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Granted,
    /// 401 with a `WWW-Authenticate: Basic` challenge: no, malformed or wrong credentials.
    Unauthenticated,
    /// 403: the user is known but may not read it.
    Forbidden,
}

/// Decides who may read `/metrics`.
pub trait MetricsAccess: Send + Sync {
    /// `credentials` from the request (`None`: absent or malformed), `peer` its address.
    fn check(
        &self,
        credentials: Option<BasicCredentials>,
        peer: SocketAddr,
    ) -> BoxFuture<'_, Access>;
}

/// Where HTTPS connections get their certificate: asked once per connection, so that a
/// reloaded certificate serves new connections.
pub trait TlsSource: Send + Sync {
    fn acceptor(&self) -> TlsAcceptor;
    fn handshake_timeout(&self) -> Duration;
}

/// How the listener guards what it serves; the default is plain HTTP open to every peer.
#[derive(Clone, Default)]
pub struct HttpSecurity {
    pub tls: Option<Arc<dyn TlsSource>>,
    pub metrics_access: Option<Arc<dyn MetricsAccess>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(text: &str) -> Vec<u8> {
        let token = base64::engine::general_purpose::STANDARD.encode(text);
        format!("Basic {token}").into_bytes()
    }

    #[test]
    fn a_basic_header_gives_its_user_and_the_password_after_the_first_colon() {
        let parsed = BasicCredentials::parse(&basic("alice:pa:ss")).unwrap();
        assert_eq!(parsed.user, "alice");
        assert_eq!(parsed.password, b"pa:ss");
        let lower = String::from_utf8(basic("bob:x"))
            .unwrap()
            .replace("Basic", "basic");
        assert_eq!(
            BasicCredentials::parse(lower.as_bytes()).unwrap().user,
            "bob"
        );
    }

    #[test]
    fn malformed_other_scheme_empty_user_and_oversized_headers_give_no_credentials() {
        for header in [
            b"Bearer abc".to_vec(),
            b"Basic !!!not-base64".to_vec(),
            basic("no-colon"),
            basic(":password"),
            b"Basic".to_vec(),
            basic(&format!("alice:{}", "x".repeat(AUTHORIZATION_BYTES_MAX))),
        ] {
            assert_eq!(BasicCredentials::parse(&header), None, "{header:?}");
        }
    }

    #[test]
    fn credentials_never_print_their_password() {
        let parsed = BasicCredentials::parse(&basic("alice:secret")).unwrap();
        assert!(!format!("{parsed:?}").contains("secret"));
    }
}
