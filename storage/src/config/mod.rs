//! Settings of the log engine, declared once ([`settings`]): `StorageConfig::default` and the
//! binaries' flags take their defaults from the same declarations.

pub mod settings;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use self::settings as s;
use crate::compacted::ValueRestorer;
use crate::settings::Resolved;

/// Settings of the log engine. Names follow the seed system's, snake_case, units last; each
/// field's meaning is the help text of its declaration in [`settings`].
#[derive(Clone, Debug)]
pub struct StorageConfig {
    pub write_buffer_size: usize,
    pub write_buffer_flush_size: usize,
    /// `None`: no budget, an object starts as soon as a PUT slot is free.
    pub write_buffer_puts_per_sec_max: Option<u64>,
    pub write_buffer_max_streams: usize,
    pub max_pending_bytes: usize,
    pub max_puts_in_flight: usize,
    pub write_cache_bytes: usize,
    pub read_cache_bytes: usize,
    pub compacted_cache_bytes: usize,
    pub compacted_footer_cache_bytes: usize,
    pub compacted_read_ahead_groups: usize,
    pub compacted_read_ahead_bytes: usize,
    pub wal_read_block_bytes: usize,
    pub wal_read_ahead_window_bytes: usize,
    pub wal_read_ahead_bytes: usize,
    pub add_entry_timeout_ms: u64,
    pub index_cache_entries_per_stream: usize,
    pub stream_states_max: usize,
    /// Prefix of WAL object keys (after the time prefix comes a unique id).
    pub wal_prefix: String,
    /// Derive the unique part of WAL object keys from this seed and a counter instead of a
    /// random UUID: only for the reproducible engine simulation.
    pub wal_object_id_seed: Option<u64>,
    /// Decode compacted row groups on the calling thread instead of tokio's blocking pool:
    /// only for the single-threaded deterministic simulation.
    pub cpu_work_inline: bool,
    /// Rebuilds values that compacted files with typed columns elided (the `tables` crate
    /// gives it); without one, such files are refused as corrupt.
    pub value_restorer: Option<Arc<dyn ValueRestorer>>,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            write_buffer_size: s::WRITE_BUFFER_SIZE.default,
            write_buffer_flush_size: s::WRITE_BUFFER_FLUSH_SIZE.default,
            write_buffer_puts_per_sec_max: Some(s::PUTS_PER_SEC_MAX_REMOTE),
            write_buffer_max_streams: s::WRITE_BUFFER_MAX_STREAMS.default,
            max_pending_bytes: s::MAX_PENDING_BYTES.default,
            max_puts_in_flight: s::MAX_PUTS_IN_FLIGHT.default,
            write_cache_bytes: s::WRITE_CACHE_BYTES.default,
            read_cache_bytes: s::READ_CACHE_BYTES.default,
            compacted_cache_bytes: s::COMPACTED_CACHE_BYTES.default,
            compacted_footer_cache_bytes: s::COMPACTED_FOOTER_CACHE_BYTES.default,
            compacted_read_ahead_groups: s::COMPACTED_READ_AHEAD_GROUPS.default,
            compacted_read_ahead_bytes: s::COMPACTED_READ_AHEAD_BYTES.default,
            wal_read_block_bytes: s::WAL_READ_BLOCK_BYTES.default,
            wal_read_ahead_window_bytes: s::WAL_READ_AHEAD_WINDOW_BYTES.default,
            wal_read_ahead_bytes: s::WAL_READ_AHEAD_BYTES.default,
            add_entry_timeout_ms: s::ADD_ENTRY_TIMEOUT_MS.default,
            index_cache_entries_per_stream: s::INDEX_CACHE_ENTRIES_PER_STREAM.default,
            stream_states_max: s::STREAM_STATES_MAX.default,
            wal_prefix: "wal".to_string(),
            wal_object_id_seed: None,
            cpu_work_inline: false,
            value_restorer: None,
        }
    }
}

