//! Offsets a transaction commits for a group (TxnOffsetCommit): staged under the transaction
//! until it ends, then written as the group's committed offsets on commit, dropped on abort.
//! While staged they make OffsetFetch with `require_stable` answer UNSTABLE_OFFSET_COMMIT for
//! their partitions (KIP-447), so a consumer taking a partition over never starts from an
//! offset a transaction is about to move.

use kafka_protocol::ResponseError;
use metastore::{Comparison, MetaError, PutOptions};

use super::keys;
use super::records::{decode, encode, PendingOffset, PendingOffsets, Status};
use crate::context::Broker;
use crate::groups::store::{CommittedOffset, OffsetRecord};

/// Offsets one transaction may stage for one group.
pub const PENDING_OFFSETS_MAX: usize = 100_000;

fn unavailable(error: &MetaError) -> ResponseError {
    tracing::warn!(%error, "transaction offsets not reachable");
    ResponseError::CoordinatorNotAvailable
}

async fn load(
    broker: &Broker,
    group_id: &str,
    transactional_id: &str,
) -> Result<Option<PendingOffsets>, ResponseError> {
    let key = keys::offsets_key(group_id, transactional_id);
    let record = broker
        .transactions
        .meta()
        .get(&key, Comparison::Equal, None)
        .await
        .map_err(|e| unavailable(&e))?;
    match record {
        None => Ok(None),
        Some(record) => decode(&record.value).map(Some).map_err(|error| {
            tracing::error!(key, %error, "undecodable pending offsets");
            ResponseError::UnknownServerError
        }),
    }
}

/// Stages `offsets` for the group under the producer's transaction (later ones win).
pub async fn stage(
    broker: &Broker,
    group_id: &str,
    transactional_id: &str,
    producer: (i64, i16),
    offsets: Vec<PendingOffset>,
) -> Result<(), ResponseError> {
    let mut pending = load(broker, group_id, transactional_id)
        .await?
        .filter(|p| (p.producer_id, p.epoch) == producer)
        .unwrap_or(PendingOffsets {
            producer_id: producer.0,
            epoch: producer.1,
            offsets: Vec::new(),
        });
    for offset in offsets {
        pending.offsets.retain(|o| {
            (o.topic.as_str(), o.partition) != (offset.topic.as_str(), offset.partition)
        });
        pending.offsets.push(offset);
    }
    if pending.offsets.len() > PENDING_OFFSETS_MAX {
        return Err(ResponseError::InvalidRequest);
    }
    let key = keys::offsets_key(group_id, transactional_id);
    broker
        .transactions
        .meta()
        .put(&key, encode(&pending), PutOptions::default())
        .await
        .map_err(|e| unavailable(&e))?;
    Ok(())
}

/// Ends a transaction's staged offsets for the group: committed, or dropped.
pub async fn finish(
    broker: &Broker,
    group_id: &str,
    transactional_id: &str,
    commit: bool,
) -> Result<(), ResponseError> {
    if commit {
        if let Some(pending) = load(broker, group_id, transactional_id).await? {
            let committed: Vec<CommittedOffset> = pending
                .offsets
                .into_iter()
                .map(|o| CommittedOffset {
                    topic: o.topic,
                    partition: o.partition,
                    record: OffsetRecord {
                        offset: o.offset,
                        leader_epoch: o.leader_epoch,
                        metadata: o.metadata,
                        commit_timestamp_ms: 0,
                    },
                })
                .collect();
            broker
                .groups
                .write_committed_offsets(group_id, &committed)
                .await?;
        }
    }
    let key = keys::offsets_key(group_id, transactional_id);
    match broker
        .transactions
        .meta()
        .delete(&key, Default::default(), None)
        .await
    {
        Ok(()) | Err(MetaError::KeyNotFound) => Ok(()),
        Err(e) => Err(unavailable(&e)),
    }
}

/// The partitions of the group some open transaction has staged offsets for. Staged offsets
/// of a transaction that is over (a straggler staged after it ended) do not count.
pub async fn unstable_partitions(
    broker: &Broker,
    group_id: &str,
) -> Result<Vec<(String, i32)>, ResponseError> {
    let (start, end) = keys::offsets_range(group_id);
    let staged = broker
        .transactions
        .meta()
        .range_scan(&start, &end, None, 1024)
        .await
        .map_err(|e| unavailable(&e))?;
    let mut partitions = Vec::new();
    for record in staged {
        let (Some(id), Ok(pending)) = (
            keys::offsets_transactional_id_of(&record.key),
            decode::<PendingOffsets>(&record.value),
        ) else {
            continue;
        };
        let live = broker.transactions.load(&id).await?.is_some_and(|(s, _)| {
            (s.producer_id, s.epoch) == (pending.producer_id, pending.epoch)
                && matches!(
                    s.status,
                    Status::Ongoing | Status::PrepareCommit | Status::PrepareAbort
                )
        });
        if live {
            partitions.extend(pending.offsets.into_iter().map(|o| (o.topic, o.partition)));
        }
    }
    Ok(partitions)
}
