//! Avro schemas: parsed by `apache-avro` (named types of referenced subjects resolved),
//! compared by its schema-resolution rules (the Avro specification's, which Confluent applies),
//! and payloads checked by a walker of our own: `apache-avro`'s decoder materializes the whole
//! value and recurses without a bound, where validation needs neither (a recursive schema lets a
//! 1 MiB payload nest a million levels deep).

use std::collections::{HashMap, HashSet};

use apache_avro::schema::{Name, RecordSchema, Schema};
use apache_avro::schema_compatibility::SchemaCompatibility;

use super::{Dependency, InvalidPayload, InvalidSchema, DEPTH_MAX};

#[derive(Debug, Clone)]
pub struct AvroSchema {
    /// As parsed: named types of references stay references (`Schema::Ref`).
    schema: Schema,
    /// The same schema with referenced named types written out at their first use, which the
    /// compatibility check needs.
    inlined: Schema,
    /// Every named type the schema uses, by full name.
    named: HashMap<Name, Schema>,
}

impl AvroSchema {
    pub fn parse(text: &str, dependencies: &[Dependency]) -> Result<AvroSchema, InvalidSchema> {
        let texts: Vec<&str> = dependencies.iter().map(|d| d.schema.as_str()).collect();
        let parsed = if texts.is_empty() {
            Schema::parse_str(text).map(|schema| (schema, Vec::new()))
        } else {
            Schema::parse_str_with_list(text, &texts)
        };
        let (schema, referenced) =
            parsed.map_err(|error| InvalidSchema(format!("invalid Avro schema: {error}")))?;
        let mut named = HashMap::new();
        for dependency in &referenced {
            collect_named(dependency, &mut named, 0)?;
        }
        collect_named(&schema, &mut named, 0)?;
        let inlined = inline(&schema, &named, &mut HashSet::new(), 0)?;
        Ok(AvroSchema {
            schema,
            inlined,
            named,
        })
    }

    /// The schema's full JSON (defaults, docs and logical types kept, as Confluent keeps them),
    /// without whitespace and with references by name.
    pub fn canonical(&self) -> String {
        serde_json::to_string(&self.schema).unwrap_or_default()
    }

    /// The schema's JSON with the named types of its references written out at their first
    /// use: a text that parses alone, without the registry (files embed it to stay readable
    /// after a schema is deleted).
    pub fn self_contained(&self) -> String {
        serde_json::to_string(&self.inlined).unwrap_or_default()
    }

    pub fn incompatibilities_reading(&self, writer: &AvroSchema) -> Vec<String> {
        // A reader's enum default stands in for writer symbols it lacks (Avro 1.9+, which
        // Confluent applies); `apache-avro` does not know it, so those symbols are left out
        // of the writer before the check.
        let defaulted: HashMap<Name, Vec<String>> = self
            .named
            .iter()
            .filter_map(|(name, schema)| match schema {
                Schema::Enum(e) if e.default.is_some() => Some((name.clone(), e.symbols.clone())),
                _ => None,
            })
            .collect();
        // Logical types are compared by their physical types, as Avro's Java `SchemaCompatibility`
        // (which Confluent runs) does; `apache-avro` refuses even an unchanged decimal.
        let writer_schema = for_compatibility(&writer.inlined, &defaulted, 0);
        let reader_schema = for_compatibility(&self.inlined, &HashMap::new(), 0);
        match SchemaCompatibility::can_read(&writer_schema, &reader_schema) {
            Ok(()) => Vec::new(),
            Err(error) => vec![format!("READER_CANNOT_READ_WRITER: {error}")],
        }
    }

    pub fn validate(&self, payload: &[u8]) -> Result<(), InvalidPayload> {
        let mut walker = Walker {
            input: payload,
            named: &self.named,
        };
        walker.value(&self.schema, 0)?;
        if walker.input.is_empty() {
            Ok(())
        } else {
            Err(InvalidPayload(format!(
                "{} bytes left after the Avro datum",
                walker.input.len()
            )))
        }
    }

    /// The parsed schema (references by name; see [`AvroSchema::named_types`]).
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    pub fn named_types(&self) -> &HashMap<Name, Schema> {
        &self.named
    }
}

fn too_deep() -> InvalidSchema {
    InvalidSchema(format!("Avro schema nested deeper than {DEPTH_MAX}"))
}

