//! Writing and reading a partition at fixed, latest versions, for the scenarios that test
//! another API (or another version) against what is stored.

use bytes::Bytes;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::records::{Record, RecordBatchDecoder, TimestampType};

use crate::common::{encode_batch, name};
use crate::ctx::Ctx;
use crate::expect_kind;

pub const PRODUCE_LATEST: i16 = 9;
pub const FETCH_LATEST: i16 = 12;

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// One batch of `(value, timestamp)` records, keyed `k-<value>`.
pub fn batch(records: &[(&str, i64)]) -> Bytes {
    let records: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (value, timestamp))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            // The encoder starts a new batch wherever offset - sequence changes: this keeps
            // them in one batch (whose base sequence is -1, as a non-idempotent producer's).
            sequence: i as i32 - 1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            timestamp: *timestamp,
            key: Some(Bytes::from(format!("k-{value}"))),
            value: Some(Bytes::from(value.to_string())),
            headers: Default::default(),
        })
        .collect();
    encode_batch(&records)
}

/// A batch of records stamped now.
pub fn batch_now(values: &[&str]) -> Bytes {
    let now = now_ms();
    let records: Vec<(&str, i64)> = values.iter().map(|v| (*v, now)).collect();
    batch(&records)
}

pub fn produce_request(acks: i16, partitions: Vec<(&str, i32, Bytes)>) -> ProduceRequest {
    let mut topics: Vec<TopicProduceData> = Vec::new();
    for (topic, partition, records) in partitions {
        let data = PartitionProduceData::default()
            .with_index(partition)
            .with_records(Some(records));
        match topics.last_mut() {
            Some(t) if &*t.name.0 == topic => t.partition_data.push(data),
            _ => topics.push(
                TopicProduceData::default()
                    .with_name(name(topic))
                    .with_partition_data(vec![data]),
            ),
        }
    }
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(10_000)
        .with_topic_data(topics)
}

/// Appends `records` to one partition; returns the base offset.
pub async fn append(ctx: &mut Ctx, topic: &str, partition: i32, records: Bytes) -> i64 {
    let request = produce_request(-1, vec![(topic, partition, records)]);
    let response = expect_kind!(
        ctx.call(ApiKey::Produce, PRODUCE_LATEST, request).await,
        Produce
    );
    let answer = &response.responses[0].partition_responses[0];
    assert_eq!(answer.error_code, 0, "{:?}", answer.error_message);
    answer.base_offset
}

pub fn fetch_partition(version: i16, partition: i32, offset: i64) -> FetchPartition {
    let p = FetchPartition::default()
        .with_partition(partition)
        .with_fetch_offset(offset)
        .with_partition_max_bytes(1 << 20);
    if version >= 5 {
        p.with_log_start_offset(-1)
    } else {
        p
    }
}

/// `(offset, key, value, timestamp)` of every record in a fetched record set.
pub fn decode(records: &Option<Bytes>) -> Vec<(i64, String, String, i64)> {
    let mut bytes = records.clone().unwrap_or_default();
    let text = |b: &Option<Bytes>| String::from_utf8_lossy(b.as_deref().unwrap_or(b"")).to_string();
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let set = RecordBatchDecoder::decode(&mut bytes).unwrap();
        for r in set.records {
            out.push((r.offset, text(&r.key), text(&r.value), r.timestamp));
        }
    }
    out
}

/// `(offset, value)` of the records of one partition from `offset` on, read at the latest
/// Fetch version.
pub async fn read(ctx: &mut Ctx, topic: &str, partition: i32, offset: i64) -> Vec<(i64, String)> {
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![fetch_partition(
                FETCH_LATEST,
                partition,
                offset,
            )])]);
    let response = expect_kind!(ctx.call(ApiKey::Fetch, FETCH_LATEST, request).await, Fetch);
    let p = &response.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    decode(&p.records)
        .into_iter()
        .map(|(offset, _, value, _)| (offset, value))
        .collect()
}

/// Moves the log start of one partition to `offset` (DeleteRecords, latest version).
pub async fn trim(ctx: &mut Ctx, topic: &str, partition: i32, offset: i64) {
    let request = DeleteRecordsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![DeleteRecordsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![DeleteRecordsPartition::default()
                .with_partition_index(partition)
                .with_offset(offset)])]);
    let response = expect_kind!(
        ctx.call(ApiKey::DeleteRecords, 2, request).await,
        DeleteRecords
    );
    let p = &response.topics[0].partitions[0];
    assert_eq!((p.error_code, p.low_watermark), (0, offset));
}
