//! The SASL exchange of a connection on a SASL listener, driven by the connection's reader
//! (docs/security.md, "Driving it from a connection"): SaslHandshake and SaslAuthenticate
//! requests, and after a SaslHandshake v0 the raw tokens of the legacy exchange, go to the
//! connection's [`SaslServer`], one at a time and in request order; what it answers becomes a
//! [`Reply`] and tells the reader whether to go on, to serve the connection as a newly
//! authenticated principal, or to close.

use std::net::SocketAddr;

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use protocol::codec::{self, Request};
use tokio::sync::watch;

use crate::handlers::sasl::{self as sasl_handlers, After};
use crate::security::sasl::{self, Admission, SaslServer, Step};
use crate::security::Principal;

use super::{take_turn, Dispatched, Permits, Reply, Requests};

/// What the reader does after one SASL request or raw token.
pub(super) enum Outcome {
    /// Write the reply and read on.
    Continue(Reply),
    /// Write the reply; every later request is served as this principal.
    Authenticated(Reply, Principal),
    /// Write the reply, if any, then close.
    Close(Option<Reply>),
}

/// One frame of a connection on a SASL listener: a raw token of the legacy exchange, a SASL
/// request, a request `admit` lets through (served as on any listener), or one that closes the
/// connection unanswered.
pub(super) async fn frame(
    server: &mut SaslServer,
    frame: Bytes,
    permits: Permits,
    requests: &Requests,
    shutdown: &mut watch::Receiver<bool>,
) -> Dispatched {
    let peer = requests.session.peer;
    if server.expects_raw_tokens() {
        let outcome = raw_token(server, &frame, peer).await;
        drop(permits);
        return Dispatched::Sasl(outcome);
    }
    let decoded = codec::decode_request_on(frame, true);
    let admission = decoded
        .as_ref()
        .ok()
        .map(|r| (r.api_key, server.admit(r.api_key)));
    match (decoded, admission) {
        (Ok(request), Some((_, Admission::Sasl))) => {
            // In request order: every earlier request has been answered first.
            let _turn = tokio::select! {
                turn = take_turn(&requests.order, request.api_key) => turn,
                _ = shutdown.changed() => return Dispatched::Stop,
            };
            Dispatched::Sasl(self::request(server, request, peer).await)
        }
        (_, Some((api_key, Admission::Close))) => {
            server.refuse_request(api_key);
            // Logged (rate-limited) by the failure log; this line only at debug.
            tracing::debug!(%peer, ?api_key, "closing connection: request not allowed before sasl authentication");
            // An authentication failure as Kafka counts it (IllegalSaslStateException).
            Dispatched::Sasl(Outcome::Close(None))
        }
        // Served as usual; decoding errors answer or close as on any listener.
        (decoded, _) => requests.dispatch(decoded, permits, shutdown).await,
    }
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
