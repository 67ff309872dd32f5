//! Kafka's broker settings that give topics without an override their configs
//! (`log.retention.ms`, `log.segment.bytes`, `compression.type`, ...), as settings of both
//! binaries. They are declared once, in `topics::BROKER_SETTINGS` with Kafka's names, types,
//! defaults and validators; here each becomes a setting whose key is the Kafka name with `_`
//! (`log_retention_ms`, flag `--log-retention-ms`, variable `BROKER_LOG_RETENTION_MS`).

use std::sync::OnceLock;

use super::resolved::{Resolved, Source};
use super::setting::{AnySetting, Parsed};
use super::SettingsError;
use crate::topics::{
    definition, BrokerSetting, ConfigType, Effect, TopicDefaults, BROKER_SETTINGS,
};

/// One Kafka broker setting as a setting of ours.
pub struct TopicSetting {
    pub setting: &'static BrokerSetting,
    key: String,
    help: String,
}

/// Settings with a flag: those whose topic config does something here. `log.cleanup.policy`
/// has none: a broker-wide default policy is rarely wanted, topics set theirs.
fn has_flag(setting: &BrokerSetting) -> bool {
    let effect = definition(setting.topic_config).map(|d| d.effect);
    !matches!(effect, None | Some(Effect::None(_))) && setting.name != "log.cleanup.policy"
}

fn all() -> &'static [TopicSetting] {
    static SETTINGS: OnceLock<Vec<TopicSetting>> = OnceLock::new();
    SETTINGS.get_or_init(|| {
        BROKER_SETTINGS
            .iter()
            .filter(|s| has_flag(s))
            .map(|setting| TopicSetting {
                setting,
                key: setting.name.replace('.', "_"),
                help: format!(
                    "Default `{}` of topics without an override (Kafka's `{}`)",
                    setting.topic_config, setting.name
                ),
            })
            .collect()
    })
}

/// The topic-default settings, in Kafka's table order.
pub fn topic_settings() -> impl Iterator<Item = &'static dyn AnySetting> {
    all().iter().map(|s| s as &'static dyn AnySetting)
}

/// The Kafka names of the settings that have a flag.
pub fn flag_settings() -> impl Iterator<Item = &'static str> {
    all().iter().map(|s| s.setting.name)
}

/// The topic defaults an operator set (those not at their default), as the catalog and the
/// compactor resolve topic configs with them.
pub fn topic_defaults(resolved: &Resolved) -> Result<TopicDefaults, SettingsError> {
    let mut defaults = TopicDefaults::kafka();
    for topic in all() {
        let Some(value) = resolved.find(&topic.key) else {
            continue;
        };
        if value.source == Source::Default {
            continue;
        }
        let Some(Some(text)) = value.parsed.value.downcast_ref::<Option<String>>() else {
            continue;
        };
        defaults
            .set(topic.setting.name, text)
            .map_err(|e| SettingsError::Invalid {
                key: topic.key.clone(),
                reason: e.to_string(),
            })?;
    }
    Ok(defaults)
}

impl TopicSetting {
    fn parsed(&self, canonical: Option<String>) -> Parsed {
        let numeric = matches!(
            self.setting.config_type,
            ConfigType::Int | ConfigType::Long | ConfigType::Double
        );
        let toml = canonical.as_ref().map(|text| {
            if numeric || self.setting.config_type == ConfigType::Boolean {
                text.clone()
            } else {
                toml::Value::String(text.clone()).to_string()
            }
        });
        Parsed {
            value: Box::new(canonical),
            toml,
        }
    }
}

impl AnySetting for TopicSetting {
    fn key(&self) -> &str {
        &self.key
    }

    fn help(&self) -> &str {
        &self.help
    }

    fn placeholder(&self) -> &str {
        "VALUE"
    }

    fn default_text(&self) -> String {
        self.setting
            .default
            .map_or("unset".to_string(), str::to_string)
    }

    fn range_text(&self) -> Option<String> {
        let validator = self.setting.validator.to_string();
        (validator != "null").then_some(validator)
    }

    /// Validated as Kafka validates the setting, kept in Kafka's canonical form.
    fn parse(&self, text: &str) -> Result<Parsed, String> {
        let mut defaults = TopicDefaults::kafka();
        defaults
            .set(self.setting.name, text)
            .map_err(|e| e.to_string())?;
        Ok(self.parsed(defaults.get(self.setting.name).map(str::to_string)))
    }

    fn default_parsed(&self) -> Parsed {
        self.parsed(self.setting.default.map(str::to_string))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_required_settings_exist() {
        let names: Vec<&str> = flag_settings().collect();
        for required in [
            "log.retention.ms",
            "log.retention.minutes",
            "log.retention.hours",
            "log.retention.bytes",
            "log.segment.bytes",
            "log.roll.ms",
            "log.roll.hours",
            "log.roll.jitter.ms",
            "message.max.bytes",
            "compression.type",
            "log.message.timestamp.type",
            "log.message.timestamp.before.max.ms",
            "log.message.timestamp.after.max.ms",
        ] {
            assert!(names.contains(&required), "{required}");
        }
        assert!(!names.contains(&"log.cleanup.policy"));
        assert!(!names.contains(&"log.preallocate"));
    }

    #[test]
    fn values_are_validated_as_kafka_validates_them() {
        let segment = all().iter().find(|s| s.key == "log_segment_bytes").unwrap();
        assert_eq!(
            segment.parse("10").err().as_deref(),
            Some("Invalid value 10 for configuration log.segment.bytes: Value must be at least 1048576")
        );
        let compression = all().iter().find(|s| s.key == "compression_type").unwrap();
        assert_eq!(
            compression.parse(" gzip ").unwrap().toml.as_deref(),
            Some("\"gzip\"")
        );
    }

    #[test]
    fn docs_hold_the_current_tables() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/topic-configs.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let flags: Vec<&str> = flag_settings().collect();
        let regenerate = "regenerate with `cargo run -p storage --example topic_configs_table`";
        assert!(
            doc.contains(&crate::topics::topic_configs_table()),
            "docs/topic-configs.md: topic configs table is stale; {regenerate}"
        );
        assert!(
            doc.contains(&crate::topics::broker_settings_table(&flags)),
            "docs/topic-configs.md: broker settings table is stale; {regenerate}"
        );
    }
}
