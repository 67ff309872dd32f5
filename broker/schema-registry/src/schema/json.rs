//! JSON Schemas: parsed by `serde_json`, checked and compiled by the `jsonschema` crate (the
//! draft `$schema` names, draft 7 by default as Confluent; references to other subjects given
//! as in-memory resources, nothing ever fetched), canonical as keys sorted without whitespace,
//! and compared by Confluent's JSON Schema rules (see [`JsonSchema::incompatibilities_reading`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use jsonschema::{Draft, Validator};
use serde_json::{Map, Value};

use super::{Dependency, InvalidPayload, InvalidSchema, DEPTH_MAX};

/// A JSON Schema with its references, compiled for validation.
#[derive(Clone)]
pub struct JsonSchema {
    side: Arc<Side>,
    validator: Arc<Validator>,
}

impl std::fmt::Debug for JsonSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonSchema")
            .field("schema", &self.side.main.value)
            .field("references", &self.side.deps.len())
            .finish_non_exhaustive()
    }
}

impl JsonSchema {
    /// Parses `text` (an object or boolean schema) and compiles it with its `dependencies`,
    /// each the target of `$ref`s naming it.
    pub fn parse(text: &str, dependencies: &[Dependency]) -> Result<JsonSchema, InvalidSchema> {
        let main = Doc::parse("", text)?;
        let deps = dependencies
            .iter()
            .map(|d| Doc::parse(&d.name, &d.schema))
            .collect::<Result<Vec<_>, _>>()?;
        let side = Side { main, deps };
        let validator = side.compile()?;
        Ok(JsonSchema {
            side: Arc::new(side),
            validator: Arc::new(validator),
        })
    }

    /// The schema with object keys sorted recursively, without whitespace.
    pub fn canonical(&self) -> String {
        // Keys were sorted at parse (whether or not serde_json preserves order).
        self.side.main.value.to_string()
    }

    /// Why data valid under `writer` may be invalid under `self`, by Confluent's rules (its
    /// `SchemaDiff` of json-schema-provider, strict policy): the schemas are read into the model
    /// those rules are written for (everit's: a `type` array is an `anyOf`, several kinds of
    /// keywords side by side an implicit `allOf`, `$ref`s followed, locally and into the
    /// references), then compared pairwise with the same difference names. Covered: types
    /// (TYPE_CHANGED, TYPE_NARROWED; integer to number widens), string, number, object and array
    /// bounds added or tightened, PATTERN_*, MULTIPLE_OF_*, ENUM_ARRAY_* and `const`,
    /// REQUIRED_ATTRIBUTE_ADDED (unless a default), properties added or removed under open,
    /// closed and partially open (`additionalProperties` or `patternProperties` schema) content
    /// models, ADDITIONAL_/UNEVALUATED_PROPERTIES_* and _ITEMS_*, `dependencies`, tuple items,
    /// UNIQUE_ITEMS_ADDED, `not`, and combined schemas (criterion changes, SUM/PRODUCT_TYPE_*,
    /// subschemas matched pairwise, COMBINED_TYPE_SUBSCHEMAS_CHANGED), to a fixed point over
    /// recursive schemas. Not compared, as in Confluent: annotations, `format`, `contains`,
    /// `propertyNames`, draft 4's boolean `exclusiveMaximum`/`Minimum`. Stricter than Confluent,
    /// to stay safe: any change to `if`/`then`/`else` is reported, and so is a `$ref` this
    /// model cannot follow (an `$id` nested in a document) or a comparison too large to finish
    /// (more than STEPS_MAX pairs); `$dynamicRef`/`$recursiveRef` are followed statically.
    pub fn incompatibilities_reading(&self, writer: &JsonSchema) -> Vec<String> {
        let mut model = Model::default();
        let w = model.schema(writer.side.main.scope(&writer.side));
        let r = model.schema(self.side.main.scope(&self.side));
        let mut judge = Judge::new(&model);
        let diffs = judge.fixpoint(w, r);
        let mut out: Vec<String> = diffs.iter().map(Diff::render).collect();
        // An unfinished comparison may have judged a union by a branch it did not finish.
        if judge.steps >= STEPS_MAX && !out.iter().any(|d| d.starts_with(TOO_COMPLEX)) {
            out.push(format!(
                "{TOO_COMPLEX}: #/ more than {STEPS_MAX} comparisons"
            ));
        }
        out
    }

    /// The schema document itself (keys sorted).
    pub fn document(&self) -> &Value {
        &self.side.main.value
    }

    /// Checks that `payload` (UTF-8 JSON text) is valid under the schema.
    pub fn validate(&self, payload: &[u8]) -> Result<(), InvalidPayload> {
        // serde_json refuses nesting past 128 levels, so parsing cannot exhaust the stack.
        let instance: Value = serde_json::from_slice(payload)
            .map_err(|e| InvalidPayload(format!("payload is not JSON: {e}")))?;
        if depth(&instance) > DEPTH_MAX {
            return Err(InvalidPayload(format!(
                "JSON payload nested deeper than {DEPTH_MAX}"
            )));
        }
        self.validator.validate(&instance).map_err(|e| {
            InvalidPayload(format!(
                "payload does not match the schema at #{}: {e}",
                e.instance_path.as_str()
            ))
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing and compiling.

/// A schema document: the schema itself (name "") or one of its references.
#[derive(Debug)]
struct Doc {
    name: String,
    value: Value,
    draft: Draft,
}

/// A schema and its references.
#[derive(Debug)]
struct Side {
    main: Doc,
    deps: Vec<Doc>,
}

/// Refuses every retrieval: a `$ref` resolves within the given documents or not at all.
struct Offline;

impl jsonschema::Retrieve for Offline {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("{} is not among the schema's references", uri.as_str()).into())
    }
}

impl Doc {
    fn parse(name: &str, text: &str) -> Result<Doc, InvalidSchema> {
        let what = if name.is_empty() {
            "JSON Schema".to_string()
        } else {
            format!("JSON Schema reference {name}")
        };
        let value: Value = serde_json::from_str(text)
            .map_err(|e| InvalidSchema(format!("{what} is not JSON: {e}")))?;
        if !value.is_object() && !value.is_boolean() {
            return Err(InvalidSchema(format!(
                "{what} is neither an object nor a boolean"
            )));
        }
        if depth(&value) > DEPTH_MAX {
            return Err(InvalidSchema(format!(
                "{what} nested deeper than {DEPTH_MAX}"
            )));
        }
        let draft = draft_of(&value);
        Ok(Doc {
            name: name.to_string(),
            value: sorted(value),
            draft,
        })
    }

    /// The document's own `$id` (`id` in draft 4), without an empty fragment.
    fn id(&self) -> Option<&str> {
        let id = self.value.get("$id").or_else(|| self.value.get("id"));
        id.and_then(Value::as_str).map(|s| s.trim_end_matches('#'))
    }

    fn scope<'a>(&'a self, side: &'a Side) -> Scope<'a> {
        Scope {
            side,
            root: &self.value,
            modern: matches!(self.draft, Draft::Draft201909 | Draft::Draft202012),
            depth: 0,
        }
    }
}

impl Side {
    fn compile(&self) -> Result<Validator, InvalidSchema> {
        let mut options = jsonschema::options()
            .with_draft(self.main.draft)
            .with_retriever(Offline);
        for dep in &self.deps {
            for uri in self.uris(dep) {
                let resource = dep.draft.create_resource(dep.value.clone());
                options = options.with_resource(uri, resource);
            }
        }
        options
            .build(&self.main.value)
            .map_err(|e| InvalidSchema(format!("invalid JSON Schema: {e}")))
    }

    /// The names `dep` answers to: its own, and that resolved against the schema's `$id`
    /// (a relative `$ref` in a schema with an absolute `$id` means the latter).
    fn uris(&self, dep: &Doc) -> Vec<String> {
        let mut uris = vec![dep.name.clone()];
        uris.extend(joined(self.main.id(), &dep.name));
        uris
    }

    /// The document a `$ref`'s URI part names.
    fn document(&self, base: &str) -> Option<&Doc> {
        std::iter::once(&self.main).chain(&self.deps).find(|doc| {
            let mut names: Vec<&str> = vec![doc.name.as_str()];
            names.extend(doc.id());
            let joined = joined(self.main.id(), &doc.name);
            names.extend(joined.as_deref());
            names.iter().any(|name| same_document(name, base))
        })
    }
}

fn same_document(name: &str, base: &str) -> bool {
    !name.is_empty()
        && (name == base
            || name.ends_with(&format!("/{base}"))
            || base.ends_with(&format!("/{name}")))
}

/// `name` resolved against the absolute URI `base`, when `name` is relative.
fn joined(base: Option<&str>, name: &str) -> Option<String> {
    let base = base.filter(|b| b.contains("://"))?;
    if name.is_empty() || name.contains(':') || name.starts_with('/') {
        return None;
    }
    let dir = &base[..base.rfind('/')? + 1];
    Some(format!("{dir}{name}"))
}

/// The draft `$schema` names; draft 7 when it names none, as Confluent.
fn draft_of(value: &Value) -> Draft {
    let uri = value.get("$schema").and_then(Value::as_str).unwrap_or("");
    if uri.contains("draft-04") {
        Draft::Draft4
    } else if uri.contains("draft-06") {
        Draft::Draft6
    } else if uri.contains("2019-09") {
        Draft::Draft201909
    } else if uri.contains("2020-12") {
        Draft::Draft202012
    } else {
        Draft::Draft7
    }
}

/// Nesting of arrays and objects; recursion is safe as serde_json parses at most 128 levels.
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// `value` with every object's keys inserted in order, so it prints sorted even if
/// serde_json's `preserve_order` is on somewhere in the build.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

// ---------------------------------------------------------------------------------------------
// The model Confluent's rules are written against (everit's schema classes).

type Id = usize;

/// Deeper schemas (nesting plus `$ref` hops) are not modelled, and so reported.
const NEST_MAX: usize = 2 * DEPTH_MAX;

/// The most schema pairs one check compares; beyond, the check reports incompatible.
const STEPS_MAX: usize = 100_000;

const TOO_COMPLEX: &str = "TOO_COMPLEX_TO_COMPARE";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Criterion {
    All,
    Any,
    One,
}

impl Criterion {
    fn name(self) -> &'static str {
        match self {
            Criterion::All => "allOf",
            Criterion::Any => "anyOf",
            Criterion::One => "oneOf",
        }
    }
}

/// `additionalProperties` / `additionalItems`: absent or `true`, `false`, or a schema.
#[derive(Clone, Copy)]
enum Extra {
    Open,
    Closed,
    Schema(Id),
}

impl Extra {
    fn permits(self) -> bool {
        !matches!(self, Extra::Closed)
    }

