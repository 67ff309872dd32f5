//! Iceberg v2 manifests (the data files of a snapshot) and manifest lists, as Avro files whose
//! schemas carry Iceberg's field ids (engines resolve them by id).

use apache_avro::types::Value;
use apache_avro::{Reader, Schema, Writer};

use crate::TableError;

/// A data file's state in a manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Existing = 0,
    Added = 1,
    Deleted = 2,
}

/// What a file of the table holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    Data = 0,
    /// Iceberg position deletes: (file_path, pos) of rows that are not rows of the table.
    PositionDeletes = 1,
}

/// What a data file's statistics say, kept as the manifest's column bounds (engines prune
/// on them; commits read them instead of the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub offsets: (i64, i64),
    pub transactional: bool,
    pub control: bool,
}

/// Field ids the bounds are of (the Kafka columns `offset`, `is_transactional`, `is_control`).
const OFFSET_FIELD_ID: i32 = 2;
const IS_TRANSACTIONAL_FIELD_ID: i32 = 22;
const IS_CONTROL_FIELD_ID: i32 = 23;

/// One Parquet file of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataFile {
    pub content: Content,
    /// Absolute location (`file:///…`, `s3://…`).
    pub path: String,
    pub partition: i32,
    pub record_count: i64,
    pub file_size_bytes: i64,
    /// Data files only, when their statistics were known.
    pub bounds: Option<Bounds>,
}

/// A manifest's row: a data file with the snapshot and sequence numbers that added it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub status: Status,
    pub snapshot_id: i64,
    pub sequence_number: i64,
    pub file_sequence_number: i64,
    pub file: DataFile,
}

/// The row of a manifest list naming one manifest.
#[derive(Clone, Debug)]
pub struct ManifestFile {
    pub content: Content,
    pub path: String,
    pub length_bytes: i64,
    pub sequence_number: i64,
    pub min_sequence_number: i64,
    pub added_snapshot_id: i64,
    pub counts: Counts,
    /// Lowest and highest `partition` value of the live files (none if there are none).
    pub partition_bounds: Option<(i32, i32)>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub added_files: i32,
    pub existing_files: i32,
    pub deleted_files: i32,
    pub added_rows: i64,
    pub existing_rows: i64,
    pub deleted_rows: i64,
}

const MAP_INT_LONG: &str = r#"{"type":"array","logicalType":"map","items":{"type":"record","name":"KV_ID_KEY_VAL","fields":[{"name":"key","type":"int","field-id":KEY},{"name":"value","type":"long","field-id":VAL}]}}"#;
const MAP_INT_BYTES: &str = r#"{"type":"array","logicalType":"map","items":{"type":"record","name":"KV_ID_KEY_VAL","fields":[{"name":"key","type":"int","field-id":KEY},{"name":"value","type":"bytes","field-id":VAL}]}}"#;

fn map(template: &str, id: i32, key: i32, value: i32) -> String {
    let name = format!("k{key}_v{value}");
    let t = template
        .replace("KV_ID_KEY_VAL", &name)
        .replace("KEY", &key.to_string())
        .replace("VAL", &value.to_string());
    format!(
        r#"{{"name":"{}","type":["null",{t}],"default":null,"field-id":{id}}}"#,
        map_name(id)
    )
}

fn map_name(id: i32) -> &'static str {
    match id {
        108 => "column_sizes",
        109 => "value_counts",
        110 => "null_value_counts",
        137 => "nan_value_counts",
        125 => "lower_bounds",
        _ => "upper_bounds",
    }
}

