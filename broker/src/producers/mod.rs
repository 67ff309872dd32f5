//! The idempotent producer: producer id allocation and, per partition, the epoch and sequence
//! checks that turn a retried batch into its original offset instead of a second copy.

mod ids;
mod partition;
mod sequence;
mod slot;
mod state;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub use ids::{IdAllocator, IdError};
pub use partition::{Admission, AdmitError, Admitted, PartitionProducers, WriteHandle};
pub use slot::{Slot, SlotState};
pub use state::{BatchHeader, Limits, SequenceError};

/// Producers tracked per partition (memory bound).
pub const PRODUCERS_PER_PARTITION_MAX: usize = 10_000;
/// Idle time after which a producer id's state is dropped (Kafka's default, one day).
pub const PRODUCER_ID_EXPIRATION_MS: u64 = 24 * 60 * 60 * 1000;

pub struct Producers {
    pub ids: IdAllocator,
    partitions: Mutex<HashMap<String, Arc<PartitionProducers>>>,
    limits: Limits,
}

impl Producers {
    pub fn new(meta: Arc<dyn storage::meta::MetaStore>) -> Self {
        Producers {
            ids: IdAllocator::new(meta),
            partitions: Mutex::new(HashMap::new()),
            limits: Limits {
                producers_max: PRODUCERS_PER_PARTITION_MAX,
                expiration_ms: PRODUCER_ID_EXPIRATION_MS,
            },
        }
    }

    /// The state of one partition stream (bounded by the number of partitions).
    pub fn partition(&self, stream: &str) -> Arc<PartitionProducers> {
        let mut map = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(stream.to_string())
            .or_insert_with(|| Arc::new(PartitionProducers::new(self.limits)))
            .clone()
    }

    /// Forgets a deleted partition's state.
    pub fn forget(&self, stream: &str) {
        let mut map = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(stream);
    }
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
