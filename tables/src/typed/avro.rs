//! Avro values as typed columns: the columns a schema describes, and a datum decoded straight
//! into them (bounded in depth and size, no intermediate value tree).

use std::collections::HashMap;

use apache_avro::schema::{Name, Schema};
use schema_registry::schema::avro::AvroSchema;
use schema_registry::schema::DEPTH_MAX;

use super::kind::{decimal_bytes, Field, Kind, DECIMAL_PRECISION_MAX};
use super::shred::Datum;
use super::{fit, fit_decimal, VALUE_FIELD};

/// The most items of all arrays and maps of one datum.
const ITEMS_MAX: usize = 1 << 20;

/// The columns of a schema: a record's fields, or one column `value` for another type.
pub fn shape(schema: &AvroSchema) -> Result<Vec<Field>, String> {
    let named = schema.named_types();
    let mut stack = Vec::new();
    match resolve(schema.schema(), named)? {
        Schema::Record(r) => fields(r, named, &mut stack),
        other => Ok(kind_of(other, named, &mut stack)?
            .map(|k| vec![Field::new(VALUE_FIELD, k)])
            .unwrap_or_default()),
    }
}

pub(super) fn resolve<'a>(
    schema: &'a Schema,
    named: &'a HashMap<Name, Schema>,
) -> Result<&'a Schema, String> {
    match schema {
        Schema::Ref { name } => named
            .get(name)
            .ok_or_else(|| format!("Avro type {name} is not defined")),
        other => Ok(other),
    }
}

fn fields(
    r: &apache_avro::schema::RecordSchema,
    named: &HashMap<Name, Schema>,
    stack: &mut Vec<Name>,
) -> Result<Vec<Field>, String> {
    if stack.contains(&r.name) {
        return Err(format!(
            "Avro record {} is recursive, which a table column cannot be",
            r.name
        ));
    }
    if stack.len() >= DEPTH_MAX {
        return Err(format!("Avro schema nested deeper than {DEPTH_MAX}"));
    }
    stack.push(r.name.clone());
    let mut out = Vec::new();
    for f in &r.fields {
        if let Some(kind) = kind_of(&f.schema, named, stack)? {
            out.push(Field::new(f.name.clone(), kind));
        }
    }
    stack.pop();
    Ok(out)
}

/// The column type of `schema`; `None` for `null`, which needs no column.
fn kind_of(
    schema: &Schema,
    named: &HashMap<Name, Schema>,
    stack: &mut Vec<Name>,
) -> Result<Option<Kind>, String> {
    let element = |k: Kind, name: &str| Box::new(Field::new(name, k));
    Ok(Some(match resolve(schema, named)? {
        Schema::Null => return Ok(None),
        Schema::Boolean => Kind::Boolean,
        Schema::Int => Kind::Int,
        Schema::Long => Kind::Long,
        Schema::Float => Kind::Float,
        Schema::Double => Kind::Double,
        Schema::String | Schema::Uuid | Schema::Enum(_) => Kind::String,
        Schema::Bytes | Schema::Fixed(_) | Schema::BigDecimal | Schema::Duration => Kind::Binary,
        Schema::Date => Kind::Date,
        Schema::TimeMillis | Schema::TimeMicros => Kind::Time,
        Schema::TimestampMillis | Schema::TimestampMicros | Schema::TimestampNanos => {
            Kind::Timestamptz
        }
        Schema::LocalTimestampMillis
        | Schema::LocalTimestampMicros
        | Schema::LocalTimestampNanos => Kind::Timestamp,
        Schema::Decimal(d) => {
            let precision = u8::try_from(d.precision).unwrap_or(u8::MAX);
            let scale = u8::try_from(d.scale).unwrap_or(u8::MAX);
            if precision > DECIMAL_PRECISION_MAX || scale > precision {
                return Err(format!(
                    "decimal({}, {}) is wider than Iceberg's 38 digits",
                    d.precision, d.scale
                ));
            }
            Kind::Decimal { precision, scale }
        }
        Schema::Array(a) => match kind_of(&a.items, named, stack)? {
            Some(k) => Kind::List {
                element: element(k, "element"),
            },
            None => return Err("an array of nulls cannot be a column".into()),
        },
        Schema::Map(m) => match kind_of(&m.types, named, stack)? {
            Some(k) => Kind::Map {
                key: element(Kind::String, "key"),
                value: element(k, "value"),
            },
            None => return Err("a map of nulls cannot be a column".into()),
        },
        Schema::Union(u) => {
            let branches: Vec<&Schema> = u
                .variants()
                .iter()
                .filter(|s| !matches!(s, Schema::Null))
                .collect();
            match branches.as_slice() {
                [] => return Ok(None),
                [one] => return kind_of(one, named, stack),
                many => {
                    // No unions in Iceberg: one field per branch, the one written set.
                    let mut fields = Vec::new();
                    for b in many {
                        if let Some(k) = kind_of(b, named, stack)? {
                            fields.push(Field::new(branch_name(b), k));
                        }
                    }
                    Kind::Struct { fields }
                }
            }
        }
        Schema::Record(r) => Kind::Struct {
            fields: fields(r, named, stack)?,
        },
        Schema::Ref { name } => return Err(format!("Avro type {name} is not defined")),
    }))
}

