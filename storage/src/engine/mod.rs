//! The engine's front door: append to and read from partition streams by offset.
//!
//! - [`types`]: what callers get back; [`state`] and [`streams`]: what is known of each stream
//!   in memory, bounded;
//! - appends go to the WAL writer (`crate::wal::writer`), which calls back on every commit;
//! - [`bounds`]: re-reading a stream's bounds from the index, and the poller that wakes long
//!   polls on other brokers' appends;
//! - [`read`]: reads by offset over RAW entries; [`compacted`]: over PARQUET entries;
//! - [`timestamps`]: ListOffsets by time; [`trim`]: log start and stream deletion.

mod bounds;
mod compacted;
mod read;
mod read_ahead;
mod row_groups;
mod size;
mod state;
mod streams;
mod timestamps;
mod trim;
mod types;
mod wal_reads;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::ObjectStore;

pub use types::{AppendOutcome, PendingAppend, ReadChunk, ReadResult, StreamBounds};

use crate::cache::FooterCache;
use crate::clock::{self, Clock};
use crate::config::StorageConfig;
use crate::error::StorageError;
use crate::index::{BatchMeta, Index, LocatedEntry, BATCHES_PER_ENTRY_MAX};
use crate::stream::validate_stream_id;
use crate::wal::parts::WriteCache;
use crate::wal::writer::{CommitListener, WalWriter};
use metastore::MetaStore;
use state::StreamState;
use streams::Streams;

/// Index entries fetched from the MetaStore per lookup.
const INDEX_PAGE_ENTRIES: usize = 64;

pub struct Storage {
    config: StorageConfig,
    clock: Arc<dyn Clock>,
    objects: Arc<dyn ObjectStore>,
    index: Index,
    writer: Arc<WalWriter>,
    write_cache: Arc<WriteCache>,
    wal_reads: wal_reads::WalReads,
    footer_cache: FooterCache,
    row_groups: row_groups::RowGroups,
    streams: Arc<Streams>,
    /// Set once [`Storage::spawn_bounds_follower`] runs: bounds are then re-read when a
    /// notification says the index changed, not on a timer.
    follows_index: std::sync::atomic::AtomicBool,
}

impl Storage {
    /// Starts the engine on an object store and the MetaStore handle used for the index, on
    /// the system clock. Other brokers' appends wake long polls here only once
    /// [`Storage::spawn_bounds_follower`] (or [`Storage::spawn_bounds_poller`]) runs.
    pub fn open(
        config: StorageConfig,
        objects: Arc<dyn ObjectStore>,
        index_meta: Arc<dyn MetaStore>,
    ) -> Arc<Storage> {
        Storage::open_with_clock(config, objects, index_meta, clock::system())
    }

