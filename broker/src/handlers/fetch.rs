//! Fetch: read whole batches from the offset asked, rewrite each batch's base offset from the
//! index, and long-poll at the end of the log until `min_bytes` arrive or `max_wait_ms` passes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::{join_all, select_all};
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, ProducerId};
use kafka_protocol::ResponseError;
use record_batch::set_base_offset;
use storage::{ReadChunk, ReadResult, StorageError};
use tokio::sync::watch::Receiver;
use tokio::time::Instant;

use super::{kafka_offset, topic_name, RequestContext};
use crate::context::Broker;
use crate::fetch_session::{FetchTarget, Owner, Plan, Reported};
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;
use crate::storage_errors::read_error;
use crate::transactions;
use crate::transactions::records::AbortedTxn;

/// Longest wait a client may ask for; bounds how long a request holds its connection slot.
const MAX_WAIT_MS_CAP: i32 = 60_000;

struct PartitionResult {
    target: FetchTarget,
    error: Option<ResponseError>,
    high_watermark: i64,
    log_start_offset: i64,
    records: Option<Bytes>,
    /// Set when a read_committed read met transactional batches (else the high watermark).
    last_stable_offset: Option<u64>,
    aborted: Vec<AbortedTxn>,
}

impl PartitionResult {
    fn bytes(&self) -> usize {
        self.records.as_ref().map_or(0, |r| r.len())
    }
}

pub async fn handle(
    broker: &Arc<Broker>,
    context: &RequestContext,
    version: i16,
    request: FetchRequest,
) -> FetchResponse {
    let mut plan = match plan(broker, context, version, &request) {
        Ok(plan) => plan,
        Err(error) => {
            return FetchResponse::default()
                .with_error_code(error.code())
                .with_session_id(0)
        }
    };
    let denied = authorize(broker, context, &request, &mut plan);
    let read_committed = version >= 4 && request.isolation_level == 1;
    let limits = Limits {
        read_committed,
        // Negative sizes and waits are 0.
        max_bytes: if version >= 3 {
            usize::try_from(request.max_bytes).unwrap_or(0)
        } else {
            usize::MAX
        },
        min_bytes: usize::try_from(request.min_bytes).unwrap_or(0),
        wait: Duration::from_millis(
            u64::try_from(request.max_wait_ms.min(MAX_WAIT_MS_CAP)).unwrap_or(0),
        ),
    };
    // Refused partitions do not end the wait, as in Kafka; with nothing else to read, the
    // answer goes at once.
    let mut stages = crate::metrics::FetchStages::default();
    let mut results = if plan.targets.is_empty() && !denied.is_empty() {
        Vec::new()
    } else {
        long_poll(broker, &plan, limits, &mut stages).await
    };
    results.extend(denied);
    let bytes = results.iter().map(|r| r.bytes() as u64).sum();
    let user = context.principal.name.as_str();
    // Counted here, not once answered: over its request quota a Fetch is answered empty too.
    let spent = crate::quotas::poll_time::take();
    let throttle = broker
        .quotas
        .fetch(user, &context.client_id, bytes, spent, context.peer);
    if !throttle.is_zero() {
        return throttled(broker, &plan, throttle);
    }
    let responding = std::time::Instant::now();
    let responses = respond(broker, &plan, results, read_committed);
    stages.record(responding.elapsed());
    FetchResponse::default()
        .with_session_id(plan.session_id)
        .with_responses(responses)
}

/// Takes out of the plan the partitions the principal may not read (READ on each topic; a
/// replica's fetch needs CLUSTER_ACTION on the cluster) and answers them
/// TOPIC_AUTHORIZATION_FAILED, before their existence is looked at.
fn authorize(
    broker: &Broker,
    context: &RequestContext,
    request: &FetchRequest,
    plan: &mut Plan,
) -> Vec<PartitionResult> {
    let authorizer = &broker.authorizer;
    if !authorizer.enabled() {
        return Vec::new();
    }
    let follower_refused = request.replica_id.0 >= 0
        && !authorizer.allows(context, &operations::FETCH_FOLLOWER, CLUSTER_NAME);
    let mut allowed: HashMap<String, bool> = HashMap::new();
    let mut denied = Vec::new();
    plan.targets.retain(|target| {
        let ok = !follower_refused
            && *allowed
                .entry(target.topic.clone())
                .or_insert_with_key(|topic| authorizer.allows(context, &operations::FETCH, topic));
        if !ok {
            denied.push(PartitionResult {
                target: target.clone(),
                error: Some(ResponseError::TopicAuthorizationFailed),
                high_watermark: -1,
                log_start_offset: -1,
                records: None,
                last_stable_offset: None,
                aborted: Vec::new(),
            });
        }
        ok
    });
    denied
}

