//! What a connection knows of its client's security: the listener it came through and, once
//! known, who the client is.

use std::net::SocketAddr;

use super::Principal;

/// Kafka's security protocols, as listeners name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub fn parse(name: &str) -> Option<SecurityProtocol> {
        match name {
            "PLAINTEXT" => Some(SecurityProtocol::Plaintext),
            "SSL" => Some(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Some(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Some(SecurityProtocol::SaslSsl),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

/// The security state of one connection.
#[derive(Debug, Clone)]
pub struct Session {
    /// The listener's name (`PLAINTEXT`, `EXTERNAL`, ...): Metadata answers with its
    /// advertised addresses.
    pub listener: String,
    pub protocol: SecurityProtocol,
    pub peer: SocketAddr,
    /// `User:ANONYMOUS` until authentication (mTLS or SASL) names the client.
    pub principal: Principal,
}

impl Session {
    /// A connection from `peer` on the listener `listener`, whose protocol is `protocol`:
    /// `principal` is `User:ANONYMOUS` on PLAINTEXT, the mapped certificate subject (or
    /// anonymous) on SSL.
    pub fn new(
        listener: impl Into<String>,
        protocol: SecurityProtocol,
        peer: SocketAddr,
        principal: Principal,
    ) -> Session {
        Session {
            listener: listener.into(),
            protocol,
            peer,
            principal,
        }
    }

    /// A connection on a PLAINTEXT listener named `listener`.
    pub fn plaintext(listener: impl Into<String>, peer: SocketAddr) -> Session {
        Session::new(
            listener,
            SecurityProtocol::Plaintext,
            peer,
            Principal::anonymous(),
        )
    }
}
