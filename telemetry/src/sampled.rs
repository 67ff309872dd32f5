//! Gauges read at scrape time from the state that owns them (groups by state, connections,
//! tasks by state), so no code path has to keep a copy of a count in step.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// One sample: label pairs and the value.
pub type Sample = (Vec<(&'static str, String)>, i64);

type Sampler = Box<dyn Fn() -> Vec<Sample> + Send + Sync>;

/// Label values are cut to this many bytes (at a char boundary) and end in [`TRUNCATED_MARKER`]:
/// names come from clients (group ids up to 32,767 bytes) and every series repeats them.
pub const LABEL_VALUE_BYTES_MAX: usize = 128;
/// Marker appended to a cut label value.
pub const TRUNCATED_MARKER: &str = "...";
/// Series served per sampled family; the rest are dropped and counted in
/// `telemetry_series_dropped_total`.
pub const SERIES_PER_FAMILY_MAX: usize = 1000;

static SERIES_DROPPED: std::sync::LazyLock<prometheus_client::metrics::counter::Counter> =
    std::sync::LazyLock::new(Default::default);
static SERIES_DROPPED_REGISTERED: std::sync::Once = std::sync::Once::new();

/// `value` cut to [`LABEL_VALUE_BYTES_MAX`] bytes plus the marker, or unchanged if it fits.
pub fn capped_label_value(value: &str) -> std::borrow::Cow<'_, str> {
    if value.len() <= LABEL_VALUE_BYTES_MAX {
        return std::borrow::Cow::Borrowed(value);
    }
    let mut end = LABEL_VALUE_BYTES_MAX;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}{TRUNCATED_MARKER}", &value[..end]))
}

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
        if samples.len() > SERIES_PER_FAMILY_MAX {
            SERIES_DROPPED.inc_by((samples.len() - SERIES_PER_FAMILY_MAX) as u64);
        }
        for (labels, value) in samples.into_iter().take(SERIES_PER_FAMILY_MAX) {
            let labels: Vec<(&str, std::borrow::Cow<'_, str>)> = labels
                .iter()
                .map(|(k, v)| (*k, capped_label_value(v)))
                .collect();
            let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_ref())).collect();
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
    SERIES_DROPPED_REGISTERED.call_once(|| {
        crate::registry::registry().register(
            "telemetry_series_dropped",
            "sampled series dropped past the per-family cap",
            SERIES_DROPPED.clone(),
        );
    });
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

    #[test]
    fn long_label_values_are_cut_with_a_marker_and_extra_series_dropped() {
        let group = "g".repeat(40_000);
        register_sampled_gauge("telemetry_test_capped", "capped", move || {
            (0..SERIES_PER_FAMILY_MAX + 5)
                .map(|i| (vec![("group", format!("{group}{i}"))], 1))
                .collect()
        });
        let text = crate::encode().unwrap_or_default();
        let cut = format!("{}{TRUNCATED_MARKER}", "g".repeat(LABEL_VALUE_BYTES_MAX));
        assert!(text.contains(&cut), "no cut label");
        assert!(!text.contains(&"g".repeat(LABEL_VALUE_BYTES_MAX + 1)));
        let served = text.matches("telemetry_test_capped{").count();
        assert_eq!(served, SERIES_PER_FAMILY_MAX);
        // The counter is written before the family that bumps it: the next scrape shows it. Other
        // tests scrape concurrently, so this family may have been dropped from more than once.
        let text = crate::encode().unwrap_or_default();
        let dropped: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("telemetry_series_dropped_total "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        assert!(dropped >= 5, "dropped {dropped}");
    }
}
