//! Produce refuses a batch whose records are not what its header says, whole and before
//! anything is stored, with Kafka 4.1's error codes; a compression bomb is refused while the
//! broker's memory stays bounded.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and times of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod common;

use std::io::Write;

use bytes::{Bytes, BytesMut};
use common::{create_topic, name, Client, TestBroker};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use record_batch::header::fix_crc;
use record_batch::varint::put_varlong;
use record_batch::{encode_batch, BatchHeader, RecordRow};

const TOPIC: &str = "validated";
const NOW: i64 = 1_700_000_000_000;

fn header(codec: i16, count: i32) -> BatchHeader {
    BatchHeader {
        base_offset: 0,
        partition_leader_epoch: -1,
        attributes: codec,
        last_offset_delta: count - 1,
        base_timestamp: now_ms(),
        max_timestamp: now_ms(),
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(NOW, |d| d.as_millis() as i64)
}

fn batch(codec: i16, deltas: &[i32]) -> Bytes {
    let records: Vec<RecordRow> = deltas
        .iter()
        .map(|d| RecordRow {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: *d,
            key: None,
            value: Some(Bytes::from(format!("v{d}"))),
            headers: vec![],
        })
        .collect();
    encode_batch(&header(codec, deltas.len() as i32), &records, codec).unwrap()
}

/// `batch` with its header's record count (and last offset delta) set to `count`.
fn with_count(batch: &Bytes, count: i32) -> Bytes {
    let mut b = batch.to_vec();
    b[23..27].copy_from_slice(&(count - 1).to_be_bytes());
    b[57..61].copy_from_slice(&count.to_be_bytes());
    fix_crc(&mut b).unwrap();
    Bytes::from(b)
}

/// (error code, base offset) of producing `records` to partition 0.
async fn produce(client: &mut Client, records: Bytes) -> (i16, i64) {
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(TOPIC))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(records))])]);
    let response = expect_kind!(client.call(ApiKey::Produce, 9, request).await, Produce);
    let p = &response.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

async fn high_watermark(client: &mut Client) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(TOPIC))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(-1)])]);
    let response = expect_kind!(
        client.call(ApiKey::ListOffsets, 7, request).await,
        ListOffsets
    );
    response.topics[0].partitions[0].offset
}

async fn setup() -> (TestBroker, Client) {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    create_topic(&mut client, TOPIC, 1).await;
    assert_eq!(produce(&mut client, batch(0, &[0])).await, (0, 0));
    (broker, client)
}

/// The refusal changed nothing: the high watermark is where it was and the next batch lands
/// right after the last one accepted.
async fn nothing_stored(client: &mut Client, high_watermark_before: i64) {
    assert_eq!(high_watermark(client).await, high_watermark_before);
    let (error, base) = produce(client, batch(0, &[0])).await;
    assert_eq!((error, base), (0, high_watermark_before));
}

const INVALID_RECORD: i16 = 87;

#[tokio::test]
async fn a_record_count_the_records_do_not_back_is_refused_and_nothing_is_stored() {
    let (_broker, mut client) = setup().await;
    for codec in [0, 4] {
        let one = batch(codec, &[0]);
        let two = batch(codec, &[0, 1]);
        for bad in [
            with_count(&one, i32::MAX),
            with_count(&one, 2),
            with_count(&two, 1),
        ] {
            let hw = high_watermark(&mut client).await;
            assert_eq!(produce(&mut client, bad).await, (INVALID_RECORD, -1));
            nothing_stored(&mut client, hw).await;
        }
    }
    assert_eq!(ResponseError::InvalidRecord.code(), INVALID_RECORD);
}

#[tokio::test]
async fn offset_deltas_other_than_0_to_n_are_refused_and_nothing_is_stored() {
    let (_broker, mut client) = setup().await;
    for codec in [0, 3] {
        for deltas in [&[0, 5, 1][..], &[0, 0]] {
            let hw = high_watermark(&mut client).await;
            assert_eq!(
                produce(&mut client, batch(codec, deltas)).await,
                (INVALID_RECORD, -1),
                "codec {codec}, {deltas:?}"
            );
            nothing_stored(&mut client, hw).await;
        }
    }
}

#[tokio::test]
async fn two_batches_in_one_partitions_records_are_refused() {
    let (_broker, mut client) = setup().await;
    let one = batch(0, &[0]);
    let hw = high_watermark(&mut client).await;
    let two = Bytes::from([one.as_ref(), one.as_ref()].concat());
    assert_eq!(produce(&mut client, two).await, (INVALID_RECORD, -1));
    nothing_stored(&mut client, hw).await;
}

