//! Decoded values written as Parquet leaf columns (Dremel's definition and repetition levels)
//! for a tree of optional fields.

use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DataType, DoubleType, FixedLenByteArray,
    FixedLenByteArrayType, FloatType, Int32Type, Int64Type,
};
use parquet::file::writer::SerializedRowGroupWriter;
use storage::compacted::CompactedError;

use super::kind::{Field, Kind};

/// A decoded value shaped like the field it goes to: `Int` for int and date columns, `Long`
/// for long, time and timestamp columns, `Bytes` for string, binary and decimal columns
/// (decimals as the column's fixed-length two's complement), `Struct` with one entry per field.
#[derive(Clone, Debug, PartialEq)]
pub enum Datum {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Bytes(Vec<u8>),
    Struct(Vec<Datum>),
    List(Vec<Datum>),
    Map(Vec<(Datum, Datum)>),
}

/// The values of one leaf column.
pub(super) enum Values {
    Bool(Vec<bool>),
    Int(Vec<i32>),
    Long(Vec<i64>),
    Float(Vec<f32>),
    Double(Vec<f64>),
    Bytes(Vec<ByteArray>),
    Fixed(Vec<FixedLenByteArray>),
}

impl Values {
    /// No values yet, for a leaf of `kind`; `None` for a nested kind.
    pub(super) fn of(kind: &Kind) -> Option<Values> {
        Some(match kind {
            Kind::Boolean => Values::Bool(Vec::new()),
            Kind::Int | Kind::Date => Values::Int(Vec::new()),
            Kind::Long | Kind::Time | Kind::Timestamp | Kind::Timestamptz => {
                Values::Long(Vec::new())
            }
            Kind::Float => Values::Float(Vec::new()),
            Kind::Double => Values::Double(Vec::new()),
            Kind::String | Kind::Binary => Values::Bytes(Vec::new()),
            Kind::Decimal { .. } => Values::Fixed(Vec::new()),
            Kind::Struct { .. } | Kind::List { .. } | Kind::Map { .. } => return None,
        })
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Values::Bool(v) => v.len(),
            Values::Int(v) => v.len(),
            Values::Long(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Double(v) => v.len(),
            Values::Bytes(v) => v.len(),
            Values::Fixed(v) => v.len(),
        }
    }
}

struct Leaf {
    values: Values,
    def: Vec<i16>,
    rep: Vec<i16>,
    repeated: bool,
}

/// The leaf columns of one field and its rows so far.
pub struct Shredder {
    field: Field,
    leaves: Vec<Leaf>,
}

impl Shredder {
    /// Columns for `field`, a top-level optional field.
    pub fn new(field: Field) -> Shredder {
        let mut leaves = Vec::new();
        add_leaves(&field, false, &mut leaves);
        Shredder { field, leaves }
    }

    /// Appends one row. Returns whether the columns hold `datum` exactly (a value of
    /// another shape than its field is written as null).
    pub fn push(&mut self, datum: Datum) -> bool {
        let mut at = 0;
        let exact = put(
            &self.field,
            datum,
            0,
            0,
            0,
            false,
            &mut self.leaves,
            &mut at,
        );
        debug_assert_eq!(at, self.leaves.len(), "a row reaches every leaf once");
        debug_assert!(exact, "a decoded value is shaped like its column");
        exact
    }

    /// Writes the rows pushed since the last call as the next columns of `group`.
    pub fn write(
        &mut self,
        group: &mut SerializedRowGroupWriter<'_, Vec<u8>>,
    ) -> Result<(), CompactedError> {
        for leaf in &mut self.leaves {
            let def = std::mem::take(&mut leaf.def);
            let rep = std::mem::take(&mut leaf.rep);
            let rep = leaf.repeated.then_some(rep.as_slice());
            match &mut leaf.values {
                Values::Bool(v) => column::<BoolType>(group, &std::mem::take(v), &def, rep)?,
                Values::Int(v) => column::<Int32Type>(group, &std::mem::take(v), &def, rep)?,
                Values::Long(v) => column::<Int64Type>(group, &std::mem::take(v), &def, rep)?,
                Values::Float(v) => column::<FloatType>(group, &std::mem::take(v), &def, rep)?,
                Values::Double(v) => column::<DoubleType>(group, &std::mem::take(v), &def, rep)?,
                Values::Bytes(v) => column::<ByteArrayType>(group, &std::mem::take(v), &def, rep)?,
                Values::Fixed(v) => {
                    column::<FixedLenByteArrayType>(group, &std::mem::take(v), &def, rep)?;
                }
            }
        }
        Ok(())
    }
}

fn column<T: DataType>(
    group: &mut SerializedRowGroupWriter<'_, Vec<u8>>,
    values: &[T::T],
    def: &[i16],
    rep: Option<&[i16]>,
) -> Result<(), CompactedError> {
    let mut col = group
        .next_column()?
        .ok_or_else(|| CompactedError::Parquet("schema has fewer columns than written".into()))?;
    col.typed::<T>().write_batch(values, Some(def), rep)?;
    col.close()?;
    Ok(())
}

