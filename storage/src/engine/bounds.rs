//! A stream's bounds as the index has them: appends committed by other brokers, and trims
//! made elsewhere, become visible here when the bounds are re-read.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::state::StreamState;
use super::{Storage, StreamBounds};
use crate::error::StorageError;

/// How stale a stream's bounds may get before a read at its end re-reads the index: other
/// brokers' appends are only seen this way. Also the period of the poll that wakes long polls
/// (one index lookup per watched stream per period).
const BOUNDS_REFRESH_INTERVAL_MS: u64 = 100;

impl Storage {
    /// Re-reads the stream's newest index entry and trim point and merges them (bounds only
    /// move forward), so appends committed by other brokers become readable here. Long polls
    /// watching the stream wake if the high watermark advanced.
    pub async fn refresh_bounds(&self, stream: &str) -> Result<StreamBounds, StorageError> {
        let state = self.state(stream).await?;
        state.mark_refreshed(self.clock.now_ms());
        self.reload_bounds(stream, &state).await?;
        Ok(state.bounds())
    }

    /// Like [`Storage::refresh_bounds`], unless the bounds were re-read less than
    /// [`BOUNDS_REFRESH_INTERVAL_MS`] ago.
    pub(super) async fn refresh_if_stale(
        &self,
        stream: &str,
        state: &StreamState,
    ) -> Result<StreamBounds, StorageError> {
        if state.claim_refresh(self.clock.now_ms(), BOUNDS_REFRESH_INTERVAL_MS) {
            self.reload_bounds(stream, state).await?;
        }
        Ok(state.bounds())
    }

    async fn reload_bounds(&self, stream: &str, state: &StreamState) -> Result<(), StorageError> {
        let last = self.index.last(stream).await?;
        let trim = self.index.trim_point(stream).await?;
        state.merge_loaded(last, trim);
        Ok(())
    }

    /// Starts the task that re-reads the bounds of every long-polled stream every
    /// [`BOUNDS_REFRESH_INTERVAL_MS`], so a fetch waiting here wakes on another broker's
    /// append. It ends when the engine is dropped.
    pub fn spawn_bounds_poller(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(poll_watched_streams(Arc::downgrade(self)))
    }
}

/// The poller re-reads at most this many streams' bounds per second: with many watched
/// streams a round takes `streams / this` seconds instead of 100 ms, so idle long polls on
/// thousands of partitions cost a bounded share of the MetaStore rather than all of it. Only
/// wake-ups by other brokers' appends wait longer; long polls still end at their
/// `max_wait_ms`, and a read at the end re-reads stale bounds itself.
const POLL_STREAMS_PER_SEC_MAX: u64 = 1000;

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
