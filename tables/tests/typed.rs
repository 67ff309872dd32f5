//! Typed columns end to end inside the process: schemas registered in the registry, values in
//! the Confluent wire format, a compacted file written with the table's typed columns and read
//! back with the parquet crate's own row reader (engines are the e2e tests' judges).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::sync::Arc;

use apache_avro::types::Value as Avro;
use bytes::Bytes;
use metastore::{MemoryMetaStore, MetaOptions, MetaStore};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use record_batch::{decode_batch, encode_batch, split_batches, BatchHeader, RecordRow};
use schema_registry::compatibility::Level;
use schema_registry::schema::SchemaType;
use schema_registry::{Registry, SchemaRequest};
use serde_json::{json, Value};
use storage::compacted::{
    decode_group, FileWriter, Footer, ParsedTail, RebuildOptions, WriterOptions,
};
use tables::typed::restore::Restorer;
use tables::typed::{self, Typing};

/// A record's key or value bytes.
type Payload = Option<Vec<u8>>;

const TOPIC_ID: &str = "00000000000000000000000000000001";

struct Fixture {
    meta: Arc<dyn MetaStore>,
    registry: Registry,
    typing: Typing,
}

impl Fixture {
    fn new() -> Fixture {
        let meta: Arc<dyn MetaStore> = Arc::new(MemoryMetaStore::open(MetaOptions::default()));
        Fixture {
            registry: Registry::new(meta.clone()),
            typing: Typing::new(meta.clone()),
            meta,
        }
    }

    async fn register(&self, subject: &str, kind: SchemaType, schema: &str) -> i32 {
        let request = SchemaRequest {
            schema: schema.to_string(),
            schema_type: Some(kind),
            references: vec![],
            id: None,
            version: None,
        };
        self.registry.register(subject, &request).await.unwrap()
    }

    async fn refresh(&self) -> Vec<typed::Refusal> {
        self.typing
            .refresh(&[(TOPIC_ID.to_string(), "orders".to_string())])
            .await
    }

    /// Writes one file of `values` and reads its rows back as JSON.
    fn rows(&self, values: Vec<Option<Vec<u8>>>) -> Vec<Value> {
        let keyed = values.into_iter().map(|v| (None, v)).collect();
        self.rows_keyed(keyed)
            .into_iter()
            .map(|r| json!({"value_error": r["value_error"], "value_typed": r["value_typed"]}))
            .collect()
    }

    /// One compacted file of `batch` (record offsets from 0), with the table's typed columns.
    fn write(&self, batch: Bytes) -> Bytes {
        let stream = format!("{TOPIC_ID}-0");
        let options = WriterOptions {
            row_group_rows_target: 2,
            row_group_bytes_target: 1 << 20,
        };
        let extra = self.typing.extra(&stream);
        let mut writer = FileWriter::with_extra(&stream, &options, extra).unwrap();
        writer.push(0, batch).unwrap();
        writer.finish().unwrap().0
    }

    /// Writes one file of (key, value) records and reads its typed columns back as JSON.
    fn rows_keyed(&self, records: Vec<(Payload, Payload)>) -> Vec<Value> {
        let batch = one_batch(&records);
        let file = self.write(batch);
        // The Kafka reader reads every record back as written, elided values rebuilt.
        let restoring = RebuildOptions {
            restorer: Some(Arc::new(Restorer::new())),
            ..RebuildOptions::default()
        };
        let back =
            storage::compacted::read_batches(file.clone(), 0, usize::MAX, &restoring).unwrap();
        assert_eq!(back.base_offset, 0);
        let read: Vec<(Option<Bytes>, Option<Bytes>)> = split_batches(back.bytes)
            .unwrap()
            .iter()
            .flat_map(|b| decode_batch(b).unwrap().records)
            .map(|r| (r.key, r.value))
            .collect();
        let written: Vec<(Option<Bytes>, Option<Bytes>)> = records
            .into_iter()
            .map(|(k, v)| (k.map(Bytes::from), v.map(Bytes::from)))
            .collect();
        assert_eq!(read, written, "Kafka reads what was produced");
        let len = file.len() as u64;
        let ParsedTail::Footer(footer) = Footer::parse(&file, len).unwrap() else {
            panic!("the whole file holds its footer");
        };
        let span = footer.groups[0];
        let group = file.slice(span.byte_start as usize..span.byte_end as usize);
        let plain = decode_group(&footer, 0, group, &RebuildOptions::default());
        assert_eq!(
            plain.is_err(),
            footer.values_elided(),
            "a file with elided values is refused without a restorer"
        );
        let reader = SerializedFileReader::new(file).unwrap();
        reader
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                let row = to_json(&Field::Group(row.unwrap()));
                let typed = ["value_error", "value_typed", "key_error", "key_typed"];
                json!(typed
                    .iter()
                    .map(|c| (c.to_string(), row.get(*c).cloned().unwrap_or(Value::Null)))
                    .collect::<serde_json::Map<_, _>>())
            })
            .collect()
    }
}

