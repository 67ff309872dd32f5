//! The WAL writer: admits appends by bytes, packs them by stream into segments, writes each
//! segment as one object, then commits one index entry per stream in the order segments were
//! cut. An append completes only after its object PUT and its stream's index commit succeeded.
//!
//! Three tasks, as in the seed system: the caller's task admits and buffers; the flusher cuts
//! segments and starts their PUTs (several in flight); the committer awaits PUTs in cut order and
//! commits index entries, chaining commits of the same stream so their offsets follow cut order.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::sync::{mpsc, oneshot, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use crate::clock::Clock;
use crate::config::StorageConfig;
use crate::error::StorageError;
use crate::index::{BatchMeta, FileType, Index, IndexEntry, LocatedEntry};
use crate::wal::budget::{PutBudget, Trigger};
use crate::wal::format::{self, SliceEntry, SliceSpec};
use crate::wal::parts::{ObjectParts, WriteCache};
use crate::wal::stages;

/// What an append learns once durable: the offsets it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    pub base_offset: u64,
    /// Exclusive.
    pub end_offset: u64,
    /// When its index commit succeeded (where the broker's `response` stage starts).
    pub durable_at: Instant,
}

/// Called after each successful index commit, in commit order per stream, before the appends
/// in that entry are acknowledged.
pub type CommitListener = Arc<dyn Fn(&str, &LocatedEntry) + Send + Sync>;

