//! The SASL exchange of a connection on a SASL listener, driven by the connection's reader
//! (docs/security.md, "Driving it from a connection"): SaslHandshake and SaslAuthenticate
//! requests, and after a SaslHandshake v0 the raw tokens of the legacy exchange, go to the
//! connection's [`SaslServer`], one at a time and in request order; what it answers becomes a
//! [`Reply`] and tells the reader whether to go on, to serve the connection as a newly
//! authenticated principal, or to close.

use std::net::SocketAddr;

use kafka_protocol::messages::ApiKey;
use protocol::codec::{self, Request};

use crate::handlers::sasl::{self as sasl_handlers, After};
use crate::security::sasl::{self, SaslServer, Step};
use crate::security::Principal;

use super::Reply;

/// What the reader does after one SASL request or raw token.
pub(super) enum Outcome {
    /// Write the reply and read on.
    Continue(Reply),
    /// Write the reply; every later request is served as this principal.
    Authenticated(Reply, Principal),
    /// Write the reply, if any, then close.
    Close(Option<Reply>),
}

/// Answers a SaslHandshake or SaslAuthenticate request `admit` sent to the SASL server.
pub(super) async fn request(
    server: &mut SaslServer,
    request: Request,
    peer: SocketAddr,
) -> Outcome {
    let api_key = request.api_key;
    let version = request.version();
    let correlation_id = request.correlation_id();
    let Some(served) = sasl_handlers::serve(server, &request).await else {
        // `admit` sends only the two SASL APIs here.
        tracing::error!(%peer, ?api_key, "closing connection: not a sasl request");
        return Outcome::Close(None);
    };
    let reply = match codec::encode_response(api_key, version, correlation_id, &served.response) {
        Ok(bytes) => Reply::Frame(bytes),
        Err(error) => {
            tracing::error!(%peer, ?api_key, version, %error, "cannot encode response");
            return Outcome::Close(None);
        }
    };
    match served.after {
        After::Continue => Outcome::Continue(reply),
        After::Authenticated(principal) => authenticated(peer, reply, principal, api_key),
        After::Close => Outcome::Close(Some(reply)),
    }
}

/// One raw SASL token of the legacy exchange (after a SaslHandshake v0): answered with a raw
/// token, and a failure closes the connection without a word, as in Kafka.
pub(super) async fn raw_token(server: &mut SaslServer, token: &[u8], peer: SocketAddr) -> Outcome {
    match server.authenticate(token).await {
        Step::Challenge(bytes) => Outcome::Continue(Reply::Frame(sasl::raw_token_frame(&bytes))),
        Step::Done {
            response,
            principal,
            ..
        } => {
            let reply = Reply::Frame(sasl::raw_token_frame(&response));
            authenticated(peer, reply, principal, ApiKey::SaslHandshake)
        }
        Step::Failed { .. } => Outcome::Close(None),
    }
}

fn authenticated(peer: SocketAddr, reply: Reply, principal: Principal, via: ApiKey) -> Outcome {
    tracing::debug!(%peer, %principal, ?via, "sasl authentication succeeded");
    Outcome::Authenticated(reply, principal)
}