/// A union branch's field name: a named type's name, or the type's own name.
pub(super) fn branch_name(schema: &Schema) -> String {
    match schema {
        Schema::Record(r) => r.name.name.clone(),
        Schema::Enum(e) => e.name.name.clone(),
        Schema::Fixed(f) => f.name.name.clone(),
        Schema::Ref { name } => name.name.clone(),
        other => {
            let text = serde_json::to_value(other).unwrap_or_default();
            text.get("logicalType")
                .or_else(|| text.get("type"))
                .and_then(|t| t.as_str())
                .map_or_else(
                    || text.as_str().unwrap_or("branch").to_owned(),
                    str::to_owned,
                )
        }
    }
}

/// Decodes one Avro datum of `schema` into `columns` (a record's fields, or the `value`
/// column).
pub fn decode(schema: &AvroSchema, payload: &[u8], columns: &[Field]) -> Result<Datum, String> {
    let mut reader = Reader {
        input: payload,
        named: schema.named_types(),
        items: 0,
    };
    let top = Kind::Struct {
        fields: columns.to_vec(),
    };
    let datum = match resolve(schema.schema(), reader.named)? {
        Schema::Record(_) => reader.value(schema.schema(), Some(&top), 0)?,
        other => {
            let kind = columns.first().map(|c| &c.kind);
            Datum::Struct(vec![reader.value(other, kind, 0)?])
        }
    };
    if !reader.input.is_empty() {
        return Err(format!(
            "{} bytes left after the Avro datum",
            reader.input.len()
        ));
    }
    Ok(datum)
}

struct Reader<'a> {
    input: &'a [u8],
    named: &'a HashMap<Name, Schema>,
    items: usize,
}

