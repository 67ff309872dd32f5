//! Confluent's Schema Registry API over the MetaStore: every broker of a cluster serves the
//! same registry (`docs/schema-registry.md`). [`Registry`] holds the operations, [`api`] the
//! REST listener, [`validation`] the checks the broker runs on produced records.

pub mod api;
pub mod compatibility;
pub mod error;
pub mod metrics;
pub mod mode;
pub mod registry;
pub mod schema;
pub mod store;
pub mod validation;

pub use error::{RegistryError, RegistryResult};
pub use registry::{Registry, SchemaRequest, SchemaView, VersionSpec};
