//! Command-line contract of the `broker` binary. Every flag can also come from a `BROKER_*`
//! environment variable or from a TOML file (`--config`, keys are the flag names with
//! underscores). Precedence: command line > environment > file > default.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser};

/// Settings of one broker process.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "broker",
    version,
    about = "A diskless Kafka broker: record batches go to object storage"
)]
pub struct Config {
    /// TOML file with settings (keys are flag names with underscores, e.g. `data_dir`).
    #[arg(long, env = "BROKER_CONFIG")]
    pub config: Option<PathBuf>,

    /// Address the Kafka listener binds to.
    #[arg(long, env = "BROKER_LISTEN", default_value = "127.0.0.1:9092")]
    pub listen: SocketAddr,

    /// `host:port` clients are told to connect to (defaults to the bound listen address).
    #[arg(long, env = "BROKER_ADVERTISED_LISTENER")]
    pub advertised_listener: Option<String>,

    /// Local data directory: objects in `<dir>/objects`, embedded metadata in `<dir>/meta`.
    #[arg(long, env = "BROKER_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Object store URL: `file:///path`, `memory://`, `s3://bucket/prefix` (default: `file://<data-dir>/objects`).
    #[arg(long, env = "BROKER_OBJECT_STORE")]
    pub object_store: Option<String>,

    /// Metadata store: `embedded`, `oxia://host:port/namespace`, or `memory` (this process
    /// only, not durable: for tests and benchmarks).
    #[arg(long, env = "BROKER_METASTORE", default_value = "embedded")]
    pub metastore: String,

    /// This broker's id, unique in the cluster.
    #[arg(long, env = "BROKER_BROKER_ID", default_value_t = 1)]
    pub broker_id: i32,

    /// Rack (zone) reported to clients.
    #[arg(long, env = "BROKER_RACK")]
    pub rack: Option<String>,

    /// Create unknown topics when a client's Metadata request asks for it.
    #[arg(long, env = "BROKER_AUTO_CREATE_TOPICS", default_value_t = true, action = clap::ArgAction::Set)]
    pub auto_create_topics: bool,

    /// Partitions of topics created without an explicit count (auto-created or `num_partitions=-1`).
    #[arg(long, env = "BROKER_DEFAULT_PARTITIONS", default_value_t = 1)]
    pub default_partitions: i32,

    /// Largest request frame accepted; a larger one closes the connection.
    #[arg(long, env = "BROKER_MAX_FRAME_BYTES", default_value_t = protocol::frame::DEFAULT_MAX_FRAME_BYTES)]
    pub max_frame_bytes: usize,

    /// Client connections served at once; when all are taken, the oldest that has not sent a
    /// request yet is closed for a newcomer, else newcomers wait in the accept backlog.
    #[arg(long, env = "BROKER_MAX_CONNECTIONS", default_value_t = 1024)]
    pub max_connections: usize,

    /// Connections from one IP address at once; further ones are closed (Kafka's
    /// `max.connections.per.ip`).
    #[arg(long, env = "BROKER_MAX_CONNECTIONS_PER_IP", default_value_t = i32::MAX as usize)]
    pub max_connections_per_ip: usize,