fn manifest_entry_schema() -> String {
    let maps = [
        map(MAP_INT_LONG, 108, 117, 118),
        map(MAP_INT_LONG, 109, 119, 120),
        map(MAP_INT_LONG, 110, 121, 122),
        map(MAP_INT_LONG, 137, 138, 139),
        map(MAP_INT_BYTES, 125, 126, 127),
        map(MAP_INT_BYTES, 128, 129, 130),
    ]
    .join(",");
    format!(
        r#"{{"type":"record","name":"manifest_entry","fields":[
  {{"name":"status","type":"int","field-id":0}},
  {{"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1}},
  {{"name":"sequence_number","type":["null","long"],"default":null,"field-id":3}},
  {{"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4}},
  {{"name":"data_file","field-id":2,"type":{{"type":"record","name":"r2","fields":[
    {{"name":"content","type":"int","field-id":134}},
    {{"name":"file_path","type":"string","field-id":100}},
    {{"name":"file_format","type":"string","field-id":101}},
    {{"name":"partition","field-id":102,"type":{{"type":"record","name":"r102","fields":[
      {{"name":"partition","type":["null","int"],"default":null,"field-id":1000}}]}}}},
    {{"name":"record_count","type":"long","field-id":103}},
    {{"name":"file_size_in_bytes","type":"long","field-id":104}},
    {maps},
    {{"name":"key_metadata","type":["null","bytes"],"default":null,"field-id":131}},
    {{"name":"split_offsets","type":["null",{{"type":"array","items":"long","element-id":133}}],"default":null,"field-id":132}},
    {{"name":"equality_ids","type":["null",{{"type":"array","items":"int","element-id":136}}],"default":null,"field-id":135}},
    {{"name":"sort_order_id","type":["null","int"],"default":null,"field-id":140}}
  ]}}}}
]}}"#
    )
}

const MANIFEST_FILE_SCHEMA: &str = r#"{"type":"record","name":"manifest_file","fields":[
  {"name":"manifest_path","type":"string","field-id":500},
  {"name":"manifest_length","type":"long","field-id":501},
  {"name":"partition_spec_id","type":"int","field-id":502},
  {"name":"content","type":"int","field-id":517},
  {"name":"sequence_number","type":"long","field-id":515},
  {"name":"min_sequence_number","type":"long","field-id":516},
  {"name":"added_snapshot_id","type":"long","field-id":503},
  {"name":"added_files_count","type":"int","field-id":504},
  {"name":"existing_files_count","type":"int","field-id":505},
  {"name":"deleted_files_count","type":"int","field-id":506},
  {"name":"added_rows_count","type":"long","field-id":512},
  {"name":"existing_rows_count","type":"long","field-id":513},
  {"name":"deleted_rows_count","type":"long","field-id":514},
  {"name":"partitions","type":["null",{"type":"array","element-id":508,"items":{"type":"record","name":"r508","fields":[
    {"name":"contains_null","type":"boolean","field-id":509},
    {"name":"contains_nan","type":["null","boolean"],"default":null,"field-id":518},
    {"name":"lower_bound","type":["null","bytes"],"default":null,"field-id":510},
    {"name":"upper_bound","type":["null","bytes"],"default":null,"field-id":511}]}}],"default":null,"field-id":507},
  {"name":"key_metadata","type":["null","bytes"],"default":null,"field-id":519}
]}"#;

fn null() -> Value {
    Value::Union(0, Box::new(Value::Null))
}

fn some(v: Value) -> Value {
    Value::Union(1, Box::new(v))
}

/// What a manifest file's header says about the table.
pub struct ManifestHeader<'a> {
    pub schema_json: &'a str,
    pub partition_spec_json: &'a str,
}

/// Encodes a manifest holding `entries`, all of one content type.
pub fn write_manifest(
    header: &ManifestHeader<'_>,
    content: Content,
    entries: &[Entry],
) -> Result<Vec<u8>, TableError> {
    debug_assert!(entries.iter().all(|e| e.file.content == content));
    let schema = Schema::parse_str(&manifest_entry_schema())?;
    let mut writer = Writer::new(&schema, Vec::new());
    writer.add_user_metadata("schema".into(), header.schema_json)?;
    writer.add_user_metadata("schema-id".into(), "0")?;
    writer.add_user_metadata("partition-spec".into(), header.partition_spec_json)?;
    writer.add_user_metadata("partition-spec-id".into(), "0")?;
    writer.add_user_metadata("format-version".into(), "2")?;
    let content_name = match content {
        Content::Data => "data",
        Content::PositionDeletes => "deletes",
    };
    writer.add_user_metadata("content".into(), content_name)?;
    for e in entries {
        writer.append(entry_value(e))?;
    }
    Ok(writer.into_inner()?)
}

