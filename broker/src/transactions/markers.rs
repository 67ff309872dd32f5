//! Commit and abort markers: one control batch per partition of a decided transaction,
//! appended through the normal WAL path by the broker that appended the transaction's batches
//! (the entry's `writer`, or the partition's leader once that broker is gone), under the same
//! partition lock as transactional appends, so a zombie's batch lands either before the marker
//! (inside the aborted range) or is refused after it. The marker durable, an abort is added to
//! the aborted-transaction index, and only then is the open entry deleted: the last stable
//! offset never passes data whose outcome a reader could not learn.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use metastore::{Comparison, Expect, MetaError, PutOptions};
use record_batch::{BatchHeader, RecordRow};
use storage::BatchMeta;

use super::keys;
use super::records::{decode, encode, AbortedTxn, OpenTxn, Status, TxnPartition, TxnState};
use crate::context::Broker;

/// Batch attributes of a marker: transactional (bit 4) and control (bit 5).
const CONTROL_ATTRIBUTES: i16 = 0x30;
/// How long the coordinator waits for another broker's marker before it gives up this round.
const MARKER_WAIT_MAX: Duration = Duration::from_secs(30);
const MARKER_POLL_MIN: Duration = Duration::from_millis(5);
const MARKER_POLL_MAX: Duration = Duration::from_millis(200);

/// Kafka's control record: key (version 0, type 0 abort / 1 commit), value (version 0,
/// coordinator epoch).
pub fn control_batch(producer_id: i64, epoch: i16, commit: bool, now_ms: i64) -> Bytes {
    let header = BatchHeader {
        base_offset: 0,
        partition_leader_epoch: 0,
        attributes: CONTROL_ATTRIBUTES,
        last_offset_delta: 0,
        base_timestamp: now_ms,
        max_timestamp: now_ms,
        producer_id,
        producer_epoch: epoch,
        base_sequence: -1,
    };
    let key = [0u8, 0, 0, u8::from(commit)];
    let value = [0u8; 6];
    let record = RecordRow {
        attributes: 0,
        timestamp_delta: 0,
        offset_delta: 0,
        key: Some(Bytes::copy_from_slice(&key)),
        value: Some(Bytes::copy_from_slice(&value)),
        headers: Vec::new(),
    };
    // One small uncompressed record always encodes.
    record_batch::encode_batch(&header, &[record], 0).unwrap_or_default()
}

/// The outcome of the transaction an open entry belongs to: `Some(commit)` once decided.
pub fn decided(entry: &OpenTxn, state: Option<&TxnState>) -> Option<bool> {
    let Some(state) = state else {
        return Some(false);
    };
    if state.producer_id != entry.producer_id || state.epoch > entry.epoch {
        // The producer was fenced (or its id expired): what it left open is aborted.
        return Some(false);
    }
    match state.status {
        Status::Ongoing => None,
        Status::PrepareCommit | Status::CompleteCommit => Some(true),
        Status::PrepareAbort | Status::CompleteAbort | Status::Empty => Some(false),
    }
}

/// The broker that writes an entry's marker: its writer while alive, else the leader.
pub fn marker_writer(broker: &Broker, entry: &OpenTxn) -> i32 {
    let placement = broker.membership.placement();
    if placement.member(entry.writer).is_some() {
        return entry.writer;
    }
    placement
        .partition_leader(&entry.topic, entry.partition, None)
        .broker_id
}

/// The open entry of `producer_id` on `stream` and its version.
pub async fn open_entry(
    broker: &Broker,
    stream: &str,
    producer_id: i64,
) -> Result<Option<(OpenTxn, i64)>, ResponseError> {
    let key = keys::open_key(stream, producer_id);
    let record = broker
        .transactions
        .meta()
        .get(&key, Comparison::Equal, None)
        .await
        .map_err(|e| meta_error(&e))?;
    let Some(record) = record else {
        return Ok(None);
    };
    let entry = decode::<OpenTxn>(&record.value).map_err(|error| {
        tracing::error!(key, %error, "undecodable open transaction entry");
        ResponseError::UnknownServerError
    })?;
    Ok(Some((entry, record.version.version_id)))
}

