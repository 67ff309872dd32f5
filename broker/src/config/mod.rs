//! Settings of the `broker` binary. Each is declared once ([`settings`], and for the engine,
//! the data location and compaction in `storage` and `compactor`), and read from flags,
//! `BROKER_*` environment variables and a TOML `--config` file; precedence: command line >
//! environment > file > default. See `docs/configuration.md`.

pub mod sasl;
pub mod settings;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Command;
use storage::config::Location;
use storage::settings::{process_env, Mode, Resolved};

pub use storage::settings::SettingsError as ConfigError;

use self::settings as s;
use crate::listener::ListenerConfig;
use crate::tls::TlsConfig;

/// Settings of one broker process, as the rest of the broker reads them.
#[derive(Debug, Clone)]
pub struct Config {
    /// The metrics and health listener.
    pub http_listen: storage::config::HttpListen,
    /// HTTPS with the TLS files of the Kafka listeners (`http_tls`).
    pub http_tls: bool,
    /// `/metrics` behind HTTP Basic authentication (`http_basic_auth`).
    pub http_basic_auth: bool,
    /// The schema registry's listener.
    pub schema_registry: crate::schemas::RegistryListenConfig,
    pub iceberg_catalog: crate::tables::CatalogConfig,
    /// How client byte rates are measured for quotas.
    pub quota_window: crate::quotas::rate::QuotaWindow,
    /// The transaction coordinator's timeouts.
    pub transactions: crate::transactions::TxnConfig,
    /// The consumer-group lag metric: on or off, its cap on series, its sampling interval.
    pub consumer_lag: crate::metrics::LagConfig,
    /// `--listeners`, or the one PLAINTEXT listener of `--listen`; never empty.
    pub listeners: Vec<ListenerConfig>,
    /// The TLS setup, when a listener uses TLS.
    pub tls: Option<TlsConfig>,
    pub data_dir: PathBuf,
    /// The object store URL, `file://<data_dir>/objects` unless set.
    pub object_store_url: String,
    pub metastore: String,
    /// Benchmarks only: latency added to every object-store call.
    pub object_latency: storage::objects::LatencyProfile,
    pub broker_id: i32,
    pub rack: Option<String>,
    pub auto_create_topics: bool,
    pub default_partitions: i32,
    pub max_frame_bytes: usize,
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    pub connections_max_idle_ms: u64,
    pub frame_read_timeout_ms: u64,
    pub queued_max_request_bytes: usize,
    pub queued_max_unauthenticated_request_bytes: usize,
    pub frame_stall_timeout_ms: u64,
    pub max_inflight_requests: usize,
    pub group_initial_rebalance_delay_ms: u64,
    pub group_min_session_timeout_ms: i32,
    pub group_consumer_session_timeout_ms: i32,
    pub group_consumer_heartbeat_interval_ms: i32,
    pub offsets_retention_minutes: u64,
    pub offsets_retention_ms: Option<u64>,
    pub offsets_retention_check_interval_ms: u64,
    /// Whether compaction runs in this process.
    pub compaction: bool,
    pub shutdown_timeout_ms: u64,
    /// Which authorizer runs, and its super users and default.
    pub authorizer: crate::security::authorizer::AuthorizerConfig,
    /// The SASL mechanisms SASL listeners offer, and what each needs.
    pub sasl: crate::security::sasl::SaslConfig,
    /// The engine's settings.
    pub storage: storage::StorageConfig,
    /// The in-process compactor's settings (also its topic defaults).
    pub compactor: compactor::CompactorConfig,
}

/// A loaded configuration and what the process was asked to do with it.
pub struct Startup {
    pub config: Config,
    pub resolved: Resolved,
    pub mode: Mode,
}

