//! One setting's declaration: its key, default, unit, valid range, extra check and help text,
//! written once as a `static` next to the code that uses it. Component configs
//! (`StorageConfig`, `CompactorConfig`) take their defaults from these statics, and the loader
//! takes flags, environment variables, file keys, help and docs from them.

use std::any::Any;
use std::net::SocketAddr;
use std::path::PathBuf;

/// What a number counts. Names end with it (`_bytes`, `_ms`), as the style guide asks; help and
/// docs show it as the value's placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Not a number, or a number without a unit (an id, an address).
    None,
    Bytes,
    Ms,
    Seconds,
    Minutes,
    /// A count of things (streams, connections, attempts).
    Count,
    BytesPerSec,
}

impl Unit {
    fn placeholder(self) -> Option<&'static str> {
        match self {
            Unit::None => None,
            Unit::Bytes => Some("BYTES"),
            Unit::Ms => Some("MS"),
            Unit::Seconds => Some("SECONDS"),
            Unit::Minutes => Some("MINUTES"),
            Unit::Count => Some("N"),
            Unit::BytesPerSec => Some("BYTES_PER_SEC"),
        }
    }
}

/// A type a setting can hold: how it is parsed from text (flags, environment and file values
/// alike) and printed back.
pub trait SettingType: Clone + Send + Sync + 'static {
    /// How a default is written in a `static` declaration: the value itself, or text for types
    /// that own memory.
    type Declared: Copy + Send + Sync + 'static;
    /// Placeholder in `--help` when the unit gives none.
    const PLACEHOLDER: &'static str;
    fn from_declared(declared: Self::Declared) -> Self;
    fn parse(text: &str) -> Result<Self, String>;
    /// The value as a TOML literal; `None` for an unset optional value.
    fn to_toml(&self) -> Option<String>;
    /// The value as help and docs show it: TOML without the quotes of strings.
    fn to_text(&self) -> Option<String> {
        self.to_toml()
    }
    /// The value as a number, for range checks.
    fn number(&self) -> Option<i128> {
        None
    }
}

macro_rules! integer_setting_type {
    ($($t:ty: $what:literal),*) => {$(
        impl SettingType for $t {
            type Declared = $t;
            const PLACEHOLDER: &'static str = "N";
            fn from_declared(declared: $t) -> $t {
                declared
            }
            fn parse(text: &str) -> Result<$t, String> {
                text.trim().parse().map_err(|_| {
                    format!("expected {} from {} to {}, got {text:?}", $what, <$t>::MIN, <$t>::MAX)
                })
            }
            fn to_toml(&self) -> Option<String> {
                Some(self.to_string())
            }
            fn number(&self) -> Option<i128> {
                i128::try_from(*self).ok()
            }
        }
    )*};
}

integer_setting_type!(u64: "an integer", u32: "an integer", usize: "an integer", i32: "an integer");

