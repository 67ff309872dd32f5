//! Produce: take each partition's one record batch, validate it record by record and apply the
//! topic's configs (`produce_policy`; with Kafka's defaults a well-formed batch is appended
//! exactly as received), answer with the base offset the index assigned. A batch refused is
//! refused whole, before anything of it is stored or offsets are assigned. Every acks level waits for durability: the engine acknowledges nothing
//! from memory.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::join_all;
use kafka_protocol::messages::produce_request::TopicProduceData;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use record_batch::validate::single_batch;
use storage::{BatchMeta, PendingAppend, ProducerMeta};

use super::produce_policy::{self, Prepared, Refused};
use crate::catalog::Topic;
use crate::context::Broker;
use crate::producers::{
    self, Admission, AdmitError, BatchHeader, SequenceError, Slot, SlotState, WriteHandle,
};
use crate::sequencer::Ticket;
use crate::storage_errors::produce_error;
use crate::transactions;

/// How long a retried batch waits for its original write's outcome (which is bounded by the
/// storage append timeout; this only guards against a lost notification).
const DUPLICATE_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(120);

/// What happened to one partition before its append could be awaited.
enum Submitted {
    Pending {
        pending: PendingAppend,
        stream: String,
        /// Set for idempotent batches: reports the outcome to retries of the same batches.
        write: Option<WriteHandle>,
        /// The time stamped into the batches of a log-append-time topic.
        log_append_time_ms: Option<i64>,
        /// Counted in the topic's traffic metrics once acknowledged.
        traffic: Traffic,
    },
    /// A retry of batches already written (or being written): answered with their offset.
    Duplicate {
        slot: Slot,
        offset_delta: u64,
        stream: String,
    },
    Failed {
        error: ResponseError,
        message: Option<String>,
        /// `(index of the record in its batch, message)` (Produce v8+).
        record_errors: Vec<(i32, String)>,
    },
}

/// What an acknowledged batch adds to its topic's metrics.
struct Traffic {
    topic: String,
    records: u32,
    bytes: u32,
}

/// Serves a Produce. `ticket` orders this request's submissions after the connection's earlier
/// produce requests. Returns `None` for acks=0 (no response is sent).
pub async fn handle(
    broker: &Arc<Broker>,
    version: i16,
    request: ProduceRequest,
    mut ticket: Ticket,
) -> Option<ProduceResponse> {
    let acks = request.acks;
    let valid_acks = (-1..=1).contains(&acks);
    let transactional_id = request.transactional_id.map(|id| id.0.to_string());
    ticket.turn().await;
    let mut submitted = Vec::with_capacity(request.topic_data.len());
    for topic_data in request.topic_data {
        let topic = broker.catalog.get(&topic_data.name.0);
        let mut partitions = Vec::with_capacity(topic_data.partition_data.len());
        for partition in topic_data.partition_data {
            let outcome = if !valid_acks {
                failed(
                    ResponseError::InvalidRequiredAcks,
                    "acks must be 0, 1 or -1",
                )
            } else {
                let records = partition.records;
                let target = Target {
                    topic: topic.as_deref(),
                    partition: partition.index,
                    transactional_id: transactional_id.as_deref(),
                };
                submit(broker, target, records, version).await
            };
            partitions.push((partition.index, outcome));
        }
        submitted.push((topic_data.name, partitions));
    }
    // Offsets are fixed for everything submitted: the next request may go ahead.
    ticket.release();

    let mut responses = Vec::with_capacity(submitted.len());
    for (name, partitions) in submitted {
        let results = join_all(
            partitions
                .into_iter()
                .map(|(index, outcome)| complete(broker, index, outcome)),
        )
        .await;
        responses.push(
            TopicProduceResponse::default()
                .with_name(name)
                .with_partition_responses(results),
        );
    }
    if acks == 0 {
        return None;
    }
    Some(ProduceResponse::default().with_responses(responses))
}