    /// [`Storage::open`] with the clock that stamps append times and paces bounds refreshes.
    pub fn open_with_clock(
        config: StorageConfig,
        objects: Arc<dyn ObjectStore>,
        index_meta: Arc<dyn MetaStore>,
        clock: Arc<dyn Clock>,
    ) -> Arc<Storage> {
        let index = Index::new(index_meta);
        let write_cache = Arc::new(WriteCache::new("write", config.write_cache_bytes));
        let streams = Arc::new(Streams::new(config.stream_states_max));
        let on_commit: CommitListener = {
            let streams = streams.clone();
            let tail_entries_max = config.index_cache_entries_per_stream;
            Arc::new(move |stream: &str, located: &LocatedEntry| {
                streams
                    .get_or_create(stream)
                    .apply_commit(located, tail_entries_max);
            })
        };
        let writer = WalWriter::start(
            config.clone(),
            objects.clone(),
            index.clone(),
            write_cache.clone(),
            on_commit,
            clock.clone(),
        );
        Arc::new(Storage {
            wal_reads: wal_reads::WalReads::new(&config, objects.clone()),
            footer_cache: FooterCache::new("footer", config.compacted_footer_cache_bytes),
            row_groups: row_groups::RowGroups::new(&config, objects.clone()),
            config,
            clock,
            objects,
            index,
            writer,
            write_cache,
            streams,
            follows_index: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Appends one payload of whole batches to a stream; completes once durable and indexed.
    pub async fn append(
        &self,
        stream: &str,
        payload: Bytes,
        batches: Vec<BatchMeta>,
    ) -> Result<AppendOutcome, StorageError> {
        self.submit(stream, payload, batches).await?.wait().await
    }

    /// Queues an append and returns once it is queued: appends to one stream submitted one
    /// after another get offsets in that order, while their completions can be awaited
    /// concurrently ([`PendingAppend::wait`]). Refused at once when `max_pending_bytes` is reached.
    pub async fn submit(
        &self,
        stream: &str,
        payload: Bytes,
        batches: Vec<BatchMeta>,
    ) -> Result<PendingAppend, StorageError> {
        validate_stream_id(stream)?;
        validate_batches(&payload, &batches)?;
        self.state(stream).await?;
        let done = self.writer.append(stream, payload, batches)?;
        Ok(PendingAppend {
            done,
            timeout: Duration::from_millis(self.config.add_entry_timeout_ms),
        })
    }

    /// The stream's log start offset and high watermark.
    pub async fn bounds(&self, stream: &str) -> Result<StreamBounds, StorageError> {
        let state = self.state(stream).await?;
        self.refresh_if_stale(stream, &state).await
    }

    /// The stream's bounds as this engine knows them, re-read only on first use: its own
    /// appends and trims at once, other brokers' once a read or the poller has refreshed them.
    /// For answers that may lag, such as the log start in a Produce response.
    pub async fn cached_bounds(&self, stream: &str) -> Result<StreamBounds, StorageError> {
        Ok(self.state(stream).await?.bounds())
    }

    /// A receiver that changes whenever the stream's high watermark advances (for long polls).
    pub async fn watch(
        &self,
        stream: &str,
    ) -> Result<tokio::sync::watch::Receiver<u64>, StorageError> {
        Ok(self.state(stream).await?.high_watermark.subscribe())
    }

    /// Up to `limit` index entries in offset order, from the one holding `offset` (for callers
    /// that rebuild state from the log's batch metadata).
    pub async fn entries_from(
        &self,
        stream: &str,
        offset: u64,
        limit: usize,
    ) -> Result<Vec<LocatedEntry>, StorageError> {
        validate_stream_id(stream)?;
        self.index.entries_from(stream, offset, limit).await
    }

    /// Bytes admitted and not yet durable.
    pub fn pending_bytes(&self) -> usize {
        self.writer.pending_bytes()
    }

    /// Writes everything buffered and completes every pending append.
    pub async fn shutdown(&self) {
        self.writer.shutdown().await;
    }

    /// The stream's state, its bounds read from the index on first use.
    async fn state(&self, stream: &str) -> Result<Arc<StreamState>, StorageError> {
        validate_stream_id(stream)?;
        let state = self.streams.get_or_create(stream);
        state
            .loaded
            .get_or_try_init(|| async {
                let last = self.index.last(stream).await?;
                let trim = self.index.trim_point(stream).await?;
                state.merge_loaded(last, trim);
                // Just read: a read at the end right after need not read them again.
                state.mark_refreshed(self.clock.now_ms());
                Ok::<(), StorageError>(())
            })
            .await?;
        Ok(state)
    }
}

fn validate_batches(payload: &Bytes, batches: &[BatchMeta]) -> Result<(), StorageError> {
    if payload.is_empty() || batches.is_empty() || batches.len() > BATCHES_PER_ENTRY_MAX {
        return Err(StorageError::InvalidArgument(format!(
            "an append needs 1..={BATCHES_PER_ENTRY_MAX} batches and a payload"
        )));
    }
    let total: u64 = batches.iter().map(|b| u64::from(b.len)).sum();
    if total != payload.len() as u64 || batches.iter().any(|b| b.records == 0 || b.len == 0) {
        return Err(StorageError::InvalidArgument(
            "batch lengths must tile the payload".into(),
        ));
    }
    Ok(())
}
