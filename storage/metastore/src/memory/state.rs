//! The store's data and its operations, each applied whole under the store's lock.
//!
//! Mirrors `embedded/ops.rs` step for step (same checks, same order, same notifications); the
//! rules both share live in `meta/rules.rs`. Every operation checks its preconditions before it
//! changes anything, so a failed operation leaves the state untouched.

use std::collections::{btree_map, BTreeMap, BTreeSet};
use std::ops::Bound;

use bytes::Bytes;
use tokio::sync::broadcast;

use super::MetaClock;
use crate::rules::{check_expect, next_sequence_key, sequence_upper_bound};
use crate::{
    sort_key, Comparison, Expect, MetaError, MetaResult, Notification, PutResult, Record, Version,
};

/// A put as the state receives it (already validated by the handle).
pub(super) struct PutOp {
    pub key: String,
    pub value: Bytes,
    pub expect: Expect,
    pub sequence_key_deltas: Option<Vec<u64>>,
    pub session_id: Option<i64>,
}

/// What a put needs to know about the record it replaces.
struct Existing {
    version_id: i64,
    modifications_count: i64,
    created_ms: u64,
    bytes: usize,
}

struct Entry {
    key: String,
    value: Bytes,
    version: Version,
}

impl Entry {
    fn bytes(&self) -> usize {
        self.key.len() + self.value.len()
    }

    fn record(&self) -> Record {
        Record {
            key: self.key.clone(),
            value: self.value.clone(),
            version: self.version.clone(),
        }
    }
}

pub(super) struct State {
    /// By [`sort_key`], so the map's order is Oxia's key order.
    records: BTreeMap<Vec<u8>, Entry>,
    /// Live sessions, each with the sort keys of its ephemeral records.
    sessions: BTreeMap<i64, BTreeSet<Vec<u8>>>,
    last_version_id: i64,
    last_session_id: i64,
    /// Sum of key and value lengths over `records`.
    data_bytes: usize,
    data_bytes_max: usize,
    clock: MetaClock,
    events: broadcast::Sender<Notification>,
}

