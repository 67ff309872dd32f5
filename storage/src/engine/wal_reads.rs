//! Slices of WAL objects read back from the object store, shared across partitions and read
//! ahead of a sequential reader.
//!
//! A WAL object packs slices of many streams. A slice smaller than `wal_read_block_bytes` is
//! read as the aligned block (or the two) of its object holding it: one GET then serves every
//! stream whose slices lie in that block, so a consumer of a thousand partitions pays about one
//! GET per block, not one per partition per object. A slice of a block or more is read alone.
//! Every range is fetched once for the readers missing it together (fill locks) and lands in
//! the byte-bounded read cache. A slice's CRC is checked before it is served: at the GET for a
//! slice read alone, at every serve for one cut out of blocks (a block holds other slices too).
//!
//! Read-ahead: a reader going through a stream's index starts, each in its own task, the GETs
//! of the entries after the ones it read, up to `wal_read_ahead_window_bytes` past them (a
//! consumer that stops costs at most that much), while `wal_read_ahead_bytes` of GETs over all
//! streams are not already in flight (past it no read-ahead starts).

use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Bytes, BytesMut};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore};

use super::read_ahead::{ReadAhead, Start};
use crate::cache::{BoundedCache, FillLocks, Weigh};
use crate::config::StorageConfig;
use crate::error::StorageError;
use crate::index::IndexEntry;
use crate::wal::format;

/// A range of an object: (object key, first byte, bytes asked for). Its cached value holds
/// those bytes, fewer only where the object ends first (a block at the end of its object).
pub type RangeKey = (String, u64, u32);

/// Ranges read back (slices and blocks), by [`RangeKey`].
type ReadCache = BoundedCache<RangeKey, Arc<CheckedRange>>;

/// Slices a block remembers as checked, at most: past it they are checked at every serve.
const CHECKED_SLICES_MAX: usize = 256;

/// A cached range and the slices within it whose CRC was checked (a range that is exactly a
/// slice is checked before it is cached): a slice cut out of a block is checked once, not at
/// every serve. The cached bytes never change, so a slice checked once stays good.
pub struct CheckedRange {
    bytes: Bytes,
    /// (byte offset, length, CRC32C) of the slices checked.
    checked: Mutex<Vec<(u64, u32, u32)>>,
    /// How many `checked` may hold: none for a range that is one slice (checked as a whole).
    checked_max: usize,
}

impl CheckedRange {
    /// A range that is exactly one good slice.
    fn of_slice(bytes: Bytes) -> Arc<CheckedRange> {
        CheckedRange::new(bytes, 0)
    }

    fn new(bytes: Bytes, checked_max: usize) -> Arc<CheckedRange> {
        Arc::new(CheckedRange {
            bytes,
            checked: Mutex::default(),
            checked_max,
        })
    }

    fn is_checked(&self, entry: &IndexEntry) -> bool {
        self.lock()
            .contains(&(entry.byte_offset, entry.byte_len, entry.crc32c))
    }