/// The request with each partition once, as Kafka reads it (`KafkaApis.handleProduceRequest`
/// collects the batches in a map by partition): a partition named again, under the same topic
/// entry or another entry of the same topic, keeps its place of first mention and its last
/// batch, and is appended and answered once.
pub fn one_batch_per_partition(mut request: ProduceRequest) -> ProduceRequest {
    let mut topics: Vec<TopicProduceData> = Vec::with_capacity(request.topic_data.len());
    let mut seen: HashMap<(TopicName, i32), (usize, usize)> = HashMap::new();
    for topic in std::mem::take(&mut request.topic_data) {
        let mut topic = topic;
        let partitions = std::mem::take(&mut topic.partition_data);
        let topic_at = match topics.iter().position(|t| t.name == topic.name) {
            Some(at) => at,
            None => {
                topics.push(topic);
                topics.len() - 1
            }
        };
        for partition in partitions {
            let key = (topics[topic_at].name.clone(), partition.index);
            match seen.get(&key) {
                Some(&(t, p)) => topics[t].partition_data[p] = partition,
                None => {
                    let list = &mut topics[topic_at].partition_data;
                    seen.insert(key, (topic_at, list.len()));
                    list.push(partition);
                }
            }
        }
    }
    request.topic_data = topics;
    request
}

fn failed(error: ResponseError, message: &str) -> Submitted {
    Submitted::Failed {
        error,
        message: Some(message.to_string()),
        record_errors: Vec::new(),
    }
}

fn failed_quietly(error: ResponseError) -> Submitted {
    Submitted::Failed {
        error,
        message: None,
        record_errors: Vec::new(),
    }
}

/// Where a partition's batch goes, and the transactional id it was sent with.
struct Target<'a> {
    topic: Option<&'a Topic>,
    partition: i32,
    transactional_id: Option<&'a str>,
}

async fn submit(
    broker: &Broker,
    target: Target<'_>,
    records: Option<bytes::Bytes>,
    version: i16,
) -> Submitted {
    let Target {
        topic,
        partition,
        transactional_id,
    } = target;
    let Some(topic) = topic else {
        return failed_quietly(ResponseError::UnknownTopicOrPartition);
    };
    if partition < 0 || partition >= topic.record.partitions {
        return failed_quietly(ResponseError::UnknownTopicOrPartition);
    }
    let prepared = match validate(broker, topic, partition, records, version).await {
        Ok(prepared) => prepared,
        Err(refused) => return refused,
    };
    let stream = topic.stream_id(partition);
    // Held until the batch is queued: ordered with this partition's transaction markers.
    let _transaction = if prepared.header.is_transactional() {
        match admit_transactional(
            broker,
            transactional_id,
            topic,
            partition,
            &stream,
            &prepared,
        )
        .await
        {
            Ok(guard) => Some(guard),
            Err(refused) => return refused,
        }
    } else {
        None
    };
    let headers = producer_headers(&prepared.header, prepared.records_count);
    let admitted = if headers.is_empty() {
        None
    } else {
        match admit(broker, topic, partition, &stream, &headers).await {
            Ok(admitted) => Some(admitted),
            Err(refused_or_duplicate) => return refused_or_duplicate,
        }
    };
    append(broker, topic, partition, stream, prepared, admitted).await
}

/// A transactional batch: sent with its transactional id, by the producer of the open
/// transaction that holds this partition.
async fn admit_transactional(
    broker: &Broker,
    transactional_id: Option<&str>,
    topic: &Topic,
    partition: i32,
    stream: &str,
    prepared: &Prepared,
) -> Result<tokio::sync::OwnedMutexGuard<transactions::WriterState>, Submitted> {
    let Some(id) = transactional_id else {
        return Err(failed(
            ResponseError::InvalidRecord,
            "a transactional batch needs the request's transactional id",
        ));
    };
    let batch = transactions::writer::TxnBatch {
        producer_id: prepared.header.producer_id,
        epoch: prepared.header.producer_epoch,
    };
    transactions::writer::admit(broker, id, &topic.name, partition, stream, batch)
        .await
        .map_err(|error| {
            tracing::debug!(topic = %topic.name, partition, ?error, "transactional produce refused");
            failed_quietly(error)
        })
}

