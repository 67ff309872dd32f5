//! [`TopicConfig`]: the configs that mean something here, typed, resolved once from a topic's
//! overrides and the broker defaults whenever either changes. The produce path and the
//! compactor's retention read these fields; nothing re-parses strings per request.

use std::collections::BTreeMap;

use super::confluent::{SchemaValidation, SubjectNameStrategy};
use super::defaults::TopicDefaults;
use super::defs::definition;
use super::value::Value;
use super::ConfigError;

/// What a topic's log does with the batches it is given and how long it keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfig {
    pub cleanup_policy: CleanupPolicy,
    /// `retention.ms`; `None` when negative (-1: keep for ever).
    pub retention_ms: Option<u64>,
    /// `retention.bytes` per partition; `None` when negative (-1: no limit).
    pub retention_bytes: Option<u64>,
    /// `segment.ms`: Kafka rolls its active segment after this long.
    pub segment_ms: u64,
    /// `segment.bytes`: ...or once it holds this many bytes.
    pub segment_bytes: u64,
    /// `segment.jitter.ms`: up to this much is subtracted from `segment_ms` at random.
    pub segment_jitter_ms: u64,
    /// `max.message.bytes`: the largest record batch accepted (after compression).
    pub max_message_bytes: u64,
    /// `compression.type` with its level.
    pub compression: TopicCompression,
    /// `message.timestamp.type`.
    pub timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`: how far a create time may lie in the past.
    pub timestamp_before_max_ms: u64,
    /// `message.timestamp.after.max.ms`: how far a create time may lie in the future.
    pub timestamp_after_max_ms: u64,
    /// What key compaction keeps and when it runs (read when `cleanup_policy.compact`).
    pub compaction: CompactionConfig,
    /// `confluent.{key,value}.schema.validation` with their subject name strategies.
    pub schema_validation: SchemaValidation,
    /// `iceberg.enable`: the topic is also an Iceberg table.
    pub iceberg_enable: bool,
}

/// The key-compaction configs of a topic (Kafka's log cleaner settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionConfig {
    /// `min.compaction.lag.ms`: a record stays uncompacted at least this long.
    pub min_compaction_lag_ms: u64,
    /// `max.compaction.lag.ms`: a record is eligible for compaction at the latest this long
    /// after it was written, whatever the dirty ratio.
    pub max_compaction_lag_ms: u64,
    /// `delete.retention.ms`: how long a tombstone is kept once it became cleanable.
    pub delete_retention_ms: u64,
    /// `min.cleanable.dirty.ratio` in millionths: compaction starts when the uncompacted part
    /// of the cleanable log is at least this share of it.
    pub min_cleanable_dirty_ratio_ppm: u32,
}

/// `cleanup.policy`, as a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    pub delete: bool,
    pub compact: bool,
}

/// `compression.type`: keep what the producer sent, or re-encode every batch with one codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicCompression {
    Producer,
    Uncompressed,
    /// Level -1 is the codec's default.
    Gzip {
        level: i32,
    },
    Snappy,
    Lz4 {
        level: i32,
    },
    Zstd {
        level: i32,
    },
}

impl TopicCompression {
    /// The batch attribute codec id this compression writes (`None`: the producer's).
    pub fn codec(self) -> Option<i16> {
        match self {
            TopicCompression::Producer => None,
            TopicCompression::Uncompressed => Some(0),
            TopicCompression::Gzip { .. } => Some(1),
            TopicCompression::Snappy => Some(2),
            TopicCompression::Lz4 { .. } => Some(3),
            TopicCompression::Zstd { .. } => Some(4),
        }
    }
}

/// `message.timestamp.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    /// Records keep the producer's timestamps, checked against the before/after bounds.
    CreateTime,
    /// The broker stamps each batch with the time it appended it.
    LogAppendTime,
}

impl TopicConfig {
    /// Kafka's defaults for a topic without overrides on a broker without settings.
    pub fn kafka_defaults() -> TopicConfig {
        // Kafka's own defaults always resolve; fall back to a literal copy if they ever do not.
        TopicConfig::resolve(&BTreeMap::new(), &TopicDefaults::kafka()).unwrap_or(TopicConfig {
            cleanup_policy: CleanupPolicy {
                delete: true,
                compact: false,
            },
            retention_ms: Some(604_800_000),
            retention_bytes: None,
            segment_ms: 604_800_000,
            segment_bytes: 1 << 30,
            segment_jitter_ms: 0,
            max_message_bytes: 1_048_588,
            compression: TopicCompression::Producer,
            timestamp_type: TimestampType::CreateTime,
            timestamp_before_max_ms: i64::MAX as u64,
            timestamp_after_max_ms: 3_600_000,
            compaction: CompactionConfig {
                min_compaction_lag_ms: 0,
                max_compaction_lag_ms: i64::MAX as u64,
                delete_retention_ms: 86_400_000,
                min_cleanable_dirty_ratio_ppm: 500_000,
            },
            schema_validation: SchemaValidation::OFF,
            iceberg_enable: false,
        })
    }

