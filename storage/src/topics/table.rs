//! The tables of `docs/topic-configs.md`, rendered from the definitions so that the document
//! cannot drift from them (a test compares the two; `cargo run -p storage --example
//! topic_configs_table` prints them).

use super::broker_settings::BROKER_SETTINGS;
use super::defs::{all_configs, Effect};

/// One row per Kafka topic config: type, default, valid values, what it does here, and the
/// broker settings that give its default.
pub fn topic_configs_table() -> String {
    let mut out = String::from(
        "| config | type | Kafka default | valid values | here | broker defaults (first set wins) |\n|---|---|---|---|---|---|\n",
    );
    for def in all_configs() {
        let here = match def.effect {
            Effect::Produce => "**honoured** by the broker on produce".to_string(),
            Effect::Retention => "**honoured** by the compactor (retention)".to_string(),
            Effect::Compaction => "**honoured** by the compactor (key compaction)".to_string(),
            Effect::Table => "**honoured** by the compactor (Iceberg table commits)".to_string(),
            Effect::None(why) => format!("accepted, stored, described; no effect: {why}"),
        };
        let here = if def.name == "cleanup.policy" {
            format!("{here}; `compact` by key compaction")
        } else if def.internal {
            format!("{here} (internal: described only when set)")
        } else {
            here
        };
        let synonyms: Vec<String> = def.synonyms.iter().map(|s| format!("`{s}`")).collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {here} | {} |\n",
            def.name,
            def.config_type.kafka_name(),
            def.default
                .map_or("(none)".to_string(), |d| format!("`{d}`")),
            def.validator.to_string().replace('|', "\\|"),
            synonyms.join(", ")
        ));
    }
    out
}

/// One row per broker setting that is a topic default, with its flag when it has one.
pub fn broker_settings_table(flags: &[&str]) -> String {
    let mut out = String::from(
        "| broker setting | flag | type | Kafka default | default of |\n|---|---|---|---|---|\n",
    );
    for setting in BROKER_SETTINGS {
        let flag = if flags.contains(&setting.name) {
            format!("`--{}`", setting.name.replace('.', "-"))
        } else {
            "(described only)".to_string()
        };
        out.push_str(&format!(
            "| `{}` | {flag} | {} | {} | `{}` |\n",
            setting.name,
            setting.config_type.kafka_name(),
            setting
                .default
                .map_or("(unset)".to_string(), |d| format!("`{d}`")),
            setting.topic_config
        ));
    }
    out
}
