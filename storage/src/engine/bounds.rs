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

async fn poll_watched_streams(storage: Weak<Storage>) {
    let mut tick = tokio::time::interval(Duration::from_millis(BOUNDS_REFRESH_INTERVAL_MS));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(storage) = storage.upgrade() else {
            return;
        };
        for (stream, state) in storage.streams.watched() {
            if let Err(error) = storage.refresh_if_stale(&stream, &state).await {
                tracing::debug!(%stream, %error, "cannot refresh stream bounds");
            }
        }
    }
}
