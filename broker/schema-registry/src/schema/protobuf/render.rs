//! The `.proto` printer behind the canonical form.

use std::collections::HashMap;
use std::fmt;

use prost_reflect::prost_types::{FieldDescriptorProto, FileDescriptorProto};
use prost_reflect::{
    Cardinality, DynamicMessage, EnumDescriptor, ExtensionDescriptor, FieldDescriptor,
    FileDescriptor, Kind, MessageDescriptor, ServiceDescriptor, Syntax, Value,
};

use super::types::{is_synthetic, nested_types, real_oneof, top_level_types};

type Rendered = Result<(), String>;

/// `.proto` text, two spaces an indentation level.
#[derive(Default)]
struct Printer {
    out: String,
    indent: usize,
}

impl Printer {
    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn open(&mut self, head: &str) {
        self.line(&format!("{head} {{"));
        self.indent += 1;
    }

    fn close(&mut self) {
        self.indent = self.indent.saturating_sub(1);
        self.line("}");
    }

    fn options(&mut self, options: &[String]) {
        for option in options {
            self.line(&format!("option {option};"));
        }
    }

    fn blank(&mut self) {
        if !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }
}

pub(super) fn render_file(file: &FileDescriptor) -> Result<String, String> {
    let mut p = Printer::default();
    let syntax = match file.syntax() {
        Syntax::Proto2 => "proto2",
        Syntax::Proto3 => "proto3",
    };
    p.line(&format!("syntax = \"{syntax}\";"));
    if !file.package_name().is_empty() {
        p.line(&format!("package {};", file.package_name()));
    }
    render_imports(&mut p, file.file_descriptor_proto());
    let options = option_entries(&file.options(), &[])?;
    if !options.is_empty() {
        p.blank();
        p.options(&options);
    }
    p.blank();
    // Messages keep their order: message indexes in payloads count them.
    for message in top_level_types(file) {
        render_message(&mut p, &message, &format!("message {}", message.name()))?;
    }
    for enumeration in file.enums() {
        render_enum(&mut p, &enumeration)?;
    }
    render_extends(&mut p, file.extensions())?;
    for service in file.services() {
        render_service(&mut p, &service)?;
    }
    Ok(p.out)
}

fn render_imports(p: &mut Printer, proto: &FileDescriptorProto) {
    let mut imports: Vec<String> = proto
        .dependency
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let i = i32::try_from(i).unwrap_or(i32::MAX);
            let kind = if proto.public_dependency.contains(&i) {
                "public "
            } else if proto.weak_dependency.contains(&i) {
                "weak "
            } else {
                ""
            };
            format!("import {kind}{};", quote(name.as_bytes()))
        })
        .collect();
    imports.sort();
    if !imports.is_empty() {
        p.blank();
        for import in imports {
            p.line(&import);
        }
    }
}

fn render_message(p: &mut Printer, message: &MessageDescriptor, head: &str) -> Rendered {
    p.open(head);
    render_reserved(p, message);
    p.options(&option_entries(&message.options(), &["map_entry"])?);
    for field in message.fields().filter(|f| real_oneof(f).is_none()) {
        render_field(p, &field)?;
    }
    for oneof in message.oneofs().filter(|o| !is_synthetic(o)) {
        p.open(&format!("oneof {}", oneof.name()));
        p.options(&option_entries(&oneof.options(), &[])?);
        for field in oneof.fields() {
            render_field(p, &field)?;
        }
        p.close();
    }
    for range in message.extension_ranges() {
        let last = range.end.saturating_sub(1);
        p.line(&format!("extensions {};", range_text(range.start, last)));
    }
    render_extends(p, message.child_extensions())?;
    for child in nested_types(message) {
        render_message(p, &child, &format!("message {}", child.name()))?;
    }
    for enumeration in message.child_enums() {
        render_enum(p, &enumeration)?;
    }
    p.close();
    Ok(())
}

