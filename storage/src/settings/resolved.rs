//! [`Resolved`]: every setting of a schema with its effective value and where it came from.

use std::fmt;

use super::setting::{Parsed, Setting, SettingType};

/// Where an effective value came from, lowest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Default,
    File,
    Env,
    Flag,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::File => "file",
            Source::Env => "env",
            Source::Flag => "flag",
        }
    }

    pub fn from_name(name: &str) -> Option<Source> {
        [Source::Default, Source::File, Source::Env, Source::Flag]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One effective setting.
pub struct Value {
    pub key: &'static str,
    pub parsed: Parsed,
    pub source: Source,
    /// How the default is derived, for an unset optional setting.
    pub note: Option<String>,
}

/// The effective settings of one binary, in schema order.
pub struct Resolved {
    pub(super) program: &'static str,
    pub(super) values: Vec<Value>,
    /// Deprecated names that were used, to be logged once logging is up.
    pub warnings: Vec<String>,
}

impl Resolved {
    /// The typed value of `setting`. A setting outside the schema reads as its default: that
    /// is a programming error, caught in debug builds.
    pub fn get<T: SettingType>(&self, setting: &Setting<T>) -> T {
        let value = self
            .find(setting.key)
            .and_then(|v| v.parsed.value.downcast_ref::<T>());
        debug_assert!(
            value.is_some(),
            "{} read as the wrong type or not in the schema",
            setting.key
        );
        value.cloned().unwrap_or_else(|| setting.default_value())
    }

    pub fn find(&self, key: &str) -> Option<&Value> {
        self.values.iter().find(|v| v.key == key)
    }

    pub fn source(&self, key: &str) -> Option<Source> {
        self.find(key).map(|v| v.source)
    }

    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// `--print-config`: one `key = value  # source` line per setting, a TOML file that
    /// `--config` accepts back. Unset optional settings are comments.
    pub fn print(&self) -> String {
        let mut out = format!(
            "# effective settings of {}: value and source (default, file, env or flag)\n",
            self.program
        );
        let width = self.values.iter().map(|v| v.key.len()).max().unwrap_or(0);
        for value in &self.values {
            let line = match &value.parsed.toml {
                Some(toml) => format!("{:width$} = {toml}", value.key),
                None => match value.note.as_deref() {
                    Some(note) if note != "unset" => {
                        format!("# {:width$} unset: {note}", value.key)
                    }
                    _ => format!("# {:width$} unset", value.key),
                },
            };
            out.push_str(&format!("{line}  # {}\n", value.source));
        }
        out
    }
}
