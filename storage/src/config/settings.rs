//! The declarations of the engine's settings and of where a process keeps its data. The
//! `broker` takes all of them, the `compactor` the [`LOCATION`] ones.

use std::path::PathBuf;

use crate::settings::{AnySetting, Setting, Unit};

/// `data_dir`, `object_store`, `metastore`: the same on both binaries.
pub static LOCATION: &[&dyn AnySetting] = &[
    &DATA_DIR,
    &OBJECT_STORE,
    &METASTORE,
    &OBJECT_STORE_LATENCY_PROFILE,
];

/// The HTTP listener of metrics and health checks, on both binaries.
pub static OBSERVABILITY: &[&dyn AnySetting] = &[&HTTP_LISTEN, &METRICS_ENABLED, &LOG_FORMAT];

pub static METRICS_ENABLED: Setting<bool> = Setting::new(
    "metrics_enabled",
    true,
    Unit::None,
    "Record metrics; off, counters and histograms stay at zero and only scrape-time gauges answer (to measure what instrumentation costs)",
);

pub static LOG_FORMAT: Setting<String> = Setting::new(
    "log_format",
    "text",
    Unit::None,
    "`text`, or `json`: one object per line with the event's fields and its spans (`RUST_LOG` filters both)",
)
.checked(|value| match telemetry::logging::LogFormat::parse(value) {
    Some(_) => Ok(()),
    None => Err(format!("expected `text` or `json`, got {value:?}")),
});

pub static HTTP_LISTEN: Setting<String> = Setting::new(
    "http_listen",
    "127.0.0.1:9644",
    Unit::None,
    "`ip:port` of the HTTP listener serving `/metrics` (Prometheus), `/healthz` and `/readyz`, or `none`; at its default a taken port is logged and skipped (several processes on one host), an address given explicitly must bind",
)
.checked(check_listen);

/// The check of a listener address setting: `ip:port`, or `none` (or empty) for off.
// `Check<String>` takes a `&String`.
#[allow(clippy::ptr_arg)]
pub fn check_listen(value: &String) -> Result<(), String> {
    match value.trim() {
        "none" | "" => Ok(()),
        addr => addr
            .parse::<std::net::SocketAddr>()
            .map(drop)
            .map_err(|_| format!("expected ip:port or `none`, got {value:?}")),
    }
}

/// The write and read path of the engine.
pub static ENGINE: &[&dyn AnySetting] = &[
    &WRITE_BUFFER_SIZE,
    &WRITE_BUFFER_FLUSH_SIZE,
    &WRITE_BUFFER_PUTS_PER_SEC_MAX,
    &WRITE_BUFFER_MAX_STREAMS,
    &MAX_PENDING_BYTES,
    &MAX_PUTS_IN_FLIGHT,
    &ADD_ENTRY_TIMEOUT_MS,
    &WRITE_CACHE_BYTES,
    &READ_CACHE_BYTES,
    &COMPACTED_CACHE_BYTES,
    &COMPACTED_FOOTER_CACHE_BYTES,
    &COMPACTED_READ_AHEAD_GROUPS,
    &COMPACTED_READ_AHEAD_BYTES,
    &WAL_READ_BLOCK_BYTES,
    &WAL_READ_AHEAD_WINDOW_BYTES,
    &WAL_READ_AHEAD_BYTES,
    &INDEX_CACHE_ENTRIES_PER_STREAM,
    &STREAM_STATES_MAX,
];

pub static DATA_DIR: Setting<PathBuf> = Setting::new(
    "data_dir",
    "./data",
    Unit::None,
    "Local data directory: objects in `<dir>/objects` (file store), the embedded metadata store in `<dir>/meta`",
);

