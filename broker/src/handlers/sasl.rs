//! SaslHandshake and SaslAuthenticate for the connection layer: unlike every other API they
//! change the connection's own state ([`SaslServer`]), so the connection calls [`serve`] for
//! the requests its `SaslServer::admit` sends here, writes the response, then acts on
//! [`SaslServed::after`].

use kafka_protocol::messages::{RequestKind, ResponseKind};
use protocol::codec::Request;

use crate::security::sasl::SaslServer;

pub use super::sasl_authenticate::After;

pub struct SaslServed {
    pub response: ResponseKind,
    pub after: After,
}

/// Answers a SaslHandshake or SaslAuthenticate request; `None` for any other request.
pub async fn serve(server: &mut SaslServer, request: &Request) -> Option<SaslServed> {
    let version = request.version();
    match &request.body {
        RequestKind::SaslHandshake(r) => {
            let (response, close) = super::sasl_handshake::handle(server, version, r);
            Some(SaslServed {
                response: ResponseKind::SaslHandshake(response),
                after: if close { After::Close } else { After::Continue },
            })
        }
        RequestKind::SaslAuthenticate(r) => {
            let (response, after) = super::sasl_authenticate::handle(server, r).await;
            Some(SaslServed {
                response: ResponseKind::SaslAuthenticate(response),
                after,
            })
        }
        _ => None,
    }
}