impl<'a> Reader<'a> {
    fn long(&mut self) -> Result<i64, String> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let (&byte, rest) = self.input.split_first().ok_or("the datum ends early")?;
            self.input = rest;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                #[allow(clippy::cast_possible_wrap)]
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err("a varint longer than 10 bytes".into())
    }

    fn int(&mut self) -> Result<i32, String> {
        i32::try_from(self.long()?).map_err(|_| "an int out of range".to_owned())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.input.len() {
            return Err("the datum ends early".into());
        }
        let (head, rest) = self.input.split_at(n);
        self.input = rest;
        Ok(head)
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let len = usize::try_from(self.long()?).map_err(|_| "a negative length".to_owned())?;
        self.take(len)
    }

    fn count(&mut self) -> Result<usize, String> {
        let mut n = self.long()?;
        if n < 0 {
            n = n.checked_neg().ok_or("a bad block count")?;
            self.long()?; // the block's size in bytes
        }
        let n = usize::try_from(n).map_err(|_| "a bad block count".to_owned())?;
        self.items += n;
        if self.items > ITEMS_MAX {
            return Err(format!("more than {ITEMS_MAX} array or map items"));
        }
        Ok(n)
    }

    /// Reads a value of `schema` shaped for a column of `kind` (`None`: read and drop).
    fn value(
        &mut self,
        schema: &Schema,
        kind: Option<&Kind>,
        depth: usize,
    ) -> Result<Datum, String> {
        if depth > DEPTH_MAX {
            return Err(format!("Avro datum nested deeper than {DEPTH_MAX}"));
        }
        let datum = match resolve(schema, self.named)? {
            Schema::Null => Datum::Null,
            Schema::Boolean => Datum::Bool(self.take(1)?[0] != 0),
            Schema::Int => Datum::Int(self.int()?),
            Schema::Long => Datum::Long(self.long()?),
            Schema::Float => Datum::Float(f32::from_le_bytes(self.fixed::<4>()?)),
            Schema::Double => Datum::Double(f64::from_le_bytes(self.fixed::<8>()?)),
            Schema::String | Schema::Uuid | Schema::Bytes | Schema::BigDecimal => {
                Datum::Bytes(self.bytes()?.to_vec())
            }
            Schema::Fixed(f) => Datum::Bytes(self.take(f.size)?.to_vec()),
            Schema::Duration => Datum::Bytes(self.take(12)?.to_vec()),
            Schema::Enum(e) => {
                let index = usize::try_from(self.long()?).map_err(|_| "a negative enum index")?;
                let symbol = e.symbols.get(index).ok_or("an enum index out of range")?;
                Datum::Bytes(symbol.as_bytes().to_vec())
            }
            Schema::Date => Datum::Int(self.int()?),
            Schema::TimeMillis => Datum::Long(i64::from(self.int()?) * 1000),
            Schema::TimeMicros | Schema::TimestampMicros | Schema::LocalTimestampMicros => {
                Datum::Long(self.long()?)
            }
            Schema::TimestampMillis | Schema::LocalTimestampMillis => Datum::Long(
                self.long()?
                    .checked_mul(1000)
                    .ok_or("a timestamp out of range")?,
            ),
            Schema::TimestampNanos | Schema::LocalTimestampNanos => {
                Datum::Long(self.long()?.div_euclid(1000))
            }
            Schema::Decimal(d) => {
                let raw = match resolve(&d.inner, self.named)? {
                    Schema::Fixed(f) => self.take(f.size)?,
                    _ => self.bytes()?,
                };
                return match kind {
                    Some(Kind::Decimal { precision, .. }) => {
                        fit_decimal(raw, decimal_bytes(*precision)).map(Datum::Bytes)
                    }
                    _ => Ok(Datum::Null),
                };
            }
            Schema::Array(a) => {
                let element = match kind {
                    Some(Kind::List { element }) => Some(&element.kind),
                    _ => None,
                };
                let mut items = Vec::new();
                loop {
                    let n = self.count()?;
                    if n == 0 {
                        break;
                    }
                    for _ in 0..n {
                        items.push(self.value(&a.items, element, depth + 1)?);
                    }
                }
                Datum::List(items)
            }
            Schema::Map(m) => {
                let value_kind = match kind {
                    Some(Kind::Map { value, .. }) => Some(&value.kind),
                    _ => None,
                };
                let mut entries = Vec::new();
                loop {
                    let n = self.count()?;
                    if n == 0 {
                        break;
                    }
                    for _ in 0..n {
                        let key = Datum::Bytes(self.bytes()?.to_vec());
                        entries.push((key, self.value(&m.types, value_kind, depth + 1)?));
                    }
                }
                Datum::Map(entries)
            }
            Schema::Union(u) => {
                let index = usize::try_from(self.long()?).map_err(|_| "a negative union index")?;
                let branch = u
                    .variants()
                    .get(index)
                    .ok_or("a union index out of range")?;
                let non_null = u.variants().iter().filter(|s| !matches!(s, Schema::Null));
                if non_null.count() <= 1 || matches!(branch, Schema::Null) {
                    return self.value(branch, kind, depth + 1);
                }
                let name = branch_name(branch);
                return match kind {
                    Some(Kind::Struct { fields }) => {
                        let mut slots = vec![Datum::Null; fields.len()];
                        let at = fields.iter().position(|f| f.name == name);
                        let v = self.value(branch, at.map(|i| &fields[i].kind), depth + 1)?;
                        if let Some(i) = at {
                            slots[i] = v;
                        }
                        Ok(Datum::Struct(slots))
                    }
                    _ => self.value(branch, None, depth + 1).map(|_| Datum::Null),
                };
            }
            Schema::Record(r) => {
                let columns = match kind {
                    Some(Kind::Struct { fields }) => fields.as_slice(),
                    _ => &[],
                };
                let mut slots = vec![Datum::Null; columns.len()];
                for f in &r.fields {
                    let at = columns.iter().position(|c| c.name == f.name);
                    let v = self.value(&f.schema, at.map(|i| &columns[i].kind), depth + 1)?;
                    if let Some(i) = at {
                        slots[i] = v;
                    }
                }
                return Ok(Datum::Struct(slots));
            }
            Schema::Ref { name } => return Err(format!("Avro type {name} is not defined")),
        };
        match kind {
            Some(kind) => fit(datum, kind),
            None => Ok(Datum::Null),
        }
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
}
