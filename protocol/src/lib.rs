//! Kafka wire protocol: framing, request/response codecs on `kafka-protocol`, the table of API
//! versions we serve. The record-batch format is the `record-batch` crate beside this one.

pub mod codec;
pub mod features;
pub mod frame;
pub mod versions;

pub use kafka_protocol;
