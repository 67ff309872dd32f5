//! Compiling schema text with protox: the sources and their resolver (Google's well-known
//! files first, base64 `FileDescriptorProto` input), protox's errors reworded, and the checks
//! made before and after compiling.

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};

use prost_reflect::FileDescriptor;
use protox::file::{File, FileResolver, GoogleFileResolver};
use protox::Compiler;

use crate::schema::{Dependency, InvalidSchema, DEPTH_MAX};

/// The file name the schema compiles under: any name its references do not already use.
pub(super) fn main_file_name(dependencies: &[Dependency]) -> String {
    let taken: HashSet<&str> = dependencies.iter().map(|d| d.name.as_str()).collect();
    let mut name = "schema.proto".to_owned();
    let mut suffix = 0u32;
    while taken.contains(name.as_str()) {
        suffix += 1;
        name = format!("schema{suffix}.proto");
    }
    name
}

pub(super) fn compile(
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
pub(super) fn check_file(file: &FileDescriptor) -> Result<(), InvalidSchema> {
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
pub(super) fn check_nesting(what: &str, text: &str) -> Result<(), InvalidSchema> {
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
pub(super) struct Tokens<'a> {
    pub(super) text: &'a str,
    pub(super) at: usize,
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
