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
pub use registry::{
    counter, counter_family, encode, gauge, gauge_family, histogram_family, LatencyFamily,
};

static ENABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns recording on or off for the whole process (`metrics_enabled`), before any traffic.
/// Off, counters and histograms stay at zero; gauges read at scrape time still answer.
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, std::sync::atomic::Ordering::Relaxed);
}

/// Whether events are recorded: every recording site asks first.
pub fn enabled() -> bool {
    ENABLED.load(std::sync::atomic::Ordering::Relaxed)
}
