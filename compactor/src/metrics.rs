//! The compactor's metrics (`docs/metrics.md`): compacted files and bytes written, and tasks by
//! state (sampled from the task records every few seconds by the `compactor` binary).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use metastore::MetaStore;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

struct Metrics {
    files_written: Counter,
    bytes_written: Counter,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let metrics = Metrics {
        files_written: Counter::default(),
        bytes_written: Counter::default(),
    };
    let mut registry = telemetry::registry::registry();
    registry.register(
        "diskless_compactor_files_written",
        "Parquet files the compactor made visible in the object store",
        metrics.files_written.clone(),
    );
    registry.register(
        "diskless_compactor_bytes_written",
        "Bytes of the Parquet files the compactor made visible",
        metrics.bytes_written.clone(),
    );
    metrics
});

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

static TASKS: LazyLock<Family<StateLabels, Gauge>> = LazyLock::new(|| {
    telemetry::gauge_family(
        "diskless_compactor_tasks",
        "Compaction task records by state (PENDING, RUNNING, DONE, DEAD), read every 5 s",
    )
});

const TASK_SAMPLE_INTERVAL: Duration = Duration::from_secs(5);

static BACKLOG: LazyLock<Gauge> = LazyLock::new(|| {
    telemetry::gauge(
        "diskless_compactor_backlog_bytes",
        "WAL bytes not yet compacted when the last pass planned its work (at most one index page, 1024 entries, per stream)",
    )
});

/// Bytes counted for the pass being planned.
static BACKLOG_PLANNING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(crate) fn backlog_pass_started() {
    BACKLOG_PLANNING.store(0, std::sync::atomic::Ordering::Relaxed);
}

/// A stream's uncompacted RAW bytes, as planning found them.
pub(crate) fn backlog_seen(bytes: u64) {
    BACKLOG_PLANNING.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
}

pub(crate) fn backlog_pass_planned() {
    if telemetry::enabled() {
        let bytes = BACKLOG_PLANNING.load(std::sync::atomic::Ordering::Relaxed);
        BACKLOG.set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }
}

/// Lists the metrics before the first file.
pub fn register() {
    LazyLock::force(&METRICS);
    LazyLock::force(&TASKS);
    LazyLock::force(&BACKLOG);
    LazyLock::force(&TABLE_COMMITS);
    LazyLock::force(&TABLE_COMMIT_FAILURES);
    LazyLock::force(&TABLE_SYNCED);
    LazyLock::force(&TABLE_COMMIT_MS);
}

/// A compacted file of `bytes` was made visible.
pub(crate) fn file_written(bytes: u64) {
    if !telemetry::enabled() {
        return;
    }
    METRICS.files_written.inc();
    METRICS.bytes_written.inc_by(bytes);
}

/// Counts the task records by state every few seconds, until the returned task is aborted.
pub fn spawn_task_sampler(meta: Arc<dyn MetaStore>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match crate::tasks::list_tasks(&meta).await {
                Ok(tasks) => {
                    let mut counts = std::collections::HashMap::new();
                    for task in &tasks {
                        *counts.entry(task.state.name()).or_insert(0i64) += 1;
                    }
                    TASKS.clear();
                    for (state, count) in counts {
                        TASKS.get_or_create(&StateLabels { state }).set(count);
                    }
                }
                Err(error) => tracing::debug!(%error, "cannot count compaction tasks"),
            }
            tokio::time::sleep(TASK_SAMPLE_INTERVAL).await;
        }
    })
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabels {
    topic: String,
}

/// Topics with a label of their own; the rest share [`OTHER_TOPICS`], so a cluster of many
/// table topics cannot grow the registry without bound.
const TABLE_TOPIC_LABELS_MAX: usize = 1_000;
const OTHER_TOPICS: &str = "_other";
static LABELLED: LazyLock<std::sync::Mutex<std::collections::HashSet<String>>> =
    LazyLock::new(Default::default);

fn topic_label(topic: &str) -> TopicLabels {
    let mut labelled = LABELLED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let own = labelled.contains(topic)
        || (labelled.len() < TABLE_TOPIC_LABELS_MAX && labelled.insert(topic.to_string()));
    TopicLabels {
        topic: if own { topic } else { OTHER_TOPICS }.to_string(),
    }
}

static TABLE_COMMITS: LazyLock<Family<TopicLabels, Counter>> = LazyLock::new(|| {
    telemetry::counter_family(
        "diskless_table_commits",
        "Iceberg snapshots the compactor committed, by topic",
    )
});

static TABLE_COMMIT_FAILURES: LazyLock<Family<TopicLabels, Counter>> = LazyLock::new(|| {
    telemetry::counter_family(
        "diskless_table_commit_failures",
        "Iceberg table commits that failed (retried on the next pass), by topic",
    )
});

static TABLE_SYNCED: LazyLock<Family<TopicLabels, Gauge>> = LazyLock::new(|| {
    telemetry::gauge_family(
        "diskless_table_synced_timestamp_ms",
        "When the topic's table was last found or made equal to its compacted files (table lag = now - this)",
    )
});

static TABLE_COMMIT_MS: LazyLock<Gauge> = LazyLock::new(|| {
    telemetry::gauge(
        "diskless_table_last_commit_duration_ms",
        "How long the last Iceberg table commit took (manifest, manifest list, metadata, pointer swap)",
    )
});

/// A table commit (or a check that found nothing to commit) succeeded at `now_ms`.
pub(crate) fn table_synced(topic: &str, now_ms: u64, committed: Option<Duration>) {
    if !telemetry::enabled() {
        return;
    }
    let label = topic_label(topic);
    TABLE_SYNCED
        .get_or_create(&label)
        .set(i64::try_from(now_ms).unwrap_or(i64::MAX));
    if let Some(took) = committed {
        TABLE_COMMITS.get_or_create(&label).inc();
        TABLE_COMMIT_MS.set(i64::try_from(took.as_millis()).unwrap_or(i64::MAX));
    }
}

static TABLE_UNDECODABLE: LazyLock<Family<TopicLabels, Counter>> = LazyLock::new(|| {
    telemetry::counter_family(
        "diskless_table_records_undecodable",
        "Records written to a table whose value did not decode into its typed columns (see value_error), by topic",
    )
});

static TABLE_SCHEMA_REFUSED: LazyLock<Family<TopicLabels, Counter>> = LazyLock::new(|| {
    telemetry::counter_family(
        "diskless_table_schema_versions_refused",
        "Schema versions whose change Iceberg cannot express (their records keep only raw bytes), by topic",
    )
});

pub(crate) fn table_records_undecodable(topic: &str, records: u64) {
    if telemetry::enabled() {
        TABLE_UNDECODABLE
            .get_or_create(&topic_label(topic))
            .inc_by(records);
    }
}

pub(crate) fn table_schema_refused(topic: &str) {
    if telemetry::enabled() {
        TABLE_SCHEMA_REFUSED
            .get_or_create(&topic_label(topic))
            .inc();
    }
}

pub(crate) fn table_commit_failed(topic: &str) {
    if telemetry::enabled() {
        TABLE_COMMIT_FAILURES
            .get_or_create(&topic_label(topic))
            .inc();
    }
}
