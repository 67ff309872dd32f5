//! SaslAuthenticate v0-2, answered by the connection's SASL state (only on SASL listeners):
//! each request carries one SASL token, each answer the server's, and the session lifetime
//! once authenticated (v1+, KIP-368). A failure answers SASL_AUTHENTICATION_FAILED with
//! Kafka's message, then the connection closes.

use bytes::Bytes;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslAuthenticateResponse};
use kafka_protocol::ResponseError;

use crate::security::sasl::{SaslRefusal, SaslServer, Step};
use crate::security::Principal;

use super::str_bytes;

/// What the connection does after writing a SaslAuthenticate response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum After {
    /// More tokens follow (or the request was refused on an authenticated connection).
    Continue,
    /// Authenticated: serve the connection's next requests as this principal.
    Authenticated(Principal),
    Close,
}

pub async fn handle(
    server: &mut SaslServer,
    request: &SaslAuthenticateRequest,
) -> (SaslAuthenticateResponse, After) {
    let response = SaslAuthenticateResponse::default();
    match server.check_authenticate_request() {
        Ok(()) => {}
        Err(refusal) => {
            let close = !matches!(refusal, SaslRefusal::IllegalState { close: false });
            let message = if close {
                "Unexpected SaslAuthenticate request: no SASL handshake in progress"
            } else {
                "SaslAuthenticate request received after successful authentication"
            };
            let after = if close { After::Close } else { After::Continue };
            let response = response
                .with_error_code(ResponseError::IllegalSaslState.code())
                .with_error_message(Some(str_bytes(message)));
            return (response, after);
        }
    }
    match server.authenticate(&request.auth_bytes).await {
        Step::Challenge(bytes) => (
            response.with_auth_bytes(Bytes::from(bytes)),
            After::Continue,
        ),
        Step::Done {
            response: bytes,
            principal,
            session_lifetime_ms,
        } => (
            response
                .with_auth_bytes(Bytes::from(bytes))
                .with_session_lifetime_ms(session_lifetime_ms),
            After::Authenticated(principal),
        ),
        Step::Failed { message } => (
            response
                .with_error_code(ResponseError::SaslAuthenticationFailed.code())
                .with_error_message(Some(str_bytes(&message))),
            After::Close,
        ),
    }
}