fn render_reserved(p: &mut Printer, message: &MessageDescriptor) {
    let ranges: Vec<String> = message
        .reserved_ranges()
        .map(|r| range_text(r.start, r.end.saturating_sub(1)))
        .collect();
    let names: Vec<String> = message
        .reserved_names()
        .map(|n| quote(n.as_bytes()))
        .collect();
    for reserved in [ranges, names] {
        if !reserved.is_empty() {
            p.line(&format!("reserved {};", reserved.join(", ")));
        }
    }
}

fn range_text<T: fmt::Display + PartialEq>(start: T, last: T) -> String {
    if start == last {
        start.to_string()
    } else {
        format!("{start} to {last}")
    }
}

fn render_field(p: &mut Printer, field: &FieldDescriptor) -> Rendered {
    let proto = field.field_descriptor_proto();
    let unlabeled = field.is_map() || real_oneof(field).is_some();
    let label = label_text(
        field.cardinality(),
        proto,
        unlabeled,
        field.parent_file().syntax(),
    );
    let mut extras = field_extras(proto, &field.kind(), true);
    extras.extend(option_entries(&field.options(), &[])?);
    let scope = Some(field.parent_message().clone());
    if field.is_group() {
        return render_group(
            p,
            &field.kind(),
            scope.as_ref(),
            label,
            field.number(),
            &extras,
        );
    }
    let type_name = if field.is_map() {
        map_text(&field.kind())?
    } else {
        type_text(&field.kind())
    };
    let (name, number) = (field.name(), field.number());
    p.line(&format!(
        "{label}{type_name} {name} = {number}{};",
        bracketed(&extras)
    ));
    Ok(())
}

fn render_extension(p: &mut Printer, extension: &ExtensionDescriptor) -> Rendered {
    let proto = extension.field_descriptor_proto();
    let syntax = extension.parent_file().syntax();
    let label = label_text(extension.cardinality(), proto, false, syntax);
    let mut extras = field_extras(proto, &extension.kind(), false);
    extras.extend(option_entries(&extension.options(), &[])?);
    let (kind, number) = (extension.kind(), extension.number());
    if extension.is_group() {
        let scope = extension.parent_message();
        return render_group(p, &kind, scope.as_ref(), label, number, &extras);
    }
    let (type_name, name) = (type_text(&kind), extension.name());
    p.line(&format!(
        "{label}{type_name} {name} = {number}{};",
        bracketed(&extras)
    ));
    Ok(())
}

/// A proto2 group: the field and its message type in one declaration, which only says the
/// same thing when the type is declared where the field is.
fn render_group(
    p: &mut Printer,
    kind: &Kind,
    scope: Option<&MessageDescriptor>,
    label: &str,
    number: u32,
    extras: &[String],
) -> Rendered {
    let Kind::Message(group) = kind else {
        return Err("a group field without a message type".to_owned());
    };
    if group.parent_message().as_ref() != scope {
        return Err(format!(
            "group type {} declared elsewhere",
            group.full_name()
        ));
    }
    let head = format!(
        "{label}group {} = {number}{}",
        group.name(),
        bracketed(extras)
    );
    render_message(p, group, &head)
}

fn label_text(
    cardinality: Cardinality,
    proto: &FieldDescriptorProto,
    unlabeled: bool,
    syntax: Syntax,
) -> &'static str {
    match cardinality {
        _ if unlabeled => "",
        Cardinality::Repeated => "repeated ",
        Cardinality::Required => "required ",
        Cardinality::Optional if syntax == Syntax::Proto2 || proto.proto3_optional() => "optional ",
        Cardinality::Optional => "",
    }
}

/// The pseudo-options a field declaration carries: a proto2 default and an explicit JSON name.
fn field_extras(proto: &FieldDescriptorProto, kind: &Kind, json: bool) -> Vec<String> {
    let mut extras = Vec::new();
    if let Some(default) = &proto.default_value {
        let value = match kind {
            Kind::String => quote(default.as_bytes()),
            // Stored C-escaped already.
            Kind::Bytes => format!("\"{default}\""),
            _ => default.clone(),
        };
        extras.push(format!("default = {value}"));
    }
    match &proto.json_name {
        Some(name) if json && *name != json_name_of(proto.name()) => {
            extras.push(format!("json_name = {}", quote(name.as_bytes())));
        }
        _ => {}
    }
    extras
}