/// The partition's one batch, validated record by record and shaped by the topic's configs,
/// then checked against the schema registry when the topic asks for it.
async fn validate(
    broker: &Broker,
    topic: &Topic,
    partition: i32,
    records: Option<bytes::Bytes>,
    version: i16,
) -> Result<Prepared, Submitted> {
    let Some(records) = records else {
        return Err(failed(ResponseError::InvalidRecord, "no records"));
    };
    // Zstd is allowed from Produce v7 (KIP-110).
    let batch = match single_batch(&records, version >= 7) {
        Ok(batch) => records.slice_ref(batch),
        Err(e) => return Err(refused(topic, partition, Refused::from(e))),
    };
    if let Some(outcome) = record_batch::BatchHeader::parse(&batch)
        .ok()
        .and_then(|h| refuse_batch(&h))
    {
        return Err(outcome);
    }
    let prepared = prepare(topic, partition, batch)
        .await
        .map_err(|refusal| refused(topic, partition, refusal))?;
    let validation = topic.config.schema_validation;
    if validation.is_on() {
        crate::schemas::validation::check(
            broker,
            &topic.name,
            validation,
            prepared.records.clone(),
        )
        .await
        .map_err(|refusal| refused(topic, partition, refusal))?;
    }
    Ok(prepared)
}

/// Sequence checks of an idempotent batch: admitted, a retry of a batch already written
/// (answered with its offset), or refused.
async fn admit(
    broker: &Broker,
    topic: &Topic,
    partition: i32,
    stream: &str,
    headers: &[(BatchHeader, u64)],
) -> Result<producers::Admitted, Submitted> {
    let state = broker.producers.partition(stream);
    match state
        .admit(&broker.storage, stream, headers, producers::now_ms())
        .await
    {
        Ok(Admission::Append(admitted)) => Ok(admitted),
        Ok(Admission::Duplicate { slot, offset_delta }) => {
            tracing::debug!(topic = %topic.name, partition, "duplicate produce batch");
            Err(Submitted::Duplicate {
                slot,
                offset_delta,
                stream: stream.to_string(),
            })
        }
        Err(e) => {
            tracing::debug!(topic = %topic.name, partition, error = %e, "idempotent produce refused");
            Err(failed(admit_error(&e), &e.to_string()))
        }
    }
}

/// Queues the append. For idempotent batches the partition's producer state stays locked
/// until the append is queued, so sequence checks happen in offset order.
async fn append(
    broker: &Broker,
    topic: &Topic,
    partition: i32,
    stream: String,
    prepared: Prepared,
    admitted: Option<producers::Admitted>,
) -> Submitted {
    let Prepared {
        records,
        header,
        records_count,
        log_append_time_ms,
    } = prepared;
    let (Ok(len), Ok(count)) = (u32::try_from(records.len()), u32::try_from(records_count)) else {
        return failed(ResponseError::MessageTooLarge, "batch too large");
    };
    let metas = vec![BatchMeta {
        len,
        records: count,
        max_timestamp: header.max_timestamp,
        producer: header.has_producer_id().then_some(ProducerMeta {
            id: header.producer_id,
            epoch: header.producer_epoch,
            base_sequence: header.base_sequence,
        }),
    }];
    match broker.storage.submit(&stream, records, metas).await {
        Ok(pending) => Submitted::Pending {
            pending,
            stream,
            write: admitted.map(|a| a.submitted()),
            log_append_time_ms,
            traffic: Traffic {
                topic: topic.name.to_string(),
                records: count,
                bytes: len,
            },
        },
        Err(e) => {
            if let Some(admitted) = admitted {
                admitted.abandon();
            }
            tracing::debug!(topic = %topic.name, partition, error = %e, "produce not admitted");
            failed(produce_error(&e), &e.to_string())
        }
    }
}