/// Records every named type defined in `schema` under its full name.
fn collect_named(
    schema: &Schema,
    named: &mut HashMap<Name, Schema>,
    depth: usize,
) -> Result<(), InvalidSchema> {
    if depth > DEPTH_MAX {
        return Err(too_deep());
    }
    match schema {
        Schema::Record(record) => {
            named.insert(record.name.clone(), schema.clone());
            for field in &record.fields {
                collect_named(&field.schema, named, depth + 1)?;
            }
        }
        Schema::Enum(e) => {
            named.insert(e.name.clone(), schema.clone());
        }
        Schema::Fixed(f) => {
            named.insert(f.name.clone(), schema.clone());
        }
        Schema::Array(array) => collect_named(&array.items, named, depth + 1)?,
        Schema::Map(map) => collect_named(&map.types, named, depth + 1)?,
        Schema::Union(union) => {
            for variant in union.variants() {
                collect_named(variant, named, depth + 1)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `schema` with each reference to a type not yet defined on the way replaced by the type's
/// definition; later references (and recursion) stay references, as Avro's JSON writes them.
fn inline(
    schema: &Schema,
    named: &HashMap<Name, Schema>,
    defined: &mut HashSet<Name>,
    depth: usize,
) -> Result<Schema, InvalidSchema> {
    if depth > DEPTH_MAX {
        return Err(too_deep());
    }
    Ok(match schema {
        Schema::Ref { name } if !defined.contains(name) => match named.get(name) {
            Some(definition) => inline(definition, named, defined, depth + 1)?,
            None => return Err(InvalidSchema(format!("unknown Avro type {name}"))),
        },
        Schema::Record(record) => {
            defined.insert(record.name.clone());
            let mut record: RecordSchema = record.clone();
            for field in &mut record.fields {
                field.schema = inline(&field.schema, named, defined, depth + 1)?;
            }
            Schema::Record(record)
        }
        Schema::Enum(e) => {
            defined.insert(e.name.clone());
            schema.clone()
        }
        Schema::Fixed(f) => {
            defined.insert(f.name.clone());
            schema.clone()
        }
        Schema::Array(array) => {
            let mut array = array.clone();
            array.items = Box::new(inline(&array.items, named, defined, depth + 1)?);
            Schema::Array(array)
        }
        Schema::Map(map) => {
            let mut map = map.clone();
            map.types = Box::new(inline(&map.types, named, defined, depth + 1)?);
            Schema::Map(map)
        }
        Schema::Union(union) => {
            let variants = union
                .variants()
                .iter()
                .map(|v| inline(v, named, defined, depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            Schema::Union(
                apache_avro::schema::UnionSchema::new(variants)
                    .map_err(|e| InvalidSchema(format!("invalid Avro union: {e}")))?,
            )
        }
        other => other.clone(),
    })
}

/// `schema` as Avro's Java compatibility check sees it: logical types as their physical types,
/// and the symbols of each enum in `defaulted` cut to those the reader knows.
fn for_compatibility(
    schema: &Schema,
    defaulted: &HashMap<Name, Vec<String>>,
    depth: usize,
) -> Schema {
    if depth > DEPTH_MAX {
        return schema.clone();
    }
    let walk = |s: &Schema| for_compatibility(s, defaulted, depth + 1);
    match schema {
        Schema::Decimal(d) => walk(&d.inner),
        Schema::BigDecimal => Schema::Bytes,
        Schema::Uuid => Schema::String,
        Schema::Date | Schema::TimeMillis => Schema::Int,
        Schema::TimeMicros
        | Schema::TimestampMillis
        | Schema::TimestampMicros
        | Schema::TimestampNanos
        | Schema::LocalTimestampMillis
        | Schema::LocalTimestampMicros
        | Schema::LocalTimestampNanos => Schema::Long,
        Schema::Enum(e) => match defaulted.get(&e.name) {
            Some(known) => {
                let mut e = e.clone();
                e.symbols.retain(|symbol| known.contains(symbol));
                Schema::Enum(e)
            }
            None => schema.clone(),
        },
        Schema::Record(record) => {
            let mut record = record.clone();
            for field in &mut record.fields {
                field.schema = walk(&field.schema);
            }
            Schema::Record(record)
        }
        Schema::Array(array) => {
            let mut array = array.clone();
            array.items = Box::new(walk(&array.items));
            Schema::Array(array)
        }
        Schema::Map(map) => {
            let mut map = map.clone();
            map.types = Box::new(walk(&map.types));
            Schema::Map(map)
        }
        Schema::Union(union) => {
            let variants = union.variants().iter().map(walk).collect();
            apache_avro::schema::UnionSchema::new(variants)
                .map(Schema::Union)
                .unwrap_or_else(|_| schema.clone())
        }
        other => other.clone(),
    }
}

/// Reads one Avro datum of a schema off `input`, checking it without building it.
struct Walker<'a> {
    input: &'a [u8],
    named: &'a HashMap<Name, Schema>,
}

fn bad(what: impl Into<String>) -> InvalidPayload {
    InvalidPayload(what.into())
}

impl Walker<'_> {
    fn value(&mut self, schema: &Schema, depth: usize) -> Result<(), InvalidPayload> {
        if depth > DEPTH_MAX {
            return Err(bad(format!("Avro datum nested deeper than {DEPTH_MAX}")));
        }
        match schema {
            Schema::Null => Ok(()),
            Schema::Boolean => match self.take(1)? {
                [0] | [1] => Ok(()),
                _ => Err(bad("boolean byte other than 0 or 1")),
            },
            Schema::Int | Schema::Date | Schema::TimeMillis => self.int().map(drop),
            Schema::Long
            | Schema::TimeMicros
            | Schema::TimestampMillis
            | Schema::TimestampMicros
            | Schema::TimestampNanos
            | Schema::LocalTimestampMillis
            | Schema::LocalTimestampMicros
            | Schema::LocalTimestampNanos => self.long().map(drop),
            Schema::Float => self.take(4).map(drop),
            Schema::Double => self.take(8).map(drop),
            Schema::Bytes | Schema::BigDecimal => self.sized().map(drop),
            Schema::String | Schema::Uuid => {
                let text = self.sized()?;
                std::str::from_utf8(text)
                    .map(drop)
                    .map_err(|_| bad("string is not UTF-8"))
            }
            Schema::Fixed(fixed) => self.take(fixed.size).map(drop),
            Schema::Duration => self.take(12).map(drop),
            Schema::Decimal(decimal) => self.value(&decimal.inner, depth + 1),
            Schema::Enum(e) => self.index(e.symbols.len(), "enum symbol").map(drop),
            Schema::Union(union) => {
                let variant = self.index(union.variants().len(), "union branch")?;
                match union.variants().get(variant) {
                    Some(schema) => self.value(schema, depth + 1),
                    None => Err(bad("union branch out of range")),
                }
            }
            Schema::Array(array) => self.blocks(depth, |w, d| w.value(&array.items, d)),
            Schema::Map(map) => self.blocks(depth, |w, d| {
                w.value(&Schema::String, d)?;
                w.value(&map.types, d)
            }),
            Schema::Record(record) => record
                .fields
                .iter()
                .try_for_each(|field| self.value(&field.schema, depth + 1)),
            Schema::Ref { name } => match self.named.get(name) {
                Some(schema) => self.value(schema, depth + 1),
                None => Err(bad(format!("unknown Avro type {name}"))),
            },
        }
    }

    /// Array or map blocks: a count (negative: followed by the block's size in bytes), its
    /// items, until a zero count.
    fn blocks(
        &mut self,
        depth: usize,
        mut item: impl FnMut(&mut Self, usize) -> Result<(), InvalidPayload>,
    ) -> Result<(), InvalidPayload> {
        loop {
            let count = self.long()?;
            if count == 0 {
                return Ok(());
            }
            if count < 0 {
                self.long()?;
            }
            // Each item takes at least... nothing (null items), so the count is bounded by
            // the payload's size only for non-empty items; cap it by the bytes left plus a
            // margin for zero-sized ones, so a lying count cannot spin for 2^63 rounds.
            let count = count.unsigned_abs();
            if count > (self.input.len() as u64).saturating_mul(8).max(1 << 16) {
                return Err(bad(format!("block of {count} items in a short payload")));
            }
            for _ in 0..count {
                item(self, depth + 1)?;
            }
        }
    }

    fn take(&mut self, n: usize) -> Result<&[u8], InvalidPayload> {
        if self.input.len() < n {
            return Err(bad("Avro datum truncated"));
        }
        let (taken, rest) = self.input.split_at(n);
        self.input = rest;
        Ok(taken)
    }

    /// A zigzag varint of at most 10 bytes.
    fn long(&mut self) -> Result<i64, InvalidPayload> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let [byte] = self.take(1)? else {
                return Err(bad("Avro datum truncated"));
            };
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                #[allow(clippy::cast_possible_wrap)] // zigzag decoding reinterprets the bits
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err(bad("varint longer than 10 bytes"))
    }

    fn int(&mut self) -> Result<i32, InvalidPayload> {
        i32::try_from(self.long()?).map_err(|_| bad("int out of range"))
    }

    fn sized(&mut self) -> Result<&[u8], InvalidPayload> {
        let len = usize::try_from(self.long()?).map_err(|_| bad("negative length"))?;
        self.take(len)
    }

    fn index(&mut self, len: usize, what: &str) -> Result<usize, InvalidPayload> {
        let index = usize::try_from(self.long()?).map_err(|_| bad(format!("negative {what}")))?;
        if index < len {
            Ok(index)
        } else {
            Err(bad(format!("{what} {index} out of range")))
        }
    }
}
