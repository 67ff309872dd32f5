//! Protobuf schemas. The text is compiled in process by protox (a `.proto` file, or the base64
//! `FileDescriptorProto` that confluent-kafka-python registers); the canonical form is the
//! compiled file rendered back to normalized `.proto` text; compatibility follows Confluent's
//! `SchemaDiff` rules; a record payload (message indexes, then the message) is checked by a
//! bounded walker of the wire format.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use prost_reflect::prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
use prost_reflect::{
    Cardinality, DynamicMessage, EnumDescriptor, ExtensionDescriptor, FieldDescriptor,
    FileDescriptor, Kind, MessageDescriptor, OneofDescriptor, ServiceDescriptor, Syntax, Value,
};
use protox::file::{File, FileResolver, GoogleFileResolver};
use protox::Compiler;

use super::{Dependency, InvalidPayload, InvalidSchema, DEPTH_MAX};

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

// ---- Compilation ----

/// The file name the schema compiles under: any name its references do not already use.
fn main_file_name(dependencies: &[Dependency]) -> String {
    let taken: HashSet<&str> = dependencies.iter().map(|d| d.name.as_str()).collect();
    let mut name = "schema.proto".to_owned();
    let mut suffix = 0u32;
    while taken.contains(name.as_str()) {
        suffix += 1;
        name = format!("schema{suffix}.proto");
    }
    name
}

fn compile(
    main: &str,
    text: &str,
    dependencies: &[Dependency],
) -> Result<FileDescriptor, InvalidSchema> {
    let mut files: HashMap<String, String> = dependencies
        .iter()
        .map(|d| (d.name.clone(), d.schema.clone()))
        .collect();
    files.insert(main.to_owned(), text.to_owned());
    // protox and prost-reflect unwrap on some inputs they assume valid (descriptors given as
    // bytes, for one); a schema must be refused, not take the registry down.
    let compiled = catch_unwind(AssertUnwindSafe(|| {
        let sources = Sources {
            files,
            main: main.to_owned(),
        };
        let mut compiler = Compiler::with_file_resolver(sources);
        compiler.open_file(main).map(|c| c.descriptor_pool())
    }));
    let pool = match compiled {
        Ok(Ok(pool)) => pool,
        Ok(Err(error)) => return Err(InvalidSchema(describe(&error, main))),
        Err(_) => return Err(invalid("the compiler failed on it")),
    };
    pool.get_file_by_name(main)
        .ok_or_else(|| invalid("the file did not compile"))
}

fn invalid(why: &str) -> InvalidSchema {
    InvalidSchema(format!("invalid Protobuf schema: {why}"))
}

/// protox's message with its place (its `Debug` form has one: `file:line:column: message`).
fn describe(error: &protox::Error, main: &str) -> String {
    let shown = match error.file() {
        Some(_) => format!("{error:?}"),
        None => error.to_string(),
    };
    let file = error.file().unwrap_or(main);
    let rest = shown
        .strip_prefix(file)
        .and_then(|rest| rest.strip_prefix(':'))
        .map_or(shown.as_str(), str::trim_start);
    let place = if file == main {
        String::new()
    } else {
        format!("in reference '{file}', ")
    };
    format!("invalid Protobuf schema: {place}{}", located(rest))
}

/// `3:14: message` as `line 3, column 14: message`.
fn located(text: &str) -> String {
    let mut parts = text.splitn(3, ':');
    let number = |part: &str| !part.is_empty() && part.bytes().all(|c| c.is_ascii_digit());
    match (parts.next(), parts.next(), parts.next()) {
        (Some(line), Some(column), Some(message)) if number(line) && number(column) => {
            format!("line {line}, column {column}:{message}")
        }
        _ => text.to_owned(),
    }
}

/// The schema and its references by import name; Google's well-known files come first, so a
/// reference cannot replace them.
struct Sources {
    files: HashMap<String, String>,
    main: String,
}

impl FileResolver for Sources {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match GoogleFileResolver::new().open_file(name) {
            Err(error) if error.is_file_not_found() => {}
            found => return found,
        }
        let text = self
            .files
            .get(name)
            .ok_or_else(|| protox::Error::file_not_found(name))?;
        File::from_source(name, text).or_else(|error| match base64_decode(text) {
            Some(bytes) => descriptor_file(name, bytes).map_err(|why| {
                let what = match name == self.main {
                    true => "the schema".to_owned(),
                    false => format!("reference '{name}'"),
                };
                protox::Error::new(format!("{what} is neither .proto text nor {why}"))
            }),
            None => Err(error),
        })
    }
}

/// A base64 `FileDescriptorProto`, renamed to `name`: a `name` field appended to the encoding
/// wins over the one inside, and the bytes stay as given so custom options survive.
fn descriptor_file(name: &str, mut bytes: Vec<u8>) -> Result<File, String> {
    bytes.push(0x0a); // field 1 (name), length-delimited
    prost::encoding::encode_varint(u64::try_from(name.len()).unwrap_or(u64::MAX), &mut bytes);
    bytes.extend_from_slice(name.as_bytes());
    File::decode_file_descriptor_proto(bytes.as_slice())
        .map_err(|error| format!("a base64 FileDescriptorProto: {error}"))
}

/// Standard or URL-safe base64, padding optional; `None` for anything else, and for text too
/// short to hold a message type, which is more likely a mistyped `.proto` file.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    if text.trim().len() < 16 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut bits, mut count) = (0u32, 0u32);
    for c in text.trim().trim_end_matches('=').bytes() {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'\r' | b'\n' => continue,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(value);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push(u8::try_from((bits >> count) & 0xff).ok()?);
        }
    }
    Some(out)
}

/// Refuses what compiles but is no usable schema.
fn check_file(file: &FileDescriptor) -> Result<(), InvalidSchema> {
    // A file of enums only is kept: shared references often are one.
    if file.messages().len() == 0 && file.enums().len() == 0 {
        return Err(invalid("the file declares no message or enum type"));
    }
    let well_known = |name: &str| {
        name.starts_with("google/protobuf/") && GoogleFileResolver::new().open_file(name).is_ok()
    };
    for f in file.parent_pool().files() {
        let package = f.package_name();
        let google = package == "google.protobuf" || package.starts_with("google.protobuf.");
        // prost-reflect decodes options with the pool's google.protobuf.*Options types.
        if google && !well_known(f.name()) {
            return Err(invalid(&format!(
                "'{}' declares package {package}, reserved to Google's well-known types",
                f.name()
            )));
        }
    }
    Ok(())
}

