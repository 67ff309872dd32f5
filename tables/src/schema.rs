//! The Iceberg schema of a topic's table, derived from the Parquet schema the compactor writes
//! (`storage::compacted::schema`), whose field ids are the table's: declared once, there.

use parquet::basic::{ConvertedType, LogicalType, Repetition, Type as Physical};
use parquet::schema::types::Type;
use serde_json::{json, Value};

use crate::typed::Columns;
use crate::TableError;

/// The table's `partition` column (the identity partition source), shown first.
pub const PARTITION_FIELD_ID: i32 = 1;
/// The partition spec's field id for `partition` (Iceberg starts partition field ids at 1000).
pub const PARTITION_SPEC_FIELD_ID: i32 = 1000;
pub const SCHEMA_ID: i32 = 0;

/// The table schema as Iceberg's JSON (`{"type":"struct","schema-id":0,"fields":[...]}`) and
/// the highest field id in it: the Kafka columns, then the typed columns if the table has
/// them.
pub fn table_schema(typed: Option<&Columns>) -> Result<(Value, i32), TableError> {
    let parquet = storage::compacted::schema().map_err(|e| TableError::Schema(e.to_string()))?;
    let mut max_id = 0;
    let mut fields = parquet
        .get_fields()
        .iter()
        .map(|child| field(child, &mut max_id))
        .collect::<Result<Vec<_>, _>>()?;
    fields.sort_by_key(|f| f["id"] != PARTITION_FIELD_ID);
    if let Some(typed) = typed {
        fields.extend(typed.iceberg_fields());
        max_id = max_id.max(typed.last_column_id);
    }
    let schema = json!({"type": "struct", "schema-id": SCHEMA_ID, "fields": fields});
    Ok((schema, max_id))
}

/// Iceberg's name mapping of the schema (`schema.name-mapping.default`): lets engines read
/// files written before the Parquet schema carried field ids.
pub fn name_mapping(schema: &Value) -> Value {
    fn map(fields: &Value) -> Value {
        let mapped: Vec<Value> = fields
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                let mut m = json!({"field-id": f["id"], "names": [f["name"]]});
                if let Some(nested) = nested_fields(&f["type"]) {
                    m["fields"] = nested;
                }
                m
            })
            .collect();
        Value::Array(mapped)
    }
    fn mapped(id: &Value, name: &str, t: &Value) -> Value {
        let mut m = json!({"field-id": id, "names": [name]});
        if let Some(inner) = nested_fields(t) {
            m["fields"] = inner;
        }
        m
    }
    fn nested_fields(t: &Value) -> Option<Value> {
        match t.get("type").and_then(Value::as_str) {
            Some("struct") => Some(map(&t["fields"])),
            Some("list") => Some(json!([mapped(&t["element-id"], "element", &t["element"])])),
            Some("map") => Some(json!([
                mapped(&t["key-id"], "key", &t["key"]),
                mapped(&t["value-id"], "value", &t["value"]),
            ])),
            _ => None,
        }
    }
    map(&schema["fields"])
}

fn field(t: &Type, max_id: &mut i32) -> Result<Value, TableError> {
    let info = t.get_basic_info();
    let id = field_id(t)?;
    *max_id = (*max_id).max(id);
    Ok(json!({
        "id": id,
        "name": info.name(),
        "required": info.repetition() == Repetition::REQUIRED,
        "type": field_type(t, max_id)?,
    }))
}

fn field_id(t: &Type) -> Result<i32, TableError> {
    let info = t.get_basic_info();
    if !info.has_id() {
        return Err(TableError::Schema(format!(
            "{} has no field id",
            info.name()
        )));
    }
    Ok(info.id())
}

fn field_type(t: &Type, max_id: &mut i32) -> Result<Value, TableError> {
    match t {
        Type::PrimitiveType { physical_type, .. } => primitive(t, *physical_type),
        Type::GroupType { fields, .. } => {
            let info = t.get_basic_info();
            if info.converted_type() == ConvertedType::LIST
                || matches!(info.logical_type_ref(), Some(LogicalType::List))
            {
                // <list> (LIST) { repeated group list { <element> } }
                let element = fields
                    .first()
                    .and_then(|repeated| repeated.get_fields().first())
                    .ok_or_else(|| TableError::Schema(format!("{} has no element", info.name())))?;
                let element_id = field_id(element)?;
                *max_id = (*max_id).max(element_id);
                let element_info = element.get_basic_info();
                return Ok(json!({
                    "type": "list",
                    "element-id": element_id,
                    "element-required": element_info.repetition() == Repetition::REQUIRED,
                    "element": field_type(element, max_id)?,
                }));
            }
            let fields = fields
                .iter()
                .map(|f| field(f, max_id))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(json!({"type": "struct", "fields": fields}))
        }
    }
}

fn primitive(t: &Type, physical: Physical) -> Result<Value, TableError> {
    let info = t.get_basic_info();
    let text = info.converted_type() == ConvertedType::UTF8
        || matches!(info.logical_type_ref(), Some(LogicalType::String));
    let name = match physical {
        Physical::BOOLEAN => "boolean",
        Physical::INT32 => "int",
        Physical::INT64 => "long",
        Physical::BYTE_ARRAY if text => "string",
        Physical::BYTE_ARRAY => "binary",
        other => {
            return Err(TableError::Schema(format!(
                "{}: no Iceberg type for {other}",
                info.name()
            )))
        }
    };
    Ok(Value::String(name.into()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn every_kafka_column_has_a_unique_field_id_and_an_iceberg_type() {
        let (schema, max_id) = table_schema(None).unwrap();
        let mut ids = Vec::new();
        fn collect(fields: &Value, ids: &mut Vec<i64>) {
            for f in fields.as_array().unwrap() {
                ids.push(f["id"].as_i64().unwrap());
                let t = &f["type"];
                if t["type"] == "list" {
                    ids.push(t["element-id"].as_i64().unwrap());
                    collect(&t["element"]["fields"], ids);
                }
            }
        }
        collect(&schema["fields"], &mut ids);
        let count = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), count, "field ids are unique");
        assert_eq!(ids.last().copied(), Some(i64::from(max_id)));
        let names: Vec<&str> = schema["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            &names[..7],
            &[
                "partition",
                "offset",
                "timestamp",
                "timestamp_type",
                "key",
                "value",
                "headers"
            ]
        );
        assert_eq!(
            schema["fields"][6]["type"]["element"]["fields"][0]["type"],
            "string"
        );
    }

    #[test]
    fn the_name_mapping_names_every_field_id() {
        let (schema, _) = table_schema(None).unwrap();
        let mapping = name_mapping(&schema);
        let headers = mapping
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["names"][0] == "headers")
            .unwrap();
        assert_eq!(headers["fields"][0]["names"][0], "element");
        assert_eq!(headers["fields"][0]["fields"][1]["names"][0], "value");
    }
}
