//! Every topic config of Kafka 4.1 (`LogConfig`), declared once: name, type, default,
//! validator, broker synonyms (in Kafka's order of precedence), documentation, and what it
//! does on this broker. Derived from the reference jars (`scripts/kafka-topic-configs/`);
//! `storage/tests/topic_configs_match_kafka.rs` checks the table against them.

use super::docs::topic;
use super::validator::Validator;
use super::value::ConfigType;

/// What a config does here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The broker applies it to every batch it is given (Produce).
    Produce,
    /// The compactor applies it when it moves a partition's log start (retention).
    Retention,
    /// The compactor applies it when it compacts a partition by key (compacted topics).
    Compaction,
    /// The compactor commits the topic's Parquet files to its Iceberg table (`tables` crate).
    Table,
    /// Accepted, validated, stored and described, but it means nothing on shared object
    /// storage; the reason is documented.
    None(&'static str),
}

const NO_LOCAL_FILES: &str = "no local segment or index files: data lives in object storage, offsets in the metadata store's index";
const ALWAYS_DURABLE: &str = "nothing is acknowledged before the object write and the index commit succeeded: every write is durable first";
const NO_REPLICAS: &str = "no replicas: every broker serves every partition from shared storage";
const ALL_REMOTE: &str = "no local tier: all data already lives in object storage";

/// One topic config.
#[derive(Debug, Clone, Copy)]
pub struct ConfigDef {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// Kafka's default as Kafka prints it; `None` for a config without one (null).
    pub default: Option<&'static str>,
    pub validator: Validator,
    /// Broker settings that stand in for an absent override, the first one set winning.
    pub synonyms: &'static [&'static str],
    pub effect: Effect,
    /// Kafka's internal configs are accepted but never described.
    pub internal: bool,
    /// Kafka's documentation.
    pub doc: &'static str,
}

