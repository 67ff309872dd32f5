//! Security at the connection: who a client is ([`Principal`]), how a SASL listener proves it
//! ([`sasl`]), and what it may do ([`authorizer`], with Kafka's ACLs: [`acl`]).
//!
//! The listener's security protocol decides TLS and SASL; the connection carries a
//! [`Session`] from its first byte, and every request handler sees the session's principal in
//! its `RequestContext`.

pub mod acl;
pub mod authorizer;
pub mod http_access;
pub mod principal;
pub mod sasl;
pub mod scram;
pub mod session;

pub use principal::Principal;
pub use session::{SecurityProtocol, Session};