/// protoc's default JSON name: lower camel case of the field name.
pub(super) fn json_name_of(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn bracketed(entries: &[String]) -> String {
    if entries.is_empty() {
        String::new()
    } else {
        format!(" [{}]", entries.join(", "))
    }
}

pub(super) fn scalar_name(kind: &Kind) -> &'static str {
    match kind {
        Kind::Double => "double",
        Kind::Float => "float",
        Kind::Int32 => "int32",
        Kind::Int64 => "int64",
        Kind::Uint32 => "uint32",
        Kind::Uint64 => "uint64",
        Kind::Sint32 => "sint32",
        Kind::Sint64 => "sint64",
        Kind::Fixed32 => "fixed32",
        Kind::Fixed64 => "fixed64",
        Kind::Sfixed32 => "sfixed32",
        Kind::Sfixed64 => "sfixed64",
        Kind::Bool => "bool",
        Kind::String => "string",
        Kind::Bytes => "bytes",
        Kind::Message(_) => "message",
        Kind::Enum(_) => "enum",
    }
}

/// Named types fully qualified, leading dot included: valid anywhere, ambiguous nowhere.
fn type_text(kind: &Kind) -> String {
    match kind {
        Kind::Message(message) => format!(".{}", message.full_name()),
        Kind::Enum(enumeration) => format!(".{}", enumeration.full_name()),
        scalar => scalar_name(scalar).to_owned(),
    }
}

fn map_text(kind: &Kind) -> Result<String, String> {
    let Kind::Message(entry) = kind else {
        return Err("a map field without an entry type".to_owned());
    };
    let key = entry.get_field(1).ok_or("a map entry without a key")?;
    let value = entry.get_field(2).ok_or("a map entry without a value")?;
    Ok(format!(
        "map<{}, {}>",
        type_text(&key.kind()),
        type_text(&value.kind())
    ))
}

fn render_enum(p: &mut Printer, enumeration: &EnumDescriptor) -> Rendered {
    p.open(&format!("enum {}", enumeration.name()));
    let ranges: Vec<String> = enumeration
        .reserved_ranges()
        .map(|r| range_text(*r.start(), *r.end()))
        .collect();
    let names: Vec<String> = enumeration
        .reserved_names()
        .map(|n| quote(n.as_bytes()))
        .collect();
    for reserved in [ranges, names] {
        if !reserved.is_empty() {
            p.line(&format!("reserved {};", reserved.join(", ")));
        }
    }
    p.options(&option_entries(&enumeration.options(), &[])?);
    // In declaration order: `values()` sorts them by number.
    for value in &enumeration.enum_descriptor_proto().value {
        let descriptor = enumeration.get_value_by_name(value.name());
        let options = match descriptor {
            Some(descriptor) => option_entries(&descriptor.options(), &[])?,
            None => Vec::new(),
        };
        let (name, number) = (value.name(), value.number());
        p.line(&format!("{name} = {number}{};", bracketed(&options)));
    }
    p.close();
    Ok(())
}

/// Extensions grouped by the message they extend, in order of first appearance.
fn render_extends(
    p: &mut Printer,
    extensions: impl Iterator<Item = ExtensionDescriptor>,
) -> Rendered {
    let mut groups: Vec<(String, Vec<ExtensionDescriptor>)> = Vec::new();
    let mut positions: HashMap<String, usize> = HashMap::new();
    for extension in extensions {
        let extendee = extension.containing_message().full_name().to_owned();
        let at = *positions.entry(extendee.clone()).or_insert(groups.len());
        if at == groups.len() {
            groups.push((extendee, Vec::new()));
        }
        if let Some((_, members)) = groups.get_mut(at) {
            members.push(extension);
        }
    }
    for (extendee, members) in groups {
        p.open(&format!("extend .{extendee}"));
        for extension in &members {
            render_extension(p, extension)?;
        }
        p.close();
    }
    Ok(())
}

