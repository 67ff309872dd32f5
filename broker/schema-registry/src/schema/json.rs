//! JSON Schemas: parsed by `serde_json`, checked and compiled by the `jsonschema` crate (the
//! draft `$schema` names, draft 7 by default as Confluent; references to other subjects given
//! as resources, never fetched), canonical as keys sorted without whitespace, and compared by a
//! subset of Confluent's JSON Schema rules (listed at [`JsonSchema::incompatibilities_reading`]).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Dependency, InvalidPayload, InvalidSchema, DEPTH_MAX};

#[derive(Clone)]
pub struct JsonSchema {
    value: Value,
    validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for JsonSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonSchema")
            .field("value", &self.value)
            .finish_non_exhaustive()
    }
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn parse_json(what: &str, text: &str) -> Result<Value, InvalidSchema> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| InvalidSchema(format!("invalid JSON Schema ({what}): {e}")))?;
    if depth(&value) > DEPTH_MAX {
        return Err(InvalidSchema(format!(
            "JSON Schema ({what}) nested deeper than {DEPTH_MAX}"
        )));
    }
    if !value.is_object() && !value.is_boolean() {
        return Err(InvalidSchema(format!(
            "JSON Schema ({what}) is neither an object nor a boolean"
        )));
    }
    Ok(value)
}

fn draft(value: &Value) -> jsonschema::Draft {
    use jsonschema::Draft;
    match value.get("$schema").and_then(Value::as_str).unwrap_or("") {
        s if s.contains("draft-04") => Draft::Draft4,
        s if s.contains("draft-06") => Draft::Draft6,
        s if s.contains("2019-09") => Draft::Draft201909,
        s if s.contains("2020-12") => Draft::Draft202012,
        _ => Draft::Draft7,
    }
}

impl JsonSchema {
    pub fn parse(text: &str, dependencies: &[Dependency]) -> Result<JsonSchema, InvalidSchema> {
        let value = parse_json("the schema", text)?;
        let mut options = jsonschema::options().with_draft(draft(&value));
        for dependency in dependencies {
            let contents = parse_json(&dependency.name, &dependency.schema)?;
            let resource = jsonschema::Resource::from_contents(contents)
                .map_err(|e| InvalidSchema(format!("reference {}: {e}", dependency.name)))?;
            options = options.with_resource(dependency.name.clone(), resource);
        }
        let validator = options
            .build(&value)
            .map_err(|e| InvalidSchema(format!("invalid JSON Schema: {e}")))?;
        Ok(JsonSchema {
            value,
            validator: Arc::new(validator),
        })
    }

    /// Keys sorted (serde_json's map is ordered), no whitespace.
    pub fn canonical(&self) -> String {
        self.value.to_string()
    }

    /// Why data valid under `writer` may be invalid under `self`. Covered, with Confluent's
    /// names: TYPE_CHANGED / TYPE_NARROWED (integer widens to number), properties added to a
    /// closed model or removed from an open one (PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL is
    /// compatible only when the new property accepts anything), REQUIRED_ATTRIBUTE_ADDED,
    /// ADDITIONAL_PROPERTIES_REMOVED / NARROWED, ENUM_ARRAY_NARROWED, the bounds
    /// (MAX/MIN_LENGTH, MAXIMUM/MINIMUM and their exclusive forms, MAX/MIN_ITEMS,
    /// MAX/MIN_PROPERTIES) added or tightened, PATTERN_ADDED/CHANGED, MULTIPLE_OF changed,
    /// UNIQUE_ITEMS_ADDED, items and combined schemas (oneOf/anyOf/allOf) recursively. Local
    /// `$ref`s are followed (bounded); other differences are taken as compatible.
    pub fn incompatibilities_reading(&self, writer: &JsonSchema) -> Vec<String> {
        let mut out = Vec::new();
        let mut judge = Judge {
            writer_root: &writer.value,
            reader_root: &self.value,
            out: &mut out,
            steps: 0,
        };
        judge.compare(&writer.value, &self.value, "#", 0);
        out
    }

    pub fn validate(&self, payload: &[u8]) -> Result<(), InvalidPayload> {
        let text = std::str::from_utf8(payload)
            .map_err(|_| InvalidPayload("JSON payload is not UTF-8".into()))?;
        let instance: Value = serde_json::from_str(text)
            .map_err(|e| InvalidPayload(format!("payload is not JSON: {e}")))?;
        if depth(&instance) > DEPTH_MAX {
            return Err(InvalidPayload(format!(
                "JSON payload nested deeper than {DEPTH_MAX}"
            )));
        }
        self.validator
            .validate(&instance)
            .map_err(|e| InvalidPayload(format!("{} at {}", e, e.instance_path)))
    }
}

