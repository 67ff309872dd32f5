//! What DescribeConfigs reports for the BROKER resource: this broker's settings under Kafka's
//! names where one exists, and every broker setting that gives topics their defaults
//! (`log.retention.ms`, ...), with Kafka's sources and synonyms. All are read-only: they are
//! flags, changed by a restart.

use storage::topics::{definition, ConfigType, BROKER_SETTINGS};

use super::entries::{broker_synonyms, Entry, Source, Synonym};
use crate::config::Config;
use crate::context::Broker;

/// Every entry of the BROKER resource.
pub fn broker_entries(broker: &Broker, include_synonyms: bool) -> Vec<Entry> {
    let mut entries: Vec<Entry> = own_settings(broker)
        .into_iter()
        .map(|(name, value, config_type, doc)| {
            let synonyms = vec![Synonym {
                name: name.to_string(),
                value: Some(value.clone()),
                source: Source::StaticBroker,
            }];
            entry(
                name,
                Some(value),
                config_type,
                doc.to_string(),
                synonyms,
                include_synonyms,
            )
        })
        .collect();
    let defaults = broker.catalog.defaults();
    for setting in BROKER_SETTINGS {
        let chain = definition(setting.topic_config).map_or(&[][..], |d| d.synonyms);
        let from = chain.iter().position(|n| *n == setting.name).unwrap_or(0);
        let synonyms = broker_synonyms(&chain[from..], defaults);
        let value = defaults
            .get(setting.name)
            .or(setting.default)
            .map(str::to_string);
        entries.push(entry(
            setting.name,
            value,
            setting.config_type,
            setting.doc.to_string(),
            synonyms,
            include_synonyms,
        ));
    }
    entries
}

fn entry(
    name: &str,
    value: Option<String>,
    config_type: ConfigType,
    doc: String,
    synonyms: Vec<Synonym>,
    include_synonyms: bool,
) -> Entry {
    Entry {
        name: name.to_string(),
        value,
        source: synonyms.first().map_or(Source::Default, |s| s.source),
        read_only: true,
        config_type,
        doc,
        synonyms: if include_synonyms {
            synonyms
        } else {
            Vec::new()
        },
    }
}

type Setting = (&'static str, String, ConfigType, &'static str);

/// This broker's own settings that Kafka has a name for.
fn own_settings(broker: &Broker) -> Vec<Setting> {
    let config = &broker.config;
    let node = &broker.node;
    let listeners = |address: fn(&crate::context::NodeListener) -> (String, i32)| {
        let urls: Vec<String> = node
            .listeners
            .iter()
            .map(|l| {
                let (host, port) = address(l);
                crate::listener::url(&l.name, &host, port)
            })
            .collect();
        urls.join(",")
    };
    let mut out: Vec<Setting> = vec![
        (
            "broker.id",
            node.broker_id.to_string(),
            ConfigType::Int,
            "This broker's id (--broker-id).",
        ),
        (
            "listeners",
            listeners(|l| (l.local_addr.ip().to_string(), i32::from(l.local_addr.port()))),
            ConfigType::String,
            "The addresses the Kafka listeners bind to (--listeners, or --listen).",
        ),
        (
            "advertised.listeners",
            listeners(|l| (l.advertised.host.clone(), l.advertised.port)),
            ConfigType::String,
            "The addresses clients are told to connect to (--advertised-listeners, or --advertised-listener).",
        ),
        (
            "log.dirs",
            config.data_dir.display().to_string(),
            ConfigType::String,
            "Local data directory (--data-dir); the log itself lives in the object store.",
        ),
        (
            "num.partitions",
            config.default_partitions.to_string(),
            ConfigType::Int,
            "Partitions of topics created without a count (--default-partitions).",
        ),
        (
            "default.replication.factor",
            "1".into(),
            ConfigType::Int,
            "Replication is the object store's job: always 1.",
        ),
        (
            "auto.create.topics.enable",
            config.auto_create_topics.to_string(),
            ConfigType::Boolean,
            "Metadata requests may create topics (--auto-create-topics).",
        ),
        (
            "socket.request.max.bytes",
            config.max_frame_bytes.to_string(),
            ConfigType::Int,
            "Largest request accepted (--max-frame-bytes).",
        ),
        (
            "max.connections",
            config.max_connections.to_string(),
            ConfigType::Int,
            "Client connections served at once (--max-connections).",
        ),
    ];
    out.extend(group_settings(config));
    if config.compaction {
        out.push((
            "log.retention.check.interval.ms",
            config.compactor.retention_check_interval_ms.to_string(),
            ConfigType::Long,
            "In-process compaction applies retention at most this often (--log-retention-check-interval-ms).",
        ));
    }
    if let Some(rack) = &node.rack {
        out.push((
            "broker.rack",
            rack.clone(),
            ConfigType::String,
            "Rack (zone) of this broker (--rack).",
        ));
    }
    out
}

fn group_settings(config: &Config) -> Vec<Setting> {
    vec![
        ("group.initial.rebalance.delay.ms", config.group_initial_rebalance_delay_ms.to_string(), ConfigType::Int, "Wait of a new group's first rebalance (--group-initial-rebalance-delay-ms)."),
        ("group.min.session.timeout.ms", config.group_min_session_timeout_ms.to_string(), ConfigType::Int, "Smallest session timeout a member may ask for (--group-min-session-timeout-ms)."),
        ("group.consumer.session.timeout.ms", config.group_consumer_session_timeout_ms.to_string(), ConfigType::Int, "Session timeout of consumer-protocol members (--group-consumer-session-timeout-ms)."),
        ("group.consumer.heartbeat.interval.ms", config.group_consumer_heartbeat_interval_ms.to_string(), ConfigType::Int, "Heartbeat interval of consumer-protocol members (--group-consumer-heartbeat-interval-ms)."),
        ("offsets.retention.minutes", (config.offsets_retention_ms() / 60_000).to_string(), ConfigType::Int, "Committed offsets of empty groups expire after this (--offsets-retention-minutes)."),
        ("offsets.retention.check.interval.ms", config.offsets_retention_check_interval_ms.to_string(), ConfigType::Long, "Pause between offset expiry runs (--offsets-retention-check-interval-ms)."),
    ]
}
