//! Parsing, references, refusals and the canonical form.

use proptest::prelude::*;

use super::*;

#[test]
fn whitespace_and_comments_do_not_change_the_canonical_form() {
    let compact =
        r#"syntax="proto3";package shop;message Order{string id=1;map<string,int32> lines=2;}"#;
    let spaced = "// orders\nsyntax = \"proto3\";\n\npackage   shop;\n/* the order */\n\
                      message Order {\n  string id = 1; // its id\n  map<string, int32> lines = 2;\n}\n";
    assert_eq!(parse(compact).canonical(), parse(spaced).canonical());
}

#[test]
fn option_formatting_import_order_and_name_qualification_do_not_change_the_canonical_form() {
    let one = r#"syntax = "proto3"; package a;
            import "google/protobuf/timestamp.proto"; import "google/protobuf/duration.proto";
            option java_package = "x.y";
            message M { google.protobuf.Timestamp t = 1 [deprecated=true]; N n = 2; message N {} }"#;
    let two = r#"syntax = "proto3"; package a;
            import "google/protobuf/duration.proto"; import "google/protobuf/timestamp.proto";
            option java_package="x.y";
            message M { .google.protobuf.Timestamp t = 1 [ deprecated = true ]; .a.M.N n = 2; message N {} }"#;
    assert_eq!(parse(one).canonical(), parse(two).canonical());
}

#[test]
fn the_canonical_form_is_rendered_proto_that_parses_back_to_itself() {
    for text in [SHOP, PROTO3] {
        let canonical = parse(text).canonical();
        assert!(
            canonical.contains('\n'),
            "the token fallback was used:\n{canonical}"
        );
        assert_eq!(parse(&canonical).canonical(), canonical);
    }
}

#[test]
fn the_canonical_form_keeps_what_clients_parse() {
    let canonical = parse(SHOP).canonical();
    for expected in [
            "syntax = \"proto2\";",
            "package shop.v1;",
            "import \"google/protobuf/timestamp.proto\";",
            "option java_package = \"com.example.shop\";",
            "reserved 8, 10 to 12, 5000 to 536870911;",
            "reserved \"old\", \"older\";",
            "required string id = 1 [(.shop.v1.label) = \"the id\", (.shop.v1.meta) = { a:\"x\",b:3 }, (.shop.v1.tags) = 1, (.shop.v1.tags) = 2];",
            "optional int32 count = 3 [default = 10];",
            "optional string note = 4 [default = \"a \\\"quoted\\\"\\n\\001 é {{\"];",
            "optional bytes blob = 13 [default = \"\\001\\377ab\"];",
            "optional double ratio = 14 [default = -inf, json_name = \"theRatio\"];",
            "optional .shop.v1.Order.Status status = 15 [default = ACTIVE];",
            "map<string, .shop.v1.Order.Item> items = 5;",
            "repeated int32 codes = 7 [packed = true];",
            "optional group Result = 9 {",
            "oneof choice {\n    string email = 20;\n    int64 phone = 21;\n  }",
            "optional .google.protobuf.Timestamp at = 22;",
            "extensions 1000 to 1999;",
            "ACTIVE = 0;\n    ALIVE = 0 [deprecated = true];\n    DONE = 1;",
            "extend .shop.v1.Order {\n  optional string extra = 1000;\n}",
            "rpc Watch (stream .shop.v1.Order) returns (stream .shop.v1.Order) {",
        ] {
            assert!(canonical.contains(expected), "{expected}\nmissing from\n{canonical}");
        }
    let proto3 = parse(PROTO3).canonical();
    for expected in [
        "optional int32 x = 1;",
        "\n  int32 y = 2;",
        "map<int32, .p.A> m = 5;",
    ] {
        assert!(
            proto3.contains(expected),
            "{expected}\nmissing from\n{proto3}"
        );
    }
}

