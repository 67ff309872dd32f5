//! A partition's records in a Produce, from the request to what is appended, as Kafka's
//! `LogValidator` takes them: the one batch validated record by record in one streaming pass
//! (`record_batch::validate`: framing, CRC, counts, every record, bounded decompression), the
//! topic's configs applied on the way (`message.timestamp.type=CreateTime` bounds every
//! record's timestamp, `message.timestamp.before.max.ms`/`after.max.ms`, one record out of
//! bounds refusing the batch with INVALID_TIMESTAMP and `record_errors`; compacted topics need
//! a key in every record, INVALID_RECORD with `record_errors` on every Produce version, as
//! Kafka 4.1 answers), then what Kafka rewrites:
//! `compression.type` other than `producer`
//! (re-encoded in the topic's codec), `LogAppendTime` (stamped into the header), and on
//! CreateTime topics a header `max_timestamp` that is not the largest record timestamp (set
//! to it: retention and ListOffsets by time read the header, never a producer's claim). With
//! Kafka's defaults and a well-formed batch nothing is rewritten: it is appended exactly as
//! received.
//!
//! Cost: one pass over the records; compressed ones are decompressed through a stream into
//! one buffer and never held whole (`record-batch`'s `validate_bench` measures it).
//! Re-encoding decompresses once more. Compressed batches are handled off the async threads.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use record_batch::rewrite::reencode;
use record_batch::validate::{validate_produced, Limits, RecordInfo, Validated};
use record_batch::{
    set_max_timestamp, stamp_log_append_time, BatchHeader, RecordBatchError, DECOMPRESSED_BYTES_MAX,
};
use storage::topics::{TimestampType, TopicCompression, TopicConfig};

/// Kafka's `RecordBatch.NO_TIMESTAMP`: a record without a timestamp is never out of bounds.
const NO_TIMESTAMP: i64 = -1;
/// Kafka lists at most this many record errors in the error message.
const RECORD_ERRORS_IN_MESSAGE_MAX: usize = 3;

/// A batch ready to append.
#[derive(Debug)]
pub struct Prepared {
    pub records: Bytes,
    pub header: BatchHeader,
    pub records_count: i32,
    /// The time stamped into the batch when the topic uses log append time.
    pub log_append_time_ms: Option<i64>,
}

/// A batch refused, with what the Produce response says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub error: ResponseError,
    pub message: String,
    /// `(index of the record in its batch, message)` for record-level errors.
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

impl From<RecordBatchError> for Refused {
    /// Kafka's answer to each kind of defect. Kafka answers UNKNOWN_SERVER_ERROR where a
    /// record does not decompress or uses an unknown codec (an exception it does not map);
    /// those are `Invalid` here, INVALID_RECORD, the code Kafka gives every other record that
    /// does not decode, and not retriable, as neither is the defect.
    fn from(e: RecordBatchError) -> Refused {
        let error = match &e {
            RecordBatchError::Corrupt(_) => ResponseError::CorruptMessage,
            RecordBatchError::Invalid(_) => ResponseError::InvalidRecord,
            RecordBatchError::InvalidRecord { index, message } => {
                return invalid_records(vec![(*index, message.clone())]);
            }
            // A Java producer splits a batch refused so and sends its halves.
            RecordBatchError::TooLarge(_) => ResponseError::MessageTooLarge,
            RecordBatchError::UnsupportedCodec(_) => ResponseError::UnsupportedCompressionType,
            RecordBatchError::Codec(_) => ResponseError::UnknownServerError,
        };
        Refused::new(error, e.to_string())
    }
}

/// Whether preparing this batch needs CPU worth moving off the async threads.
pub fn is_heavy(config: &TopicConfig, batch: &[u8]) -> bool {
    let codec = BatchHeader::parse(batch).map_or(0, |h| h.codec());
    codec != 0 || config.compression.codec().is_some_and(|c| c != codec)
}