    fn schema(self) -> Option<Id> {
        match self {
            Extra::Schema(id) => Some(id),
            _ => None,
        }
    }
}

struct Record<'a> {
    map: &'a Map<String, Value>,
    properties: BTreeMap<&'a str, Id>,
    required: BTreeSet<&'a str>,
    patterns: Vec<(&'a str, Id)>,
    additional: Extra,
    unevaluated: Option<Id>,
    dependency_arrays: BTreeMap<&'a str, BTreeSet<&'a str>>,
    dependency_schemas: BTreeMap<&'a str, Id>,
}

struct List<'a> {
    map: &'a Map<String, Value>,
    all_items: Option<Id>,
    tuple: Vec<Id>,
    additional: Extra,
    unevaluated: Option<Id>,
}

enum Node<'a> {
    /// A `$ref` (or a schema being built): stands for its target.
    Ref(Id),
    /// `true`, `{}` or annotations only: anything is valid.
    Empty,
    False,
    Unresolved(String),
    Combined(Criterion, Vec<Id>),
    Not(Id),
    /// `if`/`then`/`else`, compared as JSON text (Confluent does not compare them).
    Conditional(&'a Map<String, Value>),
    Enum(&'a [Value]),
    Const(&'a Value),
    String(&'a Map<String, Value>),
    /// The keywords, and whether `integer`.
    Number(&'a Map<String, Value>, bool),
    Boolean,
    Null,
    Object(Box<Record<'a>>),
    Array(Box<List<'a>>),
}

impl Node<'_> {
    fn name(&self) -> String {
        match self {
            Node::Ref(_) | Node::Unresolved(_) => "unresolved $ref".into(),
            Node::Empty => "any".into(),
            Node::False => "false".into(),
            Node::Combined(c, _) => c.name().into(),
            Node::Not(_) => "not".into(),
            Node::Conditional(_) => "if/then/else".into(),
            Node::Enum(_) => "enum".into(),
            Node::Const(_) => "const".into(),
            Node::String(_) => "string".into(),
            Node::Number(_, true) => "integer".into(),
            Node::Number(_, false) => "number".into(),
            Node::Boolean => "boolean".into(),
            Node::Null => "null".into(),
            Node::Object(_) => "object".into(),
            Node::Array(_) => "array".into(),
        }
    }
}

/// Where a schema value sits: its document (for local `$ref`s and the draft), the documents
/// of its side (for `$ref`s into references), and how deep (nesting plus `$ref` hops).
#[derive(Clone, Copy)]
struct Scope<'a> {
    side: &'a Side,
    root: &'a Value,
    modern: bool,
    depth: usize,
}

impl Scope<'_> {
    fn deeper(self) -> Self {
        Scope {
            depth: self.depth + 1,
            ..self
        }
    }
}

/// Keywords that give a schema without `type` a kind, as everit sniffs them.
#[rustfmt::skip]
const SNIFFED: [(&str, &[&str]); 4] = [
    ("object", &["properties", "required", "minProperties", "maxProperties", "dependencies",
        "dependentRequired", "dependentSchemas", "patternProperties", "additionalProperties",
        "unevaluatedProperties", "propertyNames"]),
    ("array", &["items", "prefixItems", "additionalItems", "unevaluatedItems", "minItems",
        "maxItems", "uniqueItems", "contains", "minContains", "maxContains"]),
    ("number", &["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]),
    ("string", &["minLength", "maxLength", "pattern", "format"]),
];

/// Both sides' schemas as one graph (so `not` can compare them the other way round).
#[derive(Default)]
struct Model<'a> {
    nodes: Vec<Node<'a>>,
    /// The JSON each node was read from (none for the parts of a `type` array).
    sources: Vec<Option<&'a Value>>,
    built: HashMap<*const Value, Id>,
}

impl<'a> Model<'a> {
    fn add(&mut self, node: Node<'a>, source: Option<&'a Value>) -> Id {
        self.nodes.push(node);
        self.sources.push(source);
        self.nodes.len() - 1
    }

    /// The root schema of `scope`.
    fn schema(&mut self, scope: Scope<'a>) -> Id {
        self.build(scope, scope.root)
    }

    /// The node of `value`, each JSON value read once (so recursive `$ref`s close a cycle).
    fn build(&mut self, scope: Scope<'a>, value: &'a Value) -> Id {
        let key: *const Value = value;
        if let Some(&id) = self.built.get(&key) {
            return id;
        }
        let id = self.add(Node::Ref(usize::MAX), Some(value));
        self.built.insert(key, id);
        let node = if scope.depth > NEST_MAX {
            Node::Unresolved(format!("schema nested deeper than {NEST_MAX}"))
        } else {
            self.shape(scope, value)
        };
        if let Some(slot) = self.nodes.get_mut(id) {
            *slot = node;
        }
        id
    }

    fn shape(&mut self, scope: Scope<'a>, value: &'a Value) -> Node<'a> {
        let map = match value {
            Value::Bool(true) => return Node::Empty,
            Value::Bool(false) => return Node::False,
            Value::Object(map) => map,
            _ => return Node::Unresolved("a schema that is not an object".into()),
        };
        // Dynamic references are resolved statically, to the anchor of their document.
        let keyword = ["$ref", "$dynamicRef", "$recursiveRef"];
        let reference = match keyword.iter().find_map(|k| map.get(*k)) {
            Some(Value::String(r)) => Some(self.reference(scope, r)),
            _ => None,
        };
        // Before 2019-09 a `$ref`'s siblings are ignored.
        if let (Some(target), false) = (reference, scope.modern) {
            return Node::Ref(target);
        }
        let mut parts = self.parts(scope, map);
        if let Some(target) = reference {
            if parts.is_empty() {
                return Node::Ref(target);
            }
            parts.insert(0, Node::Ref(target));
        }
        match parts.len() {
            0 => Node::Empty,
            1 => parts.pop().unwrap_or(Node::Empty),
            _ => {
                let ids = parts.into_iter().map(|n| self.add(n, None)).collect();
                Node::Combined(Criterion::All, ids)
            }
        }
    }

    fn reference(&mut self, scope: Scope<'a>, reference: &str) -> Id {
        match resolve(scope, reference) {
            Some((target_scope, target)) => self.build(target_scope, target),
            None => self.add(Node::Unresolved(reference.to_string()), None),
        }
    }

    /// The kinds of schema `map`'s keywords make (everit's extractors, in their order).
    fn parts(&mut self, scope: Scope<'a>, map: &'a Map<String, Value>) -> Vec<Node<'a>> {
        let mut parts = Vec::new();
        if let Some(Value::Array(values)) = map.get("enum") {
            parts.push(Node::Enum(values));
        }
        if let Some(value) = map.get("const") {
            parts.push(Node::Const(value));
        }
        for (key, criterion) in [
            ("allOf", Criterion::All),
            ("anyOf", Criterion::Any),
            ("oneOf", Criterion::One),
        ] {
            if let Some(Value::Array(subs)) = map.get(key) {
                let ids = subs.iter().map(|s| self.build(scope.deeper(), s)).collect();
                parts.push(Node::Combined(criterion, ids));
            }
        }
        if let Some(not) = map.get("not") {
            parts.push(Node::Not(self.build(scope.deeper(), not)));
        }
        if map.contains_key("if") {
            parts.push(Node::Conditional(map));
        }
        self.types(scope, map, &mut parts);
        parts
    }

    /// The type-specific part: `type` names it (an array of names is an `anyOf`), else the
    /// keywords present do.
    fn types(&mut self, scope: Scope<'a>, map: &'a Map<String, Value>, parts: &mut Vec<Node<'a>>) {
        match map.get("type") {
            Some(Value::String(name)) => parts.push(self.typed(scope, map, name)),
            Some(Value::Array(names)) => {
                let mut ids = Vec::new();
                for name in names.iter().filter_map(Value::as_str) {
                    let node = self.typed(scope, map, name);
                    ids.push(self.add(node, None));
                }
                parts.push(Node::Combined(Criterion::Any, ids));
            }
            _ => {
                for (name, keys) in SNIFFED {
                    if keys.iter().any(|k| map.contains_key(*k)) {
                        parts.push(self.typed(scope, map, name));
                    }
                }
            }
        }
    }

    fn typed(&mut self, scope: Scope<'a>, map: &'a Map<String, Value>, name: &str) -> Node<'a> {
        match name {
            "string" => Node::String(map),
            "integer" => Node::Number(map, true),
            "number" => Node::Number(map, false),
            "boolean" => Node::Boolean,
            "null" => Node::Null,
            "object" => Node::Object(Box::new(self.record(scope, map))),
            "array" => Node::Array(Box::new(self.list(scope, map))),
            _ => Node::Empty,
        }
    }

    fn record(&mut self, scope: Scope<'a>, map: &'a Map<String, Value>) -> Record<'a> {
        let (arrays, schemas) = self.dependencies(scope, map);
        Record {
            map,
            properties: self.schemas(scope, map.get("properties")),
            required: match map.get("required") {
                Some(Value::Array(names)) => strings(names),
                _ => BTreeSet::new(),
            },
            patterns: self
                .schemas(scope, map.get("patternProperties"))
                .into_iter()
                .collect(),
            additional: self.extra(scope, map.get("additionalProperties")),
            unevaluated: self.optional(scope, map.get("unevaluatedProperties")),
            dependency_arrays: arrays,
            dependency_schemas: schemas,
        }
    }

    /// `dependencies` (and 2019-09's `dependentRequired`, `dependentSchemas`): property names
    /// required, and schemas applied, when a property is present.
    #[allow(clippy::type_complexity)]
    fn dependencies(
        &mut self,
        scope: Scope<'a>,
        map: &'a Map<String, Value>,
    ) -> (BTreeMap<&'a str, BTreeSet<&'a str>>, BTreeMap<&'a str, Id>) {
        let (mut arrays, mut schemas) = (BTreeMap::new(), BTreeMap::new());
        for key in ["dependencies", "dependentRequired", "dependentSchemas"] {
            let entries = map
                .get(key)
                .and_then(Value::as_object)
                .into_iter()
                .flatten();
            for (name, value) in entries {
                if let Value::Array(names) = value {
                    arrays.insert(name.as_str(), strings(names));
                } else {
                    schemas.insert(name.as_str(), self.build(scope.deeper(), value));
                }
            }
        }
        (arrays, schemas)
    }

    fn list(&mut self, scope: Scope<'a>, map: &'a Map<String, Value>) -> List<'a> {
        let prefix = map.get("prefixItems").filter(|_| scope.modern);
        let (all_items, tuple, additional) = match (prefix, map.get("items")) {
            // 2020-12: `items` after `prefixItems` is what `additionalItems` was.
            (Some(Value::Array(tuple)), items) => (None, tuple.as_slice(), items),
            (_, Some(Value::Array(tuple))) => (None, tuple.as_slice(), map.get("additionalItems")),
            (_, items) => (items, [].as_slice(), map.get("additionalItems")),
        };
        List {
            map,
            all_items: self.optional(scope, all_items),
            tuple: tuple
                .iter()
                .map(|s| self.build(scope.deeper(), s))
                .collect(),
            additional: self.extra(scope, additional),
            unevaluated: self.optional(scope, map.get("unevaluatedItems")),
        }
    }

    fn schemas(&mut self, scope: Scope<'a>, map: Option<&'a Value>) -> BTreeMap<&'a str, Id> {
        let entries = map.and_then(Value::as_object).into_iter().flatten();
        entries
            .map(|(name, s)| (name.as_str(), self.build(scope.deeper(), s)))
            .collect()
    }

    fn optional(&mut self, scope: Scope<'a>, value: Option<&'a Value>) -> Option<Id> {
        value.map(|v| self.build(scope.deeper(), v))
    }

    fn extra(&mut self, scope: Scope<'a>, value: Option<&'a Value>) -> Extra {
        match value {
            None | Some(Value::Bool(true)) => Extra::Open,
            Some(Value::Bool(false)) => Extra::Closed,
            Some(v) => Extra::Schema(self.build(scope.deeper(), v)),
        }
    }

    /// `id` with `$ref`s followed (a cycle of bare `$ref`s stays a `Ref`).
    fn target(&self, mut id: Id) -> Id {
        for _ in 0..=NEST_MAX {
            match self.nodes.get(id) {
                Some(Node::Ref(next)) if *next < self.nodes.len() => id = *next,
                _ => return id,
            }
        }
        id
    }

    fn node(&self, id: Id) -> &Node<'a> {
        self.nodes.get(self.target(id)).unwrap_or(&Node::Empty)
    }

    fn source(&self, id: Id) -> Option<&'a Value> {
        self.sources.get(self.target(id)).copied().flatten()
    }
}