/// Bytes of one admitted append; released when the append completes, however it completes.
struct Admission {
    bytes: usize,
    pending: Arc<AtomicUsize>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.pending.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

struct PendingAppend {
    payload: Bytes,
    batches: Vec<BatchMeta>,
    done: oneshot::Sender<Result<Appended, StorageError>>,
    /// When it was admitted: its `queue` stage ends when its segment is cut.
    admitted: Instant,
    _admission: Admission,
}

impl PendingAppend {
    fn records(&self) -> u64 {
        BatchMeta::records_in(&self.batches)
    }
}

#[derive(Default)]
struct Buffer {
    /// Streams in order of first arrival since the last cut.
    order: Vec<Arc<str>>,
    streams: HashMap<Arc<str>, Vec<PendingAppend>>,
    bytes: usize,
}

/// A stream's appends inside one segment.
struct SegmentSlice {
    stream: Arc<str>,
    appends: Vec<PendingAppend>,
}

struct CutSegment {
    object_key: String,
    slices: Vec<SegmentSlice>,
    put: JoinHandle<Result<Written, StorageError>>,
}

/// The encoded object and its directory, once the PUT succeeded, and when it did.
type Written = (ObjectParts, Vec<SliceEntry>, Instant);

pub struct WalWriter {
    config: StorageConfig,
    /// Stamps append times and WAL object keys.
    clock: Arc<dyn Clock>,
    /// Distinguishes objects cut in the same millisecond.
    object_ids: ObjectIds,
    buffer: Mutex<Buffer>,
    pending_bytes: Arc<AtomicUsize>,
    flush_now: Arc<Notify>,
    closed: AtomicBool,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl WalWriter {
    pub fn start(
        config: StorageConfig,
        objects: Arc<dyn ObjectStore>,
        index: Index,
        write_cache: Arc<WriteCache>,
        on_commit: CommitListener,
        clock: Arc<dyn Clock>,
    ) -> Arc<WalWriter> {
        let writer = Arc::new(WalWriter {
            buffer: Mutex::new(Buffer::default()),
            pending_bytes: Arc::new(AtomicUsize::new(0)),
            flush_now: Arc::new(Notify::new()),
            closed: AtomicBool::new(false),
            tasks: Mutex::new(Vec::new()),
            clock: clock.clone(),
            object_ids: ObjectIds::new(config.wal_object_id_seed),
            config,
        });
        // Bounded: when commits fall behind, the flusher waits, the buffer fills, and admission
        // starts refusing appends.
        let (segments_tx, segments_rx) = mpsc::channel(writer.config.max_puts_in_flight.max(1));
        let flusher = tokio::spawn(flush_loop(writer.clone(), objects, segments_tx));
        let committer = tokio::spawn(commit_loop(
            segments_rx,
            index,
            write_cache,
            on_commit,
            clock,
        ));
        writer.lock_tasks().extend([flusher, committer]);
        writer
    }

    /// Admits an append and returns a receiver for its outcome. Refuses at once when the
    /// pending bytes would pass `max_pending_bytes`.
    pub fn append(
        &self,
        stream: &str,
        payload: Bytes,
        batches: Vec<BatchMeta>,
    ) -> Result<oneshot::Receiver<Result<Appended, StorageError>>, StorageError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StorageError::ShuttingDown);
        }
        let bytes = payload.len();
        let before = self.pending_bytes.fetch_add(bytes, Ordering::AcqRel);
        let admission = Admission {
            bytes,
            pending: self.pending_bytes.clone(),
        };
        if before + bytes > self.config.max_pending_bytes {
            return Err(StorageError::Overloaded {
                pending_bytes: before,
                max_pending_bytes: self.config.max_pending_bytes,
            });
        }
        let (done, rx) = oneshot::channel();
        let wake = {
            let mut buffer = self.lock_buffer();
            let was_empty = buffer.order.is_empty();
            let key: Arc<str> = Arc::from(stream);
            if !buffer.streams.contains_key(stream) {
                buffer.order.push(key.clone());
            }
            buffer.streams.entry(key).or_default().push(PendingAppend {
                payload,
                batches,
                done,
                admitted: Instant::now(),
                _admission: admission,
            });
            buffer.bytes += bytes;
            // The flusher sleeps while the buffer is empty, and while the budget holds a
            // partial segment back; a full one goes out at once.
            was_empty || self.size_due(&buffer)
        };
        if wake {
            self.flush_now.notify_one();
        }
        Ok(rx)
    }

    /// A segment's worth (big objects at high rates) or `write_buffer_flush_size` is pending.
    fn size_due(&self, buffer: &Buffer) -> bool {
        buffer.bytes >= self.config.write_buffer_flush_size
            || buffer.bytes >= self.config.write_buffer_size
    }

    /// Bytes admitted and not yet completed.
    pub fn pending_bytes(&self) -> usize {
        self.pending_bytes.load(Ordering::Acquire)
    }

    /// Stops taking appends, writes what is buffered, and waits until every admitted append
    /// has completed (acknowledged or failed).
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::Release);
        self.flush_now.notify_one();
        let tasks: Vec<_> = self.lock_tasks().drain(..).collect();
        for task in tasks {
            if let Err(e) = task.await {
                tracing::error!(error = %e, "wal writer task failed");
            }
        }
    }

    /// Takes everything buffered and packs it into segments.
    fn cut(&self) -> Vec<Vec<SegmentSlice>> {
        let buffer = std::mem::take(&mut *self.lock_buffer());
        let mut segments = pack(
            buffer,
            self.config.write_buffer_size,
            self.config.write_buffer_max_streams,
        );
        merge_small_tail(
            &mut segments,
            self.config.write_buffer_size,
            self.config.write_buffer_max_streams,
        );
        segments
    }

    fn lock_buffer(&self) -> std::sync::MutexGuard<'_, Buffer> {
        self.buffer.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_tasks(&self) -> std::sync::MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Groups buffered appends into segments of at most `segment_bytes_max` bytes (one append may
/// exceed it alone) and `streams_max` streams, keeping each stream's appends in arrival order.
fn pack(
    mut buffer: Buffer,
    segment_bytes_max: usize,
    streams_max: usize,
) -> Vec<Vec<SegmentSlice>> {
    let streams_max = streams_max.max(1);
    let mut segments = Vec::new();
    let mut current: Vec<SegmentSlice> = Vec::new();
    let mut current_bytes = 0usize;
    for stream in buffer.order.drain(..) {
        let Some(appends) = buffer.streams.remove(&stream) else {
            continue;
        };
        let mut slice = SegmentSlice {
            stream: stream.clone(),
            appends: Vec::new(),
        };
        for append in appends {
            let len = append.payload.len();
            let full_by_bytes = current_bytes + len > segment_bytes_max;
            let full_by_streams = slice.appends.is_empty() && current.len() >= streams_max;
            if (full_by_bytes || full_by_streams)
                && (current_bytes > 0 || !slice.appends.is_empty())
            {
                if !slice.appends.is_empty() {
                    current.push(std::mem::replace(
                        &mut slice,
                        SegmentSlice {
                            stream: stream.clone(),
                            appends: Vec::new(),
                        },
                    ));
                }
                segments.push(std::mem::take(&mut current));
                current_bytes = 0;
            }
            current_bytes += len;
            slice.appends.push(append);
        }
        if !slice.appends.is_empty() {
            current.push(slice);
        }
    }
    if !current.is_empty() {
        segments.push(current);
    }
    segments
}

/// Folds a last segment smaller than half a segment into the one before it. A flush triggered
/// at `write_buffer_size` finds a full segment plus whatever arrived with the last append; cut
/// apart, that remainder became a small object of its own (about one PUT in three at high
/// rates). Holding it back for the next flush instead stalls producers whose in-flight window
/// is smaller than a segment, so it goes out now, in the same object, which may then reach
/// 1.5 times `write_buffer_size`.
fn merge_small_tail(
    segments: &mut Vec<Vec<SegmentSlice>>,
    segment_bytes_max: usize,
    streams_max: usize,
) {
    let n = segments.len();
    if n < 2 {
        return;
    }
    let tail_bytes: usize = segments[n - 1]
        .iter()
        .flat_map(|s| &s.appends)
        .map(|a| a.payload.len())
        .sum();
    if tail_bytes * 2 > segment_bytes_max {
        return;
    }
    // `pack` splits a stream only at a segment boundary: only there can both hold it.
    let shared = segments[n - 2]
        .last()
        .zip(segments[n - 1].first())
        .is_some_and(|(a, b)| a.stream == b.stream);
    if segments[n - 2].len() + segments[n - 1].len() - usize::from(shared) > streams_max.max(1) {
        return;
    }
    let Some(tail) = segments.pop() else { return };
    let Some(previous) = segments.last_mut() else {
        return;
    };
    let mut tail = tail.into_iter();
    if shared {
        if let (Some(last), Some(first)) = (previous.last_mut(), tail.next()) {
            last.appends.extend(first.appends);
        }
    }
    previous.extend(tail);
}

/// Cuts the buffer when a PUT slot is free and either a segment's worth is pending or the PUT
/// budget allows a smaller object; starts one PUT per segment.
async fn flush_loop(
    writer: Arc<WalWriter>,
    objects: Arc<dyn ObjectStore>,
    segments: mpsc::Sender<CutSegment>,
) {
    let puts_in_flight = Arc::new(Semaphore::new(writer.config.max_puts_in_flight.max(1)));
    let mut budget = PutBudget::new(writer.config.write_buffer_puts_per_sec_max);
    // Without a budget (local stores) partial objects go out back to back: the next one
    // starts once the previous one's PUT is done, so what arrives meanwhile joins it (a group
    // commit) instead of each append becoming an object of its own.
    let partial = writer
        .config
        .write_buffer_puts_per_sec_max
        .is_none()
        .then(|| Arc::new(Semaphore::new(1)));
    loop {
        // Room in the upload pipeline first: while it is full, appends keep filling the buffer.
        let Ok(permit) = puts_in_flight.clone().acquire_owned().await else {
            return;
        };
        let (trigger, mut partial_permit) = next_trigger(&writer, &budget, partial.as_ref()).await;
        let cut = writer.cut();
        budget.spend(tokio::time::Instant::now(), trigger, cut.len());
        let last = cut.len().saturating_sub(1);
        let mut permit = Some(permit);
        for (i, slices) in cut.into_iter().enumerate() {
            let slot = match permit.take() {
                Some(permit) => permit,
                None => match puts_in_flight.clone().acquire_owned().await {
                    Ok(permit) => permit,
                    Err(_) => return,
                },
            };
            // The cut's last object is the partial one.
            let partial = if i == last {
                partial_permit.take()
            } else {
                None
            };
            let segment = start_put(&writer, &objects, slices, (slot, partial));
            if segments.send(segment).await.is_err() {
                return;
            }
        }
        if trigger == Trigger::Closing {
            return;
        }
    }
}

/// Waits until the buffer should be cut: at once when closing or a segment's worth is
/// pending, else once something is pending and the budget allows a PUT (without a budget,
/// once the previous partial object's PUT is done: `partial`'s permit, held by that PUT).
async fn next_trigger(
    writer: &WalWriter,
    budget: &PutBudget,
    partial: Option<&Arc<Semaphore>>,
) -> (Trigger, Option<OwnedSemaphorePermit>) {
    loop {
        if writer.closed.load(Ordering::Acquire) {
            return (Trigger::Closing, None);
        }
        let (empty, size_due) = {
            let buffer = writer.lock_buffer();
            (buffer.order.is_empty(), writer.size_due(&buffer))
        };
        if size_due {
            return (Trigger::Size, None);
        }
        if empty {
            writer.flush_now.notified().await;
            continue;
        }
        let wait = budget.wait(tokio::time::Instant::now());
        if wait.is_zero() {
            let Some(partial) = partial else {
                return (Trigger::Budget, None);
            };
            tokio::select! {
                permit = partial.clone().acquire_owned() => return (Trigger::Budget, permit.ok()),
                () = writer.flush_now.notified() => continue,
            }
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = writer.flush_now.notified() => {}
        }
    }
}

/// Encodes a segment and spawns its PUT, which holds `permit` (its pipeline slot, and the
/// partial-object turn if it has it) until it completes.
fn start_put(
    writer: &WalWriter,
    objects: &Arc<dyn ObjectStore>,
    slices: Vec<SegmentSlice>,
    permit: (OwnedSemaphorePermit, Option<OwnedSemaphorePermit>),
) -> CutSegment {
    let cut_at = Instant::now();
    for append in slices.iter().flat_map(|s| &s.appends) {
        stages::observe("queue", cut_at.saturating_duration_since(append.admitted));
    }
    let object_key = object_key(
        &writer.config.wal_prefix,
        writer.clock.now_ms(),
        &writer.object_ids.next(),
    );
    let encoded = encode(&slices);
    let put = {
        let objects = objects.clone();
        let object_key = object_key.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let (object, directory) = encoded?;
            let started = std::time::Instant::now();
            objects
                .put(&Path::from(object_key.as_str()), object.payload())
                .await?;
            let put_at = Instant::now();
            stages::observe("put", put_at.saturating_duration_since(cut_at));
            tracing::debug!(
                object_key = %object_key,
                bytes = object.len(),
                elapsed_ms = crate::clock::duration_ms(started.elapsed()),
                "wal object written"
            );
            Ok((object, directory, put_at))
        })
    };
    CutSegment {
        object_key,
        slices,
        put,
    }
}

