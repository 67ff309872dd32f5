//! Transactions (`docs/metrics.md`): transactions this broker's coordinator completed, by
//! outcome, and how long completion took (from the decision stored to Complete: the markers
//! and the offsets); markers this broker wrote, by kind; transactions it aborted for their
//! timeout.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

struct Metrics {
    completed: Family<OutcomeLabels, Counter>,
    completion: telemetry::LatencyFamily<OutcomeLabels>,
    markers: Family<OutcomeLabels, Counter>,
    timed_out: Counter,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    Metrics {
        completed: telemetry::counter_family(
            "diskless_transactions_completed",
            "Transactions this broker's coordinator completed, by outcome (commit, abort)",
        ),
        completion: telemetry::histogram_family(
            "diskless_transaction_completion_duration",
            "From a transaction's outcome stored to its Complete state: every marker written and the offsets of a commit made visible, by outcome",
        ),
        markers: telemetry::counter_family(
            "diskless_transaction_markers_written",
            "Commit and abort markers this broker appended to partitions, by outcome",
        ),
        timed_out: telemetry::counter(
            "diskless_transactions_timed_out",
            "Open transactions this broker's coordinator aborted because they passed their transaction.timeout.ms",
        ),
    }
});

pub(super) fn register() {
    LazyLock::force(&METRICS);
}

fn outcome(commit: bool) -> OutcomeLabels {
    OutcomeLabels {
        outcome: if commit { "commit" } else { "abort" },
    }
}

/// A transaction completed after `took` since its decision was stored.
pub fn transaction_completed(commit: bool, took: Duration) {
    if !telemetry::enabled() {
        return;
    }
    METRICS.completed.get_or_create(&outcome(commit)).inc();
    METRICS
        .completion
        .get_or_create(&outcome(commit))
        .observe(took.as_secs_f64());
}

pub fn marker_written(commit: bool) {
    if telemetry::enabled() {
        METRICS.markers.get_or_create(&outcome(commit)).inc();
    }
}

pub fn transaction_timed_out() {
    if telemetry::enabled() {
        METRICS.timed_out.inc();
    }
}