/// A row as JSON (the parquet crate's own `to_json_value` needs its `json` feature).
fn to_json(f: &Field) -> Value {
    match f {
        Field::Null => Value::Null,
        Field::Bool(b) => json!(b),
        Field::Int(i) | Field::Date(i) => json!(i),
        Field::Long(i) | Field::TimestampMicros(i) | Field::TimeMicros(i) => json!(i),
        Field::Float(x) => json!(x),
        Field::Double(x) => json!(x),
        Field::Str(s) => json!(s),
        Field::Bytes(b) => json!(b.data()),
        Field::Decimal(d) => {
            let bytes = d.data();
            let mut unscaled: i128 = if bytes.first().is_some_and(|b| b & 0x80 != 0) {
                -1
            } else {
                0
            };
            for b in bytes {
                unscaled = (unscaled << 8) | i128::from(*b);
            }
            json!(format!("{unscaled}e-{}", d.scale()))
        }
        Field::Group(row) => Value::Object(
            row.get_column_iter()
                .map(|(name, v)| (name.clone(), to_json(v)))
                .collect(),
        ),
        Field::ListInternal(list) => Value::Array(list.elements().iter().map(to_json).collect()),
        Field::MapInternal(map) => Value::Object(
            map.entries()
                .iter()
                .map(|(k, v)| {
                    (
                        to_json(k)
                            .as_str()
                            .map_or_else(|| to_json(k).to_string(), str::to_owned),
                        to_json(v),
                    )
                })
                .collect(),
        ),
        other => json!(format!("{other:?}")),
    }
}

fn wire(id: i32, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8];
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

const ORDER_V1: &str = r#"{"type":"record","name":"Order","fields":[
  {"name":"id","type":"long"},
  {"name":"customer","type":"string"},
  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
  {"name":"placed","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"tags","type":{"type":"array","items":"string"}},
  {"name":"counts","type":{"type":"map","values":"int"}},
  {"name":"address","type":{"type":"record","name":"Address","fields":[{"name":"city","type":"string"}]}},
  {"name":"note","type":["null","string"],"default":null}
]}"#;

fn order_v1(id: i64, note: Option<&str>) -> Avro {
    Avro::Record(vec![
        ("id".into(), Avro::Long(id)),
        ("customer".into(), Avro::String(format!("c{id}"))),
        (
            "amount".into(),
            Avro::Decimal(apache_avro::Decimal::from(vec![0x04, 0xd2])),
        ),
        ("placed".into(), Avro::TimestampMillis(1_700_000_000_123)),
        (
            "tags".into(),
            Avro::Array(vec![Avro::String("a".into()), Avro::String("b".into())]),
        ),
        (
            "counts".into(),
            Avro::Map([("x".to_string(), Avro::Int(1))].into_iter().collect()),
        ),
        (
            "address".into(),
            Avro::Record(vec![("city".into(), Avro::String("Oslo".into()))]),
        ),
        (
            "note".into(),
            match note {
                Some(n) => Avro::Union(1, Box::new(Avro::String(n.into()))),
                None => Avro::Union(0, Box::new(Avro::Null)),
            },
        ),
    ])
}

