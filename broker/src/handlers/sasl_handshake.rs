//! SaslHandshake v0-1, answered by the connection's SASL state (only on SASL listeners): the
//! enabled mechanisms in every answer, UNSUPPORTED_SASL_MECHANISM (then close) for others,
//! ILLEGAL_SASL_STATE out of order. v0 switches the connection to raw SASL tokens.

use kafka_protocol::messages::{SaslHandshakeRequest, SaslHandshakeResponse};
use kafka_protocol::ResponseError;

use crate::security::sasl::{SaslRefusal, SaslServer};

use super::str_bytes;

/// The response, and whether the connection closes once it is written.
pub fn handle(
    server: &mut SaslServer,
    version: i16,
    request: &SaslHandshakeRequest,
) -> (SaslHandshakeResponse, bool) {
    let mechanisms = server
        .enabled_mechanisms()
        .iter()
        .map(|m| str_bytes(m))
        .collect();
    let response = SaslHandshakeResponse::default().with_mechanisms(mechanisms);
    match server.handshake(version, &request.mechanism) {
        Ok(()) => (response, false),
        Err(SaslRefusal::UnsupportedMechanism) => (
            response.with_error_code(ResponseError::UnsupportedSaslMechanism.code()),
            true,
        ),
        Err(SaslRefusal::IllegalState { close }) => (
            response.with_error_code(ResponseError::IllegalSaslState.code()),
            close,
        ),
    }
}
