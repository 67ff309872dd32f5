//! The consumer-lag metric's switch and its cap on series (`docs/metrics.md`), and how the HTTP
//! listener guards what it serves (`docs/security.md`, "The HTTP listener").

use storage::settings::{AnySetting, Setting, Unit};

pub static CONSUMER_LAG: &[&dyn AnySetting] = &[
    &CONSUMER_LAG_METRICS,
    &CONSUMER_LAG_MAX_SERIES,
    &CONSUMER_LAG_INTERVAL_MS,
];

pub static HTTP_SECURITY: &[&dyn AnySetting] = &[&HTTP_TLS, &HTTP_BASIC_AUTH];

pub static HTTP_TLS: Setting<bool> = Setting::new(
    "http_tls",
    false,
    Unit::None,
    "Serve the HTTP listener over TLS (HTTPS) with ssl_cert_file and ssl_key_file, reloaded as for the Kafka listeners; client certificates as ssl_client_auth says",
);

pub static HTTP_BASIC_AUTH: Setting<bool> = Setting::new(
    "http_basic_auth",
    false,
    Unit::None,
    "`/metrics` asks for HTTP Basic authentication as a broker user (SCRAM credentials or sasl_plain_users_file) allowed DESCRIBE on the cluster; `/healthz` and `/readyz` stay open",
);

pub static CONSUMER_LAG_METRICS: Setting<bool> = Setting::new(
    "consumer_lag_metrics",
    true,
    Unit::None,
    "Export `kafka_consumergroup_lag` per group, topic and partition for the groups this broker coordinates; off, the sampler does not run and no series is exported",
);

pub static CONSUMER_LAG_MAX_SERIES: Setting<usize> = Setting::new(
    "consumer_lag_max_series",
    1000,
    Unit::Count,
    "Most lag series exported (groups by id, then topic and partition); the groups past it are not read, and are counted in `diskless_consumergroup_lag_groups_dropped`",
)
.at_least(1)
.at_most(1_000_000);

pub static CONSUMER_LAG_INTERVAL_MS: Setting<u64> = Setting::new(
    "consumer_lag_interval_ms",
    15_000,
    Unit::Ms,
    "How often lag is sampled: each sample reads the committed offsets of every group this broker coordinates from the MetaStore",
)
.at_least(1000)
.at_most(3_600_000);
