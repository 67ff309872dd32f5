//! The `--log-*` flags: Kafka's broker settings that give topics without an override their
//! configs (`--log-retention-ms`, `--log-segment-bytes`, `--compression-type`, ...). Both the
//! `broker` and the `compactor` binary take them, generated from one table
//! (`storage::topics::BROKER_SETTINGS`), so both see the same defaults. A flag is the Kafka
//! name with `-` for `.`; its environment variable is `BROKER_`/`COMPACTOR_` and the name in
//! capitals with `_`; its config file key is the name with `_`.

use std::sync::OnceLock;

use clap::error::ErrorKind;
use clap::{Arg, ArgMatches, Command};
use storage::topics::{definition, BrokerSetting, Effect, TopicDefaults, BROKER_SETTINGS};

/// The topic defaults the operator set with flags (nothing set: Kafka's defaults).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicDefaultFlags {
    pub defaults: TopicDefaults,
}

/// The names of one flag, made once per process.
struct Flag {
    setting: &'static BrokerSetting,
    id: &'static str,
    long: &'static str,
    broker_env: &'static str,
    compactor_env: &'static str,
}

/// Settings with a flag: those whose topic config does something here. `log.cleanup.policy`
/// has none: `delete` is already the default and `compact` is refused.
fn has_flag(setting: &BrokerSetting) -> bool {
    let effect = definition(setting.topic_config).map(|d| d.effect);
    !matches!(effect, None | Some(Effect::None(_))) && setting.name != "log.cleanup.policy"
}

fn flags() -> &'static [Flag] {
    static FLAGS: OnceLock<Vec<Flag>> = OnceLock::new();
    FLAGS.get_or_init(|| {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        BROKER_SETTINGS
            .iter()
            .filter(|s| has_flag(s))
            .map(|setting| {
                let env = setting.name.replace('.', "_").to_uppercase();
                Flag {
                    setting,
                    id: leak(setting.name.replace('.', "_")),
                    long: leak(setting.name.replace('.', "-")),
                    broker_env: leak(format!("BROKER_{env}")),
                    compactor_env: leak(format!("COMPACTOR_{env}")),
                }
            })
            .collect()
    })
}

/// The Kafka names of the settings that have a flag.
pub fn flag_settings() -> impl Iterator<Item = &'static str> {
    flags().iter().map(|f| f.setting.name)
}

impl clap::Args for TopicDefaultFlags {
    fn augment_args(cmd: Command) -> Command {
        let compactor = cmd.get_name() == "compactor";
        flags().iter().fold(cmd, |cmd, flag| {
            let default = flag.setting.default.unwrap_or("unset");
            let help = format!(
                "Default `{}` of topics without an override (Kafka's `{}`; Kafka's default: {default})",
                flag.setting.topic_config, flag.setting.name
            );
            cmd.arg(
                Arg::new(flag.id)
                    .long(flag.long)
                    .env(if compactor { flag.compactor_env } else { flag.broker_env })
                    .value_name("VALUE")
                    .help(help),
            )
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for TopicDefaultFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = TopicDefaultFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for flag in flags() {
            if let Some(value) = matches.get_one::<String>(flag.id) {
                self.defaults.set(flag.setting.name, value).map_err(|e| {
                    clap::Error::raw(
                        ErrorKind::ValueValidation,
                        format!("--{}: {e}\n", flag.long),
                    )
                })?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    #[command(name = "compactor")]
    struct Args {
        #[command(flatten)]
        topics: TopicDefaultFlags,
    }

    #[test]
    fn flags_carry_kafkas_names_and_validation() {
        let args = Args::try_parse_from([
            "compactor",
            "--log-retention-hours",
            "2",
            "--log-segment-bytes",
            "2000000",
            "--compression-type",
            "gzip",
        ])
        .unwrap();
        let defaults = args.topics.defaults;
        assert_eq!(defaults.get("log.retention.hours"), Some("2"));
        assert_eq!(defaults.get("compression.type"), Some("gzip"));
        let err = Args::try_parse_from(["compactor", "--log-segment-bytes", "10"]).unwrap_err();
        assert!(
            err.to_string().contains("Value must be at least 1048576"),
            "{err}"
        );
        assert!(Args::try_parse_from(["compactor", "--log-cleanup-policy", "compact"]).is_err());
        assert!(Args::try_parse_from(["compactor", "--log-preallocate", "true"]).is_err());
    }

    #[test]
    fn docs_hold_the_current_tables() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/topic-configs.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let flags: Vec<&str> = flag_settings().collect();
        let regenerate = "regenerate with `cargo run -p compactor --example topic_configs_table`";
        assert!(
            doc.contains(&storage::topics::topic_configs_table()),
            "docs/topic-configs.md: topic configs table is stale; {regenerate}"
        );
        assert!(
            doc.contains(&storage::topics::broker_settings_table(&flags)),
            "docs/topic-configs.md: broker settings table is stale; {regenerate}"
        );
    }

    #[test]
    fn the_required_flags_exist() {
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
    }
}
