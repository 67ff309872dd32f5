//! Confluent's compatibility rules.

use super::*;

#[test]
fn the_compatibility_corpus_follows_confluent_rules() {
    let corpus = include_str!("../../../../tests/corpus/protobuf/compatibility.txt");
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
    let text = "syntax = \"proto3\"; import \"geo.proto\"; message Order { geo.Address to = 1; }";
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
