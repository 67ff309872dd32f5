//! What a topic's configs do to a partition's batches before they are appended, as Kafka's
//! `LogValidator` does: `message.timestamp.type=CreateTime` bounds every record's timestamp
//! (`message.timestamp.before.max.ms`/`after.max.ms`; one record out of bounds refuses the whole
//! payload with INVALID_TIMESTAMP), `compression.type` other than `producer` re-encodes every
//! batch in another codec, and `LogAppendTime` stamps the append time into each batch header.
//! With Kafka's defaults nothing is rewritten: the payload is appended exactly as received.
//!
//! Cost, by design: uncompressed batches have their records' timestamps read (no copy).
//! Compressed batches kept as received are not decompressed for the future bound, which is
//! checked against the header's max timestamp (the largest of its records, as producers write
//! it); they are decompressed when the topic bounds the past (`before.max.ms` set), since the
//! header's first timestamp need not be the smallest. Re-encoded batches are checked record by
//! record. Re-encoding runs off the async threads.

use bytes::{Bytes, BytesMut};
use kafka_protocol::ResponseError;
use protocol::batch::{validate_batches, BatchInfo};
use storage::record_batch::{self, RecordBatchError, DECOMPRESSED_BYTES_MAX};
use storage::topics::{TimestampType, TopicCompression, TopicConfig};

/// Kafka's `RecordBatch.NO_TIMESTAMP`: a record without a timestamp is never out of bounds.
const NO_TIMESTAMP: i64 = -1;

/// A payload ready to append.
#[derive(Debug)]
pub struct Prepared {
    pub records: Bytes,
    pub batches: Vec<BatchInfo>,
    /// The time stamped into every batch when the topic uses log append time.
    pub log_append_time_ms: Option<i64>,
}

/// A payload refused, with what the Produce response says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub error: ResponseError,
    pub message: String,
    /// `(index of the record in its batch, message)` for INVALID_TIMESTAMP.
    pub record_errors: Vec<(i32, String)>,
}

impl Refused {
    fn new(error: ResponseError, message: String) -> Refused {
        Refused {
            error,
            message,
            record_errors: Vec::new(),
        }
    }
}

/// Whether preparing this payload needs CPU worth moving off the async threads.
pub fn is_heavy(config: &TopicConfig, batches: &[BatchInfo]) -> bool {
    batches.iter().any(|b| {
        needs_reencode(config, b)
            || (b.compression() != kafka_protocol::records::Compression::None
                && bounds_the_past(config))
    })
}

/// Applies the topic's timestamp and compression configs to a validated payload.
pub fn prepare(
    config: &TopicConfig,
    records: Bytes,
    batches: Vec<BatchInfo>,
    now_ms: i64,
) -> Result<Prepared, Refused> {
    if config.timestamp_type == TimestampType::CreateTime {
        check_timestamps(config, &records, &batches, now_ms)?;
    }
    let stamp = (config.timestamp_type == TimestampType::LogAppendTime).then_some(now_ms);
    let rewrite = stamp.is_some() || batches.iter().any(|b| needs_reencode(config, b));
    if !rewrite {
        return Ok(Prepared {
            records,
            batches,
            log_append_time_ms: None,
        });
    }
    let mut out = BytesMut::with_capacity(records.len());
    for batch in &batches {
        let bytes = &records[batch.position..batch.position + batch.len_bytes];
        let mut rewritten = match (needs_reencode(config, batch), config.compression) {
            (true, compression) => reencode(bytes, compression)?,
            (false, _) => bytes.to_vec(),
        };
        if let Some(now_ms) = stamp {
            record_batch::stamp_log_append_time(&mut rewritten, now_ms).map_err(corrupt)?;
        }
        out.extend_from_slice(&rewritten);
    }
    let records = out.freeze();
    // Our own output, checked as a client's would be (lengths, CRCs, counts).
    let batches = validate_batches(&records).map_err(|e| {
        tracing::error!(error = %e, "a rewritten batch does not validate");
        Refused::new(ResponseError::CorruptMessage, e.to_string())
    })?;
    check_sizes(config, &batches)?;
    Ok(Prepared {
        records,
        batches,
        log_append_time_ms: stamp,
    })
}

fn needs_reencode(config: &TopicConfig, batch: &BatchInfo) -> bool {
    config
        .compression
        .codec()
        .is_some_and(|codec| codec != batch.attributes & 0x07)
}