fn entry_value(e: &Entry) -> Value {
    let f = &e.file;
    let data_file = Value::Record(vec![
        ("content".into(), Value::Int(f.content as i32)),
        ("file_path".into(), Value::String(f.path.clone())),
        ("file_format".into(), Value::String("PARQUET".into())),
        (
            "partition".into(),
            Value::Record(vec![("partition".into(), some(Value::Int(f.partition)))]),
        ),
        ("record_count".into(), Value::Long(f.record_count)),
        ("file_size_in_bytes".into(), Value::Long(f.file_size_bytes)),
        ("column_sizes".into(), null()),
        ("value_counts".into(), null()),
        ("null_value_counts".into(), null()),
        ("nan_value_counts".into(), null()),
        ("lower_bounds".into(), bounds_value(f.bounds, false)),
        ("upper_bounds".into(), bounds_value(f.bounds, true)),
        ("key_metadata".into(), null()),
        ("split_offsets".into(), null()),
        ("equality_ids".into(), null()),
        ("sort_order_id".into(), null()),
    ]);
    Value::Record(vec![
        ("status".into(), Value::Int(e.status as i32)),
        ("snapshot_id".into(), some(Value::Long(e.snapshot_id))),
        (
            "sequence_number".into(),
            some(Value::Long(e.sequence_number)),
        ),
        (
            "file_sequence_number".into(),
            some(Value::Long(e.file_sequence_number)),
        ),
        ("data_file".into(), data_file),
    ])
}

/// Iceberg's single-value serialization of the bounds: longs as 8 bytes little-endian,
/// booleans as one byte.
fn bounds_value(bounds: Option<Bounds>, upper: bool) -> Value {
    let Some(b) = bounds else {
        return null();
    };
    let offset = if upper { b.offsets.1 } else { b.offsets.0 };
    let flag = |any: bool| Value::Bytes(vec![u8::from(upper && any)]);
    let pair = |id: i32, v: Value| {
        Value::Record(vec![("key".into(), Value::Int(id)), ("value".into(), v)])
    };
    some(Value::Array(vec![
        pair(OFFSET_FIELD_ID, Value::Bytes(offset.to_le_bytes().to_vec())),
        pair(IS_TRANSACTIONAL_FIELD_ID, flag(b.transactional)),
        pair(IS_CONTROL_FIELD_ID, flag(b.control)),
    ]))
}