fn add_leaves(f: &Field, repeated: bool, leaves: &mut Vec<Leaf>) {
    let values = match &f.kind {
        Kind::Struct { fields } => {
            fields.iter().for_each(|c| add_leaves(c, repeated, leaves));
            return;
        }
        Kind::List { element } => {
            add_leaves(element, true, leaves);
            return;
        }
        Kind::Map { key, value } => {
            add_leaves(key, true, leaves);
            add_leaves(value, true, leaves);
            return;
        }
        scalar => Values::of(scalar).unwrap_or(Values::Bytes(Vec::new())),
    };
    leaves.push(Leaf {
        values,
        def: Vec::new(),
        rep: Vec::new(),
        repeated,
    });
}

/// Writes `d` for `f` into the leaves from `at` on. `parent_def` is the definition level of
/// the nearest defined ancestor, `rep` the repetition level of this value, `depth` the number
/// of repeated ancestors. Returns whether the leaves hold `d` exactly (`unshred` reads back
/// the same value).
#[allow(clippy::too_many_arguments)]
fn put(
    f: &Field,
    d: Datum,
    parent_def: i16,
    rep: i16,
    depth: i16,
    required: bool,
    leaves: &mut [Leaf],
    at: &mut usize,
) -> bool {
    let def = if required { parent_def } else { parent_def + 1 };
    match (&f.kind, d) {
        (Kind::Struct { fields }, Datum::Struct(values)) => {
            let mut exact = values.len() == fields.len();
            let mut values = values.into_iter();
            for c in fields {
                let v = values.next().unwrap_or(Datum::Null);
                exact &= put(c, v, def, rep, depth, false, leaves, at);
            }
            exact
        }
        (Kind::List { element }, Datum::List(items)) if !items.is_empty() => {
            let start = *at;
            let mut exact = true;
            for (i, item) in items.into_iter().enumerate() {
                *at = start;
                let r = if i == 0 { rep } else { depth + 1 };
                exact &= put(element, item, def + 1, r, depth + 1, false, leaves, at);
            }
            exact
        }
        (Kind::Map { key, value }, Datum::Map(entries)) if !entries.is_empty() => {
            let start = *at;
            let mut exact = true;
            for (i, (k, v)) in entries.into_iter().enumerate() {
                *at = start;
                let r = if i == 0 { rep } else { depth + 1 };
                // A map key is required: a null one cannot be written as such.
                exact &= !matches!(k, Datum::Null);
                exact &= put(key, k, def + 1, r, depth + 1, true, leaves, at);
                exact &= put(value, v, def + 1, r, depth + 1, false, leaves, at);
            }
            exact
        }
        (Kind::List { element }, Datum::List(_)) => {
            put_null(element, def, rep, leaves, at);
            true
        }
        (Kind::Map { key, value }, Datum::Map(_)) => {
            put_null(key, def, rep, leaves, at);
            put_null(value, def, rep, leaves, at);
            true
        }
        (_, Datum::Null) => {
            put_null(f, parent_def, rep, leaves, at);
            true
        }
        (Kind::Struct { .. } | Kind::List { .. } | Kind::Map { .. }, _) => {
            put_null(f, parent_def, rep, leaves, at);
            false
        }
        (_, value) => {
            let Some(leaf) = leaves.get_mut(*at) else {
                return false;
            };
            let pushed = match (&mut leaf.values, value) {
                (Values::Bool(v), Datum::Bool(x)) => {
                    v.push(x);
                    true
                }
                (Values::Int(v), Datum::Int(x)) => {
                    v.push(x);
                    true
                }
                (Values::Long(v), Datum::Long(x)) => {
                    v.push(x);
                    true
                }
                (Values::Float(v), Datum::Float(x)) => {
                    v.push(x);
                    true
                }
                (Values::Double(v), Datum::Double(x)) => {
                    v.push(x);
                    true
                }
                (Values::Bytes(v), Datum::Bytes(x)) => {
                    v.push(ByteArray::from(x));
                    true
                }
                (Values::Fixed(v), Datum::Bytes(x)) => {
                    v.push(FixedLenByteArray::from(ByteArray::from(x)));
                    true
                }
                _ => false,
            };
            if pushed {
                leaf.def.push(def);
                leaf.rep.push(rep);
                *at += 1;
            } else {
                put_null(f, parent_def, rep, leaves, at);
            }
            pushed
        }
    }
}

/// Writes "absent at level `def`" to every leaf under `f`.
fn put_null(f: &Field, def: i16, rep: i16, leaves: &mut [Leaf], at: &mut usize) {
    match &f.kind {
        Kind::Struct { fields } => fields
            .iter()
            .for_each(|c| put_null(c, def, rep, leaves, at)),
        Kind::List { element } => put_null(element, def, rep, leaves, at),
        Kind::Map { key, value } => {
            put_null(key, def, rep, leaves, at);
            put_null(value, def, rep, leaves, at);
        }
        _ => {
            if let Some(leaf) = leaves.get_mut(*at) {
                leaf.def.push(def);
                leaf.rep.push(rep);
            }
            *at += 1;
        }
    }
}
