//! Settings of the compactor, declared once in [`settings`]: `CompactorConfig::default`, the
//! `compactor` binary and the broker's in-process compaction take them from there, under the
//! same names (`compaction_min_bytes`, ...).

pub mod settings;

use storage::settings::{Resolved, SettingsError};

use self::settings as s;

/// The SQL catalog's file name, under `<data_dir>/iceberg/`.
pub const SQL_CATALOG_FILE: &str = "catalog.db";

/// Settings of the compactor. Names snake_case with units last; a field with a setting means
/// what the help text of its declaration in [`settings`] says.
#[derive(Clone, Debug)]
pub struct CompactorConfig {
    pub min_bytes: u64,
    pub min_age_ms: u64,
    pub file_bytes_max: u64,
    /// Kafka batches per Parquet file at most (bounds the index entry's size).
    pub file_batches_max: usize,
    pub read_bytes_per_sec: u64,
    pub workers: usize,
    pub grace_period_ms: u64,
    /// Prefix of WAL object keys (as the broker writes them).
    pub wal_prefix: String,
    /// Prefix of compacted file keys.
    pub compacted_prefix: String,
    pub interval_ms: u64,
    /// `--once` always applies retention, whatever this says.
    pub retention_check_interval_ms: u64,
    pub task_attempts_max: u32,
    pub retry_backoff_ms: u64,
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
    /// Budget of a key compaction's key index (Kafka's `log.cleaner.dedupe.buffer.size`).
    pub dedupe_buffer_bytes: u64,
    /// Absolute URL of the object store's root, as Iceberg tables name their files.
    pub table_base_url: String,
    /// The namespace of the topics' tables.
    pub iceberg_namespace: String,
    /// The SQL catalog file mirrored after each pass's commits: beside an embedded MetaStore
    /// only (a cluster on Oxia has no shared local folder; engines use the REST catalog).
    pub sql_catalog: Option<std::path::PathBuf>,
}

impl Default for CompactorConfig {
    fn default() -> Self {
        CompactorConfig {
            min_bytes: s::COMPACTION_MIN_BYTES.default,
            min_age_ms: s::COMPACTION_MIN_AGE_MS.default,
            file_bytes_max: s::COMPACTION_FILE_BYTES_MAX.default,
            file_batches_max: 8_192,
            read_bytes_per_sec: s::COMPACTION_READ_BYTES_PER_SEC.default,
            workers: s::COMPACTION_WORKERS.default,
            grace_period_ms: s::COMPACTION_GRACE_PERIOD_MS.default,
            wal_prefix: "wal".into(),
            compacted_prefix: "compacted".into(),
            interval_ms: s::COMPACTION_INTERVAL_MS.default,
            retention_check_interval_ms: s::LOG_RETENTION_CHECK_INTERVAL_MS.default,
            task_attempts_max: s::COMPACTION_TASK_ATTEMPTS_MAX.default,
            retry_backoff_ms: s::COMPACTION_RETRY_BACKOFF_MS.default,
            retry_backoff_max_ms: s::COMPACTION_RETRY_BACKOFF_MAX_MS.default,
            local_folder: None,
            staging_idle_ms: 600_000,
            cpu_work_inline: false,
            topic_defaults: storage::topics::TopicDefaults::kafka(),
            dedupe_buffer_bytes: s::LOG_CLEANER_DEDUPE_BUFFER_SIZE.default,
            table_base_url: "memory://".into(),
            iceberg_namespace: s::ICEBERG_NAMESPACE.default.to_string(),
            sql_catalog: None,
        }
    }
}

impl CompactorConfig {
    /// The compactor's settings from a schema that holds [`settings::COMPACTION`] and the
    /// topic defaults, for the stores at `location`.
    pub fn from_settings(
        resolved: &Resolved,
        location: &storage::config::Location,
    ) -> Result<CompactorConfig, SettingsError> {
        let object_store_url = location.object_store_url.as_str();
        let sql_catalog = (location.metastore == "embedded")
            .then(|| location.data_dir.join("iceberg").join(SQL_CATALOG_FILE));
        Ok(CompactorConfig {
            min_bytes: resolved.get(&s::COMPACTION_MIN_BYTES),
            min_age_ms: resolved.get(&s::COMPACTION_MIN_AGE_MS),
            file_bytes_max: resolved.get(&s::COMPACTION_FILE_BYTES_MAX),
            read_bytes_per_sec: resolved.get(&s::COMPACTION_READ_BYTES_PER_SEC),
            workers: resolved.get(&s::COMPACTION_WORKERS),
            grace_period_ms: resolved.get(&s::COMPACTION_GRACE_PERIOD_MS),
            interval_ms: resolved.get(&s::COMPACTION_INTERVAL_MS),
            retention_check_interval_ms: resolved.get(&s::LOG_RETENTION_CHECK_INTERVAL_MS),
            task_attempts_max: resolved.get(&s::COMPACTION_TASK_ATTEMPTS_MAX),
            retry_backoff_ms: resolved.get(&s::COMPACTION_RETRY_BACKOFF_MS),
            retry_backoff_max_ms: resolved.get(&s::COMPACTION_RETRY_BACKOFF_MAX_MS),
            local_folder: storage::objects::local_folder(object_store_url),
            topic_defaults: storage::settings::topic_defaults(resolved)?,
            dedupe_buffer_bytes: resolved.get(&s::LOG_CLEANER_DEDUPE_BUFFER_SIZE),
            table_base_url: tables::base_url(object_store_url),
            iceberg_namespace: resolved.get(&s::ICEBERG_NAMESPACE),
            sql_catalog,
            ..CompactorConfig::default()
        })
    }
}
