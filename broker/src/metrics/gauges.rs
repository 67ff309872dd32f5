//! Gauges of the broker's state: pending produce bytes against their limit (read at each
//! scrape) and consumer groups by type and state (sampled every few seconds: listing groups
//! takes their locks, which a scrape must not wait for).

use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::watch;

use crate::context::Broker;

/// The broker the scrape-time gauges read; one per process (the binary), the latest started
/// in tests that start several.
static CURRENT: LazyLock<Mutex<Weak<Broker>>> = LazyLock::new(|| Mutex::new(Weak::new()));

static REGISTERED: LazyLock<()> = LazyLock::new(|| {
    telemetry::sampled::register_sampled_gauge(
        "diskless_produce_pending_bytes",
        "Produce bytes admitted and not yet durable (held in write buffers or in flight to the object store)",
        || sample(|broker| broker.storage.pending_bytes()),
    );
    telemetry::sampled::register_sampled_gauge(
        "diskless_produce_pending_bytes_limit",
        "max_pending_bytes: past it, produce requests wait for room",
        || sample(|broker| broker.config.storage_config().max_pending_bytes),
    );
});

fn sample(read: impl Fn(&Broker) -> usize) -> Vec<telemetry::sampled::Sample> {
    let current = CURRENT.lock().unwrap_or_else(|e| e.into_inner()).upgrade();
    current
        .map(|broker| vec![(Vec::new(), i64::try_from(read(&broker)).unwrap_or(i64::MAX))])
        .unwrap_or_default()
}

/// Points the scrape-time gauges at `broker`.
pub fn register_broker_gauges(broker: &Arc<Broker>) {
    LazyLock::force(&REGISTERED);
    *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = Arc::downgrade(broker);
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    group_type: &'static str,
    state: &'static str,
}

static GROUPS: LazyLock<Family<GroupLabels, Gauge>> = LazyLock::new(|| {
    telemetry::gauge_family(
        "kafka_coordinator_groups",
        "Consumer groups this broker's coordinator holds, by group_type (classic, consumer) and state",
    )
});

const GROUP_SAMPLE_INTERVAL: Duration = Duration::from_secs(5);

/// Counts groups by state every few seconds until `shutdown`.
pub fn spawn_group_sampler(broker: Weak<Broker>, mut shutdown: watch::Receiver<bool>) {
    LazyLock::force(&GROUPS);
    tokio::spawn(async move {
        loop {
            let Some(live) = broker.upgrade() else { return };
            count_groups(&live).await;
            drop(live);
            tokio::select! {
                _ = tokio::time::sleep(GROUP_SAMPLE_INTERVAL) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
        }
    });
}

async fn count_groups(broker: &Broker) {
    let mut counts: std::collections::HashMap<GroupLabels, i64> = Default::default();
    let consumer = broker.groups.consumer().list().await;
    for group in broker.groups.list().await {
        if !consumer.iter().any(|c| c.group_id == group.group_id) {
            let labels = GroupLabels {
                group_type: "classic",
                state: group.state.name(),
            };
            *counts.entry(labels).or_default() += 1;
        }
    }
    for group in &consumer {
        let labels = GroupLabels {
            group_type: "consumer",
            state: group.state.name(),
        };
        *counts.entry(labels).or_default() += 1;
    }
    GROUPS.clear();
    for (labels, count) in counts {
        GROUPS.get_or_create(&labels).set(count);
    }
}
