//! The partition writer's side of a transaction: before a transactional batch is appended,
//! the partition must be in the producer's open transaction (KIP-890 part 1, checked against
//! the coordinator's state), and the partition gets an open entry whose first offset bounds
//! the last stable offset from below. The entry is durable before the batch is appended, so no
//! reader, and no broker taking the partition over, can see the batch without it.

use kafka_protocol::ResponseError;
use metastore::{Expect, MetaError, PutOptions};
use tokio::sync::OwnedMutexGuard;

use super::records::{encode, OpenTxn};
use super::{coordinator, keys, markers, WriterState};
use crate::context::Broker;

/// The producer of one transactional batch.
#[derive(Clone, Copy, Debug)]
pub struct TxnBatch {
    pub producer_id: i64,
    pub epoch: i16,
}

/// Admits a transactional batch to `stream`; the guard is held until the batch is queued, so
/// that it is ordered with this partition's markers.
pub async fn admit(
    broker: &Broker,
    transactional_id: &str,
    topic: &str,
    partition: i32,
    stream: &str,
    batch: TxnBatch,
) -> Result<OwnedMutexGuard<WriterState>, ResponseError> {
    let txns = &broker.transactions;
    let mut writer = txns.partitions.lock(stream).await;
    let generation = txns.generation();
    if writer.generation != generation {
        // Another broker may have written here meanwhile: verify everything again.
        writer.open.clear();
        writer.generation = generation;
    }
    if writer.open.get(&batch.producer_id) == Some(&batch.epoch) {
        return Ok(writer);
    }
    coordinator::verify_partition(
        broker,
        transactional_id,
        batch.producer_id,
        batch.epoch,
        stream,
    )
    .await
    // A produce of a fenced epoch is INVALID_PRODUCER_EPOCH, as Kafka's partition leader says.
    .map_err(|e| match e {
        ResponseError::ProducerFenced => ResponseError::InvalidProducerEpoch,
        other => other,
    })?;
    register(broker, transactional_id, topic, partition, stream, batch).await?;
    writer.open.insert(batch.producer_id, batch.epoch);
    Ok(writer)
}

/// Writes the open entry (keeping the first offset of one written before, by this broker or
/// another), with this broker as the writer of its marker.
async fn register(
    broker: &Broker,
    transactional_id: &str,
    topic: &str,
    partition: i32,
    stream: &str,
    batch: TxnBatch,
) -> Result<(), ResponseError> {
    let me = broker.node.broker_id;
    let existing = markers::open_entry(broker, stream, batch.producer_id).await?;
    let (entry, expect) = match existing {
        Some((entry, _)) if entry.epoch != batch.epoch => {
            // A fenced transaction's marker is still to be written: the coordinator does not
            // let the new epoch's transaction begin before it is, so this batch is stale.
            tracing::debug!(
                stream,
                producer_id = batch.producer_id,
                "batch behind an unfinished marker"
            );
            return Err(ResponseError::InvalidTxnState);
        }
        Some((entry, _)) if entry.writer == me => return Ok(()),
        Some((mut entry, version)) => {
            entry.writer = me;
            (entry, Expect::Version(version))
        }
        None => {
            let bounds = broker
                .storage
                .bounds(stream)
                .await
                .map_err(|e| crate::storage_errors::produce_error(&e))?;
            let entry = OpenTxn {
                transactional_id: transactional_id.to_string(),
                producer_id: batch.producer_id,
                epoch: batch.epoch,
                topic: topic.to_string(),
                partition,
                first_offset: bounds.high_watermark,
                writer: me,
            };
            (entry, Expect::NotExists)
        }
    };
    let key = keys::open_key(stream, batch.producer_id);
    let options = PutOptions {
        expect,
        ..Default::default()
    };
    match broker
        .transactions
        .meta()
        .put(&key, encode(&entry), options)
        .await
    {
        Ok(_) => Ok(()),
        Err(MetaError::UnexpectedVersion) => Err(ResponseError::ConcurrentTransactions),
        Err(error) => {
            tracing::warn!(stream, %error, "open transaction entry not written");
            Err(ResponseError::KafkaStorageError)
        }
    }
}