    /// A connection with no request in flight that sends nothing for this long is closed
    /// (Kafka's `connections.max.idle.ms`).
    #[arg(
        long,
        env = "BROKER_CONNECTIONS_MAX_IDLE_MS",
        default_value_t = 600_000
    )]
    pub connections_max_idle_ms: u64,

    /// Once a request frame has started, its length and body must arrive within this long.
    #[arg(long, env = "BROKER_FRAME_READ_TIMEOUT_MS", default_value_t = 60_000)]
    pub frame_read_timeout_ms: u64,

    /// Request bytes being read or served across all connections (Kafka's
    /// `queued.max.request.bytes`); past it, connections pause reading. At least `max_frame_bytes`.
    #[arg(long, env = "BROKER_QUEUED_MAX_REQUEST_BYTES", default_value_t = 256 << 20)]
    pub queued_max_request_bytes: usize,

    /// Requests of one connection processed concurrently (responses still go out in order).
    #[arg(long, env = "BROKER_MAX_INFLIGHT_REQUESTS", default_value_t = 64)]
    pub max_inflight_requests: usize,

    /// Bytes at which a WAL segment (one object) is closed.
    #[arg(long, env = "BROKER_WRITE_BUFFER_SIZE", default_value_t = 4 << 20)]
    pub write_buffer_size: usize,

    /// Pending bytes that trigger a flush before the interval elapses.
    #[arg(long, env = "BROKER_WRITE_BUFFER_FLUSH_SIZE", default_value_t = 256 << 20)]
    pub write_buffer_flush_size: usize,

    /// Longest wait before buffered appends are written (default: 250, or 10 for file:// and memory://).
    #[arg(long, env = "BROKER_WRITE_BUFFER_FLUSH_INTERVAL_MS")]
    pub write_buffer_flush_interval_ms: Option<u64>,

    /// Partition streams packed into one WAL object at most.
    #[arg(long, env = "BROKER_WRITE_BUFFER_MAX_STREAMS", default_value_t = 256)]
    pub write_buffer_max_streams: usize,

    /// Bytes accepted but not yet durable; past it produce requests are refused (retriable).
    #[arg(long, env = "BROKER_MAX_PENDING_BYTES", default_value_t = 256 << 20)]
    pub max_pending_bytes: usize,

    /// Bytes of object slices cached in memory for reads.
    #[arg(long, env = "BROKER_READ_CACHE_BYTES", default_value_t = 256 << 20)]
    pub read_cache_bytes: usize,

    /// An append not acknowledged within this time fails.
    #[arg(long, env = "BROKER_ADD_ENTRY_TIMEOUT_MS", default_value_t = 30_000)]
    pub add_entry_timeout_ms: u64,

    /// How long the first rebalance of a new consumer group waits for more members.
    #[arg(
        long,
        env = "BROKER_GROUP_INITIAL_REBALANCE_DELAY_MS",
        default_value_t = 3000
    )]
    pub group_initial_rebalance_delay_ms: u64,

    /// Smallest session timeout a group member may ask for.
    #[arg(
        long,
        env = "BROKER_GROUP_MIN_SESSION_TIMEOUT_MS",
        default_value_t = 6000
    )]
    pub group_min_session_timeout_ms: i32,

    /// Session timeout of consumer-protocol (KIP-848) group members.
    #[arg(
        long,
        env = "BROKER_GROUP_CONSUMER_SESSION_TIMEOUT_MS",
        default_value_t = 45_000
    )]
    pub group_consumer_session_timeout_ms: i32,

    /// Heartbeat interval given to consumer-protocol (KIP-848) group members.
    #[arg(
        long,
        env = "BROKER_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS",
        default_value_t = 5_000
    )]
    pub group_consumer_heartbeat_interval_ms: i32,

    /// Committed offsets of a group without members are deleted this long after their last
    /// commit (or after the group became empty, if later).
    #[arg(
        long,
        env = "BROKER_OFFSETS_RETENTION_MINUTES",
        default_value_t = 10_080
    )]
    pub offsets_retention_minutes: u64,

    /// Offset retention in milliseconds; overrides `--offsets-retention-minutes` when set (as
    /// `log.retention.ms` overrides `log.retention.minutes` in Kafka).
    #[arg(long, env = "BROKER_OFFSETS_RETENTION_MS")]
    pub offsets_retention_ms: Option<u64>,

    /// Pause between offset expiry runs.
    #[arg(
        long,
        env = "BROKER_OFFSETS_RETENTION_CHECK_INTERVAL_MS",
        default_value_t = 600_000
    )]
    pub offsets_retention_check_interval_ms: u64,

    /// Run the compactor (WAL -> Parquet, reclamation) inside this process; clusters run the
    /// separate `compactor` binary instead.
    #[arg(long, env = "BROKER_COMPACTION", default_value_t = true, action = clap::ArgAction::Set)]
    pub compaction: bool,

    /// Age of the oldest uncompacted entry after which a stream range is compacted.
    #[arg(long, env = "BROKER_COMPACTION_MIN_AGE_MS", default_value_t = 60_000)]
    pub compaction_min_age_ms: u64,

    /// Wait between marking an unreferenced WAL object and deleting it.
    #[arg(
        long,
        env = "BROKER_COMPACTION_GRACE_PERIOD_MS",
        default_value_t = 60_000
    )]
    pub compaction_grace_period_ms: u64,

    /// Pause between compaction passes.
    #[arg(long, env = "BROKER_COMPACTION_INTERVAL_MS", default_value_t = 10_000)]
    pub compaction_interval_ms: u64,

    /// In-process compaction applies retention at most this often (Kafka's
    /// `log.retention.check.interval.ms`).
    #[arg(
        long,
        env = "BROKER_LOG_RETENTION_CHECK_INTERVAL_MS",
        default_value_t = 300_000
    )]
    pub log_retention_check_interval_ms: u64,

    /// Uncompacted bytes of a stream range that make it due before its age does.
    #[arg(long, env = "BROKER_COMPACTION_MIN_BYTES", default_value_t = 8 << 20)]
    pub compaction_min_bytes: u64,

    /// Stream ranges compacted concurrently.
    #[arg(long, env = "BROKER_COMPACTION_WORKERS", default_value_t = 2)]
    pub compaction_workers: usize,

    /// A compaction task failing this many times becomes DEAD (not retried automatically).
    #[arg(long, env = "BROKER_COMPACTION_TASK_ATTEMPTS_MAX", default_value_t = 5)]
    pub compaction_task_attempts_max: u32,

    /// Wait before the first retry of a failed compaction task; doubles per failure.
    #[arg(
        long,
        env = "BROKER_COMPACTION_RETRY_BACKOFF_MS",
        default_value_t = 1_000
    )]
    pub compaction_retry_backoff_ms: u64,

    /// Cap of the compaction retry backoff.
    #[arg(
        long,
        env = "BROKER_COMPACTION_RETRY_BACKOFF_MAX_MS",
        default_value_t = 300_000
    )]
    pub compaction_retry_backoff_max_ms: u64,

    /// Longest wait for in-flight requests on shutdown.
    #[arg(long, env = "BROKER_SHUTDOWN_TIMEOUT_MS", default_value_t = 30_000)]
    pub shutdown_timeout_ms: u64,

    /// Defaults of topics without an override, by Kafka's broker setting names
    /// (`--log-retention-ms`, `--log-segment-bytes`, `--compression-type`, ...; see
    /// `docs/topic-configs.md`). The compactor takes the same flags.
    #[command(flatten)]
    pub topic_defaults: compactor::topic_flags::TopicDefaultFlags,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Bad flag, bad value, `--help` or `--version` (clap prints and exits with the right code).
    #[error(transparent)]
    Cli(#[from] clap::Error),
    #[error("cannot read config file {path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("config file {path}: unknown key {key:?}")]
    UnknownKey { path: PathBuf, key: String },
    #[error("invalid setting {name}: {reason}")]
    Invalid { name: &'static str, reason: String },
}

/// An advertised `host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: i32,
}