impl State {
    pub fn new(clock: MetaClock, data_bytes_max: usize, notification_buffer_max: usize) -> Self {
        let (events, _) = broadcast::channel(notification_buffer_max);
        State {
            records: BTreeMap::new(),
            sessions: BTreeMap::new(),
            last_version_id: 0,
            last_session_id: 0,
            data_bytes: 0,
            data_bytes_max,
            clock,
            events,
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.events.subscribe()
    }

    pub fn data_bytes(&self) -> usize {
        self.data_bytes
    }

    pub fn records_count(&self) -> usize {
        self.records.len()
    }

    pub fn live_sessions(&self) -> Vec<i64> {
        self.sessions.keys().copied().collect()
    }

    pub fn open_session(&mut self) -> i64 {
        self.last_session_id += 1;
        self.sessions.insert(self.last_session_id, BTreeSet::new());
        self.last_session_id
    }

    pub fn session_alive(&self, session_id: i64) -> bool {
        self.sessions.contains_key(&session_id)
    }

    /// Ends the session and deletes its ephemeral records, notifying one deletion per record in
    /// key order. Returns how many records went, or `None` if the session had already ended.
    pub fn end_session(&mut self, session_id: i64) -> Option<usize> {
        let owned = self.sessions.remove(&session_id)?;
        let mut deleted = Vec::with_capacity(owned.len());
        for sort_key in &owned {
            if let Some(entry) = self.remove(sort_key) {
                deleted.push(entry.key);
            }
        }
        for key in &deleted {
            self.notify(Notification::KeyDeleted { key: key.clone() });
        }
        Some(deleted.len())
    }

    pub fn put(&mut self, op: PutOp) -> MetaResult<PutResult> {
        let key = match &op.sequence_key_deltas {
            Some(deltas) => self.next_sequence_key(&op.key, deltas)?,
            None => op.key,
        };
        if let Some(session_id) = op.session_id {
            if !self.session_alive(session_id) {
                return Err(MetaError::SessionExpired);
            }
        }
        let sort_key = sort_key(&key);
        let existing = self.records.get(&sort_key).map(|e| Existing {
            version_id: e.version.version_id,
            modifications_count: e.version.modifications_count,
            created_ms: e.version.created_ms,
            bytes: e.bytes(),
        });
        check_expect(op.expect, existing.as_ref().map(|e| e.version_id))?;
        let replaced_bytes = existing.as_ref().map_or(0, |e| e.bytes);
        let data_bytes = self.data_bytes - replaced_bytes + key.len() + op.value.len();
        if data_bytes > self.data_bytes_max {
            return Err(MetaError::Unavailable(format!(
                "memory metadata store full: {data_bytes} bytes of keys and values would exceed \
                 data_bytes_max {}",
                self.data_bytes_max
            )));
        }

        let now_ms = (self.clock)();
        let (modifications_count, created_ms) = match &existing {
            Some(e) => (e.modifications_count + 1, e.created_ms),
            None => (0, now_ms),
        };
        let created = existing.is_none();
        self.last_version_id += 1;
        let version = Version {
            version_id: self.last_version_id,
            modifications_count,
            created_ms,
            modified_ms: now_ms,
            session_id: op.session_id,
        };
        self.remove(&sort_key);
        self.insert(
            sort_key,
            Entry {
                key: key.clone(),
                value: op.value,
                version: version.clone(),
            },
        );
        let (key_notified, version_id) = (key.clone(), version.version_id);
        self.notify(if created {
            Notification::KeyCreated {
                key: key_notified,
                version_id,
            }
        } else {
            Notification::KeyModified {
                key: key_notified,
                version_id,
            }
        });
        Ok(PutResult { key, version })
    }

    /// See [`next_sequence_key`]: continues from the highest key below the sequence's bound.
    fn next_sequence_key(&self, prefix: &str, deltas: &[u64]) -> MetaResult<String> {
        let upper = sort_key(&sequence_upper_bound(prefix));
        let last = self
            .records
            .range::<Vec<u8>, _>((Bound::Unbounded, Bound::Excluded(&upper)))
            .next_back()
            .map(|(_, entry)| entry.key.as_str());
        next_sequence_key(prefix, last, deltas)
    }

    pub fn get(&self, key: &str, comparison: Comparison) -> Option<Record> {
        let target = sort_key(key);
        let found = match comparison {
            Comparison::Equal => self.records.get(&target),
            Comparison::Floor => self.below(Bound::Included(&target)).next_back(),
            Comparison::Lower => self.below(Bound::Excluded(&target)).next_back(),
            Comparison::Ceiling => self.above(Bound::Included(&target)).next(),
            Comparison::Higher => self.above(Bound::Excluded(&target)).next(),
        };
        found.map(Entry::record)
    }

    pub fn delete(&mut self, key: &str, expect: Expect) -> MetaResult<()> {
        let sort_key = sort_key(key);
        let existing = self.records.get(&sort_key).map(|e| e.version.version_id);
        // Oxia: an expectation is checked first (a missing key fails it), then existence.
        if expect != Expect::Any {
            check_expect(expect, existing)?;
        }
        if self.remove(&sort_key).is_none() {
            return Err(MetaError::KeyNotFound);
        }
        self.notify(Notification::KeyDeleted {
            key: key.to_string(),
        });
        Ok(())
    }

    pub fn delete_range(&mut self, min_key: &str, max_key: &str) {
        let doomed: Vec<Vec<u8>> = self
            .range(min_key, max_key)
            .map(|(sort_key, _)| sort_key.clone())
            .collect();
        for sort_key in &doomed {
            self.remove(sort_key);
        }
        if !doomed.is_empty() {
            self.notify(Notification::KeyRangeDeleted {
                key: min_key.to_string(),
                end_key: max_key.to_string(),
            });
        }
    }

    pub fn list(&self, min_key: &str, max_key: &str) -> Vec<String> {
        self.range(min_key, max_key)
            .map(|(_, entry)| entry.key.clone())
            .collect()
    }

    pub fn range_scan(&self, min_key: &str, max_key: &str, limit: usize) -> Vec<Record> {
        self.range(min_key, max_key)
            .take(limit)
            .map(|(_, entry)| entry.record())
            .collect()
    }

    /// Records in `[min_key, max_key)`; empty when the bounds are reversed or equal (a reversed
    /// range would make the map panic, so it is clamped to an empty one).
    fn range(&self, min_key: &str, max_key: &str) -> btree_map::Range<'_, Vec<u8>, Entry> {
        let min = sort_key(min_key);
        let max = sort_key(max_key).max(min.clone());
        self.records.range(min..max)
    }

    fn below<'s>(&'s self, upper: Bound<&Vec<u8>>) -> impl DoubleEndedIterator<Item = &'s Entry> {
        self.records
            .range::<Vec<u8>, _>((Bound::Unbounded, upper))
            .map(|(_, entry)| entry)
    }

    fn above<'s>(&'s self, lower: Bound<&Vec<u8>>) -> impl DoubleEndedIterator<Item = &'s Entry> {
        self.records
            .range::<Vec<u8>, _>((lower, Bound::Unbounded))
            .map(|(_, entry)| entry)
    }

    /// The only way records enter the map: keeps `data_bytes` and the session index right.
    fn insert(&mut self, sort_key: Vec<u8>, entry: Entry) {
        debug_assert!(
            !self.records.contains_key(&sort_key),
            "remove before insert"
        );
        self.data_bytes += entry.bytes();
        if let Some(session_id) = entry.version.session_id {
            if let Some(owned) = self.sessions.get_mut(&session_id) {
                owned.insert(sort_key.clone());
            }
        }
        self.records.insert(sort_key, entry);
    }

    /// The only way records leave the map.
    fn remove(&mut self, sort_key: &[u8]) -> Option<Entry> {
        let entry = self.records.remove(sort_key)?;
        self.data_bytes -= entry.bytes();
        if let Some(session_id) = entry.version.session_id {
            if let Some(owned) = self.sessions.get_mut(&session_id) {
                owned.remove(sort_key);
            }
        }
        Some(entry)
    }

    /// Sent under the lock, so subscribers see changes in the order they were applied. A send
    /// with no subscriber fails, which is fine: nobody is listening.
    fn notify(&self, notification: Notification) {
        drop(self.events.send(notification));
    }
}
