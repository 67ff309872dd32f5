//! Byte-bounded caches in front of the object store. Cached values are `Bytes`: a reader holding
//! a clone keeps its buffer alive (a lease) even after the cache evicts the entry, so eviction
//! never frees memory under an in-flight read, and the cache bound stays exact.

mod bounded;

pub use bounded::{subslice, BoundedCache};

/// Whole WAL objects recently written, by object key: tailing reads never touch the store.
pub type WriteCache = BoundedCache<String>;

/// Slices read back from the store, by (object key, byte offset, byte length).
pub type ReadCache = BoundedCache<(String, u64, u32)>;
