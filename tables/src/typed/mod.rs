//! A topic's values (and keys) decoded into typed columns, from the schemas the registry holds
//! for the topic's subjects (`<topic>-value` and `<topic>-key`, Confluent's default
//! `TopicNameStrategy`): Avro, Protobuf and JSON Schema. The compactor writes the columns into
//! the same Parquet files Kafka reads (after the Kafka columns, which the Kafka reader alone
//! reads), two per side: `value_typed`, a struct of the decoded record, and `value_error`, why a
//! record's value did not decode (its typed columns are then null; its raw bytes stay in
//! `value`); `key_typed` and `key_error` likewise once the key subject exists.
//!
//! Field ids are stable: every schema version of the subject is merged into one column tree
//! kept in the MetaStore (`iceberg/columns/<topic id>`) by Iceberg's evolution rules
//! ([`kind::merge`]); a version Iceberg cannot express is refused (its records carry the
//! reason in `value_error`) and never stops the table.

pub mod avro;
pub mod avro_encode;
pub mod json;
pub mod kind;
pub mod protobuf;
pub mod restore;
pub mod shred;
pub mod unshred;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use bytes::Bytes;
use metastore::{Comparison, Expect, MetaError, MetaStore, PutOptions};
use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::file::writer::SerializedRowGroupWriter;
use parquet::schema::types::Type;
use schema_registry::schema::avro::AvroSchema;
use schema_registry::schema::Parsed;
use schema_registry::validation::wire_format;
use schema_registry::{Registry, RegistryError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use storage::compacted::{CompactedError, ExtraColumns, RecordRow};

use crate::TableError;
use kind::{Field, Kind};
use shred::{Datum, Shredder};

/// Which part of a record a set of typed columns decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    Value,
    Key,
}

impl Side {
    /// The registry subject of the side (`TopicNameStrategy`).
    pub fn subject(self, topic: &str) -> String {
        match self {
            Side::Value => format!("{topic}-value"),
            Side::Key => format!("{topic}-key"),
        }
    }

    /// (error column, typed column) names and field ids; the Kafka columns use ids 1 to 23.
    fn columns(self) -> ((&'static str, i32), (&'static str, i32)) {
        match self {
            Side::Value => (("value_error", 24), ("value_typed", 25)),
            Side::Key => (("key_error", 26), ("key_typed", 27)),
        }
    }
}

/// Decoded fields get ids above this one.
pub const TYPED_IDS_AFTER: i32 = 99;
/// The column of a schema whose top level is not a record.
pub(crate) const VALUE_FIELD: &str = "value";

const COLUMNS_PREFIX: &str = "iceberg/columns/";
/// Schema versions of one subject merged into a table at most.
const VERSIONS_MAX: usize = 1_000;
/// Longest error text kept in an error column.
const ERROR_BYTES_MAX: usize = 512;

/// A table's typed columns, as kept in the MetaStore: ids are unique across both sides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Columns {
    pub last_column_id: i32,
    pub value: SideColumns,
    pub key: SideColumns,
}

impl Default for Columns {
    fn default() -> Columns {
        Columns {
            last_column_id: TYPED_IDS_AFTER,
            value: SideColumns::default(),
            key: SideColumns::default(),
        }
    }
}

/// The typed columns of one side.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SideColumns {
    pub fields: Vec<Field>,
    /// Schema ids whose fields are in `fields`.
    pub merged: BTreeSet<i32>,
    /// Schema ids refused, with the reason.
    pub refused: BTreeMap<i32, String>,
}

impl SideColumns {
    /// A side is in the files once its subject had a version (its columns then stay).
    fn present(&self) -> bool {
        !self.merged.is_empty() || !self.refused.is_empty()
    }
}

impl Columns {
    pub fn side(&self, side: Side) -> &SideColumns {
        match side {
            Side::Value => &self.value,
            Side::Key => &self.key,
        }
    }

    fn side_mut(&mut self, side: Side) -> &mut SideColumns {
        match side {
            Side::Value => &mut self.value,
            Side::Key => &mut self.key,
        }
    }