impl Endpoint {
    pub fn parse(value: &str) -> Result<Endpoint, ConfigError> {
        let invalid = |reason: &str| ConfigError::Invalid {
            name: "advertised_listener",
            reason: format!("{value:?}: {reason}"),
        };
        // Tolerate a `PLAINTEXT://` style scheme, as Kafka operators write it.
        let rest = value.split_once("://").map_or(value, |(_, rest)| rest);
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| invalid("expected host:port"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(invalid("empty host"));
        }
        let port: u16 = port.parse().map_err(|_| invalid("bad port"))?;
        Ok(Endpoint {
            host: host.to_string(),
            port: i32::from(port),
        })
    }
}

impl Config {
    /// Parses the process arguments, environment and config file.
    pub fn load() -> Result<Config, ConfigError> {
        Config::load_from(std::env::args_os())
    }

    pub fn load_from<I, T>(args: I) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let command = Config::command();
        let mut matches = command.clone().try_get_matches_from(&args)?;
        if let Some(path) = matches.get_one::<PathBuf>("config").cloned() {
            // File values are passed as extra flags, but only for settings that neither the
            // command line nor the environment set, which gives file < env < command line.
            for (key, value) in read_file(&path)? {
                let known = command.get_arguments().any(|a| a.get_id().as_str() == key);
                if !known || key == "config" {
                    return Err(ConfigError::UnknownKey {
                        path: path.clone(),
                        key,
                    });
                }
                let source = matches.value_source(&key);
                if matches!(source, None | Some(ValueSource::DefaultValue)) {
                    args.push(format!("--{}={}", key.replace('_', "-"), value).into());
                }
            }
            matches = command.try_get_matches_from(&args)?;
        }
        let config = Config::from_arg_matches(&matches)?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let check = |ok: bool, name: &'static str, reason: &str| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError::Invalid {
                    name,
                    reason: reason.to_string(),
                })
            }
        };
        check(self.broker_id >= 0, "broker_id", "must be >= 0")?;
        check(
            self.default_partitions >= 1,
            "default_partitions",
            "must be >= 1",
        )?;
        check(
            (1024..=i32::MAX as usize).contains(&self.max_frame_bytes),
            "max_frame_bytes",
            "must be between 1024 and 2147483647",
        )?;
        check(self.max_connections >= 1, "max_connections", "must be >= 1")?;
        check(
            self.max_connections_per_ip >= 1,
            "max_connections_per_ip",
            "must be >= 1",
        )?;
        check(
            self.connections_max_idle_ms >= 1,
            "connections_max_idle_ms",
            "must be >= 1",
        )?;
        check(
            self.frame_read_timeout_ms >= 1,
            "frame_read_timeout_ms",
            "must be >= 1",
        )?;
        check(
            self.queued_max_request_bytes >= self.max_frame_bytes
                && self.queued_max_request_bytes <= tokio::sync::Semaphore::MAX_PERMITS,
            "queued_max_request_bytes",
            "must be at least max_frame_bytes",
        )?;
        check(
            self.max_inflight_requests >= 1,
            "max_inflight_requests",
            "must be >= 1",
        )?;
        check(
            self.write_buffer_size >= 1,
            "write_buffer_size",
            "must be >= 1",
        )?;
        check(
            self.write_buffer_flush_size >= 1,
            "write_buffer_flush_size",
            "must be >= 1",
        )?;
        check(
            self.write_buffer_max_streams >= 1,
            "write_buffer_max_streams",
            "must be >= 1",
        )?;
        check(
            self.max_pending_bytes >= 1,
            "max_pending_bytes",
            "must be >= 1",
        )?;
        check(
            self.add_entry_timeout_ms >= 1,
            "add_entry_timeout_ms",
            "must be >= 1",
        )?;
        check(
            self.group_consumer_session_timeout_ms >= 1,
            "group_consumer_session_timeout_ms",
            "must be >= 1",
        )?;
        check(
            self.group_consumer_heartbeat_interval_ms >= 1
                && self.group_consumer_heartbeat_interval_ms
                    < self.group_consumer_session_timeout_ms,
            "group_consumer_heartbeat_interval_ms",
            "must be >= 1 and below group_consumer_session_timeout_ms",
        )?;
        // Minutes beyond this overflow milliseconds in u64 arithmetic.
        check(
            (1..=u64::MAX / 60_000).contains(&self.offsets_retention_minutes),
            "offsets_retention_minutes",
            "must be >= 1",
        )?;
        check(
            self.offsets_retention_ms.is_none_or(|ms| ms >= 1),
            "offsets_retention_ms",
            "must be >= 1",
        )?;
        check(
            self.offsets_retention_check_interval_ms >= 1,
            "offsets_retention_check_interval_ms",
            "must be >= 1",
        )?;
        check(
            self.compaction_workers >= 1,
            "compaction_workers",
            "must be >= 1",
        )?;
        check(
            self.compaction_task_attempts_max >= 1,
            "compaction_task_attempts_max",
            "must be >= 1",
        )?;
        check(
            self.compaction_retry_backoff_ms >= 1
                && self.compaction_retry_backoff_ms <= self.compaction_retry_backoff_max_ms,
            "compaction_retry_backoff_ms",
            "must be >= 1 and at most compaction_retry_backoff_max_ms",
        )?;
        check(
            self.metastore == "embedded"
                || self.metastore.starts_with("oxia://")
                || self.metastore == "memory"
                || self.metastore.starts_with("memory://"),
            "metastore",
            "expected `embedded`, `oxia://host:port/namespace` or `memory`",
        )?;
        if let Some(advertised) = &self.advertised_listener {
            Endpoint::parse(advertised)?;
        }
        Ok(())
    }

    /// The object store URL, defaulting to a folder inside the data directory.
    pub fn object_store_url(&self) -> Result<String, ConfigError> {
        if let Some(url) = &self.object_store {
            return Ok(url.clone());
        }
        let dir =
            absolute(&self.data_dir.join("objects")).map_err(|reason| ConfigError::Invalid {
                name: "data_dir",
                reason,
            })?;
        Ok(format!("file://{}", dir.display()))
    }

    /// The flush interval: short for local stores, where a PUT is cheap and fast.
    pub fn flush_interval_ms(&self) -> u64 {
        if let Some(ms) = self.write_buffer_flush_interval_ms {
            return ms;
        }
        let local = match &self.object_store {
            None => true,
            Some(url) => url.starts_with("file://") || url.starts_with("memory://"),
        };
        if local {
            10
        } else {
            250
        }
    }

    /// How long committed offsets of an empty group are kept.
    pub fn offsets_retention_ms(&self) -> u64 {
        self.offsets_retention_ms
            .unwrap_or(self.offsets_retention_minutes.saturating_mul(60_000))
    }

    /// The broker settings that give topics without an override their configs.
    pub fn topic_defaults(&self) -> &storage::topics::TopicDefaults {
        &self.topic_defaults.defaults
    }

    /// Settings of the in-process compactor.
    pub fn compactor_config(&self) -> compactor::CompactorConfig {
        compactor::CompactorConfig {
            min_age_ms: self.compaction_min_age_ms,
            grace_period_ms: self.compaction_grace_period_ms,
            interval_ms: self.compaction_interval_ms,
            retention_check_interval_ms: self.log_retention_check_interval_ms,
            min_bytes: self.compaction_min_bytes,
            workers: self.compaction_workers,
            task_attempts_max: self.compaction_task_attempts_max,
            retry_backoff_ms: self.compaction_retry_backoff_ms,
            retry_backoff_max_ms: self.compaction_retry_backoff_max_ms,
            topic_defaults: self.topic_defaults().clone(),
            local_folder: self
                .object_store_url()
                .ok()
                .and_then(|url| storage::objects::local_folder(&url)),
            ..compactor::CompactorConfig::default()
        }
    }

    pub fn storage_config(&self) -> storage::StorageConfig {
        storage::StorageConfig {
            write_buffer_size: self.write_buffer_size,
            write_buffer_flush_size: self.write_buffer_flush_size,
            write_buffer_flush_interval_ms: self.flush_interval_ms(),
            write_buffer_max_streams: self.write_buffer_max_streams,
            max_pending_bytes: self.max_pending_bytes,
            read_cache_bytes: self.read_cache_bytes,
            add_entry_timeout_ms: self.add_entry_timeout_ms,
            ..storage::StorageConfig::default()
        }
    }
}