fn strings(values: &[Value]) -> BTreeSet<&str> {
    values.iter().filter_map(Value::as_str).collect()
}

/// The value a `$ref` names: `#/json/pointer` or `#anchor` in its document, or in the
/// reference (or the schema) whose name or `$id` the URI part matches. `$id`s nested inside a
/// document do not change the base (such `$ref`s stay unresolved).
fn resolve<'a>(scope: Scope<'a>, reference: &str) -> Option<(Scope<'a>, &'a Value)> {
    let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
    let scope = if base.is_empty() {
        scope.deeper()
    } else {
        let document = scope.side.document(base)?.scope(scope.side);
        Scope {
            depth: scope.depth + 1,
            ..document
        }
    };
    let pointer = percent_encoding::percent_decode_str(fragment)
        .decode_utf8()
        .ok()?;
    if pointer.is_empty() {
        return Some((scope, scope.root));
    }
    let target = if pointer.starts_with('/') {
        scope.root.pointer(&pointer)
    } else {
        anchor(scope.root, &pointer)
    };
    target.map(|target| (scope, target))
}

/// The schema declaring anchor `name` (`$anchor`, `$dynamicAnchor`, or an `$id` / `id` of
/// `#name` before 2019-09). Recursion is bounded by the parsed depth.
fn anchor<'a>(value: &'a Value, name: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => {
            let declares = |k: &str, v: &str| map.get(k).and_then(Value::as_str) == Some(v);
            let legacy = format!("#{name}");
            let found = declares("$anchor", name)
                || declares("$dynamicAnchor", name)
                || declares("$id", &legacy)
                || declares("id", &legacy);
            if found {
                return Some(value);
            }
            map.values().find_map(|v| anchor(v, name))
        }
        Value::Array(items) => items.iter().find_map(|v| anchor(v, name)),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// The comparison: Confluent's SchemaDiff, keeping only the differences its strict policy
// counts as incompatible (a comparison is compatible when it keeps none).

/// An incompatible difference, its path relative to the pair of schemas compared.
#[derive(Clone)]
struct Diff {
    kind: String,
    path: String,
    detail: String,
}

impl Diff {
    fn new(kind: impl Into<String>, path: impl Into<String>, detail: impl Into<String>) -> Diff {
        Diff {
            kind: kind.into(),
            path: path.into(),
            detail: detail.into(),
        }
    }

    fn render(&self) -> String {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        let text = format!("{}: #{} {}", self.kind, path, self.detail);
        text.trim_end().to_string()
    }
}

/// Appends `diffs` found at `path` below the current pair.
fn nest(out: &mut Vec<Diff>, path: &str, diffs: &[Diff]) {
    out.extend(diffs.iter().map(|d| Diff {
        path: format!("{path}{}", d.path),
        ..d.clone()
    }));
}

struct Judge<'m, 'a> {
    model: &'m Model<'a>,
    /// Each pair compared once, as Confluent memoizes (combined schemas compare pairwise).
    memo: HashMap<(Id, Id), Rc<Vec<Diff>>>,
    /// Pairs being compared: met again, a recursive schema is judged by its other paths.
    active: HashSet<(Id, Id)>,
    /// Pairs an earlier pass found incompatible, so judged when met again on a cycle.
    seed: HashMap<(Id, Id), Rc<Vec<Diff>>>,
    /// Whether a pass assumed a pair met again on a cycle compatible.
    assumed: bool,
    steps: usize,
    patterns: HashMap<&'a str, Option<Validator>>,
}

impl<'m, 'a> Judge<'m, 'a> {
    fn new(model: &'m Model<'a>) -> Self {
        Judge {
            model,
            memo: HashMap::new(),
            active: HashSet::new(),
            seed: HashMap::new(),
            assumed: false,
            steps: 0,
            patterns: HashMap::new(),
        }
    }

    /// Confluent's greatest fixed point: a pass assumes a pair met again on a cycle compatible,
    /// which a memoized result may then wrongly rest on; the pairs a pass finds incompatible are
    /// known so in the next, until a pass finds no new one.
    fn fixpoint(&mut self, w: Id, r: Id) -> Rc<Vec<Diff>> {
        loop {
            let diffs = self.compare(w, r);
            if !self.assumed || self.steps >= STEPS_MAX {
                return diffs;
            }
            let found: Vec<_> = (self.memo.iter())
                .filter(|(pair, d)| !d.is_empty() && !self.seed.contains_key(*pair))
                .map(|(pair, d)| (*pair, Rc::clone(d)))
                .collect();
            if found.is_empty() {
                return diffs;
            }
            self.seed.extend(found);
            self.memo.clear();
            self.assumed = false;
        }
    }

    fn compare(&mut self, w: Id, r: Id) -> Rc<Vec<Diff>> {
        let (w, r) = (self.model.target(w), self.model.target(r));
        if w == r {
            return Rc::default();
        }
        if let Some(done) = self.memo.get(&(w, r)) {
            return Rc::clone(done);
        }
        if self.steps >= STEPS_MAX || self.active.len() >= NEST_MAX {
            self.steps = STEPS_MAX;
            let why = format!("more than {STEPS_MAX} comparisons or {NEST_MAX} levels");
            return Rc::new(vec![Diff::new(TOO_COMPLEX, "", why)]);
        }
        if !self.active.insert((w, r)) {
            if let Some(known) = self.seed.get(&(w, r)) {
                return Rc::clone(known);
            }
            self.assumed = true;
            return Rc::default();
        }
        self.steps += 1;
        let diffs = Rc::new(self.compare_types(w, r));
        self.active.remove(&(w, r));
        self.memo.insert((w, r), Rc::clone(&diffs));
        diffs
    }

