//! Who sent a request: what the admin handlers log when they refuse one, so that an operator
//! can tell which client (id and address) asked for what and why it was refused.

use std::net::SocketAddr;

use kafka_protocol::messages::RequestHeader;
use kafka_protocol::ResponseError;

#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The `client.id` of the request header (empty when the client sent none).
    pub client_id: String,
    pub peer: SocketAddr,
}

impl RequestContext {
    pub fn new(header: &RequestHeader, peer: SocketAddr) -> RequestContext {
        RequestContext {
            client_id: header.client_id.as_deref().unwrap_or_default().to_string(),
            peer,
        }
    }

    /// Logs one refused admin operation: `api` names the request, `resource` what it was
    /// about (a topic, `topic/partition`, a broker), `reason` the message sent to the client.
    pub fn refused(&self, api: &str, resource: &str, error: ResponseError, reason: &str) {
        tracing::info!(
            api,
            client_id = %self.client_id,
            peer = %self.peer,
            resource,
            error = ?error,
            reason,
            "admin request refused"
        );
    }
}