/// What one Fetch may return and how long it may wait for it.
#[derive(Clone, Copy)]
struct Limits {
    read_committed: bool,
    max_bytes: usize,
    min_bytes: usize,
    wait: Duration,
}

/// The partitions to read: those named, or (v7+) the incremental session's.
fn plan(
    broker: &Broker,
    context: &RequestContext,
    version: i16,
    request: &FetchRequest,
) -> Result<Plan, ResponseError> {
    let requested: Vec<FetchTarget> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| FetchTarget {
                topic: t.topic.0.to_string(),
                partition: p.partition,
                fetch_offset: p.fetch_offset,
                max_bytes: p.partition_max_bytes,
            })
        })
        .collect();
    if version < 7 {
        return Ok(Plan {
            session_id: 0,
            incremental: false,
            targets: requested,
        });
    }
    let forgotten: Vec<(String, i32)> = request
        .forgotten_topics_data
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.topic.0.to_string(), *p)))
        .collect();
    let owner = Owner {
        principal: context.principal.clone(),
        listener: context.listener.clone(),
    };
    broker.fetch_sessions.resolve(
        &owner,
        request.session_id,
        request.session_epoch,
        requested,
        &forgotten,
    )
}

/// Kafka's answer to a fetch over its quota: no partitions, the throttle time, and the
/// session only if it already existed (a session this request would have opened is not).
fn throttled(broker: &Broker, plan: &Plan, throttle: Duration) -> FetchResponse {
    let session_id = if plan.incremental {
        plan.session_id
    } else {
        broker.fetch_sessions.forget(plan.session_id);
        0
    };
    FetchResponse::default()
        .with_throttle_time_ms(crate::quotas::throttle_ms(throttle))
        .with_session_id(session_id)
}

/// Reads the targets; at the end of the log, waits for a commit to one of them until
/// `min_bytes` arrived or the wait is over.
async fn long_poll(
    broker: &Broker,
    plan: &Plan,
    limits: Limits,
    stages: &mut crate::metrics::FetchStages,
) -> Vec<PartitionResult> {
    let deadline = Instant::now() + limits.wait;
    // Once per Fetch, not per read and per watch: thousands of partitions per request.
    let streams: Vec<Option<String>> = plan
        .targets
        .iter()
        .map(|target| stream_of(broker, target))
        .collect();
    // Each partition's watch is taken before its read, so a commit between the read and the
    // wait still wakes us.
    let watch = !limits.wait.is_zero();
    loop {
        let (results, mut watches) = stages
            .read(read_targets(broker, &plan.targets, &streams, limits, watch))
            .await;
        let bytes: usize = results.iter().map(PartitionResult::bytes).sum();
        let has_error = results.iter().any(|r| r.error.is_some());
        if bytes >= limits.min_bytes || has_error || Instant::now() >= deadline {
            return results;
        }
        if watches.is_empty() {
            stages.wait(tokio::time::sleep_until(deadline)).await;
            let (results, _) = stages
                .read(read_targets(broker, &plan.targets, &streams, limits, false))
                .await;
            return results;
        }
        let changed = select_all(watches.iter_mut().map(|w| Box::pin(w.changed())));
        if stages
            .wait(tokio::time::timeout_at(deadline, changed))
            .await
            .is_err()
        {
            // No high watermark moved since the watches were taken, before the read: a second
            // read of every partition would find the same records (only a log start moved by
            // a trim meanwhile would differ, and it is reported by the next Fetch).
            return results;
        }
    }
}