    /// The typed config of a topic with `overrides` on a broker with `defaults`; fails on the
    /// first value that does not parse or validate, or on a combination Kafka refuses.
    pub fn resolve(
        overrides: &BTreeMap<String, String>,
        defaults: &TopicDefaults,
    ) -> Result<TopicConfig, ConfigError> {
        let get = |name: &str| effective(overrides, defaults, name);
        check_compaction_lags(&get)?;
        let cleanup_policy = cleanup_policy(&get("cleanup.policy")?);
        check_remote_storage(cleanup_policy, &get)?;
        Ok(TopicConfig {
            cleanup_policy,
            retention_ms: unlimited_if_negative(long(&get("retention.ms")?)),
            retention_bytes: unlimited_if_negative(long(&get("retention.bytes")?)),
            segment_ms: non_negative(long(&get("segment.ms")?)),
            segment_bytes: segment_bytes(overrides, defaults)?,
            segment_jitter_ms: non_negative(long(&get("segment.jitter.ms")?)),
            max_message_bytes: non_negative(long(&get("max.message.bytes")?)),
            compression: compression(&get)?,
            timestamp_type: match string(&get("message.timestamp.type")?) {
                "LogAppendTime" => TimestampType::LogAppendTime,
                _ => TimestampType::CreateTime,
            },
            timestamp_before_max_ms: non_negative(long(&get("message.timestamp.before.max.ms")?)),
            timestamp_after_max_ms: non_negative(long(&get("message.timestamp.after.max.ms")?)),
            compaction: CompactionConfig {
                min_compaction_lag_ms: non_negative(long(&get("min.compaction.lag.ms")?)),
                max_compaction_lag_ms: non_negative(long(&get("max.compaction.lag.ms")?)),
                delete_retention_ms: non_negative(long(&get("delete.retention.ms")?)),
                min_cleanable_dirty_ratio_ppm: ppm(&get("min.cleanable.dirty.ratio")?),
            },
            schema_validation: schema_validation(&get)?,
            iceberg_enable: matches!(get("iceberg.enable")?, Value::Boolean(true)),
        })
    }
}

impl TopicConfig {
    /// [`Self::resolve`] for a stored record, valid when written but perhaps not on this broker
    /// (another version, other defaults): overrides that fail are left out, and returned.
    pub fn resolve_lenient(
        overrides: &BTreeMap<String, String>,
        defaults: &TopicDefaults,
    ) -> (TopicConfig, Vec<ConfigError>) {
        let first_error = match TopicConfig::resolve(overrides, defaults) {
            Ok(config) => return (config, Vec::new()),
            Err(e) => e,
        };
        let mut errors = Vec::new();
        let kept: BTreeMap<String, String> = overrides
            .iter()
            .filter(
                |(name, _)| match effective_value(overrides, defaults, name) {
                    Ok(_) => true,
                    Err(e) => {
                        errors.push(e);
                        false
                    }
                },
            )
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match TopicConfig::resolve(&kept, defaults) {
            Ok(config) => (config, errors),
            Err(_) => {
                errors.push(first_error);
                let config = TopicConfig::resolve(&BTreeMap::new(), defaults)
                    .unwrap_or_else(|_| TopicConfig::kafka_defaults());
                (config, errors)
            }
        }
    }
}

/// The parsed, validated value of `name` for a topic: its override, else the broker default.
/// `Ok(None)` for a config without any value (Kafka's null default).
pub fn effective_value(
    overrides: &BTreeMap<String, String>,
    defaults: &TopicDefaults,
    name: &str,
) -> Result<Option<Value>, ConfigError> {
    let def = definition(name).ok_or_else(|| ConfigError::UnknownName(name.to_string()))?;
    let raw = match overrides.get(name) {
        Some(v) => Some(v.clone()),
        None => defaults.topic_default(def).value,
    };
    let Some(raw) = raw else {
        return Ok(None);
    };
    let value = Value::parse(def.config_type, name, &raw)?;
    def.validator.check(name, &value)?;
    Ok(Some(value))
}

fn effective(
    overrides: &BTreeMap<String, String>,
    defaults: &TopicDefaults,
    name: &str,
) -> Result<Value, ConfigError> {
    effective_value(overrides, defaults, name)?
        .ok_or_else(|| ConfigError::Refused(format!("{name} has no value")))
}

