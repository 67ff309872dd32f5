//! Our authorizer against Kafka's own: `kafka-authorizer-cases.jsonl` holds 250 random ACL
//! scenarios (names sharing prefixes, `*`, PREFIXED and LITERAL, DENY and ALLOW, `User:*`,
//! other principal types, hosts, super users, both defaults) with the answers Kafka 4.1's
//! StandardAuthorizer gave: 10,000 decisions, 2,500 `authorizeByResourceType` answers and 1,500
//! DescribeAcls/DeleteAcls filters. Regenerate with `scripts/kafka-authorizer/generate.sh`.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use broker::security::acl::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, PatternType, PermissionType,
    ResourcePattern, ResourceType,
};
use broker::security::authorizer::{parse_super_users, AclIndex, Asker, Policy};
use serde_json::Value;

const CASES: &str = include_str!("kafka-authorizer-cases.jsonl");

struct Scenario {
    policy: Policy,
    acls: Vec<AclBinding>,
    index: AclIndex,
    json: Value,
}

fn code(value: &Value) -> i8 {
    i8::try_from(value.as_i64().unwrap()).unwrap()
}

fn text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_string)
}

fn scenarios() -> impl Iterator<Item = Scenario> {
    CASES.lines().map(|line| {
        let json: Value = serde_json::from_str(line).unwrap();
        let acls: Vec<AclBinding> = json["acls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| AclBinding {
                pattern: ResourcePattern {
                    resource_type: ResourceType::from_code(code(&a[0])),
                    name: text(&a[1]).unwrap(),
                    pattern_type: PatternType::from_code(code(&a[2])),
                },
                entry: AccessControlEntry {
                    principal: text(&a[3]).unwrap(),
                    host: text(&a[4]).unwrap(),
                    operation: AclOperation::from_code(code(&a[5])),
                    permission: PermissionType::from_code(code(&a[6])),
                },
            })
            .collect();
        let policy = Policy {
            super_users: parse_super_users(json["super_users"].as_str().unwrap())
                .unwrap()
                .into_iter()
                .collect(),
            allow_everyone_if_no_acl_found: json["allow_everyone"].as_bool().unwrap(),
        };
        let index = AclIndex::from_bindings(acls.clone());
        Scenario {
            policy,
            acls,
            index,
            json,
        }
    })
}

#[test]
fn every_decision_is_kafkas() {
    let mut checked = 0;
    for (n, s) in scenarios().enumerate() {
        for check in s.json["checks"].as_array().unwrap() {
            let principal = text(&check[0]).unwrap();
            let host = text(&check[1]).unwrap();
            let asker = Asker {
                principal: &principal,
                host: &host,
            };
            let operation = AclOperation::from_code(code(&check[2]));
            let resource_type = ResourceType::from_code(code(&check[3]));
            let name = text(&check[4]).unwrap();
            let ours = s
                .policy
                .allows(&s.index, asker, operation, resource_type, &name);
            assert_eq!(
                ours,
                check[5].as_bool().unwrap(),
                "scenario {n}: {principal}@{host} {operation} {resource_type}:{name} with {:#?} (super users {:?}, allow everyone {})",
                s.acls,
                s.policy.super_users,
                s.policy.allow_everyone_if_no_acl_found
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 10_000);
}

#[test]
fn every_authorize_by_resource_type_answer_is_kafkas() {
    for (n, s) in scenarios().enumerate() {
        for check in s.json["any"].as_array().unwrap() {
            let principal = text(&check[0]).unwrap();
            let host = text(&check[1]).unwrap();
            let asker = Asker {
                principal: &principal,
                host: &host,
            };
            let operation = AclOperation::from_code(code(&check[2]));
            let resource_type = ResourceType::from_code(code(&check[3]));
            let ours = s
                .policy
                .allows_on_any(&s.index, asker, operation, resource_type);
            assert_eq!(
                ours,
                check[4].as_bool().unwrap(),
                "scenario {n}: {principal}@{host} {operation} on any {resource_type} with {:#?}",
                s.acls
            );
        }
    }
}

#[test]
fn every_filter_selects_what_kafkas_selects() {
    for (n, s) in scenarios().enumerate() {
        for f in s.json["filters"].as_array().unwrap() {
            let filter = AclBindingFilter::from_codes(
                code(&f[0]),
                text(&f[1]),
                code(&f[2]),
                text(&f[3]),
                text(&f[4]),
                code(&f[5]),
                code(&f[6]),
            );
            let mut expected: Vec<AclBinding> = f[7]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| s.acls[usize::try_from(i.as_u64().unwrap()).unwrap()].clone())
                .collect();
            expected.sort();
            assert_eq!(
                s.index.matching(&filter),
                expected,
                "scenario {n}: {filter:?}"
            );
        }
    }
}