fn avro_bytes(schema: &str, value: Avro) -> Vec<u8> {
    let schema = apache_avro::Schema::parse_str(schema).unwrap();
    apache_avro::to_avro_datum(&schema, value).unwrap()
}

#[tokio::test]
async fn avro_values_become_typed_columns_with_nested_records_lists_maps_and_logical_types() {
    let f = Fixture::new();
    let id = f.register("orders-value", SchemaType::Avro, ORDER_V1).await;
    assert!(f.refresh().await.is_empty());
    let rows = f.rows(vec![
        Some(wire(id, &avro_bytes(ORDER_V1, order_v1(7, Some("fast"))))),
        Some(wire(id, &avro_bytes(ORDER_V1, order_v1(8, None)))),
        None,
    ]);
    let typed = &rows[0]["value_typed"];
    assert_eq!(rows[0]["value_error"], Value::Null);
    assert_eq!(typed["id"], 7);
    assert_eq!(typed["customer"], "c7");
    assert_eq!(typed["tags"], json!(["a", "b"]));
    assert_eq!(typed["counts"], json!({"x": 1}));
    assert_eq!(typed["address"], json!({"city": "Oslo"}));
    assert_eq!(typed["note"], "fast");
    assert_eq!(rows[1]["value_typed"]["note"], Value::Null);
    assert_eq!(
        rows[2],
        json!({"value_error": null, "value_typed": null}),
        "a tombstone is null"
    );
    let (columns, _) = typed::load(f.meta.as_ref(), TOPIC_ID)
        .await
        .unwrap()
        .unwrap();
    let amount = columns
        .value
        .fields
        .iter()
        .find(|c| c.name == "amount")
        .unwrap();
    assert_eq!(
        amount.kind,
        typed::kind::Kind::Decimal {
            precision: 9,
            scale: 2
        }
    );
    assert!(
        typed["amount"] == "1234e-2",
        "decimal 1234 at scale 2: {}",
        typed["amount"]
    );
}

#[tokio::test]
async fn a_field_added_mid_stream_is_a_new_column_and_old_ids_never_change() {
    let f = Fixture::new();
    let v1 = f.register("orders-value", SchemaType::Avro, ORDER_V1).await;
    f.refresh().await;
    let (before, _) = typed::load(f.meta.as_ref(), TOPIC_ID)
        .await
        .unwrap()
        .unwrap();
    // apache-avro's compatibility check refuses an unchanged decimal field (noted on the
    // registry's issue); this test is about the table, so the subject checks nothing.
    f.registry
        .set_level(Some("orders-value"), Level::None)
        .await
        .unwrap();
    let v2_text = ORDER_V1.replace(
        r#"{"name":"note""#,
        r#"{"name":"email","type":["null","string"],"default":null},{"name":"note""#,
    );
    let v2 = f.register("orders-value", SchemaType::Avro, &v2_text).await;
    assert!(f.refresh().await.is_empty());
    let (after, _) = typed::load(f.meta.as_ref(), TOPIC_ID)
        .await
        .unwrap()
        .unwrap();
    for old in &before.value.fields {
        let same = after
            .value
            .fields
            .iter()
            .find(|c| c.name == old.name)
            .unwrap();
        assert_eq!(same.id, old.id, "{} keeps its id", old.name);
    }
    let email = after
        .value
        .fields
        .iter()
        .find(|c| c.name == "email")
        .unwrap();
    assert!(email.id > before.last_column_id);
    let mut v2_value = order_v1(9, None);
    if let Avro::Record(fields) = &mut v2_value {
        fields.insert(
            7,
            (
                "email".into(),
                Avro::Union(1, Box::new(Avro::String("a@b".into()))),
            ),
        );
    }
    let rows = f.rows(vec![
        Some(wire(v1, &avro_bytes(ORDER_V1, order_v1(1, None)))),
        Some(wire(v2, &avro_bytes(&v2_text, v2_value))),
    ]);
    assert_eq!(rows[0]["value_typed"]["email"], Value::Null);
    assert_eq!(rows[1]["value_typed"]["email"], "a@b");
    assert_eq!(rows[1]["value_typed"]["id"], 9);
}

