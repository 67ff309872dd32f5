//! Kafka's config value types (`ConfigDef.Type`) and how Kafka parses and prints values, so that
//! a value is accepted, refused and described here exactly as a Kafka broker would.

use super::ConfigError;

/// A config's type, as Kafka declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean,
    String,
    Int,
    Long,
    Double,
    List,
}

impl ConfigType {
    /// The `config_type` code DescribeConfigs (v3+) reports.
    pub fn describe_code(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
        }
    }

    /// Kafka's name for the type (`ConfigDef.Type`), as in its parse errors.
    pub fn kafka_name(self) -> &'static str {
        match self {
            ConfigType::Boolean => "BOOLEAN",
            ConfigType::String => "STRING",
            ConfigType::Int => "INT",
            ConfigType::Long => "LONG",
            ConfigType::Double => "DOUBLE",
            ConfigType::List => "LIST",
        }
    }
}

/// A parsed value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Boolean(bool),
    String(String),
    Int(i32),
    Long(i64),
    Double(f64),
    List(Vec<String>),
}

impl Value {
    /// Parses `raw` as Kafka's `ConfigDef.parseType` does: surrounding whitespace is ignored,
    /// booleans are case-insensitive, list items are split at commas (blanks around them
    /// dropped; an empty string is the empty list). Errors quote `raw` as given.
    pub fn parse(config_type: ConfigType, name: &str, raw: &str) -> Result<Value, ConfigError> {
        let trimmed = raw.trim();
        let not_a = |reason: String| ConfigError::invalid(name, raw, reason);
        let number = || not_a(format!("Not a number of type {}", config_type.kafka_name()));
        Ok(match config_type {
            ConfigType::Boolean => match trimmed.to_ascii_lowercase().as_str() {
                "true" => Value::Boolean(true),
                "false" => Value::Boolean(false),
                _ => return Err(not_a("Expected value to be either true or false".into())),
            },
            ConfigType::String => Value::String(trimmed.to_string()),
            ConfigType::Int => Value::Int(trimmed.parse().map_err(|_| number())?),
            ConfigType::Long => Value::Long(trimmed.parse().map_err(|_| number())?),
            ConfigType::Double => Value::Double(parse_double(trimmed).ok_or_else(number)?),
            ConfigType::List if trimmed.is_empty() => Value::List(Vec::new()),
            ConfigType::List => {
                Value::List(trimmed.split(',').map(|s| s.trim().to_string()).collect())
            }
        })
    }

    /// The value as Kafka writes it back (`ConfigDef.convertToString`): what DescribeConfigs
    /// reports and what the catalog stores.
    pub fn canonical(&self) -> String {
        match self {
            Value::List(items) => items.join(","),
            other => other.java_display(),
        }
    }

    /// The value as Java's `toString` prints it, which is how Kafka quotes a parsed value in
    /// its validation errors (`[a, b]` for lists, `2.0` for doubles).
    pub fn java_display(&self) -> String {
        match self {
            Value::Boolean(b) => b.to_string(),
            Value::String(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            Value::Long(l) => l.to_string(),
            Value::Double(d) => java_double(*d),
            Value::List(items) => format!("[{}]", items.join(", ")),
        }
    }

    /// The value as a number, for range checks (`None` for non-numbers).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(f64::from(*i)),
            Value::Long(l) => Some(*l as f64),
            Value::Double(d) => Some(*d),
            _ => None,
        }
    }
}

/// Java's `Double.parseDouble` for the forms operators write (`0.5`, `1e3`, `NaN`, `Infinity`).
fn parse_double(text: &str) -> Option<f64> {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    // Rust also takes "inf" and "infinity" in any case; Java only "Infinity".
    if unsigned.eq_ignore_ascii_case("inf") || unsigned.eq_ignore_ascii_case("infinity") {
        return (unsigned == "Infinity")
            .then(|| text.parse().ok())
            .flatten();
    }
    if unsigned.eq_ignore_ascii_case("nan") {
        return (unsigned == "NaN").then_some(f64::NAN);
    }
    text.parse().ok()
}

/// Java's `Double.toString`: plain notation with at least one decimal between 10^-3 and 10^7,
/// computerized scientific notation (`2.147483647E9`) outside.
pub fn java_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let magnitude = d.abs();
    if magnitude == 0.0 || (1e-3..1e7).contains(&magnitude) {
        let plain = format!("{d}");
        return if plain.contains('.') {
            plain
        } else {
            format!("{plain}.0")
        };
    }
    let scientific = format!("{d:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    if mantissa.contains('.') {
        format!("{mantissa}E{exponent}")
    } else {
        format!("{mantissa}.0E{exponent}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_java_prints_them() {
        let cases = [
            (2.0, "2.0"),
            (0.5, "0.5"),
            (1000.0, "1000.0"),
            (2_147_483_647.0, "2.147483647E9"),
            (9.223372036854776e18, "9.223372036854776E18"),
            (-0.1, "-0.1"),
            (0.0001, "1.0E-4"),
            (f64::NAN, "NaN"),
        ];
        for (d, text) in cases {
            assert_eq!(java_double(d), text);
        }
    }

    #[test]
    fn values_parse_and_print_as_kafka_does() {
        let list = Value::parse(ConfigType::List, "x", " delete , compact ").unwrap();
        assert_eq!(list.canonical(), "delete,compact");
        assert_eq!(list.java_display(), "[delete, compact]");
        assert_eq!(
            Value::parse(ConfigType::List, "x", "delete,").unwrap(),
            Value::List(vec!["delete".into(), String::new()])
        );
        assert_eq!(
            Value::parse(ConfigType::Boolean, "x", " TRUE ").unwrap(),
            Value::Boolean(true)
        );
        assert_eq!(
            Value::parse(ConfigType::Long, "retention.ms", "soon")
                .unwrap_err()
                .to_string(),
            "Invalid value soon for configuration retention.ms: Not a number of type LONG"
        );
        assert!(Value::parse(ConfigType::Int, "x", "2147483648").is_err());
        assert!(Value::parse(ConfigType::Double, "x", "inf").is_err());
        assert_eq!(
            Value::parse(ConfigType::Double, "x", "1e3")
                .unwrap()
                .canonical(),
            "1000.0"
        );
    }
}
