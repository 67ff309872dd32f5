//! The transaction coordinator's state machine (Kafka's `TransactionCoordinator`, protocol of
//! transaction.version 1: the client adds partitions with AddPartitionsToTxn, and epochs are
//! bumped only when a producer is fenced). Each change is a compare-and-set of the
//! transactional id's record, under this broker's lock of the id; a broker that lost the race
//! (a membership change moved the id) answers CONCURRENT_TRANSACTIONS and the client retries.
//! Completing a decided transaction (markers, then offsets, then the Complete state) is
//! `complete`, run by EndTxn and resumed by the sweep after any broker died.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::ResponseError;

use super::records::{Status, TxnPartition, TxnState};
use super::{markers, offsets, Transactions, TXN_GROUPS_MAX, TXN_PARTITIONS_MAX};
use crate::context::Broker;

/// How long EndTxn waits for markers before it answers: the outcome is decided and durable
/// once the Prepare state is stored; past this the sweep completes it, and the client's next
/// transaction waits (CONCURRENT_TRANSACTIONS) until it has.
const END_TXN_WAIT: Duration = Duration::from_secs(10);
/// Partitions whose markers one completion waits for at once.
const MARKERS_IN_FLIGHT_MAX: usize = 64;

fn now_ms() -> u64 {
    storage::clock::system_now_ms()
}

/// Whether this broker coordinates `transactional_id` now.
pub fn is_coordinator(broker: &Broker, transactional_id: &str) -> bool {
    let placement = broker.membership.placement();
    placement
        .transaction_coordinator(transactional_id)
        .broker_id
        == broker.node.broker_id
}

/// The producer id and epoch of a request checked against the state (Kafka's order).
fn check_producer(state: &TxnState, producer_id: i64, epoch: i16) -> Result<(), ResponseError> {
    if producer_id != state.producer_id {
        return Err(ResponseError::InvalidProducerIdMapping);
    }
    if epoch < state.epoch {
        return Err(ResponseError::ProducerFenced);
    }
    if epoch > state.epoch {
        return Err(ResponseError::InvalidProducerEpoch);
    }
    Ok(())
}

/// InitProducerId with a transactional id: a new producer id at epoch 0, or the next epoch of
/// the existing one, fencing every earlier instance. An open transaction is aborted first
/// (answered CONCURRENT_TRANSACTIONS until that is done, as Kafka does).
pub async fn init_producer_id(
    broker: &Arc<Broker>,
    transactional_id: &str,
    timeout_ms: i32,
) -> Result<(i64, i16), ResponseError> {
    let txns = &broker.transactions;
    if timeout_ms <= 0 || timeout_ms > txns.config().max_timeout_ms {
        return Err(ResponseError::InvalidTransactionTimeout);
    }
    let _lock = txns.ids.lock(transactional_id).await;
    let now = now_ms();
    let Some((mut state, version)) = txns.load(transactional_id).await? else {
        let producer_id = broker.producers.ids.next().await.map_err(|e| {
            tracing::warn!(error = %e, "producer id allocation failed");
            ResponseError::CoordinatorNotAvailable
        })?;
        let state = TxnState::new(producer_id, timeout_ms, now);
        txns.store(transactional_id, &state, None).await?;
        return Ok((producer_id, 0));
    };
    match state.status {
        Status::PrepareCommit | Status::PrepareAbort => {
            spawn_complete(broker, transactional_id);
            Err(ResponseError::ConcurrentTransactions)
        }
        Status::Ongoing => {
            // Fence the running instance and abort what it left open.
            state.epoch = state.epoch.saturating_add(1);
            state.status = Status::PrepareAbort;
            state.updated_ms = now;
            txns.store(transactional_id, &state, Some(version)).await?;
            tracing::info!(
                transactional_id,
                producer_id = state.producer_id,
                epoch = state.epoch,
                "fenced a producer and aborting its transaction"
            );
            spawn_complete(broker, transactional_id);
            Err(ResponseError::ConcurrentTransactions)
        }
        Status::Empty | Status::CompleteCommit | Status::CompleteAbort => {
            if state.epoch >= i16::MAX - 1 {
                state.producer_id = broker.producers.ids.next().await.map_err(|e| {
                    tracing::warn!(error = %e, "producer id allocation failed");
                    ResponseError::CoordinatorNotAvailable
                })?;
                state.epoch = 0;
            } else {
                state.epoch += 1;
            }
            state.status = Status::Empty;
            state.timeout_ms = timeout_ms;
            state.partitions.clear();
            state.groups.clear();
            state.updated_ms = now;
            txns.store(transactional_id, &state, Some(version)).await?;
            Ok((state.producer_id, state.epoch))
        }
    }
}

