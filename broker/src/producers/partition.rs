//! One partition's producer state: loaded on first use from its snapshot plus the index entries
//! after it, then checked and updated under a lock held from the check until the write is
//! queued, so writes are checked in the order they get offsets. Snapshots are written every
//! [`SNAPSHOT_EVERY_BATCHES`] batches or [`SNAPSHOT_INTERVAL_MS`], and at clean shutdown.
//!
//! When cluster membership changes, another broker may have led (and written to) the partition
//! meanwhile, so the table is reloaded once this broker's own writes in flight are settled.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use metastore::MetaStore;
use storage::{Storage, StorageError};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::sequence::records_between;
use super::slot::{Slot, SlotState};
use super::snapshot::{self, Snapshot, SnapshotError};
use super::state::{
    BatchHeader, BatchView, Limits, ProducerTable, ProducerView, SequenceError, Verdict,
};

/// How far back from the high watermark state recovery reads the index at most. A snapshot
/// older than that only restores epochs; without one, a producer whose last batch is older is
/// unknown after a restart and may continue at any sequence (Kafka's rule for producers whose
/// state was removed).
pub const RECOVERY_OFFSETS_MAX: u64 = 100_000;
/// Index entries read per MetaStore lookup during recovery.
const RECOVERY_PAGE_ENTRIES: usize = 64;
/// A snapshot is due after this many idempotent batches...
pub const SNAPSHOT_EVERY_BATCHES: u64 = 1_000;
/// ...or this long after the previous one, if any batch came since.
pub const SNAPSHOT_INTERVAL_MS: u64 = 10_000;
/// How long a snapshot or a reload waits for writes in flight to settle.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

type Table = ProducerTable<Slot>;

/// The table and the membership generation it was loaded under.
struct Loaded {
    table: Table,
    generation: u64,
}

/// When the next snapshot is due.
#[derive(Default)]
struct Schedule {
    batches_since: u64,
    last_ms: u64,
    in_flight: bool,
}

impl Schedule {
    /// Counts `batches` and says whether a snapshot should start now (marking it started).
    fn note(&mut self, batches: u64, now_ms: u64) -> bool {
        self.batches_since += batches;
        let due = self.batches_since >= SNAPSHOT_EVERY_BATCHES
            || (self.batches_since > 0
                && now_ms.saturating_sub(self.last_ms) >= SNAPSHOT_INTERVAL_MS);
        if !due || self.in_flight {
            return false;
        }
        self.start(now_ms);
        true
    }

