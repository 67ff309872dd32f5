//! Compatibility between two versions, following Confluent's `SchemaDiff` rules.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;

use prost_reflect::{
    Cardinality, FieldDescriptor, FileDescriptor, Kind, MessageDescriptor, Syntax,
};

use super::render::scalar_name;
use super::types::{is_synthetic, nested_types, real_oneof, top_level_types};
use super::PAIRS_MAX;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Label {
    Optional,
    Required,
    Repeated,
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Label::Optional => "optional",
            Label::Required => "required",
            Label::Repeated => "repeated",
        })
    }
}

/// Scalar types whose encodings read as one another (Confluent's `ScalarKind`; enums count
/// as numbers).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ScalarGroup {
    Number,
    Signed,
    StringOrBytes,
    Fixed32,
    Fixed64,
    Float,
    Double,
}

fn scalar_group(kind: &Kind) -> ScalarGroup {
    match kind {
        Kind::Sint32 | Kind::Sint64 => ScalarGroup::Signed,
        Kind::String | Kind::Bytes => ScalarGroup::StringOrBytes,
        Kind::Fixed32 | Kind::Sfixed32 => ScalarGroup::Fixed32,
        Kind::Fixed64 | Kind::Sfixed64 => ScalarGroup::Fixed64,
        Kind::Float => ScalarGroup::Float,
        Kind::Double => ScalarGroup::Double,
        _ => ScalarGroup::Number,
    }
}

enum FieldType {
    Scalar(ScalarGroup, String),
    Message(MessageDescriptor),
    Map(Box<FieldType>, Box<FieldType>),
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldType::Scalar(_, name) => f.write_str(name),
            FieldType::Message(message) => write!(f, ".{}", message.full_name()),
            FieldType::Map(key, value) => write!(f, "map<{key}, {value}>"),
        }
    }
}

/// What Confluent compares of a field. The label is what the source says: none for a proto3
/// field without one, a map or a oneof member.
struct FieldView {
    name: String,
    label: Option<Label>,
    oneof: Option<String>,
    field_type: FieldType,
}

fn fields_of(message: &MessageDescriptor) -> BTreeMap<u32, FieldView> {
    let proto2 = message.parent_file().syntax() == Syntax::Proto2;
    let view = |field: FieldDescriptor| FieldView {
        name: field.name().to_owned(),
        label: label_of(&field, proto2),
        oneof: real_oneof(&field).map(|o| o.name().to_owned()),
        field_type: field_type(&field),
    };
    message.fields().map(|f| (f.number(), view(f))).collect()
}

fn label_of(field: &FieldDescriptor, proto2: bool) -> Option<Label> {
    if field.is_map() || real_oneof(field).is_some() {
        return None;
    }
    match field.cardinality() {
        Cardinality::Repeated => Some(Label::Repeated),
        Cardinality::Required => Some(Label::Required),
        Cardinality::Optional if proto2 || field.field_descriptor_proto().proto3_optional() => {
            Some(Label::Optional)
        }
        Cardinality::Optional => None,
    }
}

fn field_type(field: &FieldDescriptor) -> FieldType {
    if let (true, Kind::Message(entry)) = (field.is_map(), field.kind()) {
        if let (Some(key), Some(value)) = (entry.get_field(1), entry.get_field(2)) {
            let key = Box::new(kind_type(&key.kind()));
            return FieldType::Map(key, Box::new(kind_type(&value.kind())));
        }
    }
    kind_type(&field.kind())
}

fn kind_type(kind: &Kind) -> FieldType {
    match kind {
        Kind::Message(message) => FieldType::Message(message.clone()),
        Kind::Enum(e) => FieldType::Scalar(ScalarGroup::Number, format!(".{}", e.full_name())),
        scalar => FieldType::Scalar(scalar_group(scalar), scalar_name(scalar).to_owned()),
    }
}

/// A message's name without its file's package: what Confluent compares of message types.
fn local_name(message: &MessageDescriptor) -> &str {
    let package = message.package_name();
    let name = message.full_name();
    if package.is_empty() {
        return name;
    }
    name.strip_prefix(package)
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(name)
}

pub(super) fn incompatibilities(writer: &FileDescriptor, reader: &FileDescriptor) -> Vec<String> {
    let mut diff = Diff::default();
    if writer.package_name() != reader.package_name() {
        let shown = |f: &FileDescriptor| match f.package_name() {
            "" => "(none)".to_owned(),
            package => package.to_owned(),
        };
        let (old, new) = (shown(writer), shown(reader));
        diff.found
            .push(format!("PACKAGE_CHANGED: #/ {old} -> {new}"));
    }
    let readers = by_name(top_level_types(reader));
    for message in top_level_types(writer) {
        match readers.get(message.name()) {
            Some(counterpart) => {
                diff.pair(&message, counterpart);
            }
            None => diff
                .found
                .push(format!("MESSAGE_REMOVED: #/{}", message.name())),
        }
    }
    diff.run();
    diff.finish()
}

