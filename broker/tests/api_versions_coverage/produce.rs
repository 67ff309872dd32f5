//! Produce v3+: batches to several partitions in one request, acks=all and acks=0, unknown
//! partitions refused, and what was stored read back record by record.

use kafka_protocol::messages::{ApiKey, ApiVersionsRequest};
use kafka_protocol::ResponseError;

use crate::common::s;
use crate::ctx::Ctx;
use crate::expect_kind;
use crate::log::{batch_now, produce_request, read};

pub async fn scenario(ctx: &mut Ctx, version: i16) {
    let topic = format!("produce-v{version}");
    ctx.create_topic(&topic, 2).await;

    // Two partitions in one request, acks=all.
    let request = produce_request(
        -1,
        vec![
            (&topic, 0, batch_now(&["a", "b", "c"])),
            (&topic, 1, batch_now(&["x"])),
        ],
    );
    let response = expect_kind!(ctx.call(ApiKey::Produce, version, request).await, Produce);
    assert_eq!(response.responses.len(), 1);
    let answers = &response.responses[0].partition_responses;
    let found: Vec<(i32, i16, i64)> = answers
        .iter()
        .map(|p| (p.index, p.error_code, p.base_offset))
        .collect();
    assert_eq!(found, vec![(0, 0, 0), (1, 0, 0)]);
    for answer in answers {
        // Create-time topic: no append time. The log start is in the answer from v5.
        assert_eq!(answer.log_append_time_ms, -1);
        let log_start = if version >= 5 { 0 } else { -1 };
        assert_eq!(answer.log_start_offset, log_start);
        assert!(answer.record_errors.is_empty() && answer.error_message.is_none());
    }

    // The next batch of partition 0 continues its offsets.
    let request = produce_request(-1, vec![(&topic, 0, batch_now(&["d", "e"]))]);
    let response = expect_kind!(ctx.call(ApiKey::Produce, version, request).await, Produce);
    let answer = &response.responses[0].partition_responses[0];
    assert_eq!((answer.error_code, answer.base_offset), (0, 3));

    // acks=0: no answer at all; the next request on the connection is answered in order.
    let request = produce_request(0, vec![(&topic, 0, batch_now(&["f"]))]);
    ctx.send_unanswered(ApiKey::Produce, version, request).await;
    let request = ApiVersionsRequest::default()
        .with_client_software_name(s("coverage"))
        .with_client_software_version(s("1"));
    let versions = expect_kind!(ctx.call(ApiKey::ApiVersions, 3, request).await, ApiVersions);
    assert_eq!(versions.error_code, 0);

    refuses_unknown_partitions(ctx, version, &topic).await;

    let stored = read(ctx, &topic, 0, 0).await;
    let expected: Vec<(i64, String)> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .enumerate()
        .map(|(i, v)| (i as i64, v.to_string()))
        .collect();
    assert_eq!(stored, expected);
    assert_eq!(read(ctx, &topic, 1, 0).await, vec![(0, "x".to_string())]);
}

async fn refuses_unknown_partitions(ctx: &mut Ctx, version: i16, topic: &str) {
    let request = produce_request(
        -1,
        vec![
            (topic, 2, batch_now(&["nowhere"])),
            ("no-such-topic", 0, batch_now(&["nowhere"])),
        ],
    );
    let response = expect_kind!(ctx.call(ApiKey::Produce, version, request).await, Produce);
    let codes: Vec<(i16, i64)> = response
        .responses
        .iter()
        .flat_map(|t| t.partition_responses.iter())
        .map(|p| (p.error_code, p.base_offset))
        .collect();
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    assert_eq!(codes, vec![(unknown, -1), (unknown, -1)]);
}
