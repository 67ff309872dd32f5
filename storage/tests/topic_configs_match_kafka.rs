//! Our table of topic configs against what the reference Kafka jars print
//! (`kafka-topic-configs.jsonl`, from `scripts/kafka-topic-configs/generate.sh`): every name,
//! type, default, validator, synonym and documentation, and the verdict and message of Kafka's
//! own validation for some two thousand sample values.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value as Json;
use storage::topics::{
    broker_setting, definition, validate_override, ConfigType, BROKER_SETTINGS, TOPIC_CONFIGS,
};

fn rows(kind: &str) -> Vec<Json> {
    include_str!("kafka-topic-configs.jsonl")
        .lines()
        .map(|line| serde_json::from_str::<Json>(line).expect("a json line"))
        .filter(|row| row["kind"] == kind)
        .collect()
}

fn text(row: &Json, key: &str) -> Option<String> {
    row[key].as_str().map(str::to_string)
}

#[test]
fn every_kafka_topic_config_is_defined_in_kafkas_order() {
    let kafka: Vec<String> = rows("topic")
        .iter()
        .map(|r| text(r, "name").unwrap())
        .collect();
    let ours: Vec<&str> = TOPIC_CONFIGS.iter().map(|d| d.name).collect();
    assert_eq!(ours, kafka);
    assert_eq!(
        ours.len(),
        34,
        "Kafka 4.1 has 34 topic configs, one of them internal"
    );
}

#[test]
fn types_defaults_validators_synonyms_and_docs_match_kafka() {
    for row in rows("topic") {
        let name = text(&row, "name").unwrap();
        let def = definition(&name).unwrap();
        assert_eq!(def.config_type.kafka_name(), row["type"], "{name}");
        assert_eq!(
            def.default.map(str::to_string),
            text(&row, "default"),
            "{name}"
        );
        let validator = text(&row, "validator").unwrap_or_else(|| "null".into());
        assert_eq!(def.validator.to_string(), validator, "{name}");
        assert_eq!(Some(def.internal), row["internal"].as_bool(), "{name}");
        let synonyms: Vec<String> = row["synonyms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        assert_eq!(def.synonyms, synonyms, "{name}");
        assert_eq!(Some(def.doc.to_string()), text(&row, "doc"), "{name}");
    }
}

#[test]
fn broker_synonyms_match_kafkas_broker_settings() {
    let kafka = rows("broker");
    let mut names: Vec<String> = kafka.iter().map(|r| text(r, "name").unwrap()).collect();
    names.dedup();
    // Defaults of this broker's own topic configs (`iceberg.enable`) are not Kafka's.
    let ours: Vec<&str> = BROKER_SETTINGS
        .iter()
        .filter(|s| !storage::topics::is_extension(s.topic_config))
        .map(|s| s.name)
        .collect();
    assert_eq!(ours, names);
    for row in kafka {
        let name = text(&row, "name").unwrap();
        let setting = broker_setting(&name).unwrap();
        assert_eq!(setting.config_type.kafka_name(), row["type"], "{name}");
        assert_eq!(
            setting.default.map(str::to_string),
            text(&row, "default"),
            "{name}"
        );
        let validator = text(&row, "validator").unwrap_or_else(|| "null".into());
        assert_eq!(setting.validator.to_string(), validator, "{name}");
        assert_eq!(Some(setting.doc.to_string()), text(&row, "doc"), "{name}");
        let topic = definition(setting.topic_config).unwrap();
        assert!(topic.synonyms.contains(&setting.name), "{name}");
        if setting.unit != storage::topics::Unit::Same {
            assert_eq!(topic.config_type, ConfigType::Long, "{name}");
        }
    }
}

/// Where we knowingly differ from Kafka's verdict.
fn expected_divergence(name: &str, value: &str) -> Option<&'static str> {
    match name {
        // Every topic already lives in object storage; Kafka refuses it without tiered storage.
        "remote.storage.enable" if value.trim().eq_ignore_ascii_case("true") => Some(""),
        _ => None,
    }
}

#[test]
fn sample_values_are_accepted_and_refused_with_kafkas_messages() {
    let mut checked = 0;
    for case in rows("case") {
        let name = text(&case, "name").unwrap();
        let value = text(&case, "value").unwrap();
        let kafka = text(&case, "error");
        let ours = validate_override(&name, &value)
            .err()
            .map(|e| e.to_string());
        match expected_divergence(&name, &value) {
            Some("") => assert_eq!(ours, None, "{name}={value:?}"),
            Some(ours_says) => {
                assert!(kafka.is_none(), "{name}={value:?}: kafka says {kafka:?}");
                assert!(ours.unwrap().contains(ours_says), "{name}={value:?}");
            }
            None => assert_eq!(ours, kafka, "{name}={value:?}"),
        }
        checked += 1;
    }
    assert!(checked > 2000, "{checked} cases");
}