#[tokio::test]
async fn a_change_iceberg_cannot_express_is_refused_with_its_reason_and_the_table_goes_on() {
    let f = Fixture::new();
    let v1 = f.register("orders-value", SchemaType::Avro, ORDER_V1).await;
    f.registry
        .set_level(Some("orders-value"), Level::None)
        .await
        .unwrap();
    let bad_text = ORDER_V1.replace(
        r#"{"name":"customer","type":"string"}"#,
        r#"{"name":"customer","type":"int"}"#,
    );
    let bad = f
        .register("orders-value", SchemaType::Avro, &bad_text)
        .await;
    let refused = f.refresh().await;
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].schema_id, bad);
    assert!(refused[0]
        .reason
        .contains("customer is string and cannot become int"));
    assert!(f.refresh().await.is_empty(), "a refusal is reported once");
    let rows = f.rows(vec![
        Some(wire(v1, &avro_bytes(ORDER_V1, order_v1(1, None)))),
        Some(wire(bad, b"\x02\x04")),
        Some(b"plain text".to_vec()),
        Some(wire(v1, b"\xff")),
        Some(wire(999, b"")),
    ]);
    assert_eq!(rows[0]["value_typed"]["id"], 1);
    let errors: Vec<String> = rows[1..]
        .iter()
        .map(|r| {
            assert_eq!(r["value_typed"], Value::Null);
            r["value_error"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(
        errors[0].contains("is refused for this table"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("not in the Confluent wire format"),
        "{}",
        errors[1]
    );
    assert!(
        errors[2].starts_with(&format!("schema id {v1}:")),
        "{}",
        errors[2]
    );
    assert!(
        errors[3].contains("not a version of subject orders-value"),
        "{}",
        errors[3]
    );
    assert_eq!(f.typing.take_undecodable(), vec![("orders".to_string(), 4)]);
}

#[tokio::test]
async fn json_schema_values_are_typed_by_their_properties() {
    let f = Fixture::new();
    let schema = r#"{"type":"object","properties":{
        "id":{"type":"integer"},"price":{"type":"number"},"ok":{"type":"boolean"},
        "at":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"},
        "items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"}}}},
        "extra":{"type":"object","additionalProperties":{"type":"integer"}},
        "any":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}"#;
    let id = f.register("orders-value", SchemaType::Json, schema).await;
    f.refresh().await;
    let value = json!({"id": 5, "price": 2.5, "ok": true, "at": "2024-01-02T03:04:05.5Z",
        "day": "1970-01-03", "items": [{"sku": "k1"}, {"sku": "k2"}], "extra": {"n": 3}, "any": 4});
    let rows = f.rows(vec![
        Some(wire(id, value.to_string().as_bytes())),
        Some(wire(id, br#"{"id": "five"}"#)),
    ]);
    let typed = &rows[0]["value_typed"];
    assert_eq!(typed["id"], 5);
    assert_eq!(typed["price"], 2.5);
    assert_eq!(typed["ok"], true);
    assert_eq!(typed["items"], json!([{"sku": "k1"}, {"sku": "k2"}]));
    assert_eq!(typed["extra"], json!({"n": 3}));
    assert_eq!(
        typed["any"], "4",
        "a value of no single type keeps its JSON text"
    );
    assert!(rows[1]["value_error"].as_str().unwrap().contains("/id"));
}

#[tokio::test]
async fn protobuf_values_are_typed_by_the_first_message() {
    let f = Fixture::new();
    let schema = r#"syntax = "proto3";
        message Order { int64 id = 1; string name = 2; repeated int32 qty = 3;
          map<string, string> labels = 4; Line line = 5; Kind kind = 6; }
        message Line { string sku = 1; }
        enum Kind { NONE = 0; BIG = 1; }"#;
    let id = f
        .register("orders-value", SchemaType::Protobuf, schema)
        .await;
    f.refresh().await;
    // message indexes [0] (one zero byte), then: id=150, name="ab", qty=[1,2] packed,
    // labels {"k": "v"}, line {sku: "s"}, kind BIG.
    let mut payload = vec![
        0x00, 0x08, 0x96, 0x01, 0x12, 0x02, b'a', b'b', 0x1a, 0x02, 0x01, 0x02,
    ];
    payload.extend_from_slice(&[0x22, 0x06, 0x0a, 0x01, b'k', 0x12, 0x01, b'v']);
    payload.extend_from_slice(&[0x2a, 0x03, 0x0a, 0x01, b's', 0x30, 0x01]);
    let rows = f.rows(vec![Some(wire(id, &payload))]);
    let typed = &rows[0]["value_typed"];
    assert_eq!(rows[0]["value_error"], Value::Null);
    assert_eq!(typed["id"], 150);
    assert_eq!(typed["name"], "ab");
    assert_eq!(typed["qty"], json!([1, 2]));
    assert_eq!(typed["labels"], json!({"k": "v"}));
    assert_eq!(typed["line"], json!({"sku": "s"}));
    assert_eq!(typed["kind"], "BIG");
}

#[tokio::test]
async fn keys_with_a_schema_of_their_own_get_typed_key_columns_beside_the_values() {
    let f = Fixture::new();
    let key_schema = r#"{"type":"record","name":"Key","fields":[{"name":"region","type":"string"},{"name":"n","type":"int"}]}"#;
    let key_id = f.register("orders-key", SchemaType::Avro, key_schema).await;
    let value_id = f
        .register("orders-value", SchemaType::Avro, r#""string""#)
        .await;
    f.refresh().await;
    let key = |region: &str, n: i32| {
        let v = Avro::Record(vec![
            ("region".into(), Avro::String(region.into())),
            ("n".into(), Avro::Int(n)),
        ]);
        Some(wire(key_id, &avro_bytes(key_schema, v)))
    };
    let value = |s: &str| {
        Some(wire(
            value_id,
            &avro_bytes(r#""string""#, Avro::String(s.into())),
        ))
    };
    let rows = f.rows_keyed(vec![
        (key("eu", 1), value("a")),
        (Some(b"k".to_vec()), value("b")),
        (None, None),
    ]);
    assert_eq!(rows[0]["key_typed"], json!({"region": "eu", "n": 1}));
    assert_eq!(
        rows[0]["value_typed"],
        json!({"value": "a"}),
        "a value that is not a record is one column"
    );
    assert!(rows[1]["key_error"]
        .as_str()
        .unwrap()
        .contains("wire format"));
    assert_eq!(rows[1]["value_typed"], json!({"value": "b"}));
    assert_eq!(rows[2]["key_typed"], Value::Null);
    let (columns, _) = typed::load(f.meta.as_ref(), TOPIC_ID)
        .await
        .unwrap()
        .unwrap();
    let mut ids: Vec<i32> = columns
        .value
        .fields
        .iter()
        .chain(&columns.key.fields)
        .map(|c| c.id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "ids are unique across keys and values");
}

#[tokio::test]
async fn the_columns_of_a_deleted_topic_are_forgotten_and_a_live_topics_are_kept() {
    let f = Fixture::new();
    f.register("orders-value", SchemaType::Avro, ORDER_V1).await;
    f.refresh().await;
    let live: std::collections::HashSet<String> = [TOPIC_ID.to_string()].into();
    assert_eq!(
        typed::forget_deleted(f.meta.as_ref(), &live).await.unwrap(),
        0
    );
    assert!(typed::load(f.meta.as_ref(), TOPIC_ID)
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        typed::forget_deleted(f.meta.as_ref(), &Default::default())
            .await
            .unwrap(),
        1
    );
    assert!(typed::load(f.meta.as_ref(), TOPIC_ID)
        .await
        .unwrap()
        .is_none());
}

/// The `value` column of every row of a file, as stored.
fn stored_values(file: Bytes) -> Vec<Option<Vec<u8>>> {
    let reader = SerializedFileReader::new(file).unwrap();
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            row.get_column_iter()
                .find(|(name, _)| name.as_str() == "value")
                .and_then(|(_, v)| match v {
                    Field::Bytes(b) => Some(b.data().to_vec()),
                    _ => None,
                })
        })
        .collect()
}

/// One batch of (key, value) records at offsets from 0.
fn one_batch(records: &[(Payload, Payload)]) -> Bytes {
    let records: Vec<RecordRow> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| RecordRow {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: i32::try_from(i).unwrap(),
            key: k.clone().map(Bytes::from),
            value: v.clone().map(Bytes::from),
            headers: vec![],
        })
        .collect();
    let header = BatchHeader {
        base_offset: 0,
        partition_leader_epoch: -1,
        attributes: 0,
        last_offset_delta: i32::try_from(records.len()).unwrap() - 1,
        base_timestamp: 1,
        max_timestamp: 1,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    };
    encode_batch(&header, &records, 0).unwrap()
}