/// The bounds written by [`bounds_value`], back.
fn read_bounds(data: &[(String, Value)]) -> Result<Option<Bounds>, TableError> {
    let (Ok(lower), Ok(upper)) = (field(data, "lower_bounds"), field(data, "upper_bounds")) else {
        return Ok(None);
    };
    let map = |v: &Value| -> Vec<(i32, Vec<u8>)> {
        let Value::Array(items) = v else {
            return Vec::new();
        };
        items
            .iter()
            .filter_map(|item| match item {
                Value::Record(kv) => match (kv.first(), kv.get(1)) {
                    (Some((_, Value::Int(k))), Some((_, Value::Bytes(b)))) => Some((*k, b.clone())),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    let (lower, upper) = (map(lower), map(upper));
    let get =
        |m: &[(i32, Vec<u8>)], id: i32| m.iter().find(|(k, _)| *k == id).map(|(_, v)| v.clone());
    let long = |b: Option<Vec<u8>>| {
        b.and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
            .map(i64::from_le_bytes)
    };
    let (Some(low), Some(high)) = (
        long(get(&lower, OFFSET_FIELD_ID)),
        long(get(&upper, OFFSET_FIELD_ID)),
    ) else {
        return Ok(None);
    };
    let flag = |id: i32| get(&upper, id).is_none_or(|b| b.first().is_none_or(|v| *v != 0));
    Ok(Some(Bounds {
        offsets: (low, high),
        transactional: flag(IS_TRANSACTIONAL_FIELD_ID),
        control: flag(IS_CONTROL_FIELD_ID),
    }))
}

/// Encodes a manifest list for snapshot `snapshot_id`.
pub fn write_manifest_list(
    snapshot_id: i64,
    parent_snapshot_id: Option<i64>,
    sequence_number: i64,
    manifests: &[ManifestFile],
) -> Result<Vec<u8>, TableError> {
    let schema = Schema::parse_str(MANIFEST_FILE_SCHEMA)?;
    let mut writer = Writer::new(&schema, Vec::new());
    writer.add_user_metadata("snapshot-id".into(), snapshot_id.to_string())?;
    let parent = parent_snapshot_id.map_or_else(|| "null".to_string(), |p| p.to_string());
    writer.add_user_metadata("parent-snapshot-id".into(), parent)?;
    writer.add_user_metadata("sequence-number".into(), sequence_number.to_string())?;
    writer.add_user_metadata("format-version".into(), "2")?;
    for m in manifests {
        let c = m.counts;
        let summary = match m.partition_bounds {
            Some((low, high)) => Value::Record(vec![
                ("contains_null".into(), Value::Boolean(false)),
                ("contains_nan".into(), some(Value::Boolean(false))),
                (
                    "lower_bound".into(),
                    some(Value::Bytes(low.to_le_bytes().to_vec())),
                ),
                (
                    "upper_bound".into(),
                    some(Value::Bytes(high.to_le_bytes().to_vec())),
                ),
            ]),
            None => Value::Record(vec![
                ("contains_null".into(), Value::Boolean(false)),
                ("contains_nan".into(), some(Value::Boolean(false))),
                ("lower_bound".into(), null()),
                ("upper_bound".into(), null()),
            ]),
        };
        writer.append(Value::Record(vec![
            ("manifest_path".into(), Value::String(m.path.clone())),
            ("manifest_length".into(), Value::Long(m.length_bytes)),
            ("partition_spec_id".into(), Value::Int(0)),
            ("content".into(), Value::Int(m.content as i32)),
            ("sequence_number".into(), Value::Long(m.sequence_number)),
            (
                "min_sequence_number".into(),
                Value::Long(m.min_sequence_number),
            ),
            ("added_snapshot_id".into(), Value::Long(m.added_snapshot_id)),
            ("added_files_count".into(), Value::Int(c.added_files)),
            ("existing_files_count".into(), Value::Int(c.existing_files)),
            ("deleted_files_count".into(), Value::Int(c.deleted_files)),
            ("added_rows_count".into(), Value::Long(c.added_rows)),
            ("existing_rows_count".into(), Value::Long(c.existing_rows)),
            ("deleted_rows_count".into(), Value::Long(c.deleted_rows)),
            ("partitions".into(), some(Value::Array(vec![summary]))),
            ("key_metadata".into(), null()),
        ]))?;
    }
    Ok(writer.into_inner()?)
}

/// The manifest paths a manifest list names.
pub fn read_manifest_list(bytes: &[u8]) -> Result<Vec<String>, TableError> {
    let mut out = Vec::new();
    for value in Reader::new(bytes)? {
        let fields = record(value?)?;
        out.push(string(field(&fields, "manifest_path")?)?);
    }
    Ok(out)
}

/// The entries of a manifest this crate wrote.
pub fn read_manifest(bytes: &[u8]) -> Result<Vec<Entry>, TableError> {
    let mut out = Vec::new();
    for value in Reader::new(bytes)? {
        let fields = record(value?)?;
        let status = match int(field(&fields, "status")?)? {
            0 => Status::Existing,
            1 => Status::Added,
            2 => Status::Deleted,
            other => return Err(corrupt(format!("manifest entry status {other}"))),
        };
        let data = record(field(&fields, "data_file")?.clone())?;
        let partition = record(field(&data, "partition")?.clone())?;
        let content = match int(field(&data, "content")?)? {
            0 => Content::Data,
            1 => Content::PositionDeletes,
            other => return Err(corrupt(format!("data file content {other}"))),
        };
        out.push(Entry {
            status,
            snapshot_id: long(field(&fields, "snapshot_id")?)?,
            sequence_number: long(field(&fields, "sequence_number")?)?,
            file_sequence_number: long(field(&fields, "file_sequence_number")?)?,
            file: DataFile {
                content,
                path: string(field(&data, "file_path")?)?,
                partition: int(field(&partition, "partition")?)?,
                record_count: long(field(&data, "record_count")?)?,
                file_size_bytes: long(field(&data, "file_size_in_bytes")?)?,
                bounds: read_bounds(&data)?,
            },
        });
    }
    Ok(out)
}

fn record(v: Value) -> Result<Vec<(String, Value)>, TableError> {
    match v {
        Value::Record(fields) => Ok(fields),
        other => Err(corrupt(format!("expected a record, found {other:?}"))),
    }
}

fn field<'v>(fields: &'v [(String, Value)], name: &str) -> Result<&'v Value, TableError> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| match v {
            Value::Union(_, inner) => inner.as_ref(),
            v => v,
        })
        .ok_or_else(|| corrupt(format!("no field {name}")))
}

