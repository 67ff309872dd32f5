//! Produce latency by stage, as the WAL writer sees an append (`docs/metrics.md`):
//! `queue` (admitted until its segment is cut), `put` (cut until the object PUT succeeded:
//! encoding, a PUT slot, the PUT itself), `commit` (PUT done until the stream's index entry is
//! committed: earlier segments' PUTs, the stream's previous commit, the MetaStore sequence
//! put). The broker adds `response` (durable until the response is ready), which
//! [`durable_at`] lets it measure.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageLabels {
    pub stage: &'static str,
}

static PRODUCE_STAGES: LazyLock<telemetry::LatencyFamily<StageLabels>> = LazyLock::new(|| {
    telemetry::histogram_family(
        "diskless_produce_stage_duration",
        "Produce latency by stage: queue (admitted to segment cut), put (cut to object PUT done), commit (PUT done to index commit), response (durable to response ready)",
    )
});

pub fn register_metrics() {
    LazyLock::force(&PRODUCE_STAGES);
}

/// One append (or one object, for `put`, or one stream slice, for `commit`) spent `elapsed`
/// in `stage`.
pub fn observe(stage: &'static str, elapsed: Duration) {
    if !telemetry::enabled() {
        return;
    }
    PRODUCE_STAGES
        .get_or_create(&StageLabels { stage })
        .observe(elapsed.as_secs_f64());
}

tokio::task_local! {
    /// The latest moment an append awaited in this task became durable.
    static DURABLE_AT: std::cell::Cell<Option<Instant>>;
}

/// Runs `request` and returns, with its output, the moment the last append it awaited became
/// durable (none if it awaited none). The time travels in a task-local, so that the request's
/// handler needs no change to report it.
pub async fn durable_at<F: std::future::Future>(request: F) -> (F::Output, Option<Instant>) {
    DURABLE_AT
        .scope(std::cell::Cell::new(None), async move {
            let output = request.await;
            (output, DURABLE_AT.with(std::cell::Cell::get))
        })
        .await
}

/// Called as an awaited append completes; outside [`durable_at`] it does nothing.
pub(crate) fn mark_durable(at: Instant) {
    let _ = DURABLE_AT.try_with(|cell| {
        cell.set(Some(cell.get().map_or(at, |seen| seen.max(at))));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_latest_durable_moment_of_a_request_is_reported() {
        let first = Instant::now();
        let second = first + Duration::from_millis(5);
        let ((), seen) = durable_at(async move {
            mark_durable(second);
            mark_durable(first);
        })
        .await;
        assert_eq!(seen, Some(second));
        let ((), none) = durable_at(async {}).await;
        assert_eq!(none, None);
        // Outside a scope nothing is kept, and nothing fails.
        mark_durable(first);
    }
}