fn refused(topic: &Topic, partition: i32, refusal: Refused) -> Submitted {
    tracing::debug!(topic = %topic.name, partition, error = ?refusal.error, reason = %refusal.message, "produce refused");
    Submitted::Failed {
        error: refusal.error,
        message: Some(refusal.message),
        record_errors: refusal.record_errors,
    }
}

/// Validates the batch and applies the topic's configs; compressed batches (decompression,
/// maybe re-encoding) are handled on a blocking thread.
async fn prepare(topic: &Topic, partition: i32, batch: bytes::Bytes) -> Result<Prepared, Refused> {
    let now_ms = i64::try_from(producers::now_ms()).unwrap_or(i64::MAX);
    let name = format!("{}-{partition}", topic.name);
    if !produce_policy::is_heavy(&topic.config, &batch) {
        return produce_policy::prepare(&topic.config, &name, batch, now_ms);
    }
    let config = topic.config.clone();
    tokio::task::spawn_blocking(move || produce_policy::prepare(&config, &name, batch, now_ms))
        .await
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, "batch validation failed to run");
            Err(Refused {
                error: ResponseError::UnknownServerError,
                message: "batch validation failed to run".into(),
                record_errors: Vec::new(),
            })
        })
}

/// The producer header of an idempotent batch (offset delta 0: one batch per partition).
fn producer_headers(header: &record_batch::BatchHeader, records: i32) -> Vec<(BatchHeader, u64)> {
    if !header.has_producer_id() {
        return Vec::new();
    }
    vec![(
        BatchHeader {
            producer_id: header.producer_id,
            epoch: header.producer_epoch,
            base_sequence: header.base_sequence,
            records,
        },
        0,
    )]
}

fn admit_error(error: &AdmitError) -> ResponseError {
    match error {
        AdmitError::Sequence(SequenceError::StaleEpoch { .. }) => {
            ResponseError::InvalidProducerEpoch
        }
        AdmitError::Sequence(SequenceError::OutOfOrder { .. }) => {
            ResponseError::OutOfOrderSequenceNumber
        }
        AdmitError::PartialDuplicate => ResponseError::DuplicateSequenceNumber,
        AdmitError::Recovery(e) => produce_error(e),
    }
}

/// Batches this broker cannot take yet, with the error Kafka clients expect.
fn refuse_batch(header: &record_batch::BatchHeader) -> Option<Submitted> {
    if header.is_transactional() && !header.has_producer_id() {
        return Some(failed(
            ResponseError::InvalidRecord,
            "a transactional batch needs a producer id",
        ));
    }
    if header.has_producer_id() && header.producer_epoch < 0 {
        return Some(failed(
            ResponseError::InvalidRecord,
            "an idempotent batch needs a producer epoch",
        ));
    }
    None
}

async fn complete(broker: &Broker, index: i32, outcome: Submitted) -> PartitionProduceResponse {
    let response = PartitionProduceResponse::default()
        .with_index(index)
        .with_log_append_time_ms(-1)
        .with_log_start_offset(-1);
    match outcome {
        Submitted::Failed {
            error,
            message,
            record_errors,
        } => failed_response(response, error, message, record_errors),
        Submitted::Duplicate {
            slot,
            offset_delta,
            stream,
        } => duplicate_response(broker, response, slot, offset_delta, &stream).await,
        Submitted::Pending {
            pending,
            stream,
            write,
            log_append_time_ms,
            traffic,
        } => match pending.wait().await {
            Ok(appended) => {
                crate::metrics::produced(&traffic.topic, traffic.records, traffic.bytes);
                if let Some(write) = write {
                    write.written(appended.base_offset);
                }
                written(broker, response, appended.base_offset, &stream)
                    .await
                    .with_log_append_time_ms(log_append_time_ms.unwrap_or(-1))
            }
            Err(e) => {
                if let Some(write) = write {
                    write.failed().await;
                }
                tracing::warn!(stream, error = %e, "produce failed");
                let message = Some(e.to_string());
                failed_response(response, produce_error(&e), message, Vec::new())
            }
        },
    }
}

