//! ListOffsets v1+: earliest, latest, the first record at or after a time (never an earlier
//! one), max timestamp where the version has it (v7), an empty and an unknown partition,
//! read_committed, and a log start moved by DeleteRecords.

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{ApiKey, BrokerId, ListOffsetsRequest};
use kafka_protocol::ResponseError;

use crate::common::name;
use crate::ctx::Ctx;
use crate::expect_kind;
use crate::log::{append, batch, now_ms, trim};

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
/// The version that introduced `MAX_TIMESTAMP` (KIP-734).
const MAX_TIMESTAMP_SINCE: i16 = 7;

fn request(
    version: i16,
    topic: &str,
    queries: &[(i32, i64)],
    committed: bool,
) -> ListOffsetsRequest {
    let partitions = queries
        .iter()
        .map(|&(partition, timestamp)| {
            ListOffsetsPartition::default()
                .with_partition_index(partition)
                .with_timestamp(timestamp)
        })
        .collect();
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(partitions)]);
    // The isolation level exists from v2.
    if committed && version >= 2 {
        request.with_isolation_level(1)
    } else {
        request
    }
}

/// `(error, offset, timestamp)` per query, in order. A found offset carries the leader epoch
/// from v4 (0: partitions here never change leader epoch), else -1.
async fn list(
    ctx: &mut Ctx,
    version: i16,
    topic: &str,
    queries: &[(i32, i64)],
    committed: bool,
) -> Vec<(i16, i64, i64)> {
    let request = request(version, topic, queries, committed);
    let response = expect_kind!(
        ctx.call(ApiKey::ListOffsets, version, request).await,
        ListOffsets
    );
    assert_eq!(response.topics.len(), 1);
    assert_eq!(&*response.topics[0].name.0, topic);
    let answers = &response.topics[0].partitions;
    let asked: Vec<i32> = queries.iter().map(|q| q.0).collect();
    let answered: Vec<i32> = answers.iter().map(|p| p.partition_index).collect();
    assert_eq!(asked, answered);
    for p in answers
        .iter()
        .filter(|p| p.error_code == 0 && p.offset >= 0)
    {
        assert_eq!(p.leader_epoch, if version >= 4 { 0 } else { -1 });
    }
    answers
        .iter()
        .map(|p| (p.error_code, p.offset, p.timestamp))
        .collect()
}

async fn one(
    ctx: &mut Ctx,
    version: i16,
    topic: &str,
    partition: i32,
    timestamp: i64,
) -> (i16, i64, i64) {
    list(ctx, version, topic, &[(partition, timestamp)], false).await[0]
}

pub async fn scenario(ctx: &mut Ctx, version: i16) {
    let topic = format!("offsets-v{version}");
    ctx.create_topic(&topic, 2).await;
    let t0 = now_ms() - 60_000;
    append(
        ctx,
        &topic,
        0,
        batch(&[("a", t0), ("b", t0 + 1), ("c", t0 + 2)]),
    )
    .await;
    let second = [("d", t0 + 1000), ("e", t0 + 1001), ("f", t0 + 1002)];
    append(ctx, &topic, 0, batch(&second)).await;

    assert_eq!(one(ctx, version, &topic, 0, EARLIEST).await, (0, 0, -1));
    assert_eq!(one(ctx, version, &topic, 0, LATEST).await, (0, 6, -1));
    // By time: the first record whose timestamp is at or after the one asked.
    let by_time = [
        (t0 - 1000, (0, 0, t0)),
        (t0, (0, 0, t0)),
        (t0 + 1, (0, 1, t0 + 1)),
        // Between the batches: the second batch's first record, not the first batch's last.
        (t0 + 500, (0, 3, t0 + 1000)),
        (t0 + 1002, (0, 5, t0 + 1002)),
        (t0 + 5000, (0, -1, -1)),
    ];
    for (at, expected) in by_time {
        assert_eq!(
            one(ctx, version, &topic, 0, at).await,
            expected,
            "at t0{:+}",
            at - t0
        );
    }
    let max = one(ctx, version, &topic, 0, MAX_TIMESTAMP).await;
    if version >= MAX_TIMESTAMP_SINCE {
        assert_eq!(max, (0, 5, t0 + 1002));
    } else {
        assert_eq!(max.0, ResponseError::UnsupportedVersion.code());
    }

    empty_and_unknown_partitions(ctx, version, &topic, t0).await;
    // Nothing is in a transaction: the last stable offset is the high watermark.
    assert_eq!(
        list(ctx, version, &topic, &[(0, LATEST)], true).await,
        vec![(0, 6, -1)]
    );

    // Trimmed: the earliest offset moves, and a time before it finds the first kept record.
    trim(ctx, &topic, 0, 1).await;
    assert_eq!(one(ctx, version, &topic, 0, EARLIEST).await, (0, 1, -1));
    assert_eq!(one(ctx, version, &topic, 0, t0).await, (0, 1, t0 + 1));
}

async fn empty_and_unknown_partitions(ctx: &mut Ctx, version: i16, topic: &str, t0: i64) {
    // Several partitions in one request, answered in order (Kafka refuses a partition named
    // twice, so each is named once).
    let queries = [(1, EARLIEST), (0, LATEST), (2, LATEST)];
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    assert_eq!(
        list(ctx, version, topic, &queries, false).await,
        vec![(0, 0, -1), (0, 6, -1), (unknown, -1, -1)]
    );
    assert_eq!(one(ctx, version, topic, 1, LATEST).await, (0, 0, -1));
    assert_eq!(one(ctx, version, topic, 1, t0).await, (0, -1, -1));
    if version >= MAX_TIMESTAMP_SINCE {
        assert_eq!(
            one(ctx, version, topic, 1, MAX_TIMESTAMP).await,
            (0, -1, -1)
        );
    }
}
