//! IncrementalAlterConfigs on a topic's overrides, with Kafka's semantics and messages: SET
//! and DELETE per key (deleting an unknown key is a no-op), APPEND and SUBTRACT on LIST
//! configs only, starting from the topic's current value (its override, else its default).

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::ResponseError;
use storage::topics::{definition, validate_override, ConfigType, TopicDefaults, Value};

use super::{config_refusal, Refusal};

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

/// One requested change: name, operation, value.
pub type Op = (String, i8, Option<String>);

/// Refuses a request naming a key twice, as Kafka does.
pub fn check_ops(ops: &[Op]) -> Result<(), Refusal> {
    let mut seen = BTreeSet::new();
    if ops.iter().all(|(name, _, _)| seen.insert(name)) {
        Ok(())
    } else {
        Err((
            ResponseError::InvalidRequest,
            "Error due to duplicate config keys".into(),
        ))
    }
}

/// Applies `ops` to `current` (a topic's overrides); the caller validates the result as a whole.
pub fn apply_ops(
    current: &mut BTreeMap<String, String>,
    ops: &[Op],
    defaults: &TopicDefaults,
) -> Result<(), Refusal> {
    for (name, op, value) in ops {
        match *op {
            OP_SET => {
                let value = value.as_deref().ok_or_else(|| {
                    (
                        ResponseError::InvalidRequest,
                        format!("Null value not supported for : {name}"),
                    )
                })?;
                let canonical = validate_override(name, value).map_err(config_refusal)?;
                current.insert(name.clone(), canonical);
            }
            OP_DELETE => {
                current.remove(name);
            }
            OP_APPEND | OP_SUBTRACT => {
                let joined = append_or_subtract(current, name, *op, value.as_deref(), defaults)?;
                let canonical = validate_override(name, &joined).map_err(config_refusal)?;
                current.insert(name.clone(), canonical);
            }
            other => {
                return Err((
                    ResponseError::InvalidRequest,
                    format!("Unknown config operation {other}"),
                ))
            }
        }
    }
    Ok(())
}

fn append_or_subtract(
    current: &BTreeMap<String, String>,
    name: &str,
    op: i8,
    value: Option<&str>,
    defaults: &TopicDefaults,
) -> Result<String, Refusal> {
    let op_name = if op == OP_APPEND {
        "APPEND"
    } else {
        "SUBTRACT"
    };
    let def = definition(name)
        .filter(|d| d.config_type == ConfigType::List)
        .ok_or_else(|| {
            (
                ResponseError::InvalidConfig,
                format!("Can't {op_name} to key {name} because its type is not LIST."),
            )
        })?;
    let base = match current.get(name) {
        Some(v) => Some(v.clone()),
        None => defaults.topic_default(def).value,
    };
    let mut items = match Value::parse(ConfigType::List, name, base.as_deref().unwrap_or("")) {
        Ok(Value::List(items)) => items,
        _ => Vec::new(),
    };
    // Java's String.split(","): items as written, trailing empty ones dropped.
    let operand = value.unwrap_or("");
    let mut parts: Vec<&str> = operand.split(',').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    for part in parts {
        if op == OP_APPEND {
            if !items.iter().any(|i| i == part) {
                items.push(part.to_string());
            }
        } else if let Some(at) = items.iter().position(|i| i == part) {
            items.remove(at);
        }
    }
    Ok(items.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, op: i8, value: Option<&str>) -> Op {
        (name.to_string(), op, value.map(str::to_string))
    }

    #[test]
    fn list_operations_start_from_the_default_and_only_apply_to_lists() {
        let defaults = TopicDefaults::kafka();
        let mut current = BTreeMap::new();
        apply_ops(
            &mut current,
            &[op(
                "leader.replication.throttled.replicas",
                OP_APPEND,
                Some("0:1,1:1"),
            )],
            &defaults,
        )
        .unwrap();
        assert_eq!(current["leader.replication.throttled.replicas"], "0:1,1:1");
        apply_ops(
            &mut current,
            &[op("cleanup.policy", OP_SUBTRACT, Some("delete"))],
            &defaults,
        )
        .unwrap();
        assert_eq!(current["cleanup.policy"], "");
        let err = apply_ops(
            &mut current,
            &[op("retention.ms", OP_APPEND, Some("5"))],
            &defaults,
        )
        .unwrap_err();
        assert_eq!(
            err,
            (
                ResponseError::InvalidConfig,
                "Can't APPEND to key retention.ms because its type is not LIST.".into()
            )
        );
        apply_ops(
            &mut current,
            &[op("cleanup.policy", OP_APPEND, Some("compact"))],
            &defaults,
        )
        .unwrap();
        assert_eq!(current["cleanup.policy"], "compact");
    }

    #[test]
    fn set_delete_null_and_duplicates_follow_kafka() {
        let defaults = TopicDefaults::kafka();
        let mut current = BTreeMap::from([("retention.ms".to_string(), "5".to_string())]);
        apply_ops(
            &mut current,
            &[
                op("retention.ms", OP_DELETE, None),
                op("no.such", OP_DELETE, None),
                op("segment.ms", OP_SET, Some(" 10 ")),
            ],
            &defaults,
        )
        .unwrap();
        assert_eq!(
            current,
            BTreeMap::from([("segment.ms".to_string(), "10".to_string())])
        );
        let null =
            apply_ops(&mut current, &[op("segment.ms", OP_SET, None)], &defaults).unwrap_err();
        assert_eq!(null.0, ResponseError::InvalidRequest);
        assert_eq!(null.1, "Null value not supported for : segment.ms");
        let unknown =
            apply_ops(&mut current, &[op("no.such", OP_SET, Some("1"))], &defaults).unwrap_err();
        assert_eq!(unknown.1, "Unknown topic config name: no.such");
        assert!(check_ops(&[op("a", OP_SET, None), op("a", OP_DELETE, None)]).is_err());
    }
}
