//! Traffic by topic, as Kafka's `BrokerTopicMetrics`: messages and bytes in (acknowledged
//! produce), bytes out (record bytes in fetch responses). One series per topic that saw
//! traffic; a deleted topic's series stay until the process restarts, as in Kafka's JMX.

use std::sync::LazyLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabels {
    topic: String,
}

struct Metrics {
    messages_in: Family<TopicLabels, Counter>,
    bytes_in: Family<TopicLabels, Counter>,
    bytes_out: Family<TopicLabels, Counter>,
    schema_refusals: Family<TopicLabels, Counter>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    Metrics {
    messages_in: telemetry::counter_family(
        "kafka_server_broker_topic_messages_in",
        "Records acknowledged to producers, by topic (Kafka's MessagesInPerSec)",
    ),
    bytes_in: telemetry::counter_family(
        "kafka_server_broker_topic_bytes_in",
        "Record-batch bytes acknowledged to producers, by topic (Kafka's BytesInPerSec)",
    ),
    bytes_out: telemetry::counter_family(
        "kafka_server_broker_topic_bytes_out",
        "Record-batch bytes sent to consumers in fetch responses, by topic (Kafka's BytesOutPerSec)",
    ),
    schema_refusals: telemetry::counter_family(
        "schema_validation_refused_records",
        "Produced records refused by broker-side schema validation, by topic",
    ),
}
});

pub(super) fn register() {
    LazyLock::force(&METRICS);
}

/// A batch of `records` records, `bytes` long, acknowledged on `topic`.
pub fn produced(topic: &str, records: u32, bytes: u32) {
    if !telemetry::enabled() {
        return;
    }
    let labels = TopicLabels {
        topic: topic.to_string(),
    };
    METRICS
        .messages_in
        .get_or_create(&labels)
        .inc_by(u64::from(records));
    METRICS
        .bytes_in
        .get_or_create(&labels)
        .inc_by(u64::from(bytes));
}

/// `bytes` of records of `topic` in a fetch response.
pub fn fetched(topic: &str, bytes: usize) {
    if !telemetry::enabled() {
        return;
    }
    let labels = TopicLabels {
        topic: topic.to_string(),
    };
    let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
    METRICS.bytes_out.get_or_create(&labels).inc_by(bytes);
}

/// `records` records of a batch on `topic` refused by schema validation.
pub fn schema_validation_refused(topic: &str, records: usize) {
    let labels = TopicLabels {
        topic: topic.to_string(),
    };
    METRICS
        .schema_refusals
        .get_or_create(&labels)
        .inc_by(u64::try_from(records).unwrap_or(u64::MAX));
}
