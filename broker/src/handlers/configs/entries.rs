//! What DescribeConfigs (and CreateTopics v5+) report for a topic's configs: value, source and
//! synonyms by Kafka's rules (`ConfigHelper`): a topic override first (DYNAMIC_TOPIC_CONFIG),
//! then the broker synonyms the operator set (STATIC_BROKER_CONFIG), then those with a Kafka
//! default (DEFAULT_CONFIG), all dropped up to the first that carries the main synonym's name.
//! The source is the first synonym's, DEFAULT_CONFIG when there is none. (So, as in Kafka, a
//! topic on a broker with only `log.retention.hours` set reports `retention.ms` as
//! DEFAULT_CONFIG, with the value that setting gives it.)

use std::collections::BTreeMap;

use storage::topics::{all_configs, broker_setting, ConfigDef, ConfigType, Effect, TopicDefaults};

/// Kafka's config source codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    DynamicTopic = 1,
    StaticBroker = 4,
    Default = 5,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    pub name: String,
    pub value: Option<String>,
    pub source: Source,
}

/// One described config, before encoding.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub value: Option<String>,
    pub source: Source,
    pub read_only: bool,
    pub config_type: ConfigType,
    pub doc: String,
    /// Empty unless synonyms were asked for.
    pub synonyms: Vec<Synonym>,
}

/// Every topic config of a topic with `overrides`, in Kafka's table order. Internal configs and
/// configs without a value are left out, as Kafka does.
pub fn topic_entries(
    overrides: &BTreeMap<String, String>,
    defaults: &TopicDefaults,
    include_synonyms: bool,
) -> Vec<Entry> {
    all_configs()
        .filter_map(|def| {
            let overridden = overrides.get(def.name);
            let value = overridden
                .cloned()
                .or_else(|| defaults.topic_default(def).value)?;
            // Confluent Server's configs are described when set only, so that a topic
            // without them is described exactly as Kafka describes it.
            let extension = storage::topics::is_extension(def.name);
            let broker_default = defaults.topic_default(def).from.is_some();
            if (def.internal || (extension && !broker_default)) && overridden.is_none() {
                return None;
            }
            let mut synonyms = broker_synonyms(def.synonyms, defaults);
            if let Some(v) = overridden {
                synonyms.insert(0, synonym(def.name, Some(v.clone()), Source::DynamicTopic));
            }
            Some(Entry {
                name: def.name.to_string(),
                value: Some(value),
                source: synonyms.first().map_or(Source::Default, |s| s.source),
                read_only: false,
                config_type: def.config_type,
                doc: topic_doc(def),
                synonyms: if include_synonyms {
                    synonyms
                } else {
                    Vec::new()
                },
            })
        })
        .collect()
}

/// The synonyms of the broker setting `chain[0]`, whose lower-precedence synonyms follow it.
pub fn broker_synonyms(chain: &[&str], defaults: &TopicDefaults) -> Vec<Synonym> {
    let set = chain.iter().filter_map(|name| {
        defaults
            .get(name)
            .map(|v| synonym(name, Some(v.to_string()), Source::StaticBroker))
    });
    let kafka = chain.iter().filter_map(|name| {
        broker_setting(name)
            .and_then(|s| s.default)
            .map(|v| synonym(name, Some(v.to_string()), Source::Default))
    });
    let mut all: Vec<Synonym> = set.chain(kafka).collect();
    let Some(main) = chain.first() else {
        return all;
    };
    let first_main = all
        .iter()
        .position(|s| s.name == *main)
        .unwrap_or(all.len());
    all.drain(..first_main);
    all
}

fn synonym(name: &str, value: Option<String>, source: Source) -> Synonym {
    Synonym {
        name: name.to_string(),
        value,
        source,
    }
}

/// Kafka's documentation, and what the config does on this broker.
fn topic_doc(def: &ConfigDef) -> String {
    let here = match def.effect {
        Effect::Produce => "honoured by the broker on produce".to_string(),
        Effect::Retention => "honoured by the compactor's retention".to_string(),
        Effect::Compaction => "honoured by the compactor's key compaction".to_string(),
        Effect::Table => "honoured by the compactor's Iceberg table commits".to_string(),
        Effect::None(why) => format!("accepted and stored, no effect: {why}"),
    };
    format!("{} (This broker: {here}.)", def.doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(entries: &'a [Entry], name: &str) -> &'a Entry {
        entries.iter().find(|e| e.name == name).unwrap()
    }

    fn names(synonyms: &[Synonym]) -> Vec<(&str, Option<&str>, Source)> {
        synonyms
            .iter()
            .map(|s| (s.name.as_str(), s.value.as_deref(), s.source))
            .collect()
    }

    #[test]
    fn defaults_are_described_as_kafka_describes_them() {
        let entries = topic_entries(&BTreeMap::new(), &TopicDefaults::kafka(), true);
        assert_eq!(entries.len(), 33, "every public topic config");
        let retention = entry(&entries, "retention.ms");
        assert_eq!(retention.value.as_deref(), Some("604800000"));
        assert_eq!(retention.source, Source::Default);
        // log.retention.ms has no Kafka default, so Kafka drops the hours synonym too.
        assert!(retention.synonyms.is_empty());
        let bytes = entry(&entries, "retention.bytes");
        assert_eq!(
            names(&bytes.synonyms),
            [("log.retention.bytes", Some("-1"), Source::Default)]
        );
    }

    #[test]
    fn overrides_come_first_then_broker_settings_then_kafka_defaults() {
        let defaults =
            TopicDefaults::with([("compression.type", "lz4"), ("log.roll.jitter.ms", "100")])
                .unwrap();
        let overrides = BTreeMap::from([("compression.type".to_string(), "gzip".to_string())]);
        let entries = topic_entries(&overrides, &defaults, true);
        let compression = entry(&entries, "compression.type");
        assert_eq!(compression.source, Source::DynamicTopic);
        assert_eq!(
            names(&compression.synonyms),
            [
                ("compression.type", Some("gzip"), Source::DynamicTopic),
                ("compression.type", Some("lz4"), Source::StaticBroker),
                ("compression.type", Some("producer"), Source::Default),
            ]
        );
        let jitter = entry(&entries, "segment.jitter.ms");
        assert_eq!(jitter.source, Source::StaticBroker);
        assert_eq!(
            names(&jitter.synonyms),
            [
                ("log.roll.jitter.ms", Some("100"), Source::StaticBroker),
                ("log.roll.jitter.hours", Some("0"), Source::Default),
            ]
        );
    }

    #[test]
    fn a_setting_below_the_main_synonym_reports_default_as_kafka_does() {
        let defaults = TopicDefaults::with([("log.retention.hours", "24")]).unwrap();
        let entries = topic_entries(&BTreeMap::new(), &defaults, true);
        let retention = entry(&entries, "retention.ms");
        assert_eq!(retention.value.as_deref(), Some("86400000"));
        assert_eq!(retention.source, Source::Default);
        assert!(retention.synonyms.is_empty());
        let internal = topic_entries(
            &BTreeMap::from([("internal.segment.bytes".to_string(), "5".to_string())]),
            &defaults,
            false,
        );
        assert_eq!(
            entry(&internal, "internal.segment.bytes").source,
            Source::DynamicTopic
        );
        assert!(internal.iter().all(|e| e.synonyms.is_empty()));
    }
}