pub static OBJECT_STORE: Setting<Option<String>> = Setting::new(
    "object_store",
    None,
    Unit::None,
    "Object store URL: `file:///path`, `memory://`, `s3://bucket/prefix` (S3 settings from the usual `AWS_*` variables, `AWS_ENDPOINT_URL` for S3-compatible servers)",
)
.default_note("`file://<data_dir>/objects`")
.checked(|url| match url.as_deref() {
    Some(url) if !["file://", "memory://", "s3://"].iter().any(|p| url.starts_with(p)) => {
        Err(format!("expected a file://, memory:// or s3:// URL, got {url:?}"))
    }
    _ => Ok(()),
});

pub static OBJECT_STORE_LATENCY_PROFILE: Setting<String> = Setting::new(
    "object_store_latency_profile",
    "none",
    Unit::None,
    "For benchmarks only: delays every object-store call as a cloud store would (`s3-standard`, `s3-express`; `none` in production), see docs/object-latency.md",
)
.checked(|name| {
    if crate::objects::LatencyProfile::parse(name).is_some() {
        Ok(())
    } else {
        Err(format!(
            "expected one of {:?}, got {name:?}",
            crate::objects::LatencyProfile::NAMES
        ))
    }
});

pub static METASTORE: Setting<String> = Setting::new(
    "metastore",
    "embedded",
    Unit::None,
    "Metadata store: `embedded` (SQLite under `<data_dir>/meta`), `oxia://host:port/namespace`, or `memory` (this process only, not durable: for tests and benchmarks)",
)
.checked(|spec| {
    let known = spec == "embedded"
        || spec.starts_with("oxia://")
        || spec == "memory"
        || spec.starts_with("memory://");
    if known {
        Ok(())
    } else {
        Err(format!(
            "expected `embedded`, `oxia://host:port/namespace` or `memory`, got {spec:?}"
        ))
    }
});

pub static WRITE_BUFFER_SIZE: Setting<usize> = Setting::new(
    "write_buffer_size",
    4 << 20,
    Unit::Bytes,
    "A WAL segment (one object) is closed at this many bytes; a bigger append gets its own object",
)
.at_least(1);

pub static WRITE_BUFFER_FLUSH_SIZE: Setting<usize> = Setting::new(
    "write_buffer_flush_size",
    256 << 20,
    Unit::Bytes,
    "Pending bytes that trigger a flush without waiting for the PUT budget",
)
.at_least(1);

/// The PUT budget for object stores that bill per request: the seed system's 250 ms flush
/// interval, so today's cost at low and medium load. A local folder or memory has none: a PUT
/// costs nothing there, so an object starts as soon as a PUT slot is free and the ack waits
/// only for its own group commit, as on a local broker (a 100/s budget held Java's defaults
/// to 0.3x Kafka, docs/client-settings.md).
pub const PUTS_PER_SEC_MAX_REMOTE: u64 = 4;

pub static WRITE_BUFFER_PUTS_PER_SEC_MAX: Setting<Option<u64>> = Setting::new(
    "write_buffer_puts_per_sec_max",
    None,
    Unit::Count,
    "WAL objects per second started before a segment is full: pending appends go out as soon as a PUT slot is free and this budget allows, a full segment at once (docs/storage-engine.md)",
)
.default_note("4; none for file:// and memory:// stores")
.at_least(1);

/// The PUT budget: as set, else none for local stores (`None`: no budget).
pub fn puts_per_sec_max(set: Option<u64>, object_store_url: &str) -> Option<u64> {
    let local =
        object_store_url.starts_with("file://") || object_store_url.starts_with("memory://");
    match set {
        Some(n) => Some(n),
        None if local => None,
        None => Some(PUTS_PER_SEC_MAX_REMOTE),
    }
}

// The seed system's 4 cut an object every 4 partitions (2,312 PUTs per GiB measured with 8
// partitions); packing many streams per object is what keeps PUTs low.
pub static WRITE_BUFFER_MAX_STREAMS: Setting<usize> = Setting::new(
    "write_buffer_max_streams",
    256,
    Unit::Count,
    "Partition streams packed into one WAL object at most",
)
.at_least(1)
.at_most(crate::wal::format::SLICE_COUNT_MAX as i128);

