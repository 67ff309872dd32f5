//! A stream's bounds as the index has them: appends committed by other brokers, and trims
//! made elsewhere, become visible here when the bounds are re-read. Two ways to know when:
//!
//! - **following** ([`Storage::spawn_bounds_follower`], what the broker runs): the MetaStore's
//!   notifications name every index key created and every trim point moved; a stream they name
//!   is stale (until its high watermark reaches the announced entry, or until re-read), is
//!   re-read by its next read, and at once if a Fetch long-polls it.
//!   Nothing is read while nothing changes, whatever the number of partitions. Notifications
//!   can be lost (a subscriber too far behind, a reconnect): a resubscription marks every
//!   stream stale, and a slow sweep re-reads each state at least every
//!   [`SWEEP_INTERVAL_MS`], at most [`SWEEP_STREAMS_PER_SEC`] a second;
//! - **polling** ([`Storage::spawn_bounds_poller`], for a MetaStore handle without
//!   notifications): long-polled streams are re-read every [`BOUNDS_REFRESH_INTERVAL_MS`] (at
//!   most [`POLL_STREAMS_PER_SEC_MAX`] a second), and a read at the end re-reads bounds older
//!   than that.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt;
use metastore::{MetaStore, Notification};
use tokio::sync::Notify;

use super::state::StreamState;
use super::{Storage, StreamBounds};
use crate::error::StorageError;
use crate::stream::{parse_stream_key, StreamKey};

/// Polling: how stale a stream's bounds may get before a read at its end re-reads the index.
/// Also the period of the poll that wakes long polls.
const BOUNDS_REFRESH_INTERVAL_MS: u64 = 100;

/// Polling: the poller re-reads at most this many streams' bounds per second: with many
/// watched streams a round takes `streams / this` seconds instead of 100 ms.
const POLL_STREAMS_PER_SEC_MAX: u64 = 1000;

/// Following: every state is re-read at least this often, in case a notification was lost.
const SWEEP_INTERVAL_MS: u64 = 30_000;

/// Following: the sweep re-reads at most this many states a second (two MetaStore gets each),
/// so idle partitions cost a bounded trickle however many there are.
const SWEEP_STREAMS_PER_SEC: usize = 20;

/// Following: stale long-polled streams re-read at once, at most this many concurrently.
const REFRESH_CONCURRENCY: usize = 16;

impl Storage {
    /// Re-reads the stream's newest index entry and trim point and merges them (bounds only
    /// move forward), so appends committed by other brokers become readable here. Long polls
    /// watching the stream wake if the high watermark advanced.
    pub async fn refresh_bounds(&self, stream: &str) -> Result<StreamBounds, StorageError> {
        let state = self.state(stream).await?;
        state.take_stale();
        state.mark_refreshed(self.clock.now_ms());
        self.reload_bounds(stream, &state).await?;
        Ok(state.bounds())
    }

    /// Like [`Storage::refresh_bounds`], only if the bounds may be out of date: following, a
    /// notification named the stream since; polling, they were re-read over
    /// [`BOUNDS_REFRESH_INTERVAL_MS`] ago.
    pub(super) async fn refresh_if_stale(
        &self,
        stream: &str,
        state: &StreamState,
    ) -> Result<StreamBounds, StorageError> {
        let now_ms = self.clock.now_ms();
        let due = if self.follows_index.load(Ordering::Acquire) {
            let stale = state.take_stale();
            if stale {
                state.mark_refreshed(now_ms);
            }
            stale
        } else {
            state.claim_refresh(now_ms, BOUNDS_REFRESH_INTERVAL_MS)
        };
        if due {
            if let Err(error) = self.reload_bounds(stream, state).await {
                // Still stale: the next read tries again.
                state.mark_stale();
                return Err(error);
            }
        }
        Ok(state.bounds())
    }

    async fn reload_bounds(&self, stream: &str, state: &StreamState) -> Result<(), StorageError> {
        let last = self.index.last(stream).await?;
        let trim = self.index.trim_point(stream).await?;
        state.merge_loaded(last, trim);
        Ok(())
    }

    /// Starts following the index through `meta`'s notifications (a handle on the same
    /// MetaStore opened with notifications), so a fetch waiting here wakes on another
    /// broker's append and idle streams cost no MetaStore reads. Its tasks end when the
    /// engine is dropped.
    pub fn spawn_bounds_follower(self: &Arc<Self>, meta: Arc<dyn MetaStore>) {
        self.follows_index.store(true, Ordering::Release);
        let due = Arc::new(Due::default());
        tokio::spawn(follow_notifications(
            Arc::downgrade(self),
            meta,
            due.clone(),
        ));
        tokio::spawn(refresh_due_streams(Arc::downgrade(self), due));
    }

    /// What a notification means here: the stream it names is stale unless the change is one
    /// this engine already knows (its own commit, or an entry below what it has). Returns the
    /// stream if a long poll waits on it.
    fn on_notification(&self, notification: &Notification) -> Option<String> {
        let (created_or_modified, modified) = match notification {
            Notification::KeyCreated { .. } => (true, false),
            Notification::KeyModified { .. } => (true, true),
            // Deletes never move bounds: compaction deletes covered entries, retention moves
            // the trim point first.
            Notification::KeyDeleted { .. } | Notification::KeyRangeDeleted { .. } => {
                (false, false)
            }
        };
        if !created_or_modified {
            return None;
        }
        let (stream, kind) = parse_stream_key(notification.key())?;
        let state = self.streams.peek(stream)?;
        match kind {
            // A created entry is due only while the high watermark is below it: this
            // engine's own commits are applied before or just after their notification.
            StreamKey::Index { end_offset } if !modified => {
                if !state.announce_end(end_offset) {
                    return None;
                }
            }
            // A modified entry was rewritten by compaction.
            StreamKey::Index { .. } | StreamKey::Trim => state.mark_stale(),
            StreamKey::Other => return None,
        }
        state.is_watched().then(|| stream.to_string())
    }

