//! What the engine knows of one stream in memory: its bounds and the contiguous tail of its
//! index, so that tailing reads need no MetaStore lookup. Every value only moves forward.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::{watch, OnceCell};

use super::types::StreamBounds;
use crate::index::LocatedEntry;

pub(super) struct StreamState {
    pub high_watermark: watch::Sender<u64>,
    inner: Mutex<StreamInner>,
    /// Set once the bounds were read from the index; commits may create the state before.
    pub loaded: OnceCell<()>,
    /// When the bounds were last re-read from the index (ms by the engine's clock), if ever.
    refreshed_at_ms: Mutex<Option<u64>>,
    /// A MetaStore notification said the trim point or an existing entry changed since the
    /// bounds were last re-read.
    stale: AtomicBool,
    /// The highest end offset of an index entry a notification announced: the bounds are stale
    /// while the high watermark is below it (this engine's own commits catch up by themselves).
    announced_end: AtomicU64,
}

struct StreamInner {
    log_start_offset: u64,
    /// Contiguous entries ending at or before the high watermark.
    tail: VecDeque<LocatedEntry>,
}

impl StreamState {
    pub fn new() -> Self {
        StreamState {
            high_watermark: watch::channel(0).0,
            inner: Mutex::new(StreamInner {
                log_start_offset: 0,
                tail: VecDeque::new(),
            }),
            loaded: OnceCell::new(),
            refreshed_at_ms: Mutex::new(None),
            stale: AtomicBool::new(false),
            announced_end: AtomicU64::new(0),
        }
    }

    /// The index changed elsewhere: the next read re-reads the bounds.
    pub fn mark_stale(&self) {
        self.stale.store(true, Ordering::Release);
    }

    /// An index entry ending at `end_offset` was committed; stale if this engine does not
    /// have it yet. Returns whether it is.
    pub fn announce_end(&self, end_offset: u64) -> bool {
        self.announced_end.fetch_max(end_offset, Ordering::AcqRel);
        end_offset > *self.high_watermark.borrow()
    }

    /// Claims the re-read a notification asked for. The flag is cleared before the re-read
    /// starts, so a notification that arrives during it asks again; an announced entry stays
    /// due until the high watermark reaches it.
    pub fn take_stale(&self) -> bool {
        let flagged = self.stale.swap(false, Ordering::AcqRel);
        flagged || self.announced_end.load(Ordering::Acquire) > *self.high_watermark.borrow()
    }

    /// The bounds were last re-read before `cutoff_ms`, or never.
    pub fn refreshed_before(&self, cutoff_ms: u64) -> bool {
        lock(&self.refreshed_at_ms).is_none_or(|t| t < cutoff_ms)
    }

    /// Claims the next refresh if the last one is at least `interval_ms` old at `now_ms`.
    pub fn claim_refresh(&self, now_ms: u64, interval_ms: u64) -> bool {
        let mut at = lock(&self.refreshed_at_ms);
        if at.is_some_and(|t| now_ms.saturating_sub(t) < interval_ms) {
            return false;
        }
        *at = Some(now_ms);
        true
    }

    pub fn mark_refreshed(&self, now_ms: u64) {
        *lock(&self.refreshed_at_ms) = Some(now_ms);
    }

    /// Merges what the index says: its newest entry and the trim point.
    pub fn merge_loaded(&self, last: Option<LocatedEntry>, trim: u64) {
        let high_watermark = last.as_ref().map_or(0, |l| l.end_offset).max(trim);
        {
            let mut inner = self.lock();
            inner.log_start_offset = inner.log_start_offset.max(trim);
            if let Some(last) = last {
                // Covered unless the index holds something newer, or the same range in another
                // file (a compaction rewrote the last entry: key compaction changes its records).
                let covered = inner.tail.back().is_some_and(|t| {
                    t.end_offset > last.end_offset
                        || (t.end_offset == last.end_offset
                            && t.entry.object_key == last.entry.object_key)
                });
                if !covered {
                    inner.tail.clear();
                    inner.tail.push_back(last);
                }
            }
        }
        self.advance_high_watermark(high_watermark);
    }

    pub fn bounds(&self) -> StreamBounds {
        let log_start_offset = self.lock().log_start_offset;
        StreamBounds {
            log_start_offset,
            high_watermark: *self.high_watermark.borrow(),
        }
    }

    pub fn advance_log_start(&self, log_start_offset: u64) {
        let mut inner = self.lock();
        inner.log_start_offset = inner.log_start_offset.max(log_start_offset);
    }

    /// Adds an entry this process committed to the tail, keeping at most `tail_entries_max`.
    pub fn apply_commit(&self, located: &LocatedEntry, tail_entries_max: usize) {
        {
            let mut inner = self.lock();
            match inner.tail.back() {
                Some(last) if last.end_offset == located.base_offset => {
                    inner.tail.push_back(located.clone())
                }
                Some(last) if located.end_offset <= last.end_offset => {}
                // Empty, or a gap (another writer committed in between): restart the tail here.
                _ => {
                    inner.tail.clear();
                    inner.tail.push_back(located.clone());
                }
            }
            while inner.tail.len() > tail_entries_max {
                inner.tail.pop_front();
            }
        }
        self.advance_high_watermark(located.end_offset);
    }

    /// Cached entries from the one holding `offset`, if the tail covers it.
    pub fn cached_from(&self, offset: u64, limit: usize) -> Option<Vec<LocatedEntry>> {
        let inner = self.lock();
        let first = inner.tail.front()?;
        if offset < first.base_offset {
            return None;
        }
        let start = inner.tail.partition_point(|e| e.end_offset <= offset);
        if start == inner.tail.len() {
            return None;
        }
        Some(inner.tail.iter().skip(start).take(limit).cloned().collect())
    }

    /// Forgets the cached tail (an entry in it was replaced by compaction).
    pub fn forget_tail(&self) {
        self.lock().tail.clear();
    }

    /// Someone long-polls this stream.
    pub fn is_watched(&self) -> bool {
        self.high_watermark.receiver_count() > 0
    }

    fn advance_high_watermark(&self, end_offset: u64) {
        self.high_watermark.send_if_modified(|hw| {
            let advanced = end_offset > *hw;
            if advanced {
                *hw = end_offset;
            }
            advanced
        });
    }

    fn lock(&self) -> MutexGuard<'_, StreamInner> {
        lock(&self.inner)
    }
}

// Every critical section only moves values forward: a poisoned lock holds consistent state.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announced_entry_is_due_until_the_high_watermark_reaches_it() {
        let state = StreamState::new();
        assert!(!state.take_stale());
        assert!(state.announce_end(10));
        assert!(state.take_stale());
        // Not re-read yet: still due.
        assert!(state.take_stale());
        state.merge_loaded(None, 10);
        assert!(!state.take_stale());
        // An entry this engine already has (its own commit) is not news.
        assert!(!state.announce_end(10));
        assert!(!state.take_stale());
    }

    #[test]
    fn a_flagged_change_is_due_once() {
        let state = StreamState::new();
        state.mark_stale();
        assert!(state.take_stale());
        assert!(!state.take_stale());
    }
}
