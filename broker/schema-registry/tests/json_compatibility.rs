//! JSON Schema evolution judged as Confluent's JSON Schema rules judge it (writer = the old
//! schema, reader = the new one, under BACKWARD), canonical forms, references and payloads.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use schema_registry::schema::{Dependency, Parsed, SchemaType};

fn json(text: &str) -> Parsed {
    Parsed::parse(SchemaType::Json, text, &[]).unwrap()
}

fn object(properties: &str, extra: &str) -> String {
    format!(r#"{{"type":"object","properties":{{{properties}}}{extra}}}"#)
}

#[test]
fn the_json_schema_evolution_corpus_is_judged_as_confluent_judges_it() {
    let id = r#""id":{"type":"integer"}"#;
    let closed = r#","additionalProperties":false"#;
    // (name, writer, reader, the reader accepts everything the writer did)
    let corpus: Vec<(&str, String, String, bool)> = vec![
        ("the same schema", object(id, ""), object(id, ""), true),
        ("integer widened to number", object(id, ""), object(r#""id":{"type":"number"}"#, ""), true),
        ("number narrowed to integer", object(r#""id":{"type":"number"}"#, ""), object(id, ""), false),
        ("type changed", object(id, ""), object(r#""id":{"type":"string"}"#, ""), false),
        ("a type added to a union", object(id, ""), object(r#""id":{"type":["integer","null"]}"#, ""), true),
        ("a type removed from a union", object(r#""id":{"type":["integer","null"]}"#, ""), object(id, ""), false),
        ("an optional property added to a closed model", object(id, closed), object(&format!(r#"{id},"n":{{"type":"string"}}"#), closed), true),
        ("a typed property added to an open model", object(id, ""), object(&format!(r#"{id},"n":{{"type":"string"}}"#), ""), false),
        ("an untyped property added to an open model", object(id, ""), object(&format!(r#"{id},"n":{{}}"#), ""), true),
        ("a property removed from an open model", object(&format!(r#"{id},"n":{{"type":"string"}}"#), ""), object(id, ""), true),
        ("a property removed from a closed model", object(&format!(r#"{id},"n":{{"type":"string"}}"#), closed), object(id, closed), false),
        ("a required property added", object(id, ""), object(id, r#","required":["id"]"#), false),
        ("a required property dropped", object(id, r#","required":["id"]"#), object(id, ""), true),
        ("the model closed", object(id, ""), object(id, closed), false),
        ("the model opened", object(id, closed), object(id, ""), true),
        ("maxLength added", r#"{"type":"string"}"#.into(), r#"{"type":"string","maxLength":5}"#.into(), false),
        ("maxLength increased", r#"{"type":"string","maxLength":5}"#.into(), r#"{"type":"string","maxLength":9}"#.into(), true),
        ("maxLength decreased", r#"{"type":"string","maxLength":9}"#.into(), r#"{"type":"string","maxLength":5}"#.into(), false),
        ("minimum increased", r#"{"type":"integer","minimum":0}"#.into(), r#"{"type":"integer","minimum":1}"#.into(), false),
        ("minimum decreased", r#"{"type":"integer","minimum":1}"#.into(), r#"{"type":"integer","minimum":0}"#.into(), true),
        ("maximum removed", r#"{"type":"integer","maximum":9}"#.into(), r#"{"type":"integer"}"#.into(), true),
        ("pattern added", r#"{"type":"string"}"#.into(), r#"{"type":"string","pattern":"^a"}"#.into(), false),
        ("multipleOf changed", r#"{"type":"integer","multipleOf":2}"#.into(), r#"{"type":"integer","multipleOf":3}"#.into(), false),
        ("enum widened", r#"{"enum":["a","b"]}"#.into(), r#"{"enum":["a","b","c"]}"#.into(), true),
        ("enum narrowed", r#"{"enum":["a","b"]}"#.into(), r#"{"enum":["a"]}"#.into(), false),
        ("array items narrowed", r#"{"type":"array","items":{"type":"number"}}"#.into(), r#"{"type":"array","items":{"type":"integer"}}"#.into(), false),
        ("array items widened", r#"{"type":"array","items":{"type":"integer"}}"#.into(), r#"{"type":"array","items":{"type":"number"}}"#.into(), true),
        ("uniqueItems added", r#"{"type":"array"}"#.into(), r#"{"type":"array","uniqueItems":true}"#.into(), false),
        ("a oneOf branch removed", r#"{"oneOf":[{"type":"integer"},{"type":"string"}]}"#.into(), r#"{"oneOf":[{"type":"integer"}]}"#.into(), false),
        ("a oneOf branch added", r#"{"oneOf":[{"type":"integer"}]}"#.into(), r#"{"oneOf":[{"type":"integer"},{"type":"string"}]}"#.into(), true),
        ("a nested property narrowed through a local $ref",
         r##"{"type":"object","properties":{"a":{"$ref":"#/definitions/A"}},"definitions":{"A":{"type":"number"}}}"##.into(),
         r##"{"type":"object","properties":{"a":{"$ref":"#/definitions/A"}},"definitions":{"A":{"type":"integer"}}}"##.into(), false),
    ];
    let mut wrong = Vec::new();
    for (name, writer, reader, expected) in &corpus {
        let messages = json(reader).incompatibilities_reading(&json(writer));
        if messages.is_empty() != *expected {
            wrong.push(format!("{name}: expected {expected}, got {messages:?}"));
        }
    }
    assert!(wrong.is_empty(), "misjudged: {wrong:#?}");
}

#[test]
fn equivalent_texts_share_a_canonical_form_and_invalid_ones_are_refused() {
    let one = json(r#"{"type":"object","properties":{"a":{"type":"string"}}}"#);
    let two =
        json("{ \"properties\" : { \"a\" : { \"type\" : \"string\" } },\n \"type\" : \"object\" }");
    assert_eq!(one.canonical(), two.canonical());
    for bad in ["{", r#"{"type":5}"#, "3", r#"{"minimum":"x"}"#] {
        assert!(Parsed::parse(SchemaType::Json, bad, &[]).is_err(), "{bad}");
    }
}

#[test]
fn references_resolve_offline_and_payloads_are_checked() {
    let address = Dependency {
        name: "address.json".into(),
        schema: r#"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#
            .into(),
    };
    let person = Parsed::parse(
        SchemaType::Json,
        r#"{"type":"object","properties":{"home":{"$ref":"address.json"}},"required":["home"]}"#,
        &[address],
    )
    .unwrap();
    assert!(person.validate(br#"{"home":{"city":"Oslo"}}"#).is_ok());
    assert!(person.validate(br#"{"home":{"city":7}}"#).is_err());
    assert!(person.validate(br#"{}"#).is_err());
    assert!(person.validate(b"not json").is_err());
    assert!(person.validate(b"\xff").is_err());
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(person.validate(deep.as_bytes()).is_err());
    let unresolved = Parsed::parse(
        SchemaType::Json,
        r#"{"type":"object","properties":{"home":{"$ref":"http://example.com/missing.json"}}}"#,
        &[],
    );
    assert!(unresolved.is_err());
}

proptest::proptest! {
    #[test]
    fn random_bytes_never_panic_the_json_check(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
        let schema = json(r#"{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","maxLength":3}}}}"#);
        let _ = schema.validate(&bytes);
    }
}