/// Refuses text nested deeper than `DEPTH_MAX` brackets before protox sees it: its parser,
/// and prost-reflect's text format parser for option values, recurse once per level.
fn check_nesting(what: &str, text: &str) -> Result<(), InvalidSchema> {
    let mut depth = 0usize;
    for token in (Tokens { text, at: 0 }) {
        let token = token.map_err(|error| invalid(&format!("{what}: {error}")))?;
        match token {
            "{" | "[" | "(" | "<" => depth += 1,
            "}" | "]" | ")" | ">" => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > DEPTH_MAX {
            return Err(invalid(&format!(
                "{what} nests deeper than {DEPTH_MAX} levels"
            )));
        }
    }
    Ok(())
}

/// The tokens of `.proto` text split as protox's lexer splits them where it matters here:
/// comments (`//`, `#`, `/* */`) and whitespace dropped, string literals whole (a newline ends
/// one), each bracket and separator alone.
struct Tokens<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Result<&'a str, String>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let rest = self.text.as_bytes().get(self.at..)?;
            let first = *rest.first()?;
            let skip = if first.is_ascii_whitespace() || first == 0x0b {
                1
            } else if rest.starts_with(b"//") || first == b'#' {
                rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len())
            } else if rest.starts_with(b"/*") {
                match block_comment_len(rest) {
                    Ok(len) => len,
                    Err(error) => {
                        self.at = self.text.len();
                        return Some(Err(error));
                    }
                }
            } else {
                let len = token_len(rest);
                let token = self.text.get(self.at..self.at + len);
                self.at += len;
                return Some(token.ok_or_else(|| "unexpected character".to_owned()));
            };
            self.at += skip;
        }
    }
}

fn block_comment_len(rest: &[u8]) -> Result<usize, String> {
    for i in 2..rest.len() {
        let here = &rest[i..];
        if here.starts_with(b"*/") {
            return Ok(i + 2);
        }
        if here.starts_with(b"/*") {
            return Err("nested block comments are not supported".to_owned());
        }
    }
    Ok(rest.len())
}

fn is_separator(c: u8) -> bool {
    b"{}[]()<>;,=:".contains(&c)
}

fn token_len(rest: &[u8]) -> usize {
    match rest.first() {
        Some(&quote @ (b'"' | b'\'')) => string_len(rest, quote),
        Some(&c) if is_separator(c) => 1,
        _ => {
            let end = rest.iter().position(|&c| {
                c.is_ascii_whitespace() || c == 0x0b || is_separator(c) || b"\"'#/".contains(&c)
            });
            end.unwrap_or(rest.len()).max(1)
        }
    }
}

fn string_len(rest: &[u8], quote: u8) -> usize {
    let mut i = 1;
    while let Some(&c) = rest.get(i) {
        i += 1;
        if c == quote || c == b'\n' {
            break;
        }
        if c == b'\\' && rest.get(i).is_some_and(|&next| next != b'\n') {
            i += 1;
        }
    }
    i.min(rest.len())
}

// ---- Canonical form ----

/// The rendered text when it compiles back to the same file and renders to itself; otherwise
/// the text's tokens one space apart.
fn canonical_text(file: &FileDescriptor, text: &str, main: &str, deps: &[Dependency]) -> String {
    let rendered = catch_unwind(AssertUnwindSafe(|| render_checked(file, main, deps)));
    match rendered {
        Ok(Some(rendered)) => rendered,
        _ => {
            let tokens: Result<Vec<&str>, String> = (Tokens { text, at: 0 }).collect();
            tokens.map_or_else(|_| text.trim().to_owned(), |tokens| tokens.join(" "))
        }
    }
}

fn render_checked(file: &FileDescriptor, main: &str, deps: &[Dependency]) -> Option<String> {
    let rendered = render_file(file).ok()?;
    let again = compile(main, &rendered, deps).ok()?;
    let same = shape(file.file_descriptor_proto()) == shape(again.file_descriptor_proto());
    (same && render_file(&again).ok()? == rendered).then_some(rendered)
}

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

fn render_file(file: &FileDescriptor) -> Result<String, String> {
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
fn json_name_of(name: &str) -> String {
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

fn scalar_name(kind: &Kind) -> &'static str {
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

/// The descriptor without what rendering may change: declaration order of fields, oneofs,
/// nested types, extensions and imports, source info, implied syntax and JSON names.
fn shape(file: &FileDescriptorProto) -> FileDescriptorProto {
    let mut file = file.clone();
    file.name = None;
    file.source_code_info = None;
    if file.syntax() == "proto2" {
        file.syntax = None;
    }
    let mut imports: Vec<(String, bool, bool)> = file
        .dependency
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let i = i32::try_from(i).unwrap_or(i32::MAX);
            let public = file.public_dependency.contains(&i);
            (name.clone(), public, file.weak_dependency.contains(&i))
        })
        .collect();
    imports.sort();
    let positions = |pick: fn(&(String, bool, bool)) -> bool| -> Vec<i32> {
        (0..imports.len())
            .filter(|&i| imports.get(i).is_some_and(pick))
            .filter_map(|i| i32::try_from(i).ok())
            .collect()
    };
    file.public_dependency = positions(|i| i.1);
    file.weak_dependency = positions(|i| i.2);
    file.dependency = imports.into_iter().map(|i| i.0).collect();
    file.message_type.iter_mut().for_each(shape_message);
    shape_fields(&mut file.extension);
    file
}

fn shape_message(message: &mut DescriptorProto) {
    let oneofs: Vec<String> = message
        .oneof_decl
        .iter()
        .map(|o| o.name().to_owned())
        .collect();
    message.oneof_decl.sort_by(|a, b| a.name.cmp(&b.name));
    for field in &mut message.field {
        let name = field
            .oneof_index
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| oneofs.get(i));
        field.oneof_index = name
            .and_then(|name| message.oneof_decl.iter().position(|o| o.name() == name))
            .and_then(|i| i32::try_from(i).ok());
    }
    shape_fields(&mut message.field);
    shape_fields(&mut message.extension);
    message.nested_type.iter_mut().for_each(shape_message);
    message.nested_type.sort_by(|a, b| a.name.cmp(&b.name));
}

