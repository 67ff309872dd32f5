//! The `compactor` binary's settings: where the data is ([`storage::config::settings::LOCATION`]),
//! the compaction settings under the broker's names, its leader session, and the topic
//! defaults; plus the one-shot actions (`--once`, `--list-tasks`, `--retry-dead`). The names it
//! used before the broker's were shared are still accepted, hidden (see `docs/configuration.md`).

use std::ffi::OsString;

use clap::{Arg, ArgAction, Command};
use storage::config::{
    settings::{LOCATION, OBSERVABILITY},
    Location,
};
use storage::settings::{
    topic_settings, AnySetting, Mode, Resolved, Schema, Setting, SettingsError, Unit,
};

use crate::config::settings as compaction;
use crate::CompactorConfig;

pub static COMPACTION_SESSION_TIMEOUT_MS: Setting<u64> = Setting::new(
    "compaction_session_timeout_ms",
    10_000,
    Unit::Ms,
    "How long the compaction leader lock outlives a compactor that stopped renewing it (a killed one)",
)
.at_least(100);

/// Old compactor names of settings now named as on the broker, kept for one release.
const ALIASES: &[(&str, &str)] = &[
    ("compaction_min_bytes", "min_bytes"),
    ("compaction_min_age_ms", "min_age_ms"),
    ("compaction_file_bytes_max", "file_bytes_max"),
    ("compaction_read_bytes_per_sec", "read_bytes_per_sec"),
    ("compaction_workers", "workers"),
    ("compaction_grace_period_ms", "grace_period_ms"),
    ("compaction_interval_ms", "interval_ms"),
    ("compaction_task_attempts_max", "task_attempts_max"),
    ("compaction_retry_backoff_ms", "retry_backoff_ms"),
    ("compaction_retry_backoff_max_ms", "retry_backoff_max_ms"),
    ("compaction_session_timeout_ms", "session_timeout_ms"),
];

/// Every setting of the `compactor` binary.
pub fn schema() -> Schema {
    let schema = Schema::new("compactor", "COMPACTOR_")
        .group("Data", LOCATION.iter().copied())
        .group("Metrics and health", OBSERVABILITY.iter().copied());
    let schema = compaction::add_to(schema, "Compaction")
        .group(
            "Compaction",
            [&COMPACTION_SESSION_TIMEOUT_MS as &dyn AnySetting],
        )
        .group("Topic defaults (Kafka's broker settings)", topic_settings());
    ALIASES
        .iter()
        .fold(schema, |schema, (key, old)| schema.alias(key, old))
}

fn command() -> Command {
    let flag = |id: &'static str, help: &'static str| {
        Arg::new(id)
            .long(id.replace('_', "-"))
            .action(ArgAction::SetTrue)
            .help(help)
    };
    Command::new("compactor")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Compacts WAL objects into Parquet files and reclaims what nobody references")
        .arg(flag(
            "once",
            "Run one pass (compact what is due, reclaim what is safe) and exit",
        ))
        .arg(flag(
            "list_tasks",
            "Print the task records (state, range, attempts, errors) and exit",
        ))
        .arg(flag(
            "retry_dead",
            "Put DEAD tasks back to PENDING (attempts reset) and exit",
        ))
}

/// What one `compactor` process was asked for.
pub struct Cli {
    pub mode: Mode,
    pub resolved: Resolved,
    pub location: Location,
    pub config: CompactorConfig,
    pub session_timeout_ms: u64,
    /// The metrics and health listener (not for `--once` and the task commands).
    pub http_listen: storage::config::HttpListen,
    pub once: bool,
    pub list_tasks: bool,
    pub retry_dead: bool,
}

impl Cli {
    /// Parses `args` (program name first) with `env` and the `--config` file.
    pub fn parse<I, T>(args: I, env: &[(String, String)]) -> Result<Cli, SettingsError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let loaded = schema().load(command(), args, env)?;
        let resolved = loaded.resolved;
        let location = Location::from_settings(&resolved)?;
        let config = CompactorConfig::from_settings(&resolved, &location)?;
        Ok(Cli {
            mode: loaded.mode,
            location,
            config,
            session_timeout_ms: resolved.get(&COMPACTION_SESSION_TIMEOUT_MS),
            http_listen: storage::config::http_listen(&resolved),
            once: loaded.matches.get_flag("once"),
            list_tasks: loaded.matches.get_flag("list_tasks"),
            retry_dead: loaded.matches.get_flag("retry_dead"),
            resolved,
        })
    }
}

#[cfg(test)]
mod tests;
