//! Fetch v4+: records, high watermark, last stable offset and log start of a trimmed
//! partition; out-of-range and unknown partitions; read_committed; a long poll woken by a
//! produce; and from v7 an incremental fetch session from open to close.

use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchTopic, ForgottenTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse};
use kafka_protocol::ResponseError;

use crate::common::name;
use crate::ctx::Ctx;
use crate::expect_kind;
use crate::log::{append, batch_now, decode, fetch_partition, produce_request, trim};

const READ_UNCOMMITTED: i8 = 0;
const READ_COMMITTED: i8 = 1;

/// What one partition of a Fetch answer says.
#[derive(Debug, PartialEq)]
struct Seen {
    error: i16,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    /// `(offset, value)` of the records returned.
    records: Vec<(i64, String)>,
}

fn seen(p: &PartitionData) -> Seen {
    Seen {
        error: p.error_code,
        high_watermark: p.high_watermark,
        last_stable_offset: p.last_stable_offset,
        log_start_offset: p.log_start_offset,
        records: decode(&p.records)
            .into_iter()
            .map(|(offset, _, value, _)| (offset, value))
            .collect(),
    }
}

fn values(first: i64, values: &[&str]) -> Vec<(i64, String)> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| (first + i as i64, v.to_string()))
        .collect()
}

fn request(version: i16, topic: &str, offsets: &[(i32, i64)], max_wait_ms: i32) -> FetchRequest {
    let partitions = offsets
        .iter()
        .map(|&(partition, offset)| fetch_partition(version, partition, offset))
        .collect();
    let topics = if offsets.is_empty() {
        vec![]
    } else {
        vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(partitions)]
    };
    FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_isolation_level(READ_UNCOMMITTED)
        .with_topics(topics)
}

async fn fetch(ctx: &mut Ctx, version: i16, request: FetchRequest) -> FetchResponse {
    expect_kind!(ctx.call(ApiKey::Fetch, version, request).await, Fetch)
}

/// The one partition of a sessionless answer.
async fn fetch_one(ctx: &mut Ctx, version: i16, request: FetchRequest) -> Seen {
    let response = fetch(ctx, version, request).await;
    assert_eq!((response.error_code, response.session_id), (0, 0));
    assert_eq!(response.responses.len(), 1);
    assert_eq!(response.responses[0].partitions.len(), 1);
    seen(&response.responses[0].partitions[0])
}

pub async fn scenario(ctx: &mut Ctx, version: i16) {
    let topic = format!("fetch-v{version}");
    ctx.create_topic(&topic, 1).await;
    append(ctx, &topic, 0, batch_now(&["a", "b", "c"])).await;
    append(ctx, &topic, 0, batch_now(&["d", "e", "f"])).await;
    trim(ctx, &topic, 0, 3).await;
    // The log start is in the answer from v5 (older clients read it as -1).
    let log_start = if version >= 5 { 3 } else { -1 };

    let from_start = fetch_one(ctx, version, request(version, &topic, &[(0, 3)], 0)).await;
    let expected = Seen {
        error: 0,
        high_watermark: 6,
        last_stable_offset: 6,
        log_start_offset: log_start,
        records: values(3, &["d", "e", "f"]),
    };
    assert_eq!(from_start, expected);

    out_of_range_and_unknown(ctx, version, &topic, log_start).await;

    let mut committed = request(version, &topic, &[(0, 3)], 0);
    committed.isolation_level = READ_COMMITTED;
    let response = fetch(ctx, version, committed).await;
    let p = &response.responses[0].partitions[0];
    assert_eq!(
        seen(p),
        expected,
        "read_committed: nothing is in a transaction"
    );
    assert_eq!(p.aborted_transactions, Some(vec![]));
    let response = fetch(ctx, version, request(version, &topic, &[(0, 3)], 0)).await;
    assert_eq!(
        response.responses[0].partitions[0].aborted_transactions,
        None
    );

    long_poll_wakes_on_produce(ctx, version, &topic, log_start).await;
    if version >= 7 {
        incremental_session(ctx, version, &topic).await;
    }
}

async fn out_of_range_and_unknown(ctx: &mut Ctx, version: i16, topic: &str, log_start: i64) {
    let out_of_range = ResponseError::OffsetOutOfRange.code();
    let below = fetch_one(ctx, version, request(version, topic, &[(0, 0)], 0)).await;
    assert_eq!(
        (below.error, below.log_start_offset, below.high_watermark),
        (out_of_range, log_start, 6)
    );
    assert!(below.records.is_empty());
    let past = fetch_one(ctx, version, request(version, topic, &[(0, 9)], 0)).await;
    assert_eq!((past.error, past.high_watermark), (out_of_range, 6));
    let at_end = fetch_one(ctx, version, request(version, topic, &[(0, 6)], 0)).await;
    assert_eq!((at_end.error, at_end.high_watermark), (0, 6));
    assert!(at_end.records.is_empty());
    let unknown = fetch_one(ctx, version, request(version, topic, &[(1, 0)], 0)).await;
    assert_eq!(unknown.error, ResponseError::UnknownTopicOrPartition.code());
}

