//! JSON Schema values as typed columns. Objects with `properties` are structs, with only
//! `additionalProperties` maps; arrays with one `items` schema lists; integers longs, numbers
//! doubles; strings of format `date-time` timestamps (UTC) and `date` dates. What has no single
//! type (`oneOf`, type arrays beyond a null, recursive `$ref`s, open objects) is a string
//! column holding the value's JSON text.

use schema_registry::schema::DEPTH_MAX;
use serde_json::Value;

use super::kind::{Field, Kind};
use super::shred::Datum;
use super::VALUE_FIELD;

/// The columns of a JSON Schema document.
pub fn shape(document: &Value) -> Result<Vec<Field>, String> {
    let mut refs = Vec::new();
    Ok(match kind_of(document, document, &mut refs)? {
        Some(Kind::Struct { fields }) => fields,
        Some(kind) => vec![Field::new(VALUE_FIELD, kind)],
        None => Vec::new(),
    })
}

fn kind_of(schema: &Value, root: &Value, refs: &mut Vec<String>) -> Result<Option<Kind>, String> {
    let Some(object) = schema.as_object() else {
        return Ok(Some(Kind::String));
    };
    if let Some(target) = object.get("$ref").and_then(Value::as_str) {
        let resolved = target
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer));
        let (Some(resolved), false) = (resolved, refs.iter().any(|r| r == target)) else {
            return Ok(Some(Kind::String));
        };
        if refs.len() >= DEPTH_MAX {
            return Ok(Some(Kind::String));
        }
        refs.push(target.to_owned());
        let kind = kind_of(resolved, root, refs);
        refs.pop();
        return kind;
    }
    let types: Vec<&str> = match object.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        None if object.contains_key("properties") => vec!["object"],
        _ => return Ok(Some(Kind::String)),
    };
    let types: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
    let [single] = types.as_slice() else {
        return Ok((!types.is_empty()).then_some(Kind::String));
    };
    let child = |schema: &Value, refs: &mut Vec<String>| -> Result<Kind, String> {
        Ok(kind_of(schema, root, refs)?.unwrap_or(Kind::String))
    };
    Ok(Some(match *single {
        "boolean" => Kind::Boolean,
        "integer" => Kind::Long,
        "number" => Kind::Double,
        "string" => match object.get("format").and_then(Value::as_str) {
            Some("date-time") => Kind::Timestamptz,
            Some("date") => Kind::Date,
            _ => Kind::String,
        },
        "array" => match object.get("items") {
            Some(items) if items.is_object() => Kind::List {
                element: Box::new(Field::new("element", child(items, refs)?)),
            },
            _ => Kind::String,
        },
        "object" => match (object.get("properties"), object.get("additionalProperties")) {
            (Some(Value::Object(properties)), _) => {
                let mut fields = Vec::new();
                for (name, schema) in properties {
                    if let Some(kind) = kind_of(schema, root, refs)? {
                        fields.push(Field::new(name.clone(), kind));
                    }
                }
                Kind::Struct { fields }
            }
            (None, Some(values)) if values.is_object() => Kind::Map {
                key: Box::new(Field::new("key", Kind::String)),
                value: Box::new(Field::new("value", child(values, refs)?)),
            },
            _ => Kind::String,
        },
        _ => Kind::String,
    }))
}

/// Decodes a JSON payload into `columns`.
pub fn decode(payload: &[u8], columns: &[Field]) -> Result<Datum, String> {
    // serde_json refuses nesting past 128 levels, so parsing cannot exhaust the stack.
    let value: Value =
        serde_json::from_slice(payload).map_err(|e| format!("payload is not JSON: {e}"))?;
    match (columns, &value) {
        ([only], _) if only.name == VALUE_FIELD && !value.is_object() => {
            Ok(Datum::Struct(vec![datum(&value, &only.kind, VALUE_FIELD)?]))
        }
        _ => datum(
            &value,
            &Kind::Struct {
                fields: columns.to_vec(),
            },
            "",
        ),
    }
}

fn datum(v: &Value, kind: &Kind, at: &str) -> Result<Datum, String> {
    let wrong = || {
        format!(
            "{}: {v} is not a {}",
            if at.is_empty() { "#" } else { at },
            kind.iceberg()
        )
    };
    Ok(match (kind, v) {
        (_, Value::Null) => Datum::Null,
        (Kind::String, Value::String(s)) => Datum::Bytes(s.as_bytes().to_vec()),
        (Kind::String, other) => Datum::Bytes(other.to_string().into_bytes()),
        (Kind::Boolean, Value::Bool(b)) => Datum::Bool(*b),
        (Kind::Long, Value::Number(n)) => Datum::Long(match n.as_i64() {
            Some(i) => i,
            None => integral(n.as_f64()).ok_or_else(wrong)?,
        }),
        (Kind::Int, Value::Number(n)) => Datum::Int(
            n.as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(wrong)?,
        ),
        (Kind::Double, Value::Number(n)) => Datum::Double(n.as_f64().ok_or_else(wrong)?),
        (Kind::Timestamptz, Value::String(s)) => Datum::Long(
            chrono::DateTime::parse_from_rfc3339(s)
                .map_err(|e| format!("{at}: {s:?} is not an RFC 3339 date-time: {e}"))?
                .timestamp_micros(),
        ),
        (Kind::Date, Value::String(s)) => {
            let date = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .map_err(|e| format!("{at}: {s:?} is not a date: {e}"))?;
            let days = date
                .signed_duration_since(chrono::NaiveDate::default())
                .num_days();
            Datum::Int(i32::try_from(days).map_err(|_| wrong())?)
        }
        (Kind::Struct { fields }, Value::Object(object)) => Datum::Struct(
            fields
                .iter()
                .map(|f| match object.get(&f.name) {
                    Some(v) => datum(v, &f.kind, &format!("{at}/{}", f.name)),
                    None => Ok(Datum::Null),
                })
                .collect::<Result<_, _>>()?,
        ),
        (Kind::List { element }, Value::Array(items)) => Datum::List(
            items
                .iter()
                .map(|item| datum(item, &element.kind, &format!("{at}[]")))
                .collect::<Result<_, _>>()?,
        ),
        (Kind::Map { value, .. }, Value::Object(object)) => Datum::Map(
            object
                .iter()
                .map(|(k, v)| {
                    let d = datum(v, &value.kind, &format!("{at}/{k}"))?;
                    Ok((Datum::Bytes(k.as_bytes().to_vec()), d))
                })
                .collect::<Result<_, String>>()?,
        ),
        _ => return Err(wrong()),
    })
}

/// An integral float that fits a long.
#[allow(clippy::cast_possible_truncation)]
fn integral(f: Option<f64>) -> Option<i64> {
    let f = f?;
    (f.fract() == 0.0 && (-9.2e18..=9.2e18).contains(&f)).then_some(f as i64)
}
