//! Payloads: message indexes and the wire-format walker.

use std::sync::OnceLock;

use proptest::prelude::*;
use prost::Message as _;
use prost_reflect::{DynamicMessage, Value};

use super::*;
use crate::schema::DEPTH_MAX;

const ORDERS: &str = r#"syntax = "proto3";
        package shop;
        message Order {
          string id = 1;
          string note = 2;
          map<string, int32> counts = 3;
          message Line { string sku = 1; int64 quantity = 2; }
        }
        message Refund { int64 amount = 1; }"#;

fn orders() -> &'static ProtobufSchema {
    static SCHEMA: OnceLock<ProtobufSchema> = OnceLock::new();
    SCHEMA.get_or_init(|| parse(ORDERS))
}

fn encoded(message_name: &str, fields: &[(&str, Value)]) -> Vec<u8> {
    let pool = orders().file.parent_pool();
    let mut message = DynamicMessage::new(pool.get_message_by_name(message_name).unwrap());
    for (name, value) in fields {
        message.set_field_by_name(name, value.clone());
    }
    message.encode_to_vec()
}

fn with_indexes(indexes: &[u8], body: &[u8]) -> Vec<u8> {
    [indexes, body].concat()
}

#[test]
fn the_single_zero_index_selects_the_first_message() {
    let counts = [(prost_reflect::MapKey::String("a".into()), Value::I32(2))].into();
    let order = encoded(
        "shop.Order",
        &[
            ("id", Value::String("o-1".into())),
            ("counts", Value::Map(counts)),
        ],
    );
    orders().validate(&with_indexes(&[0], &order)).unwrap();
    // The same as the explicit form: one index, 0.
    orders().validate(&with_indexes(&[2, 0], &order)).unwrap();
    orders().validate(&[0]).unwrap();
}

#[test]
fn explicit_indexes_select_a_nested_or_a_later_message() {
    let line = encoded(
        "shop.Order.Line",
        &[
            ("sku", Value::String("s".into())),
            ("quantity", Value::I64(5)),
        ],
    );
    // [0, 0]: Order's first nested message; its map entry type does not count.
    orders().validate(&with_indexes(&[4, 0, 0], &line)).unwrap();
    let as_order = orders().validate(&with_indexes(&[0], &line)).unwrap_err().0;
    assert!(
        as_order.contains("not a valid shop.Order record"),
        "{as_order}"
    );
    let refund = encoded("shop.Refund", &[("amount", Value::I64(7))]);
    orders().validate(&with_indexes(&[2, 2], &refund)).unwrap();
    assert!(orders().validate(&with_indexes(&[0], &refund)).is_err());
}

#[test]
fn out_of_range_negative_or_too_many_message_indexes_are_refused() {
    let error = orders().validate(&[2, 4]).unwrap_err().0;
    assert_eq!(
        error,
        "message index 2 is out of range: the file declares 2 message types"
    );
    let nested = orders().validate(&[4, 0, 2]).unwrap_err().0;
    assert!(
        nested.contains("shop.Order declares 1 message types"),
        "{nested}"
    );
    assert!(orders()
        .validate(&[2, 1])
        .unwrap_err()
        .0
        .contains("negative message index"));
    assert!(orders()
        .validate(&[1])
        .unwrap_err()
        .0
        .contains("-1 message indexes"));
    let too_many = [vec![34], vec![0; 17]].concat();
    assert!(orders()
        .validate(&too_many)
        .unwrap_err()
        .0
        .contains("17 message indexes"));
    let long = orders()
        .validate(&[0x80, 0x80, 0x80, 0x80, 0x80, 0])
        .unwrap_err()
        .0;
    assert!(long.contains("longer than 5 bytes"), "{long}");
}

