//! One partition's producer state: loaded from the log's tail on first use, then checked and
//! updated under a lock held from the check until the write is queued, so writes are checked
//! in the order they get offsets.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use storage::{Storage, StorageError};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::slot::{Slot, SlotState};
use super::state::{BatchHeader, Limits, ProducerTable, SequenceError, Verdict};

/// How far back from the high watermark state recovery reads the index. A producer whose last
/// batch is older is unknown after a restart and may continue at any sequence (Kafka's rule
/// for producers whose state was removed).
pub const RECOVERY_OFFSETS_MAX: u64 = 100_000;
/// Index entries read per MetaStore lookup during recovery.
const RECOVERY_PAGE_ENTRIES: usize = 64;

type Table = ProducerTable<Slot>;

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
    table: Arc<Mutex<Option<Table>>>,
    limits: Limits,
    next_write_id: AtomicU64,
}

impl PartitionProducers {
    pub fn new(limits: Limits) -> Self {
        PartitionProducers {
            table: Arc::new(Mutex::new(None)),
            limits,
            next_write_id: AtomicU64::new(1),
        }
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
        let mut guard = self.table.clone().lock_owned().await;
        if guard.is_none() {
            *guard = Some(recover(storage, stream, self.limits, now_ms).await?);
        }
        let Some(table) = guard.as_mut() else {
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
    guard: OwnedMutexGuard<Option<Table>>,
    write: WriteHandle,
}

impl Admitted {
    /// The write was queued: unlock the partition, keep the handle to report the outcome.
    pub fn submitted(self) -> WriteHandle {
        self.write
    }

    /// The write was refused before it was queued: undo its batches.
    pub fn abandon(mut self) {
        if let Some(table) = self.guard.as_mut() {
            table.roll_back(self.write.write_id);
        }
        self.write.slot.finish(SlotState::Failed);
        self.write.done = true;
    }
}

/// Reports a queued write's outcome to its duplicates and, on failure, undoes its batches.
pub struct WriteHandle {
    write_id: u64,
    slot: Slot,
    table: Arc<Mutex<Option<Table>>>,
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

async fn roll_back(table: &Mutex<Option<Table>>, write_id: u64) {
    if let Some(table) = table.lock().await.as_mut() {
        table.roll_back(write_id);
    }
}

/// Rebuilds the table from the producer fields the index keeps with every batch.
async fn recover(
    storage: &Storage,
    stream: &str,
    limits: Limits,
    now_ms: u64,
) -> Result<Table, StorageError> {
    let mut table = Table::new(limits);
    let bounds = storage.bounds(stream).await?;
    let mut next = bounds
        .log_start_offset
        .max(bounds.high_watermark.saturating_sub(RECOVERY_OFFSETS_MAX));
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
        entries_read,
        producers = table.len(),
        "recovered producer state"
    );
    Ok(table)
}