/// The response's topics, leaving out what an incremental session already reported.
fn respond(
    broker: &Broker,
    plan: &Plan,
    results: Vec<PartitionResult>,
    read_committed: bool,
) -> Vec<FetchableTopicResponse> {
    let mut topics: Vec<FetchableTopicResponse> = Vec::new();
    for result in results {
        if !session_reports(broker, plan, &result) {
            continue;
        }
        let topic = result.target.topic.clone();
        if result.bytes() > 0 {
            crate::metrics::fetched(&topic, result.bytes());
        }
        let partition = partition_data(result, read_committed);
        match topics.last_mut() {
            Some(t) if t.topic.0.as_str() == topic => t.partitions.push(partition),
            _ => topics.push(
                FetchableTopicResponse::default()
                    .with_topic(topic_name(&topic))
                    .with_partitions(vec![partition]),
            ),
        }
    }
    topics
}

/// Whether the partition goes into the response: always without a session or in a full
/// fetch; in an incremental one only when something changed since it was last reported.
fn session_reports(broker: &Broker, plan: &Plan, result: &PartitionResult) -> bool {
    if plan.session_id == 0 {
        return true;
    }
    let now = Reported {
        high_watermark: result.high_watermark,
        log_start_offset: result.log_start_offset,
    };
    let has_news = result.records.is_some() || result.error.is_some();
    let report = broker.fetch_sessions.should_report(
        plan.session_id,
        &result.target.topic,
        result.target.partition,
        now,
        has_news,
    );
    report || !plan.incremental
}

fn partition_data(result: PartitionResult, read_committed: bool) -> PartitionData {
    let aborted = result
        .aborted
        .iter()
        .map(|a| {
            AbortedTransaction::default()
                .with_producer_id(ProducerId(a.producer_id))
                .with_first_offset(kafka_offset(a.first_offset))
        })
        .collect();
    let last_stable = result
        .last_stable_offset
        .map_or(result.high_watermark, kafka_offset);
    PartitionData::default()
        .with_partition_index(result.target.partition)
        .with_error_code(result.error.map_or(0, |e| e.code()))
        .with_high_watermark(result.high_watermark)
        .with_last_stable_offset(last_stable)
        .with_log_start_offset(result.log_start_offset)
        .with_aborted_transactions(read_committed.then_some(aborted))
        .with_preferred_read_replica(BrokerId(-1))
        // Never null: librdkafka 2.0 rejects a null record set (size -1); Kafka sends empty.
        .with_records(Some(result.records.unwrap_or_default()))
}

fn stream_of(broker: &Broker, target: &FetchTarget) -> Option<String> {
    let topic = broker.catalog.get(&target.topic)?;
    (target.partition >= 0 && target.partition < topic.record.partitions)
        .then(|| topic.stream_id(target.partition))
}

/// Partitions of one Fetch read at the same time, at most.
const READS_AT_ONCE_MAX: usize = 16;

/// Reads the targets in order within the response budget, as Kafka does: each gets at most its
/// `partition_max_bytes` of what the earlier ones left, and the first with data at least one
/// batch. Consecutive targets whose limits fit the budget together are read at the same time
/// (cold partitions each wait for GETs), and their records are cut afterwards, in order, to
/// exactly what reading one after another would have given: a read with a larger budget
/// returns a longer prefix of the same log. With `watch`, also a receiver per partition, taken
/// before its read, that changes when its high watermark advances.
async fn read_targets(
    broker: &Broker,
    targets: &[FetchTarget],
    streams: &[Option<String>],
    limits: Limits,
    watch: bool,
) -> (Vec<PartitionResult>, Vec<Receiver<u64>>) {
    debug_assert_eq!(targets.len(), streams.len());
    let mut remaining = limits.max_bytes;
    let mut any_data = false;
    let mut results = Vec::with_capacity(targets.len());
    let mut watches = Vec::with_capacity(if watch { targets.len() } else { 0 });
    let mut start = 0;
    while start < targets.len() {
        let window = read_window(&targets[start..], remaining, any_data);
        let window_streams = &streams[start..start + window.len()];
        start += window.len();
        let first = !any_data;
        let reads = join_all(window.iter().zip(window_streams).map(|(target, stream)| {
            read_target(broker, target, stream.as_deref(), remaining, first, watch)
        }))
        .await;
        for ((target, stream), mut read) in window.iter().zip(window_streams).zip(reads) {
            watches.extend(read.watch.take());
            let limit = partition_limit(target, remaining);
            let mut result = if limit == 0 && any_data {
                // Nothing left for it: as read alone, its bounds and no records.
                read_target(broker, target, stream.as_deref(), 0, false, false)
                    .await
                    .finish(0, false)
            } else {
                read.finish(limit, !any_data)
            };
            if limits.read_committed {
                committed_only(broker, &mut result).await;
            }
            let bytes = result.bytes();
            any_data |= bytes > 0;
            remaining = remaining.saturating_sub(bytes);
            results.push(result);
        }
    }
    (results, watches)
}

