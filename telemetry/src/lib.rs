//! Prometheus metrics of both binaries, and the HTTP listener that serves them with the health
//! and readiness checks (`--http-listen`). Every crate defines its metrics next to the code that
//! records them, registered in the one process-wide [`registry`] (as Kafka's metrics registry is
//! one per JVM); `docs/metrics.md` lists them all.

pub mod http;
pub mod logging;
pub mod ready;
pub mod registry;
pub mod sampled;

pub use prometheus_client;
pub use registry::{counter_family, encode, gauge, gauge_family, histogram_family, LatencyFamily};