fn encode(slices: &[SegmentSlice]) -> Result<(ObjectParts, Vec<SliceEntry>), StorageError> {
    let payloads: Vec<Vec<Bytes>> = slices
        .iter()
        .map(|s| s.appends.iter().map(|a| a.payload.clone()).collect())
        .collect();
    let specs: Vec<SliceSpec<'_>> = slices
        .iter()
        .zip(&payloads)
        .map(|(slice, payload)| {
            let batches = slice.appends.iter().flat_map(|a| a.batches.iter());
            SliceSpec {
                stream: &slice.stream,
                payload,
                // Informational counts (nothing reads them back): an object has far fewer than
                // u32::MAX batches, but records of compressed batches could in principle exceed
                // it; both saturate rather than wrap.
                batch_count: saturate_u32(slice.appends.iter().map(|a| a.batches.len() as u64)),
                record_count: saturate_u32(slice.appends.iter().map(PendingAppend::records)),
                min_timestamp: batches.clone().map(|b| b.max_timestamp).min().unwrap_or(-1),
                max_timestamp: batches.map(|b| b.max_timestamp).max().unwrap_or(-1),
            }
        })
        .collect();
    format::encode_object_parts(&specs)
        .map_err(|e| StorageError::Corrupt(format!("encoding wal object: {e}")))
}