/// Whether create times are bounded in the past, which needs every record read.
fn bounds_the_past(config: &TopicConfig) -> bool {
    config.timestamp_type == TimestampType::CreateTime
        && config.timestamp_before_max_ms < i64::MAX as u64
}

fn reencode(batch: &[u8], compression: TopicCompression) -> Result<Vec<u8>, Refused> {
    let (codec, level) = match compression {
        TopicCompression::Gzip { level } => (1, Some(level)),
        TopicCompression::Snappy => (2, None),
        TopicCompression::Lz4 { level } => (3, Some(level)),
        TopicCompression::Zstd { level } => (4, Some(level)),
        TopicCompression::Uncompressed | TopicCompression::Producer => (0, None),
    };
    record_batch::reencode(batch, codec, level, DECOMPRESSED_BYTES_MAX).map_err(corrupt)
}

fn corrupt(error: RecordBatchError) -> Refused {
    let code = match error {
        RecordBatchError::TooLarge(_) => ResponseError::MessageTooLarge,
        RecordBatchError::Corrupt(_) | RecordBatchError::Codec(_) => ResponseError::CorruptMessage,
    };
    Refused::new(code, error.to_string())
}

/// Kafka checks `max.message.bytes` again after re-encoding changed the batch sizes.
fn check_sizes(config: &TopicConfig, batches: &[BatchInfo]) -> Result<(), Refused> {
    match batches
        .iter()
        .find(|b| b.len_bytes as u64 > config.max_message_bytes)
    {
        Some(b) => Err(Refused::new(
            ResponseError::MessageTooLarge,
            format!(
                "batch of {} bytes after re-encoding exceeds max.message.bytes {}",
                b.len_bytes, config.max_message_bytes
            ),
        )),
        None => Ok(()),
    }
}

/// Every record's create time within `[now - before.max.ms, now + after.max.ms]`.
fn check_timestamps(
    config: &TopicConfig,
    records: &[u8],
    batches: &[BatchInfo],
    now_ms: i64,
) -> Result<(), Refused> {
    let before = i64::try_from(config.timestamp_before_max_ms).unwrap_or(i64::MAX);
    let after = i64::try_from(config.timestamp_after_max_ms).unwrap_or(i64::MAX);
    let out_of_bounds = |ts: i64| {
        let diff = now_ms.wrapping_sub(ts);
        ts != NO_TIMESTAMP && (diff > before || diff.wrapping_neg() > after)
    };
    let mut record_errors = Vec::new();
    for batch in batches {
        let bytes = &records[batch.position..batch.position + batch.len_bytes];
        let base_offset = i64::from_be_bytes(bytes[..8].try_into().unwrap_or_default());
        for (index, offset_delta, ts) in timestamps(config, batch, bytes)? {
            if out_of_bounds(ts) {
                let offset = base_offset.wrapping_add(i64::from(offset_delta));
                record_errors.push((index, format!(
                    "Timestamp {ts} of message with offset {offset} is out of range. The timestamp should be within [{}, {}]",
                    now_ms.wrapping_sub(before),
                    now_ms.wrapping_add(after)
                )));
            }
        }
    }
    if record_errors.is_empty() {
        return Ok(());
    }
    Err(Refused {
        error: ResponseError::InvalidTimestamp,
        message: "One or more records have been rejected due to invalid timestamp".into(),
        record_errors,
    })
}