/// Validates `batch` (the partition's one batch, of `partition` named `topic-N` as Kafka
/// names it in messages) and applies the topic's configs to it.
pub fn prepare(
    config: &TopicConfig,
    partition: &str,
    batch: Bytes,
    now_ms: i64,
) -> Result<Prepared, Refused> {
    let limits = Limits {
        batch_bytes_max: usize::try_from(config.max_message_bytes).unwrap_or(usize::MAX),
        decompressed_bytes_max: DECOMPRESSED_BYTES_MAX,
    };
    let mut checks = RecordChecks::new(config, partition, now_ms);
    let validated = validate_produced(&batch, &limits, |r| checks.visit(r))?;
    let max_timestamp = checks.finish()?;
    rewrite(config, batch, &validated, now_ms, max_timestamp)
}

/// The `max_timestamp` the header must hold when it is not what its producer claimed:
/// Kafka's `setMaxTimestamp` for CreateTime batches.
fn corrected_max_timestamp(
    config: &TopicConfig,
    header: &BatchHeader,
    records_max_timestamp: i64,
) -> Option<i64> {
    if config.timestamp_type != TimestampType::CreateTime || header.is_log_append_time() {
        return None;
    }
    Some(records_max_timestamp).filter(|max| *max != header.max_timestamp)
}

/// The rewrites Kafka makes, each only when needed; with none the batch is kept as received.
fn rewrite(
    config: &TopicConfig,
    batch: Bytes,
    validated: &Validated,
    now_ms: i64,
    records_max_timestamp: i64,
) -> Result<Prepared, Refused> {
    let stamp = (config.timestamp_type == TimestampType::LogAppendTime).then_some(now_ms);
    let reencode_to = config
        .compression
        .codec()
        .filter(|c| *c != validated.header.codec());
    let max_timestamp = corrected_max_timestamp(config, &validated.header, records_max_timestamp);
    if stamp.is_none() && reencode_to.is_none() && max_timestamp.is_none() {
        return Ok(prepared(batch, validated, None));
    }
    let mut out = batch.to_vec();
    if reencode_to.is_some() {
        let (codec, level) = codec_and_level(config.compression);
        out = reencode(&out, codec, level, DECOMPRESSED_BYTES_MAX)?;
        // Kafka checks `max.message.bytes` again after re-encoding changed the size.
        if out.len() as u64 > config.max_message_bytes {
            return Err(Refused::new(
                ResponseError::MessageTooLarge,
                format!(
                    "batch of {} bytes after re-encoding exceeds max.message.bytes {}",
                    out.len(),
                    config.max_message_bytes
                ),
            ));
        }
    }
    if let Some(now_ms) = stamp {
        stamp_log_append_time(&mut out, now_ms)?;
    }
    if let Some(max_timestamp) = max_timestamp {
        set_max_timestamp(&mut out, max_timestamp)?;
    }
    let header = BatchHeader::parse(&out)?;
    let validated = Validated {
        header,
        len_bytes: out.len(),
        ..*validated
    };
    Ok(prepared(Bytes::from(out), &validated, stamp))
}

fn prepared(records: Bytes, v: &Validated, log_append_time_ms: Option<i64>) -> Prepared {
    debug_assert_eq!(records.len(), v.len_bytes);
    Prepared {
        records,
        header: v.header,
        records_count: v.records_count,
        log_append_time_ms,
    }
}

fn codec_and_level(compression: TopicCompression) -> (i16, Option<i32>) {
    match compression {
        TopicCompression::Gzip { level } => (1, Some(level)),
        TopicCompression::Snappy => (2, None),
        TopicCompression::Lz4 { level } => (3, Some(level)),
        TopicCompression::Zstd { level } => (4, Some(level)),
        TopicCompression::Uncompressed | TopicCompression::Producer => (0, None),
    }
}