/// The state of a producer's transaction, made Ongoing (a new transaction begins with its
/// first partition or group). `add` changes it; nothing is written when it changes nothing.
async fn update_ongoing(
    broker: &Arc<Broker>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    add: impl FnOnce(&mut TxnState) -> Result<(), ResponseError>,
) -> Result<(), ResponseError> {
    let txns: &Transactions = &broker.transactions;
    let _lock = txns.ids.lock(transactional_id).await;
    let Some((mut state, version)) = txns.load(transactional_id).await? else {
        return Err(ResponseError::InvalidProducerIdMapping);
    };
    check_producer(&state, producer_id, epoch)?;
    let before = state.clone();
    let now = now_ms();
    match state.status {
        Status::PrepareCommit | Status::PrepareAbort => {
            spawn_complete(broker, transactional_id);
            return Err(ResponseError::ConcurrentTransactions);
        }
        Status::Empty | Status::CompleteCommit | Status::CompleteAbort => {
            state.status = Status::Ongoing;
            state.partitions.clear();
            state.groups.clear();
            state.start_ms = now;
        }
        Status::Ongoing => {}
    }
    add(&mut state)?;
    if state == before {
        return Ok(());
    }
    state.updated_ms = now;
    txns.store(transactional_id, &state, Some(version)).await?;
    Ok(())
}

/// AddPartitionsToTxn for partitions already checked to exist and be writable.
pub async fn add_partitions(
    broker: &Arc<Broker>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    partitions: Vec<TxnPartition>,
) -> Result<(), ResponseError> {
    update_ongoing(broker, transactional_id, producer_id, epoch, |state| {
        for partition in partitions {
            if let Err(at) = state.partitions.binary_search(&partition) {
                state.partitions.insert(at, partition);
            }
        }
        if state.partitions.len() > TXN_PARTITIONS_MAX {
            return Err(ResponseError::InvalidRequest);
        }
        Ok(())
    })
    .await
}

/// Verifies that a partition is in the producer's open transaction (KIP-890 part 1).
pub async fn verify_partition(
    broker: &Broker,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    stream: &str,
) -> Result<(), ResponseError> {
    let Some((state, _)) = broker.transactions.load(transactional_id).await? else {
        return Err(ResponseError::InvalidProducerIdMapping);
    };
    check_producer(&state, producer_id, epoch)?;
    if state.status != Status::Ongoing || !state.includes(stream) {
        return Err(ResponseError::InvalidTxnState);
    }
    Ok(())
}

/// AddOffsetsToTxn: the group whose offsets the transaction will commit.
pub async fn add_offsets(
    broker: &Arc<Broker>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    group_id: &str,
) -> Result<(), ResponseError> {
    update_ongoing(broker, transactional_id, producer_id, epoch, |state| {
        if let Err(at) = state.groups.binary_search_by(|g| g.as_str().cmp(group_id)) {
            state.groups.insert(at, group_id.to_string());
        }
        if state.groups.len() > TXN_GROUPS_MAX {
            return Err(ResponseError::InvalidRequest);
        }
        Ok(())
    })
    .await
}

