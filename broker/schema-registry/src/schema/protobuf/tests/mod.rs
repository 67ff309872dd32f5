use super::ProtobufSchema;
use crate::schema::Dependency;

mod compatibility;
mod schema;
mod wire;

fn parse(text: &str) -> ProtobufSchema {
    ProtobufSchema::parse(text, &[]).unwrap()
}

fn refusal(text: &str, dependencies: &[Dependency]) -> String {
    ProtobufSchema::parse(text, dependencies).unwrap_err().0
}

fn dependency(name: &str, schema: &str) -> Dependency {
    Dependency {
        name: name.to_owned(),
        schema: schema.to_owned(),
    }
}

/// Most of what a proto2 file can say.
const SHOP: &str = r#"
// The shop's orders.
syntax = "proto2";
package shop.v1;
import "google/protobuf/timestamp.proto";
import "google/protobuf/descriptor.proto";
option java_package = "com.example.shop";
option optimize_for = SPEED;
extend google.protobuf.FieldOptions {
  optional string label = 50001;
  optional Meta meta = 50002;
  repeated int32 tags = 50003;
}
message Meta { optional string a = 1; optional int32 b = 2; }
/* An order, with * and / alone */
message Order {
  reserved 8, 10 to 12, 5000 to max;
  reserved "old", "older";
  option deprecated = true;
  required string id = 1 [(label) = "the id", (meta) = { a: "x" b: 3 }, (tags) = 1, (tags) = 2];
  optional int32 count = 3 [default = 10];
  optional string note = 4 [default = "a \"quoted\"\n\001 é {{"];
  optional bytes blob = 13 [default = "\001\377ab"];
  optional double ratio = 14 [default = -inf, json_name = "theRatio"];
  optional Status status = 15 [default = ACTIVE];
  map<string, Item> items = 5;
  repeated int32 codes = 7 [packed = true];
  optional group Result = 9 { optional int32 score = 1; }
  oneof choice { string email = 20; int64 phone = 21; }
  optional .google.protobuf.Timestamp at = 22;
  extensions 1000 to 1999;
  message Item { optional string sku = 1; enum Size { S = 0; M = 1; } }
  enum Status {
    option allow_alias = true;
    ACTIVE = 0; ALIVE = 0 [deprecated = true]; DONE = 1;
    reserved 5, 7 to 9; reserved "GONE";
  }
}
extend Order { optional string extra = 1000; }
service Shop {
  option deprecated = true;
  rpc Buy (Order) returns (Order);
  rpc Watch (stream Order) returns (stream Order) { option deprecated = true; }
}
"#;

const PROTO3: &str = r#"
syntax = "proto3";
package p;
message A {
  optional int32 x = 1;
  int32 y = 2;
  oneof o { string s = 3; A nested = 6; }
  repeated string r = 4;
  map<int32, A> m = 5;
  optional string z = 7;
}
enum E { E_ZERO = 0; }
"#;
