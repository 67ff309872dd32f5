//! The broker's settings: the command-line contract's defaults, precedence, validation, and
//! that the README's table is the one the declarations give.

use std::io::Write;

use storage::settings::Source;

use super::*;

/// Loads with an explicit environment, so that tests never read the real one.
fn load(args: &[&str], env: &[(&str, &str)]) -> Result<Startup, ConfigError> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Startup::load(std::iter::once("broker").chain(args.iter().copied()), &env)
}

fn config(args: &[&str]) -> Result<Config, ConfigError> {
    load(args, &[]).map(|s| s.config)
}

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

#[test]
fn defaults_match_the_command_line_contract() {
    let config = config(&[]).unwrap();
    assert_eq!(config.listeners[0].url(), "PLAINTEXT://127.0.0.1:9092");
    assert_eq!(config.data_dir, PathBuf::from("./data"));
    assert_eq!(config.metastore, "embedded");
    assert!(config.auto_create_topics);
    assert!(config.compaction);
    assert_eq!(config.default_partitions, 1);
    assert!(config.object_store_url.ends_with("/data/objects"));
    // A PUT costs nothing on a local store: no budget holds an object back there.
    assert_eq!(config.storage.write_buffer_puts_per_sec_max, None);
    let remote = self::config(&["--object-store", "s3://b/p"]).unwrap();
    assert_eq!(remote.storage.write_buffer_puts_per_sec_max, Some(4));
}

#[test]
fn component_defaults_are_the_declared_ones() {
    let config = config(&["--object-store", "s3://b/p"]).unwrap();
    let storage = storage::StorageConfig::default();
    assert_eq!(config.storage.write_buffer_size, storage.write_buffer_size);
    assert_eq!(
        config.storage.write_buffer_puts_per_sec_max,
        storage.write_buffer_puts_per_sec_max
    );
    assert_eq!(
        config.storage.max_puts_in_flight,
        storage.max_puts_in_flight
    );
    assert_eq!(config.storage.stream_states_max, storage.stream_states_max);
    let compactor = compactor::CompactorConfig::default();
    assert_eq!(config.compactor.min_bytes, compactor.min_bytes);
    assert_eq!(
        config.compactor.retention_check_interval_ms,
        compactor.retention_check_interval_ms
    );
}

#[test]
fn flag_beats_env_beats_file_beats_default() {
    let f = file(
        "default_partitions = 2\nbroker_id = 7\nauto_create_topics = false\nmax_connections = 9\n",
    );
    let path = f.path().to_str().unwrap();
    let startup = load(
        &["--config", path, "--broker-id", "9"],
        &[
            ("BROKER_DEFAULT_PARTITIONS", "3"),
            ("BROKER_BROKER_ID", "8"),
        ],
    )
    .unwrap();
    let c = &startup.config;
    assert_eq!(
        (c.broker_id, c.default_partitions, c.max_connections),
        (9, 3, 9)
    );
    assert!(!c.auto_create_topics);
    let sources: Vec<Option<Source>> =
        ["broker_id", "default_partitions", "max_connections", "rack"]
            .iter()
            .map(|k| startup.resolved.source(k))
            .collect();
    let expected = [Source::Flag, Source::Env, Source::File, Source::Default];
    assert_eq!(sources, expected.map(Some));
}

#[test]
fn topic_defaults_come_from_flags_and_file_under_kafkas_names() {
    let f =
        file("log_retention_hours = 2\ncompression_type = \"lz4\"\nlog_segment_bytes = 2000000\n");
    let path = f.path().to_str().unwrap();
    let config = config(&[
        "--config",
        path,
        "--compression-type",
        "zstd",
        "--log-message-timestamp-type",
        "LogAppendTime",
        "--log-retention-bytes",
        "-1",
    ])
    .unwrap();
    let defaults = config.topic_defaults();
    assert_eq!(defaults.get("log.retention.hours"), Some("2"));
    assert_eq!(defaults.get("compression.type"), Some("zstd"));
    assert_eq!(defaults.get("log.segment.bytes"), Some("2000000"));
    assert_eq!(
        defaults.get("log.message.timestamp.type"),
        Some("LogAppendTime")
    );
    assert_eq!(defaults.get("log.retention.bytes"), Some("-1"));
    assert_eq!(
        defaults.get("log.roll.hours"),
        None,
        "defaults are not operator settings"
    );
    assert_eq!(config.compactor_config().topic_defaults, *defaults);
    assert!(self::config(&["--log-roll-hours", "0"]).is_err());
    assert!(self::config(&["--compression-type", "brotli"]).is_err());
}

#[test]
fn unknown_file_key_is_an_error_naming_it() {
    let f = file("no_such_setting = 1\n");
    let err = config(&["--config", f.path().to_str().unwrap()]).unwrap_err();
    assert!(
        matches!(&err, ConfigError::UnknownKey { key, .. } if key == "no_such_setting"),
        "{err}"
    );
    let f = file("config = \"other.toml\"\n");
    assert!(config(&["--config", f.path().to_str().unwrap()]).is_err());
}

