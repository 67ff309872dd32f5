//! A [`Schema`]: the settings one binary takes, grouped as `--help` shows them, the old names
//! it still accepts, and the few rules that relate two settings.

use super::resolved::Resolved;
use super::setting::AnySetting;

/// One setting of a binary.
pub struct Entry {
    pub setting: &'static dyn AnySetting,
    /// The `--help` heading and docs section it is listed under.
    pub group: &'static str,
    /// Old keys (flag, environment and file alike) still accepted, hidden from `--help`.
    pub aliases: Vec<&'static str>,
}

impl Entry {
    pub fn key(&self) -> &'static str {
        self.setting.key()
    }

    pub fn flag(&self) -> String {
        flag_of(self.key())
    }
}

/// The `--flag` form of a key.
pub fn flag_of(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// A rule over several settings, reported as a failure of setting `key`.
pub struct Rule {
    pub key: &'static str,
    pub check: fn(&Resolved) -> Result<(), String>,
}

/// The settings of one binary.
pub struct Schema {
    pub program: &'static str,
    /// Of environment variables: `BROKER_` reads `BROKER_DATA_DIR` for `data_dir`.
    pub env_prefix: &'static str,
    entries: Vec<Entry>,
    rules: Vec<Rule>,
}

impl Schema {
    pub fn new(program: &'static str, env_prefix: &'static str) -> Schema {
        Schema {
            program,
            env_prefix,
            entries: Vec::new(),
            rules: Vec::new(),
        }
    }

    /// Adds `settings` under the heading `group`.
    pub fn group(
        mut self,
        group: &'static str,
        settings: impl IntoIterator<Item = &'static dyn AnySetting>,
    ) -> Schema {
        self.entries
            .extend(settings.into_iter().map(|setting| Entry {
                setting,
                group,
                aliases: Vec::new(),
            }));
        self
    }

    /// Keeps accepting `old` for setting `key` (a renamed setting, for a release).
    pub fn alias(mut self, key: &str, old: &'static str) -> Schema {
        let entry = self.entries.iter_mut().find(|e| e.key() == key);
        debug_assert!(entry.is_some(), "alias {old} of unknown setting {key}");
        if let Some(entry) = entry {
            entry.aliases.push(old);
        }
        self
    }

    pub fn rule(mut self, key: &'static str, check: fn(&Resolved) -> Result<(), String>) -> Schema {
        debug_assert!(
            self.entries.iter().any(|e| e.key() == key),
            "rule of unknown {key}"
        );
        self.rules.push(Rule { key, check });
        self
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The entry a key names, and whether the key is an old alias.
    pub fn find(&self, key: &str) -> Option<(&Entry, bool)> {
        self.entries.iter().find_map(|e| {
            if e.key() == key {
                Some((e, false))
            } else if e.aliases.contains(&key) {
                Some((e, true))
            } else {
                None
            }
        })
    }

    /// The environment variable of a key.
    pub fn env_var(&self, key: &str) -> String {
        format!("{}{}", self.env_prefix, key.to_uppercase())
    }
}
