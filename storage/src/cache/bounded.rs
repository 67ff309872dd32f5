use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::Mutex;

use bytes::Bytes;

use super::metrics::CacheMetrics;

/// What a cached value costs against the cache's byte bound.
pub trait Weigh {
    fn weight_bytes(&self) -> usize;
}

impl Weigh for Bytes {
    fn weight_bytes(&self) -> usize {
        self.len()
    }
}

impl<T: Weigh> Weigh for std::sync::Arc<T> {
    fn weight_bytes(&self) -> usize {
        (**self).weight_bytes()
    }
}

/// A cache bounded by total bytes (by [`Weigh`]), evicting the oldest insertions first.
pub struct BoundedCache<K, V = Bytes> {
    bytes_max: usize,
    inner: Mutex<Inner<K, V>>,
    metrics: CacheMetrics,
}

struct Inner<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
    bytes: usize,
}

impl<K: Hash + Eq + Clone, V: Clone + Weigh> BoundedCache<K, V> {
    /// `name` labels the cache's metrics (`write`, `read`, `footer`, `rebuilt`).
    pub fn new(name: &'static str, bytes_max: usize) -> Self {
        BoundedCache {
            metrics: CacheMetrics::named(name),
            bytes_max,
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                order: VecDeque::new(),
                bytes: 0,
            }),
        }
    }

    pub fn get(&self, key: &K) -> Option<V> {
        let found = self.lock().map.get(key).cloned();
        self.metrics.looked_up(found.is_some());
        found
    }

    /// Whether `key` is cached, without counting a lookup.
    pub fn contains(&self, key: &K) -> bool {
        self.lock().map.contains_key(key)
    }

    /// Inserts `value`; values larger than the whole cache are not kept.
    pub fn insert(&self, key: K, value: V) {
        let weight = value.weight_bytes();
        if weight > self.bytes_max {
            return;
        }
        let mut inner = self.lock();
        if inner.map.contains_key(&key) {
            return;
        }
        let mut removed = 0;
        while inner.bytes + weight > self.bytes_max {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            if let Some(evicted) = inner.map.remove(&oldest) {
                inner.bytes -= evicted.weight_bytes();
                removed += evicted.weight_bytes();
            }
        }
        inner.bytes += weight;
        self.metrics.resized(weight, removed);
        inner.order.push_back(key.clone());
        inner.map.insert(key, value);
    }

    /// Drops `key`'s value and its place in the eviction order (linear: removals are rare,
    /// a value found bad; leaving the place would let the order grow with every retry).
    pub fn remove(&self, key: &K) {
        let mut inner = self.lock();
        if let Some(removed) = inner.map.remove(key) {
            let weight = removed.weight_bytes();
            inner.bytes -= weight;
            inner.order.retain(|k| k != key);
            self.metrics.resized(0, weight);
        }
    }

    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<K, V>> {
        // Losing the cache is the worst a poisoned lock can mean here: recover.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_evicts_oldest_to_stay_within_bytes_max() {
        let cache = BoundedCache::new("test", 10);
        cache.insert("a", Bytes::from_static(b"aaaa"));
        cache.insert("b", Bytes::from_static(b"bbbb"));
        cache.insert("c", Bytes::from_static(b"cccc"));
        assert!(cache.get(&"a").is_none());
        assert!(cache.get(&"c").is_some());
        assert!(cache.bytes() <= 10);
        cache.insert("big", Bytes::from(vec![0u8; 11]));
        assert!(cache.get(&"big").is_none());
    }

    #[test]
    fn a_removed_value_leaves_no_place_in_the_eviction_order() {
        let cache = BoundedCache::new("test", 10);
        for _ in 0..100 {
            cache.insert("bad", Bytes::from_static(b"bbbb"));
            cache.remove(&"bad");
        }
        assert_eq!(cache.bytes(), 0);
        assert!(cache.lock().order.is_empty());
        cache.insert("a", Bytes::from_static(b"aaaa"));
        assert!(cache.get(&"a").is_some());
    }

    #[test]
    fn a_lease_outlives_eviction() {
        let cache = BoundedCache::new("test", 4);
        cache.insert("a", Bytes::from_static(b"aaaa"));
        let lease = cache.get(&"a").unwrap().slice(1..3);
        cache.insert("b", Bytes::from_static(b"bbbb"));
        assert!(cache.get(&"a").is_none());
        assert_eq!(&lease[..], b"aa");
    }
}