/// The topic's per-record rules, applied as validation reads each record; like Kafka, every
/// record is checked and all failures are reported.
struct RecordChecks {
    /// `[now - before.max.ms, now + after.max.ms]` for CreateTime topics.
    bounds: Option<(i64, i64)>,
    /// Compacted topics need a key in every record: Kafka's `validateKey`, with its message.
    keys_required: Option<String>,
    timestamp_errors: Vec<(i32, String)>,
    key_errors: Vec<(i32, String)>,
    /// The largest record timestamp, from `NO_TIMESTAMP` as Kafka's `maxBatchTimestamp`.
    max_timestamp: i64,
}

impl RecordChecks {
    fn new(config: &TopicConfig, partition: &str, now_ms: i64) -> Self {
        let before = i64::try_from(config.timestamp_before_max_ms).unwrap_or(i64::MAX);
        let after = i64::try_from(config.timestamp_after_max_ms).unwrap_or(i64::MAX);
        let bounds = (config.timestamp_type == TimestampType::CreateTime)
            .then(|| (now_ms.saturating_sub(before), now_ms.saturating_add(after)));
        RecordChecks {
            bounds,
            keys_required: config.cleanup_policy.compact.then(|| {
                format!("Compacted topic cannot accept message without key in topic partition {partition}")
            }),
            timestamp_errors: Vec::new(),
            key_errors: Vec::new(),
            max_timestamp: NO_TIMESTAMP,
        }
    }

    fn visit(&mut self, r: &RecordInfo) {
        self.max_timestamp = self.max_timestamp.max(r.timestamp);
        if let Some(message) = self.keys_required.as_ref().filter(|_| !r.has_key) {
            self.key_errors.push((r.index, message.clone()));
            return;
        }
        let Some((low, high)) = self.bounds else {
            return;
        };
        if r.timestamp != NO_TIMESTAMP && (r.timestamp < low || r.timestamp > high) {
            self.timestamp_errors.push((r.index, format!(
                "Timestamp {} of message with offset {} is out of range. The timestamp should be within [{low}, {high}]",
                r.timestamp, r.offset_delta
            )));
        }
    }

    /// Kafka answers INVALID_TIMESTAMP when any record's timestamp failed, else INVALID_RECORD;
    /// the largest record timestamp when every record passed.
    fn finish(self) -> Result<i64, Refused> {
        if !self.timestamp_errors.is_empty() {
            let mut record_errors = self.timestamp_errors;
            record_errors.extend(self.key_errors);
            record_errors.sort_by_key(|(index, _)| *index);
            return Err(Refused {
                error: ResponseError::InvalidTimestamp,
                message: "One or more records have been rejected due to invalid timestamp".into(),
                record_errors,
            });
        }
        if self.key_errors.is_empty() {
            return Ok(self.max_timestamp);
        }
        Err(invalid_records(self.key_errors))
    }
}