    fn mark_checked(&self, entry: &IndexEntry) {
        let mut checked = self.lock();
        if checked.len() < self.checked_max {
            checked.push((entry.byte_offset, entry.byte_len, entry.crc32c));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u32, u32)>> {
        self.checked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Weigh for CheckedRange {
    /// The bytes and the most the checked list may grow to, so the cache's bound holds.
    fn weight_bytes(&self) -> usize {
        self.bytes.len() + self.checked_max * std::mem::size_of::<(u64, u32, u32)>()
    }
}

pub(super) struct WalReads {
    shared: Arc<Shared>,
}

struct Shared {
    objects: Arc<dyn ObjectStore>,
    cache: ReadCache,
    fills: FillLocks<RangeKey>,
    block_bytes: u64,
    ahead: Arc<ReadAhead<RangeKey>>,
    window_bytes: u64,
}

impl WalReads {
    pub fn new(config: &StorageConfig, objects: Arc<dyn ObjectStore>) -> WalReads {
        WalReads {
            shared: Arc::new(Shared {
                objects,
                cache: ReadCache::new("read", config.read_cache_bytes),
                fills: FillLocks::default(),
                block_bytes: (config.wal_read_block_bytes as u64).max(1),
                ahead: ReadAhead::new(config.wal_read_ahead_bytes),
                // The deterministic simulation runs one thread with no spawned work.
                window_bytes: if config.cpu_work_inline {
                    0
                } else {
                    config.wal_read_ahead_window_bytes as u64
                },
            }),
        }
    }

    /// A slice cached under its own key (read alone, or joined), whose bytes are good.
    pub fn cached_slice(&self, key: &RangeKey) -> Option<Bytes> {
        self.shared.cache.get(key).map(|range| range.bytes.clone())
    }

    /// Caches `bytes` as the good bytes of the slice `key` (an entry of several appends joined
    /// from the write cache, once for all the readers tailing it).
    pub fn cache_slice(&self, key: RangeKey, bytes: Bytes) {
        self.shared.cache.insert(key, CheckedRange::of_slice(bytes));
    }

    /// The bytes of a RAW entry's slice, checked against its CRC.
    pub async fn slice(&self, entry: &IndexEntry) -> Result<Bytes, StorageError> {
        let shared = &self.shared;
        let ranges = shared.ranges_of(entry);
        if let [range] = &ranges[..] {
            if is_alone(range, entry) {
                return Ok(shared.load(range, Some(entry)).await?.bytes.clone());
            }
        }
        let exact = (entry.object_key.clone(), entry.byte_offset, entry.byte_len);
        if let Some(bytes) = self.cached_slice(&exact) {
            return Ok(bytes); // joined from two blocks and checked earlier
        }
        let parts =
            futures::future::try_join_all(ranges.iter().map(|r| shared.load(r, None))).await?;
        if let [part] = &parts[..] {
            if part.is_checked(entry) {
                return cut(&ranges, &parts, entry);
            }
        }
        let bytes = cut(&ranges, &parts, entry)?;
        if let Err(e) = verify(&bytes, entry) {
            // A block GET that went wrong would fail every slice cut from it: GET it again next time.
            for range in &ranges {
                shared.cache.remove(range);
            }
            return Err(e);
        }
        match &parts[..] {
            [part] => part.mark_checked(entry),
            // A copy of its own: cached, it is not joined and checked again at the next serve.
            _ => self.cache_slice(exact, bytes.clone()),
        }
        Ok(bytes)
    }

    /// Starts the GETs of `ahead` (the entries after the ones a reader just read, in order)
    /// that are neither cached nor on their way, up to the window, while the budget lasts.
    pub fn read_ahead(&self, ahead: &[Arc<IndexEntry>]) {
        let shared = &self.shared;
        let mut window = 0u64;
        for entry in ahead {
            if window >= shared.window_bytes {
                return;
            }
            window += u64::from(entry.byte_len);
            for range in shared.ranges_of(entry) {
                if shared.cache.contains(&range) {
                    continue;
                }
                let load = {
                    let alone = is_alone(&range, entry).then(|| entry.clone());
                    let (shared, range) = (shared.clone(), range.clone());
                    async move { shared.load(&range, alone.as_deref()).await.map(|_| ()) }
                };
                let bytes = range.2 as usize;
                if shared.ahead.start(range, bytes, load) == Start::BudgetSpent {
                    return;
                }
            }
        }
    }

    /// Ranges fetched by read-ahead so far.
    #[cfg(test)]
    pub fn read_ahead_ranges(&self) -> u64 {
        self.shared.ahead.loaded()
    }

    /// Read-ahead budget not in use, in bytes.
    #[cfg(test)]
    pub fn read_ahead_free_bytes(&self) -> usize {
        self.shared.ahead.free_bytes()
    }
}

impl Shared {
    /// The ranges a slice is read from: itself when it is a block or more, else the one or
    /// two aligned blocks holding it.
    fn ranges_of(&self, entry: &IndexEntry) -> Vec<RangeKey> {
        let (start, len) = (entry.byte_offset, u64::from(entry.byte_len));
        let block = self.block_bytes;
        if len >= block || len == 0 {
            return vec![(entry.object_key.clone(), start, entry.byte_len)];
        }
        let first = start / block;
        let last = (start + len - 1) / block;
        debug_assert!(last <= first + 1, "a slice under a block spans at most two");
        let block_len = u32::try_from(block).unwrap_or(u32::MAX);
        (first..=last)
            .map(|b| (entry.object_key.clone(), b * block, block_len))
            .collect()
    }

    /// A range from the cache, or fetched once for every reader missing it. With `alone` (the
    /// range is exactly that entry's slice) the bytes are checked before they are cached.
    async fn load(
        &self,
        range: &RangeKey,
        alone: Option<&IndexEntry>,
    ) -> Result<Arc<CheckedRange>, StorageError> {
        if let Some(bytes) = self.cache.get(range) {
            return Ok(bytes);
        }
        let _fill = self.fills.lock(range).await;
        if let Some(bytes) = self.cache.get(range) {
            return Ok(bytes); // fetched while this reader waited
        }
        let (object_key, start, len) = range;
        let options = GetOptions {
            range: Some(GetRange::Bounded(*start..start + u64::from(*len))),
            ..GetOptions::default()
        };
        let bytes = self
            .objects
            .get_opts(&Path::from(object_key.as_str()), options)
            .await?
            .bytes()
            .await?;
        if let Some(entry) = alone {
            verify(&bytes, entry)?;
        }
        let range_value = if alone.is_some() {
            CheckedRange::of_slice(bytes)
        } else {
            CheckedRange::new(bytes, CHECKED_SLICES_MAX)
        };
        self.cache.insert(range.clone(), range_value.clone());
        Ok(range_value)
    }
}

/// Whether `range` is exactly the entry's slice (read alone, not as a block).
fn is_alone(range: &RangeKey, entry: &IndexEntry) -> bool {
    range.1 == entry.byte_offset && range.2 == entry.byte_len
}

/// The entry's slice cut out of the blocks holding it (one copy when it spans two).
fn cut(
    ranges: &[RangeKey],
    parts: &[Arc<CheckedRange>],
    entry: &IndexEntry,
) -> Result<Bytes, StorageError> {
    let start = entry.byte_offset;
    let end = start + u64::from(entry.byte_len);
    let short = || {
        StorageError::Corrupt(format!(
            "{} ends before its slice at {start}..{end}",
            entry.object_key
        ))
    };
    let piece = |range: &RangeKey, part: &CheckedRange| -> Result<Bytes, StorageError> {
        let part = &part.bytes;
        let from = usize::try_from(start.max(range.1) - range.1).map_err(|_| short())?;
        let to = usize::try_from(end.min(range.1 + u64::from(range.2)) - range.1)
            .map_err(|_| short())?;
        if to > part.len() {
            return Err(short());
        }
        Ok(part.slice(from..to))
    };
    match (ranges, parts) {
        ([range], [part]) => piece(range, part),
        _ => {
            let mut joined = BytesMut::with_capacity(entry.byte_len as usize);
            for (range, part) in ranges.iter().zip(parts) {
                joined.extend_from_slice(&piece(range, part)?);
            }
            Ok(joined.freeze())
        }
    }
}

fn verify(bytes: &[u8], entry: &IndexEntry) -> Result<(), StorageError> {
    format::verify_slice(bytes, entry.byte_len, entry.crc32c).map_err(|e| {
        tracing::error!(object_key = %entry.object_key, offset = entry.byte_offset, error = %e, "slice failed verification");
        StorageError::Corrupt(format!("{}@{}: {e}", entry.object_key, entry.byte_offset))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::cast_possible_truncation)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use async_trait::async_trait;
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    use super::*;
    use crate::index::FileType;
    use crate::objects::{Call, CountingObjectStore, Intercepted, Interceptor};

    const BLOCK: usize = 4096;

    /// An object of `slices` slices of `len` bytes each (slice i filled with byte i), and the
    /// index entries describing them.
    async fn object(
        store: &Arc<dyn ObjectStore>,
        key: &str,
        slices: usize,
        len: usize,
    ) -> Vec<Arc<IndexEntry>> {
        let mut bytes = Vec::new();
        let mut entries = Vec::new();
        for i in 0..slices {
            let slice = vec![i as u8; len];
            entries.push(Arc::new(IndexEntry {
                file_type: FileType::Raw,
                object_key: key.into(),
                byte_offset: bytes.len() as u64,
                byte_len: len as u32,
                crc32c: crc32c::crc32c(&slice),
                min_timestamp: 0,
                max_timestamp: 0,
                write_time_ms: 0,
                batches: vec![],
            }));
            bytes.extend(slice);
        }
        store.put(&Path::from(key), bytes.into()).await.unwrap();
        entries
    }

    fn reads(store: Arc<dyn ObjectStore>, window_bytes: usize, ahead_bytes: usize) -> WalReads {
        let config = StorageConfig {
            wal_read_block_bytes: BLOCK,
            wal_read_ahead_window_bytes: window_bytes,
            wal_read_ahead_bytes: ahead_bytes,
            ..StorageConfig::default()
        };
        WalReads::new(&config, store)
    }

    /// Waits (at most 5 s) until `done`.
    async fn settle(done: impl Fn() -> bool) {
        for _ in 0..500 {
            if done() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("read-ahead did not settle");
    }

    #[tokio::test]
    async fn one_get_of_a_block_serves_every_partition_whose_slice_lies_in_it() {
        let counting = Arc::new(CountingObjectStore::new(Arc::new(InMemory::new())));
        let store: Arc<dyn ObjectStore> = counting.clone();
        // 40 partitions' slices of 100 bytes: 4,000 bytes, one block.
        let entries = object(&store, "wal/a", 40, 100).await;
        let wal = reads(store, 0, 0);
        for (i, entry) in entries.iter().enumerate() {
            assert_eq!(wal.slice(entry).await.unwrap(), vec![i as u8; 100]);
        }
        assert_eq!(counting.counts().gets, 1);
    }

    #[tokio::test]
    async fn a_slice_across_two_blocks_is_joined_and_a_slice_of_a_block_or_more_is_read_alone() {
        let counting = Arc::new(CountingObjectStore::new(Arc::new(InMemory::new())));
        let store: Arc<dyn ObjectStore> = counting.clone();
        // Slices of 3,000 bytes: the second spans bytes 3,000..6,000, blocks 0 and 1.
        let small = object(&store, "wal/b", 3, 3000).await;
        let wal = reads(store.clone(), 0, 0);
        assert_eq!(wal.slice(&small[1]).await.unwrap(), vec![1u8; 3000]);
        assert_eq!(counting.counts().gets, 2, "the two blocks holding it");
        // The last block ends with the object (9,000 bytes): asked for 4,096, it holds 808.
        assert_eq!(wal.slice(&small[2]).await.unwrap(), vec![2u8; 3000]);
        assert_eq!(counting.counts().gets, 3);
        let large = object(&store, "wal/c", 2, 5000).await;
        assert_eq!(wal.slice(&large[1]).await.unwrap(), vec![1u8; 5000]);
        assert_eq!(counting.counts().gets, 4, "one GET of exactly the slice");
    }

    #[tokio::test]
    async fn a_block_that_fails_a_slices_checksum_is_not_served_and_is_read_again() {
        let counting = Arc::new(CountingObjectStore::new(Arc::new(InMemory::new())));
        let store: Arc<dyn ObjectStore> = counting.clone();
        let entries = object(&store, "wal/d", 4, 100).await;
        let wal = reads(store.clone(), 0, 0);
        let mut lying = (*entries[1]).clone();
        lying.crc32c ^= 1;
        assert!(matches!(
            wal.slice(&lying).await,
            Err(StorageError::Corrupt(_))
        ));
        assert_eq!(wal.slice(&entries[1]).await.unwrap(), vec![1u8; 100]);
        assert_eq!(
            counting.counts().gets,
            2,
            "the block was dropped, then read again"
        );
    }

    #[tokio::test]
    async fn a_sequential_reader_finds_the_next_slices_read_ahead_and_nothing_past_its_window() {
        let counting = Arc::new(CountingObjectStore::new(Arc::new(InMemory::new())));
        let store: Arc<dyn ObjectStore> = counting.clone();
        // One partition's slices in ten objects, a block each.
        let mut log = Vec::new();
        for o in 0..10 {
            log.extend(object(&store, &format!("wal/{o}"), 1, 2000).await);
        }
        let wal = reads(store, 3 * 2000, 64 << 20);
        let free = wal.read_ahead_free_bytes();
        wal.slice(&log[0]).await.unwrap();
        wal.read_ahead(&log[1..]);
        settle(|| wal.read_ahead_ranges() == 3 && wal.read_ahead_free_bytes() == free).await;
        assert_eq!(counting.counts().gets, 4, "slice 0, then 1 to 3 ahead");
        for entry in &log[1..4] {
            wal.slice(entry).await.unwrap();
        }
        assert_eq!(counting.counts().gets, 4, "the reader found them");
        // The reader stopped: nothing more is fetched.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(counting.counts().gets, 4);
        wal.read_ahead(&log[4..]);
        settle(|| wal.read_ahead_ranges() == 6).await;
        assert_eq!(counting.counts().gets, 7);
    }

    /// GETs in flight and the most bytes they held at once; each GET takes 20 ms.
    #[derive(Debug, Default)]
    struct InFlight {
        bytes: AtomicUsize,
        peak: AtomicUsize,
    }

    #[async_trait]
    impl Interceptor for InFlight {
        async fn before(&self, call: &Call) -> object_store::Result<()> {
            let bytes = call.get_bytes.unwrap_or(0) as usize;
            let now = self.bytes.fetch_add(bytes, Ordering::SeqCst) + bytes;
            self.peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.bytes.fetch_sub(bytes, Ordering::SeqCst);
            Ok(())
        }

        fn name(&self) -> &'static str {
            "InFlight"
        }
    }

    #[tokio::test]
    async fn a_hundred_readers_catching_up_at_once_keep_read_ahead_within_its_byte_cap() {
        let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut logs = Vec::new();
        for reader in 0..100 {
            let mut log = Vec::new();
            for o in 0..8 {
                log.extend(object(&memory, &format!("wal/{reader}/{o}"), 1, BLOCK).await);
            }
            logs.push(log);
        }
        let in_flight = Arc::new(Intercepted::wrap(memory, InFlight::default()));
        let cap = 16 * BLOCK;
        // Windows wide enough that without the cap 700 blocks would be on their way.
        let wal = Arc::new(reads(in_flight.clone(), 64 << 20, cap));
        let readers = logs.into_iter().map(|log| {
            let wal = wal.clone();
            async move {
                for (i, entry) in log.iter().enumerate() {
                    assert_eq!(wal.slice(entry).await.unwrap(), vec![0u8; BLOCK]);
                    wal.read_ahead(&log[i + 1..]);
                }
            }
        });
        futures::future::join_all(readers).await;
        settle(|| wal.read_ahead_free_bytes() == cap).await;
        let peak = in_flight.interceptor().peak.load(Ordering::SeqCst);
        // Each reader waits on at most one GET of its own; read-ahead adds at most the cap.
        assert!(peak <= cap + 100 * BLOCK, "{peak} bytes in flight at once");
        assert!(wal.read_ahead_ranges() > 0, "read-ahead ran within its cap");
    }
}