fn render_service(p: &mut Printer, service: &ServiceDescriptor) -> Rendered {
    p.open(&format!("service {}", service.name()));
    p.options(&option_entries(&service.options(), &[])?);
    let stream = |yes: bool| if yes { "stream " } else { "" };
    for method in service.methods() {
        let head = format!(
            "rpc {} ({}.{}) returns ({}.{})",
            method.name(),
            stream(method.is_client_streaming()),
            method.input().full_name(),
            stream(method.is_server_streaming()),
            method.output().full_name()
        );
        let options = option_entries(&method.options(), &[])?;
        if options.is_empty() {
            p.line(&format!("{head};"));
        } else {
            p.open(&head);
            p.options(&options);
            p.close();
        }
    }
    p.close();
    Ok(())
}

/// `name = value` for each option set, custom ones (extensions) in parentheses; a repeated
/// option once per value.
fn option_entries(options: &DynamicMessage, skip: &[&str]) -> Result<Vec<String>, String> {
    let mut entries = Vec::new();
    for (field, value) in options.fields() {
        if field.name() != "uninterpreted_option" && !skip.contains(&field.name()) {
            push_option(&mut entries, field.name(), &field.kind(), value)?;
        }
    }
    for (extension, value) in options.extensions() {
        let name = format!("(.{})", extension.full_name());
        push_option(&mut entries, &name, &extension.kind(), value)?;
    }
    Ok(entries)
}

fn push_option(entries: &mut Vec<String>, name: &str, kind: &Kind, value: &Value) -> Rendered {
    match value {
        Value::List(values) => {
            for value in values {
                entries.push(format!("{name} = {}", literal(kind, value)?));
            }
        }
        value => entries.push(format!("{name} = {}", literal(kind, value)?)),
    }
    Ok(())
}

fn literal(kind: &Kind, value: &Value) -> Result<String, String> {
    Ok(match value {
        Value::Bool(v) => v.to_string(),
        Value::I32(v) => v.to_string(),
        Value::I64(v) => v.to_string(),
        Value::U32(v) => v.to_string(),
        Value::U64(v) => v.to_string(),
        Value::F32(v) => float_text(f64::from(*v), format!("{v:?}")),
        Value::F64(v) => float_text(*v, format!("{v:?}")),
        Value::String(v) => quote(v.as_bytes()),
        Value::Bytes(v) => quote(v),
        Value::EnumNumber(number) => match kind {
            Kind::Enum(e) => e
                .get_value(*number)
                .map_or_else(|| number.to_string(), |v| v.name().to_owned()),
            _ => number.to_string(),
        },
        // The text format, which `.proto` option values take between braces.
        Value::Message(message) => format!("{{ {message} }}"),
        Value::List(_) | Value::Map(_) => return Err("a list or map option value".to_owned()),
    })
}

fn float_text(value: f64, shown: String) -> String {
    if value.is_nan() {
        "nan".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.to_owned()
    } else {
        shown
    }
}

/// A `.proto` string literal: UTF-8 kept readable, control characters and other bytes octal.
fn quote(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            for c in text.chars() {
                match u8::try_from(c) {
                    Ok(byte) if byte.is_ascii() => push_byte(&mut out, byte),
                    _ => out.push(c),
                }
            }
        }
        Err(_) => bytes.iter().for_each(|&b| push_byte(&mut out, b)),
    }
    out.push('"');
    out
}

fn push_byte(out: &mut String, byte: u8) {
    match byte {
        b'"' => out.push_str("\\\""),
        b'\\' => out.push_str("\\\\"),
        b'\n' => out.push_str("\\n"),
        b'\r' => out.push_str("\\r"),
        b'\t' => out.push_str("\\t"),
        0x20..=0x7e => out.push(char::from(byte)),
        _ => out.push_str(&format!("\\{byte:03o}")),
    }
}