/// INVALID_RECORD with `record_errors`, in Kafka's words (Java's `RecordError.toString()` of
/// the first three).
pub(crate) fn invalid_records(record_errors: Vec<(i32, String)>) -> Refused {
    let shown: Vec<String> = record_errors
        .iter()
        .take(RECORD_ERRORS_IN_MESSAGE_MAX)
        .map(|(index, m)| format!("RecordError(batchIndex={index}, message='{m}')"))
        .collect();
    Refused {
        error: ResponseError::InvalidRecord,
        message: format!(
            "One or more records have been rejected due to {} record errors in total, and only showing the first three errors at most: [{}]",
            record_errors.len(),
            shown.join(", ")
        ),
        record_errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record_batch::{decode_batch, encode_batch, RecordRow};
    use std::collections::BTreeMap;
    use storage::topics::TopicDefaults;

    const NOW: i64 = 1_700_000_000_000;

    fn config(pairs: &[(&str, &str)]) -> TopicConfig {
        let overrides: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TopicConfig::resolve(&overrides, &TopicDefaults::kafka()).unwrap()
    }

    fn batch_with(codec: i16, timestamps: &[i64], deltas: &[i32], keys: bool) -> Bytes {
        let header = BatchHeader {
            base_offset: 0,
            partition_leader_epoch: -1,
            attributes: codec,
            last_offset_delta: i32::try_from(timestamps.len()).unwrap() - 1,
            base_timestamp: timestamps[0],
            max_timestamp: *timestamps.iter().max().unwrap(),
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
        };
        let records: Vec<RecordRow> = timestamps
            .iter()
            .zip(deltas)
            .map(|(ts, delta)| RecordRow {
                attributes: 0,
                timestamp_delta: ts - timestamps[0],
                offset_delta: *delta,
                key: keys.then(|| Bytes::from_static(b"k")),
                value: Some(Bytes::from(vec![b'x'; 200])),
                headers: vec![],
            })
            .collect();
        encode_batch(&header, &records, codec).unwrap()
    }

    fn batch(codec: i16, timestamps: &[i64]) -> Bytes {
        let deltas: Vec<i32> = (0..i32::try_from(timestamps.len()).unwrap()).collect();
        batch_with(codec, timestamps, &deltas, false)
    }

    #[test]
    fn defaults_append_the_batch_untouched() {
        let bytes = batch(3, &[NOW, NOW + 1]);
        let prepared = prepare(&config(&[]), "t-0", bytes.clone(), NOW).unwrap();
        assert_eq!(prepared.records, bytes);
        assert_eq!(prepared.records_count, 2);
        assert_eq!(prepared.log_append_time_ms, None);
    }

    /// A batch whose header claims `max_timestamp` whatever its records hold.
    fn batch_claiming(codec: i16, timestamps: &[i64], max_timestamp: i64) -> Bytes {
        let mut bytes = batch(codec, timestamps).to_vec();
        set_max_timestamp(&mut bytes, max_timestamp).unwrap();
        Bytes::from(bytes)
    }

    #[test]
    fn a_header_claiming_another_max_timestamp_is_given_its_records_largest() {
        let far_future = NOW + 10 * 365 * 24 * 3_600_000;
        for codec in [0, 1, 2, 3, 4] {
            for claimed in [far_future, NOW - 1, -1] {
                let bytes = batch_claiming(codec, &[NOW, NOW + 5, NOW + 2], claimed);
                let prepared = prepare(&config(&[]), "t-0", bytes, NOW).unwrap();
                assert_eq!(prepared.header.max_timestamp, NOW + 5, "codec {codec}");
                // Validation checks the CRC; a corrected batch is honest and kept as it is.
                let again = prepare(&config(&[]), "t-0", prepared.records.clone(), NOW).unwrap();
                assert_eq!(again.records, prepared.records, "codec {codec}");
                let rows = decode_batch(&prepared.records).unwrap();
                assert_eq!(rows.records.len(), 3, "codec {codec}");
            }
        }
    }

    #[test]
    fn log_append_time_topics_stamp_the_max_timestamp_whatever_was_claimed() {
        let bytes = batch_claiming(0, &[NOW - 5, NOW - 3], NOW + 1_000_000);
        let append = config(&[("message.timestamp.type", "LogAppendTime")]);
        let prepared = prepare(&append, "t-0", bytes, NOW).unwrap();
        assert_eq!(prepared.header.max_timestamp, NOW);
    }

    #[test]
    fn a_record_out_of_bounds_refuses_the_batch() {
        let bytes = batch(0, &[NOW, NOW - 10_000, NOW]);
        let bounded = config(&[("message.timestamp.before.max.ms", "5000")]);
        let refused = prepare(&bounded, "t-0", bytes, NOW).unwrap_err();
        assert_eq!(refused.error, ResponseError::InvalidTimestamp);
        assert_eq!(refused.record_errors.len(), 1);
        assert_eq!(refused.record_errors[0].0, 1);
        assert!(refused.record_errors[0].1.starts_with(&format!(
            "Timestamp {} of message with offset 1 is out of range. The timestamp should be within [{}, {}]",
            NOW - 10_000,
            NOW - 5000,
            NOW + 3_600_000
        )));
        // The future is bounded by default (one hour), record by record in compressed batches.
        let bytes = batch(4, &[NOW + 7_200_000, NOW]);
        let refused = prepare(&config(&[]), "t-0", bytes, NOW).unwrap_err();
        assert_eq!(refused.error, ResponseError::InvalidTimestamp);
        assert_eq!(refused.record_errors[0].0, 0);
    }

    #[test]
    fn log_append_time_stamps_the_batch_and_skips_the_bounds() {
        let bytes = batch(2, &[NOW - 1_000_000_000]);
        let lat = config(&[("message.timestamp.type", "LogAppendTime")]);
        let prepared = prepare(&lat, "t-0", bytes, NOW).unwrap();
        assert_eq!(prepared.log_append_time_ms, Some(NOW));
        assert_eq!(prepared.header.max_timestamp, NOW);
        assert!(prepared.header.is_log_append_time());
        assert_eq!(prepared.header.codec(), 2);
    }

    #[test]
    fn a_codec_reencodes_a_batch_of_another_codec() {
        let bytes = batch(0, &[NOW, NOW]);
        let gzip = config(&[("compression.type", "gzip")]);
        assert!(is_heavy(&gzip, &bytes));
        let prepared = prepare(&gzip, "t-0", bytes.clone(), NOW).unwrap();
        assert_eq!(prepared.header.codec(), 1);
        assert!(prepared.records.len() < bytes.len());
        let original = decode_batch(&bytes).unwrap();
        let reencoded = decode_batch(&prepared.records).unwrap();
        assert_eq!(reencoded.records, original.records);
        // Already in the topic's codec: kept as received.
        let gz = batch(1, &[NOW]);
        assert_eq!(prepare(&gzip, "t-0", gz.clone(), NOW).unwrap().records, gz);
        let plain = config(&[("compression.type", "uncompressed")]);
        let prepared = prepare(&plain, "t-0", batch(3, &[NOW]), NOW).unwrap();
        assert_eq!(prepared.header.codec(), 0);
    }

    #[test]
    fn offset_deltas_out_of_order_are_refused_with_the_records_index() {
        let bytes = batch_with(3, &[NOW, NOW, NOW], &[0, 0, 1], false);
        let refused = prepare(&config(&[]), "t-0", bytes, NOW).unwrap_err();
        assert_eq!(refused.error, ResponseError::InvalidRecord);
        let indexes: Vec<i32> = refused.record_errors.iter().map(|e| e.0).collect();
        assert_eq!(indexes, [1]);
        assert!(refused
            .message
            .contains("RecordError(batchIndex=1, message='offset delta 0"));
    }

    #[test]
    fn a_compacted_topic_refuses_records_without_keys_with_kafkas_messages() {
        let compacted = config(&[("cleanup.policy", "compact")]);
        let refused = prepare(&compacted, "t-0", batch(0, &[NOW, NOW]), NOW).unwrap_err();
        assert_eq!(refused.error, ResponseError::InvalidRecord);
        let indexes: Vec<i32> = refused.record_errors.iter().map(|e| e.0).collect();
        assert_eq!(indexes, [0, 1]);
        let one = "Compacted topic cannot accept message without key in topic partition t-0";
        assert_eq!(refused.record_errors[0].1, one);
        assert_eq!(
            refused.message,
            format!("One or more records have been rejected due to 2 record errors in total, and only showing the first three errors at most: [RecordError(batchIndex=0, message='{one}'), RecordError(batchIndex=1, message='{one}')]")
        );
        let keyed = batch_with(0, &[NOW, NOW], &[0, 1], true);
        assert!(prepare(&compacted, "t-0", keyed, NOW).is_ok());
    }

    #[test]
    fn a_broken_batch_gets_kafkas_code() {
        let mut bytes = batch(0, &[NOW]).to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let refused = prepare(&config(&[]), "t-0", Bytes::from(bytes), NOW).unwrap_err();
        assert_eq!(refused.error, ResponseError::CorruptMessage);
        let small = config(&[("max.message.bytes", "100")]);
        let refused = prepare(&small, "t-0", batch(0, &[NOW]), NOW).unwrap_err();
        assert_eq!(refused.error, ResponseError::MessageTooLarge);
    }
}
