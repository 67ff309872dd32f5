//! Cache metrics (`docs/metrics.md`): lookups by result and bytes held, per cache name,
//! resolved once when a cache is made so a lookup costs one atomic increment.

use std::sync::LazyLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LookupLabels {
    cache: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheLabels {
    cache: &'static str,
}

struct Families {
    lookups: Family<LookupLabels, Counter>,
    bytes: Family<CacheLabels, Gauge>,
}

static FAMILIES: LazyLock<Families> = LazyLock::new(|| {
    Families {
    lookups: telemetry::counter_family(
        "diskless_cache_lookups",
        "Cache lookups by cache (write, read, footer, rebuilt) and result (hit, miss); the hit ratio is hits over both",
    ),
    bytes: telemetry::gauge_family(
        "diskless_cache_bytes",
        "Bytes a cache holds (each cache is bounded by its *_cache_bytes setting)",
    ),
}
});

/// One cache's series.
pub struct CacheMetrics {
    hits: Counter,
    misses: Counter,
    bytes: Gauge,
}

impl CacheMetrics {
    pub fn named(cache: &'static str) -> CacheMetrics {
        let lookups = |result| {
            FAMILIES
                .lookups
                .get_or_create(&LookupLabels { cache, result })
                .clone()
        };
        CacheMetrics {
            hits: lookups("hit"),
            misses: lookups("miss"),
            bytes: FAMILIES.bytes.get_or_create(&CacheLabels { cache }).clone(),
        }
    }

    pub fn looked_up(&self, hit: bool) {
        if telemetry::enabled() {
            if hit {
                self.hits.inc();
            } else {
                self.misses.inc();
            }
        }
    }

    /// `added` bytes in, `removed` bytes out.
    pub fn resized(&self, added: usize, removed: usize) {
        if telemetry::enabled() {
            let delta = i64::try_from(added).unwrap_or(i64::MAX)
                - i64::try_from(removed).unwrap_or(i64::MAX);
            self.bytes.inc_by(delta);
        }
    }
}
