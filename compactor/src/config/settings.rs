//! The declarations of the compaction settings, which the `compactor` binary and the broker
//! (compacting in-process) share under one name each.

use storage::settings::{AnySetting, Resolved, Schema, Setting, Unit};

/// Every compaction setting both binaries take.
pub static COMPACTION: &[&dyn AnySetting] = &[
    &COMPACTION_MIN_BYTES,
    &COMPACTION_MIN_AGE_MS,
    &COMPACTION_FILE_BYTES_MAX,
    &COMPACTION_READ_BYTES_PER_SEC,
    &COMPACTION_WORKERS,
    &COMPACTION_GRACE_PERIOD_MS,
    &COMPACTION_INTERVAL_MS,
    &LOG_RETENTION_CHECK_INTERVAL_MS,
    &COMPACTION_TASK_ATTEMPTS_MAX,
    &COMPACTION_RETRY_BACKOFF_MS,
    &COMPACTION_RETRY_BACKOFF_MAX_MS,
    &LOG_CLEANER_DEDUPE_BUFFER_SIZE,
    &ICEBERG_NAMESPACE,
];

pub static ICEBERG_NAMESPACE: Setting<String> = Setting::new(
    "iceberg_namespace",
    "kafka",
    Unit::None,
    "The Iceberg namespace of the topics' tables (`<namespace>.<topic>`), in the REST catalog and the SQL catalog beside an embedded MetaStore",
);

pub static COMPACTION_MIN_BYTES: Setting<u64> = Setting::new(
    "compaction_min_bytes",
    8 << 20,
    Unit::Bytes,
    "Uncompacted bytes of a stream range that make it due for compaction before its age does",
);

pub static COMPACTION_MIN_AGE_MS: Setting<u64> = Setting::new(
    "compaction_min_age_ms",
    60_000,
    Unit::Ms,
    "Age of the oldest uncompacted entry after which a stream range is compacted",
);

pub static COMPACTION_FILE_BYTES_MAX: Setting<u64> = Setting::new(
    "compaction_file_bytes_max",
    128 << 20,
    Unit::Bytes,
    "A Parquet file is cut at about this many input bytes",
)
.at_least(1);

pub static COMPACTION_READ_BYTES_PER_SEC: Setting<u64> = Setting::new(
    "compaction_read_bytes_per_sec",
    0,
    Unit::BytesPerSec,
    "WAL bytes compaction reads per second at most (0: unlimited)",
);

pub static COMPACTION_WORKERS: Setting<usize> = Setting::new(
    "compaction_workers",
    2,
    Unit::Count,
    "Stream ranges compacted concurrently",
)
.at_least(1);

pub static COMPACTION_GRACE_PERIOD_MS: Setting<u64> = Setting::new(
    "compaction_grace_period_ms",
    60_000,
    Unit::Ms,
    "Wait between marking an unreferenced WAL object and deleting it, so that in-flight reads and late index commits finish first; keep it above every broker's add_entry_timeout_ms (an object whose commit is still on its way must not go)",
);

pub static COMPACTION_INTERVAL_MS: Setting<u64> = Setting::new(
    "compaction_interval_ms",
    10_000,
    Unit::Ms,
    "Pause between compaction passes",
)
.at_least(1);

pub static LOG_RETENTION_CHECK_INTERVAL_MS: Setting<u64> = Setting::new(
    "log_retention_check_interval_ms",
    300_000,
    Unit::Ms,
    "Compaction applies retention at most this often (Kafka's `log.retention.check.interval.ms`; `compactor --once` always applies it)",
);

pub static COMPACTION_TASK_ATTEMPTS_MAX: Setting<u32> = Setting::new(
    "compaction_task_attempts_max",
    5,
    Unit::Count,
    "A compaction task failing this many times becomes DEAD (not retried automatically; `compactor --retry-dead` requeues it)",
)
.at_least(1);

pub static COMPACTION_RETRY_BACKOFF_MS: Setting<u64> = Setting::new(
    "compaction_retry_backoff_ms",
    1_000,
    Unit::Ms,
    "Wait before the first retry of a failed compaction task; doubles per failure up to the max",
)
.at_least(1);

pub static COMPACTION_RETRY_BACKOFF_MAX_MS: Setting<u64> = Setting::new(
    "compaction_retry_backoff_max_ms",
    300_000,
    Unit::Ms,
    "Cap of the compaction retry backoff",
)
.at_least(1);

pub static LOG_CLEANER_DEDUPE_BUFFER_SIZE: Setting<u64> = Setting::new(
    "log_cleaner_dedupe_buffer_size",
    128 << 20,
    Unit::Bytes,
    "Memory for the key index of a compacted topic's key compaction, 24 bytes a key as Kafka's `log.cleaner.dedupe.buffer.size` counts them; a partition with more keys is compacted over several passes",
)
.at_least(1 << 20);

/// The compaction settings under `group`, with the rules that relate them.
pub fn add_to(schema: Schema, group: &'static str) -> Schema {
    schema
        .group(group, COMPACTION.iter().copied())
        .rule(COMPACTION_RETRY_BACKOFF_MS.key, backoff_within_cap)
}

fn backoff_within_cap(resolved: &Resolved) -> Result<(), String> {
    let max = resolved.get(&COMPACTION_RETRY_BACKOFF_MAX_MS);
    if resolved.get(&COMPACTION_RETRY_BACKOFF_MS) <= max {
        Ok(())
    } else {
        Err(format!(
            "must be at most compaction_retry_backoff_max_ms ({max})"
        ))
    }
}