    fn compatible(&mut self, w: Id, r: Id) -> bool {
        self.compare(w, r).is_empty()
    }

    fn compare_types(&mut self, w: Id, r: Id) -> Vec<Diff> {
        if self.union_member(w, r) {
            return Vec::new();
        }
        let model = self.model;
        let (wn, rn) = (model.node(w), model.node(r));
        if let Some(diffs) = unresolved(wn, rn) {
            return diffs;
        }
        if std::mem::discriminant(wn) != std::mem::discriminant(rn) {
            // Nothing to read (false) or anything readable (empty schema).
            if matches!(wn, Node::False) || matches!(rn, Node::Empty) {
                return Vec::new();
            }
            // Kafka Connect writes decimals as either; Confluent lets them change.
            let bytes = |id| model.source(id).and_then(|v| v.get("connect.type"));
            if bytes(w) == Some(&Value::from("bytes")) && bytes(r) == bytes(w) {
                return Vec::new();
            }
            let detail = format!("{} -> {}", wn.name(), rn.name());
            return vec![Diff::new("TYPE_CHANGED", "", detail)];
        }
        match (wn, rn) {
            (Node::String(a), Node::String(b)) => text(a, b),
            (Node::Number(a, ai), Node::Number(b, bi)) => numeric(a, *ai, b, *bi),
            (Node::Const(a), Node::Const(b)) if a != b => {
                vec![Diff::new(
                    "ENUM_ARRAY_CHANGED",
                    "/const",
                    format!("{a} -> {b}"),
                )]
            }
            (Node::Enum(a), Node::Enum(b)) => enums(a, b),
            (Node::Combined(ac, a), Node::Combined(bc, b)) => self.combined(*ac, a, *bc, b),
            (Node::Not(a), Node::Not(b)) => self.not(*a, *b),
            (Node::Conditional(a), Node::Conditional(b)) => conditional(a, b),
            (Node::Object(a), Node::Object(b)) => self.object(a, b),
            (Node::Array(a), Node::Array(b)) => self.array(a, b),
            _ => Vec::new(),
        }
    }

    /// Confluent's special cases of a combined schema on one side only: the writer fits one
    /// branch of the reader's union (SUM_TYPE_EXTENDED), or one part of its own `allOf` fits
    /// the reader (PRODUCT_TYPE_NARROWED), or a single-branch combination is its branch.
    fn union_member(&mut self, w: Id, r: Id) -> bool {
        let model = self.model;
        match (model.node(w), model.node(r)) {
            (Node::Combined(..), Node::Combined(..)) => false,
            (_, Node::Combined(c, subs)) if subs.len() == 1 || *c != Criterion::All => {
                subs.iter().any(|&s| self.compatible(w, s))
            }
            (Node::Combined(c, subs), _) if subs.len() == 1 || *c == Criterion::All => {
                subs.iter().any(|&s| self.compatible(s, r))
            }
            _ => false,
        }
    }

    fn combined(&mut self, wc: Criterion, ws: &[Id], rc: Criterion, rs: &[Id]) -> Vec<Diff> {
        let single = (ws.len() == 1, rs.len() == 1);
        let extended = rc == Criterion::Any
            || single == (true, true)
            || (single.0 && rc == Criterion::One)
            || (single.1 && wc == Criterion::All);
        if wc != rc && !extended {
            let detail = format!("{} -> {}", wc.name(), rc.name());
            return vec![Diff::new("COMBINED_TYPE_CHANGED", "", detail)];
        }
        let (ws, rs) = (self.distinct(ws), self.distinct(rs));
        let mut out = Vec::new();
        let sizes = format!("{} -> {} subschemas", ws.len(), rs.len());
        if ws.len() < rs.len() && rc == Criterion::All {
            out.push(Diff::new("PRODUCT_TYPE_EXTENDED", "", sizes));
        } else if ws.len() > rs.len() && wc != Criterion::All {
            out.push(Diff::new("SUM_TYPE_NARROWED", "", sizes));
        }
        if self.matched(&ws, &rs) < ws.len().min(rs.len()) {
            let detail = format!("{} subschemas without a compatible match", wc.name());
            out.push(Diff::new("COMBINED_TYPE_SUBSCHEMAS_CHANGED", "", detail));
        }
        out
    }

    /// Subschemas with duplicates dropped, as Confluent collects them in a set.
    fn distinct(&self, ids: &[Id]) -> Vec<Id> {
        let mut seen = HashSet::new();
        let model = self.model;
        ids.iter()
            .copied()
            .filter(|&id| model.source(id).is_none_or(|v| seen.insert(v.to_string())))
            .collect()
    }

    /// The size of a maximum matching of writer to reader subschemas along compatible pairs.
    fn matched(&mut self, ws: &[Id], rs: &[Id]) -> usize {
        let mut edges = Vec::with_capacity(ws.len());
        for &w in ws {
            let mut fits = Vec::new();
            for (j, &r) in rs.iter().enumerate() {
                if self.steps >= STEPS_MAX {
                    return 0;
                }
                if self.compatible(w, r) {
                    fits.push(j);
                }
            }
            edges.push(fits);
        }
        let mut owner = vec![None; rs.len()];
        (0..ws.len())
            .filter(|&left| augment(left, &edges, &mut owner, &mut vec![false; rs.len()]))
            .count()
    }

    /// `not`: the reader may exclude less than the writer did (compared the other way round).
    fn not(&mut self, w: Id, r: Id) -> Vec<Diff> {
        if self.compatible(r, w) {
            return Vec::new();
        }
        vec![Diff::new("NOT_TYPE_EXTENDED", "/not", "")]
    }
}

/// Kuhn's augmenting path from `left` (depth bounded by the smaller side, at most the square
/// root of STEPS_MAX).
fn augment(
    left: usize,
    edges: &[Vec<usize>],
    owner: &mut [Option<usize>],
    seen: &mut [bool],
) -> bool {
    for &right in edges.get(left).map_or(&[][..], Vec::as_slice) {
        if seen.get(right).copied().unwrap_or(true) {
            continue;
        }
        seen[right] = true;
        let free = match owner[right] {
            None => true,
            Some(other) => augment(other, edges, owner, seen),
        };
        if free {
            owner[right] = Some(left);
            return true;
        }
    }
    false
}

/// What could not be modelled is compatible only with a reader of anything or a writer of
/// nothing: the same `$ref` text may name other schemas in the other version.
fn unresolved(wn: &Node, rn: &Node) -> Option<Vec<Diff>> {
    let why = |n: &Node| match n {
        Node::Unresolved(why) => Some(why.clone()),
        Node::Ref(_) => Some("a cycle of $refs".to_string()),
        _ => None,
    };
    let detail = why(wn).or_else(|| why(rn))?;
    if matches!(rn, Node::Empty) || matches!(wn, Node::False) {
        return Some(Vec::new());
    }
    Some(vec![Diff::new("UNRESOLVED_REFERENCE", "", detail)])
}

/// Stricter than Confluent, which lets conditions change freely.
fn conditional(w: &Map<String, Value>, r: &Map<String, Value>) -> Vec<Diff> {
    let keys = ["if", "then", "else"];
    if keys.iter().all(|k| w.get(*k) == r.get(*k)) {
        return Vec::new();
    }
    vec![Diff::new("CONDITIONAL_CHANGED", "", "if/then/else differ")]
}