/// `segment.bytes`, or Kafka's testing-only `internal.segment.bytes` when set (it takes sizes
/// below the 1 MiB minimum of `segment.bytes`, as Kafka's `LogConfig` honours it).
fn segment_bytes(
    overrides: &BTreeMap<String, String>,
    defaults: &TopicDefaults,
) -> Result<u64, ConfigError> {
    let value = match effective_value(overrides, defaults, "internal.segment.bytes")? {
        Some(internal) => internal,
        None => effective(overrides, defaults, "segment.bytes")?,
    };
    Ok(non_negative(long(&value)))
}

/// Kafka refuses `min.compaction.lag.ms` above `max.compaction.lag.ms`.
fn check_compaction_lags(
    get: &impl Fn(&str) -> Result<Value, ConfigError>,
) -> Result<(), ConfigError> {
    let min = long(&get("min.compaction.lag.ms")?);
    let max = long(&get("max.compaction.lag.ms")?);
    if min > max {
        return Err(ConfigError::Refused(format!(
            "conflict topic config setting min.compaction.lag.ms ({min}) > max.compaction.lag.ms ({max})"
        )));
    }
    Ok(())
}

/// Kafka refuses tiered storage on a compacted topic (`validateNoRemoteStorageForCompactedTopic`).
fn check_remote_storage(
    policy: CleanupPolicy,
    get: &impl Fn(&str) -> Result<Value, ConfigError>,
) -> Result<(), ConfigError> {
    if policy.compact && matches!(get("remote.storage.enable")?, Value::Boolean(true)) {
        return Err(ConfigError::Refused(
            "Remote log storage is unsupported for the compacted topics".into(),
        ));
    }
    Ok(())
}

/// A ratio in `[0, 1]` (the validator checked it) in millionths.
fn ppm(value: &Value) -> u32 {
    let ratio = value.as_f64().unwrap_or(0.0).clamp(0.0, 1.0);
    // In [0, 1_000_000] after the clamp: the cast cannot truncate.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ppm = (ratio * 1_000_000.0).round() as u32;
    ppm
}

fn compression(
    get: &impl Fn(&str) -> Result<Value, ConfigError>,
) -> Result<TopicCompression, ConfigError> {
    let level = |name: &str| get(name).map(|v| int(&v));
    Ok(match string(&get("compression.type")?) {
        "uncompressed" => TopicCompression::Uncompressed,
        "gzip" => TopicCompression::Gzip {
            level: level("compression.gzip.level")?,
        },
        "snappy" => TopicCompression::Snappy,
        "lz4" => TopicCompression::Lz4 {
            level: level("compression.lz4.level")?,
        },
        "zstd" => TopicCompression::Zstd {
            level: level("compression.zstd.level")?,
        },
        _ => TopicCompression::Producer,
    })
}

fn cleanup_policy(value: &Value) -> CleanupPolicy {
    let items = match value {
        Value::List(items) => items.as_slice(),
        _ => &[],
    };
    CleanupPolicy {
        delete: items.iter().any(|i| i == "delete"),
        compact: items.iter().any(|i| i == "compact"),
    }
}

/// `confluent.{key,value}.schema.validation` and the strategy each names.
fn schema_validation(
    get: &impl Fn(&str) -> Result<Value, ConfigError>,
) -> Result<SchemaValidation, ConfigError> {
    let side = |validation: &str, strategy: &str| -> Result<_, ConfigError> {
        let on = matches!(get(validation)?, Value::Boolean(true));
        let strategy = SubjectNameStrategy::parse(string(&get(strategy)?));
        Ok(on.then_some(strategy))
    };
    Ok(SchemaValidation {
        key: side(
            "confluent.key.schema.validation",
            "confluent.key.subject.name.strategy",
        )?,
        value: side(
            "confluent.value.schema.validation",
            "confluent.value.subject.name.strategy",
        )?,
    })
}

fn long(value: &Value) -> i64 {
    match value {
        Value::Int(i) => i64::from(*i),
        Value::Long(l) => *l,
        _ => 0,
    }
}

/// An `Int` config's value (the compression levels).
fn int(value: &Value) -> i32 {
    match value {
        Value::Int(i) => *i,
        _ => 0,
    }
}

fn string(value: &Value) -> &str {
    match value {
        Value::String(s) => s,
        _ => "",
    }
}

fn unlimited_if_negative(v: i64) -> Option<u64> {
    u64::try_from(v).ok()
}

