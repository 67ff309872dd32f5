//! The one rule both read paths read ahead by (WAL ranges, `wal_reads`; compacted row groups,
//! `row_groups`): a load started ahead of a reader runs in its own task, at most once per key
//! at a time, and holds its bytes of a global budget until it is done; past the budget none
//! starts. What it loads lands in the caller's byte-bounded cache.

use std::collections::HashSet;
use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Semaphore;

use crate::error::StorageError;

/// Budget units: one permit per KiB.
pub(super) const PERMIT_BYTES: usize = 1 << 10;

/// What [`ReadAhead::start`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Start {
    Began,
    /// The key is already being loaded ahead.
    OnItsWay,
    /// The budget is spent: the caller starts nothing more now.
    BudgetSpent,
}

pub(super) struct ReadAhead<K> {
    budget: Arc<Semaphore>,
    /// Keys being loaded (each holds budget, so the set is bounded by it).
    in_flight: Mutex<HashSet<K>>,
    /// Loads that succeeded (tests and benchmarks).
    loaded: AtomicU64,
}

impl<K: Eq + Hash + Clone + std::fmt::Debug + Send + Sync + 'static> ReadAhead<K> {
    pub fn new(budget_bytes: usize) -> Arc<ReadAhead<K>> {
        let permits = (budget_bytes / PERMIT_BYTES).min(Semaphore::MAX_PERMITS);
        Arc::new(ReadAhead {
            budget: Arc::new(Semaphore::new(permits)),
            in_flight: Mutex::default(),
            loaded: AtomicU64::new(0),
        })
    }

    /// Spawns `load` for `key`, holding `bytes` of the budget until it is done, unless the key
    /// is already on its way or the budget is spent.
    pub fn start<F>(self: &Arc<Self>, key: K, bytes: usize, load: F) -> Start
    where
        F: Future<Output = Result<(), StorageError>> + Send + 'static,
    {
        let permits = u32::try_from(bytes.div_ceil(PERMIT_BYTES)).unwrap_or(u32::MAX);
        let Ok(permit) = self.budget.clone().try_acquire_many_owned(permits) else {
            tracing::debug!(key = ?key, "read-ahead budget spent");
            return Start::BudgetSpent;
        };
        if !self.lock_in_flight().insert(key.clone()) {
            return Start::OnItsWay;
        }
        let this = self.clone();
        tokio::spawn(async move {
            match load.await {
                Ok(()) => {
                    this.loaded.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => tracing::debug!(key = ?key, error = %e, "read-ahead failed"),
            }
            this.lock_in_flight().remove(&key);
            drop(permit);
        });
        Start::Began
    }

    /// Loads that succeeded so far.
    #[cfg(test)]
    pub fn loaded(&self) -> u64 {
        self.loaded.load(Ordering::Relaxed)
    }

    /// Budget not in use, in bytes.
    #[cfg(test)]
    pub fn free_bytes(&self) -> usize {
        self.budget.available_permits() * PERMIT_BYTES
    }

    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<K>> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
