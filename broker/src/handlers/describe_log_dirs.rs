//! DescribeLogDirs v1-4 (`kafka-log-dirs`, `Admin.describeLogDirs`): each broker has one
//! "log directory", the object store, holding the partitions it leads for this client (as
//! Metadata names leaders), so the sizes summed over the brokers are each partition once.
//! A partition's size is its retained bytes (`Storage::size_bytes`); its offset lag is 0 (no
//! replica copies behind a leader here). Total and usable bytes are -1: an object store has no
//! capacity to report. DESCRIBE on the cluster is required, as in Kafka.

use futures::stream::{self, StreamExt};
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use kafka_protocol::ResponseError;

use super::{str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;

/// Partitions sized at once (each is three MetaStore reads).
const SIZES_IN_FLIGHT: usize = 16;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    zone: Option<&str>,
    version: i16,
    request: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    if !broker
        .authorizer
        .allows(context, &operations::DESCRIBE_LOG_DIRS, CLUSTER_NAME)
    {
        // The top-level error exists from v3; before it a refusal lists no directory.
        let refused = if version >= 3 {
            ResponseError::ClusterAuthorizationFailed.code()
        } else {
            0
        };
        return DescribeLogDirsResponse::default().with_error_code(refused);
    }
    let partitions = hosted(broker, zone, &request);
    let sized: Vec<(String, i32, i64)> = stream::iter(partitions)
        .map(|(topic, partition, stream_id)| async move {
            let size = match broker.storage.size_bytes(&stream_id).await {
                Ok(bytes) => i64::try_from(bytes).unwrap_or(i64::MAX),
                Err(error) => {
                    tracing::debug!(topic, partition, %error, "log dir size unknown");
                    -1
                }
            };
            (topic, partition, size)
        })
        .buffered(SIZES_IN_FLIGHT)
        .collect()
        .await;
    let mut topics: Vec<DescribeLogDirsTopic> = Vec::new();
    for (topic, partition, size) in sized {
        let described = DescribeLogDirsPartition::default()
            .with_partition_index(partition)
            .with_partition_size(size)
            .with_offset_lag(0)
            .with_is_future_key(false);
        match topics.last_mut() {
            Some(t) if t.name.0.as_str() == topic => t.partitions.push(described),
            _ => topics.push(
                DescribeLogDirsTopic::default()
                    .with_name(TopicName(str_bytes(&topic)))
                    .with_partitions(vec![described]),
            ),
        }
    }
    let dir = DescribeLogDirsResult::default()
        .with_log_dir(str_bytes(&broker.config.object_store_url))
        .with_topics(topics)
        .with_total_bytes(-1)
        .with_usable_bytes(-1);
    DescribeLogDirsResponse::default().with_results(vec![dir])
}

/// `(topic, partition, stream)` of each partition asked for (all when `topics` is null) that
/// exists and that this broker leads, in topic order.
fn hosted(
    broker: &Broker,
    zone: Option<&str>,
    request: &DescribeLogDirsRequest,
) -> Vec<(String, i32, String)> {
    let placement = broker.membership.placement();
    let mine = |topic: &str, partition: i32| {
        placement.partition_leader(topic, partition, zone).broker_id == broker.node.broker_id
    };
    let mut topics = broker.catalog.list();
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = Vec::new();
    for topic in topics {
        let name = topic.name.to_string();
        let wanted: Vec<i32> = match &request.topics {
            None => (0..topic.record.partitions).collect(),
            Some(asked) => asked
                .iter()
                .filter(|t| t.topic.0.as_str() == name)
                .flat_map(|t| t.partitions.iter().copied())
                .filter(|p| (0..topic.record.partitions).contains(p))
                .collect(),
        };
        for partition in wanted {
            if mine(&name, partition) {
                out.push((name.clone(), partition, topic.stream_id(partition)));
            }
        }
    }
    out
}
