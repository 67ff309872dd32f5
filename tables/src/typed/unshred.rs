//! Typed columns read back from a row group into the values the shredder wrote (the inverse
//! of [`super::shred`]): the Kafka reader rebuilds elided values from them.

use parquet::basic::{LogicalType, Type as Physical};
use parquet::column::reader::{get_typed_column_reader, ColumnReader};
use parquet::data_type::{
    BoolType, ByteArrayType, DataType, DoubleType, FixedLenByteArrayType, FloatType, Int32Type,
    Int64Type,
};
use parquet::file::reader::RowGroupReader;
use parquet::schema::types::Type;

use super::kind::{Field, Kind};
use super::shred::{Datum, Values};

/// The field a Parquet type written by [`super::kind::parquet_type`] describes.
pub fn field_of(t: &Type) -> Result<Field, String> {
    let info = t.get_basic_info();
    let id = if info.has_id() { info.id() } else { 0 };
    let kind = match t {
        Type::GroupType { fields, .. } => match info.logical_type_ref() {
            Some(LogicalType::List) => {
                let [repeated] = fields.as_slice() else {
                    return Err(format!("list {} has no single repeated group", t.name()));
                };
                let [element] = repeated.get_fields() else {
                    return Err(format!("list {} has no single element", t.name()));
                };
                Kind::List {
                    element: Box::new(field_of(element)?),
                }
            }
            Some(LogicalType::Map) => {
                let [repeated] = fields.as_slice() else {
                    return Err(format!("map {} has no single repeated group", t.name()));
                };
                let [key, value] = repeated.get_fields() else {
                    return Err(format!("map {} has no key and value", t.name()));
                };
                Kind::Map {
                    key: Box::new(field_of(key)?),
                    value: Box::new(field_of(value)?),
                }
            }
            _ if fields.is_empty() => return Err(format!("struct {} has no field", t.name())),
            _ => Kind::Struct {
                fields: fields
                    .iter()
                    .map(|f| field_of(f))
                    .collect::<Result<_, _>>()?,
            },
        },
        Type::PrimitiveType {
            physical_type,
            precision,
            scale,
            ..
        } => match (physical_type, info.logical_type_ref()) {
            (Physical::BOOLEAN, _) => Kind::Boolean,
            (Physical::INT32, Some(LogicalType::Date)) => Kind::Date,
            (Physical::INT32, _) => Kind::Int,
            (Physical::INT64, Some(LogicalType::Time(_))) => Kind::Time,
            (Physical::INT64, Some(LogicalType::Timestamp(ts))) if ts.is_adjusted_to_u_t_c => {
                Kind::Timestamptz
            }
            (Physical::INT64, Some(LogicalType::Timestamp(_))) => Kind::Timestamp,
            (Physical::INT64, _) => Kind::Long,
            (Physical::FLOAT, _) => Kind::Float,
            (Physical::DOUBLE, _) => Kind::Double,
            (Physical::BYTE_ARRAY, Some(LogicalType::String)) => Kind::String,
            (Physical::BYTE_ARRAY, _) => Kind::Binary,
            (Physical::FIXED_LEN_BYTE_ARRAY, _) => Kind::Decimal {
                precision: u8::try_from(*precision).map_err(|_| "a bad decimal precision")?,
                scale: u8::try_from(*scale).map_err(|_| "a bad decimal scale")?,
            },
            (other, _) => return Err(format!("column {} of type {other}", t.name())),
        },
    };
    Ok(Field {
        id,
        name: t.name().to_owned(),
        kind,
    })
}

/// How many leaf columns `f` spans.
pub fn leaf_count(f: &Field) -> usize {
    match &f.kind {
        Kind::Struct { fields } => fields.iter().map(leaf_count).sum(),
        Kind::List { element } => leaf_count(element),
        Kind::Map { key, value } => leaf_count(key) + leaf_count(value),
        _ => 1,
    }
}

/// One leaf column and how far assembly has read it.
struct Leaf {
    values: Values,
    def: Vec<i16>,
    rep: Vec<i16>,
    level: usize,
    value: usize,
}

impl Leaf {
    fn def(&self) -> Result<i16, String> {
        self.def
            .get(self.level)
            .copied()
            .ok_or_else(|| "a typed column ends early".to_owned())
    }

    /// Whether the next entry continues a list at repetition level `rep`.
    fn continues(&self, rep: i16) -> bool {
        self.rep.get(self.level) == Some(&rep)
    }

    fn take(&mut self) -> Result<Datum, String> {
        let i = self.value;
        let datum = match &self.values {
            Values::Bool(v) => v.get(i).map(|x| Datum::Bool(*x)),
            Values::Int(v) => v.get(i).map(|x| Datum::Int(*x)),
            Values::Long(v) => v.get(i).map(|x| Datum::Long(*x)),
            Values::Float(v) => v.get(i).map(|x| Datum::Float(*x)),
            Values::Double(v) => v.get(i).map(|x| Datum::Double(*x)),
            Values::Bytes(v) => v.get(i).map(|x| Datum::Bytes(x.data().to_vec())),
            Values::Fixed(v) => v.get(i).map(|x| Datum::Bytes(x.data().to_vec())),
        };
        self.value += 1;
        self.level += 1;
        datum.ok_or_else(|| "a typed column has fewer values than levels".to_owned())
    }
}

