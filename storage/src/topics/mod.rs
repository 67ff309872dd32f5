//! Topics as the catalog stores them, and Kafka's topic configs: their definitions (name, type,
//! default, validator, documentation, effect here), the broker-level defaults that stand in for
//! absent overrides, and the typed [`TopicConfig`] both the broker and the compactor read.

mod record;

pub use record::*;
