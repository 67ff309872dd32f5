//! Who sent a request: what the admin handlers log when they refuse one, so that an operator
//! can tell which client (id and address) asked for what and why it was refused.

use std::net::SocketAddr;

use kafka_protocol::messages::RequestHeader;
use kafka_protocol::ResponseError;

use crate::security::{Principal, Session};

#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The `client.id` of the request header (empty when the client sent none).
    pub client_id: String,
    pub peer: SocketAddr,
    /// Who sent it (`User:ANONYMOUS` on an unauthenticated listener).
    pub principal: Principal,
    /// The listener it came through.
    pub listener: String,
}

impl RequestContext {
    pub fn new(header: &RequestHeader, session: &Session) -> RequestContext {
        RequestContext {
            client_id: header.client_id.as_deref().unwrap_or_default().to_string(),
            peer: session.peer,
            principal: session.principal.clone(),
            listener: session.listener.clone(),
        }
    }

    /// Logs one refused admin operation: `api` names the request, `resource` what it was
    /// about (a topic, `topic/partition`, a broker), `reason` the message sent to the client.
    pub fn refused(&self, api: &str, resource: &str, error: ResponseError, reason: &str) {
        tracing::info!(
            api,
            client_id = %self.client_id,
            peer = %self.peer,
            principal = %self.principal,
            resource,
            error = ?error,
            reason,
            "admin request refused"
        );
    }
}
