/// Settings of the log engine. Names follow the seed system's, snake_case, units last.
#[derive(Clone, Debug)]
pub struct StorageConfig {
    /// A segment (one WAL object) is closed at this many bytes; a bigger append gets its own object.
    pub write_buffer_size: usize,
    /// Pending bytes that trigger a flush before the interval elapses.
    pub write_buffer_flush_size: usize,
    /// Longest time an append waits in the buffer before its segment is written.
    pub write_buffer_flush_interval_ms: u64,
    /// Streams packed into one segment at most.
    pub write_buffer_max_streams: usize,
    /// Bytes admitted but not yet durable; past it appends are refused at once.
    pub max_pending_bytes: usize,
    /// Object PUTs in flight at once.
    pub max_puts_in_flight: usize,
    /// Bytes of recently written segments kept in memory for tailing reads.
    pub write_cache_bytes: usize,
    /// Bytes of slices read back from the object store kept in memory.
    pub read_cache_bytes: usize,
    /// Bytes of batches rebuilt from compacted files kept in memory (whole row groups).
    pub compacted_cache_bytes: usize,
    /// Bytes of parsed compacted-file footers kept in memory.
    pub compacted_footer_cache_bytes: usize,
    /// An append not acknowledged within this time fails with `Timeout`.
    pub add_entry_timeout_ms: u64,
    /// Index entries kept in memory per stream (the tail of its index).
    pub index_cache_entries_per_stream: usize,
    /// Streams whose state (bounds and index tail) is kept in memory; past it the least
    /// recently used idle ones are dropped and re-read from the index when used again.
    pub stream_states_max: usize,
    /// Prefix of WAL object keys (after the time prefix comes a unique id).
    pub wal_prefix: String,
    /// Derive the unique part of WAL object keys from this seed and a counter instead of a
    /// random UUID: only for the reproducible engine simulation.
    pub wal_object_id_seed: Option<u64>,
    /// Decode compacted row groups on the calling thread instead of tokio's blocking pool:
    /// only for the single-threaded deterministic simulation.
    pub cpu_work_inline: bool,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            write_buffer_size: 4 << 20,
            write_buffer_flush_size: 256 << 20,
            write_buffer_flush_interval_ms: 250,
            // The seed system's 4 cut an object every 4 partitions (2,312 PUTs per GiB measured
            // with 8 partitions); packing many streams per object is what keeps PUTs low.
            write_buffer_max_streams: 256,
            max_pending_bytes: 256 << 20,
            max_puts_in_flight: 16,
            write_cache_bytes: 128 << 20,
            read_cache_bytes: 256 << 20,
            compacted_cache_bytes: 128 << 20,
            compacted_footer_cache_bytes: 16 << 20,
            add_entry_timeout_ms: 30_000,
            index_cache_entries_per_stream: 1024,
            stream_states_max: 16_384,
            wal_prefix: "wal".to_string(),
            wal_object_id_seed: None,
            cpu_work_inline: false,
        }
    }
}
