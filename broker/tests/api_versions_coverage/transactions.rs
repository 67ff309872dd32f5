//! The transaction APIs, one version at a time, each inside a whole transaction: the API under
//! test at the version announced, every other request at a fixed version. What each run checks
//! is what a client of that version relies on: records of a committed transaction visible to
//! read_committed fetches, those of an aborted one reported aborted, offsets committed only
//! with their transaction.

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::fetch_request::FetchTopic;
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::common::{name, s, txn_batch};
use crate::ctx::Ctx;
use crate::expect_kind;
use crate::groups::gid;
use crate::log::{decode, fetch_partition, produce_request, FETCH_LATEST, PRODUCE_LATEST};

const ADD_PARTITIONS: i16 = 3;
const ADD_OFFSETS: i16 = 3;
const END_TXN: i16 = 3;
const TXN_OFFSET_COMMIT: i16 = 3;

fn txn_id(id: &str) -> TransactionalId {
    TransactionalId(s(id))
}

/// InitProducerId for `id` (v4): its producer id and epoch.
pub async fn init(ctx: &mut Ctx, id: &str, version: i16) -> (i64, i16) {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(txn_id(id)))
        .with_transaction_timeout_ms(60_000);
    let response = expect_kind!(
        ctx.call(ApiKey::InitProducerId, version, request).await,
        InitProducerId
    );
    assert_eq!(response.error_code, 0, "init {id}");
    (response.producer_id.0, response.producer_epoch)
}

fn add_partitions_request(
    id: &str,
    producer: (i64, i16),
    topic: &str,
    partitions: Vec<i32>,
) -> AddPartitionsToTxnRequest {
    AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(txn_id(id))
        .with_v3_and_below_producer_id(ProducerId(producer.0))
        .with_v3_and_below_producer_epoch(producer.1)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(name(topic))
            .with_partitions(partitions)])
}

/// AddPartitionsToTxn at `version` (v4: the batched form, `verify_only` as given): the error
/// of each partition.
async fn add_or_verify(
    ctx: &mut Ctx,
    version: i16,
    verify_only: bool,
    (id, producer): (&str, (i64, i16)),
    topic: &str,
    partitions: Vec<i32>,
) -> Vec<(i32, i16)> {
    let request = if version >= 4 {
        use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTransaction;
        AddPartitionsToTxnRequest::default().with_transactions(vec![
            AddPartitionsToTxnTransaction::default()
                .with_transactional_id(txn_id(id))
                .with_producer_id(ProducerId(producer.0))
                .with_producer_epoch(producer.1)
                .with_verify_only(verify_only)
                .with_topics(vec![AddPartitionsToTxnTopic::default()
                    .with_name(name(topic))
                    .with_partitions(partitions)]),
        ])
    } else {
        add_partitions_request(id, producer, topic, partitions)
    };
    let response = expect_kind!(
        ctx.call(ApiKey::AddPartitionsToTxn, version, request).await,
        AddPartitionsToTxn
    );
    assert_eq!(response.error_code, 0);
    let topics = if version >= 4 {
        &response.results_by_transaction[0].topic_results
    } else {
        &response.results_by_topic_v3_and_below
    };
    topics[0]
        .results_by_partition
        .iter()
        .map(|p| (p.partition_index, p.partition_error_code))
        .collect()
}

async fn add_partitions(
    ctx: &mut Ctx,
    version: i16,
    id: &str,
    producer: (i64, i16),
    topic: &str,
    partitions: Vec<i32>,
) -> Vec<(i32, i16)> {
    add_or_verify(ctx, version, false, (id, producer), topic, partitions).await
}

