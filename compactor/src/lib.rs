//! The compactor: rewrites the shared WAL objects into per-stream Parquet files, swaps the
//! offset index to them, and reclaims WAL objects nobody references any more.
//! See `docs/compaction.md` for the swap order and the object lifecycle.

pub mod cli;
pub mod clock;
pub mod config;
pub mod error;
pub mod keyed;
mod leader;
pub mod metrics;
mod orphans;
mod pass;
mod reclaim;
mod referenced;
mod retention;
mod scheduler;
mod swap;
mod tables;
pub mod tasks;
mod throttle;
mod upload;
mod wal_scan;

pub use config::CompactorConfig;
pub use error::CompactorError;
pub use pass::{Compactor, PassReport};
pub use tables::TablesReport;