    fn start(&mut self, now_ms: u64) {
        self.batches_since = 0;
        self.last_ms = now_ms;
        self.in_flight = true;
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AdmitError {
    #[error(transparent)]
    Sequence(#[from] SequenceError),
    #[error("a payload mixes a retried batch with new ones")]
    PartialDuplicate,
    #[error("producer state recovery failed: {0}")]
    Recovery(#[from] StorageError),
}

/// The answer to a batch set: write it, or it was written before.
pub enum Admission {
    Append(Admitted),
    Duplicate { slot: Slot, offset_delta: u64 },
}

pub struct PartitionProducers {
    table: Arc<Mutex<Option<Loaded>>>,
    limits: Limits,
    next_write_id: AtomicU64,
    stream: String,
    meta: Arc<dyn MetaStore>,
    /// Bumped by cluster membership on every change.
    generation: Arc<AtomicU64>,
    schedule: Arc<std::sync::Mutex<Schedule>>,
}

impl PartitionProducers {
    pub fn new(
        limits: Limits,
        stream: &str,
        meta: Arc<dyn MetaStore>,
        generation: Arc<AtomicU64>,
    ) -> Self {
        PartitionProducers {
            table: Arc::new(Mutex::new(None)),
            limits,
            next_write_id: AtomicU64::new(1),
            stream: stream.to_string(),
            meta,
            generation,
            schedule: Arc::new(std::sync::Mutex::new(Schedule::default())),
        }
    }

    /// The table, loaded (or reloaded after a membership change) if needed.
    async fn loaded(
        &self,
        storage: &Storage,
        now_ms: u64,
    ) -> Result<OwnedMutexGuard<Option<Loaded>>, AdmitError> {
        let mut guard = self.table.clone().lock_owned().await;
        let current = self.generation.load(Ordering::Acquire);
        let stale = guard.as_ref().filter(|l| l.generation < current);
        if let Some(loaded) = stale {
            // Reloading now would miss our own writes still in flight; wait for them unlocked
            // (a failed write takes the lock to roll back).
            let pending = pending_slots(&loaded.table);
            drop(guard);
            settle(&pending).await?;
            guard = self.table.clone().lock_owned().await;
            if guard.as_ref().is_some_and(|l| l.generation < current) {
                tracing::debug!(stream = %self.stream, "membership changed; reloading producer state");
                *guard = None;
            }
        }
        if guard.is_none() {
            let table = recover(storage, &self.meta, &self.stream, self.limits, now_ms).await?;
            *guard = Some(Loaded {
                table,
                generation: current,
            });
            self.schedule_lock().last_ms = now_ms;
        }
        Ok(guard)
    }

    /// Writes a snapshot of the table now (clean shutdown), once writes in flight are settled.
    pub async fn snapshot_now(&self, storage: &Storage) -> Result<(), AdmitError> {
        let guard = self.table.lock().await;
        // A table loaded before the last membership change may lack another broker's writes:
        // its snapshot could cover them without holding them.
        let current = self.generation.load(Ordering::Acquire);
        let Some(loaded) = guard.as_ref().filter(|l| l.generation == current) else {
            return Ok(());
        };
        let high_watermark = storage.bounds(&self.stream).await?.high_watermark;
        let views = loaded.table.export();
        drop(guard);
        match write_snapshot(&self.meta, &self.stream, views, high_watermark).await {
            Ok(_) => Ok(()),
            Err(SnapshotError::Meta(e)) => Err(AdmitError::Recovery(e.into())),
            Err(e) => {
                tracing::warn!(stream = %self.stream, error = %e, "producer snapshot not written");
                Ok(())
            }
        }
    }

    /// Starts a snapshot in the background if one is due. Called with the table locked, so
    /// every batch admitted later gets a higher offset than every batch in the copy.
    async fn maybe_snapshot(&self, storage: &Storage, table: &Table, batches: u64, now_ms: u64) {
        if !self.schedule_lock().note(batches, now_ms) {
            return;
        }
        // Read before the copy: every idempotent batch below it was admitted, so is in it.
        // Without it, 0 is still safe: the copy's own batches then bound the covered offset.
        let high_watermark = match storage.bounds(&self.stream).await {
            Ok(bounds) => bounds.high_watermark,
            Err(_) => 0,
        };
        let views = table.export();
        let (meta, stream, schedule) = (
            self.meta.clone(),
            self.stream.clone(),
            self.schedule.clone(),
        );
        tokio::spawn(async move {
            if let Err(error) = write_snapshot(&meta, &stream, views, high_watermark).await {
                tracing::warn!(stream, %error, "producer snapshot not written");
            }
            schedule.lock().unwrap_or_else(|p| p.into_inner()).in_flight = false;
        });
    }

    fn schedule_lock(&self) -> std::sync::MutexGuard<'_, Schedule> {
        self.schedule.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The producers this partition knows (DescribeProducers), loaded if need be.
    pub async fn describe(&self, storage: &Storage) -> Result<Vec<ProducerView<Slot>>, AdmitError> {
        let now_ms = super::now_ms();
        let guard = self.loaded(storage, now_ms).await?;
        Ok(guard.as_ref().map(|l| l.table.export()).unwrap_or_default())
    }

    /// Checks a payload's batches (`(header, offset delta within the payload)`, in order).
    /// An accepted payload keeps the partition locked until [`Admitted::submitted`].
    pub async fn admit(
        &self,
        storage: &Storage,
        stream: &str,
        batches: &[(BatchHeader, u64)],
        now_ms: u64,
    ) -> Result<Admission, AdmitError> {
        debug_assert_eq!(stream, self.stream);
        let mut guard = self.loaded(storage, now_ms).await?;
        let Some(Loaded { table, .. }) = guard.as_mut() else {
            return Err(AdmitError::Recovery(StorageError::Corrupt(
                "producer state missing after recovery".into(),
            )));
        };
        let write_id = self.next_write_id.fetch_add(1, Ordering::Relaxed);
        let slot = Slot::pending();
        for (i, (header, offset_delta)) in batches.iter().enumerate() {
            match table.check(*header, write_id, &slot, *offset_delta, now_ms) {
                Ok(Verdict::Append) => {}
                Ok(Verdict::Duplicate { slot, offset_delta }) if batches.len() == 1 => {
                    return Ok(Admission::Duplicate { slot, offset_delta });
                }
                Ok(Verdict::Duplicate { .. }) => {
                    table.roll_back(write_id);
                    tracing::debug!(stream, batch = i, "payload mixes retried and new batches");
                    return Err(AdmitError::PartialDuplicate);
                }
                Err(e) => {
                    table.roll_back(write_id);
                    return Err(e.into());
                }
            }
        }
        self.maybe_snapshot(storage, table, batches.len() as u64, now_ms)
            .await;
        Ok(Admission::Append(Admitted {
            guard,
            write: WriteHandle {
                write_id,
                slot,
                table: self.table.clone(),
                done: false,
            },
        }))
    }
}

/// An accepted payload not yet queued; the partition stays locked meanwhile.
pub struct Admitted {
    guard: OwnedMutexGuard<Option<Loaded>>,
    write: WriteHandle,
}

impl Admitted {
    /// The write was queued: unlock the partition, keep the handle to report the outcome.
    pub fn submitted(self) -> WriteHandle {
        self.write
    }

    /// The write was refused before it was queued: undo its batches.
    pub fn abandon(mut self) {
        if let Some(loaded) = self.guard.as_mut() {
            loaded.table.roll_back(self.write.write_id);
        }
        self.write.slot.finish(SlotState::Failed);
        self.write.done = true;
    }
}

/// Reports a queued write's outcome to its duplicates and, on failure, undoes its batches.
pub struct WriteHandle {
    write_id: u64,
    slot: Slot,
    table: Arc<Mutex<Option<Loaded>>>,
    done: bool,
}

impl WriteHandle {
    pub fn written(mut self, base_offset: u64) {
        self.slot.finish(SlotState::Written(base_offset));
        self.done = true;
    }

    pub async fn failed(mut self) {
        roll_back(&self.table, self.write_id).await;
        self.slot.finish(SlotState::Failed);
        self.done = true;
    }
}

impl Drop for WriteHandle {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Dropped without an outcome (the request was cancelled): the write's fate is
        // unknown, so forget its batches; a retry is then appended again rather than hang.
        self.slot.finish(SlotState::Failed);
        let table = self.table.clone();
        let write_id = self.write_id;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { roll_back(&table, write_id).await });
        }
    }
}

async fn roll_back(table: &Mutex<Option<Loaded>>, write_id: u64) {
    if let Some(loaded) = table.lock().await.as_mut() {
        loaded.table.roll_back(write_id);
    }
}

/// The slots of the table's writes whose outcome is not known yet.
fn pending_slots(table: &Table) -> Vec<Slot> {
    table
        .export()
        .into_iter()
        .flat_map(|p| p.batches.into_iter().map(|b| b.slot))
        .filter(|slot| slot.state() == SlotState::Pending)
        .collect()
}

/// Waits for the outcome of every slot.
async fn settle(slots: &[Slot]) -> Result<(), AdmitError> {
    let all = async {
        for slot in slots {
            slot.outcome().await;
        }
    };
    tokio::time::timeout(SETTLE_TIMEOUT, all)
        .await
        .map_err(|_| AdmitError::Recovery(StorageError::Timeout))
}

/// Settles the copied table's writes and stores it as of the offset it covers. Returns whether
/// a snapshot was written (not when a write failed, or a newer snapshot exists).
async fn write_snapshot(
    meta: &Arc<dyn MetaStore>,
    stream: &str,
    views: Vec<ProducerView<Slot>>,
    high_watermark: u64,
) -> Result<bool, SnapshotError> {
    let mut covered_offset = high_watermark;
    let mut producers = Vec::with_capacity(views.len());
    for view in views {
        let mut batches = Vec::with_capacity(view.batches.len());
        for b in view.batches {
            let outcome = tokio::time::timeout(SETTLE_TIMEOUT, b.slot.outcome()).await;
            let Ok(SlotState::Written(base)) = outcome else {
                // A failed write was rolled back after the copy: the copy is not the table.
                return Ok(false);
            };
            let offset = base + b.offset_delta;
            covered_offset = covered_offset.max(offset + records_between(b.first_seq, b.last_seq));
            batches.push(BatchView {
                first_seq: b.first_seq,
                last_seq: b.last_seq,
                slot: offset,
                offset_delta: 0,
            });
        }
        producers.push(ProducerView {
            producer_id: view.producer_id,
            epoch: view.epoch,
            last_seq: view.last_seq,
            last_seen_ms: view.last_seen_ms,
            batches,
        });
    }
    let snapshot = Snapshot {
        covered_offset,
        producers,
    };
    let written = snapshot::store(meta, stream, &snapshot).await?;
    tracing::debug!(
        stream,
        covered_offset,
        producers = snapshot.producers.len(),
        written,
        "producer snapshot"
    );
    Ok(written)
}

/// Rebuilds the table from the stream's snapshot and the producer fields the index keeps with
/// every batch after it (RAW and PARQUET entries alike).
async fn recover(
    storage: &Storage,
    meta: &Arc<dyn MetaStore>,
    stream: &str,
    limits: Limits,
    now_ms: u64,
) -> Result<Table, StorageError> {
    let mut table = Table::new(limits);
    // Fresh from the index: another broker may have written since this one last looked.
    let bounds = storage.refresh_bounds(stream).await?;
    let window_start = bounds
        .log_start_offset
        .max(bounds.high_watermark.saturating_sub(RECOVERY_OFFSETS_MAX));
    let snapshot = match snapshot::load(meta, stream).await {
        Ok(snapshot) => snapshot,
        Err(SnapshotError::Meta(e)) => return Err(e.into()),
        Err(error) => {
            tracing::warn!(stream, %error, "ignoring unreadable producer snapshot");
            None
        }
    };
    let mut from = window_start;
    match snapshot {
        Some(s) if s.covered_offset > bounds.high_watermark => {
            tracing::warn!(
                stream,
                covered_offset = s.covered_offset,
                high_watermark = bounds.high_watermark,
                "ignoring producer snapshot beyond the log end"
            );
        }
        Some(s) => {
            // A snapshot older than the replay window cannot vouch for sequences (a batch
            // between it and the window is never read), only for epochs.
            let sequence_known = s.covered_offset >= window_start;
            if sequence_known {
                from = s.covered_offset;
            }
            for view in s.producers {
                table.restore(as_slots(view), sequence_known, now_ms);
            }
        }
        None => {}
    }
    let mut next = from;
    let mut entries_read = 0usize;
    while next < bounds.high_watermark {
        let entries = storage
            .entries_from(stream, next, RECOVERY_PAGE_ENTRIES)
            .await?;
        let Some(last) = entries.last() else { break };
        next = last.end_offset;
        for located in &entries {
            entries_read += 1;
            let mut offset = located.base_offset;
            for batch in &located.entry.batches {
                if offset < from {
                    offset += u64::from(batch.records);
                    continue;
                }
                if let Some(p) = batch.producer {
                    let header = BatchHeader {
                        producer_id: p.id,
                        epoch: p.epoch,
                        base_sequence: p.base_sequence,
                        records: i32::try_from(batch.records).unwrap_or(i32::MAX),
                    };
                    table.replay(
                        header,
                        &Slot::written(offset),
                        located.entry.write_time_ms,
                        now_ms,
                    );
                }
                offset += u64::from(batch.records);
            }
        }
    }
    tracing::debug!(
        stream,
        from,
        entries_read,
        producers = table.len(),
        "recovered producer state"
    );
    Ok(table)
}

fn as_slots(view: ProducerView<u64>) -> ProducerView<Slot> {
    ProducerView {
        producer_id: view.producer_id,
        epoch: view.epoch,
        last_seq: view.last_seq,
        last_seen_ms: view.last_seen_ms,
        batches: view
            .batches
            .into_iter()
            .map(|b| BatchView {
                first_seq: b.first_seq,
                last_seq: b.last_seq,
                slot: Slot::written(b.slot + b.offset_delta),
                offset_delta: 0,
            })
            .collect(),
    }
}