fn unkeyed(values: &[Payload]) -> Vec<(Payload, Payload)> {
    values.iter().map(|v| (None, v.clone())).collect()
}

#[tokio::test]
async fn an_avro_value_its_typed_columns_hold_is_stored_once_and_one_they_cannot_stays_whole() {
    let f = Fixture::new();
    let id = f.register("orders-value", SchemaType::Avro, ORDER_V1).await;
    f.refresh().await;
    let exact = wire(id, &avro_bytes(ORDER_V1, order_v1(7, Some("fast"))));
    // A decimal written with a redundant sign byte decodes to the same number, but its bytes
    // cannot be given back from the column.
    let mut padded = order_v1(8, None);
    if let Avro::Record(fields) = &mut padded {
        fields[2].1 = Avro::Decimal(apache_avro::Decimal::from(vec![0x00, 0x04, 0xd2]));
    }
    let padded = wire(id, &avro_bytes(ORDER_V1, padded));
    let values = vec![
        Some(exact.clone()),
        Some(padded.clone()),
        Some(b"not avro".to_vec()),
        Some(wire(id, &[])),
        None,
    ];
    let rows = f.rows(values.clone());
    assert_eq!(rows[1]["value_typed"]["amount"], "1234e-2");
    assert_eq!(
        rows[3]["value_typed"],
        Value::Null,
        "an empty payload is not typed"
    );
    let file = f.write(one_batch(&unkeyed(&values)));
    let ParsedTail::Footer(footer) = Footer::parse(&file, file.len() as u64).unwrap() else {
        panic!("the whole file holds its footer");
    };
    assert!(footer.values_elided());
    let embedded = format!("kafka.value.avro.schema.{id}");
    assert!(footer
        .file_metadata()
        .key_value_metadata()
        .unwrap()
        .iter()
        .any(|kv| kv.key == embedded));
    let stored = stored_values(file);
    assert_eq!(
        stored[0].as_deref(),
        Some(&exact[..5]),
        "only the header is kept"
    );
    assert_eq!(stored[1].as_deref(), Some(&padded[..]));
    assert_eq!(stored[2].as_deref(), Some(&b"not avro"[..]));
    assert_eq!(stored[4], None);
}

