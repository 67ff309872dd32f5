//! Topics as the catalog stores them, and Kafka's topic configs: their definitions (name, type,
//! default, validator, documentation, effect here), the broker-level defaults that stand in for
//! absent overrides, and the typed [`TopicConfig`] both the broker and the compactor read.
//!
//! The interface retention uses: [`TopicRecord::config`] with the [`TopicDefaults`] built from
//! the `--log-*` flags gives a [`TopicConfig`] (`retention_ms`, `retention_bytes`,
//! `segment_ms`, `segment_bytes`, `segment_jitter_ms`; `None` = unlimited).

mod broker_settings;
mod config;
pub mod confluent;
mod defaults;
mod defs;
pub mod docs;
mod record;
mod table;
mod validate;
mod validator;
mod value;

pub use broker_settings::{broker_setting, BrokerSetting, Unit, BROKER_SETTINGS};
pub use config::{
    effective_value, CleanupPolicy, CompactionConfig, TimestampType, TopicCompression, TopicConfig,
};
pub use defaults::{DefaultValue, TopicDefaults};
pub use defs::{
    all_configs, definition, is_extension, ConfigDef, Effect, ICEBERG_CONFIGS, TOPIC_CONFIGS,
};
pub use record::*;
pub use table::{broker_settings_table, topic_configs_table};
pub use validate::{validate_override, validate_overrides};
pub use validator::Validator;
pub use value::{java_double, ConfigType, Value};

/// A topic config refused, with the message Kafka sends for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("Unknown topic config name: {0}")]
    UnknownName(String),
    #[error("Unknown broker setting: {0}")]
    UnknownBrokerSetting(String),
    #[error("Null value not supported for topic configs: {0}")]
    NullValue(String),
    #[error("Duplicate config name: {0}")]
    Duplicate(String),
    #[error("Invalid value {value} for configuration {name}: {reason}")]
    InvalidValue {
        name: String,
        value: String,
        reason: String,
    },
    /// A combination of values Kafka refuses, with Kafka's message.
    #[error("{0}")]
    Refused(String),
}

impl ConfigError {
    pub fn invalid(name: &str, value: &str, reason: String) -> ConfigError {
        ConfigError::InvalidValue {
            name: name.to_string(),
            value: value.to_string(),
            reason,
        }
    }
}
