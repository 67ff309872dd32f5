//! TLS for SSL listeners.
//!
//! - [`subject`] and [`principal_mapping`]: certificate subject to RFC 2253 text, and Kafka's
//!   `ssl.principal.mapping.rules` from that text to a principal name.

pub mod principal_mapping;
pub mod subject;