/// A fetch at the end of the log waits, and is answered by the next record, not the timeout.
async fn long_poll_wakes_on_produce(ctx: &mut Ctx, version: i16, topic: &str, log_start: i64) {
    let mut producer = ctx.connect().await;
    let produce = produce_request(-1, vec![(topic, 0, batch_now(&["g"]))]);
    let writer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        producer.call(ApiKey::Produce, 9, produce).await
    });
    let started = Instant::now();
    let woken = fetch_one(ctx, version, request(version, topic, &[(0, 6)], 10_000)).await;
    let waited = started.elapsed();
    assert!(writer.await.is_ok());
    assert_eq!(
        woken,
        Seen {
            error: 0,
            high_watermark: 7,
            last_stable_offset: 7,
            log_start_offset: log_start,
            records: values(6, &["g"]),
        }
    );
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_secs(8),
        "answered after {waited:?}"
    );
}

/// A session request: `(session_id, epoch)`, the partitions named, the ones forgotten.
fn in_session(
    version: i16,
    topic: &str,
    session: (i32, i32),
    offsets: &[(i32, i64)],
    forgotten: &[i32],
) -> FetchRequest {
    let mut request = request(version, topic, offsets, 0)
        .with_session_id(session.0)
        .with_session_epoch(session.1);
    if !forgotten.is_empty() {
        request.forgotten_topics_data = vec![ForgottenTopic::default()
            .with_topic(name(topic))
            .with_partitions(forgotten.to_vec())];
    }
    request
}

/// `(top-level error, session id, partitions in the answer)`.
async fn session_fetch(
    ctx: &mut Ctx,
    version: i16,
    request: FetchRequest,
) -> (i16, i32, Vec<Seen>) {
    let response = fetch(ctx, version, request).await;
    let partitions = response
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter().map(seen))
        .collect();
    (response.error_code, response.session_id, partitions)
}

/// KIP-227 (v7+): an incremental response carries only partitions with news.
async fn incremental_session(ctx: &mut Ctx, version: i16, topic: &str) {
    // Open (epoch 0): a full answer, and a session id.
    let (error, id, opened) = session_fetch(
        ctx,
        version,
        in_session(version, topic, (0, 0), &[(0, 3)], &[]),
    )
    .await;
    assert_eq!(error, 0);
    assert_ne!(id, 0, "a session was opened");
    assert_eq!(opened.len(), 1);
    assert_eq!(opened[0].records, values(3, &["d", "e", "f", "g"]));
    // Epoch 1 at the end of the log: nothing new, so the partition is left out.
    let quiet = session_fetch(
        ctx,
        version,
        in_session(version, topic, (id, 1), &[(0, 7)], &[]),
    )
    .await;
    assert_eq!(quiet, (0, id, vec![]));
    // A new record: epoch 2 names no partition, and still gets it from the session's offset.
    append(ctx, topic, 0, batch_now(&["h"])).await;
    let (error, same_id, news) =
        session_fetch(ctx, version, in_session(version, topic, (id, 2), &[], &[])).await;
    assert_eq!((error, same_id), (0, id));
    assert_eq!(news.len(), 1);
    assert_eq!(
        (news[0].high_watermark, &news[0].records),
        (8, &values(7, &["h"]))
    );
    // A replayed epoch, or an unknown session, is refused.
    let (error, _, _) =
        session_fetch(ctx, version, in_session(version, topic, (id, 2), &[], &[])).await;
    assert_eq!(error, ResponseError::InvalidFetchSessionEpoch.code());
    let (error, _, _) = session_fetch(
        ctx,
        version,
        in_session(version, topic, (id + 1000, 1), &[], &[]),
    )
    .await;
    assert_eq!(error, ResponseError::FetchSessionIdNotFound.code());
    // Forgotten, the partition is left out even when it has news.
    let forgot = session_fetch(ctx, version, in_session(version, topic, (id, 3), &[], &[0])).await;
    assert_eq!(forgot, (0, id, vec![]));
    append(ctx, topic, 0, batch_now(&["i"])).await;
    let still = session_fetch(ctx, version, in_session(version, topic, (id, 4), &[], &[])).await;
    assert_eq!(still, (0, id, vec![]));
    // Epoch -1 closes it: a full, sessionless answer; the session is gone.
    let (error, closed_id, last) = session_fetch(
        ctx,
        version,
        in_session(version, topic, (id, -1), &[(0, 8)], &[]),
    )
    .await;
    assert_eq!((error, closed_id), (0, 0));
    assert_eq!(last.len(), 1);
    assert_eq!(
        (last[0].high_watermark, &last[0].records),
        (9, &values(8, &["i"]))
    );
    let (error, _, _) =
        session_fetch(ctx, version, in_session(version, topic, (id, 5), &[], &[])).await;
    assert_eq!(error, ResponseError::FetchSessionIdNotFound.code());
}
