//! Object-store latency as the clouds have it, for benchmarks: each call waits a time drawn
//! from a log-normal distribution (by operation: median and p99) plus its bytes over a
//! per-request bandwidth, then goes to the real store underneath. Profiles and the published
//! figures they are fitted to are in `docs/object-latency.md`; `object_store_latency_profile`
//! selects one (never set in production: it only slows a store down).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use object_store::Result;

use super::intercept::{Call, Intercepted, Interceptor};
use super::Operation;

/// A profile's name as the setting spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyProfile {
    None,
    S3Standard,
    S3Express,
}

impl LatencyProfile {
    pub const NAMES: [&'static str; 3] = ["none", "s3-standard", "s3-express"];

    pub fn parse(name: &str) -> Option<LatencyProfile> {
        match name {
            "none" => Some(LatencyProfile::None),
            "s3-standard" => Some(LatencyProfile::S3Standard),
            "s3-express" => Some(LatencyProfile::S3Express),
            _ => None,
        }
    }

    /// `(median ms, p99 ms)` of one request's fixed part, by operation.
    fn fixed_ms(self, op: Operation) -> (f64, f64) {
        match (self, op) {
            (LatencyProfile::None, _) => (0.0, 0.0),
            (LatencyProfile::S3Standard, Operation::Put) => (60.0, 160.0),
            (LatencyProfile::S3Standard, Operation::Get) => (30.0, 110.0),
            (LatencyProfile::S3Standard, _) => (25.0, 90.0),
            (LatencyProfile::S3Express, Operation::Put) => (6.0, 15.0),
            (LatencyProfile::S3Express, Operation::Get) => (4.0, 11.0),
            (LatencyProfile::S3Express, _) => (4.0, 10.0),
        }
    }

    /// Bytes per second one request moves once started.
    fn bandwidth_bytes_per_sec(self) -> f64 {
        match self {
            LatencyProfile::None => f64::INFINITY,
            LatencyProfile::S3Standard => 90.0 * 1024.0 * 1024.0,
            LatencyProfile::S3Express => 200.0 * 1024.0 * 1024.0,
        }
    }
}

/// The interceptor: a profile and the state of its random draws.
#[derive(Debug)]
pub struct ModeledLatency {
    profile: LatencyProfile,
    seed: AtomicU64,
}

/// A store with the latency of a profile.
pub type ModeledObjectStore = Intercepted<ModeledLatency>;

/// z of the 99th percentile of the standard normal distribution.
const Z_P99: f64 = 2.326_347_9;

impl ModeledLatency {
    pub fn new(profile: LatencyProfile, seed: u64) -> ModeledLatency {
        ModeledLatency {
            profile,
            seed: AtomicU64::new(seed | 1),
        }
    }

    /// A uniform draw in (0, 1) (xorshift64*: benchmarks need spread, not secrecy).
    fn uniform(&self) -> f64 {
        let mut x = self.seed.load(Ordering::Relaxed);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.seed.store(x, Ordering::Relaxed);
        let bits = x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        (bits as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal draw (Box-Muller).
    fn normal(&self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// The wait of one call of `op` moving `bytes`.
    pub fn sample(&self, op: Operation, bytes: u64) -> Duration {
        let (median, p99) = self.profile.fixed_ms(op);
        if median <= 0.0 {
            return Duration::ZERO;
        }
        let sigma = (p99 / median).ln() / Z_P99;
        let fixed_ms = median * (sigma * self.normal()).exp();
        let transfer_ms = bytes as f64 * 1000.0 / self.profile.bandwidth_bytes_per_sec();
        Duration::from_secs_f64((fixed_ms + transfer_ms) / 1000.0)
    }
}

#[async_trait]
impl Interceptor for ModeledLatency {
    async fn before(&self, call: &Call) -> Result<()> {
        let bytes = call.put_bytes.or(call.get_bytes).unwrap_or(0);
        let wait = self.sample(call.operation, bytes);
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Ok(())
    }

    fn name(&self) -> &'static str {
        "ModeledObjectStore"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `per_mille`-th quantile of 20,000 draws, in ms.
    fn quantile(model: &ModeledLatency, op: Operation, bytes: u64, per_mille: usize) -> f64 {
        let mut draws: Vec<f64> = (0..20_000)
            .map(|_| model.sample(op, bytes).as_secs_f64() * 1000.0)
            .collect();
        draws.sort_by(f64::total_cmp);
        draws[per_mille * draws.len() / 1000]
    }

    #[test]
    fn draws_follow_the_profiles_median_and_p99() {
        let model = ModeledLatency::new(LatencyProfile::S3Standard, 42);
        let median = quantile(&model, Operation::Put, 0, 500);
        let p99 = quantile(&model, Operation::Put, 0, 990);
        assert!((55.0..65.0).contains(&median), "median {median}");
        assert!((140.0..185.0).contains(&p99), "p99 {p99}");
    }

    #[test]
    fn bytes_add_their_transfer_time() {
        let model = ModeledLatency::new(LatencyProfile::S3Express, 7);
        let small = quantile(&model, Operation::Put, 0, 500);
        let large = quantile(&model, Operation::Put, 20 * 1024 * 1024, 500);
        assert!((large - small - 100.0).abs() < 10.0, "{small} vs {large}");
    }

    #[test]
    fn no_profile_adds_nothing_and_names_parse() {
        let model = ModeledLatency::new(LatencyProfile::None, 1);
        assert_eq!(model.sample(Operation::Get, 1 << 30), Duration::ZERO);
        for name in LatencyProfile::NAMES {
            assert!(LatencyProfile::parse(name).is_some());
        }
        assert_eq!(LatencyProfile::parse("s3"), None);
    }
}
