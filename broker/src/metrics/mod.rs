//! The broker's metrics (`docs/metrics.md`): requests by API, produce and fetch traffic by topic,
//! connections, pending produce bytes, groups by state, consumer-group lag, fetch and
//! produce latency by stage. Object-store and MetaStore metrics are
//! recorded in `storage`, the HTTP listener is `telemetry`'s.

mod connections;
mod gauges;
mod lag;
mod requests;
mod response_errors;
pub mod settings;
mod stages;
mod topics;
mod transactions;

pub use connections::connection_opened;
pub use gauges::{register_broker_gauges, spawn_group_sampler};
pub use lag::{spawn_lag_sampler, LagConfig};
pub use requests::record_request;
pub use stages::{produce_answered, FetchStages};
pub use topics::{fetched, produced, schema_validation_refused};
pub use transactions::{marker_written, transaction_completed, transaction_timed_out};

/// Lists every metric before the first event, so a scrape shows each family from the start.
pub fn register() {
    requests::register();
    stages::register();
    topics::register();
    storage::objects::register_metrics();
    metastore::register_metrics();
    crate::slots::register_metrics();
    connections::register();
    crate::quotas::register_metrics();
    transactions::register();
}
