//! The object-store metrics of `docs/metrics.md`: requests, errors, bytes and latency by
//! operation class, for every store the binaries open (one [`Meter`] layer over it).

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use object_store::Result;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use super::intercept::{Call, Finished, Intercepted, Interceptor};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

struct Metrics {
    requests: Family<OperationLabels, Counter>,
    errors: Family<OperationLabels, Counter>,
    bytes: Family<OperationLabels, Counter>,
    latency: telemetry::LatencyFamily<OperationLabels>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| Metrics {
    requests: telemetry::counter_family(
        "diskless_object_store_requests",
        "Object-store calls by operation class (put, get, delete, list), failed ones included",
    ),
    errors: telemetry::counter_family(
        "diskless_object_store_errors",
        "Object-store calls that failed, by operation class (listings and deletes not counted)",
    ),
    bytes: telemetry::counter_family(
        "diskless_object_store_bytes",
        "Payload bytes written by puts and returned by gets",
    ),
    latency: telemetry::histogram_family(
        "diskless_object_store_request_duration",
        "Seconds an object-store call took, by operation class (listings and deletes not timed)",
    ),
});

/// Registers the metrics so that they are listed before the first call.
pub fn register_metrics() {
    LazyLock::force(&METRICS);
}

/// Records every call in the process-wide metrics.
#[derive(Debug, Default)]
pub struct Meter;

/// A store whose calls are recorded in the metrics.
pub type MeteredObjectStore = Intercepted<Meter>;

#[async_trait]
impl Interceptor for Meter {
    async fn before(&self, call: &Call) -> Result<()> {
        if !telemetry::enabled() {
            return Ok(());
        }
        let labels = OperationLabels {
            operation: call.operation.name(),
        };
        METRICS.requests.get_or_create(&labels).inc();
        Ok(())
    }

    fn finished(&self, call: &Call, elapsed: Duration, outcome: Finished) {
        if !telemetry::enabled() {
            return;
        }
        let labels = OperationLabels {
            operation: call.operation.name(),
        };
        METRICS
            .latency
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        if outcome.ok {
            METRICS.bytes.get_or_create(&labels).inc_by(outcome.bytes);
        } else {
            METRICS.errors.get_or_create(&labels).inc();
        }
    }

    fn name(&self) -> &'static str {
        "MeteredObjectStore"
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use object_store::memory::InMemory;
    use object_store::path::Path;
    use object_store::ObjectStoreExt;

    use super::*;

    fn sample(text: &str, line_start: &str) -> f64 {
        text.lines()
            .find(|l| l.starts_with(line_start))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    }

    #[tokio::test]
    async fn puts_and_gets_are_counted_with_their_bytes_and_latency() {
        let store = Intercepted::wrap(Arc::new(InMemory::new()), Meter);
        let before = telemetry::encode().unwrap_or_default();
        let key = Path::from("metered/k");
        store
            .put(&key, Bytes::from_static(b"12345").into())
            .await
            .unwrap();
        let got = store.get(&key).await.unwrap().bytes().await.unwrap();
        assert_eq!(got.len(), 5);
        let _ = store.get(&Path::from("metered/missing")).await;
        let after = telemetry::encode().unwrap_or_default();
        let delta = |line: &str| sample(&after, line) - sample(&before, line);
        assert!(delta("diskless_object_store_requests_total{operation=\"put\"}") >= 1.0);
        assert!(delta("diskless_object_store_bytes_total{operation=\"put\"}") >= 5.0);
        assert!(delta("diskless_object_store_bytes_total{operation=\"get\"}") >= 5.0);
        assert!(delta("diskless_object_store_errors_total{operation=\"get\"}") >= 1.0);
        assert!(
            delta("diskless_object_store_request_duration_seconds_count{operation=\"get\"}") >= 2.0
        );
    }
}