/// Kafka's topic configs, in `LogConfig`'s order.
pub const TOPIC_CONFIGS: &[ConfigDef] = &[
    ConfigDef {
        name: "segment.bytes",
        config_type: ConfigType::Int,
        default: Some("1073741824"),
        validator: Validator::AtLeast(1048576),
        synonyms: &["log.segment.bytes"],
        effect: Effect::Retention,
        internal: false,
        doc: topic::SEGMENT_BYTES,
    },
    ConfigDef {
        name: "segment.ms",
        config_type: ConfigType::Long,
        default: Some("604800000"),
        validator: Validator::AtLeast(1),
        synonyms: &["log.roll.ms", "log.roll.hours"],
        effect: Effect::Retention,
        internal: false,
        doc: topic::SEGMENT_MS,
    },
    ConfigDef {
        name: "segment.jitter.ms",
        config_type: ConfigType::Long,
        default: Some("0"),
        validator: Validator::AtLeast(0),
        synonyms: &["log.roll.jitter.ms", "log.roll.jitter.hours"],
        effect: Effect::Retention,
        internal: false,
        doc: topic::SEGMENT_JITTER_MS,
    },
    ConfigDef {
        name: "segment.index.bytes",
        config_type: ConfigType::Int,
        default: Some("10485760"),
        validator: Validator::AtLeast(4),
        synonyms: &["log.index.size.max.bytes"],
        effect: Effect::None(NO_LOCAL_FILES),
        internal: false,
        doc: topic::SEGMENT_INDEX_BYTES,
    },
    ConfigDef {
        name: "flush.messages",
        config_type: ConfigType::Long,
        default: Some("9223372036854775807"),
        validator: Validator::AtLeast(1),
        synonyms: &["log.flush.interval.messages"],
        effect: Effect::None(ALWAYS_DURABLE),
        internal: false,
        doc: topic::FLUSH_MESSAGES,
    },
    ConfigDef {
        name: "flush.ms",
        config_type: ConfigType::Long,
        default: Some("9223372036854775807"),
        validator: Validator::AtLeast(0),
        synonyms: &["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
        effect: Effect::None(ALWAYS_DURABLE),
        internal: false,
        doc: topic::FLUSH_MS,
    },
    ConfigDef {
        name: "retention.bytes",
        config_type: ConfigType::Long,
        default: Some("-1"),
        validator: Validator::None,
        synonyms: &["log.retention.bytes"],
        effect: Effect::Retention,
        internal: false,
        doc: topic::RETENTION_BYTES,
    },
    ConfigDef {
        name: "retention.ms",
        config_type: ConfigType::Long,
        default: Some("604800000"),
        validator: Validator::AtLeast(-1),
        synonyms: &["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
        effect: Effect::Retention,
        internal: false,
        doc: topic::RETENTION_MS,
    },
    ConfigDef {
        name: "max.message.bytes",
        config_type: ConfigType::Int,
        default: Some("1048588"),
        validator: Validator::AtLeast(0),
        synonyms: &["message.max.bytes"],
        effect: Effect::Produce,
        internal: false,
        doc: topic::MAX_MESSAGE_BYTES,
    },
    ConfigDef {
        name: "index.interval.bytes",
        config_type: ConfigType::Int,
        default: Some("4096"),
        validator: Validator::AtLeast(0),
        synonyms: &["log.index.interval.bytes"],
        effect: Effect::None(NO_LOCAL_FILES),
        internal: false,
        doc: topic::INDEX_INTERVAL_BYTES,
    },
    ConfigDef {
        name: "delete.retention.ms",
        config_type: ConfigType::Long,
        default: Some("86400000"),
        validator: Validator::AtLeast(0),
        synonyms: &["log.cleaner.delete.retention.ms"],
        effect: Effect::Compaction,
        internal: false,
        doc: topic::DELETE_RETENTION_MS,
    },
    ConfigDef {
        name: "min.compaction.lag.ms",
        config_type: ConfigType::Long,
        default: Some("0"),
        validator: Validator::AtLeast(0),
        synonyms: &["log.cleaner.min.compaction.lag.ms"],
        effect: Effect::Compaction,
        internal: false,
        doc: topic::MIN_COMPACTION_LAG_MS,
    },
    ConfigDef {
        name: "max.compaction.lag.ms",
        config_type: ConfigType::Long,
        default: Some("9223372036854775807"),
        validator: Validator::AtLeast(1),
        synonyms: &["log.cleaner.max.compaction.lag.ms"],
        effect: Effect::Compaction,
        internal: false,
        doc: topic::MAX_COMPACTION_LAG_MS,
    },
    ConfigDef {
        name: "file.delete.delay.ms",
        config_type: ConfigType::Long,
        default: Some("60000"),
        validator: Validator::AtLeast(0),
        synonyms: &["log.segment.delete.delay.ms"],
        effect: Effect::None("deleted data is reclaimed by the compactor after its own grace period (--compaction-grace-period-ms)"),
        internal: false,
        doc: topic::FILE_DELETE_DELAY_MS,
    },
    ConfigDef {
        name: "min.cleanable.dirty.ratio",
        config_type: ConfigType::Double,
        default: Some("0.5"),
        validator: Validator::Between(0, 1),
        synonyms: &["log.cleaner.min.cleanable.ratio"],
        effect: Effect::Compaction,
        internal: false,
        doc: topic::MIN_CLEANABLE_DIRTY_RATIO,
    },
    ConfigDef {
        name: "cleanup.policy",
        config_type: ConfigType::List,
        default: Some("delete"),
        validator: Validator::ListOf(&["compact", "delete"]),
        synonyms: &["log.cleanup.policy"],
        effect: Effect::Retention,
        internal: false,
        doc: topic::CLEANUP_POLICY,
    },
    ConfigDef {
        name: "unclean.leader.election.enable",
        config_type: ConfigType::Boolean,
        default: Some("false"),
        validator: Validator::None,
        synonyms: &["unclean.leader.election.enable"],
        effect: Effect::None(NO_REPLICAS),
        internal: false,
        doc: topic::UNCLEAN_LEADER_ELECTION_ENABLE,
    },
    ConfigDef {
        name: "min.insync.replicas",
        config_type: ConfigType::Int,
        default: Some("1"),
        validator: Validator::AtLeast(1),
        synonyms: &["min.insync.replicas"],
        effect: Effect::None("durability is the object store's: every acks level waits for the object write and the index commit"),
        internal: false,
        doc: topic::MIN_INSYNC_REPLICAS,
    },
    ConfigDef {
        name: "compression.type",
        config_type: ConfigType::String,
        default: Some("producer"),
        validator: Validator::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
        synonyms: &["compression.type"],
        effect: Effect::Produce,
        internal: false,
        doc: topic::COMPRESSION_TYPE,
    },
    ConfigDef {
        name: "compression.gzip.level",
        config_type: ConfigType::Int,
        default: Some("-1"),
        validator: Validator::BetweenOrEqual(1, 9, -1),
        synonyms: &["compression.gzip.level"],
        effect: Effect::Produce,
        internal: false,
        doc: topic::COMPRESSION_GZIP_LEVEL,
    },
    ConfigDef {
        name: "compression.lz4.level",
        config_type: ConfigType::Int,
        default: Some("9"),
        validator: Validator::Between(1, 17),
        synonyms: &["compression.lz4.level"],
        effect: Effect::Produce,
        internal: false,
        doc: topic::COMPRESSION_LZ4_LEVEL,
    },
    ConfigDef {
        name: "compression.zstd.level",
        config_type: ConfigType::Int,
        default: Some("3"),
        validator: Validator::Between(-131072, 22),
        synonyms: &["compression.zstd.level"],
        effect: Effect::Produce,
        internal: false,
        doc: topic::COMPRESSION_ZSTD_LEVEL,
    },
    ConfigDef {
        name: "preallocate",
        config_type: ConfigType::Boolean,
        default: Some("false"),
        validator: Validator::None,
        synonyms: &["log.preallocate"],
        effect: Effect::None(NO_LOCAL_FILES),
        internal: false,
        doc: topic::PREALLOCATE,
    },
    ConfigDef {
        name: "message.timestamp.type",
        config_type: ConfigType::String,
        default: Some("CreateTime"),
        validator: Validator::OneOf(&["CreateTime", "LogAppendTime"]),
        synonyms: &["log.message.timestamp.type"],
        effect: Effect::Produce,
        internal: false,
        doc: topic::MESSAGE_TIMESTAMP_TYPE,
    },
    ConfigDef {
        name: "message.timestamp.before.max.ms",
        config_type: ConfigType::Long,
        default: Some("9223372036854775807"),
        validator: Validator::AtLeast(0),
        synonyms: &["log.message.timestamp.before.max.ms"],
        effect: Effect::Produce,
        internal: false,
        doc: topic::MESSAGE_TIMESTAMP_BEFORE_MAX_MS,
    },
    ConfigDef {
        name: "message.timestamp.after.max.ms",
        config_type: ConfigType::Long,
        default: Some("3600000"),
        validator: Validator::AtLeast(0),
        synonyms: &["log.message.timestamp.after.max.ms"],
        effect: Effect::Produce,
        internal: false,
        doc: topic::MESSAGE_TIMESTAMP_AFTER_MAX_MS,
    },
    ConfigDef {
        name: "leader.replication.throttled.replicas",
        config_type: ConfigType::List,
        default: Some(""),
        validator: Validator::ThrottledReplicas,
        synonyms: &[],
        effect: Effect::None(NO_REPLICAS),
        internal: false,
        doc: topic::LEADER_REPLICATION_THROTTLED_REPLICAS,
    },
    ConfigDef {
        name: "follower.replication.throttled.replicas",
        config_type: ConfigType::List,
        default: Some(""),
        validator: Validator::ThrottledReplicas,
        synonyms: &[],
        effect: Effect::None(NO_REPLICAS),
        internal: false,
        doc: topic::FOLLOWER_REPLICATION_THROTTLED_REPLICAS,
    },
    ConfigDef {
        name: "remote.storage.enable",
        config_type: ConfigType::Boolean,
        default: Some("false"),
        validator: Validator::None,
        synonyms: &[],
        effect: Effect::None(ALL_REMOTE),
        internal: false,
        doc: topic::REMOTE_STORAGE_ENABLE,
    },
    ConfigDef {
        name: "local.retention.ms",
        config_type: ConfigType::Long,
        default: Some("-2"),
        validator: Validator::AtLeast(-2),
        synonyms: &["log.local.retention.ms"],
        effect: Effect::None(ALL_REMOTE),
        internal: false,
        doc: topic::LOCAL_RETENTION_MS,
    },
    ConfigDef {
        name: "local.retention.bytes",
        config_type: ConfigType::Long,
        default: Some("-2"),
        validator: Validator::AtLeast(-2),
        synonyms: &["log.local.retention.bytes"],
        effect: Effect::None(ALL_REMOTE),
        internal: false,
        doc: topic::LOCAL_RETENTION_BYTES,
    },
    ConfigDef {
        name: "remote.log.copy.disable",
        config_type: ConfigType::Boolean,
        default: Some("false"),
        validator: Validator::None,
        synonyms: &[],
        effect: Effect::None(ALL_REMOTE),
        internal: false,
        doc: topic::REMOTE_LOG_COPY_DISABLE,
    },
    ConfigDef {
        name: "remote.log.delete.on.disable",
        config_type: ConfigType::Boolean,
        default: Some("false"),
        validator: Validator::None,
        synonyms: &[],
        effect: Effect::None(ALL_REMOTE),
        internal: false,
        doc: topic::REMOTE_LOG_DELETE_ON_DISABLE,
    },
    ConfigDef {
        name: "internal.segment.bytes",
        config_type: ConfigType::Int,
        default: None,
        validator: Validator::None,
        synonyms: &[],
        effect: Effect::None("Kafka's testing-only override of segment.bytes"),
        internal: true,
        doc: topic::INTERNAL_SEGMENT_BYTES,
    },
];

/// The definition of a topic config by its name (Kafka's, then Confluent Server's).
pub fn definition(name: &str) -> Option<&'static ConfigDef> {
    all_configs().find(|d| d.name == name)
}

/// Kafka's topic configs in their order, then the Confluent Server ones honoured here, then
/// this broker's own (`iceberg.enable`).
pub fn all_configs() -> impl Iterator<Item = &'static ConfigDef> {
    TOPIC_CONFIGS
        .iter()
        .chain(super::confluent::CONFLUENT_CONFIGS)
        .chain(ICEBERG_CONFIGS)
}

/// Whether `name` is a config Kafka does not have (Confluent Server's or ours): described only
/// when set, so that a topic without them is described exactly as Kafka describes it.
pub fn is_extension(name: &str) -> bool {
    super::confluent::is_confluent(name) || ICEBERG_CONFIGS.iter().any(|d| d.name == name)
}

/// The topic is also an Iceberg table (`docs/iceberg.md`).
pub const ICEBERG_CONFIGS: &[ConfigDef] = &[ConfigDef {
    name: "iceberg.enable",
    config_type: ConfigType::Boolean,
    default: Some("false"),
    validator: Validator::None,
    synonyms: &["iceberg.enable.default"],
    effect: Effect::Table,
    internal: false,
    doc: "True if the topic is also an Iceberg table `<namespace>.<topic>` whose data files are the compactor's Parquet files, committed by each compaction pass and served by the broker's Iceberg REST catalog.",
}];
