//! Schemas of the three formats Confluent's API knows: parsing (with references), the
//! canonical form that makes equivalent schemas one id, the compatibility rules between two
//! versions, and the decoding of a record payload against a schema.

pub mod avro;
pub mod json;
pub mod protobuf;

use serde::{Deserialize, Serialize};

/// The most nested a schema or a decoded value may be; deeper input is refused, so neither
/// parsing nor decoding can exhaust the stack.
pub const DEPTH_MAX: usize = 64;

/// The largest schema text accepted (bytes).
pub const SCHEMA_BYTES_MAX: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SchemaType {
    Avro,
    Protobuf,
    Json,
}

impl SchemaType {
    pub const ALL: [SchemaType; 3] = [SchemaType::Json, SchemaType::Protobuf, SchemaType::Avro];

    pub fn name(self) -> &'static str {
        match self {
            SchemaType::Avro => "AVRO",
            SchemaType::Protobuf => "PROTOBUF",
            SchemaType::Json => "JSON",
        }
    }

    pub fn parse(name: &str) -> Option<SchemaType> {
        SchemaType::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// A reference as the API carries it: the referencing schema's name for the referenced one
/// (an Avro full name, a Protobuf import path, a JSON Schema `$ref` URL) and where it lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reference {
    pub name: String,
    pub subject: String,
    pub version: i32,
}

/// A referenced schema resolved to its text, under the name the referencing schema uses.
/// Dependencies come before the schemas that use them (references of references included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    pub name: String,
    pub schema: String,
}

/// Why a schema text is refused (HTTP 422, error code 42201).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidSchema(pub String);

/// Why a payload does not decode against a schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidPayload(pub String);

/// A parsed schema of any format.
#[derive(Debug, Clone)]
// Few live at once (one per schema id in a bounded cache); boxing would only add a hop.
#[allow(clippy::large_enum_variant)]
pub enum Parsed {
    Avro(avro::AvroSchema),
    Protobuf(protobuf::ProtobufSchema),
    Json(json::JsonSchema),
}

impl Parsed {
    /// Parses `text` of `schema_type` with its resolved references.
    pub fn parse(
        schema_type: SchemaType,
        text: &str,
        dependencies: &[Dependency],
    ) -> Result<Parsed, InvalidSchema> {
        if text.len() > SCHEMA_BYTES_MAX {
            return Err(InvalidSchema(format!(
                "schema of {} bytes, more than {SCHEMA_BYTES_MAX}",
                text.len()
            )));
        }
        Ok(match schema_type {
            SchemaType::Avro => Parsed::Avro(avro::AvroSchema::parse(text, dependencies)?),
            SchemaType::Protobuf => {
                Parsed::Protobuf(protobuf::ProtobufSchema::parse(text, dependencies)?)
            }
            SchemaType::Json => Parsed::Json(json::JsonSchema::parse(text, dependencies)?),
        })
    }

    pub fn schema_type(&self) -> SchemaType {
        match self {
            Parsed::Avro(_) => SchemaType::Avro,
            Parsed::Protobuf(_) => SchemaType::Protobuf,
            Parsed::Json(_) => SchemaType::Json,
        }
    }

    /// The form stored and compared: equivalent texts (whitespace, key order, comments, ...)
    /// give the same canonical text, so they get one id.
    pub fn canonical(&self) -> String {
        match self {
            Parsed::Avro(s) => s.canonical(),
            Parsed::Protobuf(s) => s.canonical(),
            Parsed::Json(s) => s.canonical(),
        }
    }

    /// Why data written with `writer` cannot be read with `self` as reader; empty when it can.
    /// Schemas of different formats are never compatible.
    pub fn incompatibilities_reading(&self, writer: &Parsed) -> Vec<String> {
        match (self, writer) {
            (Parsed::Avro(r), Parsed::Avro(w)) => r.incompatibilities_reading(w),
            (Parsed::Protobuf(r), Parsed::Protobuf(w)) => r.incompatibilities_reading(w),
            (Parsed::Json(r), Parsed::Json(w)) => r.incompatibilities_reading(w),
            _ => vec![format!(
                "schema type {} cannot read {}",
                self.schema_type().name(),
                writer.schema_type().name()
            )],
        }
    }

    /// The name Confluent's RecordNameStrategy gives the schema's subject: an Avro named
    /// type's full name, a Protobuf file's first message's full name, a JSON Schema's `title`.
    pub fn record_name(&self) -> Option<String> {
        match self {
            Parsed::Avro(s) => s.schema().name().map(|n| n.fullname(None)),
            Parsed::Protobuf(s) => s.message_names().into_iter().next(),
            Parsed::Json(s) => serde_json::from_str::<serde_json::Value>(&s.canonical())
                .ok()?
                .get("title")?
                .as_str()
                .map(str::to_string),
        }
    }

    /// Checks that `payload` (the bytes after the Confluent wire format's magic byte and schema
    /// id) decodes against this schema. For Protobuf the payload starts with the message
    /// indexes.
    pub fn validate(&self, payload: &[u8]) -> Result<(), InvalidPayload> {
        match self {
            Parsed::Avro(s) => s.validate(payload),
            Parsed::Protobuf(s) => s.validate(payload),
            Parsed::Json(s) => s.validate(payload),
        }
    }
}
