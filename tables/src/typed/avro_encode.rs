//! Avro values written back from their typed columns: the inverse of [`super::avro::decode`],
//! so that a value the columns hold losslessly need not be stored twice. The writer elides a
//! value only when this encoding gives its exact bytes back; anything the columns do not hold
//! (a dropped union branch, a nanosecond, a non-minimal decimal or block layout) is an error
//! here, which keeps that value whole.

use std::collections::HashMap;

use apache_avro::schema::{Name, Schema};
use schema_registry::schema::avro::AvroSchema;
use schema_registry::schema::DEPTH_MAX;

use super::avro::{branch_name, resolve};
use super::kind::{Field, Kind};
use super::shred::Datum;

/// Appends the Avro binary encoding of `datum` (decoded into `columns` by
/// [`super::avro::decode`]) as `schema` writes it.
pub fn encode(
    schema: &AvroSchema,
    datum: &Datum,
    columns: &[Field],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let mut w = Encoder {
        named: schema.named_types(),
        out,
    };
    match resolve(schema.schema(), w.named)? {
        Schema::Record(r) => w.record(r, datum, columns, 0),
        other => match datum {
            Datum::Struct(values) => {
                let value = values.first().unwrap_or(&Datum::Null);
                w.value(other, value, columns.first().map(|c| &c.kind), 0)
            }
            _ => Err("a top-level value that is not a struct".into()),
        },
    }
}

struct Encoder<'a> {
    named: &'a HashMap<Name, Schema>,
    out: &'a mut Vec<u8>,
}

fn zigzag(v: i64, out: &mut Vec<u8>) {
    #[allow(clippy::cast_sign_loss)]
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        #[allow(clippy::cast_possible_truncation)]
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    #[allow(clippy::cast_possible_truncation)]
    out.push(n as u8);
}

fn len_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The fewest big-endian two's complement bytes of the same value (at least one).
fn minimal_decimal(raw: &[u8]) -> &[u8] {
    let negative = raw.first().is_some_and(|b| b & 0x80 != 0);
    let pad = if negative { 0xff } else { 0 };
    let mut start = 0;
    while start + 1 < raw.len() && raw[start] == pad && (raw[start + 1] & 0x80 != 0) == negative {
        start += 1;
    }
    &raw[start..]
}

