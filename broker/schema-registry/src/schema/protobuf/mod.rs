//! Protobuf schemas. The text is compiled in process by protox (a `.proto` file, or the base64
//! `FileDescriptorProto` that confluent-kafka-python registers); the canonical form is the
//! compiled file rendered back to normalized `.proto` text; compatibility follows Confluent's
//! `SchemaDiff` rules; a record payload (message indexes, then the message) is checked by a
//! bounded walker of the wire format.

mod canonical;
mod compatibility;
mod compile;
mod render;
mod types;
mod wire;

use prost_reflect::{FileDescriptor, MessageDescriptor};

use super::{Dependency, InvalidPayload, InvalidSchema};
use canonical::canonical_text;
use compatibility::incompatibilities;
use compile::{check_file, check_nesting, compile, main_file_name};
use types::{nested_types, top_level_types};
use wire::Walker;

/// The most message indexes a payload may start with (Confluent's clients write one per
/// nesting level of the record's message type).
const INDEXES_MAX: usize = 16;

/// The most (writer, reader) message pairs one compatibility check compares.
const PAIRS_MAX: usize = 10_000;

#[derive(Debug, Clone)]
pub struct ProtobufSchema {
    /// The schema's own file; its pool holds the files it imports.
    file: FileDescriptor,
    canonical: String,
}

impl ProtobufSchema {
    pub fn parse(text: &str, dependencies: &[Dependency]) -> Result<ProtobufSchema, InvalidSchema> {
        check_nesting("the schema", text)?;
        for dependency in dependencies {
            let what = format!("reference '{}'", dependency.name);
            check_nesting(&what, &dependency.schema)?;
        }
        let main = main_file_name(dependencies);
        let file = compile(&main, text, dependencies)?;
        check_file(&file)?;
        let canonical = canonical_text(&file, text, &main, dependencies);
        Ok(ProtobufSchema { file, canonical })
    }

    /// Normalized `.proto` text (comments, whitespace and declaration layout do not matter);
    /// clients parse it back, so it stays valid source with every message in its place.
    pub fn canonical(&self) -> String {
        self.canonical.clone()
    }

    /// The file as a base64 `FileDescriptorProto`: what Confluent answers `?format=serialized`
    /// with, and what confluent-kafka-python parses.
    pub fn serialized(&self) -> String {
        use base64::Engine;
        use prost::Message;
        let proto = self.file.file_descriptor_proto().encode_to_vec();
        base64::engine::general_purpose::STANDARD.encode(proto)
    }

    /// Full names of the file's top-level messages, in the order message indexes count them.
    pub fn message_names(&self) -> Vec<String> {
        top_level_types(&self.file)
            .iter()
            .map(|message| message.full_name().to_owned())
            .collect()
    }

    /// Confluent's incompatible differences from `writer` (the original) to `self`.
    pub fn incompatibilities_reading(&self, writer: &ProtobufSchema) -> Vec<String> {
        incompatibilities(&writer.file, &self.file)
    }

    pub fn validate(&self, payload: &[u8]) -> Result<(), InvalidPayload> {
        let mut walker = Walker { input: payload };
        let indexes = walker.message_indexes().map_err(InvalidPayload)?;
        let message = self.message_at(&indexes)?;
        walker.message(Some(&message), None, 1).map_err(|error| {
            InvalidPayload(format!(
                "not a valid {} record: {error}",
                message.full_name()
            ))
        })
    }

    /// The first top-level message type: what a table's columns are made of.
    pub fn first_message(&self) -> Option<MessageDescriptor> {
        top_level_types(&self.file).into_iter().next()
    }

    /// The message type a record payload names (by its message indexes) and the encoded
    /// message after them. The payload must have passed [`ProtobufSchema::validate`].
    pub fn record_message<'a>(
        &self,
        payload: &'a [u8],
    ) -> Result<(MessageDescriptor, &'a [u8]), InvalidPayload> {
        let mut walker = Walker { input: payload };
        let indexes = walker.message_indexes().map_err(InvalidPayload)?;
        Ok((self.message_at(&indexes)?, walker.input))
    }

    fn message_at(&self, indexes: &[usize]) -> Result<MessageDescriptor, InvalidPayload> {
        let mut choices = top_level_types(&self.file);
        let mut chosen = None;
        for &index in indexes {
            let Some(message) = choices.get(index).cloned() else {
                let scope = chosen
                    .as_ref()
                    .map_or("the file", MessageDescriptor::full_name);
                return Err(InvalidPayload(format!(
                    "message index {index} is out of range: {scope} declares {} message types",
                    choices.len()
                )));
            };
            choices = nested_types(&message);
            chosen = Some(message);
        }
        chosen.ok_or_else(|| InvalidPayload("no message index".to_owned()))
    }
}

#[cfg(test)]
mod tests;
