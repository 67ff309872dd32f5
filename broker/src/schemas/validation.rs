//! Produce-time schema validation (`confluent.{key,value}.schema.validation`): the batch's
//! records decoded once more (on a blocking thread when compressed) and handed to the
//! registry's checks; one refused record refuses the batch with INVALID_RECORD and Kafka's
//! per-record errors, as Confluent Server answers.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use schema_registry::validation::{refused_records, Payloads, Rules, Strategy};
use storage::topics::confluent::{SchemaValidation, SubjectNameStrategy};

use crate::context::Broker;
use crate::handlers::produce_policy::{invalid_records, Refused};

fn strategy(s: SubjectNameStrategy) -> Strategy {
    match s {
        SubjectNameStrategy::TopicName => Strategy::TopicName,
        SubjectNameStrategy::RecordName => Strategy::RecordName,
        SubjectNameStrategy::TopicRecordName => Strategy::TopicRecordName,
    }
}

/// `Err` with what the Produce response says when a record fails the topic's validation.
pub async fn check(
    broker: &Broker,
    topic: &str,
    validation: SchemaValidation,
    batch: Bytes,
) -> Result<(), Refused> {
    debug_assert!(validation.is_on());
    let decoded = tokio::task::spawn_blocking(move || record_batch::decode_batch(&batch))
        .await
        .map_err(|e| failed(format!("schema validation failed to run: {e}")))?
        .map_err(Refused::from)?;
    let records = decoded
        .records
        .into_iter()
        .enumerate()
        .map(|(index, r)| Payloads {
            index: i32::try_from(index).unwrap_or(i32::MAX),
            key: r.key,
            value: r.value,
        })
        .collect();
    let rules = Rules {
        key: validation.key.map(strategy),
        value: validation.value.map(strategy),
    };
    let errors = refused_records(&broker.schema_registry, topic, rules, records)
        .await
        .map_err(|e| {
            tracing::warn!(topic, error = %e, "schema validation could not read the registry");
            Refused {
                // Retriable: the registry's store may answer again.
                error: ResponseError::KafkaStorageError,
                message: format!("schema validation could not read the registry: {e}"),
                record_errors: Vec::new(),
            }
        })?;
    if errors.is_empty() {
        return Ok(());
    }
    crate::metrics::schema_validation_refused(topic, errors.len());
    Err(invalid_records(errors))
}

fn failed(message: String) -> Refused {
    Refused {
        error: ResponseError::UnknownServerError,
        message,
        record_errors: Vec::new(),
    }
}
