//! The registry's metrics on the process's `/metrics` (`docs/metrics.md`).

use std::sync::LazyLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    error_code: u32,
}

struct Metrics {
    requests: Family<RequestLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    highest_id: Gauge,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    Metrics {
    requests: telemetry::counter_family(
        "schema_registry_requests",
        "Schema registry API requests by method and HTTP status",
    ),
    errors: telemetry::counter_family(
        "schema_registry_errors",
        "Schema registry API errors by Confluent error code",
    ),
    highest_id: telemetry::gauge(
        "schema_registry_schema_id_max",
        "The highest schema id this broker registered or saw registered (ids are dense: the number of schemas)",
    ),
}
});

/// Lists the registry's metrics before the first request.
pub fn register() {
    LazyLock::force(&METRICS);
}

pub fn request(method: &axum::http::Method, status: u16) {
    // Methods outside the API's are counted together, so the label set stays bounded.
    let method = match method.as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        _ => "other",
    };
    METRICS
        .requests
        .get_or_create(&RequestLabels { method, status })
        .inc();
}

pub fn error(error_code: u32) {
    METRICS
        .errors
        .get_or_create(&ErrorLabels { error_code })
        .inc();
}

pub fn registered(id: i32) {
    let id = i64::from(id);
    if METRICS.highest_id.get() < id {
        METRICS.highest_id.set(id);
    }
}