/// The leading targets read together: while their limits add up to no more than `remaining`
/// (so a Fetch holds no more bytes than reading them one at a time), at least one.
fn read_window(targets: &[FetchTarget], remaining: usize, any_data: bool) -> &[FetchTarget] {
    if any_data && remaining == 0 {
        return &targets[..1];
    }
    let mut total = 0usize;
    let mut n = 0;
    for target in targets.iter().take(READS_AT_ONCE_MAX) {
        total = total.saturating_add(partition_limit(target, remaining));
        if n > 0 && total > remaining {
            break;
        }
        n += 1;
    }
    &targets[..n.max(1)]
}

fn partition_limit(target: &FetchTarget, budget: usize) -> usize {
    budget.min(usize::try_from(target.max_bytes).unwrap_or(0))
}

/// Keeps of a read_committed read only what is below the last stable offset, with the
/// aborted transactions among it (`transactions::stable`).
async fn committed_only(broker: &Broker, result: &mut PartitionResult) {
    let (Some(records), Some(stream)) = (result.records.take(), stream_of(broker, &result.target))
    else {
        return;
    };
    let from = u64::try_from(result.target.fetch_offset).unwrap_or(0);
    match transactions::stable::committed_view(broker, &stream, from, records).await {
        Ok((records, aborted, last_stable)) => {
            result.records = (!records.is_empty()).then_some(records);
            result.aborted = aborted;
            result.last_stable_offset = last_stable;
        }
        Err(error) => result.error = Some(error),
    }
}

/// One partition's read, before its records are cut to the response budget.
struct PartitionRead {
    result: PartitionResult,
    chunks: Vec<ReadChunk>,
    /// Taken before the read when the Fetch may wait.
    watch: Option<Receiver<u64>>,
}

impl PartitionRead {
    fn finish(mut self, limit: usize, first: bool) -> PartitionResult {
        self.result.records = assemble(&self.chunks, limit, first);
        self.result
    }
}

/// Reads one partition. `budget` is what the response still has room for; `first` allows the
/// first batch to exceed every limit, as Kafka does, so a large batch cannot stall a consumer.
async fn read_target(
    broker: &Broker,
    target: &FetchTarget,
    stream: Option<&str>,
    budget: usize,
    first: bool,
    watch: bool,
) -> PartitionRead {
    let mut result = PartitionResult {
        target: target.clone(),
        error: None,
        high_watermark: -1,
        log_start_offset: -1,
        records: None,
        last_stable_offset: None,
        aborted: Vec::new(),
    };
    let Some(stream) = stream else {
        result.error = Some(ResponseError::UnknownTopicOrPartition);
        return PartitionRead {
            result,
            chunks: Vec::new(),
            watch: None,
        };
    };
    let limit = partition_limit(target, budget);
    let mut receiver = None;
    match u64::try_from(target.fetch_offset) {
        Err(_) => result.error = Some(ResponseError::OffsetOutOfRange),
        Ok(_) if limit == 0 && !first => {
            if watch {
                receiver = broker.storage.watch(stream).await.ok();
            }
        }
        Ok(fetch_offset) => {
            match read_stream(broker, stream, fetch_offset, limit.max(1), watch).await {
                Ok((read, watch)) => {
                    result.high_watermark = kafka_offset(read.bounds.high_watermark);
                    result.log_start_offset = kafka_offset(read.bounds.log_start_offset);
                    return PartitionRead {
                        result,
                        chunks: read.chunks,
                        watch,
                    };
                }
                Err(e) => {
                    if !matches!(e, StorageError::OffsetOutOfRange { .. }) {
                        tracing::warn!(stream, error = %e, "fetch read failed");
                    }
                    result.error = Some(read_error(&e));
                }
            }
        }
    }
    if let Ok(bounds) = broker.storage.bounds(stream).await {
        result.high_watermark = kafka_offset(bounds.high_watermark);
        result.log_start_offset = kafka_offset(bounds.log_start_offset);
    }
    PartitionRead {
        result,
        chunks: Vec::new(),
        watch: receiver,
    }
}