    /// The sides in the files, in column order.
    pub fn sides(&self) -> Vec<Side> {
        [Side::Value, Side::Key]
            .into_iter()
            .filter(|s| self.side(*s).present())
            .collect()
    }

    pub fn typed_field(&self, side: Side) -> Field {
        let (_, (name, id)) = side.columns();
        Field {
            id,
            name: name.into(),
            kind: Kind::Struct {
                fields: self.side(side).fields.clone(),
            },
        }
    }

    /// The Iceberg schema fields: `value_error`, `value_typed`, then the key's.
    pub fn iceberg_fields(&self) -> Vec<Value> {
        self.sides()
            .into_iter()
            .flat_map(|side| {
                let ((name, id), _) = side.columns();
                [
                    json!({"id": id, "name": name, "required": false, "type": "string"}),
                    kind::iceberg_field(&self.typed_field(side)),
                ]
            })
            .collect()
    }

    fn parquet_fields(&self) -> Result<Vec<Arc<Type>>, CompactedError> {
        let mut out = Vec::new();
        for side in self.sides() {
            let ((name, id), _) = side.columns();
            let error = Type::primitive_type_builder(name, Physical::BYTE_ARRAY)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(Some(LogicalType::String))
                .with_id(Some(id))
                .build()?;
            out.push(Arc::new(error));
            out.push(kind::parquet_type(&self.typed_field(side), false)?);
        }
        Ok(out)
    }
}

fn key(topic_id: &str) -> String {
    format!("{COLUMNS_PREFIX}{topic_id}")
}

/// The typed columns of the table of the topic with this id, and their record's version.
pub async fn load(
    meta: &dyn MetaStore,
    topic_id: &str,
) -> Result<Option<(Columns, i64)>, TableError> {
    let Some(record) = meta.get(&key(topic_id), Comparison::Equal, None).await? else {
        return Ok(None);
    };
    Ok(Some((
        serde_json::from_slice(&record.value)?,
        record.version.version_id,
    )))
}

async fn save(
    meta: &dyn MetaStore,
    topic_id: &str,
    columns: &Columns,
    previous: Option<i64>,
) -> Result<(), TableError> {
    let options = PutOptions {
        expect: previous.map_or(Expect::NotExists, Expect::Version),
        ..Default::default()
    };
    let value = Bytes::from(serde_json::to_vec(columns)?);
    match meta.put(&key(topic_id), value, options).await {
        Ok(_) => Ok(()),
        Err(MetaError::UnexpectedVersion) => Err(TableError::Conflict(topic_id.to_string())),
        Err(e) => Err(e.into()),
    }
}

/// The columns a schema describes.
pub fn shape(parsed: &Parsed) -> Result<Vec<Field>, String> {
    match parsed {
        Parsed::Avro(s) => avro::shape(s),
        Parsed::Json(s) => json::shape(s.document()),
        Parsed::Protobuf(s) => protobuf::shape(s),
    }
}

/// Decodes one payload (after the wire format's 5 bytes) of `parsed` into `columns`.
pub fn decode(parsed: &Parsed, payload: &[u8], columns: &[Field]) -> Result<Datum, String> {
    match parsed {
        Parsed::Avro(s) => avro::decode(s, payload, columns),
        Parsed::Json(_) => json::decode(payload, columns),
        Parsed::Protobuf(s) => protobuf::decode(s, payload, columns),
    }
}

/// What one table's files are written with.
pub struct Plan {
    topic: String,
    columns: Columns,
    decoders: HashMap<i32, Arc<Parsed>>,
    /// Avro value schemas by id, as a file embeds them (text) and as the reader parses that
    /// text: a value is elided only if this parse encodes it back to its exact bytes.
    embedded: HashMap<i32, (String, AvroSchema)>,
    /// The value's typed fields as a reader finds them in a file (`unshred::field_of`).
    value_fields: Vec<Field>,
    undecodable: AtomicU64,
}