fn number(map: &Map<String, Value>, key: &str) -> Option<f64> {
    map.get(key).and_then(Value::as_f64)
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

/// Bounds `(keyword, is an upper bound)`: added, an upper one decreased or a lower one
/// increased loses data; removed or loosened does not.
fn bounds(
    w: &Map<String, Value>,
    r: &Map<String, Value>,
    keys: &[(&str, bool)],
    out: &mut Vec<Diff>,
) {
    for &(key, upper) in keys {
        let Some(rv) = number(r, key) else {
            continue;
        };
        let path = format!("/{key}");
        match number(w, key) {
            None => out.push(Diff::new(
                format!("{}_ADDED", screaming(key)),
                path,
                rv.to_string(),
            )),
            Some(wv) if (upper && rv < wv) || (!upper && rv > wv) => {
                let change = if upper { "DECREASED" } else { "INCREASED" };
                let kind = format!("{}_{change}", screaming(key));
                out.push(Diff::new(kind, path, format!("{wv} -> {rv}")));
            }
            Some(_) => {}
        }
    }
}

fn text(w: &Map<String, Value>, r: &Map<String, Value>) -> Vec<Diff> {
    let mut out = Vec::new();
    bounds(w, r, &[("maxLength", true), ("minLength", false)], &mut out);
    let pattern =
        |m: &Map<String, Value>| m.get("pattern").and_then(Value::as_str).map(str::to_string);
    match (pattern(w), pattern(r)) {
        (None, Some(p)) => out.push(Diff::new("PATTERN_ADDED", "/pattern", p)),
        (Some(a), Some(b)) if a != b => {
            out.push(Diff::new(
                "PATTERN_CHANGED",
                "/pattern",
                format!("{a} -> {b}"),
            ));
        }
        _ => {}
    }
    out
}

fn numeric(
    w: &Map<String, Value>,
    w_integer: bool,
    r: &Map<String, Value>,
    r_integer: bool,
) -> Vec<Diff> {
    let mut out = Vec::new();
    let keys = [
        ("maximum", true),
        ("minimum", false),
        ("exclusiveMaximum", true),
        ("exclusiveMinimum", false),
    ];
    // Draft 4's boolean exclusiveMaximum/Minimum are not numbers: ignored, as by Confluent.
    bounds(w, r, &keys, &mut out);
    out.extend(multiple_of(
        number(w, "multipleOf"),
        number(r, "multipleOf"),
    ));
    if r_integer && !w_integer {
        out.push(Diff::new("TYPE_NARROWED", "", "number -> integer"));
    }
    out
}

/// A reader's `multipleOf` must divide the writer's (MULTIPLE_OF_REDUCED is compatible).
fn multiple_of(w: Option<f64>, r: Option<f64>) -> Option<Diff> {
    let path = "/multipleOf";
    match (w, r) {
        (None, Some(r)) => Some(Diff::new("MULTIPLE_OF_ADDED", path, r.to_string())),
        (Some(w), Some(r)) if w != r => {
            let divides = |a: f64, b: f64| (a / b).is_finite() && (a / b).fract() == 0.0;
            let detail = format!("{w} -> {r}");
            if divides(w, r) {
                None
            } else if divides(r, w) {
                Some(Diff::new("MULTIPLE_OF_EXPANDED", path, detail))
            } else {
                Some(Diff::new("MULTIPLE_OF_CHANGED", path, detail))
            }
        }
        _ => None,
    }
}

fn enums(w: &[Value], r: &[Value]) -> Vec<Diff> {
    // Values by their (sorted-key) text, so large enums compare in n log n.
    let set = |values: &[Value]| values.iter().map(Value::to_string).collect::<BTreeSet<_>>();
    let (w, r) = (set(w), set(r));
    if r.is_superset(&w) {
        return Vec::new();
    }
    let kind = if w.is_superset(&r) {
        "ENUM_ARRAY_NARROWED"
    } else {
        "ENUM_ARRAY_CHANGED"
    };
    let lost: Vec<&str> = w.difference(&r).map(String::as_str).collect();
    vec![Diff::new(
        kind,
        "/enum",
        format!("without {}", lost.join(", ")),
    )]
}

// Objects.
impl<'a> Judge<'_, 'a> {
    fn object(&mut self, w: &Record<'a>, r: &Record<'a>) -> Vec<Diff> {
        let mut out = Vec::new();
        self.required(w, r, &mut out);
        self.properties(w, r, &mut out);
        self.dependencies(w, r, &mut out);
        self.extra("additionalProperties", w.additional, r.additional, &mut out);
        self.unevaluated(
            "unevaluatedProperties",
            w.unevaluated,
            r.unevaluated,
            &mut out,
        );
        let keys = [("maxProperties", true), ("minProperties", false)];
        bounds(w.map, r.map, &keys, &mut out);
        out
    }

    /// Properties of both made required, unless the reader gives a default.
    fn required(&mut self, w: &Record<'a>, r: &Record<'a>, out: &mut Vec<Diff>) {
        for name in w
            .properties
            .keys()
            .filter(|n| r.properties.contains_key(*n))
        {
            if r.required.contains(name) && !w.required.contains(name) && !has_default(r, name) {
                out.push(Diff::new(
                    "REQUIRED_ATTRIBUTE_ADDED",
                    format!("/required/{name}"),
                    "",
                ));
            }
        }
    }

    fn properties(&mut self, w: &Record<'a>, r: &Record<'a>, out: &mut Vec<Diff>) {
        for (name, &wp) in &w.properties {
            let path = format!("/properties/{name}");
            match r.properties.get(name) {
                Some(&rp) => nest(out, &path, &self.compare(wp, rp)),
                None => self.property_removed(name, wp, r, &path, out),
            }
        }
        for (name, &rp) in &r.properties {
            if !w.properties.contains_key(name) {
                let path = format!("/properties/{name}");
                self.property_added(name, rp, w, r, &path, out);
            }
        }
    }

    /// A property the reader no longer names falls to its content model.
    fn property_removed(
        &mut self,
        name: &str,
        wp: Id,
        r: &Record<'a>,
        path: &str,
        out: &mut Vec<Diff>,
    ) {
        if open_record(self.model, r) {
            return;
        }
        match self.partial_record(r, name) {
            Some(s) => self.covered(
                wp,
                s,
                path,
                "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                out,
            ),
            None if matches!(self.model.node(wp), Node::False) => {}
            None => out.push(Diff::new(
                "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
                path,
                "",
            )),
        }
    }

    /// A property the writer did not name: under an open model the writer may have written
    /// anything there, so only an empty schema reads it.
    fn property_added(
        &mut self,
        name: &str,
        rp: Id,
        w: &Record<'a>,
        r: &Record<'a>,
        path: &str,
        out: &mut Vec<Diff>,
    ) {
        let required = r.required.contains(name);
        if open_record(self.model, w) {
            let kind = match (
                matches!(self.model.node(rp), Node::Empty),
                required,
                has_default(r, name),
            ) {
                (true, _, _) => return,
                (_, true, true) => "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
                (_, true, false) => "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
                (_, false, _) => "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
            };
            return out.push(Diff::new(kind, path, ""));
        }
        if let Some(s) = self.partial_record(w, name) {
            self.covered(
                s,
                rp,
                path,
                "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                out,
            );
        }
        if required && !has_default(r, name) {
            out.push(Diff::new(
                "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
                path,
                "",
            ));
        }
    }

    /// Compares a named schema with the content model's schema that covers it on the other side.
    fn covered(&mut self, w: Id, r: Id, path: &str, kind: &str, out: &mut Vec<Diff>) {
        let diffs = self.compare(w, r);
        if !diffs.is_empty() {
            nest(out, path, &diffs);
            out.push(Diff::new(kind, path, ""));
        }
    }

    /// The schema a partially open model gives property `name`: a matching
    /// `patternProperties`, else `additionalProperties`, else `unevaluatedProperties`.
    fn partial_record(&mut self, record: &Record<'a>, name: &str) -> Option<Id> {
        for &(pattern, id) in &record.patterns {
            if self.matches(pattern, name) {
                return Some(id);
            }
        }
        partial(self.model, record.additional, record.unevaluated)
    }

    /// Whether the ECMA 262 `pattern` finds a match in `name` (compiled by `jsonschema`).
    fn matches(&mut self, pattern: &'a str, name: &str) -> bool {
        let validator = self.patterns.entry(pattern).or_insert_with(|| {
            let schema = serde_json::json!({ "pattern": pattern });
            jsonschema::options().build(&schema).ok()
        });
        validator
            .as_ref()
            .is_some_and(|v| v.is_valid(&Value::String(name.to_string())))
    }

    fn dependencies(&mut self, w: &Record<'a>, r: &Record<'a>, out: &mut Vec<Diff>) {
        for (name, rs) in &r.dependency_arrays {
            let path = format!("/dependencies/{name}");
            let kind = match w.dependency_arrays.get(name) {
                None => "DEPENDENCY_ARRAY_ADDED",
                Some(ws) if ws.is_superset(rs) => continue,
                Some(ws) if rs.is_superset(ws) => "DEPENDENCY_ARRAY_EXTENDED",
                Some(_) => "DEPENDENCY_ARRAY_CHANGED",
            };
            out.push(Diff::new(kind, path, ""));
        }
        for (name, &rs) in &r.dependency_schemas {
            let path = format!("/dependencies/{name}");
            match w.dependency_schemas.get(name) {
                None => out.push(Diff::new("DEPENDENCY_SCHEMA_ADDED", path, "")),
                Some(&ws) => nest(out, &path, &self.compare(ws, rs)),
            }
        }
    }

    /// `additionalProperties` / `additionalItems`: closed, or given a schema where there was
    /// none, loses data.
    fn extra(&mut self, key: &str, w: Extra, r: Extra, out: &mut Vec<Diff>) {
        let (path, prefix) = (format!("/{key}"), screaming(key));
        if w.permits() != r.permits() {
            if !r.permits() {
                out.push(Diff::new(format!("{prefix}_REMOVED"), path, ""));
            }
            return;
        }
        match (w.schema(), r.schema()) {
            (None, Some(_)) => out.push(Diff::new(format!("{prefix}_NARROWED"), path, "")),
            (Some(a), Some(b)) => nest(out, &path, &self.compare(a, b)),
            _ => {}
        }
    }

    /// `unevaluatedProperties` / `unevaluatedItems`, by the same rule.
    fn unevaluated(&mut self, key: &str, w: Option<Id>, r: Option<Id>, out: &mut Vec<Diff>) {
        let Some(r) = r else {
            return;
        };
        let (path, prefix) = (format!("/{key}"), screaming(key));
        let model = self.model;
        let is_false = |id: Id| matches!(model.node(id), Node::False);
        let is_empty = |id: Id| matches!(model.node(id), Node::Empty);
        let kind = match w {
            None if is_false(r) => "REMOVED",
            None => "NARROWED",
            Some(w) if is_false(w) && !is_false(r) => return,
            Some(w) if !is_false(w) && is_false(r) => "REMOVED",
            Some(w) if is_empty(w) && !is_empty(r) => "NARROWED",
            Some(w) if !is_empty(w) && is_empty(r) => return,
            Some(w) => return nest(out, &path, &self.compare(w, r)),
        };
        out.push(Diff::new(format!("{prefix}_{kind}"), path, ""));
    }
}

fn has_default(record: &Record, name: &str) -> bool {
    let property = record.map.get("properties").and_then(|p| p.get(name));
    property.is_some_and(|p| p.get("default").is_some())
}

/// Open: `additionalProperties` absent or `true`, no `patternProperties`, and
/// `unevaluatedProperties` absent or `true`.
fn open_record(model: &Model, record: &Record) -> bool {
    record.patterns.is_empty() && open(model, record.additional, record.unevaluated)
}