impl Startup {
    /// Parses `args` (program name first) with the environment `env` and the `--config` file.
    pub fn load<I, T>(args: I, env: &[(String, String)]) -> Result<Startup, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let command = Command::new("broker")
            .version(env!("CARGO_PKG_VERSION"))
            .about("A diskless Kafka broker: record batches go to object storage");
        let loaded = s::schema().load(command, args, env)?;
        let config = Config::from_settings(&loaded.resolved)?;
        Ok(Startup {
            config,
            resolved: loaded.resolved,
            mode: loaded.mode,
        })
    }
}

impl Config {
    /// Parses the process arguments, environment and config file.
    pub fn load() -> Result<Config, ConfigError> {
        Config::load_from(std::env::args_os())
    }

    /// Parses `args` (program name first) with the process environment.
    pub fn load_from<I, T>(args: I) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        Startup::load(args, &process_env()).map(|startup| startup.config)
    }

    /// The configuration of already loaded settings (for subcommands that load them with
    /// flags of their own, such as `broker scram`).
    pub fn from_resolved(r: &Resolved) -> Result<Config, ConfigError> {
        Config::from_settings(r)
    }

    fn from_settings(r: &Resolved) -> Result<Config, ConfigError> {
        let location = Location::from_settings(r)?;
        let storage = storage::StorageConfig::from_settings(r, &location.object_store_url);
        let compactor = compactor::CompactorConfig::from_settings(r, &location)?;
        let listeners = crate::listener::from_settings(r)?;
        let http_tls = r.get(&crate::metrics::settings::HTTP_TLS);
        let tls_user = match listeners.iter().find(|l| l.protocol.uses_tls()) {
            Some(listener) => Some(format!("the TLS listener {}", listener.name)),
            None if http_tls => Some("http_tls".to_string()),
            None => r
                .get(&crate::schemas::settings::SCHEMA_REGISTRY_TLS)
                .then(|| "schema_registry_tls".to_string()),
        };
        let tls = TlsConfig::from_settings(r, tls_user.as_deref())?;
        Ok(Config {
            listeners,
            tls,
            data_dir: location.data_dir,
            object_store_url: location.object_store_url,
            metastore: location.metastore,
            object_latency: location.latency_profile,
            broker_id: r.get(&s::BROKER_ID),
            rack: r.get(&s::RACK),
            auto_create_topics: r.get(&s::AUTO_CREATE_TOPICS),
            default_partitions: r.get(&s::DEFAULT_PARTITIONS),
            max_frame_bytes: r.get(&s::MAX_FRAME_BYTES),
            max_connections: r.get(&s::MAX_CONNECTIONS),
            max_connections_per_ip: r.get(&s::MAX_CONNECTIONS_PER_IP),
            connections_max_idle_ms: r.get(&s::CONNECTIONS_MAX_IDLE_MS),
            frame_read_timeout_ms: r.get(&s::FRAME_READ_TIMEOUT_MS),
            queued_max_request_bytes: r.get(&s::QUEUED_MAX_REQUEST_BYTES),
            queued_max_unauthenticated_request_bytes: r
                .get(&s::QUEUED_MAX_UNAUTHENTICATED_REQUEST_BYTES),
            frame_stall_timeout_ms: r.get(&s::FRAME_STALL_TIMEOUT_MS),
            max_inflight_requests: r.get(&s::MAX_INFLIGHT_REQUESTS),
            group_initial_rebalance_delay_ms: r.get(&s::GROUP_INITIAL_REBALANCE_DELAY_MS),
            group_min_session_timeout_ms: r.get(&s::GROUP_MIN_SESSION_TIMEOUT_MS),
            group_consumer_session_timeout_ms: r.get(&s::GROUP_CONSUMER_SESSION_TIMEOUT_MS),
            group_consumer_heartbeat_interval_ms: r.get(&s::GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS),
            offsets_retention_minutes: r.get(&s::OFFSETS_RETENTION_MINUTES),
            offsets_retention_ms: r.get(&s::OFFSETS_RETENTION_MS),
            offsets_retention_check_interval_ms: r.get(&s::OFFSETS_RETENTION_CHECK_INTERVAL_MS),
            compaction: r.get(&s::COMPACTION),
            shutdown_timeout_ms: r.get(&s::SHUTDOWN_TIMEOUT_MS),
            authorizer: authorizer_config(r)?,
            sasl: sasl::sasl_config(r)?,
            http_listen: storage::config::http_listen(r),
            http_tls,
            http_basic_auth: r.get(&crate::metrics::settings::HTTP_BASIC_AUTH),
            schema_registry: crate::schemas::RegistryListenConfig::from_settings(r),
            iceberg_catalog: crate::tables::CatalogConfig::from_settings(r),
            transactions: crate::transactions::TxnConfig {
                max_timeout_ms: r.get(&crate::transactions::settings::TRANSACTION_MAX_TIMEOUT_MS),
                id_expiration_ms: r.get(&crate::transactions::settings::TRANSACTIONAL_ID_EXPIRATION_MS),
                cleanup_interval_ms: r.get(
                    &crate::transactions::settings::TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS,
                ),
            },
            quota_window: crate::quotas::rate::QuotaWindow {
                size: std::time::Duration::from_secs(
                    r.get(&crate::quotas::settings::QUOTA_WINDOW_SIZE_SECONDS),
                ),
                count: r.get(&crate::quotas::settings::QUOTA_WINDOW_NUM),
            },
            consumer_lag: lag_config(r),
            storage,
            compactor,
        })
    }

    /// How long committed offsets of an empty group are kept.
    pub fn offsets_retention_ms(&self) -> u64 {
        self.offsets_retention_ms
            .unwrap_or(self.offsets_retention_minutes.saturating_mul(60_000))
    }

    /// The broker settings that give topics without an override their configs.
    pub fn topic_defaults(&self) -> &storage::topics::TopicDefaults {
        &self.compactor.topic_defaults
    }

    /// Settings of the in-process compactor.
    pub fn compactor_config(&self) -> compactor::CompactorConfig {
        self.compactor.clone()
    }

    pub fn storage_config(&self) -> storage::StorageConfig {
        self.storage.clone()
    }
}