#[test]
fn truncated_payloads_are_refused() {
    assert!(orders()
        .validate(&[])
        .unwrap_err()
        .0
        .contains("truncated message indexes"));
    let order = with_indexes(
        &[0],
        &encoded("shop.Order", &[("id", Value::String("o-1".into()))]),
    );
    for cut in 2..order.len() {
        assert!(orders().validate(&order[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn garbage_bytes_are_refused() {
    for garbage in [
        &[0, 0xff, 0xff, 0xff][..],
        &[0, 0x0f, 1, 2],             // wire type 7
        &[0, 0x08, 0x01],             // field 1 is a string, not a varint
        &[0, 0x00],                   // field number 0
        &[0, 0x0c],                   // an end of group never opened
        &[0, 0x0a, 0x02, 0xc3, 0x28], // invalid UTF-8 in a string
        &[0, 0x1b, 0x08, 0x01],       // an unknown group never closed
        &[
            0, 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02,
        ], // 11-byte varint
    ] {
        assert!(orders().validate(garbage).is_err(), "{garbage:?}");
    }
}

#[test]
fn unknown_fields_are_accepted_as_readers_skip_them() {
    // Field 9 as varint, fixed64, bytes and a group holding a varint.
    let unknown = [
        0x48, 0x01, 0x49, 1, 2, 3, 4, 5, 6, 7, 8, 0x4a, 0x01, 0xff, 0x4b, 0x08, 0x01, 0x4c,
    ];
    orders().validate(&with_indexes(&[0], &unknown)).unwrap();
}

fn nested_nodes(levels: usize) -> Vec<u8> {
    let mut body = Vec::new();
    for _ in 0..levels {
        let mut outer = vec![0x0a];
        prost::encoding::encode_varint(u64::try_from(body.len()).unwrap(), &mut outer);
        outer.extend_from_slice(&body);
        body = outer;
    }
    with_indexes(&[0], &body)
}

#[test]
fn payloads_nested_deeper_than_the_limit_are_refused_without_exhausting_the_stack() {
    let node = parse("syntax = \"proto3\"; message Node { Node child = 1; }");
    node.validate(&nested_nodes(DEPTH_MAX - 1)).unwrap();
    let error = node.validate(&nested_nodes(DEPTH_MAX)).unwrap_err().0;
    assert!(error.contains("nested more than 64 deep"), "{error}");
    assert!(node.validate(&nested_nodes(5_000)).is_err());
    // Unknown groups nest without lengths: one byte a level.
    let groups = with_indexes(&[0], &[0x13; 1_000_000]);
    assert!(node
        .validate(&groups)
        .unwrap_err()
        .0
        .contains("nested more than"));
}

/// Field kinds and encodings for comparing the walker with prost-reflect's decoder (no
/// map: prost-reflect reads a map field of any wire type as length-delimited).
const PROBE: &str = r#"syntax = "proto2";
        message Probe {
          optional int32 a = 1;
          optional sint64 b = 2;
          optional fixed32 c = 3;
          optional double d = 4;
          optional string e = 5;
          optional bytes f = 6;
          repeated int32 g = 7;
          repeated Probe h = 8;
          optional group J = 10 { optional int32 k = 11; optional Probe l = 12; }
          optional Kind m = 13;
          repeated fixed64 n = 14 [packed = true];
          repeated string o = 15;
          enum Kind { A = 0; B = 1; }
          extensions 100 to 200;
        }
        extend Probe { optional string ext = 100; repeated sint32 exts = 101; }"#;

fn probe() -> &'static ProtobufSchema {
    static SCHEMA: OnceLock<ProtobufSchema> = OnceLock::new();
    SCHEMA.get_or_init(|| parse(PROBE))
}

fn agrees_with_prost_reflect(body: &[u8]) -> Result<(), TestCaseError> {
    let descriptor = probe().file.messages().next().unwrap();
    let decoded = DynamicMessage::decode(descriptor, body);
    let walked = probe().validate(&with_indexes(&[0], body));
    prop_assert_eq!(
        walked.is_ok(),
        decoded.is_ok(),
        "walker {:?}, prost-reflect {:?}",
        walked,
        decoded
    );
    Ok(())
}

/// A field key (numbers 1 to 17, 100 and 101, any wire type) and a few bytes after it.
fn field_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        0u64..20,
        0u64..8,
        proptest::collection::vec(any::<u8>(), 0..6),
    )
        .prop_map(|(number, wire, tail)| {
            let number = match number {
                18 => 100,
                19 => 101,
                n => n,
            };
            let mut bytes = Vec::new();
            prost::encoding::encode_varint(number << 3 | wire, &mut bytes);
            bytes.extend(tail);
            bytes
        })
}

proptest! {
    #[test]
    fn random_bytes_never_panic_validate(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = probe().validate(&bytes);
        let _ = orders().validate(&bytes);
    }

    #[test]
    fn the_walker_agrees_with_prost_reflect_on_random_bytes(
        body in proptest::collection::vec(any::<u8>(), 0..64)
    ) {
        agrees_with_prost_reflect(&body)?;
    }

    #[test]
    fn the_walker_agrees_with_prost_reflect_on_field_like_bytes(
        fields in proptest::collection::vec(field_bytes(), 0..12)
    ) {
        agrees_with_prost_reflect(&fields.concat())?;
    }
}