    /// Starts the task that re-reads the bounds of every long-polled stream every
    /// [`BOUNDS_REFRESH_INTERVAL_MS`], for an engine whose MetaStore gives no notifications.
    /// It ends when the engine is dropped.
    pub fn spawn_bounds_poller(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(poll_watched_streams(Arc::downgrade(self)))
    }
}

/// Long-polled streams a notification made stale, waiting for their re-read. At most one
/// entry per in-memory stream state.
#[derive(Default)]
struct Due {
    streams: Mutex<HashSet<String>>,
    added: Notify,
}

impl Due {
    fn add(&self, stream: String) {
        self.lock().insert(stream);
        self.added.notify_one();
    }

    fn take(&self) -> HashSet<String> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.streams.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Reads notifications, resubscribing when the stream ends or fails; every subscription
/// starts by marking every stream stale, since changes between two may have been missed.
async fn follow_notifications(storage: Weak<Storage>, meta: Arc<dyn MetaStore>, due: Arc<Due>) {
    loop {
        let subscribed = meta.notifications().await;
        {
            let Some(storage) = storage.upgrade() else {
                return;
            };
            storage.streams.mark_all_stale();
            for (stream, _) in storage.streams.watched() {
                due.add(stream);
            }
        }
        match subscribed {
            Ok(mut notifications) => loop {
                // Wakes now and then to notice the engine is gone even when nothing changes.
                let next = tokio::time::timeout(Duration::from_secs(1), notifications.next()).await;
                let Some(storage) = storage.upgrade() else {
                    return;
                };
                match next {
                    Ok(Some(notification)) => {
                        if let Some(stream) = storage.on_notification(&notification) {
                            due.add(stream);
                        }
                    }
                    Ok(None) => {
                        tracing::warn!("index notifications ended; resubscribing");
                        break;
                    }
                    Err(_) => {}
                }
            },
            Err(error) => {
                tracing::warn!(%error, "cannot subscribe to index notifications; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Re-reads the long-polled streams notifications made stale, a bounded number at once, and
/// once a second sweeps up to [`SWEEP_STREAMS_PER_SEC`] states not re-read for
/// [`SWEEP_INTERVAL_MS`].
async fn refresh_due_streams(storage: Weak<Storage>, due: Arc<Due>) {
    let mut sweep = tokio::time::interval(Duration::from_secs(1));
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let swept = tokio::select! {
            () = due.added.notified() => false,
            _ = sweep.tick() => true,
        };
        let Some(storage) = storage.upgrade() else {
            return;
        };
        let mut streams: Vec<(String, Arc<StreamState>)> = due
            .take()
            .into_iter()
            .filter_map(|stream| Some((stream.clone(), storage.streams.peek(&stream)?)))
            .collect();
        if swept {
            let cutoff_ms = storage.clock.now_ms().saturating_sub(SWEEP_INTERVAL_MS);
            for (stream, state) in storage
                .streams
                .refreshed_before(cutoff_ms, SWEEP_STREAMS_PER_SEC)
            {
                state.mark_stale();
                streams.push((stream, state));
            }
        }
        futures::stream::iter(streams)
            .for_each_concurrent(REFRESH_CONCURRENCY, |(stream, state)| {
                let storage = storage.clone();
                async move {
                    if let Err(error) = storage.refresh_if_stale(&stream, &state).await {
                        tracing::debug!(%stream, %error, "cannot refresh stream bounds");
                    }
                }
            })
            .await;
    }
}

async fn poll_watched_streams(storage: Weak<Storage>) {
    loop {
        let started = tokio::time::Instant::now();
        let polled = {
            let Some(storage) = storage.upgrade() else {
                return;
            };
            let watched = storage.streams.watched();
            for (stream, state) in &watched {
                if let Err(error) = storage.refresh_if_stale(stream, state).await {
                    tracing::debug!(%stream, %error, "cannot refresh stream bounds");
                }
            }
            watched.len()
        };
        tokio::time::sleep_until(started + round_period(polled)).await;
    }
}

/// How long a round of the poller over `streams` streams lasts, at least.
fn round_period(streams: usize) -> Duration {
    let bounded_ms = (streams as u64).saturating_mul(1000) / POLL_STREAMS_PER_SEC_MAX;
    Duration::from_millis(bounded_ms.max(BOUNDS_REFRESH_INTERVAL_MS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_watched_streams_are_polled_every_100_ms() {
        assert_eq!(round_period(0), Duration::from_millis(100));
        assert_eq!(round_period(100), Duration::from_millis(100));
    }

    #[test]
    fn many_watched_streams_are_polled_at_a_bounded_rate() {
        assert_eq!(round_period(1_000), Duration::from_secs(1));
        assert_eq!(round_period(10_000), Duration::from_secs(10));
    }
}