fn int(v: &Value) -> Result<i32, TableError> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(corrupt(format!("expected an int, found {other:?}"))),
    }
}

fn long(v: &Value) -> Result<i64, TableError> {
    match v {
        Value::Long(l) => Ok(*l),
        other => Err(corrupt(format!("expected a long, found {other:?}"))),
    }
}

fn string(v: &Value) -> Result<String, TableError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(corrupt(format!("expected a string, found {other:?}"))),
    }
}

fn corrupt(what: String) -> TableError {
    TableError::Corrupt(what)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn entry(status: Status, partition: i32) -> Entry {
        Entry {
            status,
            snapshot_id: 7,
            sequence_number: 2,
            file_sequence_number: 2,
            file: DataFile {
                content: Content::Data,
                path: format!("file:///d/compacted/x-{partition}/0-10.parquet"),
                partition,
                record_count: 10,
                file_size_bytes: 1234,
                bounds: (partition != 1).then_some(Bounds {
                    offsets: (0, 9),
                    transactional: partition == 2,
                    control: false,
                }),
            },
        }
    }

    #[test]
    fn a_manifest_reads_back_the_entries_written() {
        let header = ManifestHeader {
            schema_json: "{}",
            partition_spec_json: "[]",
        };
        let entries = vec![
            entry(Status::Added, 0),
            entry(Status::Existing, 1),
            entry(Status::Deleted, 2),
        ];
        let bytes = write_manifest(&header, Content::Data, &entries).unwrap();
        assert_eq!(read_manifest(&bytes).unwrap(), entries);
        let reader = Reader::new(&bytes[..]).unwrap();
        let schema = reader.writer_schema().canonical_form();
        assert!(!schema.is_empty());
        let header_json =
            String::from_utf8(reader.user_metadata()["partition-spec"].clone()).unwrap();
        assert_eq!(header_json, "[]");
    }

    #[test]
    fn field_ids_survive_in_the_written_avro_schema() {
        let header = ManifestHeader {
            schema_json: "{}",
            partition_spec_json: "[]",
        };
        let bytes = write_manifest(&header, Content::Data, &[entry(Status::Added, 0)]).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for id in [
            "\"field-id\":1000",
            "\"field-id\":134",
            "\"element-id\":133",
        ] {
            assert!(text.contains(id), "{id} in the header");
        }
        let list = write_manifest_list(7, None, 2, &[]).unwrap();
        assert!(read_manifest_list(&list).unwrap().is_empty());
    }
}
