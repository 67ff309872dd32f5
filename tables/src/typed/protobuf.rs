//! Protobuf values as typed columns: the fields of the schema's first top-level message
//! (messages as structs, repeated fields as lists, maps as maps, enums by name,
//! `google.protobuf.Timestamp` as a UTC timestamp; unsigned 32-bit and 64-bit integers as longs).

use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind as Proto, MapKey, MessageDescriptor, ReflectMessage,
    Value,
};
use schema_registry::schema::protobuf::ProtobufSchema;
use schema_registry::schema::DEPTH_MAX;

use super::kind::{Field, Kind};
use super::shred::Datum;

const TIMESTAMP: &str = "google.protobuf.Timestamp";

/// The columns of the schema's first message.
pub fn shape(schema: &ProtobufSchema) -> Result<Vec<Field>, String> {
    let message = schema
        .first_message()
        .ok_or("the Protobuf schema declares no message")?;
    fields(&message, &mut Vec::new())
}

fn fields(message: &MessageDescriptor, stack: &mut Vec<String>) -> Result<Vec<Field>, String> {
    let name = message.full_name().to_owned();
    if stack.contains(&name) {
        return Err(format!(
            "Protobuf message {name} is recursive, which a table column cannot be"
        ));
    }
    if stack.len() >= DEPTH_MAX {
        return Err(format!("Protobuf schema nested deeper than {DEPTH_MAX}"));
    }
    stack.push(name);
    let out = message
        .fields()
        .map(|f| Ok(Field::new(f.name(), field_kind(&f, stack)?)))
        .collect();
    stack.pop();
    out
}

fn field_kind(f: &FieldDescriptor, stack: &mut Vec<String>) -> Result<Kind, String> {
    if f.is_map() {
        let Proto::Message(entry) = f.kind() else {
            return Err(format!("map field {} has no entry message", f.name()));
        };
        return Ok(Kind::Map {
            key: Box::new(Field::new(
                "key",
                scalar_kind(&entry.map_entry_key_field().kind(), stack)?,
            )),
            value: Box::new(Field::new(
                "value",
                scalar_kind(&entry.map_entry_value_field().kind(), stack)?,
            )),
        });
    }
    let kind = scalar_kind(&f.kind(), stack)?;
    Ok(if f.is_list() {
        Kind::List {
            element: Box::new(Field::new("element", kind)),
        }
    } else {
        kind
    })
}

fn scalar_kind(kind: &Proto, stack: &mut Vec<String>) -> Result<Kind, String> {
    Ok(match kind {
        Proto::Double => Kind::Double,
        Proto::Float => Kind::Float,
        Proto::Int32 | Proto::Sint32 | Proto::Sfixed32 => Kind::Int,
        Proto::Int64 | Proto::Sint64 | Proto::Sfixed64 | Proto::Uint32 | Proto::Fixed32 => {
            Kind::Long
        }
        Proto::Uint64 | Proto::Fixed64 => Kind::Long,
        Proto::Bool => Kind::Boolean,
        Proto::String | Proto::Enum(_) => Kind::String,
        Proto::Bytes => Kind::Binary,
        Proto::Message(m) if m.full_name() == TIMESTAMP => Kind::Timestamptz,
        Proto::Message(m) => Kind::Struct {
            fields: fields(m, stack)?,
        },
    })
}

/// Decodes a record payload (message indexes, then the message) into `columns`.
pub fn decode(schema: &ProtobufSchema, payload: &[u8], columns: &[Field]) -> Result<Datum, String> {
    schema.validate(payload).map_err(|e| e.0)?;
    let (message, encoded) = schema.record_message(payload).map_err(|e| e.0)?;
    let first = schema.first_message().ok_or("no message")?;
    if message.full_name() != first.full_name() {
        return Err(format!(
            "a {} record in a table of {}",
            message.full_name(),
            first.full_name()
        ));
    }
    let decoded = DynamicMessage::decode(message, encoded).map_err(|e| e.to_string())?;
    message_datum(&decoded, columns)
}

