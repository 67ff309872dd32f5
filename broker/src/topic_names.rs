//! Topic-level configs this broker understands, their defaults and validation, plus topic-name
//! rules. Kafka clients expect INVALID_CONFIG / INVALID_TOPIC_EXCEPTION with a clear message.

use std::collections::BTreeMap;

pub const RETENTION_MS: &str = "retention.ms";
pub const RETENTION_BYTES: &str = "retention.bytes";
pub const MAX_MESSAGE_BYTES: &str = "max.message.bytes";
pub const CLEANUP_POLICY: &str = "cleanup.policy";

/// Kafka's `config_type` codes in DescribeConfigs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Long = 5,
    List = 7,
}

pub struct TopicConfigDef {
    pub name: &'static str,
    pub default: &'static str,
    pub config_type: ConfigType,
    /// The broker-level setting this topic config falls back to.
    pub broker_synonym: &'static str,
    pub doc: &'static str,
}

pub const TOPIC_CONFIGS: &[TopicConfigDef] = &[
    TopicConfigDef {
        name: CLEANUP_POLICY,
        default: "delete",
        config_type: ConfigType::List,
        broker_synonym: "log.cleanup.policy",
        doc: "Only `delete` is supported: records expire by retention.ms/retention.bytes.",
    },
    TopicConfigDef {
        name: MAX_MESSAGE_BYTES,
        default: "1048588",
        config_type: ConfigType::Int,
        broker_synonym: "message.max.bytes",
        doc: "Largest record batch size allowed in this topic.",
    },
    TopicConfigDef {
        name: RETENTION_BYTES,
        default: "-1",
        config_type: ConfigType::Long,
        broker_synonym: "log.retention.bytes",
        doc: "Bytes kept per partition before old data is deleted; -1 means no limit.",
    },
    TopicConfigDef {
        name: RETENTION_MS,
        default: "604800000",
        config_type: ConfigType::Long,
        broker_synonym: "log.retention.ms",
        doc: "Time a record is kept before it is deleted; -1 means no limit.",
    },
];

pub fn definition(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// A config refused, with the message sent to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidConfig(pub String);

/// Checks one `name=value` pair.
pub fn validate(name: &str, value: &str) -> Result<(), InvalidConfig> {
    let invalid = |why: &str| {
        Err(InvalidConfig(format!(
            "Invalid value {value} for configuration {name}: {why}"
        )))
    };
    match name {
        RETENTION_MS | RETENTION_BYTES => match value.trim().parse::<i64>() {
            Ok(v) if v >= -1 => Ok(()),
            _ => invalid("must be a long >= -1"),
        },
        MAX_MESSAGE_BYTES => match value.trim().parse::<i32>() {
            Ok(v) if v >= 0 => Ok(()),
            _ => invalid("must be an int >= 0"),
        },
        CLEANUP_POLICY => {
            let policies: Vec<&str> = value.split(',').map(str::trim).collect();
            if policies.contains(&"compact") {
                return invalid("cleanup.policy=compact is not supported by this broker (diskless topics are delete-only)");
            }
            if policies.iter().all(|p| *p == "delete") {
                Ok(())
            } else {
                invalid("must be delete")
            }
        }
        _ => Err(InvalidConfig(format!("Unknown topic config name: {name}"))),
    }
}

/// Checks a full set of overrides; a `None` value (null in the request) is refused.
pub fn validate_all<'a>(
    configs: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<BTreeMap<String, String>, InvalidConfig> {
    let mut out = BTreeMap::new();
    for (name, value) in configs {
        let value = value.ok_or_else(|| {
            InvalidConfig(format!(
                "Null value not supported for topic configs: {name}"
            ))
        })?;
        validate(name, value)?;
        if out
            .insert(name.to_string(), value.trim().to_string())
            .is_some()
        {
            return Err(InvalidConfig(format!("Duplicate config name: {name}")));
        }
    }
    Ok(out)
}

/// The effective value of `name` for a topic with these overrides, and whether it is the default.
pub fn effective<'a>(
    overrides: &'a BTreeMap<String, String>,
    def: &'static TopicConfigDef,
) -> (&'a str, bool) {
    match overrides.get(def.name) {
        Some(v) => (v.as_str(), false),
        None => (def.default, true),
    }
}

pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// Kafka's topic name rules.
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Topic name is illegal, it can't be empty".into());
    }
    if name == "." || name == ".." {
        return Err("Topic name cannot be \".\" or \"..\"".into());
    }
    if name.len() > MAX_TOPIC_NAME_LEN {
        return Err(format!(
            "Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LEN} characters"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')
    {
        return Err(format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

/// Kafka refuses names that differ from an existing one only by '.' vs '_' (metric collision).
pub fn collides(a: &str, b: &str) -> bool {
    a != b && a.replace('.', "_") == b.replace('.', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_is_refused_with_a_clear_message() {
        let err = validate(CLEANUP_POLICY, "compact").unwrap_err();
        assert!(err.0.contains("compact is not supported"), "{err}");
        assert!(validate(CLEANUP_POLICY, "compact,delete").is_err());
        assert!(validate(CLEANUP_POLICY, "delete").is_ok());
    }

    #[test]
    fn numeric_configs_are_range_checked() {
        assert!(validate(RETENTION_MS, "-1").is_ok());
        assert!(validate(RETENTION_MS, "-2").is_err());
        assert!(validate(RETENTION_BYTES, "abc").is_err());
        assert!(validate(MAX_MESSAGE_BYTES, "99999999999").is_err());
        assert!(validate("segment.jitter.ms", "1").is_err());
    }

    #[test]
    fn topic_names_follow_kafka_rules() {
        assert!(validate_topic_name("orders.v1_x-2").is_ok());
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name("..").is_err());
        assert!(validate_topic_name("a/b").is_err());
        assert!(validate_topic_name(&"x".repeat(250)).is_err());
        assert!(collides("a.b", "a_b"));
        assert!(!collides("a.b", "a.b"));
    }
}
