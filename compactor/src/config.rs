/// Settings of the compactor. Names snake_case with units last.
#[derive(Clone, Debug)]
pub struct CompactorConfig {
    /// A stream range is compacted once its uncompacted bytes reach this...
    pub min_bytes: u64,
    /// ...or once its oldest uncompacted entry is this old.
    pub min_age_ms: u64,
    /// A Parquet file is cut at about this many input bytes.
    pub file_bytes_max: u64,
    /// Kafka batches per Parquet file at most (bounds the index entry's size).
    pub file_batches_max: usize,
    /// WAL bytes read per second at most (0 = unlimited).
    pub read_bytes_per_sec: u64,
    /// Streams compacted concurrently.
    pub workers: usize,
    /// An unreferenced WAL object is deleted only this long after it was marked, so that
    /// in-flight reads and late index commits finish first.
    pub grace_period_ms: u64,
    /// Prefix of WAL object keys (as the broker writes them).
    pub wal_prefix: String,
    /// Prefix of compacted file keys.
    pub compacted_prefix: String,
    /// Pause between passes when running as a service.
    pub interval_ms: u64,
    /// A service applies retention at most this often (Kafka's
    /// `log.retention.check.interval.ms`); `--once` always applies it.
    pub retention_check_interval_ms: u64,
    /// A task that failed this many times becomes DEAD and is not retried automatically.
    pub task_attempts_max: u32,
    /// Wait before the first retry of a failed task; doubles with every further failure...
    pub retry_backoff_ms: u64,
    /// ...up to this cap.
    pub retry_backoff_max_ms: u64,
    /// The object store's folder when it is a local one: upload staging files that killed
    /// processes left there are swept (see `storage::objects::sweep_staging_files`).
    pub local_folder: Option<std::path::PathBuf>,
    /// A staging file unmodified this long belongs to a dead upload.
    pub staging_idle_ms: u64,
    /// Encode Parquet on the calling thread instead of tokio's blocking pool: only for the
    /// single-threaded deterministic simulation.
    pub cpu_work_inline: bool,
    /// The broker settings (`--log-retention-ms`, ...) that give topics without an override
    /// their configs; the same as the brokers'. Resolve a topic with
    /// `TopicRecord::config(&topic_defaults)`.
    pub topic_defaults: storage::topics::TopicDefaults,
}

impl Default for CompactorConfig {
    fn default() -> Self {
        CompactorConfig {
            min_bytes: 8 << 20,
            min_age_ms: 60_000,
            file_bytes_max: 128 << 20,
            file_batches_max: 8_192,
            read_bytes_per_sec: 0,
            workers: 2,
            grace_period_ms: 60_000,
            wal_prefix: "wal".into(),
            compacted_prefix: "compacted".into(),
            interval_ms: 10_000,
            retention_check_interval_ms: 300_000,
            task_attempts_max: 5,
            retry_backoff_ms: 1_000,
            retry_backoff_max_ms: 300_000,
            local_folder: None,
            staging_idle_ms: 600_000,
            cpu_work_inline: false,
            topic_defaults: storage::topics::TopicDefaults::kafka(),
        }
    }
}
