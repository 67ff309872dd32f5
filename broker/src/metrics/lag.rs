//! Consumer-group lag: for each group this broker coordinates, each partition it committed an
//! offset for, the high watermark minus the committed offset (Kafka's `kafka-consumer-groups
//! --describe` LAG, as `kafka_exporter` names it). Sampled every `consumer_lag_interval_ms` by a
//! task of its own (committed offsets are MetaStore reads, which a scrape must not wait for);
//! the scrape reads the latest sample. At most `consumer_lag_max_series` series: once they are
//! taken, the remaining groups are not even read, so neither Prometheus nor the MetaStore pays
//! for a broker with many groups; the groups left out are counted.

use std::sync::{LazyLock, Mutex, Weak};
use std::time::Duration;

use telemetry::sampled::{register_sampled_gauge, Sample};
use tokio::sync::watch;

use crate::context::Broker;

/// The lag metric's settings (`metrics::settings`).
#[derive(Debug, Clone, Copy)]
pub struct LagConfig {
    pub enabled: bool,
    pub max_series: usize,
    pub interval: Duration,
}

/// The latest sample: the series, and how many groups the cap left out (wholly or in part).
#[derive(Default)]
struct Snapshot {
    series: Vec<Sample>,
    dropped_groups: usize,
}

static SNAPSHOT: LazyLock<Mutex<Snapshot>> = LazyLock::new(Mutex::default);

static REGISTERED: LazyLock<()> = LazyLock::new(|| {
    register_sampled_gauge(
        "kafka_consumergroup_lag",
        "Records between a group's committed offset and the partition's high watermark, by consumergroup, topic and partition (groups this broker coordinates; sampled every consumer_lag_interval_ms)",
        || snapshot().series.clone(),
    );
    register_sampled_gauge(
        "diskless_consumergroup_lag_groups_dropped",
        "Groups whose lag kafka_consumergroup_lag left out, wholly or in part, because of consumer_lag_max_series at the last sample",
        || vec![(Vec::new(), i64::try_from(snapshot().dropped_groups).unwrap_or(i64::MAX))],
    );
});

fn snapshot() -> std::sync::MutexGuard<'static, Snapshot> {
    SNAPSHOT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Samples lag every `config.interval` until `shutdown`; nothing when the metric is off.
pub fn spawn_lag_sampler(
    broker: Weak<Broker>,
    config: LagConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    if !config.enabled {
        return;
    }
    LazyLock::force(&REGISTERED);
    tokio::spawn(async move {
        loop {
            let Some(live) = broker.upgrade() else { return };
            let sampled = sample(&live, config.max_series).await;
            drop(live);
            *snapshot() = sampled;
            tokio::select! {
                _ = tokio::time::sleep(config.interval) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
        }
    });
}

async fn sample(broker: &Broker, max_series: usize) -> Snapshot {
    let mut snapshot = Snapshot::default();
    for group in group_ids(broker).await {
        if snapshot.series.len() >= max_series {
            snapshot.dropped_groups += 1;
            continue;
        }
        let committed = match broker.groups.fetch_offsets(&group, None).await {
            Ok(committed) => committed,
            Err(error) => {
                tracing::debug!(group, ?error, "lag not sampled: offsets unreadable");
                continue;
            }
        };
        for offset in committed {
            if snapshot.series.len() >= max_series {
                snapshot.dropped_groups += 1;
                break;
            }
            let Some(lag) = partition_lag(
                broker,
                &offset.topic,
                offset.partition,
                offset.record.offset,
            )
            .await
            else {
                continue;
            };
            let labels = vec![
                ("consumergroup", group.clone()),
                ("topic", offset.topic),
                ("partition", offset.partition.to_string()),
            ];
            snapshot.series.push((labels, lag));
        }
    }
    snapshot
}

/// Every group this broker's coordinators hold, classic and consumer, sorted, once each.
async fn group_ids(broker: &Broker) -> Vec<String> {
    let mut ids: Vec<String> = broker
        .groups
        .list()
        .await
        .into_iter()
        .map(|g| g.group_id)
        .chain(
            broker
                .groups
                .consumer()
                .list()
                .await
                .into_iter()
                .map(|g| g.group_id),
        )
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// High watermark minus `committed`, at least 0; `None` for a topic or partition that is gone.
async fn partition_lag(
    broker: &Broker,
    topic: &str,
    partition: i32,
    committed: i64,
) -> Option<i64> {
    let topic = broker.catalog.get(topic)?;
    if partition >= topic.record.partitions || committed < 0 {
        return None;
    }
    match broker.storage.bounds(&topic.stream_id(partition)).await {
        Ok(bounds) => {
            let end = crate::handlers::kafka_offset(bounds.high_watermark);
            Some(end.saturating_sub(committed).max(0))
        }
        Err(error) => {
            tracing::debug!(topic = topic.name, partition, %error, "lag not sampled: bounds unreadable");
            None
        }
    }
}