fn non_negative(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn kafka_defaults_resolve_to_kafkas_values() {
        let c = TopicConfig::resolve(&BTreeMap::new(), &TopicDefaults::kafka()).unwrap();
        assert_eq!(c, TopicConfig::kafka_defaults());
        assert_eq!(c.retention_ms, Some(604_800_000));
        assert_eq!(c.retention_bytes, None);
        assert_eq!(
            (c.segment_ms, c.segment_bytes, c.segment_jitter_ms),
            (604_800_000, 1 << 30, 0)
        );
        assert_eq!(c.max_message_bytes, 1_048_588);
        assert_eq!(c.compression, TopicCompression::Producer);
        assert_eq!(c.timestamp_type, TimestampType::CreateTime);
        assert_eq!(c.timestamp_after_max_ms, 3_600_000);
        assert_eq!(c.timestamp_before_max_ms, i64::MAX as u64);
        assert!(c.cleanup_policy.delete && !c.cleanup_policy.compact);
        assert_eq!(
            c.compaction,
            CompactionConfig {
                min_compaction_lag_ms: 0,
                max_compaction_lag_ms: i64::MAX as u64,
                delete_retention_ms: 86_400_000,
                min_cleanable_dirty_ratio_ppm: 500_000,
            }
        );
    }

    #[test]
    fn compacted_topics_resolve_their_cleaner_configs() {
        let c = TopicConfig::resolve(
            &overrides(&[
                ("cleanup.policy", "compact,delete"),
                ("min.cleanable.dirty.ratio", "0.01"),
                ("delete.retention.ms", "100"),
                ("min.compaction.lag.ms", "5"),
            ]),
            &TopicDefaults::kafka(),
        )
        .unwrap();
        assert!(c.cleanup_policy.compact && c.cleanup_policy.delete);
        assert_eq!(c.compaction.min_cleanable_dirty_ratio_ppm, 10_000);
        assert_eq!(c.compaction.delete_retention_ms, 100);
        assert_eq!(c.compaction.min_compaction_lag_ms, 5);
        let tiered = TopicConfig::resolve(
            &overrides(&[
                ("cleanup.policy", "compact"),
                ("remote.storage.enable", "true"),
            ]),
            &TopicDefaults::kafka(),
        )
        .unwrap_err();
        assert!(tiered.to_string().contains("unsupported for the compacted"));
    }

    #[test]
    fn overrides_beat_broker_defaults_which_beat_kafkas() {
        let defaults = TopicDefaults::with([
            ("log.retention.hours", "1"),
            ("compression.type", "zstd"),
            ("log.segment.bytes", "2000000"),
        ])
        .unwrap();
        let c = TopicConfig::resolve(
            &overrides(&[("retention.bytes", "-5"), ("compression.zstd.level", "7")]),
            &defaults,
        )
        .unwrap();
        assert_eq!(c.retention_ms, Some(3_600_000));
        assert_eq!(c.retention_bytes, None, "any negative size is unlimited");
        assert_eq!(c.segment_bytes, 2_000_000);
        assert_eq!(c.compression, TopicCompression::Zstd { level: 7 });
        let c = TopicConfig::resolve(&overrides(&[("retention.ms", "-1")]), &defaults).unwrap();
        assert_eq!(c.retention_ms, None);
    }

    #[test]
    fn a_topic_is_a_table_by_its_override_else_by_the_broker_default() {
        let kafka = TopicDefaults::kafka();
        assert!(
            !TopicConfig::resolve(&overrides(&[]), &kafka)
                .unwrap()
                .iceberg_enable
        );
        let on = overrides(&[("iceberg.enable", "true")]);
        assert!(TopicConfig::resolve(&on, &kafka).unwrap().iceberg_enable);
        let all = TopicDefaults::with([("iceberg.enable.default", "true")]).unwrap();
        assert!(
            TopicConfig::resolve(&overrides(&[]), &all)
                .unwrap()
                .iceberg_enable
        );
        let off = overrides(&[("iceberg.enable", "false")]);
        assert!(!TopicConfig::resolve(&off, &all).unwrap().iceberg_enable);
        assert!(TopicConfig::resolve(&overrides(&[("iceberg.enable", "yes")]), &kafka).is_err());
    }

    #[test]
    fn a_stored_record_resolves_without_its_bad_overrides() {
        let stored = overrides(&[
            ("retention.ms", "1000"),
            ("segment.bytes", "10"),
            ("some.future.config", "x"),
        ]);
        let (config, errors) = TopicConfig::resolve_lenient(&stored, &TopicDefaults::kafka());
        assert_eq!(config.retention_ms, Some(1000));
        assert_eq!(config.segment_bytes, 1 << 30);
        assert_eq!(errors.len(), 2, "{errors:?}");
    }

    #[test]
    fn conflicting_compaction_lags_are_refused() {
        let err = TopicConfig::resolve(
            &overrides(&[
                ("min.compaction.lag.ms", "10"),
                ("max.compaction.lag.ms", "5"),
            ]),
            &TopicDefaults::kafka(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"
        );
    }
}
