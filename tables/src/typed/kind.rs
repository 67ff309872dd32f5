//! The typed columns of a table: a tree of fields with Iceberg types and stable field ids, its
//! Parquet and Iceberg forms, and its evolution by Iceberg's rules.

use std::sync::Arc;

use parquet::basic::{
    DecimalType, LogicalType, Repetition, TimeType, TimeUnit, TimestampType, Type as Physical,
};
use parquet::schema::types::Type;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// One column (or nested field). Every field is optional (null when a record lacks it), except
/// map keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub id: i32,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Kind {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    String,
    Binary,
    Decimal {
        precision: u8,
        scale: u8,
    },
    Date,
    /// Microseconds since midnight.
    Time,
    /// Microseconds since the epoch, no time zone.
    Timestamp,
    /// Microseconds since the epoch, UTC.
    Timestamptz,
    Struct {
        fields: Vec<Field>,
    },
    List {
        element: Box<Field>,
    },
    Map {
        key: Box<Field>,
        value: Box<Field>,
    },
}

/// The most digits a decimal column may have (Iceberg's limit).
pub const DECIMAL_PRECISION_MAX: u8 = 38;

impl Field {
    /// A field without an id yet (a shape read from a schema; ids come from [`merge`]).
    pub fn new(name: impl Into<String>, kind: Kind) -> Field {
        Field {
            id: 0,
            name: name.into(),
            kind,
        }
    }
}

impl Kind {
    fn describe(&self) -> String {
        match self {
            Kind::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            Kind::Struct { .. } => "struct".into(),
            Kind::List { .. } => "list".into(),
            Kind::Map { .. } => "map".into(),
            other => other.iceberg().as_str().unwrap_or("?").to_owned(),
        }
    }

    /// The Iceberg type (a string for primitives, an object for nested types).
    pub fn iceberg(&self) -> Value {
        let name = match self {
            Kind::Boolean => "boolean",
            Kind::Int => "int",
            Kind::Long => "long",
            Kind::Float => "float",
            Kind::Double => "double",
            Kind::String => "string",
            Kind::Binary => "binary",
            Kind::Date => "date",
            Kind::Time => "time",
            Kind::Timestamp => "timestamp",
            Kind::Timestamptz => "timestamptz",
            Kind::Decimal { precision, scale } => {
                return Value::String(format!("decimal({precision}, {scale})"))
            }
            Kind::Struct { fields } => {
                let fields: Vec<Value> = fields.iter().map(iceberg_field).collect();
                return json!({"type": "struct", "fields": fields});
            }
            Kind::List { element } => {
                return json!({
                    "type": "list", "element-id": element.id, "element-required": false,
                    "element": element.kind.iceberg(),
                })
            }
            Kind::Map { key, value } => {
                return json!({
                    "type": "map", "key-id": key.id, "key": key.kind.iceberg(),
                    "value-id": value.id, "value-required": false, "value": value.kind.iceberg(),
                })
            }
        };
        Value::String(name.into())
    }
}

/// The field as an Iceberg schema field (always optional).
pub fn iceberg_field(f: &Field) -> Value {
    json!({"id": f.id, "name": f.name, "required": false, "type": f.kind.iceberg()})
}

/// Bytes of the big-endian two's complement unscaled value of a decimal of `precision`
/// digits: the fixed length Iceberg requires (the fewest that hold every such value).
pub fn decimal_bytes(precision: u8) -> usize {
    let mut bytes = 1;
    while bytes < 17
        && 2f64.powi(8 * i32::try_from(bytes).unwrap_or(16) - 1) < 10f64.powi(i32::from(precision))
    {
        bytes += 1;
    }
    bytes
}