impl Plan {
    /// The typed row and the error of one side of a record.
    fn row(&self, side: Side, bytes: Option<&Bytes>) -> (Datum, Option<String>) {
        let Some(bytes) = bytes else {
            return (Datum::Null, None);
        };
        let columns = self.columns.side(side);
        let error = match wire_format(bytes) {
            None => "not in the Confluent wire format (magic byte 0, then a 4-byte schema id)".to_owned(),
            Some((id, payload)) => match (self.decoders.get(&id), columns.refused.get(&id)) {
                (Some(parsed), _) if columns.merged.contains(&id) => {
                    match decode(parsed, payload, &columns.fields) {
                        Ok(datum) => return (datum, None),
                        Err(e) => format!("schema id {id}: {e}"),
                    }
                }
                (_, Some(reason)) => format!("schema id {id} is refused for this table: {reason}"),
                _ => format!(
                    "schema id {id} is not a version of subject {} known when this file was written",
                    side.subject(&self.topic)
                ),
            },
        };
        self.undecodable.fetch_add(1, Ordering::Relaxed);
        (Datum::Null, Some(truncate(error)))
    }

    /// The schema id of a value whose typed columns hold it losslessly (`datum` was decoded
    /// from it), if the file may embed that schema (`embedded`: the ids it embeds so far).
    fn elidable(&self, bytes: &Bytes, datum: &Datum, embedded: &BTreeSet<i32>) -> Option<i32> {
        let (id, payload) = wire_format(bytes)?;
        if !embedded.contains(&id) && embedded.len() >= restore::EMBEDDED_SCHEMAS_MAX {
            return None;
        }
        let (_, schema) = self.embedded.get(&id)?;
        let mut out = Vec::with_capacity(payload.len());
        avro_encode::encode(schema, datum, &self.value_fields, &mut out).ok()?;
        (out == payload).then_some(id)
    }
}