fn failed_response(
    response: PartitionProduceResponse,
    error: ResponseError,
    message: Option<String>,
    record_errors: Vec<(i32, String)>,
) -> PartitionProduceResponse {
    response
        .with_error_code(error.code())
        .with_base_offset(-1)
        .with_error_message(message.map(StrBytes::from_string))
        .with_record_errors(
            record_errors
                .into_iter()
                .map(|(index, message)| {
                    BatchIndexAndErrorMessage::default()
                        .with_batch_index(index)
                        .with_batch_index_error_message(Some(StrBytes::from_string(message)))
                })
                .collect(),
        )
}

/// A retried batch is answered with the offset its original write got, once that is known.
async fn duplicate_response(
    broker: &Broker,
    response: PartitionProduceResponse,
    slot: Slot,
    offset_delta: u64,
    stream: &str,
) -> PartitionProduceResponse {
    match tokio::time::timeout(DUPLICATE_WAIT_MAX, slot.outcome()).await {
        Ok(SlotState::Written(base_offset)) => {
            written(broker, response, base_offset + offset_delta, stream).await
        }
        // The original failed and was rolled back: the client's next retry appends.
        Ok(_) => failed_response(
            response,
            ResponseError::KafkaStorageError,
            Some("the original write of this retried batch failed".into()),
            Vec::new(),
        ),
        Err(_) => failed_response(response, ResponseError::RequestTimedOut, None, Vec::new()),
    }
}

/// A batch written at `base_offset`, with the partition's log start as this broker knows it
/// (not re-read: on a partition written less often than the bounds go stale, a re-read would
/// put two MetaStore reads on every produce's path; docs/scale.md).
async fn written(
    broker: &Broker,
    response: PartitionProduceResponse,
    base_offset: u64,
    stream: &str,
) -> PartitionProduceResponse {
    let log_start_offset = broker.storage.cached_bounds(stream).await.map_or(-1, |b| {
        i64::try_from(b.log_start_offset).unwrap_or(i64::MAX)
    });
    response
        .with_base_offset(i64::try_from(base_offset).unwrap_or(i64::MAX))
        .with_log_start_offset(log_start_offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::produce_request::PartitionProduceData;

    fn topic(name: &str, partitions: &[(i32, &'static [u8])]) -> TopicProduceData {
        TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str(match name {
                "a" => "a",
                _ => "b",
            })))
            .with_partition_data(
                partitions
                    .iter()
                    .map(|(index, records)| {
                        PartitionProduceData::default()
                            .with_index(*index)
                            .with_records(Some(bytes::Bytes::from_static(records)))
                    })
                    .collect(),
            )
    }

    fn listed(request: &ProduceRequest) -> Vec<(String, i32, Vec<u8>)> {
        request
            .topic_data
            .iter()
            .flat_map(|t| {
                t.partition_data.iter().map(|p| {
                    let records = p.records.as_deref().unwrap_or_default().to_vec();
                    (t.name.0.to_string(), p.index, records)
                })
            })
            .collect()
    }

    #[test]
    fn a_partition_named_many_times_is_produced_once_with_its_last_batch() {
        let request = ProduceRequest::default().with_topic_data(vec![
            topic("a", &[(0, b"1"), (1, b"2"), (0, b"3")]),
            topic("b", &[(0, b"4")]),
            topic("a", &[(0, b"5"), (2, b"6")]),
        ]);
        let once = one_batch_per_partition(request);
        assert_eq!(once.topic_data.len(), 2);
        assert_eq!(
            listed(&once),
            vec![
                ("a".into(), 0, b"5".to_vec()),
                ("a".into(), 1, b"2".to_vec()),
                ("a".into(), 2, b"6".to_vec()),
                ("b".into(), 0, b"4".to_vec()),
            ]
        );
    }
}
