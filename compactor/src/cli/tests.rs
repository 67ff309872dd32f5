//! The `compactor` command line: the broker's names, the old ones as aliases, precedence.

use std::io::Write;

use storage::settings::Source;

use super::*;

fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<Cli, SettingsError> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Cli::parse(
        std::iter::once("compactor").chain(args.iter().copied()),
        &env,
    )
}

#[test]
fn defaults_are_the_declared_ones() {
    let cli = parse(&[], &[]).unwrap();
    let defaults = CompactorConfig::default();
    assert_eq!(cli.config.min_bytes, defaults.min_bytes);
    assert_eq!(cli.config.workers, defaults.workers);
    assert_eq!(
        cli.config.retry_backoff_max_ms,
        defaults.retry_backoff_max_ms
    );
    assert_eq!(cli.config.topic_defaults, defaults.topic_defaults);
    assert_eq!(cli.session_timeout_ms, 10_000);
    assert_eq!(cli.location.metastore, "embedded");
    assert!(cli.location.object_store_url.ends_with("/data/objects"));
    assert!(cli.config.local_folder.is_some());
    assert!(!cli.once && !cli.list_tasks && !cli.retry_dead);
}

#[test]
fn flag_beats_env_beats_file_beats_default() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(
        file,
        "compaction_min_bytes = 1\ncompaction_workers = 3\ncompaction_min_age_ms = 5\nlog_retention_hours = 2"
    )
    .unwrap();
    let path = file.path().to_str().unwrap();
    let cli = parse(
        &["--config", path, "--compaction-min-bytes", "100"],
        &[
            ("COMPACTOR_COMPACTION_MIN_BYTES", "10"),
            ("COMPACTOR_COMPACTION_WORKERS", "4"),
        ],
    )
    .unwrap();
    assert_eq!(cli.config.min_bytes, 100);
    assert_eq!(cli.config.workers, 4);
    assert_eq!(cli.config.min_age_ms, 5);
    assert_eq!(cli.config.grace_period_ms, 60_000);
    assert_eq!(
        cli.config.topic_defaults.get("log.retention.hours"),
        Some("2")
    );
    let sources: Vec<Option<Source>> = [
        "compaction_min_bytes",
        "compaction_workers",
        "compaction_min_age_ms",
        "compaction_grace_period_ms",
    ]
    .iter()
    .map(|k| cli.resolved.source(k))
    .collect();
    let expected = [Source::Flag, Source::Env, Source::File, Source::Default];
    assert_eq!(sources, expected.map(Some));
}

#[test]
fn the_old_compactor_names_still_work() {
    let cli = parse(
        &[
            "--min-bytes",
            "0",
            "--min-age-ms",
            "0",
            "--grace-period-ms",
            "0",
            "--file-bytes-max",
            "4096",
            "--interval-ms",
            "50",
            "--session-timeout-ms",
            "400",
            "--workers",
            "3",
            "--task-attempts-max",
            "2",
            "--retry-backoff-ms",
            "7",
            "--retry-backoff-max-ms",
            "9",
            "--read-bytes-per-sec",
            "11",
        ],
        &[],
    )
    .unwrap();
    let c = &cli.config;
    assert_eq!((c.min_bytes, c.min_age_ms, c.grace_period_ms), (0, 0, 0));
    assert_eq!((c.file_bytes_max, c.interval_ms, c.workers), (4096, 50, 3));
    assert_eq!(
        (
            c.task_attempts_max,
            c.retry_backoff_ms,
            c.retry_backoff_max_ms
        ),
        (2, 7, 9)
    );
    assert_eq!(c.read_bytes_per_sec, 11);
    assert_eq!(cli.session_timeout_ms, 400);
    assert_eq!(cli.resolved.warnings.len(), 11);
    let cli = parse(&[], &[("COMPACTOR_MIN_BYTES", "12")]).unwrap();
    assert_eq!(cli.config.min_bytes, 12);
}

#[test]
fn invalid_settings_name_the_setting_and_the_rule() {
    let message = |args: &[&str]| {
        parse(args, &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert_eq!(
        message(&["--compaction-session-timeout-ms", "10"]),
        "invalid setting compaction_session_timeout_ms: must be at least 100 (got 10), on the command line"
    );
    assert_eq!(
        message(&["--compaction-retry-backoff-ms", "10", "--compaction-retry-backoff-max-ms", "5"]),
        "invalid setting compaction_retry_backoff_ms: must be at most compaction_retry_backoff_max_ms (5)"
    );
    assert!(message(&["--log-segment-bytes", "10"]).contains("Value must be at least 1048576"));
    assert!(message(&["--metastore", "zookeeper"]).starts_with("invalid setting metastore:"));
    assert!(parse(&["--log-cleanup-policy", "compact"], &[]).is_err());
}

#[test]
fn actions_are_flags_of_the_binary_only() {
    let cli = parse(&["--once", "--list-tasks"], &[]).unwrap();
    assert!(cli.once && cli.list_tasks && !cli.retry_dead);
    assert!(schema().find("once").is_none());
}

#[test]
fn every_flag_has_help() {
    let help = command().render_long_help().to_string();
    let command = schema().command(command());
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        assert!(
            arg.get_help().is_some() || id == "help" || id == "version",
            "{id} has no help"
        );
    }
    assert!(help.contains("--once"));
}

#[test]
fn the_docs_hold_the_current_settings_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md");
    let doc = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        doc.contains(&storage::settings::markdown_table(&schema())),
        "docs/configuration.md: the compactor's settings table is stale; regenerate it with `cargo run -p broker --example settings_tables`"
    );
}