/// The partition's read, and with `watch` its high watermark's receiver taken before it.
async fn read_stream(
    broker: &Broker,
    stream: &str,
    offset: u64,
    max_bytes: usize,
    watch: bool,
) -> Result<(ReadResult, Option<Receiver<u64>>), StorageError> {
    if watch {
        let (read, receiver) = broker
            .storage
            .read_watched(stream, offset, max_bytes)
            .await?;
        Ok((read, Some(receiver)))
    } else {
        Ok((broker.storage.read(stream, offset, max_bytes).await?, None))
    }
}

fn shared_prefix(chunks: &[ReadChunk], limit: usize, first: bool) -> Option<Bytes> {
    let [chunk] = chunks else {
        return None;
    };
    let (mut offset, mut pos) = (chunk.base_offset, 0usize);
    for batch in &chunk.batches {
        let len = batch.len as usize;
        if pos + len > limit && !(first && pos == 0) {
            break;
        }
        if pos + len > chunk.bytes.len() || len < 8 {
            return None;
        }
        let stored = &chunk.bytes[pos..pos + 8];
        if stored != kafka_offset(offset).to_be_bytes() {
            return None;
        }
        offset += u64::from(batch.records);
        pos += len;
    }
    (pos > 0).then(|| chunk.bytes.slice(..pos))
}

fn assemble(chunks: &[ReadChunk], limit: usize, first: bool) -> Option<Bytes> {
    if let Some(shared) = shared_prefix(chunks, limit, first) {
        return Some(shared);
    }
    let mut out = BytesMut::new();
    for chunk in chunks {
        let mut offset = chunk.base_offset;
        let mut pos = 0usize;
        for batch in &chunk.batches {
            let len = batch.len as usize;
            if out.len() + len > limit && !(first && out.is_empty()) {
                return (!out.is_empty()).then(|| out.freeze());
            }
            let start = out.len();
            out.extend_from_slice(&chunk.bytes[pos..pos + len]);
            if set_base_offset(&mut out[start..], kafka_offset(offset)).is_err() {
                // The engine verified these bytes; a batch too short to hold a header is a bug.
                tracing::error!(offset, len, "stored batch shorter than a batch header");
                out.truncate(start);
                return (!out.is_empty()).then(|| out.freeze());
            }
            offset += u64::from(batch.records);
            pos += len;
        }
    }
    (!out.is_empty()).then(|| out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::BatchMeta;

    /// Two fake batches of 100 bytes each holding 3 records, with the given stored base offsets.
    fn chunk(stored: [i64; 2]) -> ReadChunk {
        let mut bytes = BytesMut::new();
        for base in stored {
            bytes.extend_from_slice(&base.to_be_bytes());
            bytes.extend_from_slice(&[0u8; 92]);
        }
        let meta = BatchMeta {
            len: 100,
            records: 3,
            max_timestamp: 0,
            producer: None,
        };
        ReadChunk {
            base_offset: 10,
            batches: vec![meta, meta],
            bytes: bytes.freeze(),
        }
    }

    #[test]
    fn batches_already_at_their_offsets_are_served_without_a_copy() {
        let c = chunk([10, 13]);
        let out = assemble(std::slice::from_ref(&c), 150, true).unwrap();
        assert_eq!(out.len(), 100);
        assert_eq!(
            out.as_ptr(),
            c.bytes.as_ptr(),
            "a slice of the chunk, not a copy"
        );
    }

    #[test]
    fn batches_with_producer_offsets_are_copied_and_rewritten() {
        let c = chunk([0, 0]);
        let out = assemble(std::slice::from_ref(&c), 1000, true).unwrap();
        assert_eq!(out.len(), 200);
        assert_ne!(out.as_ptr(), c.bytes.as_ptr());
        assert_eq!(out[..8], 10i64.to_be_bytes());
        assert_eq!(out[100..108], 13i64.to_be_bytes());
    }
}
