//! The canonical form: the compiled file rendered back to `.proto` text, kept only when it
//! compiles back to the same file.

use std::panic::{catch_unwind, AssertUnwindSafe};

use prost_reflect::prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
use prost_reflect::FileDescriptor;

use super::compile::{compile, Tokens};
use super::render::{json_name_of, render_file};
use crate::schema::Dependency;

/// The rendered text when it compiles back to the same file and renders to itself; otherwise
/// the text's tokens one space apart.
pub(super) fn canonical_text(
    file: &FileDescriptor,
    text: &str,
    main: &str,
    deps: &[Dependency],
) -> String {
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
