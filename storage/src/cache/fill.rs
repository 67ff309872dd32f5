//! One fill at a time per cache key: readers that miss the same key at once queue behind the
//! first, which does the GET and fills the cache; each of the others then finds the value
//! there. Without it, a hundred groups reading one cold slice at once GET it a hundred times.
//!
//! The map holds only keys with a fill in progress or waiters queued (an entry leaves with its
//! last guard), so it is bounded by the reads in flight.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

type KeyLock = Arc<tokio::sync::Mutex<()>>;

#[derive(Debug)]
pub struct FillLocks<K: Eq + Hash + Clone> {
    locks: Mutex<HashMap<K, KeyLock>>,
}

/// The right to fill one key; other readers of the key wait until it is dropped.
pub struct FillGuard<'a, K: Eq + Hash + Clone> {
    owner: &'a FillLocks<K>,
    key: K,
    guard: Option<OwnedMutexGuard<()>>,
}

impl<K: Eq + Hash + Clone> Default for FillLocks<K> {
    fn default() -> Self {
        FillLocks {
            locks: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone> FillLocks<K> {
    /// Waits until no other reader is filling `key`, then holds it.
    pub async fn lock(&self, key: &K) -> FillGuard<'_, K> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
            locks.entry(key.clone()).or_default().clone()
        };
        FillGuard {
            owner: self,
            key: key.clone(),
            guard: Some(lock.lock_owned().await),
        }
    }

    /// Keys with a fill in progress or waiters queued.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.locks.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Eq + Hash + Clone> Drop for FillGuard<'_, K> {
    fn drop(&mut self) {
        let mut locks = self.owner.locks.lock().unwrap_or_else(|p| p.into_inner());
        drop(self.guard.take());
        // The map's clone is the only one left: nobody waits, the key can go. Waiters clone
        // the lock under this same mutex, so none can appear between the count and the removal.
        if locks
            .get(&self.key)
            .is_some_and(|lock| Arc::strong_count(lock) == 1)
        {
            locks.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn readers_of_one_key_fill_it_one_at_a_time_and_leave_no_entry_behind() {
        let locks = Arc::new(FillLocks::<u32>::default());
        let holding = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (locks, holding, most) = (locks.clone(), holding.clone(), most.clone());
                tokio::spawn(async move {
                    let _guard = locks.lock(&7).await;
                    let now = holding.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    holding.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
        assert!(locks.is_empty());
    }

    #[tokio::test]
    async fn different_keys_fill_at_the_same_time() {
        let locks = FillLocks::<u32>::default();
        let first = locks.lock(&1).await;
        let second = tokio::time::timeout(Duration::from_secs(10), locks.lock(&2))
            .await
            .unwrap();
        assert_eq!(locks.len(), 2);
        drop((first, second));
        assert!(locks.is_empty());
    }
}