/// The most comparisons one check makes (recursive `$ref`s end here).
const STEPS_MAX: usize = 10_000;

struct Judge<'a> {
    writer_root: &'a Value,
    reader_root: &'a Value,
    out: &'a mut Vec<String>,
    steps: usize,
}

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..8 {
        match current.get("$ref").and_then(Value::as_str) {
            Some(r) if r.starts_with('#') => match root.pointer(&r[1..]) {
                Some(target) => current = target,
                None => return current,
            },
            _ => return current,
        }
    }
    current
}

fn types(schema: &Value) -> Option<Vec<String>> {
    match schema.get("type")? {
        Value::String(t) => Some(vec![t.clone()]),
        Value::Array(ts) => Some(
            ts.iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect(),
        ),
        _ => None,
    }
}

fn number(schema: &Value, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

/// Whether a schema accepts everything (`true`, `{}`).
fn open(schema: Option<&Value>) -> bool {
    match schema {
        None | Some(Value::Bool(true)) => true,
        Some(Value::Object(map)) => map.is_empty(),
        _ => false,
    }
}

impl Judge<'_> {
    fn flag(&mut self, kind: &str, path: &str, detail: String) {
        self.out.push(format!("{kind}: {path} {detail}"));
    }

    fn compare(&mut self, writer: &Value, reader: &Value, path: &str, depth: usize) {
        self.steps += 1;
        if depth > DEPTH_MAX || self.steps > STEPS_MAX {
            return;
        }
        let (writer, reader) = (
            resolve(self.writer_root, writer),
            resolve(self.reader_root, reader),
        );
        if reader == &Value::Bool(true) || writer == reader {
            return;
        }
        if reader == &Value::Bool(false) {
            return self.flag("SCHEMA_NARROWED", path, "to false".into());
        }
        self.types(writer, reader, path);
        self.bounds(writer, reader, path);
        self.enums(writer, reader, path);
        self.object(writer, reader, path, depth);
        for key in ["items", "additionalItems"] {
            match (writer.get(key), reader.get(key)) {
                (Some(w), Some(r)) => self.compare(w, r, &format!("{path}/{key}"), depth + 1),
                (None, r) if !open(r) => self.flag("ITEMS_NARROWED", path, key.to_string()),
                _ => {}
            }
        }
        self.combined(writer, reader, path, depth);
    }

    fn types(&mut self, writer: &Value, reader: &Value, path: &str) {
        let (Some(r), w) = (types(reader), types(writer)) else {
            return;
        };
        let Some(w) = w else {
            return self.flag("TYPE_NARROWED", path, format!("any -> {}", r.join(",")));
        };
        for t in &w {
            let covered = r.contains(t) || (t == "integer" && r.iter().any(|x| x == "number"));
            if !covered {
                let kind = if r.iter().any(|x| w.contains(x)) {
                    "TYPE_NARROWED"
                } else {
                    "TYPE_CHANGED"
                };
                return self.flag(kind, path, format!("{} -> {}", w.join(","), r.join(",")));
            }
        }
    }

    fn bounds(&mut self, writer: &Value, reader: &Value, path: &str) {
        let uppers = [
            "maxLength",
            "maximum",
            "exclusiveMaximum",
            "maxItems",
            "maxProperties",
        ];
        let lowers = [
            "minLength",
            "minimum",
            "exclusiveMinimum",
            "minItems",
            "minProperties",
        ];
        for (keys, tighter) in [(&uppers, true), (&lowers, false)] {
            for key in keys.iter() {
                let Some(r) = number(reader, key) else {
                    continue;
                };
                match number(writer, key) {
                    None => self.flag(&format!("{}_ADDED", screaming(key)), path, format!("{r}")),
                    Some(w) if (tighter && r < w) || (!tighter && r > w) => {
                        let word = if tighter { "DECREASED" } else { "INCREASED" };
                        self.flag(
                            &format!("{}_{word}", screaming(key)),
                            path,
                            format!("{w} -> {r}"),
                        );
                    }
                    Some(_) => {}
                }
            }
        }
        for key in ["pattern", "multipleOf"] {
            match (writer.get(key), reader.get(key)) {
                (_, None) => {}
                (None, Some(r)) => {
                    self.flag(&format!("{}_ADDED", screaming(key)), path, r.to_string())
                }
                (Some(w), Some(r)) if w != r => self.flag(
                    &format!("{}_CHANGED", screaming(key)),
                    path,
                    format!("{w} -> {r}"),
                ),
                _ => {}
            }
        }
        if reader.get("uniqueItems") == Some(&Value::Bool(true))
            && writer.get("uniqueItems") != Some(&Value::Bool(true))
        {
            self.flag("UNIQUE_ITEMS_ADDED", path, String::new());
        }
    }

    fn enums(&mut self, writer: &Value, reader: &Value, path: &str) {
        let Some(Value::Array(r)) = reader.get("enum") else {
            return;
        };
        match writer.get("enum") {
            Some(Value::Array(w)) if w.iter().all(|v| r.contains(v)) => {}
            Some(Value::Array(_)) => self.flag("ENUM_ARRAY_NARROWED", path, String::new()),
            _ => self.flag("ENUM_ARRAY_ADDED", path, String::new()),
        }
    }

    fn object(&mut self, writer: &Value, reader: &Value, path: &str, depth: usize) {
        let empty = Map::new();
        let wp = writer
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let rp = reader
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let (w_extra, r_extra) = (
            writer.get("additionalProperties"),
            reader.get("additionalProperties"),
        );
        for (name, r) in rp {
            let at = format!("{path}/properties/{name}");
            match wp.get(name) {
                Some(w) => self.compare(w, r, &at, depth + 1),
                // The writer may have written anything under it when its model was open.
                None if open(w_extra) && !open(Some(r)) => {
                    self.flag("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", &at, String::new())
                }
                None => {
                    if let Some(w_extra) = w_extra.filter(|w| w.is_object()) {
                        self.compare(w_extra, r, &at, depth + 1);
                    }
                }
            }
        }
        for (name, w) in wp {
            if rp.contains_key(name) {
                continue;
            }
            let at = format!("{path}/properties/{name}");
            match r_extra {
                Some(Value::Bool(false)) => self.flag(
                    "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
                    &at,
                    String::new(),
                ),
                Some(extra) if extra.is_object() && !open(Some(extra)) => {
                    self.compare(w, extra, &at, depth + 1)
                }
                _ => {}
            }
        }
        if !open(r_extra) && open(w_extra) {
            self.flag("ADDITIONAL_PROPERTIES_NARROWED", path, String::new());
        } else if let (Some(w), Some(r)) = (w_extra, r_extra) {
            if w.is_object() && r.is_object() {
                self.compare(w, r, &format!("{path}/additionalProperties"), depth + 1);
            }
        }
        let required = |s: &Value| -> Vec<String> {
            s.get("required")
                .and_then(Value::as_array)
                .map_or_else(Vec::new, |a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
        };
        let (w_req, r_req) = (required(writer), required(reader));
        for name in r_req.iter().filter(|n| !w_req.contains(n)) {
            self.flag(
                "REQUIRED_ATTRIBUTE_ADDED",
                &format!("{path}/properties/{name}"),
                String::new(),
            );
        }
    }

    fn combined(&mut self, writer: &Value, reader: &Value, path: &str, depth: usize) {
        for key in ["oneOf", "anyOf", "allOf"] {
            let (w, r) = (
                writer.get(key).and_then(Value::as_array),
                reader.get(key).and_then(Value::as_array),
            );
            match (w, r) {
                (Some(w), Some(r)) => {
                    if key == "allOf" && r.len() > w.len() {
                        self.flag(
                            "PRODUCT_TYPE_EXTENDED",
                            path,
                            format!("{} -> {}", w.len(), r.len()),
                        );
                    } else if key != "allOf" && r.len() < w.len() {
                        self.flag(
                            "SUM_TYPE_NARROWED",
                            path,
                            format!("{} -> {}", w.len(), r.len()),
                        );
                    }
                    for (i, (ws, rs)) in w.iter().zip(r).enumerate() {
                        self.compare(ws, rs, &format!("{path}/{key}/{i}"), depth + 1);
                    }
                }
                (None, Some(_)) => self.flag("COMBINED_TYPE_ADDED", path, key.to_string()),
                _ => {}
            }
        }
    }
}

/// `maxLength` -> `MAX_LENGTH`.
fn screaming(key: &str) -> String {
    let mut out = String::new();
    for c in key.chars() {
        if c.is_uppercase() {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}
