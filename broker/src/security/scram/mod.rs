//! SCRAM (RFC 5802, RFC 7677) as Kafka offers it: SCRAM-SHA-256 and SCRAM-SHA-512, the
//! credentials in the MetaStore (salted and hashed as Kafka's `ScramCredential`, never the
//! password), and the server side of the exchange.

pub mod credential;
pub mod mechanism;
pub mod messages;
pub mod server;
pub mod store;

pub use credential::{CredentialError, ScramCredential};
pub use mechanism::{constant_time_eq, ScramMechanism};
pub use server::{CredentialLookup, ScramFailure, ScramServer, ScramStep};
pub use store::{ScramCredentials, ScramStoreError};