/// A transactional produce: the partition's error and base offset.
async fn produce(
    ctx: &mut Ctx,
    id: &str,
    producer: (i64, i16),
    topic: &str,
    values: &[&str],
) -> (i16, i64) {
    let request = produce_request(-1, vec![(topic, 0, txn_batch(producer, 0, values))])
        .with_transactional_id(Some(txn_id(id)));
    let response = expect_kind!(
        ctx.call(ApiKey::Produce, PRODUCE_LATEST, request).await,
        Produce
    );
    let p = &response.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

async fn end_txn(ctx: &mut Ctx, version: i16, id: &str, producer: (i64, i16), commit: bool) -> i16 {
    let request = EndTxnRequest::default()
        .with_transactional_id(txn_id(id))
        .with_producer_id(ProducerId(producer.0))
        .with_producer_epoch(producer.1)
        .with_committed(commit);
    expect_kind!(ctx.call(ApiKey::EndTxn, version, request).await, EndTxn).error_code
}

/// A fetch of partition 0 from offset 0 at `isolation` (1: read_committed).
async fn fetch(ctx: &mut Ctx, topic: &str, isolation: i8) -> PartitionData {
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_isolation_level(isolation)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![fetch_partition(FETCH_LATEST, 0, 0)])]);
    let response = expect_kind!(ctx.call(ApiKey::Fetch, FETCH_LATEST, request).await, Fetch);
    response.responses[0].partitions[0].clone()
}

fn values(p: &PartitionData) -> Vec<String> {
    decode(&p.records)
        .into_iter()
        .map(|(_, _, v, _)| v)
        .collect()
}

pub async fn add_partitions_to_txn(ctx: &mut Ctx, version: i16) {
    let topic = format!("txn-add-v{version}");
    ctx.create_topic(&topic, 1).await;
    let id = format!("add-v{version}");
    let producer = init(ctx, &id, 4).await;
    // Not yet in the transaction: refused (KIP-890 part 1).
    let (code, _) = produce(ctx, &id, producer, &topic, &["early"]).await;
    assert_eq!(code, ResponseError::InvalidTxnState.code());
    // One unknown partition: nothing added, the others not attempted.
    let refused = add_partitions(ctx, version, &id, producer, &topic, vec![0, 7]).await;
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    let not_attempted = ResponseError::OperationNotAttempted.code();
    assert_eq!(refused, vec![(0, not_attempted), (7, unknown)]);
    assert_eq!(
        add_partitions(ctx, version, &id, producer, &topic, vec![0]).await,
        vec![(0, 0)]
    );
    assert_eq!(
        produce(ctx, &id, producer, &topic, &["a", "b"]).await,
        (0, 0)
    );
    // Open: read_committed sees nothing yet, read_uncommitted sees the records.
    assert!(values(&fetch(ctx, &topic, 1).await).is_empty());
    assert_eq!(values(&fetch(ctx, &topic, 0).await), vec!["a", "b"]);
    assert_eq!(end_txn(ctx, END_TXN, &id, producer, true).await, 0);
    let committed = fetch(ctx, &topic, 1).await;
    assert_eq!(committed.last_stable_offset, 3, "the marker is offset 2");
    let commit_marker = "\0\0\0\0\0\0";
    assert_eq!(
        values(&committed),
        vec!["a", "b", commit_marker],
        "records and the marker"
    );
    assert_eq!(committed.aborted_transactions, Some(vec![]));
    if version >= 4 {
        // The brokers' verify-only form: in the open transaction or not, nothing added.
        assert_eq!(
            add_partitions(ctx, version, &id, producer, &topic, vec![0]).await,
            vec![(0, 0)]
        );
        let verified = add_or_verify(ctx, version, true, (&id, producer), &topic, vec![0]).await;
        assert_eq!(verified, vec![(0, 0)]);
        assert_eq!(end_txn(ctx, END_TXN, &id, producer, false).await, 0);
        let verified = add_or_verify(ctx, version, true, (&id, producer), &topic, vec![0]).await;
        assert_eq!(verified, vec![(0, ResponseError::InvalidTxnState.code())]);
    }
    // A stale epoch is fenced.
    let stale = (producer.0, producer.1 - 1);
    let fenced = add_partitions(ctx, version, &id, stale, &topic, vec![0]).await;
    assert_eq!(fenced, vec![(0, ResponseError::ProducerFenced.code())]);
}