impl StorageConfig {
    /// The engine's settings from a schema that holds [`settings::ENGINE`], for a store at
    /// `object_store_url`.
    pub fn from_settings(resolved: &Resolved, object_store_url: &str) -> StorageConfig {
        StorageConfig {
            write_buffer_size: resolved.get(&s::WRITE_BUFFER_SIZE),
            write_buffer_flush_size: resolved.get(&s::WRITE_BUFFER_FLUSH_SIZE),
            write_buffer_puts_per_sec_max: s::puts_per_sec_max(
                resolved.get(&s::WRITE_BUFFER_PUTS_PER_SEC_MAX),
                object_store_url,
            ),
            write_buffer_max_streams: resolved.get(&s::WRITE_BUFFER_MAX_STREAMS),
            max_pending_bytes: resolved.get(&s::MAX_PENDING_BYTES),
            max_puts_in_flight: resolved.get(&s::MAX_PUTS_IN_FLIGHT),
            write_cache_bytes: resolved.get(&s::WRITE_CACHE_BYTES),
            read_cache_bytes: resolved.get(&s::READ_CACHE_BYTES),
            compacted_cache_bytes: resolved.get(&s::COMPACTED_CACHE_BYTES),
            compacted_footer_cache_bytes: resolved.get(&s::COMPACTED_FOOTER_CACHE_BYTES),
            compacted_read_ahead_groups: resolved.get(&s::COMPACTED_READ_AHEAD_GROUPS),
            compacted_read_ahead_bytes: resolved.get(&s::COMPACTED_READ_AHEAD_BYTES),
            wal_read_block_bytes: resolved.get(&s::WAL_READ_BLOCK_BYTES),
            wal_read_ahead_window_bytes: resolved.get(&s::WAL_READ_AHEAD_WINDOW_BYTES),
            wal_read_ahead_bytes: resolved.get(&s::WAL_READ_AHEAD_BYTES),
            add_entry_timeout_ms: resolved.get(&s::ADD_ENTRY_TIMEOUT_MS),
            index_cache_entries_per_stream: resolved.get(&s::INDEX_CACHE_ENTRIES_PER_STREAM),
            stream_states_max: resolved.get(&s::STREAM_STATES_MAX),
            ..StorageConfig::default()
        }
    }
}

/// Where the data of a process lives, as both binaries name it ([`settings::LOCATION`]).
#[derive(Clone, Debug)]
pub struct Location {
    pub data_dir: PathBuf,
    /// The object store URL, `file://<data_dir>/objects` unless set.
    pub object_store_url: String,
    pub metastore: String,
    /// The modeled latency added to every object-store call (benchmarks only).
    pub latency_profile: crate::objects::LatencyProfile,
}

impl Location {
    pub fn from_settings(resolved: &Resolved) -> Result<Location, crate::settings::SettingsError> {
        let data_dir = resolved.get(&s::DATA_DIR);
        let object_store_url = match resolved.get(&s::OBJECT_STORE) {
            Some(url) => url,
            None => default_object_store_url(&data_dir).map_err(|e| {
                crate::settings::SettingsError::Invalid {
                    key: s::DATA_DIR.key.into(),
                    reason: format!("cannot make {} absolute: {e}", data_dir.display()),
                }
            })?,
        };
        Ok(Location {
            data_dir,
            object_store_url,
            metastore: resolved.get(&s::METASTORE),
            latency_profile: crate::objects::LatencyProfile::parse(
                &resolved.get(&s::OBJECT_STORE_LATENCY_PROFILE),
            )
            .unwrap_or(crate::objects::LatencyProfile::None),
        })
    }
}

pub use telemetry::http::HttpListen;
pub use telemetry::logging::LogFormat;

/// Applies `metrics_enabled` to the process.
pub fn apply_metrics_enabled(resolved: &Resolved) {
    telemetry::set_enabled(resolved.get(&s::METRICS_ENABLED));
}

/// `log_format`; its check lets only `text` and `json` through.
pub fn log_format(resolved: &Resolved) -> LogFormat {
    LogFormat::parse(&resolved.get(&s::LOG_FORMAT)).unwrap_or(LogFormat::Text)
}

/// Where the HTTP listener of metrics and health checks binds (`http_listen`).
pub fn http_listen(resolved: &Resolved) -> HttpListen {
    listen_setting(resolved, &s::HTTP_LISTEN)
}

/// A listener address setting checked by [`s::check_listen`]: off, its default (skipped when
/// taken), or set explicitly (must bind).
pub fn listen_setting(
    resolved: &Resolved,
    setting: &crate::settings::Setting<String>,
) -> HttpListen {
    let value = resolved.get(setting);
    let Ok(addr) = value.trim().parse() else {
        // `none` or empty: the check let nothing else through.
        return HttpListen::Off;
    };
    match resolved.source(setting.key) {
        None | Some(crate::settings::Source::Default) => HttpListen::Default(addr),
        Some(_) => HttpListen::Explicit(addr),
    }
}
/// `file://<data_dir>/objects`, absolute so that the URL means the same after a `cd`.
pub fn default_object_store_url(data_dir: &Path) -> std::io::Result<String> {
    let dir = std::path::absolute(data_dir.join("objects"))?;
    Ok(format!("file://{}", dir.display()))
}
