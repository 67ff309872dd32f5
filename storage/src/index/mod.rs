//! The offset index: one MetaStore record per (stream, appended slice), keyed
//! `s/<stream>/i-<end_offset_exclusive:%020d>-<cumulative_bytes:%020d>` by a sequence-key put
//! whose deltas are (record count, byte count). The put assigns offsets atomically; a read at
//! offset N is a ceiling lookup on end offset N + 1.

mod entry;
mod store;

pub use entry::{BatchMeta, FileType, IndexEntry, ProducerMeta, BATCHES_PER_ENTRY_MAX};
pub use store::{Index, LocatedEntry, StoredEntry};
