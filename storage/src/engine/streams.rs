//! The in-memory states of streams, at most `stream_states_max` of them. Past the bound the
//! least recently used states nobody holds or long-polls are dropped, an eighth of the bound at
//! a time; a dropped state is rebuilt from the index on its next use (bounds only move forward,
//! and the index has them all).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::state::StreamState;

pub(super) struct Streams {
    states_max: usize,
    inner: Mutex<Inner>,
}

/// Looked up two or three times per partition per Fetch (10,000 partitions long-polled: tens of
/// thousands of lookups a second), so a fast keyed hash rather than SipHash.
type StateMap = HashMap<String, Slot, foldhash::fast::RandomState>;

#[derive(Default)]
struct Inner {
    map: StateMap,
    /// Bumped on every use; a state's last use orders eviction.
    uses: u64,
}

struct Slot {
    state: Arc<StreamState>,
    last_use: u64,
}

impl Streams {
    pub fn new(states_max: usize) -> Streams {
        Streams {
            states_max: states_max.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    pub fn get_or_create(&self, stream: &str) -> Arc<StreamState> {
        let mut inner = self.lock();
        inner.uses += 1;
        let now = inner.uses;
        if let Some(slot) = inner.map.get_mut(stream) {
            slot.last_use = now;
            return slot.state.clone();
        }
        if inner.map.len() >= self.states_max {
            evict_idle(&mut inner.map, self.states_max / 8 + 1);
        }
        let state = Arc::new(StreamState::new());
        let slot = Slot {
            state: state.clone(),
            last_use: now,
        };
        inner.map.insert(stream.to_string(), slot);
        state
    }

    pub fn remove(&self, stream: &str) {
        self.lock().map.remove(stream);
    }

    /// The stream's state if one is in memory (without creating one or counting a use).
    pub fn peek(&self, stream: &str) -> Option<Arc<StreamState>> {
        self.lock().map.get(stream).map(|slot| slot.state.clone())
    }

    /// Up to `limit` states whose bounds were last re-read before `cutoff_ms`.
    pub fn refreshed_before(
        &self,
        cutoff_ms: u64,
        limit: usize,
    ) -> Vec<(String, Arc<StreamState>)> {
        self.lock()
            .map
            .iter()
            .filter(|(_, slot)| {
                slot.state.loaded.initialized() && slot.state.refreshed_before(cutoff_ms)
            })
            .take(limit)
            .map(|(stream, slot)| (stream.clone(), slot.state.clone()))
            .collect()
    }

    /// Marks every state stale (notifications may have been missed).
    pub fn mark_all_stale(&self) {
        for slot in self.lock().map.values() {
            slot.state.mark_stale();
        }
    }

    /// Streams someone is long-polling.
    pub fn watched(&self) -> Vec<(String, Arc<StreamState>)> {
        self.lock()
            .map
            .iter()
            .filter(|(_, slot)| slot.state.is_watched())
            .map(|(stream, slot)| (stream.clone(), slot.state.clone()))
            .collect()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().map.len()
    }

    // Only whole inserts and removes happen under the lock: a poisoned map is consistent.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Drops up to `n` of the least recently used states that only the map holds and nobody
/// watches; the map may stay above its bound while every state is in use.
fn evict_idle(map: &mut StateMap, n: usize) {
    let mut idle: Vec<(u64, String)> = map
        .iter()
        .filter(|(_, slot)| Arc::strong_count(&slot.state) == 1 && !slot.state.is_watched())
        .map(|(stream, slot)| (slot.last_use, stream.clone()))
        .collect();
    idle.sort_unstable();
    for (_, stream) in idle.into_iter().take(n) {
        map.remove(&stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_idle_states_go_first() {
        let streams = Streams::new(8);
        for i in 0..8 {
            streams.get_or_create(&format!("s{i}"));
        }
        // s0 used again: s1 is now the oldest.
        streams.get_or_create("s0");
        // Full: an eighth of the bound plus one (s1, s2) goes before s8 comes in.
        streams.get_or_create("s8");
        assert_eq!(streams.len(), 7);
        let kept: Vec<String> = (0..9)
            .map(|i| format!("s{i}"))
            .filter(|s| streams.lock().map.contains_key(s))
            .collect();
        assert!(!kept.contains(&"s1".to_string()), "{kept:?}");
        assert!(!kept.contains(&"s2".to_string()), "{kept:?}");
        assert!(kept.contains(&"s0".to_string()), "{kept:?}");
    }

    #[test]
    fn states_in_use_or_watched_are_never_dropped() {
        let streams = Streams::new(2);
        let held = streams.get_or_create("held");
        let watched = streams.get_or_create("watched");
        let _receiver = watched.high_watermark.subscribe();
        drop(watched);
        streams.get_or_create("new");
        assert_eq!(
            streams.len(),
            3,
            "over the bound rather than drop a live state"
        );
        assert!(Arc::ptr_eq(&held, &streams.get_or_create("held")));
        assert_eq!(streams.watched().len(), 1);
    }
}
