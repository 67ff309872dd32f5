//! The settings model both binaries share. Each setting is declared once, as a
//! [`Setting`] `static` beside the code that uses it (its key, default, unit, range, extra
//! check and help text); component configs take their defaults from those declarations
//! (`StorageConfig::default`, `CompactorConfig::default`). A binary lists its settings in a
//! [`Schema`], which gives its flags (`--key-with-dashes`), environment variables
//! (`<PREFIX>KEY`), file keys (`key`), `--help`, docs tables, `--print-config` and
//! `--check-config`. Values are layered by `figment`: command line > environment > file >
//! default. See `docs/configuration.md`.

mod docs;
mod layers;
mod load;
mod resolved;
mod schema;
mod setting;
mod topic;

pub use docs::markdown_table;
pub use load::{process_env, Loaded, Mode};
pub use resolved::{Resolved, Source, Value};
pub use schema::{flag_of, Entry, Rule, Schema};
pub use setting::{AnySetting, Parsed, Setting, SettingType, Unit};
pub use topic::{flag_settings, topic_defaults, topic_settings, TopicSetting};

use std::path::PathBuf;

/// The log filter of both binaries when `RUST_LOG` is unset (`RUST_LOG` wins when set).
pub const DEFAULT_LOG_FILTER: &str = "info";

/// A setting refused; the message names the file, the key or the setting and its rule.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Bad flag, `--help` or `--version` (clap prints these and exits with the right code).
    #[error(transparent)]
    Cli(#[from] clap::Error),
    #[error("cannot read config file {path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("config file {path}: unknown setting {key:?}")]
    UnknownKey { path: PathBuf, key: String },
    #[error("invalid setting {key}: {reason}")]
    Invalid { key: String, reason: String },
}

#[cfg(test)]
mod tests;