const EVERY_SHAPE: &str = r#"{"type":"record","name":"Shape","fields":[
  {"name":"flag","type":"boolean"},
  {"name":"ratio","type":"float"},
  {"name":"score","type":"double"},
  {"name":"day","type":{"type":"int","logicalType":"date"}},
  {"name":"at","type":{"type":"int","logicalType":"time-millis"}},
  {"name":"seen","type":{"type":"long","logicalType":"timestamp-micros"}},
  {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B","C"]}},
  {"name":"hash","type":{"type":"fixed","name":"Hash","size":4}},
  {"name":"price","type":{"type":"fixed","name":"Price","size":8,"logicalType":"decimal","precision":12,"scale":3}},
  {"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[
    {"name":"sku","type":"string"},
    {"name":"qty","type":["null","int"]},
    {"name":"marks","type":{"type":"array","items":"long"}}]}}},
  {"name":"groups","type":{"type":"map","values":{"type":"array","items":"string"}}},
  {"name":"either","type":["null","string","long","Line"]},
  {"name":"maybe","type":["null",{"type":"map","values":"double"}]}
]}"#;

fn line(sku: &str, qty: Option<i32>, marks: &[i64]) -> Avro {
    Avro::Record(vec![
        ("sku".into(), Avro::String(sku.into())),
        (
            "qty".into(),
            match qty {
                Some(q) => Avro::Union(1, Box::new(Avro::Int(q))),
                None => Avro::Union(0, Box::new(Avro::Null)),
            },
        ),
        (
            "marks".into(),
            Avro::Array(marks.iter().map(|m| Avro::Long(*m)).collect()),
        ),
    ])
}