/// The Parquet type of `f` (`required` only for map keys).
pub fn parquet_type(f: &Field, required: bool) -> Result<Arc<Type>, parquet::errors::ParquetError> {
    let repetition = if required {
        Repetition::REQUIRED
    } else {
        Repetition::OPTIONAL
    };
    let primitive = |physical: Physical, logical: Option<LogicalType>| {
        Type::primitive_type_builder(&f.name, physical)
            .with_repetition(repetition)
            .with_logical_type(logical)
            .with_id(Some(f.id))
            .build()
            .map(Arc::new)
    };
    let micros = TimeUnit::MICROS;
    let group = |fields: Vec<Arc<Type>>, logical: Option<LogicalType>| {
        Type::group_type_builder(&f.name)
            .with_repetition(repetition)
            .with_logical_type(logical)
            .with_fields(fields)
            .with_id(Some(f.id))
            .build()
            .map(Arc::new)
    };
    match &f.kind {
        Kind::Boolean => primitive(Physical::BOOLEAN, None),
        Kind::Int => primitive(Physical::INT32, None),
        Kind::Long => primitive(Physical::INT64, None),
        Kind::Float => primitive(Physical::FLOAT, None),
        Kind::Double => primitive(Physical::DOUBLE, None),
        Kind::String => primitive(Physical::BYTE_ARRAY, Some(LogicalType::String)),
        Kind::Binary => primitive(Physical::BYTE_ARRAY, None),
        Kind::Date => primitive(Physical::INT32, Some(LogicalType::Date)),
        Kind::Time => primitive(
            Physical::INT64,
            Some(LogicalType::Time(TimeType {
                is_adjusted_to_u_t_c: false,
                unit: micros,
            })),
        ),
        Kind::Timestamp | Kind::Timestamptz => primitive(
            Physical::INT64,
            Some(LogicalType::Timestamp(TimestampType {
                is_adjusted_to_u_t_c: f.kind == Kind::Timestamptz,
                unit: micros,
            })),
        ),
        Kind::Decimal { precision, scale } => {
            Type::primitive_type_builder(&f.name, Physical::FIXED_LEN_BYTE_ARRAY)
                .with_repetition(repetition)
                .with_length(i32::try_from(decimal_bytes(*precision)).unwrap_or(16))
                .with_logical_type(Some(LogicalType::Decimal(DecimalType {
                    scale: i32::from(*scale),
                    precision: i32::from(*precision),
                })))
                .with_precision(i32::from(*precision))
                .with_scale(i32::from(*scale))
                .with_id(Some(f.id))
                .build()
                .map(Arc::new)
        }
        Kind::Struct { fields } => {
            let children = fields
                .iter()
                .map(|c| parquet_type(c, false))
                .collect::<Result<Vec<_>, _>>()?;
            group(children, None)
        }
        Kind::List { element } => {
            let repeated = Type::group_type_builder("list")
                .with_repetition(Repetition::REPEATED)
                .with_fields(vec![parquet_type(element, false)?])
                .build()?;
            group(vec![Arc::new(repeated)], Some(LogicalType::List))
        }
        Kind::Map { key, value } => {
            let repeated = Type::group_type_builder("key_value")
                .with_repetition(Repetition::REPEATED)
                .with_fields(vec![parquet_type(key, true)?, parquet_type(value, false)?])
                .build()?;
            group(vec![Arc::new(repeated)], Some(LogicalType::Map))
        }
    }
}

/// Merges `shape` (fields of one schema version) into `columns` by Iceberg's evolution rules:
/// a new field becomes a new column with the next id; a field of the same name keeps its id
/// and may widen (int to long, float to double, a decimal's precision); a column no version
/// has any more stays. `Err` says why the version cannot be expressed; `columns` is then left
/// as it was. Returns whether anything changed.
pub fn merge(columns: &mut Vec<Field>, shape: &[Field], last_id: &mut i32) -> Result<bool, String> {
    let mut merged = columns.clone();
    let mut id = *last_id;
    let changed = merge_fields(&mut merged, shape, &mut id, "")?;
    if changed {
        *columns = merged;
        *last_id = id;
    }
    Ok(changed)
}

fn merge_fields(
    columns: &mut Vec<Field>,
    shape: &[Field],
    last_id: &mut i32,
    path: &str,
) -> Result<bool, String> {
    let mut changed = false;
    for field in shape {
        let at = format!("{path}{}", field.name);
        match columns.iter_mut().find(|c| c.name == field.name) {
            Some(column) => changed |= merge_kind(&mut column.kind, &field.kind, last_id, &at)?,
            None => {
                let mut new = field.clone();
                number(&mut new, last_id);
                columns.push(new);
                changed = true;
            }
        }
    }
    Ok(changed)
}

