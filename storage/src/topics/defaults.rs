//! [`TopicDefaults`]: the broker settings an operator set (Kafka's `log.*` names), which stand in
//! for the topic configs a topic does not override. The broker and the compactor build it from
//! the same flags, so both see the same defaults.

use std::collections::BTreeMap;

use super::broker_settings::{broker_setting, BrokerSetting, Unit, BROKER_SETTINGS};
use super::defs::ConfigDef;
use super::value::{ConfigType, Value};
use super::ConfigError;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicDefaults {
    /// The settings the operator set, by Kafka name, as Kafka prints their parsed values.
    set: BTreeMap<&'static str, String>,
}

/// Where a topic's value of a config comes from when the topic does not override it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultValue {
    /// In the topic config's unit; `None` for a config without any default (null).
    pub value: Option<String>,
    /// The broker setting that provided it; `None` for Kafka's built-in default.
    pub from: Option<&'static str>,
}

impl TopicDefaults {
    /// Kafka's defaults: no broker setting set.
    pub fn kafka() -> TopicDefaults {
        TopicDefaults::default()
    }

    /// Sets broker setting `name` (a Kafka name such as `log.retention.hours`) to `raw`,
    /// validated as Kafka validates it.
    pub fn set(&mut self, name: &str, raw: &str) -> Result<(), ConfigError> {
        let setting =
            broker_setting(name).ok_or_else(|| ConfigError::UnknownBrokerSetting(name.into()))?;
        let value = Value::parse(setting.config_type, name, raw)?;
        setting.validator.check(name, &value)?;
        self.set.insert(setting.name, value.canonical());
        Ok(())
    }

    /// [`Self::set`] for several settings.
    pub fn with<'a>(
        settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<TopicDefaults, ConfigError> {
        let mut defaults = TopicDefaults::default();
        for (name, raw) in settings {
            defaults.set(name, raw)?;
        }
        Ok(defaults)
    }

    /// The value the operator gave broker setting `name`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.set.get(name).map(String::as_str)
    }

    /// Every setting the operator set, in Kafka's table order.
    pub fn settings(&self) -> impl Iterator<Item = (&'static BrokerSetting, &str)> + '_ {
        BROKER_SETTINGS
            .iter()
            .filter_map(|s| self.get(s.name).map(|v| (s, v)))
    }

    /// The value of `def` for a topic that does not override it: its first synonym the operator
    /// set (converted to the topic config's unit), else Kafka's default.
    pub fn topic_default(&self, def: &ConfigDef) -> DefaultValue {
        for name in def.synonyms {
            let (Some(raw), Some(setting)) = (self.get(name), broker_setting(name)) else {
                continue;
            };
            return DefaultValue {
                value: Some(convert(setting, raw, def.config_type)),
                from: Some(setting.name),
            };
        }
        DefaultValue {
            value: def.default.map(str::to_string),
            from: None,
        }
    }
}

/// A broker setting's value in its topic config's unit (hours and minutes to milliseconds).
fn convert(setting: &BrokerSetting, raw: &str, topic_type: ConfigType) -> String {
    if setting.unit == Unit::Same {
        return raw.to_string();
    }
    // Set values were validated as numbers; Java's multiplication wraps, saturating is kinder.
    let n: i64 = raw.parse().unwrap_or_default();
    let ms = n.saturating_mul(setting.unit.factor());
    debug_assert_eq!(topic_type, ConfigType::Long);
    ms.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topics::definition;

    fn default_of(defaults: &TopicDefaults, name: &str) -> DefaultValue {
        defaults.topic_default(definition(name).unwrap())
    }

    #[test]
    fn the_first_synonym_set_wins_in_kafkas_units() {
        let kafka = TopicDefaults::kafka();
        assert_eq!(
            default_of(&kafka, "retention.ms"),
            DefaultValue {
                value: Some("604800000".into()),
                from: None
            }
        );
        let hours = TopicDefaults::with([("log.retention.hours", "24")]).unwrap();
        assert_eq!(
            default_of(&hours, "retention.ms").value.as_deref(),
            Some("86400000")
        );
        let both = TopicDefaults::with([
            ("log.retention.hours", "24"),
            ("log.retention.minutes", "2"),
        ])
        .unwrap();
        let minutes = default_of(&both, "retention.ms");
        assert_eq!(minutes.value.as_deref(), Some("120000"));
        assert_eq!(minutes.from, Some("log.retention.minutes"));
        let roll = TopicDefaults::with([("log.roll.ms", "5000"), ("log.roll.hours", "1")]).unwrap();
        assert_eq!(
            default_of(&roll, "segment.ms").value.as_deref(),
            Some("5000")
        );
    }

    #[test]
    fn settings_are_validated_as_kafka_validates_them() {
        let mut defaults = TopicDefaults::kafka();
        assert_eq!(
            defaults.set("log.segment.bytes", "1000").unwrap_err().to_string(),
            "Invalid value 1000 for configuration log.segment.bytes: Value must be at least 1048576"
        );
        assert!(defaults.set("log.roll.hours", "0").is_err());
        assert!(defaults.set("log.retention.weeks", "1").is_err());
        defaults.set("compression.type", " gzip ").unwrap();
        assert_eq!(defaults.get("compression.type"), Some("gzip"));
        assert_eq!(
            default_of(&defaults, "compression.type").from,
            Some("compression.type")
        );
    }
}