/// EndTxn: the outcome made durable (Prepare state), then completed.
pub async fn end_txn(
    broker: &Arc<Broker>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    commit: bool,
) -> Result<(), ResponseError> {
    {
        let txns = &broker.transactions;
        let _lock = txns.ids.lock(transactional_id).await;
        let Some((mut state, version)) = txns.load(transactional_id).await? else {
            return Err(ResponseError::InvalidProducerIdMapping);
        };
        check_producer(&state, producer_id, epoch)?;
        match (state.status, commit) {
            (Status::Ongoing, _) => {
                state.status = if commit {
                    Status::PrepareCommit
                } else {
                    Status::PrepareAbort
                };
                state.updated_ms = now_ms();
                txns.store(transactional_id, &state, Some(version)).await?;
            }
            // A retry of an EndTxn that was answered, or whose answer was lost.
            (Status::CompleteCommit, true) | (Status::CompleteAbort, false) => return Ok(()),
            (Status::PrepareCommit, true) | (Status::PrepareAbort, false) => {}
            _ => return Err(ResponseError::InvalidTxnState),
        }
    }
    match tokio::time::timeout(END_TXN_WAIT, complete(broker, transactional_id)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            tracing::warn!(
                transactional_id,
                ?error,
                "transaction decided, completion resumes later"
            )
        }
        Err(_) => tracing::warn!(
            transactional_id,
            "transaction markers slow; completion resumes later"
        ),
    }
    Ok(())
}

/// Aborts a transaction past its timeout, fencing its producer (Kafka bumps the epoch too).
pub async fn abort_timed_out(
    broker: &Arc<Broker>,
    transactional_id: &str,
) -> Result<(), ResponseError> {
    let txns = &broker.transactions;
    {
        let _lock = txns.ids.lock(transactional_id).await;
        let Some((mut state, version)) = txns.load(transactional_id).await? else {
            return Ok(());
        };
        if !state.timed_out(now_ms()) {
            return Ok(());
        }
        state.epoch = state.epoch.saturating_add(1);
        state.status = Status::PrepareAbort;
        state.updated_ms = now_ms();
        txns.store(transactional_id, &state, Some(version)).await?;
        tracing::info!(
            transactional_id,
            producer_id = state.producer_id,
            "aborting a transaction past its timeout"
        );
        crate::metrics::transaction_timed_out();
    }
    complete(broker, transactional_id).await
}

fn spawn_complete(broker: &Arc<Broker>, transactional_id: &str) {
    let broker = broker.clone();
    let id = transactional_id.to_string();
    tokio::spawn(async move {
        if let Err(error) = complete(&broker, &id).await {
            tracing::debug!(
                transactional_id = id,
                ?error,
                "transaction completion resumes later"
            );
        }
    });
}

/// Completes a decided transaction: every partition's marker durable, the group offsets of a
/// commit made visible, then the Complete state. Idempotent: any broker may run it again.
pub async fn complete(broker: &Arc<Broker>, transactional_id: &str) -> Result<(), ResponseError> {
    let txns = &broker.transactions;
    let Some((state, _)) = txns.load(transactional_id).await? else {
        return Ok(());
    };
    if !state.status.is_prepared() {
        return Ok(());
    }
    let commit = state.status == Status::PrepareCommit;
    // Many partitions at once: markers this broker writes share WAL objects.
    for chunk in state.partitions.chunks(MARKERS_IN_FLIGHT_MAX) {
        let mut waits = Vec::with_capacity(chunk.len());
        for partition in chunk {
            waits.push(markers::await_marker(broker, partition, state.producer_id));
        }
        let written = futures::future::join_all(waits).await;
        written.into_iter().collect::<Result<(), ResponseError>>()?;
    }
    for group in &state.groups {
        offsets::finish(broker, group, transactional_id, commit).await?;
    }
    let _lock = txns.ids.lock(transactional_id).await;
    let Some((mut now, version)) = txns.load(transactional_id).await? else {
        return Ok(());
    };
    if now.status != state.status || now.epoch != state.epoch {
        return Ok(());
    }
    now.status = if commit {
        Status::CompleteCommit
    } else {
        Status::CompleteAbort
    };
    let decided_ms = now.updated_ms;
    now.updated_ms = now_ms();
    txns.store(transactional_id, &now, Some(version)).await?;
    let took = std::time::Duration::from_millis(now.updated_ms.saturating_sub(decided_ms));
    crate::metrics::transaction_completed(commit, took);
    tracing::debug!(transactional_id, commit, "transaction complete");
    Ok(())
}