async fn commit_loop(
    mut segments: mpsc::Receiver<CutSegment>,
    index: Index,
    write_cache: Arc<WriteCache>,
    on_commit: CommitListener,
    clock: Arc<dyn Clock>,
) {
    // The last commit started per stream; the next commit of that stream waits for it.
    let mut in_flight: HashMap<Arc<str>, JoinHandle<()>> = HashMap::new();
    while let Some(segment) = segments.recv().await {
        let result = match segment.put.await {
            Ok(result) => result,
            Err(e) => Err(StorageError::WriteFailed(format!("put task failed: {e}"))),
        };
        let (object, directory, put_at) = match result {
            Ok(ok) => ok,
            Err(e) => {
                tracing::warn!(object_key = %segment.object_key, error = %e, "wal object write failed");
                let message = e.to_string();
                for slice in segment.slices {
                    for append in slice.appends {
                        let _ = append
                            .done
                            .send(Err(StorageError::WriteFailed(message.clone())));
                    }
                }
                continue;
            }
        };
        // Tailing readers find the data in memory as soon as the index names it.
        write_cache.insert(segment.object_key.clone(), Arc::new(object));
        let write_time_ms = clock.now_ms();
        for (slice, placed) in segment.slices.into_iter().zip(directory) {
            debug_assert_eq!(&*slice.stream, placed.stream.as_str());
            let previous = in_flight.remove(&slice.stream);
            let entry = IndexEntry {
                file_type: FileType::Raw,
                object_key: segment.object_key.clone(),
                byte_offset: placed.offset,
                byte_len: placed.len,
                crc32c: placed.crc32c,
                min_timestamp: placed.min_timestamp,
                max_timestamp: placed.max_timestamp,
                write_time_ms,
                batches: slice
                    .appends
                    .iter()
                    .flat_map(|a| a.batches.iter().copied())
                    .collect(),
            };
            let index = index.clone();
            let on_commit = on_commit.clone();
            let stream = slice.stream.clone();
            let task = tokio::spawn(async move {
                if let Some(previous) = previous {
                    let _ = previous.await;
                }
                commit_slice(&index, &stream, entry, slice.appends, &on_commit).await;
                stages::observe("commit", put_at.elapsed());
            });
            in_flight.insert(slice.stream, task);
        }
        in_flight.retain(|_, task| !task.is_finished());
    }
    for (_, task) in in_flight {
        let _ = task.await;
    }
}

