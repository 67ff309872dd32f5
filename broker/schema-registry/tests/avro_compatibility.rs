//! Avro schema evolution judged as Confluent judges it (Avro's schema resolution rules,
//! specification § "Schema Resolution"): each pair is (writer = the old schema, reader = the
//! new one) under BACKWARD, the default level; FORWARD is the same pair reversed.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use schema_registry::schema::{Parsed, SchemaType};

fn record(fields: &str) -> String {
    format!(r#"{{"type":"record","name":"R","namespace":"n","fields":[{fields}]}}"#)
}

fn field(name: &str, ty: &str) -> String {
    format!(r#"{{"name":"{name}","type":{ty}}}"#)
}

fn field_default(name: &str, ty: &str, default: &str) -> String {
    format!(r#"{{"name":"{name}","type":{ty},"default":{default}}}"#)
}

fn reads(reader: &str, writer: &str) -> bool {
    let reader = Parsed::parse(SchemaType::Avro, reader, &[]).unwrap();
    let writer = Parsed::parse(SchemaType::Avro, writer, &[]).unwrap();
    reader.incompatibilities_reading(&writer).is_empty()
}

#[test]
fn the_avro_evolution_corpus_is_judged_as_the_specification_resolves_it() {
    let a = field("a", r#""int""#);
    let enum_abc = r#"{"type":"enum","name":"E","symbols":["A","B","C"]}"#;
    let enum_ab = r#"{"type":"enum","name":"E","symbols":["A","B"]}"#;
    let enum_ab_default = r#"{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}"#;
    // (name, writer, reader, the reader can read the writer's data)
    let corpus: Vec<(&str, String, String, bool)> = vec![
        (
            "field added with a default",
            record(&a),
            record(&format!(
                "{a},{}",
                field_default("b", r#""string""#, r#""x""#)
            )),
            true,
        ),
        (
            "field added without a default",
            record(&a),
            record(&format!("{a},{}", field("b", r#""string""#))),
            false,
        ),
        (
            "field removed",
            record(&format!("{a},{}", field("b", r#""string""#))),
            record(&a),
            true,
        ),
        (
            "int promoted to long",
            record(&a),
            record(&field("a", r#""long""#)),
            true,
        ),
        (
            "int promoted to float",
            record(&a),
            record(&field("a", r#""float""#)),
            true,
        ),
        (
            "int promoted to double",
            record(&a),
            record(&field("a", r#""double""#)),
            true,
        ),
        (
            "long promoted to double",
            record(&field("a", r#""long""#)),
            record(&field("a", r#""double""#)),
            true,
        ),
        (
            "float promoted to double",
            record(&field("a", r#""float""#)),
            record(&field("a", r#""double""#)),
            true,
        ),
        (
            "long narrowed to int",
            record(&field("a", r#""long""#)),
            record(&a),
            false,
        ),
        (
            "double narrowed to float",
            record(&field("a", r#""double""#)),
            record(&field("a", r#""float""#)),
            false,
        ),
        (
            "string read as bytes",
            record(&field("a", r#""string""#)),
            record(&field("a", r#""bytes""#)),
            true,
        ),
        (
            "bytes read as string",
            record(&field("a", r#""bytes""#)),
            record(&field("a", r#""string""#)),
            true,
        ),
        (
            "int changed to string",
            record(&a),
            record(&field("a", r#""string""#)),
            false,
        ),
        (
            "a type made nullable",
            record(&a),
            record(&field_default("a", r#"["null","int"]"#, "null")),
            true,
        ),
        (
            "a union narrowed to one of its types",
            record(&field_default("a", r#"["null","int"]"#, "null")),
            record(&a),
            false,
        ),
        (
            "a union branch added",
            record(&field("a", r#"["int","string"]"#)),
            record(&field("a", r#"["int","string","boolean"]"#)),
            true,
        ),
        (
            "a union branch removed",
            record(&field("a", r#"["int","string"]"#)),
            record(&field("a", r#"["int"]"#)),
            false,
        ),
        (
            "an enum symbol added",
            enum_ab.to_string(),
            enum_abc.to_string(),
            true,
        ),
        (
            "an enum symbol removed",
            enum_abc.to_string(),
            enum_ab.to_string(),
            false,
        ),
        (
            "an enum symbol removed under an enum default",
            enum_abc.to_string(),
            enum_ab_default.to_string(),
            true,
        ),
        (
            "array items promoted",
            r#"{"type":"array","items":"int"}"#.into(),
            r#"{"type":"array","items":"long"}"#.into(),
            true,
        ),
        (
            "array items changed",
            r#"{"type":"array","items":"int"}"#.into(),
            r#"{"type":"array","items":"string"}"#.into(),
            false,
        ),
        (
            "map values promoted",
            r#"{"type":"map","values":"float"}"#.into(),
            r#"{"type":"map","values":"double"}"#.into(),
            true,
        ),
        (
            "fixed resized",
            r#"{"type":"fixed","name":"F","size":4}"#.into(),
            r#"{"type":"fixed","name":"F","size":8}"#.into(),
            false,
        ),
        (
            "a record renamed",
            record(&a),
            a_record_named("Other", &a),
            false,
        ),
        (
            "a nested record gains a defaulted field",
            record(&field("x", &nested(&a))),
            record(&field(
                "x",
                &nested(&format!("{a},{}", field_default("b", r#""long""#, "7"))),
            )),
            true,
        ),
        (
            "a nested record gains a required field",
            record(&field("x", &nested(&a))),
            record(&field(
                "x",
                &nested(&format!("{a},{}", field("b", r#""long""#))),
            )),
            false,
        ),
        (
            "a primitive read as another primitive",
            r#""string""#.into(),
            r#""int""#.into(),
            false,
        ),
        ("a schema reads itself", record(&a), record(&a), true),
    ];
    let mut wrong = Vec::new();
    for (name, writer, reader, expected) in &corpus {
        if reads(reader, writer) != *expected {
            wrong.push(format!("{name}: expected {expected}"));
        }
    }
    assert!(wrong.is_empty(), "misjudged: {wrong:#?}");
}

fn a_record_named(name: &str, fields: &str) -> String {
    format!(r#"{{"type":"record","name":"{name}","namespace":"n","fields":[{fields}]}}"#)
}

fn nested(fields: &str) -> String {
    format!(r#"{{"type":"record","name":"Inner","fields":[{fields}]}}"#)
}

#[test]
fn equivalent_texts_have_one_canonical_form_and_invalid_ones_are_refused() {
    let compact = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#;
    let spaced = "{ \"name\" : \"R\",\n \"type\": \"record\", \"fields\": [ {\"type\": {\"type\": \"int\"}, \"name\": \"a\"} ] }";
    let one = Parsed::parse(SchemaType::Avro, compact, &[]).unwrap();
    let two = Parsed::parse(SchemaType::Avro, spaced, &[]).unwrap();
    assert_eq!(one.canonical(), two.canonical());
    let again = Parsed::parse(SchemaType::Avro, &one.canonical(), &[]).unwrap();
    assert_eq!(again.canonical(), one.canonical());
    for bad in [
        "{",
        r#"{"type":"record"}"#,
        r#"{"type":"nope"}"#,
        r#"{"type":"fixed","name":"F"}"#,
    ] {
        assert!(Parsed::parse(SchemaType::Avro, bad, &[]).is_err(), "{bad}");
    }
}

#[test]
fn payloads_are_checked_without_trusting_any_length_or_index() {
    let schema = record(&format!(
        "{},{},{}",
        field("s", r#""string""#),
        field("u", r#"["null","long"]"#),
        field("xs", r#"{"type":"array","items":"int"}"#)
    ));
    let parsed = Parsed::parse(SchemaType::Avro, &schema, &[]).unwrap();
    // s = "hi", u = branch 1 (long 3), xs = one block of 2 items (1, 2), then the end block.
    assert!(parsed.validate(b"\x04hi\x02\x06\x04\x02\x04\x00").is_ok());
    for (what, bad) in [
        ("truncated string", &b"\x08hi"[..]),
        ("union branch out of range", b"\x04hi\x04"),
        ("trailing bytes", b"\x04hi\x00\x00\xff"),
        (
            "a block count no payload can hold",
            b"\x04hi\x00\xfe\xff\xff\xff\xff\xff\xff\xff\x7f",
        ),
        ("string not UTF-8", b"\x04\xff\xfe\x00\x00"),
        (
            "a varint of 11 bytes",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
        ),
    ] {
        assert!(parsed.validate(bad).is_err(), "{what}");
    }
}

#[test]
fn a_recursive_schema_refuses_nesting_deeper_than_the_bound_without_overflowing() {
    let list =
        r#"{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}"#;
    let parsed = Parsed::parse(SchemaType::Avro, list, &[]).unwrap();
    // Depth 3: branch 1, branch 1, branch 1, then null (branch 0).
    assert!(parsed.validate(b"\x02\x02\x02\x00").is_ok());
    let deep = [&vec![2u8; 1 << 20][..], &[0u8]].concat();
    assert!(parsed.validate(&deep).is_err());
}

proptest::proptest! {
    #[test]
    fn random_bytes_never_panic_the_avro_check(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
        let schema = record(&format!(
            "{},{},{}",
            field("s", r#""string""#),
            field("m", r#"{"type":"map","values":["null","double"]}"#),
            field("e", r#"{"type":"enum","name":"E","symbols":["A","B"]}"#)
        ));
        let parsed = Parsed::parse(SchemaType::Avro, &schema, &[]).unwrap();
        let _ = parsed.validate(&bytes);
    }
}

#[test]
fn logical_types_are_compared_by_their_physical_types_as_avro_java_does() {
    let decimal = r#"{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}"#;
    let millis = r#"{"type":"long","logicalType":"timestamp-millis"}"#;
    let date = r#"{"type":"int","logicalType":"date"}"#;
    let v1 = record(
        &[
            field("amount", decimal),
            field("at", millis),
            field("day", date),
        ]
        .join(","),
    );
    let v2 = record(
        &[
            field("amount", decimal),
            field("at", millis),
            field("day", date),
            field_default("note", r#"["null","string"]"#, "null"),
        ]
        .join(","),
    );
    assert!(
        reads(&v2, &v1),
        "a field added beside unchanged logical types"
    );
    assert!(reads(&v1, &v2));
    let as_long = record(
        &[
            field("amount", decimal),
            field("at", r#""long""#),
            field("day", date),
        ]
        .join(","),
    );
    assert!(
        reads(&as_long, &v1),
        "timestamp-millis is a long to Avro's resolution"
    );
    let as_string = record(
        &[
            field("amount", r#""string""#),
            field("at", millis),
            field("day", date),
        ]
        .join(","),
    );
    assert!(
        reads(&as_string, &v1),
        "bytes promote to string, under the decimal too"
    );
    let as_int = record(
        &[
            field("amount", decimal),
            field("at", r#""int""#),
            field("day", date),
        ]
        .join(","),
    );
    assert!(!reads(&as_int, &v1), "a long cannot be read as an int");
}
