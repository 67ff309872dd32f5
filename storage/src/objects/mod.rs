//! Object-store access: opening a store from a URL, and wrappers that inject faults or latency.
//!
//! Every store is an `object_store::ObjectStore`; the wrappers delegate to any inner store, so
//! the engine's fault-injection tests run against the same code paths as production.
//! `storage/tests/objects_conformance.rs` runs one property suite against every backend.

mod counting;
mod error;
mod failing;
mod intercept;
mod open;
mod operation;
mod slow;
mod staging;

pub use counting::{Counter, CountingObjectStore, OperationCounts};
pub use error::ObjectsError;
pub use failing::{
    injected, is_injected_fault, FailingObjectStore, FailureMode, Faults, InjectedFault,
};
pub use intercept::{Call, Intercepted, Interceptor};
pub use open::{open, open_with, OpenOptions};
pub use operation::Operation;
pub use slow::{Latency, SlowObjectStore};
pub use staging::{local_folder, sweep_staging_files, StagingSweep};
