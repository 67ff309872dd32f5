//! The engine's front door: append to and read from partition streams by offset.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::sync::watch;

use crate::cache::{subslice, FooterCache, ReadCache, RebuiltCache, WriteCache};
use crate::compacted::{Footer, ParsedTail, RebuildOptions, RebuiltGroup, FOOTER_PREFETCH_BYTES};
use crate::config::StorageConfig;
use crate::error::StorageError;
use crate::index::{BatchMeta, FileType, Index, LocatedEntry, BATCHES_PER_ENTRY_MAX};
use crate::meta::MetaStore;
use crate::stream::validate_stream_id;
use crate::wal::format;
use crate::wal::writer::{CommitListener, WalWriter};

/// Index entries fetched from the MetaStore per lookup.
const INDEX_PAGE_ENTRIES: usize = 64;

/// How stale a stream's bounds may get before a read at its end re-reads the index: other
/// brokers' appends are only seen this way. Also the period of the poll that wakes long polls
/// (one index lookup per watched stream per period).
const BOUNDS_REFRESH_INTERVAL: Duration = Duration::from_millis(100);

/// Offsets an append was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendOutcome {
    pub base_offset: u64,
    /// Exclusive.
    pub end_offset: u64,
}

/// A stream's readable range: `[log_start_offset, high_watermark)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamBounds {
    pub log_start_offset: u64,
    pub high_watermark: u64,
}

/// Whole batches as appended, starting with the batch that holds the requested offset.
#[derive(Clone, Debug)]
pub struct ReadChunk {
    /// Offset of the first record of the first batch.
    pub base_offset: u64,
    pub batches: Vec<BatchMeta>,
    pub bytes: Bytes,
}

#[derive(Clone, Debug)]
pub struct ReadResult {
    pub chunks: Vec<ReadChunk>,
    pub bounds: StreamBounds,
}

/// What the engine knows of one stream in memory: its bounds and the contiguous tail of its
/// index, so that tailing reads need no MetaStore lookup.
struct StreamState {
    high_watermark: watch::Sender<u64>,
    inner: Mutex<StreamInner>,
    /// Set once the bounds were read from the index; commits may create the state before.
    loaded: tokio::sync::OnceCell<()>,
    /// When the bounds were last re-read from the index (see [`Storage::refresh_bounds`]).
    refreshed_at: Mutex<Option<std::time::Instant>>,
}

struct StreamInner {
    log_start_offset: u64,
    /// Contiguous entries ending at or before the high watermark.
    tail: VecDeque<LocatedEntry>,
}

impl StreamState {
    fn new() -> Self {
        StreamState {
            high_watermark: watch::channel(0).0,
            inner: Mutex::new(StreamInner {
                log_start_offset: 0,
                tail: VecDeque::new(),
            }),
            loaded: tokio::sync::OnceCell::new(),
            refreshed_at: Mutex::new(None),
        }
    }

    /// Claims the next refresh if the last one is older than `interval`.
    fn claim_refresh(&self, interval: Duration) -> bool {
        let mut at = self.refreshed_at.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        if at.is_some_and(|t| now.duration_since(t) < interval) {
            return false;
        }
        *at = Some(now);
        true
    }

    /// Merges what the index says; every value only moves forward.
    fn merge_loaded(&self, last: Option<LocatedEntry>, trim: u64) {
        let high_watermark = last.as_ref().map_or(0, |l| l.end_offset).max(trim);
        {
            let mut inner = self.lock();
            inner.log_start_offset = inner.log_start_offset.max(trim);
            if let Some(last) = last {
                let covered = inner
                    .tail
                    .back()
                    .is_some_and(|t| t.end_offset >= last.end_offset);
                if !covered {
                    inner.tail.clear();
                    inner.tail.push_back(last);
                }
            }
        }
        self.high_watermark.send_if_modified(|hw| {
            let advanced = high_watermark > *hw;
            *hw = (*hw).max(high_watermark);
            advanced
        });
    }