impl Encoder<'_> {
    fn long(&mut self, v: i64) {
        zigzag(v, self.out);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.long(len_i64(b.len()));
        self.out.extend_from_slice(b);
    }

    fn record(
        &mut self,
        r: &apache_avro::schema::RecordSchema,
        datum: &Datum,
        columns: &[Field],
        depth: usize,
    ) -> Result<(), String> {
        let Datum::Struct(slots) = datum else {
            return Err(format!("record {} without its struct", r.name));
        };
        for f in &r.fields {
            let at = columns.iter().position(|c| c.name == f.name);
            let value = at.and_then(|i| slots.get(i)).unwrap_or(&Datum::Null);
            let kind = at.map(|i| &columns[i].kind);
            self.value(&f.schema, value, kind, depth + 1)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_lines)]
    fn value(
        &mut self,
        schema: &Schema,
        datum: &Datum,
        kind: Option<&Kind>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > DEPTH_MAX {
            return Err(format!("Avro datum nested deeper than {DEPTH_MAX}"));
        }
        let lost = || "the typed columns do not hold this value".to_owned();
        match (resolve(schema, self.named)?, datum) {
            (Schema::Null, Datum::Null) => {}
            (Schema::Boolean, Datum::Bool(b)) => self.out.push(u8::from(*b)),
            (Schema::Int | Schema::Date, Datum::Int(v)) => self.long(i64::from(*v)),
            (Schema::Int, Datum::Long(v)) => {
                self.long(i64::from(i32::try_from(*v).map_err(|_| lost())?));
            }
            (
                Schema::Long
                | Schema::TimeMicros
                | Schema::TimestampMicros
                | Schema::LocalTimestampMicros,
                Datum::Long(v),
            ) => self.long(*v),
            (Schema::Float, Datum::Float(v)) => self.out.extend_from_slice(&v.to_le_bytes()),
            #[allow(clippy::cast_possible_truncation)]
            (Schema::Float, Datum::Double(v)) => {
                self.out.extend_from_slice(&(*v as f32).to_le_bytes());
            }
            (Schema::Double, Datum::Double(v)) => self.out.extend_from_slice(&v.to_le_bytes()),
            (
                Schema::String | Schema::Uuid | Schema::Bytes | Schema::BigDecimal,
                Datum::Bytes(b),
            ) => {
                self.bytes(b);
            }
            (Schema::Fixed(f), Datum::Bytes(b)) if b.len() == f.size => {
                self.out.extend_from_slice(b);
            }
            (Schema::Duration, Datum::Bytes(b)) if b.len() == 12 => self.out.extend_from_slice(b),
            (Schema::Enum(e), Datum::Bytes(symbol)) => {
                let index = e
                    .symbols
                    .iter()
                    .position(|s| s.as_bytes() == symbol.as_slice())
                    .ok_or_else(lost)?;
                self.long(len_i64(index));
            }
            (Schema::TimeMillis, Datum::Long(micros)) if micros % 1000 == 0 => {
                let millis = i32::try_from(micros / 1000).map_err(|_| lost())?;
                self.long(i64::from(millis));
            }
            (Schema::TimestampMillis | Schema::LocalTimestampMillis, Datum::Long(micros))
                if micros % 1000 == 0 =>
            {
                self.long(micros / 1000);
            }
            (Schema::TimestampNanos | Schema::LocalTimestampNanos, Datum::Long(micros)) => {
                self.long(micros.checked_mul(1000).ok_or_else(lost)?);
            }
            (Schema::Decimal(d), Datum::Bytes(raw)) => match resolve(&d.inner, self.named)? {
                Schema::Fixed(f) => {
                    let fixed = super::fit_decimal(raw, f.size)?;
                    self.out.extend_from_slice(&fixed);
                }
                _ => self.bytes(minimal_decimal(raw)),
            },
            (Schema::Array(a), Datum::List(items)) => {
                let element = match kind {
                    Some(Kind::List { element }) => Some(&element.kind),
                    _ => None,
                };
                if !items.is_empty() {
                    self.long(len_i64(items.len()));
                    for item in items {
                        self.value(&a.items, item, element, depth + 1)?;
                    }
                }
                self.long(0);
            }
            (Schema::Map(m), Datum::Map(entries)) => {
                let value_kind = match kind {
                    Some(Kind::Map { value, .. }) => Some(&value.kind),
                    _ => None,
                };
                if !entries.is_empty() {
                    self.long(len_i64(entries.len()));
                    for (key, value) in entries {
                        let Datum::Bytes(key) = key else {
                            return Err(lost());
                        };
                        self.bytes(key);
                        self.value(&m.types, value, value_kind, depth + 1)?;
                    }
                }
                self.long(0);
            }
            (Schema::Union(u), datum) => self.union(u, datum, kind, depth)?,
            (Schema::Record(r), datum) => {
                let columns = match kind {
                    Some(Kind::Struct { fields }) => fields.as_slice(),
                    _ => &[],
                };
                self.record(r, datum, columns, depth)?;
            }
            _ => return Err(lost()),
        }
        Ok(())
    }

    /// A union as decoding shaped it: a null, the one non-null branch's value, or (two or more
    /// non-null branches) a struct with one field set, named for its branch.
    fn union(
        &mut self,
        u: &apache_avro::schema::UnionSchema,
        datum: &Datum,
        kind: Option<&Kind>,
        depth: usize,
    ) -> Result<(), String> {
        let lost = || "the typed columns do not hold this union".to_owned();
        let variants = u.variants();
        let null = variants.iter().position(|s| matches!(s, Schema::Null));
        let non_null: Vec<usize> = (0..variants.len()).filter(|i| Some(*i) != null).collect();
        if matches!(datum, Datum::Null) {
            self.long(len_i64(null.ok_or_else(lost)?));
            return Ok(());
        }
        if let [only] = non_null.as_slice() {
            self.long(len_i64(*only));
            return self.value(&variants[*only], datum, kind, depth + 1);
        }
        let (Datum::Struct(slots), Some(Kind::Struct { fields })) = (datum, kind) else {
            return Err(lost());
        };
        let mut set = slots
            .iter()
            .enumerate()
            .filter(|(_, d)| !matches!(d, Datum::Null));
        let (Some((at, value)), None) = (set.next(), set.next()) else {
            return Err(lost());
        };
        let name = &fields.get(at).ok_or_else(lost)?.name;
        let index = non_null
            .iter()
            .copied()
            .find(|i| &branch_name(&variants[*i]) == name)
            .ok_or_else(lost)?;
        self.long(len_i64(index));
        self.value(&variants[index], value, Some(&fields[at].kind), depth + 1)
    }
}