/// Reads `rows` rows of `field`, whose first leaf column is `first_leaf` in `group`.
pub fn read_rows(
    group: &dyn RowGroupReader,
    first_leaf: usize,
    field: &Field,
    rows: usize,
) -> Result<Vec<Datum>, String> {
    let mut leaves = Vec::new();
    read_leaves(group, field, rows, &mut (first_leaf, &mut leaves))?;
    let mut out = Vec::with_capacity(rows);
    for _ in 0..rows {
        let mut at = 0;
        out.push(assemble(field, 0, 0, false, &mut leaves, &mut at)?);
    }
    if leaves
        .iter()
        .any(|l| l.level != l.def.len() || l.value != l.values.len())
    {
        return Err("a typed column holds more than its rows".into());
    }
    Ok(out)
}

fn read_leaves(
    group: &dyn RowGroupReader,
    f: &Field,
    rows: usize,
    state: &mut (usize, &mut Vec<Leaf>),
) -> Result<(), String> {
    let column = state.0;
    let reader = || {
        group
            .get_column_reader(column)
            .map_err(|e| format!("typed column {column}: {e}"))
    };
    let values = match &f.kind {
        Kind::Struct { fields } => {
            return fields
                .iter()
                .try_for_each(|c| read_leaves(group, c, rows, state))
        }
        Kind::List { element } => return read_leaves(group, element, rows, state),
        Kind::Map { key, value } => {
            read_leaves(group, key, rows, state)?;
            return read_leaves(group, value, rows, state);
        }
        scalar => Values::of(scalar).unwrap_or(Values::Bytes(Vec::new())),
    };
    let mut leaf = Leaf {
        values,
        def: Vec::new(),
        rep: Vec::new(),
        level: 0,
        value: 0,
    };
    let (def, rep) = (&mut leaf.def, &mut leaf.rep);
    match &mut leaf.values {
        Values::Bool(v) => read::<BoolType>(reader()?, rows, def, rep, v),
        Values::Int(v) => read::<Int32Type>(reader()?, rows, def, rep, v),
        Values::Long(v) => read::<Int64Type>(reader()?, rows, def, rep, v),
        Values::Float(v) => read::<FloatType>(reader()?, rows, def, rep, v),
        Values::Double(v) => read::<DoubleType>(reader()?, rows, def, rep, v),
        Values::Bytes(v) => read::<ByteArrayType>(reader()?, rows, def, rep, v),
        Values::Fixed(v) => read::<FixedLenByteArrayType>(reader()?, rows, def, rep, v),
    }
    .map_err(|e| format!("typed column {column} ({}): {e}", f.name))?;
    state.1.push(leaf);
    state.0 += 1;
    Ok(())
}

fn read<T: DataType>(
    column: ColumnReader,
    rows: usize,
    def: &mut Vec<i16>,
    rep: &mut Vec<i16>,
    out: &mut Vec<T::T>,
) -> Result<(), String> {
    let mut typed = get_typed_column_reader::<T>(column);
    let (records, _, _) = typed
        .read_records(rows, Some(def), Some(rep), out)
        .map_err(|e| e.to_string())?;
    if records != rows {
        return Err(format!("{records} rows, expected {rows}"));
    }
    Ok(())
}

/// Assembles the value of `f` at the leaves' current entries (`at`: `f`'s first leaf);
/// `parent_def` is the definition level of `f`'s parent when present, `depth` the number of
/// repeated ancestors. Mirrors `shred::put`.
fn assemble(
    f: &Field,
    parent_def: i16,
    depth: i16,
    required: bool,
    leaves: &mut [Leaf],
    at: &mut usize,
) -> Result<Datum, String> {
    let def = if required { parent_def } else { parent_def + 1 };
    let first = *at;
    let span = leaf_count(f);
    let Some(head) = leaves.get(first) else {
        return Err("fewer typed leaf columns than fields".into());
    };
    let present = head.def()?;
    let absent = |leaves: &mut [Leaf], at: &mut usize| {
        leaves[first..first + span]
            .iter_mut()
            .for_each(|l| l.level += 1);
        *at = first + span;
    };
    if present < def {
        absent(leaves, at);
        return Ok(Datum::Null);
    }
    Ok(match &f.kind {
        Kind::Struct { fields } => {
            let mut values = Vec::with_capacity(fields.len());
            for c in fields {
                values.push(assemble(c, def, depth, false, leaves, at)?);
            }
            Datum::Struct(values)
        }
        Kind::List { .. } | Kind::Map { .. } if present == def => {
            absent(leaves, at);
            match f.kind {
                Kind::List { .. } => Datum::List(Vec::new()),
                _ => Datum::Map(Vec::new()),
            }
        }
        Kind::List { element } => {
            let mut items = Vec::new();
            loop {
                *at = first;
                items.push(assemble(element, def + 1, depth + 1, false, leaves, at)?);
                if !leaves[first].continues(depth + 1) {
                    break;
                }
            }
            Datum::List(items)
        }
        Kind::Map { key, value } => {
            let mut entries = Vec::new();
            loop {
                *at = first;
                let k = assemble(key, def + 1, depth + 1, true, leaves, at)?;
                let v = assemble(value, def + 1, depth + 1, false, leaves, at)?;
                entries.push((k, v));
                if !leaves[first].continues(depth + 1) {
                    break;
                }
            }
            Datum::Map(entries)
        }
        _ => {
            *at = first + 1;
            leaves[first].take()?
        }
    })
}