    fn bounds(&self) -> StreamBounds {
        let log_start_offset = self.lock().log_start_offset;
        StreamBounds {
            log_start_offset,
            high_watermark: *self.high_watermark.borrow(),
        }
    }

    fn apply_commit(&self, located: &LocatedEntry, tail_entries_max: usize) {
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
        self.high_watermark.send_if_modified(|hw| {
            let advanced = located.end_offset > *hw;
            if advanced {
                *hw = located.end_offset;
            }
            advanced
        });
    }

    /// Cached entries from the one holding `offset`, if the tail covers it.
    fn cached_from(&self, offset: u64, limit: usize) -> Option<Vec<LocatedEntry>> {
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

    fn lock(&self) -> std::sync::MutexGuard<'_, StreamInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[derive(Default)]
struct Streams {
    map: Mutex<HashMap<String, Arc<StreamState>>>,
}

impl Streams {
    fn get_or_create(&self, stream: &str) -> Arc<StreamState> {
        let mut map = self.lock();
        if let Some(state) = map.get(stream) {
            return state.clone();
        }
        let state = Arc::new(StreamState::new());
        map.insert(stream.to_string(), state.clone());
        state
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<StreamState>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An append that was queued; [`PendingAppend::wait`] resolves once it is durable and indexed.
pub struct PendingAppend {
    done: tokio::sync::oneshot::Receiver<Result<crate::wal::writer::Appended, StorageError>>,
    timeout: Duration,
}

impl PendingAppend {
    pub async fn wait(self) -> Result<AppendOutcome, StorageError> {
        match tokio::time::timeout(self.timeout, self.done).await {
            Err(_) => Err(StorageError::Timeout),
            Ok(Err(_)) => Err(StorageError::ShuttingDown),
            Ok(Ok(result)) => {
                let appended = result?;
                Ok(AppendOutcome {
                    base_offset: appended.base_offset,
                    end_offset: appended.end_offset,
                })
            }
        }
    }
}

pub struct Storage {
    config: StorageConfig,
    objects: Arc<dyn ObjectStore>,
    index: Index,
    writer: Arc<WalWriter>,
    write_cache: Arc<WriteCache>,
    read_cache: ReadCache,
    footer_cache: FooterCache,
    rebuilt_cache: RebuiltCache,
    streams: Arc<Streams>,
}

impl Storage {
    /// Starts the engine on an object store and the MetaStore handle used for the index.
    pub fn open(
        config: StorageConfig,
        objects: Arc<dyn ObjectStore>,
        index_meta: Arc<dyn MetaStore>,
    ) -> Arc<Storage> {
        let index = Index::new(index_meta);
        let write_cache = Arc::new(WriteCache::new(config.write_cache_bytes));
        let streams = Arc::new(Streams::default());
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
        );
        let storage = Arc::new(Storage {
            read_cache: ReadCache::new(config.read_cache_bytes),
            footer_cache: FooterCache::new(config.compacted_footer_cache_bytes),
            rebuilt_cache: RebuiltCache::new(config.compacted_cache_bytes),
            config,
            objects,
            index,
            writer,
            write_cache,
            streams,
        });
        tokio::spawn(poll_watched_streams(Arc::downgrade(&storage)));
        storage
    }

    /// Re-reads the stream's newest index entry and trim point and merges them (bounds only
    /// move forward), so appends committed by other brokers become readable here. Long polls
    /// watching the stream wake if the high watermark advanced.
    pub async fn refresh_bounds(&self, stream: &str) -> Result<StreamBounds, StorageError> {
        let state = self.state(stream).await?;
        *state.refreshed_at.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(std::time::Instant::now());
        self.reload_bounds(stream, &state).await?;
        Ok(state.bounds())
    }

    /// Like [`Storage::refresh_bounds`], unless the bounds were re-read less than
    /// [`BOUNDS_REFRESH_INTERVAL`] ago.
    async fn refresh_if_stale(
        &self,
        stream: &str,
        state: &StreamState,
    ) -> Result<StreamBounds, StorageError> {
        if state.claim_refresh(BOUNDS_REFRESH_INTERVAL) {
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

    /// Streams someone is long-polling (a live `watch` receiver).
    fn watched_streams(&self) -> Vec<(String, Arc<StreamState>)> {
        self.streams
            .lock()
            .iter()
            .filter(|(_, s)| s.high_watermark.receiver_count() > 0)
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect()
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

    /// A receiver that changes whenever the stream's high watermark advances (for long polls).
    pub async fn watch(&self, stream: &str) -> Result<watch::Receiver<u64>, StorageError> {
        Ok(self.state(stream).await?.high_watermark.subscribe())
    }

    /// Reads whole batches starting with the one holding `offset`, until about `max_bytes`
    /// (at least one batch when any is available, as Kafka does).
    pub async fn read(
        &self,
        stream: &str,
        offset: u64,
        max_bytes: usize,
    ) -> Result<ReadResult, StorageError> {
        let state = self.state(stream).await?;
        let mut bounds = state.bounds();
        // At or past the end this broker knows: another broker may have appended since.
        if offset > bounds.high_watermark {
            bounds = self.refresh_bounds(stream).await?;
        } else {
            // At the end: appends made elsewhere; below it: a trim made elsewhere (retention,
            // DeleteRecords on another broker) must refuse reads here too, within a refresh.
            bounds = self.refresh_if_stale(stream, &state).await?;
        }
        if offset < bounds.log_start_offset || offset > bounds.high_watermark {
            return Err(StorageError::OffsetOutOfRange {
                offset,
                log_start_offset: bounds.log_start_offset,
                high_watermark: bounds.high_watermark,
            });
        }
        let mut chunks = Vec::new();
        let mut next = offset;
        let mut bytes = 0usize;
        'pages: while next < bounds.high_watermark && (chunks.is_empty() || bytes < max_bytes) {
            let cached = state.cached_from(next, INDEX_PAGE_ENTRIES);
            let from_cache = cached.is_some();
            let entries = match cached {
                Some(entries) => entries,
                None => {
                    self.index
                        .entries_from(stream, next, INDEX_PAGE_ENTRIES)
                        .await?
                }
            };
            if entries.is_empty() {
                break;
            }
            for located in entries {
                if located.base_offset > next {
                    return Err(StorageError::Corrupt(format!(
                        "index of {stream} has no entry for offset {next}"
                    )));
                }
                // A compacted entry is read a row group at a time: several chunks per entry.
                while next < located.end_offset {
                    let budget = max_bytes.saturating_sub(bytes).max(1);
                    let chunk = match self.read_entry(&located, next, budget).await {
                        // The compactor replaced this cached RAW entry and reclaimed its
                        // object: forget the cached tail and ask the index again.
                        Err(StorageError::ObjectStore(object_store::Error::NotFound {
                            ..
                        })) if from_cache => {
                            state.lock().tail.clear();
                            continue 'pages;
                        }
                        other => other?,
                    };
                    let end = chunk_end_offset(&chunk);
                    if end <= next {
                        return Err(StorageError::Corrupt(format!(
                            "{} holds no batch at offset {next}",
                            located.entry.object_key
                        )));
                    }
                    bytes += chunk.bytes.len();
                    next = end;
                    chunks.push(chunk);
                    if bytes >= max_bytes || next >= bounds.high_watermark {
                        break 'pages;
                    }
                }
            }
        }
        Ok(ReadResult { chunks, bounds })
    }

    /// The first batch whose max timestamp is `>= timestamp_ms`, for ListOffsets by time.
    pub async fn find_batch_by_timestamp(
        &self,
        stream: &str,
        timestamp_ms: i64,
    ) -> Result<Option<ReadChunk>, StorageError> {
        let mut found = None;
        self.scan_entries(stream, |located| {
            if located.entry.max_timestamp < timestamp_ms {
                return true;
            }
            let pos = located
                .entry
                .batches
                .iter()
                .position(|b| b.max_timestamp >= timestamp_ms);
            if let Some(pos) = pos {
                found = Some((located.clone(), pos));
                return false;
            }
            true
        })
        .await?;
        self.read_batch(found).await
    }

    /// The batch holding the largest timestamp (the first such batch), for ListOffsets MAX_TIMESTAMP.
    pub async fn find_batch_with_max_timestamp(
        &self,
        stream: &str,
    ) -> Result<Option<ReadChunk>, StorageError> {
        let mut best: Option<(LocatedEntry, usize, i64)> = None;
        self.scan_entries(stream, |located| {
            for (pos, batch) in located.entry.batches.iter().enumerate() {
                if best
                    .as_ref()
                    .is_none_or(|(_, _, ts)| batch.max_timestamp > *ts)
                {
                    best = Some((located.clone(), pos, batch.max_timestamp));
                }
            }
            true
        })
        .await?;
        self.read_batch(best.map(|(l, p, _)| (l, p))).await
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

    /// Moves the log start offset forward (never past the high watermark, never backward).
    pub async fn trim(
        &self,
        stream: &str,
        log_start_offset: u64,
    ) -> Result<StreamBounds, StorageError> {
        let state = self.state(stream).await?;
        let bounds = state.bounds();
        if log_start_offset > bounds.high_watermark {
            return Err(StorageError::OffsetOutOfRange {
                offset: log_start_offset,
                log_start_offset: bounds.log_start_offset,
                high_watermark: bounds.high_watermark,
            });
        }
        let trimmed = self
            .index
            .advance_trim_point(stream, log_start_offset)
            .await?;
        {
            let mut inner = state.lock();
            inner.log_start_offset = inner.log_start_offset.max(trimmed);
        }
        Ok(state.bounds())
    }

    /// Forgets a deleted stream's index. Its WAL bytes are reclaimed by the compactor.
    pub async fn delete_stream(&self, stream: &str) -> Result<(), StorageError> {
        validate_stream_id(stream)?;
        self.index.delete_entries(stream).await?;
        self.streams.lock().remove(stream);
        Ok(())
    }

    /// Bytes admitted and not yet durable.
    pub fn pending_bytes(&self) -> usize {
        self.writer.pending_bytes()
    }

    /// Writes everything buffered and completes every pending append.
    pub async fn shutdown(&self) {
        self.writer.shutdown().await;
    }

    async fn state(&self, stream: &str) -> Result<Arc<StreamState>, StorageError> {
        validate_stream_id(stream)?;
        let state = self.streams.get_or_create(stream);
        state
            .loaded
            .get_or_try_init(|| async {
                let last = self.index.last(stream).await?;
                let trim = self.index.trim_point(stream).await?;
                state.merge_loaded(last, trim);
                Ok::<(), StorageError>(())
            })
            .await?;
        Ok(state)
    }

    /// Visits the stream's entries from its log start, in order, until `visit` returns false.
    async fn scan_entries(
        &self,
        stream: &str,
        mut visit: impl FnMut(&LocatedEntry) -> bool,
    ) -> Result<(), StorageError> {
        let bounds = self.bounds(stream).await?;
        let mut next = bounds.log_start_offset;
        while next < bounds.high_watermark {
            let entries = self
                .index
                .entries_from(stream, next, INDEX_PAGE_ENTRIES)
                .await?;
            let Some(last) = entries.last() else { break };
            next = last.end_offset;
            for located in &entries {
                if !visit(located) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    async fn read_batch(
        &self,
        found: Option<(LocatedEntry, usize)>,
    ) -> Result<Option<ReadChunk>, StorageError> {
        let Some((located, pos)) = found else {
            return Ok(None);
        };
        let first_offset = located.base_offset
            + located.entry.batches[..pos]
                .iter()
                .map(|b| u64::from(b.records))
                .sum::<u64>();
        let chunk = self.read_entry(&located, first_offset, 1).await?;
        let first = chunk.batches[0];
        Ok(Some(ReadChunk {
            base_offset: chunk.base_offset,
            batches: vec![first],
            bytes: chunk.bytes.slice(..first.len as usize),
        }))
    }

    /// The entry's batches from the one holding `offset` on: all of a RAW entry's, and about
    /// `max_bytes` (at least one batch, never past a row group) of a compacted one.
    async fn read_entry(
        &self,
        located: &LocatedEntry,
        offset: u64,
        max_bytes: usize,
    ) -> Result<ReadChunk, StorageError> {
        if located.entry.file_type == FileType::Parquet {
            return self.read_compacted(located, offset, max_bytes).await;
        }
        let bytes = self.entry_bytes(located).await?;
        let mut base_offset = located.base_offset;
        let mut skip_bytes = 0usize;
        let mut first = 0usize;
        for batch in &located.entry.batches {
            if base_offset + u64::from(batch.records) > offset {
                break;
            }
            base_offset += u64::from(batch.records);
            skip_bytes += batch.len as usize;
            first += 1;
        }
        if skip_bytes > bytes.len() || first >= located.entry.batches.len() {
            return Err(StorageError::Corrupt(format!(
                "entry of {} ends before offset {offset}",
                located.entry.object_key
            )));
        }
        Ok(ReadChunk {
            base_offset,
            batches: located.entry.batches[first..].to_vec(),
            bytes: bytes.slice(skip_bytes..),
        })
    }

    /// Rebuilds Kafka batches from a compacted file, from the batch holding `offset` on, out of
    /// the one row group that holds it (fetched with a ranged GET and decoded once).
    async fn read_compacted(
        &self,
        located: &LocatedEntry,
        offset: u64,
        max_bytes: usize,
    ) -> Result<ReadChunk, StorageError> {
        let entry = &located.entry;
        let footer = self.compacted_footer(located).await?;
        let mut group = footer.first_group_from(offset);
        while let Some(g) = group.filter(|g| *g < footer.groups.len()) {
            let rebuilt = self.rebuilt_group(located, &footer, g).await?;
            if let Some(read) = rebuilt.read_from(offset, max_bytes) {
                return Ok(ReadChunk {
                    base_offset: read.base_offset,
                    batches: read.batches,
                    bytes: read.bytes,
                });
            }
            // Only a row group without offset statistics can end before `offset`.
            group = Some(g + 1);
        }
        Err(StorageError::Corrupt(format!(
            "{} holds no batch at or after offset {offset}",
            entry.object_key
        )))
    }

    /// The parsed footer of a compacted file, from the cache or from a ranged GET of its tail.
    async fn compacted_footer(&self, located: &LocatedEntry) -> Result<Arc<Footer>, StorageError> {
        let entry = &located.entry;
        if let Some(footer) = self.footer_cache.get(&entry.object_key) {
            return Ok(footer);
        }
        let path = Path::from(entry.object_key.as_str());
        let file_len = u64::from(entry.byte_len);
        let file_end = entry.byte_offset + file_len;
        let corrupt = |e: &dyn std::fmt::Display| {
            tracing::error!(object_key = %entry.object_key, error = %e, "compacted file footer failed to parse");
            StorageError::Corrupt(format!("{}: {e}", entry.object_key))
        };
        let mut tail_len = FOOTER_PREFETCH_BYTES.min(file_len);
        let footer = loop {
            let tail = self
                .objects
                .get_range(&path, file_end - tail_len..file_end)
                .await?;
            match Footer::parse(&tail, file_len).map_err(|e| corrupt(&e))? {
                ParsedTail::Footer(footer) => break Arc::new(footer),
                ParsedTail::NeedTailBytes(n) if n > tail_len => tail_len = n,
                ParsedTail::NeedTailBytes(n) => {
                    return Err(corrupt(&format!("footer wants {n} bytes, {tail_len} read")))
                }
            }
        };
        self.footer_cache
            .insert(entry.object_key.clone(), footer.clone());
        Ok(footer)
    }

    /// Row group `group` of a compacted file, rebuilt into Kafka batches, from the cache or
    /// from a ranged GET of its column chunks.
    async fn rebuilt_group(
        &self,
        located: &LocatedEntry,
        footer: &Arc<Footer>,
        group: usize,
    ) -> Result<Arc<RebuiltGroup>, StorageError> {
        let entry = &located.entry;
        let key = (entry.object_key.clone(), group);
        if let Some(rebuilt) = self.rebuilt_cache.get(&key) {
            return Ok(rebuilt);
        }
        let span = footer.groups[group];
        let range = entry.byte_offset + span.byte_start..entry.byte_offset + span.byte_end;
        let bytes = self
            .objects
            .get_range(&Path::from(entry.object_key.as_str()), range)
            .await?;
        let footer = footer.clone();
        let object_key = entry.object_key.clone();
        let rebuilt = tokio::task::spawn_blocking(move || {
            crate::compacted::decode_group(&footer, group, bytes, &RebuildOptions::default())
        })
        .await
        .map_err(|e| StorageError::Corrupt(format!("compacted reader failed: {e}")))?
        .map_err(|e| {
            tracing::error!(object_key = %object_key, group, error = %e, "compacted row group failed to read");
            StorageError::Corrupt(format!("{object_key}: {e}"))
        })?;
        let rebuilt = Arc::new(rebuilt);
        self.rebuilt_cache.insert(key, rebuilt.clone());
        Ok(rebuilt)
    }

    /// The entry's bytes from the write cache, the read cache, or a ranged GET, in that order.
    async fn entry_bytes(&self, located: &LocatedEntry) -> Result<Bytes, StorageError> {
        let entry = &located.entry;
        if entry.file_type != FileType::Raw {
            return Err(StorageError::InvalidArgument(format!(
                "{} is a compacted file; this broker has no compacted reader",
                entry.object_key
            )));
        }
        if let Some(whole) = self.write_cache.get(&entry.object_key) {
            if let Some(bytes) = subslice(&whole, entry.byte_offset, entry.byte_len) {
                return Ok(bytes);
            }
        }
        let key = (entry.object_key.clone(), entry.byte_offset, entry.byte_len);
        if let Some(bytes) = self.read_cache.get(&key) {
            return Ok(bytes);
        }
        let start = entry.byte_offset;
        let end = start + u64::from(entry.byte_len);
        let bytes = self
            .objects
            .get_range(&Path::from(entry.object_key.as_str()), start..end)
            .await?;
        format::verify_slice(&bytes, entry.byte_len, entry.crc32c).map_err(|e| {
            tracing::error!(object_key = %entry.object_key, offset = start, error = %e, "slice failed verification");
            StorageError::Corrupt(format!("{}@{start}: {e}", entry.object_key))
        })?;
        self.read_cache.insert(key, bytes.clone());
        Ok(bytes)
    }
}

/// Re-reads the bounds of every long-polled stream each [`BOUNDS_REFRESH_INTERVAL`], so a
/// fetch waiting here wakes on another broker's append. Ends when the engine is dropped.
async fn poll_watched_streams(storage: std::sync::Weak<Storage>) {
    let mut tick = tokio::time::interval(BOUNDS_REFRESH_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(storage) = storage.upgrade() else {
            return;
        };
        for (stream, state) in storage.watched_streams() {
            if let Err(error) = storage.refresh_if_stale(&stream, &state).await {
                tracing::debug!(%stream, %error, "cannot refresh stream bounds");
            }
        }
    }
}

/// One past the last offset of a chunk's batches.
fn chunk_end_offset(chunk: &ReadChunk) -> u64 {
    chunk.base_offset
        + chunk
            .batches
            .iter()
            .map(|b| u64::from(b.records))
            .sum::<u64>()
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