#[test]
fn the_canonical_form_keeps_the_order_of_messages() {
    let canonical = parse("syntax = \"proto3\"; message B {} message A {}").canonical();
    assert!(canonical.find("message B").unwrap() < canonical.find("message A").unwrap());
    let names =
        parse("syntax = \"proto3\"; package p; message B {} enum E { Z = 0; } message A {}")
            .message_names();
    assert_eq!(names, ["p.B", "p.A"]);
}

#[test]
fn a_dependency_is_imported_by_its_reference_name() {
    let money = dependency(
        "common/money.proto",
        "syntax = \"proto3\"; package common; message Money { int64 units = 1; }",
    );
    let text = r#"syntax = "proto3"; import "common/money.proto";
                      message Order { common.Money total = 1; }"#;
    let schema = ProtobufSchema::parse(text, std::slice::from_ref(&money)).unwrap();
    let canonical = schema.canonical();
    assert!(
        canonical.contains("import \"common/money.proto\";"),
        "{canonical}"
    );
    assert!(
        canonical.contains(".common.Money total = 1;"),
        "{canonical}"
    );
    let again = ProtobufSchema::parse(&canonical, &[money]).unwrap();
    assert_eq!(again.canonical(), canonical);
    assert!(refusal(text, &[]).contains("import 'common/money.proto' not found"));
}

#[test]
fn references_of_references_resolve_and_a_reference_may_be_named_like_the_schema() {
    let deps = [
        dependency(
            "schema.proto",
            "syntax = \"proto3\"; package a; message A { int32 v = 1; }",
        ),
        dependency(
            "b.proto",
            "syntax = \"proto3\"; package b; import \"schema.proto\"; message B { a.A a = 1; }",
        ),
    ];
    let text = "syntax = \"proto3\"; import \"b.proto\"; message C { b.B b = 1; }";
    let schema = ProtobufSchema::parse(text, &deps).unwrap();
    assert_eq!(schema.message_names(), ["C"]);
}

#[test]
fn a_broken_reference_is_refused_by_name() {
    let deps = [dependency(
        "bad.proto",
        "syntax = \"proto3\";\nmessage Bad {",
    )];
    let error = refusal(
        "syntax = \"proto3\"; import \"bad.proto\"; message A {}",
        &deps,
    );
    assert!(
        error.contains("in reference 'bad.proto', expected a message field"),
        "{error}"
    );
}

#[test]
fn google_well_known_types_resolve_without_a_reference() {
    let text = r#"syntax = "proto3";
            import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto";
            import "google/protobuf/any.proto";
            message Event { google.protobuf.Timestamp at = 1; google.protobuf.StringValue note = 2;
                            google.protobuf.Any detail = 3; }"#;
    let canonical = parse(text).canonical();
    assert!(
        canonical.contains(".google.protobuf.Timestamp at = 1;"),
        "{canonical}"
    );
}

#[test]
fn a_reference_cannot_replace_a_well_known_file() {
    let fake = dependency(
        "google/protobuf/timestamp.proto",
        "syntax = \"proto3\"; package google.protobuf; message Timestamp { string s = 1; }",
    );
    let text = r#"syntax = "proto3"; import "google/protobuf/timestamp.proto";
                      message Event { google.protobuf.Timestamp at = 1; }"#;
    let schema = ProtobufSchema::parse(text, &[fake]).unwrap();
    let timestamp = schema
        .file
        .parent_pool()
        .get_message_by_name("google.protobuf.Timestamp");
    assert!(timestamp.unwrap().get_field_by_name("seconds").is_some());
}

#[test]
fn a_package_reserved_to_google_is_refused() {
    let deps = [dependency(
        "mine.proto",
        "syntax = \"proto3\"; package google.protobuf; message FileOptions { int32 x = 1; }",
    )];
    let error = refusal(
        "syntax = \"proto3\"; import \"mine.proto\"; message A {}",
        &deps,
    );
    assert!(error.contains("reserved to Google"), "{error}");
}

#[test]
fn a_syntax_error_is_refused_with_its_line_and_column() {
    let error = refusal(
        "syntax = \"proto3\";\nmessage Order {\n  string id = 1\n}\n",
        &[],
    );
    assert_eq!(
        error,
        "invalid Protobuf schema: line 4, column 1: expected ';' or '[', but found '}'"
    );
}