fn by_name(messages: Vec<MessageDescriptor>) -> HashMap<String, MessageDescriptor> {
    messages
        .into_iter()
        .map(|m| (m.name().to_owned(), m))
        .collect()
}

/// A parent pair is incompatible when a pair it leads to is; a field leading there says so.
struct Edge {
    parent: usize,
    child: usize,
    report: Option<String>,
}

/// Confluent's diff, without its recursion: each (writer, reader) message pair is compared
/// once, and incompatibility flows from pairs to the pairs that lead to them.
#[derive(Default)]
struct Diff {
    found: Vec<String>,
    pairs: HashMap<(String, String), usize>,
    queue: Vec<(MessageDescriptor, MessageDescriptor)>,
    incompatible: Vec<bool>,
    edges: Vec<Edge>,
}

impl Diff {
    fn pair(&mut self, writer: &MessageDescriptor, reader: &MessageDescriptor) -> usize {
        let key = (writer.full_name().to_owned(), reader.full_name().to_owned());
        if let Some(&index) = self.pairs.get(&key) {
            return index;
        }
        let index = self.queue.len();
        self.pairs.insert(key, index);
        self.queue.push((writer.clone(), reader.clone()));
        self.incompatible.push(false);
        index
    }

    fn report(&mut self, pair: usize, message: String) {
        self.found.push(message);
        if let Some(flag) = self.incompatible.get_mut(pair) {
            *flag = true;
        }
    }

    fn run(&mut self) {
        let mut index = 0;
        while let Some((writer, reader)) = self.queue.get(index).cloned() {
            if index == PAIRS_MAX {
                let why = format!("more than {PAIRS_MAX} message types to compare");
                self.found.push(why);
                break;
            }
            self.compare(index, &writer, &reader);
            index += 1;
        }
    }

    fn finish(mut self) -> Vec<String> {
        let mut parents: Vec<Vec<usize>> = vec![Vec::new(); self.queue.len()];
        for edge in &self.edges {
            if let Some(list) = parents.get_mut(edge.child) {
                list.push(edge.parent);
            }
        }
        let mut pending: Vec<usize> = (0..self.incompatible.len())
            .filter(|&i| self.incompatible[i])
            .collect();
        while let Some(child) = pending.pop() {
            for &parent in parents.get(child).into_iter().flatten() {
                if !self.incompatible[parent] {
                    self.incompatible[parent] = true;
                    pending.push(parent);
                }
            }
        }
        let flagged = self.edges.iter().filter(|e| self.incompatible[e.child]);
        let reports: Vec<String> = flagged.filter_map(|e| e.report.clone()).collect();
        self.found.extend(reports);
        let mut seen = HashSet::new();
        self.found.retain(|message| seen.insert(message.clone()));
        self.found
    }

    fn compare(&mut self, pair: usize, writer: &MessageDescriptor, reader: &MessageDescriptor) {
        let path = format!("#/{}", local_name(writer).replace('.', "/"));
        let old = fields_of(writer);
        let new = fields_of(reader);
        self.compare_oneofs(pair, &path, &old, reader);
        let deleted = deleted_oneofs(writer, reader, &new);
        let numbers: BTreeSet<u32> = old.keys().chain(new.keys()).copied().collect();
        for number in numbers {
            let at = format!("{path}/{number}");
            match (old.get(&number), new.get(&number)) {
                (Some(w), None) => self.field_removed(pair, &path, number, w, &deleted),
                (None, Some(r)) if r.oneof.is_none() && r.label == Some(Label::Required) => {
                    self.report(pair, format!("REQUIRED_FIELD_ADDED: {at} ({})", r.name));
                }
                (Some(w), Some(r)) => {
                    let at = match &r.oneof {
                        Some(oneof) => format!("{path}/{oneof}/{number}"),
                        None => at,
                    };
                    let (old, new) = ((w.label, &w.field_type), (r.label, &r.field_type));
                    self.compare_types(pair, &at, old, new);
                }
                _ => {}
            }
        }
        self.compare_nested(pair, &path, writer, reader);
    }