pub static MAX_PENDING_BYTES: Setting<usize> = Setting::new(
    "max_pending_bytes",
    256 << 20,
    Unit::Bytes,
    "Bytes accepted but not yet durable; past it produce requests are refused at once (retriable)",
)
.at_least(1);

pub static MAX_PUTS_IN_FLIGHT: Setting<usize> = Setting::new(
    "max_puts_in_flight",
    16,
    Unit::Count,
    "WAL object PUTs in flight at once (their index commits still go in the order segments were cut)",
)
.at_least(1);

pub static ADD_ENTRY_TIMEOUT_MS: Setting<u64> = Setting::new(
    "add_entry_timeout_ms",
    30_000,
    Unit::Ms,
    "An append not acknowledged within this time fails",
)
.at_least(1);

pub static WRITE_CACHE_BYTES: Setting<usize> = Setting::new(
    "write_cache_bytes",
    128 << 20,
    Unit::Bytes,
    "Bytes of recently written segments kept in memory for tailing reads",
);

pub static READ_CACHE_BYTES: Setting<usize> = Setting::new(
    "read_cache_bytes",
    256 << 20,
    Unit::Bytes,
    "Bytes of object slices read back from the object store kept in memory",
);

pub static COMPACTED_CACHE_BYTES: Setting<usize> = Setting::new(
    "compacted_cache_bytes",
    128 << 20,
    Unit::Bytes,
    "Bytes of batches rebuilt from compacted (Parquet) files kept in memory, whole row groups",
);

pub static COMPACTED_FOOTER_CACHE_BYTES: Setting<usize> = Setting::new(
    "compacted_footer_cache_bytes",
    16 << 20,
    Unit::Bytes,
    "Bytes of parsed compacted-file footers kept in memory",
);

pub static COMPACTED_READ_AHEAD_GROUPS: Setting<usize> = Setting::new(
    "compacted_read_ahead_groups",
    4,
    Unit::None,
    "Row groups of a compacted file fetched and decoded ahead of a reader that reached the end of one (0: no read-ahead)",
);

pub static COMPACTED_READ_AHEAD_BYTES: Setting<usize> = Setting::new(
    "compacted_read_ahead_bytes",
    64 << 20,
    Unit::Bytes,
    "Bytes of row groups being fetched and decoded ahead of readers at once, all streams together; past it no read-ahead starts",
);

pub static WAL_READ_BLOCK_BYTES: Setting<usize> = Setting::new(
    "wal_read_block_bytes",
    2 << 20,
    Unit::Bytes,
    "A WAL slice smaller than this is read as the aligned block(s) of its object holding it, one GET shared by every partition in the block; larger slices are read alone",
)
.at_least(4096);

pub static WAL_READ_AHEAD_WINDOW_BYTES: Setting<usize> = Setting::new(
    "wal_read_ahead_window_bytes",
    8 << 20,
    Unit::Bytes,
    "Bytes of a partition's WAL slices fetched ahead of a reader, past what it read (0: no read-ahead)",
);

pub static WAL_READ_AHEAD_BYTES: Setting<usize> = Setting::new(
    "wal_read_ahead_bytes",
    64 << 20,
    Unit::Bytes,
    "Bytes of WAL ranges being fetched ahead of readers at once, all partitions together; past it no read-ahead starts",
);

pub static INDEX_CACHE_ENTRIES_PER_STREAM: Setting<usize> = Setting::new(
    "index_cache_entries_per_stream",
    1024,
    Unit::Count,
    "Index entries kept in memory per partition stream (the tail of its index)",
)
.at_least(1);

pub static STREAM_STATES_MAX: Setting<usize> = Setting::new(
    "stream_states_max",
    16_384,
    Unit::Count,
    "Partition streams whose state is kept in memory; past it idle ones are dropped and re-read from the index when used",
)
.at_least(1);