fn lag_config(r: &Resolved) -> crate::metrics::LagConfig {
    use crate::metrics::settings as lag;
    crate::metrics::LagConfig {
        enabled: r.get(&lag::CONSUMER_LAG_METRICS),
        max_series: r.get(&lag::CONSUMER_LAG_MAX_SERIES),
        interval: std::time::Duration::from_millis(r.get(&lag::CONSUMER_LAG_INTERVAL_MS)),
    }
}

/// The authorizer settings (each was checked when read: a parse failing here is a bug).
fn authorizer_config(
    r: &Resolved,
) -> Result<crate::security::authorizer::AuthorizerConfig, ConfigError> {
    use crate::security::authorizer::{parse_super_users, AuthorizerConfig, AuthorizerKind};
    let invalid = |key: &str, reason: String| ConfigError::Invalid {
        key: key.into(),
        reason,
    };
    let kind = AuthorizerKind::parse(&r.get(&s::AUTHORIZER))
        .ok_or_else(|| invalid(s::AUTHORIZER.key, "expected none or acl".into()))?;
    let super_users = parse_super_users(&r.get(&s::SUPER_USERS).unwrap_or_default())
        .map_err(|reason| invalid(s::SUPER_USERS.key, reason))?;
    Ok(AuthorizerConfig {
        kind,
        super_users,
        allow_everyone_if_no_acl_found: r.get(&s::ALLOW_EVERYONE_IF_NO_ACL_FOUND),
        acls_max: r.get(&s::ACLS_MAX),
    })
}

/// An advertised `host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: i32,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl Endpoint {
    pub fn parse(value: &str) -> Result<Endpoint, ConfigError> {
        let invalid = |reason: &str| ConfigError::Invalid {
            key: s::ADVERTISED_LISTENER.key.into(),
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

#[cfg(test)]
mod tests;