#[test]
fn check_failures_name_the_setting_and_the_rule() {
    let message = |args: &[&str]| {
        config(args)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert_eq!(
        message(&["--queued-max-request-bytes", "1024"]),
        "invalid setting queued_max_request_bytes: must be at least max_frame_bytes (104857600)"
    );
    assert_eq!(
        message(&["--group-consumer-session-timeout-ms", "5000", "--group-consumer-heartbeat-interval-ms", "5000"]),
        "invalid setting group_consumer_heartbeat_interval_ms: must be below group_consumer_session_timeout_ms (5000)"
    );
    assert_eq!(
        message(&["--default-partitions", "0"]),
        "invalid setting default_partitions: must be at least 1 (got 0), on the command line"
    );
    assert!(message(&["--metastore", "zookeeper"])
        .starts_with("invalid setting metastore: expected `embedded`"));
    assert!(message(&["--advertised-listener", "hostonly"])
        .starts_with("invalid setting advertised_listener:"));
    assert!(
        message(&["--listen", "nowhere"]).starts_with("invalid setting listen: expected ip:port")
    );
    assert!(message(&["--object-store", "ftp://x"]).starts_with("invalid setting object_store:"));
    for args in [
        &["--offsets-retention-minutes", "0"][..],
        &["--offsets-retention-check-interval-ms", "0"],
        &["--compaction-workers", "0"],
        &["--compaction-task-attempts-max", "0"],
        &[
            "--compaction-retry-backoff-ms",
            "10",
            "--compaction-retry-backoff-max-ms",
            "5",
        ],
        &["--max-frame-bytes", "10"],
    ] {
        assert!(
            message(args).starts_with("invalid setting "),
            "{args:?} was accepted"
        );
    }
}

#[test]
fn group_and_compaction_settings_reach_their_configs() {
    let config = config(&[
        "--offsets-retention-minutes",
        "2",
        "--offsets-retention-check-interval-ms",
        "500",
        "--group-consumer-session-timeout-ms",
        "20000",
        "--group-consumer-heartbeat-interval-ms",
        "2000",
        "--compaction-workers",
        "4",
        "--compaction-min-bytes",
        "1024",
        "--compaction-task-attempts-max",
        "3",
        "--compaction-retry-backoff-ms",
        "50",
        "--compaction-retry-backoff-max-ms",
        "400",
        "--compaction-file-bytes-max",
        "4096",
    ])
    .unwrap();
    let groups = crate::groups::GroupConfig::from_config(&config);
    assert_eq!(groups.offsets_retention_ms, 120_000);
    assert_eq!(groups.offsets_retention_check_interval_ms, 500);
    assert_eq!(groups.consumer.session_timeout_ms, 20_000);
    assert_eq!(groups.consumer.heartbeat_interval_ms, 2_000);
    let compactor = config.compactor_config();
    assert_eq!(
        (
            compactor.workers,
            compactor.min_bytes,
            compactor.file_bytes_max
        ),
        (4, 1024, 4096)
    );
    assert_eq!(compactor.task_attempts_max, 3);
    assert_eq!(
        (compactor.retry_backoff_ms, compactor.retry_backoff_max_ms),
        (50, 400)
    );
    let defaults = crate::groups::GroupConfig::from_config(&self::config(&[]).unwrap());
    assert_eq!(defaults.offsets_retention_ms, 7 * 24 * 60 * 60 * 1000);
    assert_eq!(defaults.consumer.session_timeout_ms, 45_000);
    let precise = self::config(&[
        "--offsets-retention-minutes",
        "2",
        "--offsets-retention-ms",
        "1500",
    ])
    .unwrap();
    assert_eq!(precise.offsets_retention_ms(), 1500);
}

#[test]
fn compaction_settings_share_the_compactors_names_and_rules() {
    let broker = settings::schema();
    let compactor = compactor::cli::schema();
    for entry in compactor.entries() {
        let shared = broker.find(entry.key()).is_some();
        assert!(
            shared || entry.key() == "compaction_session_timeout_ms",
            "{} is compactor-only",
            entry.key()
        );
    }
    // The old compactor names are the compactor's only: the broker never had them.
    assert!(broker.find("min_bytes").is_none());
}

#[test]
fn keys_are_unique_and_every_default_passes_its_own_rules() {
    for schema in [settings::schema(), compactor::cli::schema()] {
        let mut keys: Vec<&str> = schema.entries().iter().map(|e| e.key()).collect();
        keys.extend(
            schema
                .entries()
                .iter()
                .flat_map(|e| e.aliases.iter().copied()),
        );
        let count = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), count, "{}: duplicate keys", schema.program);
        for entry in schema.entries() {
            if let Some(toml) = entry.setting.default_parsed().toml {
                let text = toml.trim_matches('"');
                assert!(
                    entry.setting.parse(text).is_ok(),
                    "default of {} fails its rules",
                    entry.key()
                );
            }
        }
    }
}

#[test]
fn advertised_listener_accepts_scheme_and_ipv6() {
    assert_eq!(
        Endpoint::parse("PLAINTEXT://kafka-1:9093").unwrap(),
        Endpoint {
            host: "kafka-1".into(),
            port: 9093
        }
    );
    assert_eq!(
        Endpoint::parse("[::1]:9092").unwrap(),
        Endpoint {
            host: "::1".into(),
            port: 9092
        }
    );
}

#[test]
fn the_readme_holds_the_current_settings_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    assert!(
        readme.contains(&storage::settings::markdown_table(&settings::schema())),
        "README.md: the broker's settings table is stale; regenerate it with `cargo run -p broker --example settings_tables`"
    );
}
