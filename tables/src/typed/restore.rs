//! Values stored once: when the typed columns hold an Avro value losslessly, the compactor
//! keeps only its 5-byte wire-format header in the `value` column, and the Kafka reader
//! rebuilds the value from `value_typed` and the writer schema, which the file's footer
//! carries (so a file stays readable when the registry forgets the schema).
//!
//! A row's kept value is exactly the header and its typed value is not null only when its
//! value was elided: the writer never types an empty payload, so no other row looks like one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use parquet::data_type::ByteArray;
use parquet::file::metadata::{FileMetaData, KeyValue};
use parquet::file::reader::RowGroupReader;
use parquet::schema::types::{SchemaDescriptor, Type};
use schema_registry::schema::avro::AvroSchema;
use storage::compacted::{CompactedError, ValueRestorer};

use super::kind::{Field, Kind};
use super::shred::Datum;
use super::{avro_encode, unshred, Side};

/// Bytes of the Confluent wire format's header (magic byte 0, schema id) kept of an elided
/// value.
pub const WIRE_HEADER_BYTES: usize = 5;
/// Footer key of the writer schema of `<id>`, its self-contained JSON.
pub(super) const SCHEMA_KEY_PREFIX: &str = "kafka.value.avro.schema.";
/// Writer schemas one file embeds at most; values of further schemas stay whole.
pub(super) const EMBEDDED_SCHEMAS_MAX: usize = 32;
/// Bytes of schema text whose parses a restorer keeps; past it the cache starts over.
const PARSED_TEXT_BYTES_MAX: usize = 16 << 20;

/// Rebuilds elided values; one per process, shared by every read.
#[derive(Debug, Default)]
pub struct Restorer {
    parsed: Mutex<HashMap<String, Arc<AvroSchema>>>,
}

impl Restorer {
    pub fn new() -> Restorer {
        Restorer::default()
    }

    fn schema(&self, text: &str) -> Result<Arc<AvroSchema>, String> {
        let mut parsed = self.parsed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(schema) = parsed.get(text) {
            return Ok(schema.clone());
        }
        let schema = Arc::new(parse_embedded(text)?);
        let held: usize = parsed.keys().map(String::len).sum();
        if held + text.len() > PARSED_TEXT_BYTES_MAX {
            parsed.clear();
        }
        parsed.insert(text.to_owned(), schema.clone());
        Ok(schema)
    }
}

/// Parses an embedded writer schema (the writer checks its values with this same parse).
pub(super) fn parse_embedded(text: &str) -> Result<AvroSchema, String> {
    AvroSchema::parse(text, &[]).map_err(|e| e.0)
}

/// The footer entry naming the writer schema of `id`.
pub(super) fn schema_entry(id: i32, text: &str) -> KeyValue {
    KeyValue::new(format!("{SCHEMA_KEY_PREFIX}{id}"), text.to_owned())
}

/// The `value_typed` field of a file and its first leaf column.
fn typed_value(schema: &SchemaDescriptor) -> Result<(usize, Field), String> {
    let (_, (name, _)) = Side::Value.columns();
    let mut first_leaf = 0;
    for t in schema.root_schema().get_fields() {
        if t.name() == name {
            return Ok((first_leaf, unshred::field_of(t)?));
        }
        first_leaf += leaves(t);
    }
    Err(format!("no {name} column"))
}

fn leaves(t: &Type) -> usize {
    match t {
        Type::GroupType { fields, .. } => fields.iter().map(|f| leaves(f)).sum(),
        Type::PrimitiveType { .. } => 1,
    }
}

impl ValueRestorer for Restorer {
    fn restore(
        &self,
        file: &FileMetaData,
        group: &dyn RowGroupReader,
        value_def: &[i16],
        values: &mut [ByteArray],
    ) -> Result<(), CompactedError> {
        let bad = |e: String| CompactedError::Parquet(format!("elided values: {e}"));
        let (first_leaf, field) = typed_value(file.schema_descr()).map_err(bad)?;
        let Kind::Struct { fields } = &field.kind else {
            return Err(bad("value_typed is not a struct".into()));
        };
        let rows = unshred::read_rows(group, first_leaf, &field, value_def.len()).map_err(bad)?;
        let embedded = |id: i32| {
            let key = format!("{SCHEMA_KEY_PREFIX}{id}");
            file.key_value_metadata()
                .and_then(|kv| kv.iter().find(|k| k.key == key))
                .and_then(|k| k.value.as_deref())
                .ok_or_else(|| bad(format!("no writer schema for schema id {id}")))
        };
        // A row group's values share a few schemas: each is looked up once per call.
        let mut schemas: HashMap<i32, Arc<AvroSchema>> = HashMap::new();
        let mut next = 0;
        let mut size_hint = 64;
        for (def, datum) in value_def.iter().zip(&rows) {
            if *def == 0 {
                continue;
            }
            let value = values
                .get_mut(next)
                .ok_or_else(|| bad("fewer values than rows".into()))?;
            next += 1;
            if value.len() != WIRE_HEADER_BYTES || matches!(datum, Datum::Null) {
                continue;
            }
            let header = value.data();
            let id = match header {
                [0, a, b, c, d] => i32::from_be_bytes([*a, *b, *c, *d]),
                _ => return Err(bad("a kept header without the magic byte".into())),
            };
            let schema = match schemas.get(&id) {
                Some(schema) => schema.clone(),
                None => {
                    let schema = self.schema(embedded(id)?).map_err(bad)?;
                    schemas.insert(id, schema.clone());
                    schema
                }
            };
            // Sized by the row before (a topic's values are alike), so encoding rarely regrows
            // it; the buffer then becomes the value as it is, without a copy.
            let mut whole = Vec::with_capacity(size_hint);
            whole.extend_from_slice(header);
            avro_encode::encode(&schema, datum, fields, &mut whole)
                .map_err(|e| bad(format!("schema id {id}: {e}")))?;
            size_hint = whole.len() + whole.len() / 8;
            *value = ByteArray::from(whole);
        }
        Ok(())
    }
}