pub async fn end_txn_scenario(ctx: &mut Ctx, version: i16) {
    let topic = format!("txn-end-v{version}");
    ctx.create_topic(&topic, 1).await;
    let id = format!("end-v{version}");
    let producer = init(ctx, &id, 4).await;
    assert_eq!(
        add_partitions(ctx, ADD_PARTITIONS, &id, producer, &topic, vec![0]).await,
        vec![(0, 0)]
    );
    assert_eq!(produce(ctx, &id, producer, &topic, &["x"]).await, (0, 0));
    assert_eq!(end_txn(ctx, version, &id, producer, false).await, 0);
    // A retried abort is answered again; a commit of what was aborted is refused.
    assert_eq!(end_txn(ctx, version, &id, producer, false).await, 0);
    let invalid = ResponseError::InvalidTxnState.code();
    assert_eq!(end_txn(ctx, version, &id, producer, true).await, invalid);
    let aborted = fetch(ctx, &topic, 1).await;
    let listed: Vec<(i64, i64)> = aborted
        .aborted_transactions
        .unwrap_or_default()
        .iter()
        .map(|a| (a.producer_id.0, a.first_offset))
        .collect();
    assert_eq!(listed, vec![(producer.0, 0)]);
    assert_eq!(aborted.last_stable_offset, 2);
    // The next transaction of the same producer commits after the abort marker.
    assert_eq!(
        add_partitions(ctx, ADD_PARTITIONS, &id, producer, &topic, vec![0]).await,
        vec![(0, 0)]
    );
    assert_eq!(produce(ctx, &id, producer, &topic, &["y"]).await.0, 0);
    assert_eq!(end_txn(ctx, version, &id, producer, true).await, 0);
    // A new instance fences this one.
    let next = init(ctx, &id, 4).await;
    assert_eq!(next, (producer.0, producer.1 + 1));
    let fenced = ResponseError::ProducerFenced.code();
    assert_eq!(end_txn(ctx, version, &id, producer, true).await, fenced);
}

fn txn_offset_commit_request(
    id: &str,
    producer: (i64, i16),
    group: &str,
    topic: &str,
    offset: i64,
) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest::default()
        .with_transactional_id(txn_id(id))
        .with_group_id(gid(group))
        .with_producer_id(ProducerId(producer.0))
        .with_producer_epoch(producer.1)
        .with_generation_id(-1)
        .with_member_id(s(""))
        .with_topics(vec![TxnOffsetCommitRequestTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(-1)
                .with_committed_metadata(Some(s("m")))])])
}

async fn add_offsets(
    ctx: &mut Ctx,
    version: i16,
    id: &str,
    producer: (i64, i16),
    group: &str,
) -> i16 {
    let request = AddOffsetsToTxnRequest::default()
        .with_transactional_id(txn_id(id))
        .with_producer_id(ProducerId(producer.0))
        .with_producer_epoch(producer.1)
        .with_group_id(gid(group));
    expect_kind!(
        ctx.call(ApiKey::AddOffsetsToTxn, version, request).await,
        AddOffsetsToTxn
    )
    .error_code
}

async fn txn_offset_commit(ctx: &mut Ctx, version: i16, request: TxnOffsetCommitRequest) -> i16 {
    let response = expect_kind!(
        ctx.call(ApiKey::TxnOffsetCommit, version, request).await,
        TxnOffsetCommit
    );
    response.topics[0].partitions[0].error_code
}

/// OffsetFetch v7 with `require_stable`: the committed offset and the error of partition 0.
async fn committed(ctx: &mut Ctx, group: &str, topic: &str) -> (i64, i16) {
    let request = OffsetFetchRequest::default()
        .with_group_id(gid(group))
        .with_require_stable(true)
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(name(topic))
            .with_partition_indexes(vec![0])]));
    let response = expect_kind!(ctx.call(ApiKey::OffsetFetch, 7, request).await, OffsetFetch);
    let p = &response.topics[0].partitions[0];
    (p.committed_offset, p.error_code)
}