/// Waits until the marker of `producer_id` on `partition` is durable, writing it if this
/// broker is the one to.
pub async fn await_marker(
    broker: &Broker,
    partition: &TxnPartition,
    producer_id: i64,
) -> Result<(), ResponseError> {
    let deadline = tokio::time::Instant::now() + MARKER_WAIT_MAX;
    let mut poll = MARKER_POLL_MIN;
    loop {
        let Some((entry, _)) = open_entry(broker, &partition.stream, producer_id).await? else {
            return Ok(());
        };
        if marker_writer(broker, &entry) == broker.node.broker_id {
            write_marker(broker, &partition.stream, producer_id).await?;
            continue;
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ResponseError::RequestTimedOut);
        }
        tokio::time::sleep(poll).await;
        poll = (poll * 2).min(MARKER_POLL_MAX);
    }
}

/// Writes the marker of the open entry of `producer_id` on `stream` if its transaction is
/// decided. `Ok(false)`: not decided yet (or no entry).
pub async fn write_marker(
    broker: &Broker,
    stream: &str,
    producer_id: i64,
) -> Result<bool, ResponseError> {
    let txns = &broker.transactions;
    let mut writer = txns.partitions.lock(stream).await;
    let Some((entry, version)) = open_entry(broker, stream, producer_id).await? else {
        return Ok(false);
    };
    let exists = broker
        .catalog
        .get(&entry.topic)
        .is_some_and(|t| t.stream_id(entry.partition) == stream);
    if !exists {
        // The topic was deleted (or recreated): there is no log to end the transaction in.
        forget_entry(broker, stream, producer_id, version).await?;
        return Ok(true);
    }
    let state = txns.load(&entry.transactional_id).await?.map(|(s, _)| s);
    let Some(commit) = decided(&entry, state.as_ref()) else {
        return Ok(false);
    };
    if marker_writer(broker, &entry) != broker.node.broker_id {
        // Another broker took the partition's writes over: the marker is its to write.
        return Ok(false);
    }
    let epoch = state
        .as_ref()
        .filter(|s| s.producer_id == entry.producer_id)
        .map_or(entry.epoch, |s| s.epoch.max(entry.epoch));
    let marker_offset = append_marker(broker, stream, (producer_id, epoch), commit).await?;
    // Held until the entry is gone, so that no other marker is written for it; later
    // batches of this producer are verified again.
    writer.open.remove(&producer_id);
    if !commit {
        record_abort(broker, stream, &entry, marker_offset).await?;
    }
    if !forget_entry(broker, stream, producer_id, version).await? {
        rebase_entry(broker, stream, producer_id, marker_offset + 1).await?;
    }
    drop(writer);
    crate::metrics::marker_written(commit);
    tracing::debug!(
        stream,
        producer_id,
        commit,
        marker_offset,
        "transaction marker written"
    );
    Ok(true)
}

/// Appends one marker and waits for its offset.
async fn append_marker(
    broker: &Broker,
    stream: &str,
    (producer_id, epoch): (i64, i16),
    commit: bool,
) -> Result<u64, ResponseError> {
    let now = i64::try_from(storage::clock::system_now_ms()).unwrap_or(i64::MAX);
    let batch = control_batch(producer_id, epoch, commit, now);
    let meta = vec![BatchMeta {
        len: u32::try_from(batch.len()).unwrap_or(u32::MAX),
        records: 1,
        max_timestamp: now,
        producer: None,
    }];
    let pending = broker
        .storage
        .submit(stream, batch, meta)
        .await
        .map_err(|e| crate::storage_errors::produce_error(&e))?;
    let appended = pending
        .wait()
        .await
        .map_err(|e| crate::storage_errors::produce_error(&e))?;
    Ok(appended.base_offset)
}

/// The entry was changed while its marker was written: a broker that took the partition over
/// appended to the transaction meanwhile (a membership change during an abort with records in
/// flight). What it appended lies after the marker: the entry now starts there, so the marker
/// its new writer writes covers exactly those records.
async fn rebase_entry(
    broker: &Broker,
    stream: &str,
    producer_id: i64,
    first_offset: u64,
) -> Result<(), ResponseError> {
    let Some((mut entry, version)) = open_entry(broker, stream, producer_id).await? else {
        return Ok(());
    };
    entry.first_offset = entry.first_offset.max(first_offset);
    let options = PutOptions {
        expect: Expect::Version(version),
        ..Default::default()
    };
    let key = keys::open_key(stream, producer_id);
    let meta = broker.transactions.meta();
    match meta.put(&key, encode(&entry), options).await {
        Ok(_) => Ok(()),
        // Changed once more: the sweep comes back to it.
        Err(MetaError::UnexpectedVersion) => Err(ResponseError::ConcurrentTransactions),
        Err(e) => Err(meta_error(&e)),
    }
}

