//! The JSON bodies of requests and answers, with Confluent's field names.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::ApiError;
use crate::error::RegistryError;
use crate::registry::{SchemaRequest, SchemaView};
use crate::schema::{Reference, SchemaType};
use crate::store::StoredSchema;

/// The body of register, lookup and compatibility requests. Unknown fields (`metadata`,
/// `ruleSet`, ...) are ignored, as by Confluent's servers before data contracts.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SchemaBody {
    schema: String,
    schema_type: Option<String>,
    #[serde(default)]
    references: Option<Vec<Reference>>,
    id: Option<i32>,
    version: Option<i32>,
}

/// Reads a schema request from a body; Confluent answers a body that is not one with 422.
pub fn schema_request(body: &Bytes) -> Result<SchemaRequest, ApiError> {
    let parsed: SchemaBody = serde_json::from_slice(body).map_err(|e| {
        ApiError(RegistryError::BadRequest(format!(
            "Unrecognized request body: {e}"
        )))
    })?;
    let schema_type = match parsed.schema_type.as_deref() {
        None => None,
        Some(name) => Some(
            SchemaType::parse(&name.to_ascii_uppercase()).ok_or_else(|| {
                ApiError(RegistryError::InvalidSchema(format!(
                    "unknown schema type {name}"
                )))
            })?,
        ),
    };
    Ok(SchemaRequest {
        schema: parsed.schema,
        schema_type,
        references: parsed.references.unwrap_or_default(),
        id: parsed.id,
        version: parsed.version,
    })
}

/// A schema as answered: `schemaType` only when not AVRO, `references` only when some.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaBodyOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<Reference>,
    pub schema: String,
}

impl SchemaBodyOut {
    pub fn of_schema(stored: StoredSchema) -> SchemaBodyOut {
        SchemaBodyOut {
            subject: None,
            version: None,
            id: None,
            schema_type: (stored.schema_type != SchemaType::Avro)
                .then_some(stored.schema_type.name()),
            references: stored.references,
            schema: stored.schema,
        }
    }

    pub fn of_view(view: SchemaView) -> SchemaBodyOut {
        SchemaBodyOut {
            subject: Some(view.subject),
            version: Some(view.version),
            id: Some(view.id),
            ..SchemaBodyOut::of_schema(view.schema)
        }
    }
}

/// Query flags of the API (`?deleted=true`, `?permanent=true`, ...): `true` in any case is
/// true (Python clients send `True`), anything else false, as Java's `Boolean.parseBoolean`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Flags {
    #[serde(default, deserialize_with = "flag")]
    pub deleted: bool,
    #[serde(default, deserialize_with = "flag")]
    pub permanent: bool,
    #[serde(default, deserialize_with = "flag")]
    pub verbose: bool,
    #[serde(default, deserialize_with = "flag")]
    pub default_to_global: bool,
    #[serde(default, deserialize_with = "flag")]
    pub force: bool,
    pub subject_prefix: Option<String>,
    /// `serialized`: Protobuf schemas as a base64 `FileDescriptorProto`.
    pub format: Option<String>,
}

fn flag<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    let text = String::deserialize(deserializer)?;
    Ok(text.eq_ignore_ascii_case("true"))
}