fn truncate(mut text: String) -> String {
    if text.len() > ERROR_BYTES_MAX {
        let mut end = ERROR_BYTES_MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// The typed columns of one file being written.
struct Writer {
    plan: Arc<Plan>,
    sides: Vec<SideWriter>,
    /// Ids of the schemas of the values elided so far, which the footer embeds.
    embedded: BTreeSet<i32>,
}

struct SideWriter {
    side: Side,
    typed: Shredder,
    errors: Vec<ByteArray>,
    error_def: Vec<i16>,
}

impl ExtraColumns for Writer {
    fn fields(&self) -> Vec<Arc<Type>> {
        // Checked when the plan was made (see `Typing::plan`).
        self.plan.columns.parquet_fields().unwrap_or_default()
    }

    fn elides_values(&self) -> bool {
        !self.plan.embedded.is_empty()
    }

    fn push(&mut self, record: &RecordRow, control: bool) -> Option<usize> {
        let mut kept = None;
        for w in &mut self.sides {
            let bytes = match w.side {
                Side::Value => record.value.as_ref(),
                Side::Key => record.key.as_ref(),
            };
            let (mut datum, error) = if control {
                (Datum::Null, None)
            } else {
                self.plan.row(w.side, bytes)
            };
            // An empty payload holds nothing to type; leaving it untyped keeps "a kept header
            // with a typed value" meaning "elided" (see `restore`).
            if bytes.is_some_and(|b| b.len() <= restore::WIRE_HEADER_BYTES) {
                datum = Datum::Null;
            }
            let elidable = match (w.side, bytes) {
                (Side::Value, Some(b)) if !matches!(datum, Datum::Null) => {
                    self.plan.elidable(b, &datum, &self.embedded)
                }
                _ => None,
            };
            match error {
                Some(e) => {
                    w.errors.push(ByteArray::from(e.into_bytes()));
                    w.error_def.push(1);
                }
                None => w.error_def.push(0),
            }
            if w.typed.push(datum) {
                if let Some(id) = elidable {
                    self.embedded.insert(id);
                    kept = Some(restore::WIRE_HEADER_BYTES);
                }
            }
        }
        kept
    }

    fn metadata(&self) -> Vec<parquet::file::metadata::KeyValue> {
        self.embedded
            .iter()
            .filter_map(|id| {
                let (text, _) = self.plan.embedded.get(id)?;
                Some(restore::schema_entry(*id, text))
            })
            .collect()
    }

    fn write(
        &mut self,
        group: &mut SerializedRowGroupWriter<'_, Vec<u8>>,
    ) -> Result<(), CompactedError> {
        for w in &mut self.sides {
            let mut col = group
                .next_column()?
                .ok_or_else(|| CompactedError::Parquet("no error column".into()))?;
            let errors = std::mem::take(&mut w.errors);
            let def = std::mem::take(&mut w.error_def);
            col.typed::<ByteArrayType>()
                .write_batch(&errors, Some(&def), None)?;
            col.close()?;
            w.typed.write(group)?;
        }
        Ok(())
    }
}

/// A schema version the last refresh refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub topic: String,
    pub schema_id: i32,
    pub reason: String,
}

/// The compactor's view of which tables have typed columns, refreshed every pass.
pub struct Typing {
    registry: Registry,
    meta: Arc<dyn MetaStore>,
    /// By topic id (the part of a stream id before `-<partition>`).
    plans: RwLock<HashMap<String, Arc<Plan>>>,
    /// Object keys of files found to carry their typed columns.
    typed_files: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// Files remembered as typed; past it the memory is cleared and footers are read again.
const TYPED_FILES_REMEMBERED_MAX: usize = 1 << 20;

impl Typing {
    /// `meta` holds the schema registry and the tables' columns.
    pub fn new(meta: Arc<dyn MetaStore>) -> Typing {
        Typing {
            registry: Registry::new(meta.clone()),
            meta,
            plans: RwLock::new(HashMap::new()),
            typed_files: std::sync::Mutex::default(),
        }
    }

    /// Merges new schema versions of each table's value subject into its columns.
    /// `tables` are (topic id, topic name). Returns the versions refused now; a topic whose
    /// columns cannot be read or saved keeps its previous plan (or none) and is logged.
    pub async fn refresh(&self, tables: &[(String, String)]) -> Vec<Refusal> {
        let mut refused = Vec::new();
        let mut plans = HashMap::new();
        for (topic_id, topic) in tables {
            match self.plan(topic_id, topic, &mut refused).await {
                Ok(Some(plan)) => {
                    plans.insert(topic_id.clone(), Arc::new(plan));
                }
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(topic, %error, "cannot read the table's typed columns; files are written as before");
                    if let Some(old) = self.plans_read().get(topic_id) {
                        plans.insert(topic_id.clone(), old.clone());
                    }
                }
            }
        }
        *self.plans.write().unwrap_or_else(PoisonError::into_inner) = plans;
        refused
    }

    fn plans_read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Plan>>> {
        self.plans.read().unwrap_or_else(PoisonError::into_inner)
    }

    async fn plan(
        &self,
        topic_id: &str,
        topic: &str,
        refused: &mut Vec<Refusal>,
    ) -> Result<Option<Plan>, TableError> {
        let stored = load(self.meta.as_ref(), topic_id).await?;
        let (mut columns, previous) = match stored {
            Some((c, v)) => (c, Some(v)),
            None => (Columns::default(), None),
        };
        let before = columns.clone();
        for side in [Side::Value, Side::Key] {
            self.merge_side(&mut columns, side, topic, refused).await?;
        }
        if columns.sides().is_empty() {
            return Ok(None);
        }
        columns
            .parquet_fields()
            .map_err(|e| TableError::Schema(e.to_string()))?;
        if columns != before {
            save(self.meta.as_ref(), topic_id, &columns, previous).await?;
        }
        let mut decoders = HashMap::new();
        for id in columns.value.merged.iter().chain(&columns.key.merged) {
            if let Ok(parsed) = self.registry.parsed(*id).await {
                decoders.insert(*id, parsed);
            }
        }
        // Values are elided only when a reader finds the same fields in the file.
        let value_fields = kind::parquet_type(&columns.typed_field(Side::Value), false)
            .map_err(|e| e.to_string())
            .and_then(|t| unshred::field_of(&t));
        let (value_fields, embedded) = match value_fields.map(|f| f.kind) {
            Ok(Kind::Struct { fields }) if columns.side(Side::Value).present() => {
                let embedded = embedded_schemas(&columns.value.merged, &decoders);
                (fields, embedded)
            }
            _ => (Vec::new(), HashMap::new()),
        };
        Ok(Some(Plan {
            topic: topic.to_owned(),
            columns,
            decoders,
            embedded,
            value_fields,
            undecodable: AtomicU64::new(0),
        }))
    }

    /// Merges the versions of `side`'s subject not seen yet.
    async fn merge_side(
        &self,
        columns: &mut Columns,
        side: Side,
        topic: &str,
        refused: &mut Vec<Refusal>,
    ) -> Result<(), TableError> {
        let subject = side.subject(topic);
        let versions = match self.registry.version_ids(&subject).await {
            Ok(versions) => versions,
            Err(RegistryError::SubjectNotFound(_)) => Vec::new(),
            Err(e) => return Err(TableError::Schema(e.to_string())),
        };
        for (_, id) in versions.into_iter().take(VERSIONS_MAX) {
            let seen = columns.side(side);
            if seen.merged.contains(&id) || seen.refused.contains_key(&id) {
                continue;
            }
            let mut last_id = columns.last_column_id;
            let mut fields = columns.side(side).fields.clone();
            let merged = match self.registry.parsed(id).await {
                Ok(parsed) => {
                    shape(&parsed).and_then(|s| kind::merge(&mut fields, &s, &mut last_id))
                }
                Err(e) => Err(e.to_string()),
            };
            match merged {
                Ok(_) => {
                    columns.last_column_id = last_id;
                    let target = columns.side_mut(side);
                    target.fields = fields;
                    target.merged.insert(id);
                }
                Err(reason) => {
                    tracing::warn!(topic, subject, schema_id = id, %reason, "schema version refused for the table");
                    refused.push(Refusal {
                        topic: topic.to_owned(),
                        schema_id: id,
                        reason: reason.clone(),
                    });
                    columns.side_mut(side).refused.insert(id, reason);
                }
            }
        }
        Ok(())
    }

    /// The typed columns for a file of `stream`, if its topic's table has them.
    pub fn extra(&self, stream: &str) -> Option<Box<dyn ExtraColumns>> {
        let (topic_id, _) = stream.rsplit_once('-')?;
        let plan = self.plans_read().get(topic_id)?.clone();
        let sides = plan
            .columns
            .sides()
            .into_iter()
            .map(|side| SideWriter {
                side,
                typed: Shredder::new(plan.columns.typed_field(side)),
                errors: Vec::new(),
                error_def: Vec::new(),
            })
            .collect();
        Some(Box::new(Writer {
            plan,
            sides,
            embedded: BTreeSet::new(),
        }))
    }

    /// The typed columns every file of `stream` should have: `None` when its topic's table has
    /// none. A file without them (compacted before the table or its subject existed) is
    /// rewritten with them (the compactor's retype step).
    pub fn typed_columns(&self, stream: &str) -> Option<Vec<&'static str>> {
        let (topic_id, _) = stream.rsplit_once('-')?;
        let plans = self.plans_read();
        let plan = plans.get(topic_id)?;
        Some(
            plan.columns
                .sides()
                .into_iter()
                .flat_map(|side| {
                    let ((error, _), (typed, _)) = side.columns();
                    [error, typed]
                })
                .collect(),
        )
    }

    /// Whether the file at `object_key` was found to have its typed columns (files never
    /// change, so it is asked once per compactor process).
    pub fn known_typed(&self, object_key: &str) -> bool {
        self.typed_files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(object_key)
    }

    pub fn mark_typed(&self, object_key: &str) {
        let mut files = self
            .typed_files
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if files.len() >= TYPED_FILES_REMEMBERED_MAX {
            files.clear();
        }
        files.insert(object_key.to_string());
    }

    /// Records that did not decode since the last call, by topic.
    pub fn take_undecodable(&self) -> Vec<(String, u64)> {
        self.plans_read()
            .values()
            .map(|p| (p.topic.clone(), p.undecodable.swap(0, Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// The Avro value schemas of `ids` as files embed them, each parsed from its own text.
fn embedded_schemas(
    ids: &BTreeSet<i32>,
    decoders: &HashMap<i32, Arc<Parsed>>,
) -> HashMap<i32, (String, AvroSchema)> {
    ids.iter()
        .filter_map(|id| match decoders.get(id).map(AsRef::as_ref) {
            Some(Parsed::Avro(schema)) => {
                let text = schema.self_contained();
                let parsed = restore::parse_embedded(&text).ok()?;
                Some((*id, (text, parsed)))
            }
            _ => None,
        })
        .collect()
}

/// Shapes a decoded scalar for its column: widens int to long and float to double, checks
/// that strings are UTF-8, and refuses a value of another type.
pub(crate) fn fit(d: Datum, kind: &Kind) -> Result<Datum, String> {
    Ok(match (d, kind) {
        (Datum::Int(v), Kind::Long) => Datum::Long(i64::from(v)),
        (Datum::Float(v), Kind::Double) => Datum::Double(f64::from(v)),
        (Datum::Bytes(b), Kind::String) => {
            std::str::from_utf8(&b).map_err(|_| "a string that is not UTF-8".to_owned())?;
            Datum::Bytes(b)
        }
        (d @ Datum::Null, _)
        | (d @ Datum::Bool(_), Kind::Boolean)
        | (d @ Datum::Int(_), Kind::Int | Kind::Date)
        | (d @ Datum::Long(_), Kind::Long | Kind::Time | Kind::Timestamp | Kind::Timestamptz)
        | (d @ Datum::Float(_), Kind::Float)
        | (d @ Datum::Double(_), Kind::Double)
        | (d @ Datum::Bytes(_), Kind::Binary)
        | (d @ Datum::Struct(_), Kind::Struct { .. })
        | (d @ Datum::List(_), Kind::List { .. })
        | (d @ Datum::Map(_), Kind::Map { .. }) => d,
        (d, kind) => return Err(format!("a {d:?} value for a {} column", kind.iceberg())),
    })
}

/// A decimal's unscaled big-endian two's complement bytes, sign-extended to `width` bytes.
pub(crate) fn fit_decimal(raw: &[u8], width: usize) -> Result<Vec<u8>, String> {
    let negative = raw.first().is_some_and(|b| b & 0x80 != 0);
    let pad = if negative { 0xff } else { 0 };
    let mut start = 0;
    while start + 1 < raw.len() && raw[start] == pad && (raw[start + 1] & 0x80 != 0) == negative {
        start += 1;
    }
    let digits = &raw[start..];
    if digits.len() > width {
        return Err(format!(
            "a decimal of {} bytes for a column of {width}",
            digits.len()
        ));
    }
    let mut out = vec![pad; width - digits.len()];
    out.extend_from_slice(digits);
    Ok(out)
}

/// Deletes the typed columns of topics that no longer exist (`live`: the ids of those that
/// do); a topic made again under the same name is a new topic with a new id. Returns how many
/// were deleted.
pub async fn forget_deleted(
    meta: &dyn MetaStore,
    live: &std::collections::HashSet<String>,
) -> Result<usize, TableError> {
    const PAGE_RECORDS: usize = 1024;
    // Past every `iceberg/columns/<id>` in the MetaStore's hierarchical key order.
    let end = format!("{COLUMNS_PREFIX}/");
    let mut start = COLUMNS_PREFIX.to_string();
    let mut deleted = 0;
    loop {
        let page = meta.range_scan(&start, &end, None, PAGE_RECORDS).await?;
        for record in &page {
            let id = record.key.strip_prefix(COLUMNS_PREFIX).unwrap_or_default();
            if !live.contains(id) {
                match meta
                    .delete(
                        &record.key,
                        Expect::Version(record.version.version_id),
                        None,
                    )
                    .await
                {
                    Ok(()) | Err(MetaError::KeyNotFound | MetaError::UnexpectedVersion) => {}
                    Err(e) => return Err(e.into()),
                }
                deleted += 1;
            }
        }
        match page.last() {
            Some(last) if page.len() == PAGE_RECORDS => start = format!("{}\u{1}", last.key),
            _ => return Ok(deleted),
        }
    }
}