/// Deletes the entry if it is still at `version`; `Ok(false)` when it changed meanwhile.
async fn forget_entry(
    broker: &Broker,
    stream: &str,
    producer_id: i64,
    version: i64,
) -> Result<bool, ResponseError> {
    let key = keys::open_key(stream, producer_id);
    let meta = broker.transactions.meta();
    match meta.delete(&key, Expect::Version(version), None).await {
        Ok(()) | Err(MetaError::KeyNotFound) => Ok(true),
        Err(MetaError::UnexpectedVersion) => {
            let gone = open_entry(broker, stream, producer_id).await?.is_none();
            Ok(gone)
        }
        Err(e) => Err(meta_error(&e)),
    }
}

/// Adds an aborted transaction to the partition's index, with the stable offset after it.
async fn record_abort(
    broker: &Broker,
    stream: &str,
    entry: &OpenTxn,
    marker_offset: u64,
) -> Result<(), ResponseError> {
    let meta = broker.transactions.meta();
    let (start, end) = keys::open_range(stream);
    let others = meta
        .range_scan(&start, &end, None, super::stable::OPEN_SCAN_MAX)
        .await
        .map_err(|e| meta_error(&e))?;
    let stable_after = others
        .iter()
        .filter_map(|r| decode::<OpenTxn>(&r.value).ok())
        .filter(|o| o.producer_id != entry.producer_id)
        .map(|o| o.first_offset)
        .fold(marker_offset + 1, u64::min);
    let aborted = AbortedTxn {
        producer_id: entry.producer_id,
        first_offset: entry.first_offset,
        last_offset: marker_offset,
        stable_after,
    };
    let key = keys::aborted_key(stream, marker_offset);
    meta.put(&key, encode(&aborted), PutOptions::default())
        .await
        .map_err(|e| meta_error(&e))?;
    // Trimmed with the log: aborts whose marker is below the log start concern no reader.
    if let Ok(bounds) = broker.storage.bounds(stream).await {
        if bounds.log_start_offset > 0 {
            let below = keys::aborted_key(stream, bounds.log_start_offset);
            let (start, _) = keys::aborted_range_from(stream, 0);
            if let Err(error) = meta.delete_range(&start, &below, None).await {
                tracing::debug!(stream, %error, "aborted transactions below the log start not trimmed");
            }
        }
    }
    Ok(())
}

fn meta_error(error: &MetaError) -> ResponseError {
    tracing::warn!(%error, "transaction marker state not reachable");
    ResponseError::CoordinatorNotAvailable
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(epoch: i16) -> OpenTxn {
        OpenTxn {
            transactional_id: "t".into(),
            producer_id: 7,
            epoch,
            topic: "topic".into(),
            partition: 0,
            first_offset: 10,
            writer: 1,
        }
    }

    fn state(epoch: i16, status: Status) -> TxnState {
        let mut state = TxnState::new(7, 60_000, 0);
        state.epoch = epoch;
        state.status = status;
        state
    }

    #[test]
    fn an_entry_is_decided_by_its_producers_state() {
        let open = entry(3);
        assert_eq!(decided(&open, Some(&state(3, Status::Ongoing))), None);
        assert_eq!(
            decided(&open, Some(&state(3, Status::PrepareCommit))),
            Some(true)
        );
        assert_eq!(
            decided(&open, Some(&state(3, Status::CompleteCommit))),
            Some(true)
        );
        assert_eq!(
            decided(&open, Some(&state(3, Status::PrepareAbort))),
            Some(false)
        );
    }

    #[test]
    fn a_fenced_or_forgotten_producers_entry_is_aborted() {
        let open = entry(3);
        assert_eq!(
            decided(&open, Some(&state(4, Status::PrepareCommit))),
            Some(false)
        );
        assert_eq!(decided(&open, None), Some(false));
        let mut other = state(3, Status::PrepareCommit);
        other.producer_id = 8;
        assert_eq!(decided(&open, Some(&other)), Some(false));
    }

    #[test]
    fn a_marker_is_a_valid_control_batch_with_kafkas_record() {
        for commit in [false, true] {
            let batch = control_batch(7, 3, commit, 1_000);
            let decoded = record_batch::decode_batch(&batch).unwrap();
            assert!(decoded.header.is_control() && decoded.header.is_transactional());
            assert_eq!(
                (decoded.header.producer_id, decoded.header.producer_epoch),
                (7, 3)
            );
            assert_eq!(decoded.header.base_sequence, -1);
            let [record] = &decoded.records[..] else {
                panic!("one record")
            };
            let key = record.key.as_deref().unwrap();
            assert_eq!(key, [0, 0, 0, u8::from(commit)]);
        }
    }
}