#[tokio::test]
async fn truncated_records_are_refused() {
    let (_broker, mut client) = setup().await;
    let good = batch(0, &[0, 1]);
    // The batch cut short (its length claims more), and its last record cut short inside a
    // batch whose length and CRC agree.
    let cut = good.slice(..good.len() - 2);
    let mut inner = good[..good.len() - 2].to_vec();
    let length = (inner.len() - 12) as i32;
    inner[8..12].copy_from_slice(&length.to_be_bytes());
    fix_crc(&mut inner).unwrap();
    for bad in [cut, Bytes::from(inner)] {
        let hw = high_watermark(&mut client).await;
        assert_eq!(produce(&mut client, bad).await, (INVALID_RECORD, -1));
        nothing_stored(&mut client, hw).await;
    }
}

/// The process's peak resident memory (it holds the broker under test).
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// A zstd batch of `count` records of `value_bytes` zeros each, compressed as it is written so
/// that the test never holds the plain records either.
fn zstd_bomb(count: i32, value_bytes: usize) -> Bytes {
    let zeros = vec![0u8; value_bytes];
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    for i in 0..count {
        let mut head = BytesMut::new();
        let body_len = 1
            + 1
            + record_batch::varint::varlong_len(i64::from(i))
            + 1
            + record_batch::varint::varlong_len(value_bytes as i64)
            + value_bytes
            + 1;
        put_varlong(&mut head, body_len as i64);
        head.extend_from_slice(&[0, 0]); // attributes, timestamp delta
        put_varlong(&mut head, i64::from(i));
        put_varlong(&mut head, -1); // null key
        put_varlong(&mut head, value_bytes as i64);
        encoder.write_all(&head).unwrap();
        encoder.write_all(&zeros).unwrap();
        encoder.write_all(&[0]).unwrap(); // no headers
    }
    let compressed = encoder.finish().unwrap();
    let mut out = BytesMut::new();
    let h = header(4, count);
    out.extend_from_slice(&h.base_offset.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&h.partition_leader_epoch.to_be_bytes());
    out.extend_from_slice(&[2, 0, 0, 0, 0]);
    out.extend_from_slice(&h.attributes.to_be_bytes());
    out.extend_from_slice(&h.last_offset_delta.to_be_bytes());
    out.extend_from_slice(&h.base_timestamp.to_be_bytes());
    out.extend_from_slice(&h.max_timestamp.to_be_bytes());
    out.extend_from_slice(&h.producer_id.to_be_bytes());
    out.extend_from_slice(&h.producer_epoch.to_be_bytes());
    out.extend_from_slice(&h.base_sequence.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&compressed);
    let length = (out.len() - 12) as i32;
    out[8..12].copy_from_slice(&length.to_be_bytes());
    fix_crc(&mut out).unwrap();
    out.freeze()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compression_bomb_is_refused_with_the_brokers_memory_bounded() {
    let (_broker, mut client) = setup().await;
    // 2 GiB of well-formed records in ~100 KiB: refused at the decompression limit.
    let bomb = zstd_bomb(2048, 1 << 20);
    assert!(bomb.len() < 256 << 10, "bomb of {} bytes", bomb.len());
    // Garbage that inflates to 2 GiB: refused at its first record.
    let mut zeros = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..2048 {
        zeros.write_all(&chunk).unwrap();
    }
    let garbage = zstd_payload(zeros.finish().unwrap());
    let before = peak_rss_bytes();
    let hw = high_watermark(&mut client).await;
    let started = std::time::Instant::now();
    assert_eq!(
        produce(&mut client, bomb).await,
        (ResponseError::MessageTooLarge.code(), -1)
    );
    let bomb_ms = started.elapsed().as_millis();
    assert_eq!(produce(&mut client, garbage).await, (INVALID_RECORD, -1));
    nothing_stored(&mut client, hw).await;
    let growth = peak_rss_bytes().saturating_sub(before);
    eprintln!(
        "bomb refused in {bomb_ms} ms; peak rss grew by {} MiB",
        growth >> 20
    );
    assert!(growth < 256 << 20, "peak rss grew by {} MiB", growth >> 20);
}

/// One batch of one record whose records section is `compressed` (zstd).
fn zstd_payload(compressed: Vec<u8>) -> Bytes {
    let mut b = batch(4, &[0]).to_vec();
    b.truncate(61);
    b.extend_from_slice(&compressed);
    let length = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&length.to_be_bytes());
    fix_crc(&mut b).unwrap();
    Bytes::from(b)
}
