//! The log engine: appends record-batch payloads to many partition streams, packs them into
//! shared WAL objects in object storage, assigns offsets through an index in a MetaStore, and
//! reads them back by offset. Knows nothing of Kafka requests: callers hand in opaque payloads
//! with per-batch metadata ([`BatchMeta`]).

pub mod allocator;
mod cache;
pub mod clock;
pub mod compacted;
pub mod config;
pub mod cpu;
mod engine;
mod error;
pub mod health;
pub mod index;
pub mod objects;
pub mod settings;
pub mod stream;
pub mod topics;
pub mod transactions;
pub mod wal;

/// The Kafka record-batch format, for callers that hand storage Kafka payloads.
pub use record_batch;

pub use config::StorageConfig;
pub use engine::{AppendOutcome, PendingAppend, ReadChunk, ReadResult, Storage, StreamBounds};
pub use error::StorageError;
pub use index::{BatchMeta, FileType, IndexEntry, ProducerMeta};