fn open(model: &Model, additional: Extra, unevaluated: Option<Id>) -> bool {
    matches!(additional, Extra::Open)
        && unevaluated.is_none_or(|u| matches!(model.node(u), Node::Empty))
}

/// The schema a partially open model gives what it does not name.
fn partial(model: &Model, additional: Extra, unevaluated: Option<Id>) -> Option<Id> {
    match additional {
        Extra::Schema(id) => Some(id),
        Extra::Closed => None,
        Extra::Open => unevaluated.filter(|&u| !matches!(model.node(u), Node::False | Node::Empty)),
    }
}

// Arrays.
impl<'a> Judge<'_, 'a> {
    fn array(&mut self, w: &List<'a>, r: &List<'a>) -> Vec<Diff> {
        let mut out = Vec::new();
        let model = self.model;
        match (w.all_items, r.all_items) {
            // `items: true` reads anything; Confluent flags any schema added.
            (None, Some(b)) if !matches!(model.node(b), Node::Empty) => {
                out.push(Diff::new("SCHEMA_ADDED", "/items", ""));
            }
            (Some(a), Some(b)) => nest(&mut out, "/items", &self.compare(a, b)),
            _ => {}
        }
        self.tuple(w, r, &mut out);
        self.extra("additionalItems", w.additional, r.additional, &mut out);
        self.unevaluated("unevaluatedItems", w.unevaluated, r.unevaluated, &mut out);
        let keys = [
            ("maxItems", true),
            ("minItems", false),
            ("maxContains", true),
            ("minContains", false),
        ];
        bounds(w.map, r.map, &keys, &mut out);
        let unique = |m: &Map<String, Value>| m.get("uniqueItems") == Some(&Value::Bool(true));
        if unique(r.map) && !unique(w.map) {
            out.push(Diff::new("UNIQUE_ITEMS_ADDED", "/uniqueItems", ""));
        }
        out
    }

    /// Tuple items by position; those only one side has fall to the other's content model.
    fn tuple(&mut self, w: &List<'a>, r: &List<'a>, out: &mut Vec<Diff>) {
        let model = self.model;
        let common = w.tuple.len().min(r.tuple.len());
        for (i, (&a, &b)) in w.tuple.iter().zip(&r.tuple).enumerate() {
            nest(out, &format!("/items/{i}"), &self.compare(a, b));
        }
        for (i, &a) in w.tuple.iter().enumerate().skip(common) {
            let path = format!("/items/{i}");
            if open(model, r.additional, r.unevaluated) {
                continue;
            }
            match partial(model, r.additional, r.unevaluated) {
                Some(s) => self.covered(
                    a,
                    s,
                    &path,
                    "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                    out,
                ),
                None if matches!(model.node(a), Node::False) => {}
                None => out.push(Diff::new(
                    "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
                    path,
                    "",
                )),
            }
        }
        for (i, &b) in r.tuple.iter().enumerate().skip(common) {
            let path = format!("/items/{i}");
            if open(model, w.additional, w.unevaluated) {
                if !matches!(model.node(b), Node::Empty) {
                    out.push(Diff::new("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", path, ""));
                }
            } else if let Some(s) = partial(model, w.additional, w.unevaluated) {
                self.covered(
                    s,
                    b,
                    &path,
                    "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                    out,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> JsonSchema {
        JsonSchema::parse(text, &[]).unwrap()
    }

    fn dependency(name: &str, schema: &str) -> Dependency {
        Dependency {
            name: name.into(),
            schema: schema.into(),
        }
    }

    /// Why `reader` cannot read `writer`'s data.
    fn judged(writer: &str, reader: &str) -> Vec<String> {
        schema(reader).incompatibilities_reading(&schema(writer))
    }

    #[test]
    fn equivalent_texts_have_one_canonical_form_sorted_without_whitespace() {
        let one = schema(
            r#"{"type":"object","properties":{"b":{"type":"string"},"a":{"maxLength":3,"type":"string"}}}"#,
        );
        let two = schema(
            "{\n  \"properties\" : {\n \"a\": {\"type\": \"string\", \"maxLength\": 3},\n \"b\": {\"type\": \"string\"}},\n \"type\": \"object\" }",
        );
        assert_eq!(one.canonical(), two.canonical());
        assert_eq!(
            one.canonical(),
            r#"{"properties":{"a":{"maxLength":3,"type":"string"},"b":{"type":"string"}},"type":"object"}"#
        );
        assert_eq!(schema("true").canonical(), "true");
    }

    #[test]
    fn invalid_json_and_invalid_schemas_are_refused() {
        for bad in [
            "{",
            "",
            r#"{"type":5}"#,
            r#"{"minimum":"x"}"#,
            r#"{"type":"strin"}"#,
            "3",
            "[]",
            r#""s""#,
        ] {
            assert!(JsonSchema::parse(bad, &[]).is_err(), "{bad}");
        }
        let bad_reference = [dependency("a.json", "{")];
        assert!(JsonSchema::parse(r#"{"$ref":"a.json"}"#, &bad_reference).is_err());
    }

    #[test]
    fn schemas_nested_deeper_than_the_limit_are_refused() {
        let deep = format!(
            "{}true{}",
            r#"{"not":"#.repeat(DEPTH_MAX + 1),
            "}".repeat(DEPTH_MAX + 1)
        );
        let error = JsonSchema::parse(&deep, &[]).unwrap_err();
        assert!(error.0.contains("deeper"), "{error}");
        let deeper = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(JsonSchema::parse(&deeper, &[]).is_err());
    }

    #[test]
    fn a_ref_to_a_dependency_resolves_and_validates_offline() {
        let address =
            r#"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#;
        for (name, main) in [
            (
                "address.json",
                r#"{"type":"object","properties":{"home":{"$ref":"address.json"}}}"#,
            ),
            (
                "http://example.com/address.schema.json",
                r#"{"properties":{"home":{"$ref":"http://example.com/address.schema.json"}}}"#,
            ),
            (
                "address.schema.json",
                r#"{"$id":"http://example.com/person.json","properties":{"home":{"$ref":"address.schema.json"}}}"#,
            ),
        ] {
            let person = JsonSchema::parse(main, &[dependency(name, address)]).unwrap();
            assert!(
                person.validate(br#"{"home":{"city":"Oslo"}}"#).is_ok(),
                "{name}"
            );
            assert!(
                person.validate(br#"{"home":{"city":7}}"#).is_err(),
                "{name}"
            );
            assert!(person.validate(br#"{"home":{}}"#).is_err(), "{name}");
        }
    }

    #[test]
    fn references_of_references_resolve() {
        let zip = dependency("zip.json", r#"{"type":"string","pattern":"^[0-9]{4}$"}"#);
        let address = dependency(
            "address.json",
            r#"{"properties":{"zip":{"$ref":"zip.json"}}}"#,
        );
        let person = JsonSchema::parse(
            r#"{"properties":{"home":{"$ref":"address.json"}}}"#,
            &[zip, address],
        )
        .unwrap();
        assert!(person.validate(br#"{"home":{"zip":"0150"}}"#).is_ok());
        assert!(person.validate(br#"{"home":{"zip":"Oslo"}}"#).is_err());
    }

    #[test]
    fn an_unresolvable_ref_is_refused_without_fetching() {
        for main in [
            r#"{"properties":{"home":{"$ref":"http://example.com/missing.json"}}}"#,
            r#"{"properties":{"home":{"$ref":"https://127.0.0.1:1/missing.json"}}}"#,
            r#"{"properties":{"home":{"$ref":"file:///etc/hostname"}}}"#,
            r#"{"properties":{"home":{"$ref":"missing.json"}}}"#,
            r##"{"properties":{"home":{"$ref":"#/definitions/missing"}}}"##,
        ] {
            assert!(JsonSchema::parse(main, &[]).is_err(), "{main}");
        }
    }

    #[test]
    fn the_draft_is_the_one_schema_names_and_draft_7_otherwise() {
        let rule = r#""dependentRequired":{"card":["zip"]}"#;
        let modern = schema(&format!(
            r#"{{"$schema":"https://json-schema.org/draft/2020-12/schema",{rule}}}"#
        ));
        assert!(modern.validate(br#"{"card":1,"zip":2}"#).is_ok());
        assert!(modern.validate(br#"{"card":1}"#).is_err());
        // Draft 7 does not know `dependentRequired`.
        assert!(schema(&format!("{{{rule}}}"))
            .validate(br#"{"card":1}"#)
            .is_ok());
        let draft4 = schema(
            r#"{"$schema":"http://json-schema.org/draft-04/schema#","maximum":5,"exclusiveMaximum":true}"#,
        );
        assert!(draft4.validate(b"5").is_err());
        assert!(draft4.validate(b"4").is_ok());
    }

    #[test]
    fn validate_accepts_a_matching_document() {
        let person = schema(
            r#"{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]}"#,
        );
        assert_eq!(person.validate(br#"{"name":"Ada","age":36}"#), Ok(()));
        assert_eq!(person.validate(br#" {"name":"Ada"} "#), Ok(()));
    }

    #[test]
    fn validate_refuses_a_wrong_type_naming_its_path() {
        let person = schema(r#"{"type":"object","properties":{"age":{"type":"integer"}}}"#);
        let error = person.validate(br#"{"age":"old"}"#).unwrap_err();
        assert!(error.0.contains("#/age"), "{error}");
        assert!(error.0.contains("integer"), "{error}");
    }

    #[test]
    fn validate_refuses_a_missing_required_property() {
        let person = schema(r#"{"type":"object","required":["name"]}"#);
        let error = person.validate(b"{}").unwrap_err();
        assert!(error.0.contains("name"), "{error}");
    }

    #[test]
    fn validate_refuses_what_is_not_json() {
        let any = schema("true");
        for bad in [
            &b""[..],
            b"not json",
            b"\xff\xfe",
            b"{\"a\":1} trailing",
            b"{\"a\":",
        ] {
            assert!(any.validate(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn validate_refuses_deep_nesting_without_overflowing() {
        let any = schema("true");
        let beyond_limit = format!("{}{}", "[".repeat(DEPTH_MAX + 1), "]".repeat(DEPTH_MAX + 1));
        assert!(any
            .validate(beyond_limit.as_bytes())
            .unwrap_err()
            .0
            .contains("deeper"));
        let huge = format!("{}{}", "{\"a\":".repeat(200_000), "}".repeat(200_000));
        assert!(any.validate(huge.as_bytes()).is_err());
        let within = format!("{}{}", "[".repeat(DEPTH_MAX), "]".repeat(DEPTH_MAX));
        assert!(any.validate(within.as_bytes()).is_ok());
    }

    /// (rule, writer, reader, whether the reader reads everything the writer wrote), from
    /// Confluent's documented rules; more in tests/corpus/json/compatibility.txt.
    #[rustfmt::skip]
    const RULES: &[(&str, &str, &str, bool)] = &[
        ("the same schema", r#"{"type":"string"}"#, r#"{"type":"string"}"#, true),
        ("integer widened to number (TYPE_EXTENDED)", r#"{"type":"integer"}"#, r#"{"type":"number"}"#, true),
        ("number narrowed to integer (TYPE_NARROWED)", r#"{"type":"number"}"#, r#"{"type":"integer"}"#, false),
        ("string changed to number (TYPE_CHANGED)", r#"{"type":"string"}"#, r#"{"type":"number"}"#, false),
        ("object changed to array (TYPE_CHANGED)", r#"{"type":"object"}"#, r#"{"type":"array"}"#, false),
        ("a type added to a type array (SUM_TYPE_EXTENDED)", r#"{"type":"string"}"#, r#"{"type":["string","null"]}"#, true),
        ("a type removed from a type array", r#"{"type":["string","null"]}"#, r#"{"type":"string"}"#, false),
        ("maxLength added", r#"{"type":"string"}"#, r#"{"type":"string","maxLength":5}"#, false),
        ("maxLength decreased", r#"{"type":"string","maxLength":9}"#, r#"{"type":"string","maxLength":5}"#, false),
        ("maxLength increased", r#"{"type":"string","maxLength":5}"#, r#"{"type":"string","maxLength":9}"#, true),
        ("minLength added", r#"{"type":"string"}"#, r#"{"type":"string","minLength":1}"#, false),
        ("minLength increased", r#"{"type":"string","minLength":1}"#, r#"{"type":"string","minLength":2}"#, false),
        ("minLength removed", r#"{"type":"string","minLength":1}"#, r#"{"type":"string"}"#, true),
        ("pattern added", r#"{"type":"string"}"#, r#"{"type":"string","pattern":"^a"}"#, false),
        ("pattern changed", r#"{"type":"string","pattern":"^a"}"#, r#"{"type":"string","pattern":"^b"}"#, false),
        ("pattern removed", r#"{"type":"string","pattern":"^a"}"#, r#"{"type":"string"}"#, true),
        ("maximum added", r#"{"type":"number"}"#, r#"{"type":"number","maximum":9}"#, false),
        ("maximum decreased", r#"{"type":"number","maximum":9}"#, r#"{"type":"number","maximum":5}"#, false),
        ("maximum increased", r#"{"type":"number","maximum":5}"#, r#"{"type":"number","maximum":9}"#, true),
        ("minimum increased", r#"{"type":"number","minimum":0}"#, r#"{"type":"number","minimum":1}"#, false),
        ("minimum decreased", r#"{"type":"number","minimum":1}"#, r#"{"type":"number","minimum":0}"#, true),
        ("exclusiveMaximum added", r#"{"type":"number"}"#, r#"{"type":"number","exclusiveMaximum":9}"#, false),
        ("exclusiveMaximum decreased", r#"{"type":"number","exclusiveMaximum":9}"#, r#"{"type":"number","exclusiveMaximum":5}"#, false),
        ("multipleOf added", r#"{"type":"number"}"#, r#"{"type":"number","multipleOf":2}"#, false),
        ("multipleOf changed", r#"{"type":"integer","multipleOf":2}"#, r#"{"type":"integer","multipleOf":3}"#, false),
        ("multipleOf reduced to a divisor", r#"{"type":"integer","multipleOf":10}"#, r#"{"type":"integer","multipleOf":5}"#, true),
        ("enum extended", r#"{"enum":["a","b"]}"#, r#"{"enum":["a","b","c"]}"#, true),
        ("enum narrowed", r#"{"enum":["a","b"]}"#, r#"{"enum":["a"]}"#, false),
        ("enum changed", r#"{"enum":["a","b"]}"#, r#"{"enum":["a","c"]}"#, false),
        ("a required property added", r#"{"properties":{"a":{"type":"string"}}}"#, r#"{"properties":{"a":{"type":"string"}},"required":["a"]}"#, false),
        ("a required property removed", r#"{"properties":{"a":{"type":"string"}},"required":["a"]}"#, r#"{"properties":{"a":{"type":"string"}}}"#, true),
        ("a property added to an open model", r#"{"properties":{"a":{"type":"string"}}}"#, r#"{"properties":{"a":{"type":"string"},"b":{"type":"string"}}}"#, false),
        ("a property with an empty schema added to an open model", r#"{"properties":{}}"#, r#"{"properties":{"b":{}}}"#, true),
        ("a property removed from an open model", r#"{"properties":{"a":{"type":"string"}}}"#, r#"{"properties":{}}"#, true),
        ("an optional property added to a closed model", r#"{"properties":{},"additionalProperties":false}"#, r#"{"properties":{"b":{"type":"string"}},"additionalProperties":false}"#, true),
        ("a property removed from a closed model", r#"{"properties":{"a":{"type":"string"}},"additionalProperties":false}"#, r#"{"properties":{},"additionalProperties":false}"#, false),
        ("a property false removed from a closed model", r#"{"properties":{"a":false},"additionalProperties":false}"#, r#"{"properties":{},"additionalProperties":false}"#, true),
        ("additionalProperties removed (closed)", r#"{"type":"object"}"#, r#"{"type":"object","additionalProperties":false}"#, false),
        ("additionalProperties added (opened)", r#"{"type":"object","additionalProperties":false}"#, r#"{"type":"object"}"#, true),
        ("additionalProperties schema narrowed", r#"{"additionalProperties":{"type":"number"}}"#, r#"{"additionalProperties":{"type":"integer"}}"#, false),
        ("array items narrowed", r#"{"type":"array","items":{"type":"number"}}"#, r#"{"type":"array","items":{"type":"integer"}}"#, false),
        ("array items widened", r#"{"type":"array","items":{"type":"integer"}}"#, r#"{"type":"array","items":{"type":"number"}}"#, true),
        ("array items schema added", r#"{"type":"array"}"#, r#"{"type":"array","items":{"type":"string"}}"#, false),
        ("array items schema removed", r#"{"type":"array","items":{"type":"string"}}"#, r#"{"type":"array"}"#, true),
        ("maxItems decreased", r#"{"type":"array","maxItems":3}"#, r#"{"type":"array","maxItems":2}"#, false),
        ("minItems added", r#"{"type":"array"}"#, r#"{"type":"array","minItems":1}"#, false),
        ("uniqueItems added", r#"{"type":"array"}"#, r#"{"type":"array","uniqueItems":true}"#, false),
        ("uniqueItems removed", r#"{"type":"array","uniqueItems":true}"#, r#"{"type":"array"}"#, true),
        ("a oneOf branch added (SUM_TYPE_EXTENDED)", r#"{"oneOf":[{"type":"string"}]}"#, r#"{"oneOf":[{"type":"string"},{"type":"integer"}]}"#, true),
        ("a oneOf branch removed (SUM_TYPE_NARROWED)", r#"{"oneOf":[{"type":"string"},{"type":"integer"}]}"#, r#"{"oneOf":[{"type":"string"}]}"#, false),
        ("a oneOf branch changed (COMBINED_TYPE_SUBSCHEMAS_CHANGED)", r#"{"oneOf":[{"type":"string"}]}"#, r#"{"oneOf":[{"type":"integer"}]}"#, false),
        ("an allOf part added (PRODUCT_TYPE_EXTENDED)", r#"{"allOf":[{"type":"string"}]}"#, r#"{"allOf":[{"type":"string"},{"maxLength":3}]}"#, false),
        ("a schema made a union branch", r#"{"type":"string"}"#, r#"{"anyOf":[{"type":"string"},{"type":"null"}]}"#, true),
        ("anything read by the empty schema", r#"{"type":"string","maxLength":3}"#, "{}", true),
    ];

    #[test]
    fn the_compatibility_rules_are_judged_as_confluent_judges_them() {
        let mut wrong = Vec::new();
        for (rule, writer, reader, compatible) in RULES {
            let found = judged(writer, reader);
            if found.is_empty() != *compatible {
                wrong.push(format!(
                    "{rule}: expected compatible={compatible}, got {found:?}"
                ));
            }
        }
        assert!(RULES.len() >= 25);
        assert!(wrong.is_empty(), "misjudged: {wrong:#?}");
    }

    /// The cases of tests/corpus/json/compatibility.txt: (rule, writer, reader, compatible).
    fn corpus() -> Vec<(String, String, String, bool)> {
        let text = include_str!("../../tests/corpus/json/compatibility.txt");
        let mut cases = Vec::new();
        for case in text.split("\n=== ").skip(1) {
            let (rule, rest) = case.split_once('\n').unwrap();
            let (head, texts) = rest.split_once("--- writer\n").unwrap();
            let (writer, reader) = texts.split_once("--- reader\n").unwrap();
            let compatible = head.trim() == "compatible: true";
            assert!(
                compatible || head.trim() == "compatible: false",
                "{rule}: {head}"
            );
            cases.push((rule.into(), writer.into(), reader.into(), compatible));
        }
        cases
    }

    #[test]
    fn the_compatibility_corpus_is_judged_as_confluent_judges_it() {
        let cases = corpus();
        assert!(cases.len() >= 25);
        let mut wrong = Vec::new();
        for (rule, writer, reader, compatible) in &cases {
            let found = judged(writer, reader);
            if found.is_empty() != *compatible {
                wrong.push(format!(
                    "{rule}: expected compatible={compatible}, got {found:?}"
                ));
            }
        }
        assert!(wrong.is_empty(), "misjudged: {wrong:#?}");
    }

    #[test]
    fn every_schema_of_the_corpus_reads_its_own_data() {
        let texts = RULES
            .iter()
            .flat_map(|(_, w, r, _)| [w.to_string(), r.to_string()]);
        let corpus = corpus().into_iter().flat_map(|(_, w, r, _)| [w, r]);
        for text in texts.chain(corpus) {
            // Parsed twice, so the comparison cannot take the shortcut of one value.
            assert_eq!(judged(&text, &text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn messages_name_the_rule_and_the_json_path() {
        let writer = r#"{"properties":{"age":{"type":"number"},"name":{"type":"string","maxLength":9}},"required":["age"]}"#;
        let reader = r#"{"properties":{"age":{"type":"integer"},"name":{"type":"string","maxLength":5}},"required":["age","name"]}"#;
        let found = judged(writer, reader);
        assert!(
            found.contains(&"TYPE_NARROWED: #/properties/age number -> integer".to_string()),
            "{found:?}"
        );
        assert!(
            found.contains(&"MAX_LENGTH_DECREASED: #/properties/name/maxLength 9 -> 5".to_string()),
            "{found:?}"
        );
        assert!(
            found.contains(&"REQUIRED_ATTRIBUTE_ADDED: #/required/name".to_string()),
            "{found:?}"
        );
        assert_eq!(
            judged(r#"{"type":"object"}"#, r#"{"type":"array"}"#),
            ["TYPE_CHANGED: #/ object -> array"]
        );
    }

    #[test]
    fn refs_into_dependencies_are_followed_when_comparing() {
        let old = [dependency(
            "address.json",
            r#"{"properties":{"zip":{"type":"number"}}}"#,
        )];
        let new = [dependency(
            "address.json",
            r#"{"properties":{"zip":{"type":"integer"}}}"#,
        )];
        let main = r#"{"properties":{"home":{"$ref":"address.json"}}}"#;
        let writer = JsonSchema::parse(main, &old).unwrap();
        let reader = JsonSchema::parse(main, &new).unwrap();
        assert_eq!(
            reader.incompatibilities_reading(&writer),
            ["TYPE_NARROWED: #/properties/home/properties/zip number -> integer"]
        );
        assert!(writer.incompatibilities_reading(&reader).is_empty());
    }

    /// `root` is a union of `T0` and `T1`; each has an `id` and a `next` (a one-branch union)
    /// to `T2`, whose `next` leads back to `T0`.
    fn cycle_through_unions(t0_id: &str, t1_id: &str) -> String {
        let node = |id: &str, next: &str| {
            format!(
                r##"{{"type":"object","properties":{{"id":{{"type":"{id}"}},"next":{{"oneOf":[{{"$ref":"#/definitions/{next}"}}]}}}}}}"##
            )
        };
        format!(
            r##"{{"type":"object","definitions":{{"T0":{},"T1":{},"T2":{}}},"properties":{{"root":{{"oneOf":[{{"$ref":"#/definitions/T0"}},{{"$ref":"#/definitions/T1"}}]}}}}}}"##,
            node(t0_id, "T2"),
            node(t1_id, "T2"),
            node("integer", "T0")
        )
    }

    #[test]
    fn a_change_behind_a_recursive_union_is_not_masked_by_memoized_assumptions() {
        let writer = cycle_through_unions("integer", "boolean");
        let reader = cycle_through_unions("boolean", "number");
        assert!(!judged(&writer, &reader).is_empty());
        assert!(judged(&writer, &writer).is_empty());
    }

    #[test]
    fn mutually_recursive_unions_compare_quickly() {
        let names: Vec<String> = (0..12).map(|i| format!("T{i}")).collect();
        let union = names
            .iter()
            .map(|n| format!(r##"{{"$ref":"#/definitions/{n}"}}"##))
            .collect::<Vec<_>>()
            .join(",");
        let definitions = |id: &str| {
            let defs = names.iter().map(|n| {
                format!(r#""{n}":{{"type":"object","properties":{{"id":{{"type":"{id}"}},"a":{{"oneOf":[{union}]}},"b":{{"oneOf":[{union}]}}}}}}"#)
            });
            defs.collect::<Vec<_>>().join(",")
        };
        let text = |id: &str| {
            format!(
                r#"{{"definitions":{{{}}},"properties":{{"root":{{"oneOf":[{union}]}}}}}}"#,
                definitions(id)
            )
        };
        let started = std::time::Instant::now();
        assert!(judged(&text("string"), &text("string")).is_empty());
        assert!(!judged(&text("number"), &text("integer")).is_empty());
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn a_comparison_too_large_to_finish_is_reported_incompatible() {
        let branches = |offset: usize| {
            (0..400)
                .map(|i| format!(r#"{{"const":{}}}"#, i + offset))
                .collect::<Vec<_>>()
                .join(",")
        };
        let writer = format!(r#"{{"anyOf":[{}]}}"#, branches(0));
        let reader = format!(r#"{{"anyOf":[{}]}}"#, branches(1_000));
        let found = judged(&writer, &reader);
        assert!(
            found.iter().any(|d| d.starts_with(TOO_COMPLEX)),
            "{found:?}"
        );
    }

    #[test]
    fn a_long_chain_of_refs_is_parsed_and_compared_without_overflowing() {
        let count = 300;
        let definitions = (0..count)
            .map(|i| format!(r##""d{i}":{{"$ref":"#/definitions/d{}"}}"##, i + 1))
            .chain([format!(r#""d{count}":{{"type":"string"}}"#)])
            .collect::<Vec<_>>()
            .join(",");
        let text = format!(
            r##"{{"definitions":{{{definitions}}},"properties":{{"a":{{"$ref":"#/definitions/d0"}}}}}}"##
        );
        let chain = schema(&text);
        assert!(chain.validate(br#"{"a":"x"}"#).is_ok());
        assert!(chain.validate(br#"{"a":1}"#).is_err());
        // Too deep to model: reported, as nothing proves the versions agree.
        let found = chain.incompatibilities_reading(&schema(&text));
        assert!(
            found.iter().any(|d| d.starts_with("UNRESOLVED_REFERENCE")),
            "{found:?}"
        );
    }

    #[test]
    fn anchors_and_dynamic_refs_are_followed_when_comparing() {
        let anchored = |t: &str| {
            format!(
                r##"{{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{{"v":{{"$anchor":"value","type":"{t}"}}}},"properties":{{"a":{{"$ref":"#value"}}}}}}"##
            )
        };
        assert_eq!(
            judged(&anchored("number"), &anchored("integer")),
            ["TYPE_NARROWED: #/properties/a number -> integer"]
        );
        assert!(judged(&anchored("integer"), &anchored("number")).is_empty());
        let tree = |t: &str| {
            format!(
                r##"{{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,"type":"object","properties":{{"v":{{"type":"{t}"}},"kids":{{"type":"array","items":{{"$recursiveRef":"#"}}}}}}}}"##
            )
        };
        assert!(schema(&tree("number"))
            .validate(br#"{"v":1,"kids":[{"v":2.5}]}"#)
            .is_ok());
        assert!(!judged(&tree("number"), &tree("integer")).is_empty());
        assert!(judged(&tree("integer"), &tree("number")).is_empty());
    }

    #[test]
    fn conditions_changed_are_reported() {
        let conditional =
            |max: u32| format!(r#"{{"if":{{"type":"string"}},"then":{{"maxLength":{max}}}}}"#);
        assert!(judged(&conditional(3), &conditional(3)).is_empty());
        assert!(!judged(&conditional(3), &conditional(5)).is_empty());
        assert!(!judged(
            r#"{"type":"string"}"#,
            &format!(r#"{{"type":"string",{}"#, &conditional(3)[1..])
        )
        .is_empty());
    }

    #[test]
    fn connect_decimals_may_change_between_string_and_number() {
        let decimal = |t: &str| format!(r#"{{"type":"{t}","connect.type":"bytes"}}"#);
        assert!(judged(&decimal("string"), &decimal("number")).is_empty());
        assert!(!judged(r#"{"type":"string"}"#, r#"{"type":"number"}"#).is_empty());
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic_validate(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let strict = schema(r#"{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","maxLength":3}}},"required":["a"]}"#);
            let _ = strict.validate(&bytes);
        }

        #[test]
        fn json_like_text_never_panics_validate(text in r#"[\[\]{}":,0-9a-z .eE+-]{0,128}"#) {
            let _ = schema(r#"{"oneOf":[{"type":"object"},{"type":"array","items":{"type":"number"}}]}"#).validate(text.as_bytes());
        }
    }
}
