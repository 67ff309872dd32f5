//! The process-wide registry, and constructors that create a metric and register it at once.

use std::sync::{LazyLock, Mutex, MutexGuard};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(|| Mutex::new(Registry::default()));

/// The registry; a panic elsewhere while it was held leaves it usable (it holds only counters).
pub fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Every metric in the OpenMetrics text format Prometheus scrapes.
pub fn encode() -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry())?;
    Ok(text)
}

/// Latency buckets from 0.5 ms to about 33 s, doubling: an object PUT on S3 (tens to hundreds
/// of ms), a local fsync (sub-ms to ms) and a long poll (up to the fetch wait) all land in one.
#[derive(Clone, Copy, Debug, Default)]
pub struct LatencyBuckets;

impl MetricConstructor<Histogram> for LatencyBuckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(exponential_buckets(0.0005, 2.0, 17))
    }
}

/// A histogram of seconds per label set.
pub type LatencyFamily<L> = Family<L, Histogram, LatencyBuckets>;

/// A counter per label set; `name` without `_total` (OpenMetrics adds it).
pub fn counter_family<L>(name: &str, help: &str) -> Family<L, Counter>
where
    L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static,
{
    let family = Family::<L, Counter>::default();
    registry().register(name, help, family.clone());
    family
}

/// A gauge per label set.
pub fn gauge_family<L>(name: &str, help: &str) -> Family<L, Gauge>
where
    L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static,
{
    let family = Family::<L, Gauge>::default();
    registry().register(name, help, family.clone());
    family
}

/// One counter; `name` without `_total`.
pub fn counter(name: &str, help: &str) -> Counter {
    let counter = Counter::default();
    registry().register(name, help, counter.clone());
    counter
}

/// One gauge.
pub fn gauge(name: &str, help: &str) -> Gauge {
    let gauge = Gauge::default();
    registry().register(name, help, gauge.clone());
    gauge
}

/// A histogram of seconds per label set; `name` without `_seconds` (the unit adds it).
pub fn histogram_family<L>(name: &str, help: &str) -> LatencyFamily<L>
where
    L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static,
{
    let family = Family::new_with_constructor(LatencyBuckets);
    registry().register_with_unit(name, help, Unit::Seconds, family.clone());
    family
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct Labels {
        topic: String,
    }

    #[test]
    fn registered_metrics_appear_in_the_text_with_their_labels() {
        let family = counter_family::<Labels>("telemetry_test_things", "things seen");
        family
            .get_or_create(&Labels {
                topic: "orders".into(),
            })
            .inc_by(3);
        let latency = histogram_family::<Labels>("telemetry_test_wait", "waits");
        latency
            .get_or_create(&Labels { topic: "a".into() })
            .observe(0.002);
        let text = encode().unwrap_or_default();
        assert!(
            text.contains("telemetry_test_things_total{topic=\"orders\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("telemetry_test_wait_seconds_count{topic=\"a\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE telemetry_test_wait_seconds histogram"),
            "{text}"
        );
    }
}