async fn offsets_scenario(ctx: &mut Ctx, versions: (i16, i16), label: &str) {
    let (add_version, commit_version) = versions;
    let topic = format!("txn-offsets-{label}");
    ctx.create_topic(&topic, 1).await;
    let (id, group) = (format!("offsets-{label}"), format!("group-{label}"));
    let producer = init(ctx, &id, 4).await;
    // Offsets of a group the transaction does not hold are refused.
    let request = txn_offset_commit_request(&id, producer, &group, &topic, 5);
    let invalid = ResponseError::InvalidTxnState.code();
    assert_eq!(
        txn_offset_commit(ctx, commit_version, request).await,
        invalid
    );
    assert_eq!(
        add_offsets(ctx, add_version, &id, producer, &group).await,
        0
    );
    let request = txn_offset_commit_request(&id, producer, &group, &topic, 5);
    assert_eq!(txn_offset_commit(ctx, commit_version, request).await, 0);
    let unstable = ResponseError::UnstableOffsetCommit.code();
    assert_eq!(committed(ctx, &group, &topic).await, (-1, unstable));
    assert_eq!(end_txn(ctx, END_TXN, &id, producer, true).await, 0);
    assert_eq!(committed(ctx, &group, &topic).await, (5, 0));
    // Aborted offsets never become the group's.
    assert_eq!(
        add_offsets(ctx, add_version, &id, producer, &group).await,
        0
    );
    let request = txn_offset_commit_request(&id, producer, &group, &topic, 9);
    assert_eq!(txn_offset_commit(ctx, commit_version, request).await, 0);
    assert_eq!(end_txn(ctx, END_TXN, &id, producer, false).await, 0);
    assert_eq!(committed(ctx, &group, &topic).await, (5, 0));
}

pub async fn add_offsets_to_txn(ctx: &mut Ctx, version: i16) {
    offsets_scenario(
        ctx,
        (version, TXN_OFFSET_COMMIT),
        &format!("add-v{version}"),
    )
    .await;
}

pub async fn txn_offset_commit_scenario(ctx: &mut Ctx, version: i16) {
    offsets_scenario(ctx, (ADD_OFFSETS, version), &format!("commit-v{version}")).await;
}

/// DescribeTransactions: an open transaction's state and partitions, then its completion.
pub async fn describe_transactions(ctx: &mut Ctx, version: i16) {
    let topic = format!("txn-describe-v{version}");
    ctx.create_topic(&topic, 2).await;
    let id = format!("describe-v{version}");
    let producer = init(ctx, &id, 4).await;
    add_partitions(ctx, ADD_PARTITIONS, &id, producer, &topic, vec![1, 0]).await;
    let describe = |ids: Vec<&str>| {
        DescribeTransactionsRequest::default()
            .with_transactional_ids(ids.into_iter().map(txn_id).collect())
    };
    let response = expect_kind!(
        ctx.call(
            ApiKey::DescribeTransactions,
            version,
            describe(vec![&id, "no-such-id"])
        )
        .await,
        DescribeTransactions
    );
    let [open, unknown] = &response.transaction_states[..] else {
        panic!("two answers expected: {response:?}");
    };
    assert_eq!(open.error_code, 0);
    assert_eq!(&*open.transaction_state, "Ongoing");
    assert_eq!((open.producer_id.0, open.producer_epoch), producer);
    assert_eq!(open.transaction_timeout_ms, 60_000);
    assert!(open.transaction_start_time_ms > 0);
    assert_eq!(open.topics[0].partitions, vec![0, 1]);
    assert_eq!(
        unknown.error_code,
        ResponseError::TransactionalIdNotFound.code()
    );
    assert_eq!(end_txn(ctx, END_TXN, &id, producer, false).await, 0);
    let response = expect_kind!(
        ctx.call(ApiKey::DescribeTransactions, version, describe(vec![&id]))
            .await,
        DescribeTransactions
    );
    assert_eq!(
        &*response.transaction_states[0].transaction_state,
        "CompleteAbort"
    );
}