async fn commit_slice(
    index: &Index,
    stream: &str,
    entry: IndexEntry,
    appends: Vec<PendingAppend>,
    on_commit: &CommitListener,
) {
    match index.commit(stream, &entry).await {
        Ok(located) => {
            on_commit(stream, &located);
            let durable_at = Instant::now();
            let mut base_offset = located.base_offset;
            for append in appends {
                let end_offset = base_offset + append.records();
                let _ = append.done.send(Ok(Appended {
                    base_offset,
                    end_offset,
                    durable_at,
                }));
                base_offset = end_offset;
            }
            debug_assert_eq!(base_offset, located.end_offset);
        }
        Err(e) => {
            tracing::warn!(stream, error = %e, "index commit failed");
            for append in appends {
                let _ = append.done.send(Err(e.fan_out()));
            }
        }
    }
}

fn saturate_u32(counts: impl Iterator<Item = u64>) -> u32 {
    u32::try_from(counts.fold(0, u64::saturating_add)).unwrap_or(u32::MAX)
}

/// `<prefix>/YYYY-MM-DD/HH/<unix_ms>-<uuid>.wal`: the time prefix is for people and listing
/// tools; deletion never trusts a listing.
fn object_key(prefix: &str, ms: u64, id: &str) -> String {
    let secs = ms / 1000;
    // At most u64::MAX / 86_400_000, far inside an i64.
    let (year, month, day) = civil_from_days(i64::try_from(secs / 86_400).unwrap_or(i64::MAX));
    let hour = (secs % 86_400) / 3600;
    format!("{prefix}/{year:04}-{month:02}-{day:02}/{hour:02}/{ms:013}-{id}.wal")
}

/// The unique part of WAL object keys: a random UUID per object, or, for a reproducible
/// simulation, a seed and a counter (a reopened engine must be given another seed).
struct ObjectIds {
    seed: Option<u64>,
    next: AtomicUsize,
}

impl ObjectIds {
    fn new(seed: Option<u64>) -> ObjectIds {
        ObjectIds {
            seed,
            next: AtomicUsize::new(0),
        }
    }