fn shape(n: i32) -> Avro {
    let groups: std::collections::HashMap<String, Avro> = (0..n % 3)
        .map(|i| {
            let items = (0..i).map(|j| Avro::String(format!("g{j}"))).collect();
            (format!("k{i}"), Avro::Array(items))
        })
        .collect();
    let either = match n % 4 {
        0 => Avro::Union(0, Box::new(Avro::Null)),
        1 => Avro::Union(1, Box::new(Avro::String("s".into()))),
        2 => Avro::Union(2, Box::new(Avro::Long(-5))),
        _ => Avro::Union(3, Box::new(line("inner", None, &[]))),
    };
    let maybe = match n % 2 {
        0 => Avro::Union(0, Box::new(Avro::Null)),
        _ => Avro::Union(
            1,
            Box::new(Avro::Map(
                [("x".to_string(), Avro::Double(f64::from(n) / 3.0))]
                    .into_iter()
                    .collect(),
            )),
        ),
    };
    Avro::Record(vec![
        ("flag".into(), Avro::Boolean(n % 2 == 0)),
        ("ratio".into(), Avro::Float(n as f32 * 0.5)),
        ("score".into(), Avro::Double(-f64::from(n))),
        ("day".into(), Avro::Date(19_000 + n)),
        ("at".into(), Avro::TimeMillis(n * 1_000 + 7)),
        ("seen".into(), Avro::TimestampMicros(1_700_000_000_000_001)),
        ("kind".into(), Avro::Enum(2, "C".into())),
        ("hash".into(), Avro::Fixed(4, vec![1, 2, 3, 4])),
        (
            "price".into(),
            Avro::Decimal(apache_avro::Decimal::from(vec![
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x0c,
            ])),
        ),
        (
            "lines".into(),
            Avro::Array(
                (0..n % 3)
                    .map(|i| {
                        line(
                            &format!("s{i}"),
                            (i % 2 == 0).then_some(i),
                            &[1, 2][..usize::try_from(i).unwrap()],
                        )
                    })
                    .collect(),
            ),
        ),
        ("groups".into(), Avro::Map(groups)),
        ("either".into(), either),
        ("maybe".into(), maybe),
    ])
}

#[tokio::test]
async fn values_of_every_avro_shape_are_rebuilt_byte_for_byte_from_their_typed_columns() {
    let f = Fixture::new();
    let id = f
        .register("orders-value", SchemaType::Avro, EVERY_SHAPE)
        .await;
    assert!(f.refresh().await.is_empty());
    let values: Vec<Option<Vec<u8>>> = (0..12)
        .map(|n| Some(wire(id, &avro_bytes(EVERY_SHAPE, shape(n)))))
        .collect();
    // `rows` also reads the file as Kafka does and compares every record with its value.
    let rows = f.rows(values.clone());
    assert!(rows.iter().all(|r| r["value_error"] == Value::Null));
    let stored = stored_values(f.write(one_batch(&unkeyed(&values))));
    let elided = stored
        .iter()
        .filter(|v| v.as_ref().map(Vec::len) == Some(5));
    assert_eq!(elided.count(), values.len(), "every value is stored once");
}