/// `(index, offset delta, timestamp)` of the records to check: every record when they can be
/// read cheaply or the past is bounded, else the header's first and max timestamps.
fn timestamps(
    config: &TopicConfig,
    batch: &BatchInfo,
    bytes: &[u8],
) -> Result<Vec<(i32, i32, i64)>, Refused> {
    let uncompressed = batch.attributes & 0x07 == 0;
    if uncompressed || needs_reencode(config, batch) || bounds_the_past(config) {
        let times =
            record_batch::record_timestamps(bytes, DECOMPRESSED_BYTES_MAX).map_err(corrupt)?;
        return Ok(times
            .iter()
            .enumerate()
            .map(|(i, t)| (i as i32, t.offset_delta, t.timestamp))
            .collect());
    }
    let last = batch.records_count.saturating_sub(1);
    Ok(vec![
        (0, 0, batch.base_timestamp),
        (last, last, batch.max_timestamp),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use storage::compacted::batch::{decode_batch, encode_batch};
    use storage::compacted::{BatchHeader, RecordRow};
    use storage::topics::TopicDefaults;

    const NOW: i64 = 1_700_000_000_000;

    fn config(pairs: &[(&str, &str)]) -> TopicConfig {
        let overrides: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TopicConfig::resolve(&overrides, &TopicDefaults::kafka()).unwrap()
    }

    fn payload(codec: i16, timestamps: &[i64]) -> (Bytes, Vec<BatchInfo>) {
        let header = BatchHeader {
            base_offset: 0,
            partition_leader_epoch: -1,
            attributes: codec,
            last_offset_delta: timestamps.len() as i32 - 1,
            base_timestamp: timestamps[0],
            max_timestamp: *timestamps.iter().max().unwrap(),
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
        };
        let records: Vec<RecordRow> = timestamps
            .iter()
            .enumerate()
            .map(|(i, ts)| RecordRow {
                attributes: 0,
                timestamp_delta: ts - timestamps[0],
                offset_delta: i as i32,
                key: None,
                value: Some(Bytes::from(vec![b'x'; 200])),
                headers: vec![],
            })
            .collect();
        let bytes = encode_batch(&header, &records, codec).unwrap();
        let infos = validate_batches(&bytes).unwrap();
        (bytes, infos)
    }

    #[test]
    fn defaults_append_the_payload_untouched() {
        let (bytes, infos) = payload(3, &[NOW, NOW + 1]);
        let prepared = prepare(&config(&[]), bytes.clone(), infos, NOW).unwrap();
        assert_eq!(prepared.records, bytes);
        assert_eq!(prepared.log_append_time_ms, None);
    }

    #[test]
    fn a_record_out_of_bounds_refuses_the_payload() {
        let (bytes, infos) = payload(0, &[NOW, NOW - 10_000, NOW]);
        let bounded = config(&[("message.timestamp.before.max.ms", "5000")]);
        let refused = prepare(&bounded, bytes, infos, NOW).unwrap_err();
        assert_eq!(refused.error, ResponseError::InvalidTimestamp);
        assert_eq!(refused.record_errors.len(), 1);
        assert_eq!(refused.record_errors[0].0, 1);
        assert!(refused.record_errors[0].1.starts_with(&format!(
            "Timestamp {} of message with offset 1 is out of range. The timestamp should be within [{}, {}]",
            NOW - 10_000,
            NOW - 5000,
            NOW + 3_600_000
        )));
        // The future is bounded by default (one hour), also for compressed batches.
        let (bytes, infos) = payload(4, &[NOW, NOW + 7_200_000]);
        assert_eq!(
            prepare(&config(&[]), bytes, infos, NOW).unwrap_err().error,
            ResponseError::InvalidTimestamp
        );
    }

    #[test]
    fn log_append_time_stamps_every_batch_and_skips_the_bounds() {
        let (bytes, infos) = payload(2, &[NOW - 1_000_000_000]);
        let prepared = prepare(
            &config(&[("message.timestamp.type", "LogAppendTime")]),
            bytes,
            infos,
            NOW,
        )
        .unwrap();
        assert_eq!(prepared.log_append_time_ms, Some(NOW));
        assert_eq!(prepared.batches[0].max_timestamp, NOW);
        assert!(prepared.batches[0].is_log_append_time());
        assert_eq!(
            prepared.batches[0].compression(),
            kafka_protocol::records::Compression::Snappy
        );
    }

    #[test]
    fn a_codec_reencodes_every_batch_of_another_codec() {
        let (bytes, infos) = payload(0, &[NOW, NOW]);
        let gzip = config(&[("compression.type", "gzip")]);
        assert!(is_heavy(&gzip, &infos));
        let prepared = prepare(&gzip, bytes.clone(), infos, NOW).unwrap();
        assert_eq!(
            prepared.batches[0].compression(),
            kafka_protocol::records::Compression::Gzip
        );
        assert!(prepared.records.len() < bytes.len());
        let original = decode_batch(&bytes).unwrap();
        let reencoded = decode_batch(&prepared.records).unwrap();
        assert_eq!(reencoded.records, original.records);
        // Already in the topic's codec: kept as received.
        let (gz, infos) = payload(1, &[NOW]);
        assert_eq!(prepare(&gzip, gz.clone(), infos, NOW).unwrap().records, gz);
        let (lz4, infos) = payload(3, &[NOW]);
        let plain = prepare(
            &config(&[("compression.type", "uncompressed")]),
            lz4,
            infos,
            NOW,
        )
        .unwrap();
        assert_eq!(
            plain.batches[0].compression(),
            kafka_protocol::records::Compression::None
        );
    }
}
