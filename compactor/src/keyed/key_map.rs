//! The key index of one key compaction: for each key of the dirty section, the offset of its
//! latest record. Bounded like Kafka's `log.cleaner.dedupe.buffer.size`: Kafka counts 24 bytes
//! a key (a 16-byte hash and an 8-byte offset) at a 0.9 load factor; so do we. A dirty section
//! with more keys is compacted in several passes, each as far as its keys fit.
//!
//! Keys are held as 128-bit hashes (two SipHash-1-3 runs with different prefixes), as Kafka
//! holds MD5 digests: memory does not grow with key length, and a collision, which would drop
//! a record whose key merely shares the hash of a newer one, is as unlikely as Kafka's.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

/// Bytes Kafka's offset map counts per key.
pub const BYTES_PER_KEY: u64 = 24;

pub struct KeyMap {
    latest: HashMap<u128, u64>,
    capacity: usize,
}

impl KeyMap {
    /// A map of at most `budget_bytes / 24 * 0.9` keys (at least one).
    pub fn with_budget(budget_bytes: u64) -> KeyMap {
        let keys = budget_bytes / BYTES_PER_KEY * 9 / 10;
        KeyMap {
            latest: HashMap::new(),
            capacity: usize::try_from(keys).unwrap_or(usize::MAX).max(1),
        }
    }

    /// Whether `keys` more keys surely fit.
    pub fn has_room_for(&self, keys: usize) -> bool {
        self.latest.len().saturating_add(keys) <= self.capacity
    }

    pub fn is_empty(&self) -> bool {
        self.latest.is_empty()
    }

    pub fn len(&self) -> usize {
        self.latest.len()
    }

    /// Records that `key`'s latest record so far is at `offset` (records come in offset order).
    pub fn put(&mut self, key: &[u8], offset: u64) {
        self.latest.insert(key_hash(key), offset);
    }

    /// The offset of `key`'s latest record in the mapped section, if it has one there.
    pub fn latest(&self, key: &[u8]) -> Option<u64> {
        self.latest.get(&key_hash(key)).copied()
    }
}

fn key_hash(key: &[u8]) -> u128 {
    let half = |salt: u8| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        key.hash(&mut h);
        h.finish()
    };
    (u128::from(half(0x5a)) << 64) | u128::from(half(0xa5))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_offset_of_each_key_wins_and_the_budget_bounds_the_keys() {
        let mut map = KeyMap::with_budget(240);
        assert!(map.has_room_for(9) && !map.has_room_for(10));
        map.put(b"a", 1);
        map.put(b"b", 2);
        map.put(b"a", 7);
        assert_eq!(
            (map.latest(b"a"), map.latest(b"b"), map.latest(b"c")),
            (Some(7), Some(2), None)
        );
        assert_eq!(map.len(), 2);
        assert!(
            KeyMap::with_budget(0).has_room_for(1),
            "one key always fits"
        );
    }
}