    fn next(&self) -> String {
        match self.seed {
            None => uuid::Uuid::new_v4().simple().to_string(),
            Some(seed) => {
                let n = self.next.fetch_add(1, Ordering::Relaxed);
                format!("{seed:016x}{n:016x}")
            }
        }
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's algorithm).
// The algorithm keeps the day in 1..=31 and the month in 1..=12: their casts lose nothing.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(len: usize) -> PendingAppend {
        let pending = Arc::new(AtomicUsize::new(len));
        PendingAppend {
            payload: Bytes::from(vec![0u8; len]),
            batches: vec![BatchMeta {
                len: u32::try_from(len).unwrap(),
                records: 1,
                max_timestamp: 0,
                producer: None,
            }],
            done: oneshot::channel().0,
            admitted: Instant::now(),
            _admission: Admission {
                bytes: len,
                pending,
            },
        }
    }

    fn buffer(appends: Vec<(&str, usize)>) -> Buffer {
        let mut buffer = Buffer::default();
        for (stream, len) in appends {
            let key: Arc<str> = Arc::from(stream);
            if !buffer.streams.contains_key(stream) {
                buffer.order.push(key.clone());
            }
            buffer.streams.entry(key).or_default().push(append(len));
            buffer.bytes += len;
        }
        buffer
    }

    fn shape(segments: &[Vec<SegmentSlice>]) -> Vec<Vec<(String, usize)>> {
        segments
            .iter()
            .map(|s| {
                s.iter()
                    .map(|slice| (slice.stream.to_string(), slice.appends.len()))
                    .collect()
            })
            .collect()
    }

    fn merged(appends: Vec<(&str, usize)>) -> Vec<Vec<(String, usize)>> {
        let mut segments = pack(buffer(appends), 100, 3);
        merge_small_tail(&mut segments, 100, 3);
        shape(&segments)
    }

    #[test]
    fn directory_counts_saturate_rather_than_wrap() {
        assert_eq!(saturate_u32([2, 3].into_iter()), 5);
        assert_eq!(saturate_u32([u64::from(u32::MAX), 1].into_iter()), u32::MAX);
        assert_eq!(saturate_u32([u64::MAX, u64::MAX].into_iter()), u32::MAX);
    }

    #[test]
    fn a_small_remainder_joins_the_segment_before_it() {
        assert_eq!(
            merged(vec![("a", 90), ("b", 20)]),
            vec![vec![("a".to_string(), 1), ("b".to_string(), 1)]]
        );
        // The stream split at the boundary stays one slice, its appends in order.
        assert_eq!(
            merged(vec![("a", 90), ("a", 20)]),
            vec![vec![("a".to_string(), 2)]]
        );
    }

    #[test]
    fn a_remainder_of_half_a_segment_or_past_the_stream_limit_stays_apart() {
        assert_eq!(merged(vec![("a", 90), ("b", 60)]).len(), 2);
        assert_eq!(
            merged(vec![("a", 30), ("b", 30), ("c", 30), ("d", 20)]).len(),
            2,
            "four streams exceed the limit of three"
        );
    }

    #[test]
    fn packing_respects_stream_limit() {
        let b = buffer(vec![("a", 1), ("b", 1), ("c", 1), ("a", 1)]);
        let segments = pack(b, 100, 2);
        assert_eq!(
            shape(&segments),
            vec![
                vec![("a".into(), 2), ("b".into(), 1)],
                vec![("c".into(), 1)]
            ]
        );
    }

    #[test]
    fn packing_respects_byte_limit_and_keeps_stream_order() {
        let b = buffer(vec![("a", 6), ("a", 6), ("b", 3)]);
        let segments = pack(b, 10, 8);
        assert_eq!(
            shape(&segments),
            vec![
                vec![("a".into(), 1)],
                vec![("a".into(), 1), ("b".into(), 1)]
            ]
        );
    }

    #[test]
    fn an_append_bigger_than_a_segment_gets_its_own_object() {
        let b = buffer(vec![("a", 2), ("b", 50), ("c", 2)]);
        let segments = pack(b, 10, 8);
        assert_eq!(
            shape(&segments),
            vec![
                vec![("a".into(), 1)],
                vec![("b".into(), 1)],
                vec![("c".into(), 1)]
            ]
        );
    }

    #[test]
    fn admission_is_released_when_an_append_is_dropped() {
        let pending = Arc::new(AtomicUsize::new(10));
        drop(Admission {
            bytes: 10,
            pending: pending.clone(),
        });
        assert_eq!(pending.load(Ordering::Acquire), 0);
    }

    #[test]
    fn civil_dates_are_right() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_786), (2026, 11, 29));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
