//! The types a file declares, as Confluent counts them.

use std::collections::HashSet;

use prost_reflect::{FieldDescriptor, FileDescriptor, Kind, MessageDescriptor, OneofDescriptor};

/// The file's top-level messages as message indexes count them: without the types of proto2
/// groups, which Confluent's parser does not list as messages.
pub(super) fn top_level_types(file: &FileDescriptor) -> Vec<MessageDescriptor> {
    let groups = group_types(file.extensions().map(|e| (e.is_group(), e.kind())));
    file.messages()
        .filter(|m| !groups.contains(m.full_name()))
        .collect()
}

/// A message's nested messages as message indexes count them: without map entries and group
/// types, which exist only in compiled descriptors.
pub(super) fn nested_types(message: &MessageDescriptor) -> Vec<MessageDescriptor> {
    let fields = message.fields().map(|f| (f.is_group(), f.kind()));
    let extensions = message.child_extensions().map(|e| (e.is_group(), e.kind()));
    let groups = group_types(fields.chain(extensions));
    message
        .child_messages()
        .filter(|m| !m.is_map_entry() && !groups.contains(m.full_name()))
        .collect()
}

fn group_types(fields: impl Iterator<Item = (bool, Kind)>) -> HashSet<String> {
    fields
        .filter_map(|(group, kind)| match kind {
            Kind::Message(m) if group => Some(m.full_name().to_owned()),
            _ => None,
        })
        .collect()
}

pub(super) fn is_synthetic(oneof: &OneofDescriptor) -> bool {
    oneof
        .fields()
        .all(|f| f.field_descriptor_proto().proto3_optional())
}

/// The field's oneof, unless it is the synthetic one of a proto3 `optional` field.
pub(super) fn real_oneof(field: &FieldDescriptor) -> Option<OneofDescriptor> {
    field.containing_oneof().filter(|o| !is_synthetic(o))
}
