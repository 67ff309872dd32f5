//! Gauges read at scrape time from the state that owns them (groups by state, connections,
//! tasks by state), so no code path has to keep a copy of a count in step.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// One sample: label pairs and the value.
pub type Sample = (Vec<(&'static str, String)>, i64);

type Sampler = Box<dyn Fn() -> Vec<Sample> + Send + Sync>;

struct SampledGauge {
    name: &'static str,
    help: &'static str,
    sample: Sampler,
}

impl std::fmt::Debug for SampledGauge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SampledGauge")
            .field("name", &self.name)
            .finish()
    }
}

impl Collector for SampledGauge {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let samples = (self.sample)();
        let mut family =
            encoder.encode_descriptor(self.name, self.help, None, MetricType::Gauge)?;
        for (labels, value) in samples {
            let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let metric = family.encode_family(&labels)?;
            ConstGauge::new(value).encode(metric)?;
        }
        Ok(())
    }
}

/// Registers a gauge family whose samples `sample` returns at each scrape. `sample` must be
/// cheap and must not block: it runs inside the scrape.
pub fn register_sampled_gauge(
    name: &'static str,
    help: &'static str,
    sample: impl Fn() -> Vec<Sample> + Send + Sync + 'static,
) {
    let collector = SampledGauge {
        name,
        help,
        sample: Box::new(sample),
    };
    crate::registry::registry().register_collector(Box::new(collector));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_gauges_are_read_at_each_scrape() {
        let value = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(2));
        let read = value.clone();
        register_sampled_gauge("telemetry_test_groups", "groups by state", move || {
            let n = read.load(std::sync::atomic::Ordering::Relaxed);
            vec![(vec![("state", "Stable".to_string())], n)]
        });
        let first = crate::encode().unwrap_or_default();
        assert!(
            first.contains("telemetry_test_groups{state=\"Stable\"} 2"),
            "{first}"
        );
        value.store(5, std::sync::atomic::Ordering::Relaxed);
        let second = crate::encode().unwrap_or_default();
        assert!(
            second.contains("telemetry_test_groups{state=\"Stable\"} 5"),
            "{second}"
        );
    }
}