fn message_datum(m: &DynamicMessage, columns: &[Field]) -> Result<Datum, String> {
    let descriptor = m.descriptor();
    let mut slots = Vec::with_capacity(columns.len());
    for column in columns {
        let Some(f) = descriptor.get_field_by_name(&column.name) else {
            slots.push(Datum::Null);
            continue;
        };
        // Unset message fields are null; unset scalars read as their defaults, as in proto3.
        if matches!(f.kind(), Proto::Message(_)) && !f.is_list() && !f.is_map() && !m.has_field(&f)
        {
            slots.push(Datum::Null);
            continue;
        }
        slots.push(value_datum(&m.get_field(&f), &column.kind, &f.kind())?);
    }
    Ok(Datum::Struct(slots))
}

fn value_datum(v: &Value, kind: &Kind, proto: &Proto) -> Result<Datum, String> {
    let too_big = || format!("{v:?} does not fit a long");
    Ok(match (v, kind) {
        (Value::Bool(b), _) => Datum::Bool(*b),
        (Value::I32(i), Kind::Int) => Datum::Int(*i),
        (Value::I32(i), _) => Datum::Long(i64::from(*i)),
        (Value::I64(i), _) => Datum::Long(*i),
        (Value::U32(u), _) => Datum::Long(i64::from(*u)),
        (Value::U64(u), _) => Datum::Long(i64::try_from(*u).map_err(|_| too_big())?),
        (Value::F32(f), Kind::Double) => Datum::Double(f64::from(*f)),
        (Value::F32(f), _) => Datum::Float(*f),
        (Value::F64(f), _) => Datum::Double(*f),
        (Value::String(s), _) => Datum::Bytes(s.as_bytes().to_vec()),
        (Value::Bytes(b), _) => Datum::Bytes(b.to_vec()),
        (Value::EnumNumber(n), _) => {
            let name = match proto {
                Proto::Enum(e) => e.get_value(*n).map(|v| v.name().to_owned()),
                _ => None,
            };
            Datum::Bytes(name.unwrap_or_else(|| n.to_string()).into_bytes())
        }
        (Value::Message(m), Kind::Timestamptz) => {
            let seconds = m
                .get_field_by_name("seconds")
                .and_then(|v| v.as_i64())
                .unwrap_or(0);
            let nanos = m
                .get_field_by_name("nanos")
                .and_then(|v| v.as_i32())
                .unwrap_or(0);
            let micros = seconds
                .checked_mul(1_000_000)
                .and_then(|s| s.checked_add(i64::from(nanos / 1000)))
                .ok_or("a timestamp out of range")?;
            Datum::Long(micros)
        }
        (Value::Message(m), Kind::Struct { fields }) => message_datum(m, fields)?,
        (Value::List(items), Kind::List { element }) => Datum::List(
            items
                .iter()
                .map(|item| value_datum(item, &element.kind, proto))
                .collect::<Result<_, _>>()?,
        ),
        (Value::Map(entries), Kind::Map { value, .. }) => {
            let value_proto = match proto {
                Proto::Message(entry) => entry.map_entry_value_field().kind(),
                other => other.clone(),
            };
            let mut out: Vec<(Datum, Datum)> = entries
                .iter()
                .map(|(k, v)| Ok((key_datum(k)?, value_datum(v, &value.kind, &value_proto)?)))
                .collect::<Result<_, String>>()?;
            // A map's order on the wire is not kept; sorted, equal maps are equal rows.
            out.sort_by_cached_key(|(k, _)| format!("{k:?}"));
            Datum::Map(out)
        }
        (other, kind) => return Err(format!("a {other:?} value for a {} column", kind.iceberg())),
    })
}

/// A map key as its column holds it; a uint64 key above a long's range is an error (the record
/// keeps its bytes), never a wrong key.
fn key_datum(k: &MapKey) -> Result<Datum, String> {
    Ok(match k {
        MapKey::Bool(b) => Datum::Bool(*b),
        MapKey::I32(i) => Datum::Int(*i),
        MapKey::I64(i) => Datum::Long(*i),
        MapKey::U32(u) => Datum::Long(i64::from(*u)),
        MapKey::U64(u) => {
            Datum::Long(i64::try_from(*u).map_err(|_| format!("map key {u} does not fit a long"))?)
        }
        MapKey::String(s) => Datum::Bytes(s.as_bytes().to_vec()),
    })
}