/// ListTransactions: filters by state, producer id, running time (v1) and pattern (v2).
pub async fn list_transactions(ctx: &mut Ctx, version: i16) {
    let topic = format!("txn-list-v{version}");
    ctx.create_topic(&topic, 1).await;
    let (open_id, idle_id) = (
        format!("list-open-v{version}"),
        format!("list-idle-v{version}"),
    );
    let open = init(ctx, &open_id, 4).await;
    init(ctx, &idle_id, 4).await;
    add_partitions(ctx, ADD_PARTITIONS, &open_id, open, &topic, vec![0]).await;
    let list = |states: Vec<&str>| {
        let request = ListTransactionsRequest::default()
            .with_state_filters(states.into_iter().map(s).collect())
            .with_duration_filter(-1);
        if version >= 2 {
            request.with_transactional_id_pattern(Some(s(&format!("list-.*-v{version}"))))
        } else {
            request
        }
    };
    let ids = |r: &ListTransactionsResponse| -> Vec<String> {
        let mut ids: Vec<String> = r
            .transaction_states
            .iter()
            .map(|t| t.transactional_id.0.to_string())
            .filter(|id| id.ends_with(&format!("-v{version}")) && id.starts_with("list-"))
            .collect();
        ids.sort();
        ids
    };
    let all = expect_kind!(
        ctx.call(ApiKey::ListTransactions, version, list(vec![]))
            .await,
        ListTransactions
    );
    assert_eq!(ids(&all), vec![idle_id.clone(), open_id.clone()]);
    let ongoing = expect_kind!(
        ctx.call(
            ApiKey::ListTransactions,
            version,
            list(vec!["Ongoing", "Bogus"])
        )
        .await,
        ListTransactions
    );
    assert_eq!(ids(&ongoing), vec![open_id.clone()]);
    assert_eq!(ongoing.unknown_state_filters, vec![s("Bogus")]);
    let by_producer = list(vec![]).with_producer_id_filters(vec![ProducerId(open.0)]);
    let found = expect_kind!(
        ctx.call(ApiKey::ListTransactions, version, by_producer)
            .await,
        ListTransactions
    );
    assert_eq!(ids(&found), vec![open_id.clone()]);
    if version >= 1 {
        let long_running = list(vec![]).with_duration_filter(3_600_000);
        let found = expect_kind!(
            ctx.call(ApiKey::ListTransactions, version, long_running)
                .await,
            ListTransactions
        );
        assert!(ids(&found).is_empty(), "nothing has run for an hour");
    }
    assert_eq!(end_txn(ctx, END_TXN, &open_id, open, false).await, 0);
}

/// DescribeProducers: the producer of an open transaction, with its first offset.
pub async fn describe_producers(ctx: &mut Ctx, version: i16) {
    use kafka_protocol::messages::describe_producers_request::TopicRequest;
    let topic = format!("txn-producers-v{version}");
    ctx.create_topic(&topic, 1).await;
    let id = format!("producers-v{version}");
    let producer = init(ctx, &id, 4).await;
    add_partitions(ctx, ADD_PARTITIONS, &id, producer, &topic, vec![0]).await;
    assert_eq!(
        produce(ctx, &id, producer, &topic, &["a", "b", "c"]).await,
        (0, 0)
    );
    let request = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(name(&topic))
        .with_partition_indexes(vec![0, 5])]);
    let response = expect_kind!(
        ctx.call(ApiKey::DescribeProducers, version, request).await,
        DescribeProducers
    );
    let [known, unknown] = &response.topics[0].partitions[..] else {
        panic!("two partitions expected: {response:?}");
    };
    assert_eq!(
        unknown.error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    assert_eq!(known.error_code, 0);
    let [state] = &known.active_producers[..] else {
        panic!("one producer expected: {known:?}");
    };
    assert_eq!(
        (state.producer_id.0, state.producer_epoch),
        (producer.0, i32::from(producer.1))
    );
    assert_eq!(
        (state.last_sequence, state.current_txn_start_offset),
        (2, 0)
    );
    assert_eq!(end_txn(ctx, END_TXN, &id, producer, true).await, 0);
}
