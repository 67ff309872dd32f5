//! SASL on a connection: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER, with Kafka's
//! handshake, messages and re-authentication (KIP-368).
//!
//! [`SaslAuthenticator`] is built once per broker; each connection on a SASL listener gets a
//! [`SaslServer`] from it (`broker.sasl.server(peer)`) and drives it like this:
//!
//! 1. Every decoded request first goes through [`SaslServer::admit`]:
//!    - [`Admission::Serve`]: serve it as usual (with the session's principal once
//!      authenticated);
//!    - [`Admission::Sasl`]: SaslHandshake or SaslAuthenticate: answer it with
//!      `handlers::sasl::serve(&mut server, request)`, which says whether to close after
//!      writing the response and, when authentication succeeded, the principal to put in the
//!      connection's `Session`;
//!    - [`Admission::Close`]: close without answering (any request but ApiVersions before
//!      authentication, anything but SaslAuthenticate during it, anything but a SaslHandshake
//!      once the session expired).
//!
//!    Before authentication exactly these are allowed ([`allowed_before_authentication`]):
//!    ApiVersions (until the handshake), SaslHandshake (once), SaslAuthenticate (after a v1
//!    handshake). Pre-authentication frames should be bounded by [`MAX_RECEIVE_BYTES`] (Kafka's
//!    `sasl.server.max.receive.size`), not by the listener's frame limit.
//! 2. After a SaslHandshake **v0**, [`SaslServer::expects_raw_tokens`] is true: the next
//!    frames are raw SASL tokens (4-byte length, bytes, no Kafka header). Read each frame's
//!    bytes, pass them to [`SaslServer::authenticate`], and write a [`Step::Challenge`] or
//!    [`Step::Done`] response back with [`raw_token_frame`]; on [`Step::Failed`] close without
//!    writing anything (the legacy protocol has no way to say why).
//! 3. Re-authentication: [`Step::Done`] carries `session_lifetime_ms` (sent in SaslAuthenticate
//!    v1+ by the handler). Past it, `admit` answers `Close` for every request but SaslHandshake,
//!    which starts a re-authentication (same mechanism, same principal, at most once a second)
//!    while the old session stays in force until it completes.

pub mod authenticator;
pub mod config;
pub mod failure_log;
pub mod jwt;
pub mod oauthbearer;
pub mod plain;
pub mod server;
pub mod users_file;
pub mod watched_file;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;

pub use authenticator::{SaslAuthenticator, SaslSetupError};
pub use config::{Mechanism, SaslConfig};
pub use server::{Admission, Framing, SaslRefusal, SaslServer, Session, Step};

/// Largest frame a client may send before it is authenticated (Kafka's default
/// `sasl.server.max.receive.size`).
pub const MAX_RECEIVE_BYTES: usize = 512 * 1024;

/// The requests a SASL listener serves before the client is authenticated.
pub fn allowed_before_authentication(api_key: ApiKey) -> bool {
    matches!(
        api_key,
        ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate
    )
}

/// A raw SASL token as the legacy (SaslHandshake v0) exchange writes it: length, then bytes.
pub fn raw_token_frame(token: &[u8]) -> Bytes {
    let mut frame = BytesMut::with_capacity(4 + token.len());
    frame.put_u32(u32::try_from(token.len()).unwrap_or(u32::MAX));
    frame.put_slice(token);
    frame.freeze()
}