    /// A reader's oneof may take fields that were independent in the writer's data only if
    /// at most one of them existed outside a single writer oneof.
    fn compare_oneofs(
        &mut self,
        pair: usize,
        path: &str,
        old: &BTreeMap<u32, FieldView>,
        reader: &MessageDescriptor,
    ) {
        for oneof in reader.oneofs().filter(|o| !is_synthetic(o)) {
            let mut origins = BTreeSet::new();
            let mut moved_in = 0;
            for field in oneof.fields() {
                match old.get(&field.number()).map(|f| &f.oneof) {
                    Some(Some(name)) => origins.insert(format!("oneof {name}")),
                    Some(None) => {
                        moved_in += 1;
                        origins.insert(format!("field {}", field.number()))
                    }
                    None => false,
                };
            }
            if origins.len() > 1 {
                let kind = if moved_in > 1 {
                    "MULTIPLE_FIELDS_MOVED_TO_ONEOF"
                } else {
                    "FIELD_MOVED_TO_EXISTING_ONEOF"
                };
                let from = origins.into_iter().collect::<Vec<_>>().join(", ");
                let message = format!("{kind}: {path}/{} takes {from}", oneof.name());
                self.report(pair, message);
            }
        }
    }

    fn field_removed(
        &mut self,
        pair: usize,
        path: &str,
        number: u32,
        field: &FieldView,
        deleted: &HashSet<String>,
    ) {
        let name = &field.name;
        match &field.oneof {
            Some(oneof) if !deleted.contains(oneof) => {
                let at = format!("{path}/{oneof}/{number}");
                self.report(pair, format!("ONEOF_FIELD_REMOVED: {at} ({name})"));
            }
            None if field.label == Some(Label::Required) => {
                let at = format!("{path}/{number}");
                self.report(pair, format!("REQUIRED_FIELD_REMOVED: {at} ({name})"));
            }
            _ => {}
        }
    }

    fn compare_types(
        &mut self,
        pair: usize,
        at: &str,
        (old_label, old): (Option<Label>, &FieldType),
        (new_label, new): (Option<Label>, &FieldType),
    ) {
        match (old, new) {
            (FieldType::Scalar(a, _), FieldType::Scalar(b, _)) if a != b => {
                self.report(
                    pair,
                    format!("FIELD_SCALAR_KIND_CHANGED: {at} {old} -> {new}"),
                );
            }
            (FieldType::Scalar(group, _), FieldType::Scalar(..)) => match (old_label, new_label) {
                (Some(a), Some(b)) if a != b && *group != ScalarGroup::StringOrBytes => {
                    let message = format!("FIELD_NUMERIC_LABEL_CHANGED: {at} {a} -> {b}");
                    self.report(pair, message);
                }
                _ => {}
            },
            (FieldType::Message(a), FieldType::Message(b)) => self.compare_named(pair, at, a, b),
            (FieldType::Map(old_key, old_value), FieldType::Map(new_key, new_value)) => {
                self.compare_types(pair, at, (None, old_key), (None, new_key));
                self.compare_types(pair, at, (None, old_value), (None, new_value));
            }
            _ => self.report(pair, format!("FIELD_KIND_CHANGED: {at} {old} -> {new}")),
        }
    }

    fn compare_named(
        &mut self,
        pair: usize,
        at: &str,
        old: &MessageDescriptor,
        new: &MessageDescriptor,
    ) {
        let (a, b) = (old.full_name(), new.full_name());
        if local_name(old) != local_name(new) {
            self.report(pair, format!("FIELD_NAMED_TYPE_CHANGED: {at} .{a} -> .{b}"));
            return;
        }
        let child = self.pair(old, new);
        let report = format!("FIELD_NAMED_TYPE_CHANGED: {at} .{a} -> .{b} changed incompatibly");
        let edge = Edge {
            parent: pair,
            child,
            report: Some(report),
        };
        self.edges.push(edge);
    }

    fn compare_nested(
        &mut self,
        pair: usize,
        path: &str,
        writer: &MessageDescriptor,
        reader: &MessageDescriptor,
    ) {
        let readers = by_name(nested_types(reader));
        for message in nested_types(writer) {
            match readers.get(message.name()) {
                Some(counterpart) => {
                    let child = self.pair(&message, counterpart);
                    let edge = Edge {
                        parent: pair,
                        child,
                        report: None,
                    };
                    self.edges.push(edge);
                }
                None => {
                    let removed = format!("MESSAGE_REMOVED: {path}/{}", message.name());
                    self.report(pair, removed);
                }
            }
        }
    }
}

/// The writer's oneofs gone from the reader with all their fields: a deletion Confluent
/// accepts, where dropping some fields of a surviving oneof is not.
fn deleted_oneofs(
    writer: &MessageDescriptor,
    reader: &MessageDescriptor,
    new: &BTreeMap<u32, FieldView>,
) -> HashSet<String> {
    let kept: HashSet<String> = reader
        .oneofs()
        .filter(|o| !is_synthetic(o))
        .map(|o| o.name().to_owned())
        .collect();
    writer
        .oneofs()
        .filter(|o| !is_synthetic(o) && !kept.contains(o.name()))
        .filter(|o| o.fields().all(|f| !new.contains_key(&f.number())))
        .map(|o| o.name().to_owned())
        .collect()
}