#[test]
fn unresolved_names_and_files_without_types_are_refused() {
    let unknown = refusal("syntax = \"proto3\"; message A { Missing m = 1; }", &[]);
    assert!(unknown.contains("Missing"), "{unknown}");
    let empty = refusal("syntax = \"proto3\"; package p;", &[]);
    assert_eq!(
        empty,
        "invalid Protobuf schema: the file declares no message or enum type"
    );
    let service_only = "syntax = \"proto3\"; import \"google/protobuf/empty.proto\"; \
                            service S { rpc M (google.protobuf.Empty) returns (google.protobuf.Empty); }";
    assert!(refusal(service_only, &[]).contains("no message or enum type"));
    // A file of enums only is what a shared reference often is.
    assert!(parse("syntax = \"proto3\"; enum Color { RED = 0; }")
        .message_names()
        .is_empty());
}

#[test]
fn deep_nesting_is_refused_before_the_parser_recurses() {
    let levels = 100_000;
    let messages = "message M {".repeat(levels) + &"}".repeat(levels);
    let error = refusal(&messages, &[]);
    assert!(error.contains("nests deeper than 64 levels"), "{error}");
    let aggregate = format!(
        "syntax = \"proto2\"; import \"google/protobuf/descriptor.proto\"; message A {{}} \
             option (x) = {}{};",
        "{ a ".repeat(levels),
        "}".repeat(levels)
    );
    assert!(refusal(&aggregate, &[]).contains("nests deeper"));
    let deps = [dependency("deep.proto", &messages)];
    let error = refusal("syntax = \"proto3\"; message A {}", &deps);
    assert!(
        error.contains("reference 'deep.proto' nests deeper"),
        "{error}"
    );
}

#[test]
fn brackets_in_comments_and_strings_are_not_nesting() {
    let many = "{".repeat(200);
    let text = format!(
        "// {many}\n/* {many} */ syntax = \"proto2\"; // {many}\n\
             message A {{ optional string s = 1 [default = \"{many}\"]; }}"
    );
    let canonical = ProtobufSchema::parse(&text, &[]).unwrap().canonical();
    assert!(canonical.contains(&many));
}

#[test]
fn a_nested_block_comment_is_refused() {
    let error = refusal(
        "/* outer /* inner */ */ syntax = \"proto3\"; message A {}",
        &[],
    );
    assert!(error.contains("nested block comments"), "{error}");
}

/// Standard base64 with padding, as confluent-kafka-python encodes descriptors.
fn base64(bytes: &[u8]) -> String {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let bits = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            let index = usize::try_from((bits >> (18 - 6 * i)) & 63).unwrap();
            out.push(char::from(alphabet[index]));
        }
        out.push_str(&"=".repeat(3 - chunk.len()));
    }
    out
}

#[test]
fn a_base64_file_descriptor_reads_like_its_text() {
    let from_text = parse(SHOP);
    let encoded = base64(&from_text.file.encode_to_vec());
    let from_bytes = ProtobufSchema::parse(&encoded, &[]).unwrap();
    assert_eq!(from_bytes.canonical(), from_text.canonical());
    let money = "syntax = \"proto3\"; package m; message Money { int64 units = 1; }";
    let reference = base64(&parse(money).file.encode_to_vec());
    let text = "syntax = \"proto3\"; import \"m.proto\"; message A { m.Money total = 1; }";
    ProtobufSchema::parse(text, &[dependency("m.proto", &reference)]).unwrap();
    let error = refusal("AAAAAAAAAAAAAAAAAAAAAAAA////", &[]);
    assert!(
        error.contains("the schema is neither .proto text nor a base64"),
        "{error}"
    );
}

proptest! {
    #[test]
    fn random_schema_text_never_panics_parse(text in "[a-z{}<>=;\"0-9 .\\[\\]()]{0,80}") {
        let _ = ProtobufSchema::parse(&format!("syntax = \"proto3\"; {text}"), &[]);
    }
}