impl SettingType for bool {
    type Declared = bool;
    const PLACEHOLDER: &'static str = "true|false";
    fn from_declared(declared: bool) -> bool {
        declared
    }
    fn parse(text: &str) -> Result<bool, String> {
        match text.trim() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(format!("expected true or false, got {text:?}")),
        }
    }
    fn to_toml(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl SettingType for String {
    type Declared = &'static str;
    const PLACEHOLDER: &'static str = "TEXT";
    fn from_declared(declared: &'static str) -> String {
        declared.to_string()
    }
    fn parse(text: &str) -> Result<String, String> {
        Ok(text.to_string())
    }
    fn to_text(&self) -> Option<String> {
        Some(self.clone())
    }
    fn to_toml(&self) -> Option<String> {
        Some(toml::Value::String(self.clone()).to_string())
    }
}

impl SettingType for PathBuf {
    type Declared = &'static str;
    const PLACEHOLDER: &'static str = "PATH";
    fn from_declared(declared: &'static str) -> PathBuf {
        PathBuf::from(declared)
    }
    fn parse(text: &str) -> Result<PathBuf, String> {
        if text.is_empty() {
            return Err("expected a path, got an empty string".into());
        }
        Ok(PathBuf::from(text))
    }
    fn to_text(&self) -> Option<String> {
        Some(self.display().to_string())
    }
    fn to_toml(&self) -> Option<String> {
        Some(toml::Value::String(self.display().to_string()).to_string())
    }
}

impl SettingType for SocketAddr {
    type Declared = SocketAddr;
    const PLACEHOLDER: &'static str = "IP:PORT";
    fn from_declared(declared: SocketAddr) -> SocketAddr {
        declared
    }
    fn parse(text: &str) -> Result<SocketAddr, String> {
        text.trim()
            .parse()
            .map_err(|_| format!("expected ip:port, got {text:?}"))
    }
    fn to_text(&self) -> Option<String> {
        Some(self.to_string())
    }
    fn to_toml(&self) -> Option<String> {
        Some(toml::Value::String(self.to_string()).to_string())
    }
}

/// An optional setting: unset unless given (its default is then derived, see
/// [`Setting::default_note`]).
impl<T: SettingType> SettingType for Option<T> {
    type Declared = Option<T::Declared>;
    const PLACEHOLDER: &'static str = T::PLACEHOLDER;
    fn from_declared(declared: Option<T::Declared>) -> Option<T> {
        declared.map(T::from_declared)
    }
    fn parse(text: &str) -> Result<Option<T>, String> {
        T::parse(text).map(Some)
    }
    fn to_toml(&self) -> Option<String> {
        self.as_ref().and_then(T::to_toml)
    }
    fn to_text(&self) -> Option<String> {
        self.as_ref().and_then(T::to_text)
    }
    fn number(&self) -> Option<i128> {
        self.as_ref().and_then(T::number)
    }
}

/// A rule on one value beyond its range; the error is the rule, as the message shows it.
pub type Check<T> = fn(&T) -> Result<(), String>;

/// One setting. Declare it as a `static` and read it with `Resolved::get`.
pub struct Setting<T: SettingType> {
    /// snake_case, unit last: the file key; the flag is it with `-`, the environment variable
    /// the component's prefix and it in capitals.
    pub key: &'static str,
    pub default: T::Declared,
    /// Describes a default that is derived rather than fixed (unset optional settings).
    pub default_note: Option<&'static str>,
    pub unit: Unit,
    /// Inclusive bounds of numeric values.
    pub min: Option<i128>,
    pub max: Option<i128>,
    /// A rule beyond the range, with the message it gives.
    pub check: Option<Check<T>>,
    pub help: &'static str,
}

impl<T: SettingType> Setting<T> {
    pub const fn new(
        key: &'static str,
        default: T::Declared,
        unit: Unit,
        help: &'static str,
    ) -> Self {
        Setting {
            key,
            default,
            default_note: None,
            unit,
            min: None,
            max: None,
            check: None,
            help,
        }
    }

    pub const fn at_least(mut self, min: i128) -> Self {
        self.min = Some(min);
        self
    }

    pub const fn at_most(mut self, max: i128) -> Self {
        self.max = Some(max);
        self
    }

    pub const fn checked(mut self, check: Check<T>) -> Self {
        self.check = Some(check);
        self
    }

    pub const fn default_note(mut self, note: &'static str) -> Self {
        self.default_note = Some(note);
        self
    }

    /// The declared default, as the typed value.
    pub fn default_value(&self) -> T {
        T::from_declared(self.default)
    }

    fn validate(&self, value: &T) -> Result<(), String> {
        if let Some(n) = value.number() {
            match (self.min, self.max) {
                (Some(min), Some(max)) if n < min || n > max => {
                    return Err(format!("must be between {min} and {max} (got {n})"))
                }
                (Some(min), None) if n < min => {
                    return Err(format!("must be at least {min} (got {n})"))
                }
                (None, Some(max)) if n > max => {
                    return Err(format!("must be at most {max} (got {n})"))
                }
                _ => {}
            }
        }
        self.check.map_or(Ok(()), |check| check(value))
    }
}

/// A parsed, validated value of some setting, with its TOML form for `--print-config`.
pub struct Parsed {
    pub value: Box<dyn Any + Send + Sync>,
    pub toml: Option<String>,
}

/// What the loader, help and docs need of any setting, whatever its type.
pub trait AnySetting: Send + Sync {
    fn key(&self) -> &str;
    fn help(&self) -> &str;
    fn placeholder(&self) -> &str;
    /// The default as docs show it.
    fn default_text(&self) -> String;
    /// The declared range, as docs show it (`>= 1`, `1024..=2147483647`).
    fn range_text(&self) -> Option<String>;
    /// Parses and validates `text`; the error says which rule failed.
    fn parse(&self, text: &str) -> Result<Parsed, String>;
    fn default_parsed(&self) -> Parsed;
}

impl<T: SettingType> AnySetting for Setting<T> {
    fn key(&self) -> &str {
        self.key
    }

    fn help(&self) -> &str {
        self.help
    }

    fn placeholder(&self) -> &str {
        self.unit.placeholder().unwrap_or(T::PLACEHOLDER)
    }

    fn default_text(&self) -> String {
        match (self.default_value().to_text(), self.default_note) {
            (_, Some(note)) => note.to_string(),
            (Some(value), None) => humanized(&value, self.unit),
            (None, None) => "unset".to_string(),
        }
    }

    fn range_text(&self) -> Option<String> {
        match (self.min, self.max) {
            (Some(min), Some(max)) => Some(format!("{min}..={max}")),
            (Some(min), None) => Some(format!(">= {min}")),
            (None, Some(max)) => Some(format!("<= {max}")),
            (None, None) => None,
        }
    }

    fn parse(&self, text: &str) -> Result<Parsed, String> {
        let value = T::parse(text)?;
        self.validate(&value)?;
        Ok(parsed(value))
    }

    fn default_parsed(&self) -> Parsed {
        parsed(self.default_value())
    }
}

fn parsed<T: SettingType>(value: T) -> Parsed {
    Parsed {
        toml: value.to_toml(),
        value: Box::new(value),
    }
}

/// `4194304` as `4194304 (4 MiB)`: byte defaults are powers of two nobody reads at a glance.
fn humanized(value: &str, unit: Unit) -> String {
    let Ok(n) = value.parse::<u64>() else {
        return value.to_string();
    };
    if unit != Unit::Bytes || n < 1024 {
        return value.to_string();
    }
    for (shift, name) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n % (1 << shift) == 0 {
            return format!("{n} ({} {name})", n >> shift);
        }
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    static SIZE: Setting<usize> = Setting::new("size_bytes", 4 << 20, Unit::Bytes, "A size.")
        .at_least(1)
        .at_most(1 << 30);
    static NAME: Setting<Option<String>> = Setting::new("name", None, Unit::None, "A name.")
        .checked(|name| match name.as_deref() {
            Some("bad") => Err("must not be bad".into()),
            _ => Ok(()),
        });

    #[test]
    fn range_and_check_give_the_rule() {
        assert_eq!(
            SIZE.parse("0").err().as_deref(),
            Some("must be between 1 and 1073741824 (got 0)")
        );
        assert!(SIZE
            .parse("-1")
            .err()
            .unwrap()
            .starts_with("expected an integer"));
        assert!(SIZE.parse("1024").is_ok());
        assert_eq!(NAME.parse("bad").err().as_deref(), Some("must not be bad"));
        assert_eq!(NAME.default_text(), "unset");
        assert_eq!(SIZE.default_text(), "4194304 (4 MiB)");
        assert_eq!(SIZE.range_text().as_deref(), Some("1..=1073741824"));
    }

    #[test]
    fn numbers_keep_their_sign_for_range_checks() {
        assert_eq!(u64::MAX.number(), Some(i128::from(u64::MAX)));
        assert_eq!((-5i32).number(), Some(-5));
        assert_eq!(usize::MAX.number(), Some(usize::MAX as i128));
    }
}
