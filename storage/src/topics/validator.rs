//! Kafka's config validators (`ConfigDef.Range`, `ValidString`, `ValidList`, ...) with their
//! exact messages and their `toString`, which is how Kafka's documentation shows them.

use std::fmt;

use super::value::Value;
use super::ConfigError;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Validator {
    None,
    /// `Range.atLeast(min)`.
    AtLeast(i64),
    /// `Range.between(min, max)`.
    Between(i64, i64),
    /// `ConfigDef.ValidString.in(...)`: case-sensitive.
    OneOf(&'static [&'static str]),
    /// `ConfigDef.ValidList.in(...)`: every item one of these (the empty list is valid).
    ListOf(&'static [&'static str]),
    /// Gzip's levels: `[min,...,max] or equal`.
    BetweenOrEqual(i64, i64, i64),
    /// `ThrottledReplicaListValidator`: `*`, or `partition:broker` items.
    ThrottledReplicas,
}

impl Validator {
    /// Checks a parsed value; errors quote it as Kafka does (Java's `toString` of the value).
    pub fn check(&self, name: &str, value: &Value) -> Result<(), ConfigError> {
        let refuse =
            |reason: String| Err(ConfigError::invalid(name, &value.java_display(), reason));
        match *self {
            Validator::None => Ok(()),
            Validator::AtLeast(min) => match value.as_f64() {
                Some(n) if n < min as f64 => refuse(format!("Value must be at least {min}")),
                _ => Ok(()),
            },
            Validator::Between(min, max) => match value.as_f64() {
                Some(n) if n < min as f64 => refuse(format!("Value must be at least {min}")),
                Some(n) if n > max as f64 => refuse(format!("Value must be no more than {max}")),
                _ => Ok(()),
            },
            Validator::BetweenOrEqual(min, max, equal) => match value.as_f64() {
                Some(n) if n != equal as f64 && !(min as f64..=max as f64).contains(&n) => refuse(
                    format!("Value must be between {min} and {max} or equal to {equal}"),
                ),
                _ => Ok(()),
            },
            Validator::OneOf(allowed) => match value {
                Value::String(s) if !allowed.contains(&s.as_str()) => {
                    refuse(format!("String must be one of: {}", allowed.join(", ")))
                }
                _ => Ok(()),
            },
            Validator::ListOf(allowed) => check_items(name, value, allowed),
            Validator::ThrottledReplicas => match value {
                Value::List(items) if !throttled_replicas_ok(items) => refuse(format!(
                    "{name} must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
                )),
                _ => Ok(()),
            },
        }
    }
}

/// `ValidList` refuses the first item that is not allowed, quoting that item alone.
fn check_items(name: &str, value: &Value, allowed: &[&str]) -> Result<(), ConfigError> {
    let Value::List(items) = value else {
        return Ok(());
    };
    match items.iter().find(|i| !allowed.contains(&i.as_str())) {
        Some(item) => Err(ConfigError::invalid(
            name,
            item,
            format!("String must be one of: {}", allowed.join(", ")),
        )),
        None => Ok(()),
    }
}

fn throttled_replicas_ok(items: &[String]) -> bool {
    let replica = |s: &str| match s.trim().split_once(':') {
        None => s.trim().is_empty(),
        Some((p, b)) => {
            let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
            digits(p) && digits(b)
        }
    };
    items.iter().all(|i| replica(i)) || items.concat() == "*"
}

/// As Kafka prints the validator in its documentation and `ConfigKey.validator.toString()`.
impl fmt::Display for Validator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Validator::None => write!(f, "null"),
            Validator::AtLeast(min) => write!(f, "[{min},...]"),
            Validator::Between(min, max) => write!(f, "[{min},...,{max}]"),
            Validator::BetweenOrEqual(min, max, equal) => write!(f, "[{min},...,{max}] or {equal}"),
            Validator::OneOf(allowed) | Validator::ListOf(allowed) => {
                write!(f, "[{}]", allowed.join(", "))
            }
            Validator::ThrottledReplicas => {
                write!(f, "[partitionId]:[brokerId],[partitionId]:[brokerId],...")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_quote_the_parsed_value() {
        let ratio = Validator::Between(0, 1).check("r", &Value::Double(2.0));
        assert_eq!(
            ratio.unwrap_err().to_string(),
            "Invalid value 2.0 for configuration r: Value must be no more than 1"
        );
        let items = Validator::ListOf(&["compact", "delete"])
            .check("c", &Value::List(vec!["delete".into(), "x".into()]));
        assert_eq!(
            items.unwrap_err().to_string(),
            "Invalid value x for configuration c: String must be one of: compact, delete"
        );
        assert!(Validator::ThrottledReplicas
            .check("t", &Value::List(vec!["*".into()]))
            .is_ok());
        assert!(Validator::ThrottledReplicas
            .check("t", &Value::List(vec!["0:1".into(), " 1:2".into()]))
            .is_ok());
        let bad =
            Validator::ThrottledReplicas.check("t", &Value::List(vec!["*".into(), "0:1".into()]));
        assert!(bad
            .unwrap_err()
            .to_string()
            .starts_with("Invalid value [*, 0:1] for configuration t: t must be"));
    }
}
