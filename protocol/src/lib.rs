//! Kafka wire protocol: framing, request/response codecs on `kafka-protocol`, the table of API
//! versions we serve, and magic-2 record batch validation.

pub mod batch;
pub mod codec;
pub mod frame;
pub mod versions;

pub use kafka_protocol;
