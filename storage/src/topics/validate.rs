//! Checking a topic's overrides as a client sends them (CreateTopics, AlterConfigs,
//! IncrementalAlterConfigs): names, values, and the combinations Kafka refuses.

use std::collections::BTreeMap;

use super::config::TopicConfig;
use super::defaults::TopicDefaults;
use super::defs::definition;
use super::value::Value;
use super::ConfigError;

/// Checks one `name=value` override and returns the value as it is stored and described
/// (Kafka's printing of the parsed value: `" 100 "` is stored as `100`).
pub fn validate_override(name: &str, raw: &str) -> Result<String, ConfigError> {
    let def = definition(name).ok_or_else(|| ConfigError::UnknownName(name.to_string()))?;
    let value = Value::parse(def.config_type, name, raw)?;
    def.validator.check(name, &value)?;
    Ok(value.canonical())
}

/// Checks a topic's whole set of overrides, each name once, none null, and that the topic's
/// resulting config resolves on a broker with `defaults`.
pub fn validate_overrides<'a>(
    configs: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    defaults: &TopicDefaults,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut out = BTreeMap::new();
    for (name, value) in configs {
        let value = value.ok_or_else(|| ConfigError::NullValue(name.to_string()))?;
        let canonical = validate_override(name, value)?;
        if out.insert(name.to_string(), canonical).is_some() {
            return Err(ConfigError::Duplicate(name.to_string()));
        }
    }
    TopicConfig::resolve(&out, defaults)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pairs: &[(&str, Option<&str>)]) -> Result<BTreeMap<String, String>, ConfigError> {
        validate_overrides(pairs.iter().copied(), &TopicDefaults::kafka())
    }

    #[test]
    fn values_are_stored_as_kafka_prints_them() {
        let stored = check(&[
            ("retention.ms", Some(" 100 ")),
            ("preallocate", Some("TRUE")),
            ("cleanup.policy", Some("delete , delete")),
            ("min.cleanable.dirty.ratio", Some("1e-1")),
        ])
        .unwrap();
        assert_eq!(stored["retention.ms"], "100");
        assert_eq!(stored["preallocate"], "true");
        assert_eq!(stored["cleanup.policy"], "delete,delete");
        assert_eq!(stored["min.cleanable.dirty.ratio"], "0.1");
    }

    #[test]
    fn unknown_null_and_duplicate_names_are_refused_and_every_cleanup_policy_accepted() {
        assert_eq!(
            check(&[("no.such", Some("1"))]).unwrap_err(),
            ConfigError::UnknownName("no.such".into())
        );
        assert_eq!(
            check(&[("retention.ms", None)]).unwrap_err(),
            ConfigError::NullValue("retention.ms".into())
        );
        assert!(matches!(
            check(&[("retention.ms", Some("1")), ("retention.ms", Some("2"))]),
            Err(ConfigError::Duplicate(_))
        ));
        for policy in ["", "delete", "compact", "compact,delete", "delete, compact"] {
            assert!(
                check(&[("cleanup.policy", Some(policy))]).is_ok(),
                "{policy}"
            );
        }
    }
}