fn absolute(path: &Path) -> Result<PathBuf, String> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .map_err(|e| e.to_string())
}

/// Reads a flat TOML table into `(key, value-as-flag-text)` pairs.
fn read_file(path: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    let file_error = |reason: String| ConfigError::File {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| file_error(e.to_string()))?;
    let mut out = Vec::with_capacity(table.len());
    for (key, value) in table {
        let text = match value {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => {
                return Err(file_error(format!(
                    "key {key:?}: unsupported value {other}"
                )))
            }
        };
        out.push((key, text));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    // Tests never read the real environment variables: they only use flags and files, and the
    // env-var precedence is covered by `broker/tests/cli.rs` on a child process.

    #[test]
    fn defaults_match_the_command_line_contract() {
        let config = Config::load_from(["broker"]).unwrap();
        assert_eq!(config.listen, "127.0.0.1:9092".parse().unwrap());
        assert_eq!(config.data_dir, PathBuf::from("./data"));
        assert_eq!(config.metastore, "embedded");
        assert!(config.auto_create_topics);
        assert_eq!(config.default_partitions, 1);
        assert!(config
            .object_store_url()
            .unwrap()
            .ends_with("/data/objects"));
    }

    #[test]
    fn file_values_apply_below_command_line_flags() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(
            file,
            "default_partitions = 3\nbroker_id = 7\nauto_create_topics = false"
        )
        .unwrap();
        let path = file.path().to_str().unwrap().to_string();
        let config = Config::load_from(["broker", "--config", &path, "--broker-id", "9"]).unwrap();
        assert_eq!(config.default_partitions, 3);
        assert!(!config.auto_create_topics);
        assert_eq!(config.broker_id, 9);
    }

    #[test]
    fn topic_defaults_come_from_flags_and_file_under_kafkas_names() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(
            file,
            "log_retention_hours = 2\ncompression_type = \"lz4\"\nlog_segment_bytes = 2000000"
        )
        .unwrap();
        let path = file.path().to_str().unwrap().to_string();
        let config = Config::load_from([
            "broker",
            "--config",
            &path,
            "--compression-type",
            "zstd",
            "--log-message-timestamp-type",
            "LogAppendTime",
        ])
        .unwrap();
        let defaults = config.topic_defaults();
        assert_eq!(defaults.get("log.retention.hours"), Some("2"));
        assert_eq!(defaults.get("compression.type"), Some("zstd"));
        assert_eq!(defaults.get("log.segment.bytes"), Some("2000000"));
        assert_eq!(
            defaults.get("log.message.timestamp.type"),
            Some("LogAppendTime")
        );
        assert_eq!(config.compactor_config().topic_defaults, *defaults);
        assert!(Config::load_from(["broker", "--log-roll-hours", "0"]).is_err());
        assert!(Config::load_from(["broker", "--compression-type", "brotli"]).is_err());
    }

    #[test]
    fn unknown_file_key_is_an_error() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "no_such_setting = 1").unwrap();
        let path = file.path().to_str().unwrap().to_string();
        let err = Config::load_from(["broker", "--config", &path]).unwrap_err();
        assert!(matches!(err, ConfigError::UnknownKey { .. }), "{err}");
    }

    #[test]
    fn invalid_values_are_rejected() {
        assert!(Config::load_from(["broker", "--default-partitions", "0"]).is_err());
        assert!(Config::load_from(["broker", "--metastore", "zookeeper"]).is_err());
        assert!(Config::load_from(["broker", "--listen", "nowhere"]).is_err());
        assert!(Config::load_from(["broker", "--advertised-listener", "hostonly"]).is_err());
        assert!(Config::load_from(["broker", "--offsets-retention-minutes", "0"]).is_err());
        assert!(
            Config::load_from(["broker", "--offsets-retention-check-interval-ms", "0"]).is_err()
        );
        assert!(Config::load_from([
            "broker",
            "--group-consumer-session-timeout-ms",
            "5000",
            "--group-consumer-heartbeat-interval-ms",
            "5000"
        ])
        .is_err());
        assert!(Config::load_from(["broker", "--compaction-workers", "0"]).is_err());
        assert!(Config::load_from(["broker", "--compaction-task-attempts-max", "0"]).is_err());
        assert!(Config::load_from([
            "broker",
            "--compaction-retry-backoff-ms",
            "10",
            "--compaction-retry-backoff-max-ms",
            "5"
        ])
        .is_err());
    }

    #[test]
    fn group_and_compaction_settings_reach_their_configs() {
        let config = Config::load_from([
            "broker",
            "--offsets-retention-minutes",
            "2",
            "--offsets-retention-check-interval-ms",
            "500",
            "--group-consumer-session-timeout-ms",
            "20000",
            "--group-consumer-heartbeat-interval-ms",
            "2000",
            "--compaction-workers",
            "4",
            "--compaction-min-bytes",
            "1024",
            "--compaction-task-attempts-max",
            "3",
            "--compaction-retry-backoff-ms",
            "50",
            "--compaction-retry-backoff-max-ms",
            "400",
        ])
        .unwrap();
        let groups = crate::groups::GroupConfig::from_config(&config);
        assert_eq!(groups.offsets_retention_ms, 120_000);
        assert_eq!(groups.offsets_retention_check_interval_ms, 500);
        assert_eq!(groups.consumer.session_timeout_ms, 20_000);
        assert_eq!(groups.consumer.heartbeat_interval_ms, 2_000);
        let compactor = config.compactor_config();
        assert_eq!(compactor.workers, 4);
        assert_eq!(compactor.min_bytes, 1024);
        assert_eq!(compactor.task_attempts_max, 3);
        assert_eq!(compactor.retry_backoff_ms, 50);
        assert_eq!(compactor.retry_backoff_max_ms, 400);
        let defaults =
            crate::groups::GroupConfig::from_config(&Config::load_from(["broker"]).unwrap());
        assert_eq!(defaults.offsets_retention_ms, 7 * 24 * 60 * 60 * 1000);
        let precise = Config::load_from([
            "broker",
            "--offsets-retention-minutes",
            "2",
            "--offsets-retention-ms",
            "1500",
        ])
        .unwrap();
        assert_eq!(precise.offsets_retention_ms(), 1500);
        assert_eq!(defaults.consumer.session_timeout_ms, 45_000);
    }

    #[test]
    fn advertised_listener_accepts_scheme_and_ipv6() {
        assert_eq!(
            Endpoint::parse("PLAINTEXT://kafka-1:9093").unwrap(),
            Endpoint {
                host: "kafka-1".into(),
                port: 9093
            }
        );
        assert_eq!(
            Endpoint::parse("[::1]:9092").unwrap(),
            Endpoint {
                host: "::1".into(),
                port: 9092
            }
        );
    }
}