fn shape_fields(fields: &mut [FieldDescriptorProto]) {
    for field in fields.iter_mut() {
        if field.json_name.as_deref() == Some(json_name_of(field.name()).as_str()) {
            field.json_name = None;
        }
    }
    fields.sort_by(|a, b| (a.extendee(), a.number()).cmp(&(b.extendee(), b.number())));
}

// ---- Types a file declares, as Confluent counts them ----

/// The file's top-level messages as message indexes count them: without the types of proto2
/// groups, which Confluent's parser does not list as messages.
fn top_level_types(file: &FileDescriptor) -> Vec<MessageDescriptor> {
    let groups = group_types(file.extensions().map(|e| (e.is_group(), e.kind())));
    file.messages()
        .filter(|m| !groups.contains(m.full_name()))
        .collect()
}

/// A message's nested messages as message indexes count them: without map entries and group
/// types, which exist only in compiled descriptors.
fn nested_types(message: &MessageDescriptor) -> Vec<MessageDescriptor> {
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

fn is_synthetic(oneof: &OneofDescriptor) -> bool {
    oneof
        .fields()
        .all(|f| f.field_descriptor_proto().proto3_optional())
}

/// The field's oneof, unless it is the synthetic one of a proto3 `optional` field.
fn real_oneof(field: &FieldDescriptor) -> Option<OneofDescriptor> {
    field.containing_oneof().filter(|o| !is_synthetic(o))
}

// ---- Compatibility (Confluent's SchemaDiff) ----

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

fn incompatibilities(writer: &FileDescriptor, reader: &FileDescriptor) -> Vec<String> {
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

// ---- Payload validation ----

const VARINT: u64 = 0;
const I64: u64 = 1;
const LEN: u64 = 2;
const START_GROUP: u64 = 3;
const END_GROUP: u64 = 4;
const I32: u64 = 5;

/// What the walker needs of a field or an extension.
struct Shape {
    kind: Kind,
    list: bool,
    group: bool,
}

fn field_shape(message: &MessageDescriptor, number: u32) -> Option<Shape> {
    if let Some(field) = message.get_field(number) {
        let (list, group) = (field.is_list(), field.is_group());
        return Some(Shape {
            kind: field.kind(),
            list,
            group,
        });
    }
    let extension = message.get_extension(number)?;
    let (list, group) = (extension.is_list(), extension.is_group());
    Some(Shape {
        kind: extension.kind(),
        list,
        group,
    })
}

fn wire_type_of(kind: &Kind) -> u64 {
    match kind {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => I64,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => I32,
        Kind::String | Kind::Bytes | Kind::Message(_) => LEN,
        _ => VARINT,
    }
}

/// Reads the wire format as prost-reflect's `DynamicMessage::decode` does, refusing what it
/// refuses, without building the message (a record of small repeated values would take tens of
/// times its size in memory) and with nesting bounded by `DEPTH_MAX` rather than prost's 100.
struct Walker<'a> {
    input: &'a [u8],
}

impl<'a> Walker<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&byte, rest) = self.input.split_first()?;
        self.input = rest;
        Some(byte)
    }

    /// Confluent's message indexes: Kafka's 32-bit zigzag varints, a count of 0 meaning [0].
    fn message_indexes(&mut self) -> Result<Vec<usize>, String> {
        let count = self.zigzag()?;
        if count == 0 {
            return Ok(vec![0]);
        }
        let count = usize::try_from(count)
            .ok()
            .filter(|&count| count <= INDEXES_MAX)
            .ok_or_else(|| format!("{count} message indexes, expected 1 to {INDEXES_MAX}"))?;
        (0..count)
            .map(|_| {
                let index = self.zigzag()?;
                usize::try_from(index).map_err(|_| format!("negative message index {index}"))
            })
            .collect()
    }

    fn zigzag(&mut self) -> Result<i64, String> {
        let mut value = 0u32;
        for shift in [0, 7, 14, 21, 28] {
            let byte = self.byte().ok_or("truncated message indexes")?;
            value |= u32::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(i64::from(value >> 1) ^ -i64::from(value & 1));
            }
        }
        Err("a message index longer than 5 bytes".to_owned())
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte().ok_or("truncated varint")?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return match shift {
                    63 if byte > 1 => Err("varint overflows 64 bits".to_owned()),
                    _ => Ok(value),
                };
            }
        }
        Err("varint longer than 10 bytes".to_owned())
    }

    fn take(&mut self, len: u64) -> Result<&'a [u8], String> {
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= self.input.len())
            .ok_or_else(|| format!("{len} bytes wanted, {} left", self.input.len()))?;
        let (taken, rest) = self.input.split_at(len);
        self.input = rest;
        Ok(taken)
    }

    fn len_delimited(&mut self) -> Result<&'a [u8], String> {
        let len = self.varint()?;
        self.take(len)
    }

    fn key(&mut self) -> Result<(u32, u64), String> {
        let key = self.varint()?;
        let number = u32::try_from(key)
            .map(|key| key >> 3)
            .map_err(|_| format!("invalid field key {key}"))?;
        let wire = key & 7;
        if wire > I32 {
            return Err(format!("invalid wire type {wire}"));
        }
        if number == 0 {
            return Err("field number 0".to_owned());
        }
        Ok((number, wire))
    }

    /// A message's fields up to the end of the input, or up to the end of group `group`.
    fn message(
        &mut self,
        message: Option<&MessageDescriptor>,
        group: Option<u32>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > DEPTH_MAX {
            return Err(format!("messages nested more than {DEPTH_MAX} deep"));
        }
        loop {
            if self.input.is_empty() {
                return match group {
                    None => Ok(()),
                    Some(number) => Err(format!("group {number} not closed")),
                };
            }
            let (number, wire) = self.key()?;
            if wire == END_GROUP {
                return match group {
                    Some(open) if open == number => Ok(()),
                    _ => Err(format!("unexpected end of group {number}")),
                };
            }
            match message.and_then(|m| field_shape(m, number)) {
                Some(shape) => self.field(&shape, number, wire, depth)?,
                None if wire == START_GROUP => self.message(None, Some(number), depth + 1)?,
                None => self.scalar(wire)?,
            }
        }
    }

    fn field(&mut self, shape: &Shape, number: u32, wire: u64, depth: usize) -> Result<(), String> {
        let expected = if shape.group {
            START_GROUP
        } else {
            wire_type_of(&shape.kind)
        };
        if shape.list && wire == LEN && matches!(expected, VARINT | I32 | I64) {
            let mut packed = Walker {
                input: self.len_delimited()?,
            };
            while !packed.input.is_empty() {
                packed.scalar(expected)?;
            }
            return Ok(());
        }
        if wire != expected {
            return Err(format!(
                "field {number} has wire type {wire}, expected {expected}"
            ));
        }
        match &shape.kind {
            Kind::Message(m) if wire == START_GROUP => {
                self.message(Some(m), Some(number), depth + 1)
            }
            Kind::Message(m) => {
                let input = self.len_delimited()?;
                Walker { input }.message(Some(m), None, depth + 1)
            }
            Kind::String => match std::str::from_utf8(self.len_delimited()?) {
                Ok(_) => Ok(()),
                Err(_) => Err(format!("field {number} is not valid UTF-8")),
            },
            _ => self.scalar(wire),
        }
    }

    fn scalar(&mut self, wire: u64) -> Result<(), String> {
        match wire {
            VARINT => self.varint().map(drop),
            I64 => self.take(8).map(drop),
            I32 => self.take(4).map(drop),
            _ => self.len_delimited().map(drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use proptest::prelude::*;
    use prost::Message as _;

    use super::*;

    fn parse(text: &str) -> ProtobufSchema {
        ProtobufSchema::parse(text, &[]).unwrap()
    }

    fn refusal(text: &str, dependencies: &[Dependency]) -> String {
        ProtobufSchema::parse(text, dependencies).unwrap_err().0
    }

    fn dependency(name: &str, schema: &str) -> Dependency {
        Dependency {
            name: name.to_owned(),
            schema: schema.to_owned(),
        }
    }

    /// Most of what a proto2 file can say.
    const SHOP: &str = r#"
// The shop's orders.
syntax = "proto2";
package shop.v1;
import "google/protobuf/timestamp.proto";
import "google/protobuf/descriptor.proto";
option java_package = "com.example.shop";
option optimize_for = SPEED;
extend google.protobuf.FieldOptions {
  optional string label = 50001;
  optional Meta meta = 50002;
  repeated int32 tags = 50003;
}
message Meta { optional string a = 1; optional int32 b = 2; }
/* An order, with * and / alone */
message Order {
  reserved 8, 10 to 12, 5000 to max;
  reserved "old", "older";
  option deprecated = true;
  required string id = 1 [(label) = "the id", (meta) = { a: "x" b: 3 }, (tags) = 1, (tags) = 2];
  optional int32 count = 3 [default = 10];
  optional string note = 4 [default = "a \"quoted\"\n\001 é {{"];
  optional bytes blob = 13 [default = "\001\377ab"];
  optional double ratio = 14 [default = -inf, json_name = "theRatio"];
  optional Status status = 15 [default = ACTIVE];
  map<string, Item> items = 5;
  repeated int32 codes = 7 [packed = true];
  optional group Result = 9 { optional int32 score = 1; }
  oneof choice { string email = 20; int64 phone = 21; }
  optional .google.protobuf.Timestamp at = 22;
  extensions 1000 to 1999;
  message Item { optional string sku = 1; enum Size { S = 0; M = 1; } }
  enum Status {
    option allow_alias = true;
    ACTIVE = 0; ALIVE = 0 [deprecated = true]; DONE = 1;
    reserved 5, 7 to 9; reserved "GONE";
  }
}
extend Order { optional string extra = 1000; }
service Shop {
  option deprecated = true;
  rpc Buy (Order) returns (Order);
  rpc Watch (stream Order) returns (stream Order) { option deprecated = true; }
}
"#;

    const PROTO3: &str = r#"
syntax = "proto3";
package p;
message A {
  optional int32 x = 1;
  int32 y = 2;
  oneof o { string s = 3; A nested = 6; }
  repeated string r = 4;
  map<int32, A> m = 5;
  optional string z = 7;
}
enum E { E_ZERO = 0; }
"#;

    #[test]
    fn whitespace_and_comments_do_not_change_the_canonical_form() {
        let compact =
            r#"syntax="proto3";package shop;message Order{string id=1;map<string,int32> lines=2;}"#;
        let spaced = "// orders\nsyntax = \"proto3\";\n\npackage   shop;\n/* the order */\n\
                      message Order {\n  string id = 1; // its id\n  map<string, int32> lines = 2;\n}\n";
        assert_eq!(parse(compact).canonical(), parse(spaced).canonical());
    }

    #[test]
    fn option_formatting_import_order_and_name_qualification_do_not_change_the_canonical_form() {
        let one = r#"syntax = "proto3"; package a;
            import "google/protobuf/timestamp.proto"; import "google/protobuf/duration.proto";
            option java_package = "x.y";
            message M { google.protobuf.Timestamp t = 1 [deprecated=true]; N n = 2; message N {} }"#;
        let two = r#"syntax = "proto3"; package a;
            import "google/protobuf/duration.proto"; import "google/protobuf/timestamp.proto";
            option java_package="x.y";
            message M { .google.protobuf.Timestamp t = 1 [ deprecated = true ]; .a.M.N n = 2; message N {} }"#;
        assert_eq!(parse(one).canonical(), parse(two).canonical());
    }

    #[test]
    fn the_canonical_form_is_rendered_proto_that_parses_back_to_itself() {
        for text in [SHOP, PROTO3] {
            let canonical = parse(text).canonical();
            assert!(
                canonical.contains('\n'),
                "the token fallback was used:\n{canonical}"
            );
            assert_eq!(parse(&canonical).canonical(), canonical);
        }
    }

    #[test]
    fn the_canonical_form_keeps_what_clients_parse() {
        let canonical = parse(SHOP).canonical();
        for expected in [
            "syntax = \"proto2\";",
            "package shop.v1;",
            "import \"google/protobuf/timestamp.proto\";",
            "option java_package = \"com.example.shop\";",
            "reserved 8, 10 to 12, 5000 to 536870911;",
            "reserved \"old\", \"older\";",
            "required string id = 1 [(.shop.v1.label) = \"the id\", (.shop.v1.meta) = { a:\"x\",b:3 }, (.shop.v1.tags) = 1, (.shop.v1.tags) = 2];",
            "optional int32 count = 3 [default = 10];",
            "optional string note = 4 [default = \"a \\\"quoted\\\"\\n\\001 é {{\"];",
            "optional bytes blob = 13 [default = \"\\001\\377ab\"];",
            "optional double ratio = 14 [default = -inf, json_name = \"theRatio\"];",
            "optional .shop.v1.Order.Status status = 15 [default = ACTIVE];",
            "map<string, .shop.v1.Order.Item> items = 5;",
            "repeated int32 codes = 7 [packed = true];",
            "optional group Result = 9 {",
            "oneof choice {\n    string email = 20;\n    int64 phone = 21;\n  }",
            "optional .google.protobuf.Timestamp at = 22;",
            "extensions 1000 to 1999;",
            "ACTIVE = 0;\n    ALIVE = 0 [deprecated = true];\n    DONE = 1;",
            "extend .shop.v1.Order {\n  optional string extra = 1000;\n}",
            "rpc Watch (stream .shop.v1.Order) returns (stream .shop.v1.Order) {",
        ] {
            assert!(canonical.contains(expected), "{expected}\nmissing from\n{canonical}");
        }
        let proto3 = parse(PROTO3).canonical();
        for expected in [
            "optional int32 x = 1;",
            "\n  int32 y = 2;",
            "map<int32, .p.A> m = 5;",
        ] {
            assert!(
                proto3.contains(expected),
                "{expected}\nmissing from\n{proto3}"
            );
        }
    }

    #[test]
    fn the_canonical_form_keeps_the_order_of_messages() {
        let canonical = parse("syntax = \"proto3\"; message B {} message A {}").canonical();
        assert!(canonical.find("message B").unwrap() < canonical.find("message A").unwrap());
        let names =
            parse("syntax = \"proto3\"; package p; message B {} enum E { Z = 0; } message A {}")
                .message_names();
        assert_eq!(names, ["p.B", "p.A"]);
    }

    #[test]
    fn a_dependency_is_imported_by_its_reference_name() {
        let money = dependency(
            "common/money.proto",
            "syntax = \"proto3\"; package common; message Money { int64 units = 1; }",
        );
        let text = r#"syntax = "proto3"; import "common/money.proto";
                      message Order { common.Money total = 1; }"#;
        let schema = ProtobufSchema::parse(text, std::slice::from_ref(&money)).unwrap();
        let canonical = schema.canonical();
        assert!(
            canonical.contains("import \"common/money.proto\";"),
            "{canonical}"
        );
        assert!(
            canonical.contains(".common.Money total = 1;"),
            "{canonical}"
        );
        let again = ProtobufSchema::parse(&canonical, &[money]).unwrap();
        assert_eq!(again.canonical(), canonical);
        assert!(refusal(text, &[]).contains("import 'common/money.proto' not found"));
    }

    #[test]
    fn references_of_references_resolve_and_a_reference_may_be_named_like_the_schema() {
        let deps = [
            dependency(
                "schema.proto",
                "syntax = \"proto3\"; package a; message A { int32 v = 1; }",
            ),
            dependency(
                "b.proto",
                "syntax = \"proto3\"; package b; import \"schema.proto\"; message B { a.A a = 1; }",
            ),
        ];
        let text = "syntax = \"proto3\"; import \"b.proto\"; message C { b.B b = 1; }";
        let schema = ProtobufSchema::parse(text, &deps).unwrap();
        assert_eq!(schema.message_names(), ["C"]);
    }

    #[test]
    fn a_broken_reference_is_refused_by_name() {
        let deps = [dependency(
            "bad.proto",
            "syntax = \"proto3\";\nmessage Bad {",
        )];
        let error = refusal(
            "syntax = \"proto3\"; import \"bad.proto\"; message A {}",
            &deps,
        );
        assert!(
            error.contains("in reference 'bad.proto', expected a message field"),
            "{error}"
        );
    }

    #[test]
    fn google_well_known_types_resolve_without_a_reference() {
        let text = r#"syntax = "proto3";
            import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto";
            import "google/protobuf/any.proto";
            message Event { google.protobuf.Timestamp at = 1; google.protobuf.StringValue note = 2;
                            google.protobuf.Any detail = 3; }"#;
        let canonical = parse(text).canonical();
        assert!(
            canonical.contains(".google.protobuf.Timestamp at = 1;"),
            "{canonical}"
        );
    }

    #[test]
    fn a_reference_cannot_replace_a_well_known_file() {
        let fake = dependency(
            "google/protobuf/timestamp.proto",
            "syntax = \"proto3\"; package google.protobuf; message Timestamp { string s = 1; }",
        );
        let text = r#"syntax = "proto3"; import "google/protobuf/timestamp.proto";
                      message Event { google.protobuf.Timestamp at = 1; }"#;
        let schema = ProtobufSchema::parse(text, &[fake]).unwrap();
        let timestamp = schema
            .file
            .parent_pool()
            .get_message_by_name("google.protobuf.Timestamp");
        assert!(timestamp.unwrap().get_field_by_name("seconds").is_some());
    }

    #[test]
    fn a_package_reserved_to_google_is_refused() {
        let deps = [dependency(
            "mine.proto",
            "syntax = \"proto3\"; package google.protobuf; message FileOptions { int32 x = 1; }",
        )];
        let error = refusal(
            "syntax = \"proto3\"; import \"mine.proto\"; message A {}",
            &deps,
        );
        assert!(error.contains("reserved to Google"), "{error}");
    }

    #[test]
    fn a_syntax_error_is_refused_with_its_line_and_column() {
        let error = refusal(
            "syntax = \"proto3\";\nmessage Order {\n  string id = 1\n}\n",
            &[],
        );
        assert_eq!(
            error,
            "invalid Protobuf schema: line 4, column 1: expected ';' or '[', but found '}'"
        );
    }

    #[test]
    fn unresolved_names_and_files_without_types_are_refused() {
        let unknown = refusal("syntax = \"proto3\"; message A { Missing m = 1; }", &[]);
        assert!(unknown.contains("Missing"), "{unknown}");
        let empty = refusal("syntax = \"proto3\"; package p;", &[]);
        assert_eq!(
            empty,
            "invalid Protobuf schema: the file declares no message or enum type"
        );
        let service_only = "syntax = \"proto3\"; import \"google/protobuf/empty.proto\"; \
                            service S { rpc M (google.protobuf.Empty) returns (google.protobuf.Empty); }";
        assert!(refusal(service_only, &[]).contains("no message or enum type"));
        // A file of enums only is what a shared reference often is.
        assert!(parse("syntax = \"proto3\"; enum Color { RED = 0; }")
            .message_names()
            .is_empty());
    }

    #[test]
    fn deep_nesting_is_refused_before_the_parser_recurses() {
        let levels = 100_000;
        let messages = "message M {".repeat(levels) + &"}".repeat(levels);
        let error = refusal(&messages, &[]);
        assert!(error.contains("nests deeper than 64 levels"), "{error}");
        let aggregate = format!(
            "syntax = \"proto2\"; import \"google/protobuf/descriptor.proto\"; message A {{}} \
             option (x) = {}{};",
            "{ a ".repeat(levels),
            "}".repeat(levels)
        );
        assert!(refusal(&aggregate, &[]).contains("nests deeper"));
        let deps = [dependency("deep.proto", &messages)];
        let error = refusal("syntax = \"proto3\"; message A {}", &deps);
        assert!(
            error.contains("reference 'deep.proto' nests deeper"),
            "{error}"
        );
    }

    #[test]
    fn brackets_in_comments_and_strings_are_not_nesting() {
        let many = "{".repeat(200);
        let text = format!(
            "// {many}\n/* {many} */ syntax = \"proto2\"; // {many}\n\
             message A {{ optional string s = 1 [default = \"{many}\"]; }}"
        );
        let canonical = ProtobufSchema::parse(&text, &[]).unwrap().canonical();
        assert!(canonical.contains(&many));
    }

    #[test]
    fn a_nested_block_comment_is_refused() {
        let error = refusal(
            "/* outer /* inner */ */ syntax = \"proto3\"; message A {}",
            &[],
        );
        assert!(error.contains("nested block comments"), "{error}");
    }

    /// Standard base64 with padding, as confluent-kafka-python encodes descriptors.
    fn base64(bytes: &[u8]) -> String {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let bits = chunk
                .iter()
                .enumerate()
                .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
            for i in 0..=chunk.len() {
                let index = usize::try_from((bits >> (18 - 6 * i)) & 63).unwrap();
                out.push(char::from(alphabet[index]));
            }
            out.push_str(&"=".repeat(3 - chunk.len()));
        }
        out
    }

    #[test]
    fn a_base64_file_descriptor_reads_like_its_text() {
        let from_text = parse(SHOP);
        let encoded = base64(&from_text.file.encode_to_vec());
        let from_bytes = ProtobufSchema::parse(&encoded, &[]).unwrap();
        assert_eq!(from_bytes.canonical(), from_text.canonical());
        let money = "syntax = \"proto3\"; package m; message Money { int64 units = 1; }";
        let reference = base64(&parse(money).file.encode_to_vec());
        let text = "syntax = \"proto3\"; import \"m.proto\"; message A { m.Money total = 1; }";
        ProtobufSchema::parse(text, &[dependency("m.proto", &reference)]).unwrap();
        let error = refusal("AAAAAAAAAAAAAAAAAAAAAAAA////", &[]);
        assert!(
            error.contains("the schema is neither .proto text nor a base64"),
            "{error}"
        );
    }

    // ---- Compatibility ----

    #[test]
    fn the_compatibility_corpus_follows_confluent_rules() {
        let corpus = include_str!("../../tests/corpus/protobuf/compatibility.txt");
        let mut failures = Vec::new();
        let mut cases = 0;
        for case in corpus.split("\n=== ").skip(1) {
            let (rule, rest) = case.split_once('\n').unwrap();
            let (flag, rest) = rest.split_once("\n--- writer\n").unwrap();
            let (writer, reader) = rest.split_once("\n--- reader\n").unwrap();
            let compatible = match flag.trim() {
                "compatible: true" => true,
                "compatible: false" => false,
                other => panic!("{rule}: {other}"),
            };
            let found = parse(reader).incompatibilities_reading(&parse(writer));
            if found.is_empty() != compatible {
                failures.push(format!(
                    "{rule}: expected compatible={compatible}, got {found:?}"
                ));
            }
            cases += 1;
        }
        assert!(cases >= 40, "{cases} cases");
        assert!(failures.is_empty(), "{failures:#?}");
    }

    fn incompatibilities(writer: &str, reader: &str) -> Vec<String> {
        parse(reader).incompatibilities_reading(&parse(writer))
    }

    #[test]
    fn an_incompatibility_names_its_kind_its_path_and_the_types() {
        let found = incompatibilities(
            "syntax = \"proto3\"; message Order { string id = 1; int32 count = 2; }",
            "syntax = \"proto3\"; message Order { string id = 1; string count = 2; }",
        );
        assert_eq!(
            found,
            ["FIELD_SCALAR_KIND_CHANGED: #/Order/2 int32 -> string"]
        );
        let removed = incompatibilities(
            "syntax = \"proto3\"; package p; message A {} message B {}",
            "syntax = \"proto3\"; package q; message A {}",
        );
        assert_eq!(
            removed,
            ["PACKAGE_CHANGED: #/ p -> q", "MESSAGE_REMOVED: #/B"]
        );
    }

    #[test]
    fn an_incompatible_message_flags_the_fields_that_use_it() {
        let found = incompatibilities(
            "syntax = \"proto3\"; message Order { Line line = 1; message Line { int32 n = 1; } }",
            "syntax = \"proto3\"; message Order { Line line = 1; message Line { string n = 1; } }",
        );
        assert_eq!(
            found,
            [
                "FIELD_SCALAR_KIND_CHANGED: #/Order/Line/1 int32 -> string",
                "FIELD_NAMED_TYPE_CHANGED: #/Order/1 .Order.Line -> .Order.Line changed incompatibly",
            ]
        );
    }

    #[test]
    fn oneof_incompatibilities_name_the_oneof() {
        let found = incompatibilities(
            "syntax = \"proto3\"; message C { string a = 1; string b = 2; }",
            "syntax = \"proto3\"; message C { oneof o { string a = 1; string b = 2; } }",
        );
        assert_eq!(
            found,
            ["MULTIPLE_FIELDS_MOVED_TO_ONEOF: #/C/o takes field 1, field 2"]
        );
        let found = incompatibilities(
            "syntax = \"proto3\"; message C { oneof o { string a = 1; string b = 2; } }",
            "syntax = \"proto3\"; message C { oneof o { string a = 1; } }",
        );
        assert_eq!(found, ["ONEOF_FIELD_REMOVED: #/C/o/2 (b)"]);
    }

    #[test]
    fn every_schema_reads_itself() {
        for text in [SHOP, PROTO3] {
            assert_eq!(incompatibilities(text, text), Vec::<String>::new());
        }
    }

    #[test]
    fn a_message_type_is_compared_by_its_name_without_package_wherever_it_is_declared() {
        let local = parse(
            "syntax = \"proto3\"; message Order { Address to = 1; } \
             message Address { string city = 1; }",
        );
        let geo = |city: &str| {
            let text =
                format!("syntax = \"proto3\"; package geo; message Address {{ {city} city = 1; }}");
            dependency("geo.proto", &text)
        };
        let text =
            "syntax = \"proto3\"; import \"geo.proto\"; message Order { geo.Address to = 1; }";
        let imported = ProtobufSchema::parse(text, &[geo("string")]).unwrap();
        // From a reference into the file: the same type by name.
        assert!(local.incompatibilities_reading(&imported).is_empty());
        // Out of the file: Confluent counts the file's message removed.
        let found = imported.incompatibilities_reading(&local);
        assert_eq!(found, ["MESSAGE_REMOVED: #/Address"]);
        let changed = ProtobufSchema::parse(text, &[geo("int32")]).unwrap();
        let found = local.incompatibilities_reading(&changed);
        assert_eq!(
            found,
            [
                "FIELD_SCALAR_KIND_CHANGED: #/Address/1 int32 -> string",
                "FIELD_NAMED_TYPE_CHANGED: #/Order/1 .geo.Address -> .Address changed incompatibly",
            ]
        );
    }

    #[test]
    fn a_long_chain_of_message_references_is_compared_without_recursion() {
        let chain = |last: &str| {
            let mut text = String::from("syntax = \"proto3\";\n");
            for i in 0..3000 {
                text.push_str(&format!("message M{i} {{ M{} next = 1; }}\n", i + 1));
            }
            text + &format!("message M3000 {{ {last} value = 1; }}\n")
        };
        let found = incompatibilities(&chain("int32"), &chain("string"));
        assert!(found.contains(&"FIELD_SCALAR_KIND_CHANGED: #/M3000/1 int32 -> string".to_owned()));
        assert!(incompatibilities(&chain("int32"), &chain("int64")).is_empty());
    }

    // ---- Payloads ----

    const ORDERS: &str = r#"syntax = "proto3";
        package shop;
        message Order {
          string id = 1;
          string note = 2;
          map<string, int32> counts = 3;
          message Line { string sku = 1; int64 quantity = 2; }
        }
        message Refund { int64 amount = 1; }"#;

    fn orders() -> &'static ProtobufSchema {
        static SCHEMA: OnceLock<ProtobufSchema> = OnceLock::new();
        SCHEMA.get_or_init(|| parse(ORDERS))
    }

    fn encoded(message_name: &str, fields: &[(&str, Value)]) -> Vec<u8> {
        let pool = orders().file.parent_pool();
        let mut message = DynamicMessage::new(pool.get_message_by_name(message_name).unwrap());
        for (name, value) in fields {
            message.set_field_by_name(name, value.clone());
        }
        message.encode_to_vec()
    }

    fn with_indexes(indexes: &[u8], body: &[u8]) -> Vec<u8> {
        [indexes, body].concat()
    }

    #[test]
    fn the_single_zero_index_selects_the_first_message() {
        let counts = [(prost_reflect::MapKey::String("a".into()), Value::I32(2))].into();
        let order = encoded(
            "shop.Order",
            &[
                ("id", Value::String("o-1".into())),
                ("counts", Value::Map(counts)),
            ],
        );
        orders().validate(&with_indexes(&[0], &order)).unwrap();
        // The same as the explicit form: one index, 0.
        orders().validate(&with_indexes(&[2, 0], &order)).unwrap();
        orders().validate(&[0]).unwrap();
    }

    #[test]
    fn explicit_indexes_select_a_nested_or_a_later_message() {
        let line = encoded(
            "shop.Order.Line",
            &[
                ("sku", Value::String("s".into())),
                ("quantity", Value::I64(5)),
            ],
        );
        // [0, 0]: Order's first nested message; its map entry type does not count.
        orders().validate(&with_indexes(&[4, 0, 0], &line)).unwrap();
        let as_order = orders().validate(&with_indexes(&[0], &line)).unwrap_err().0;
        assert!(
            as_order.contains("not a valid shop.Order record"),
            "{as_order}"
        );
        let refund = encoded("shop.Refund", &[("amount", Value::I64(7))]);
        orders().validate(&with_indexes(&[2, 2], &refund)).unwrap();
        assert!(orders().validate(&with_indexes(&[0], &refund)).is_err());
    }

    #[test]
    fn out_of_range_negative_or_too_many_message_indexes_are_refused() {
        let error = orders().validate(&[2, 4]).unwrap_err().0;
        assert_eq!(
            error,
            "message index 2 is out of range: the file declares 2 message types"
        );
        let nested = orders().validate(&[4, 0, 2]).unwrap_err().0;
        assert!(
            nested.contains("shop.Order declares 1 message types"),
            "{nested}"
        );
        assert!(orders()
            .validate(&[2, 1])
            .unwrap_err()
            .0
            .contains("negative message index"));
        assert!(orders()
            .validate(&[1])
            .unwrap_err()
            .0
            .contains("-1 message indexes"));
        let too_many = [vec![34], vec![0; 17]].concat();
        assert!(orders()
            .validate(&too_many)
            .unwrap_err()
            .0
            .contains("17 message indexes"));
        let long = orders()
            .validate(&[0x80, 0x80, 0x80, 0x80, 0x80, 0])
            .unwrap_err()
            .0;
        assert!(long.contains("longer than 5 bytes"), "{long}");
    }

    #[test]
    fn truncated_payloads_are_refused() {
        assert!(orders()
            .validate(&[])
            .unwrap_err()
            .0
            .contains("truncated message indexes"));
        let order = with_indexes(
            &[0],
            &encoded("shop.Order", &[("id", Value::String("o-1".into()))]),
        );
        for cut in 2..order.len() {
            assert!(orders().validate(&order[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn garbage_bytes_are_refused() {
        for garbage in [
            &[0, 0xff, 0xff, 0xff][..],
            &[0, 0x0f, 1, 2],             // wire type 7
            &[0, 0x08, 0x01],             // field 1 is a string, not a varint
            &[0, 0x00],                   // field number 0
            &[0, 0x0c],                   // an end of group never opened
            &[0, 0x0a, 0x02, 0xc3, 0x28], // invalid UTF-8 in a string
            &[0, 0x1b, 0x08, 0x01],       // an unknown group never closed
            &[
                0, 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02,
            ], // 11-byte varint
        ] {
            assert!(orders().validate(garbage).is_err(), "{garbage:?}");
        }
    }

    #[test]
    fn unknown_fields_are_accepted_as_readers_skip_them() {
        // Field 9 as varint, fixed64, bytes and a group holding a varint.
        let unknown = [
            0x48, 0x01, 0x49, 1, 2, 3, 4, 5, 6, 7, 8, 0x4a, 0x01, 0xff, 0x4b, 0x08, 0x01, 0x4c,
        ];
        orders().validate(&with_indexes(&[0], &unknown)).unwrap();
    }

    fn nested_nodes(levels: usize) -> Vec<u8> {
        let mut body = Vec::new();
        for _ in 0..levels {
            let mut outer = vec![0x0a];
            prost::encoding::encode_varint(u64::try_from(body.len()).unwrap(), &mut outer);
            outer.extend_from_slice(&body);
            body = outer;
        }
        with_indexes(&[0], &body)
    }

    #[test]
    fn payloads_nested_deeper_than_the_limit_are_refused_without_exhausting_the_stack() {
        let node = parse("syntax = \"proto3\"; message Node { Node child = 1; }");
        node.validate(&nested_nodes(DEPTH_MAX - 1)).unwrap();
        let error = node.validate(&nested_nodes(DEPTH_MAX)).unwrap_err().0;
        assert!(error.contains("nested more than 64 deep"), "{error}");
        assert!(node.validate(&nested_nodes(5_000)).is_err());
        // Unknown groups nest without lengths: one byte a level.
        let groups = with_indexes(&[0], &[0x13; 1_000_000]);
        assert!(node
            .validate(&groups)
            .unwrap_err()
            .0
            .contains("nested more than"));
    }

    /// Field kinds and encodings for comparing the walker with prost-reflect's decoder (no
    /// map: prost-reflect reads a map field of any wire type as length-delimited).
    const PROBE: &str = r#"syntax = "proto2";
        message Probe {
          optional int32 a = 1;
          optional sint64 b = 2;
          optional fixed32 c = 3;
          optional double d = 4;
          optional string e = 5;
          optional bytes f = 6;
          repeated int32 g = 7;
          repeated Probe h = 8;
          optional group J = 10 { optional int32 k = 11; optional Probe l = 12; }
          optional Kind m = 13;
          repeated fixed64 n = 14 [packed = true];
          repeated string o = 15;
          enum Kind { A = 0; B = 1; }
          extensions 100 to 200;
        }
        extend Probe { optional string ext = 100; repeated sint32 exts = 101; }"#;

    fn probe() -> &'static ProtobufSchema {
        static SCHEMA: OnceLock<ProtobufSchema> = OnceLock::new();
        SCHEMA.get_or_init(|| parse(PROBE))
    }

    fn agrees_with_prost_reflect(body: &[u8]) -> Result<(), TestCaseError> {
        let descriptor = probe().file.messages().next().unwrap();
        let decoded = DynamicMessage::decode(descriptor, body);
        let walked = probe().validate(&with_indexes(&[0], body));
        prop_assert_eq!(
            walked.is_ok(),
            decoded.is_ok(),
            "walker {:?}, prost-reflect {:?}",
            walked,
            decoded
        );
        Ok(())
    }

    /// A field key (numbers 1 to 17, 100 and 101, any wire type) and a few bytes after it.
    fn field_bytes() -> impl Strategy<Value = Vec<u8>> {
        (
            0u64..20,
            0u64..8,
            proptest::collection::vec(any::<u8>(), 0..6),
        )
            .prop_map(|(number, wire, tail)| {
                let number = match number {
                    18 => 100,
                    19 => 101,
                    n => n,
                };
                let mut bytes = Vec::new();
                prost::encoding::encode_varint(number << 3 | wire, &mut bytes);
                bytes.extend(tail);
                bytes
            })
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic_validate(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = probe().validate(&bytes);
            let _ = orders().validate(&bytes);
        }

        #[test]
        fn the_walker_agrees_with_prost_reflect_on_random_bytes(
            body in proptest::collection::vec(any::<u8>(), 0..64)
        ) {
            agrees_with_prost_reflect(&body)?;
        }

        #[test]
        fn the_walker_agrees_with_prost_reflect_on_field_like_bytes(
            fields in proptest::collection::vec(field_bytes(), 0..12)
        ) {
            agrees_with_prost_reflect(&fields.concat())?;
        }

        #[test]
        fn random_schema_text_never_panics_parse(text in "[a-z{}<>=;\"0-9 .\\[\\]()]{0,80}") {
            let _ = ProtobufSchema::parse(&format!("syntax = \"proto3\"; {text}"), &[]);
        }
    }
}
