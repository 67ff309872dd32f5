//! Requests by API: count, errors by code (as Kafka's `ErrorsPerSec`, every error code of the
//! response counted, NONE included) and the time the handler took.

use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, ResponseKind};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use super::response_errors::error_codes;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    request: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    request: String,
    error: String,
}

struct Metrics {
    requests: Family<RequestLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    latency: telemetry::LatencyFamily<RequestLabels>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    Metrics {
    requests: telemetry::counter_family(
        "kafka_network_requests",
        "Requests served, by API (Kafka's RequestsPerSec)",
    ),
    errors: telemetry::counter_family(
        "kafka_network_request_errors",
        "Error codes in responses, by API and code, NONE included (Kafka's ErrorsPerSec)",
    ),
    latency: telemetry::histogram_family(
        "kafka_network_request_duration",
        "Seconds from a decoded request to its encoded-ready response, by API (long polls included)",
    ),
}
});

pub(super) fn register() {
    LazyLock::force(&METRICS);
}

/// Records one served request; `response` is `None` for acks=0 produce and closed connections.
pub fn record_request(api: ApiKey, elapsed: Duration, response: Option<&ResponseKind>) {
    if !telemetry::enabled() {
        return;
    }
    let request = format!("{api:?}");
    let labels = RequestLabels { request };
    METRICS.requests.get_or_create(&labels).inc();
    METRICS
        .latency
        .get_or_create(&labels)
        .observe(elapsed.as_secs_f64());
    let Some(response) = response else {
        return;
    };
    let mut counts: BTreeMap<i16, u64> = BTreeMap::new();
    for code in error_codes(response) {
        *counts.entry(code).or_default() += 1;
    }
    for (code, count) in counts {
        let labels = ErrorLabels {
            request: labels.request.clone(),
            error: error_name(code),
        };
        METRICS.errors.get_or_create(&labels).inc_by(count);
    }
}

/// Kafka's name of an error code: `NONE`, `NOT_LEADER_OR_FOLLOWER`, ...
pub(crate) fn error_name(code: i16) -> String {
    if code == 0 {
        return "NONE".into();
    }
    let name = kafka_protocol::ResponseError::try_from_code(code).map(|e| format!("{e:?}"));
    // Codes Kafka does not define decode as `Unknown(code)`.
    let Some(name) = name.filter(|n| n.chars().all(char::is_alphanumeric)) else {
        return format!("UNKNOWN_CODE_{code}");
    };
    name.chars().fold(String::new(), |mut name, c| {
        if c.is_uppercase() && !name.is_empty() {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
        name
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_are_kafkas() {
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(6), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(error_name(29), "TOPIC_AUTHORIZATION_FAILED");
        assert_eq!(error_name(-32000), "UNKNOWN_CODE_-32000");
    }
}
