//! Fetch latency by stage (`docs/metrics.md`): `wait` (the long poll: time spent waiting for a
//! commit or the end of `max_wait_ms`), `read` (reading the partitions, every round of the long
//! poll summed), `response` (building the response's partitions from what was read). Produce
//! stages are recorded by the WAL writer (`storage::wal::stages`); this module adds their
//! `response` stage.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use storage::wal::stages::StageLabels;

static FETCH_STAGES: LazyLock<telemetry::LatencyFamily<StageLabels>> = LazyLock::new(|| {
    telemetry::histogram_family(
        "diskless_fetch_stage_duration",
        "Fetch latency by stage: wait (long poll), read (partitions read, all rounds), response (response partitions built)",
    )
});

pub(super) fn register() {
    LazyLock::force(&FETCH_STAGES);
    storage::wal::stages::register_metrics();
}

/// Where one fetch spent its time; recorded once, when the fetch is answered.
#[derive(Debug, Default)]
pub struct FetchStages {
    pub wait: Duration,
    pub read: Duration,
}

impl FetchStages {
    /// Runs one read of the partitions, adding its time to `read`.
    pub async fn read<T>(&mut self, read: impl std::future::Future<Output = T>) -> T {
        let started = Instant::now();
        let output = read.await;
        self.read += started.elapsed();
        output
    }

    /// Runs one wait of the long poll, adding its time to `wait`.
    pub async fn wait<T>(&mut self, wait: impl std::future::Future<Output = T>) -> T {
        let started = Instant::now();
        let output = wait.await;
        self.wait += started.elapsed();
        output
    }

    /// Records the three stages; `response` is what building the answer took.
    pub fn record(&self, response: Duration) {
        if !telemetry::enabled() {
            return;
        }
        for (stage, elapsed) in [
            ("wait", self.wait),
            ("read", self.read),
            ("response", response),
        ] {
            FETCH_STAGES
                .get_or_create(&StageLabels { stage })
                .observe(elapsed.as_secs_f64());
        }
    }
}

/// A produce that became durable at `durable_at` has its response ready now.
pub fn produce_answered(durable_at: Option<Instant>) {
    if let Some(durable_at) = durable_at {
        storage::wal::stages::observe("response", durable_at.elapsed());
    }
}
