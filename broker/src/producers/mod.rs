//! The idempotent producer: producer id allocation and, per partition, the epoch and sequence
//! checks that turn a retried batch into its original offset instead of a second copy, with
//! the state snapshotted to the MetaStore so recovery need not read the whole log.

mod ids;
mod partition;
mod sequence;
mod slot;
mod snapshot;
mod state;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use metastore::MetaStore;
use storage::Storage;

pub use ids::{IdAllocator, IdError};
pub use partition::{Admission, AdmitError, Admitted, PartitionProducers, WriteHandle};
pub use partition::{RECOVERY_OFFSETS_MAX, SNAPSHOT_EVERY_BATCHES, SNAPSHOT_INTERVAL_MS};
pub use slot::{Slot, SlotState};
pub use snapshot::{Snapshot, SnapshotError};
pub use state::{BatchHeader, Limits, ProducerView, SequenceError};

/// Producers tracked per partition (memory bound).
pub const PRODUCERS_PER_PARTITION_MAX: usize = 10_000;
/// Idle time after which a producer id's state is dropped (Kafka's default, one day).
pub const PRODUCER_ID_EXPIRATION_MS: u64 = 24 * 60 * 60 * 1000;

pub struct Producers {
    pub ids: IdAllocator,
    partitions: Mutex<HashMap<String, Arc<PartitionProducers>>>,
    limits: Limits,
    meta: Arc<dyn MetaStore>,
    membership_generation: Arc<AtomicU64>,
}

impl Producers {
    /// `membership_generation` changes whenever cluster membership does: partition states
    /// loaded before a change are reloaded before their next use.
    pub fn new(meta: Arc<dyn MetaStore>, membership_generation: Arc<AtomicU64>) -> Self {
        Producers {
            ids: IdAllocator::new(meta.clone()),
            partitions: Mutex::new(HashMap::new()),
            limits: Limits {
                producers_max: PRODUCERS_PER_PARTITION_MAX,
                expiration_ms: PRODUCER_ID_EXPIRATION_MS,
            },
            meta,
            membership_generation,
        }
    }

    /// The state of one partition stream (bounded by the number of partitions).
    pub fn partition(&self, stream: &str) -> Arc<PartitionProducers> {
        let mut map = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(stream.to_string())
            .or_insert_with(|| {
                Arc::new(PartitionProducers::new(
                    self.limits,
                    stream,
                    self.meta.clone(),
                    self.membership_generation.clone(),
                ))
            })
            .clone()
    }

    /// Forgets a deleted partition's state, in memory and its snapshot.
    pub async fn forget(&self, stream: &str) -> Result<(), SnapshotError> {
        self.partitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(stream);
        snapshot::delete(&self.meta, stream).await
    }

    /// Snapshots every loaded partition (clean shutdown, after storage flushed its writes).
    pub async fn snapshot_all(&self, storage: &Storage) {
        let partitions: Vec<Arc<PartitionProducers>> = self
            .partitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        for partition in partitions {
            if let Err(error) = partition.snapshot_now(storage).await {
                tracing::warn!(%error, "producer snapshot at shutdown failed");
            }
        }
    }
}

pub use storage::clock::system_now_ms as now_ms;
