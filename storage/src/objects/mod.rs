//! Object-store access: opening a store from a URL, counting calls, and (with the `testkit`
//! feature, for tests only) wrappers that inject faults or latency.
//!
//! Every store is an `object_store::ObjectStore`; the wrappers are interceptors of one
//! delegating wrapper, so the engine's fault-injection tests run against the production paths.
//! `storage/tests/objects_conformance.rs` runs one property suite against every backend.

mod counting;
mod error;
#[cfg(feature = "testkit")]
mod failing;
mod folder;
mod intercept;
mod latency_model;
mod metered;
mod open;
mod operation;
#[cfg(feature = "testkit")]
mod slow;
mod staging;

pub use counting::{Counter, CountingObjectStore, OperationCounts};
pub use error::ObjectsError;
#[cfg(feature = "testkit")]
pub use failing::{
    injected, is_injected_fault, FailingObjectStore, FailureMode, Faults, InjectedFault,
};
pub use intercept::{Call, Finished, Intercepted, Interceptor};
pub use latency_model::{LatencyProfile, ModeledLatency, ModeledObjectStore};
pub use metered::{register_metrics, Meter, MeteredObjectStore};
pub use open::{open, open_with, with_latency, OpenOptions};
pub use operation::Operation;
#[cfg(feature = "testkit")]
pub use slow::{Latency, SlowObjectStore};
pub use staging::{local_folder, sweep_staging_files, StagingSweep};