fn merge_kind(
    column: &mut Kind,
    shape: &Kind,
    last_id: &mut i32,
    at: &str,
) -> Result<bool, String> {
    match (&mut *column, shape) {
        (Kind::Struct { fields }, Kind::Struct { fields: new }) => {
            merge_fields(fields, new, last_id, &format!("{at}."))
        }
        (Kind::List { element }, Kind::List { element: new }) => {
            merge_kind(&mut element.kind, &new.kind, last_id, &format!("{at}[]"))
        }
        (Kind::Map { key, value }, Kind::Map { key: k, value: v }) => {
            let key_changed = merge_kind(&mut key.kind, &k.kind, last_id, &format!("{at}{{key}}"))?;
            if key_changed {
                return Err(format!("{at}: a map key cannot change type"));
            }
            merge_kind(&mut value.kind, &v.kind, last_id, &format!("{at}{{value}}"))
        }
        (Kind::Int, Kind::Long) | (Kind::Float, Kind::Double) => {
            *column = shape.clone();
            Ok(true)
        }
        (Kind::Long, Kind::Int) | (Kind::Double, Kind::Float) => Ok(false),
        (
            Kind::Decimal { precision, scale },
            Kind::Decimal {
                precision: p,
                scale: s,
            },
        ) if scale == s => {
            let wider = *p > *precision;
            *precision = (*precision).max(*p);
            Ok(wider)
        }
        (a, b) if *a == *b => Ok(false),
        (a, b) => Err(format!(
            "column {at} is {} and cannot become {} (Iceberg widens only int to long, float to double and a decimal's precision)",
            a.describe(),
            b.describe()
        )),
    }
}

/// Gives `f` and everything under it new ids after `last_id`.
fn number(f: &mut Field, last_id: &mut i32) {
    *last_id += 1;
    f.id = *last_id;
    match &mut f.kind {
        Kind::Struct { fields } => fields.iter_mut().for_each(|c| number(c, last_id)),
        Kind::List { element } => number(element, last_id),
        Kind::Map { key, value } => {
            number(key, last_id);
            number(value, last_id);
        }
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn shape(fields: Vec<(&str, Kind)>) -> Vec<Field> {
        fields.into_iter().map(|(n, k)| Field::new(n, k)).collect()
    }

    #[test]
    fn a_new_field_gets_the_next_id_and_old_ids_never_change() {
        let mut columns = Vec::new();
        let mut last = 99;
        assert!(merge(
            &mut columns,
            &shape(vec![("a", Kind::Int), ("b", Kind::String)]),
            &mut last
        )
        .unwrap());
        assert_eq!((columns[0].id, columns[1].id, last), (100, 101, 101));
        let v2 = shape(vec![
            ("b", Kind::String),
            (
                "c",
                Kind::List {
                    element: Box::new(Field::new("element", Kind::Long)),
                },
            ),
        ]);
        assert!(merge(&mut columns, &v2, &mut last).unwrap());
        assert_eq!(
            columns.iter().map(|c| c.id).collect::<Vec<_>>(),
            [100, 101, 102]
        );
        assert_eq!(last, 103, "the list's element has an id too");
        assert!(
            !merge(&mut columns, &v2, &mut last).unwrap(),
            "the same version changes nothing"
        );
    }

    #[test]
    fn widening_is_allowed_and_narrowing_keeps_the_wider_column() {
        let mut columns = Vec::new();
        let mut last = 0;
        merge(
            &mut columns,
            &shape(vec![
                ("n", Kind::Int),
                (
                    "d",
                    Kind::Decimal {
                        precision: 5,
                        scale: 2,
                    },
                ),
            ]),
            &mut last,
        )
        .unwrap();
        assert!(merge(
            &mut columns,
            &shape(vec![
                ("n", Kind::Long),
                (
                    "d",
                    Kind::Decimal {
                        precision: 9,
                        scale: 2
                    }
                )
            ]),
            &mut last
        )
        .unwrap());
        assert_eq!(columns[0].kind, Kind::Long);
        assert_eq!(
            columns[1].kind,
            Kind::Decimal {
                precision: 9,
                scale: 2
            }
        );
        assert!(!merge(&mut columns, &shape(vec![("n", Kind::Int)]), &mut last).unwrap());
    }

    #[test]
    fn a_change_iceberg_cannot_express_is_refused_and_changes_nothing() {
        let mut columns = Vec::new();
        let mut last = 0;
        merge(&mut columns, &shape(vec![("n", Kind::Int)]), &mut last).unwrap();
        let before = columns.clone();
        let error = merge(
            &mut columns,
            &shape(vec![("m", Kind::Int), ("n", Kind::String)]),
            &mut last,
        )
        .unwrap_err();
        assert!(
            error.contains("column n is int and cannot become string"),
            "{error}"
        );
        assert_eq!(columns, before);
        assert_eq!(last, 1);
    }

    #[test]
    fn decimal_widths_are_the_fewest_bytes_that_hold_the_precision() {
        assert_eq!(decimal_bytes(1), 1);
        assert_eq!(decimal_bytes(2), 1);
        assert_eq!(decimal_bytes(3), 2);
        assert_eq!(decimal_bytes(9), 4);
        assert_eq!(decimal_bytes(18), 8);
        assert_eq!(decimal_bytes(38), 16);
    }
}
