//! Topic configs of Confluent Server that this broker honours, under Confluent's names, so
//! that tools and topic specs written for Confluent work unchanged: broker-side schema
//! validation (`docs/schema-registry.md`). Kafka does not know them; they are listed after
//! Kafka's in DescribeConfigs.

use super::defs::{ConfigDef, Effect};
use super::validator::Validator;
use super::value::ConfigType;

pub const TOPIC_NAME_STRATEGY: &str = "io.confluent.kafka.serializers.subject.TopicNameStrategy";
pub const RECORD_NAME_STRATEGY: &str = "io.confluent.kafka.serializers.subject.RecordNameStrategy";
pub const TOPIC_RECORD_NAME_STRATEGY: &str =
    "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy";
const STRATEGIES: &[&str] = &[
    TOPIC_NAME_STRATEGY,
    RECORD_NAME_STRATEGY,
    TOPIC_RECORD_NAME_STRATEGY,
];

const VALUE_VALIDATION: &str = "True if schema validation at record value is enabled for this topic: every record's value must be in the Confluent wire format with a schema id registered under the value subject, and decode against that schema.";
const KEY_VALIDATION: &str = "True if schema validation at record key is enabled for this topic: every record's key must be in the Confluent wire format with a schema id registered under the key subject, and decode against that schema.";
const VALUE_STRATEGY: &str = "Determines how to construct the subject name under which the value schema is registered with the schema registry.";
const KEY_STRATEGY: &str = "Determines how to construct the subject name under which the key schema is registered with the schema registry.";

pub const CONFLUENT_CONFIGS: &[ConfigDef] = &[
    ConfigDef {
        name: "confluent.key.schema.validation",
        config_type: ConfigType::Boolean,
        default: Some("false"),
        validator: Validator::None,
        synonyms: &[],
        effect: Effect::Produce,
        internal: false,
        doc: KEY_VALIDATION,
    },
    ConfigDef {
        name: "confluent.key.subject.name.strategy",
        config_type: ConfigType::String,
        default: Some(TOPIC_NAME_STRATEGY),
        validator: Validator::OneOf(STRATEGIES),
        synonyms: &[],
        effect: Effect::Produce,
        internal: false,
        doc: KEY_STRATEGY,
    },
    ConfigDef {
        name: "confluent.value.schema.validation",
        config_type: ConfigType::Boolean,
        default: Some("false"),
        validator: Validator::None,
        synonyms: &[],
        effect: Effect::Produce,
        internal: false,
        doc: VALUE_VALIDATION,
    },
    ConfigDef {
        name: "confluent.value.subject.name.strategy",
        config_type: ConfigType::String,
        default: Some(TOPIC_NAME_STRATEGY),
        validator: Validator::OneOf(STRATEGIES),
        synonyms: &[],
        effect: Effect::Produce,
        internal: false,
        doc: VALUE_STRATEGY,
    },
];

/// Whether `name` is one of [`CONFLUENT_CONFIGS`].
pub fn is_confluent(name: &str) -> bool {
    CONFLUENT_CONFIGS.iter().any(|d| d.name == name)
}

/// How the subject of a record's key or value schema is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectNameStrategy {
    /// `<topic>-key` / `<topic>-value`.
    TopicName,
    /// The record's fully-qualified name.
    RecordName,
    /// `<topic>-<record name>`.
    TopicRecordName,
}

impl SubjectNameStrategy {
    pub fn parse(class: &str) -> SubjectNameStrategy {
        match class {
            RECORD_NAME_STRATEGY => SubjectNameStrategy::RecordName,
            TOPIC_RECORD_NAME_STRATEGY => SubjectNameStrategy::TopicRecordName,
            _ => SubjectNameStrategy::TopicName,
        }
    }
}

/// Broker-side schema validation of a topic's keys and values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaValidation {
    pub key: Option<SubjectNameStrategy>,
    pub value: Option<SubjectNameStrategy>,
}

impl SchemaValidation {
    pub const OFF: SchemaValidation = SchemaValidation {
        key: None,
        value: None,
    };

    pub fn is_on(&self) -> bool {
        self.key.is_some() || self.value.is_some()
    }
}
