//! Byte-bounded caches in front of the object store. Cached values are `Bytes` (or made of them): a reader holding
//! a clone keeps its buffer alive (a lease) even after the cache evicts the entry, so eviction
//! never frees memory under an in-flight read, and the cache bound stays exact.

mod bounded;
mod fill;
mod metrics;

pub use bounded::{BoundedCache, Weigh};
pub use fill::FillLocks;

/// Parsed footers of compacted files, by object key: a read parses a file's footer once.
pub type FooterCache = BoundedCache<String, std::sync::Arc<crate::compacted::Footer>>;

/// Batches rebuilt from one row group of a compacted file, by (object key, row group): the
/// reads that follow a catch-up consumer through a row group decode it once.
pub type RebuiltCache =
    BoundedCache<(String, usize), std::sync::Arc<crate::compacted::RebuiltGroup>>;
