//! Kafka's semantics, case by case: StandardAuthorizerTest, and for `allows_on_any` the
//! authorizeByResourceType cases of BaseAuthorizerTest, with their ACLs and their answers.
//! `kafka_cases.rs` checks many more decisions against the real StandardAuthorizer's.

use super::*;
use crate::security::acl::{AccessControlEntry, AclBinding, ResourcePattern};
use AclOperation::*;
use PatternType::{Literal, Prefixed};
use PermissionType::{Allow, Deny};
use ResourceType::{Cluster, Group, Topic};

const LOCALHOST: &str = "127.0.0.1";

fn acl(
    resource_type: ResourceType,
    name: &str,
    pattern_type: PatternType,
    principal: &str,
    host: &str,
    operation: AclOperation,
    permission: PermissionType,
) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type,
            name: name.into(),
            pattern_type,
        },
        entry: AccessControlEntry {
            principal: principal.into(),
            host: host.into(),
            operation,
            permission,
        },
    }
}

struct Fixture {
    policy: Policy,
    index: AclIndex,
}

impl Fixture {
    /// `super.users=User:superman`, no ACL means deny: Kafka's test authorizer.
    fn new(acls: Vec<AclBinding>) -> Fixture {
        Fixture::with(acls, &["User:superman"], false)
    }

    fn with(acls: Vec<AclBinding>, super_users: &[&str], allow_everyone: bool) -> Fixture {
        Fixture {
            policy: Policy {
                super_users: super_users.iter().map(|s| s.to_string()).collect(),
                allow_everyone_if_no_acl_found: allow_everyone,
            },
            index: AclIndex::from_bindings(acls),
        }
    }

    fn allows_from(
        &self,
        user: &str,
        host: &str,
        op: AclOperation,
        rt: ResourceType,
        name: &str,
    ) -> bool {
        let principal = format!("User:{user}");
        let asker = Asker {
            principal: &principal,
            host,
        };
        self.policy.allows(&self.index, asker, op, rt, name)
    }

    fn allows(&self, user: &str, op: AclOperation, rt: ResourceType, name: &str) -> bool {
        self.allows_from(user, LOCALHOST, op, rt, name)
    }

    fn allows_on_any(&self, user: &str, host: &str, op: AclOperation, rt: ResourceType) -> bool {
        let principal = format!("User:{user}");
        let asker = Asker {
            principal: &principal,
            host,
        };
        self.policy.allows_on_any(&self.index, asker, op, rt)
    }
}

fn foo(op: AclOperation, permission: PermissionType) -> AclBinding {
    acl(Topic, "foo_", Prefixed, "User:bob", "*", op, permission)
}

fn bar(op: AclOperation, permission: PermissionType) -> AclBinding {
    acl(Group, "bar", Literal, "User:*", "*", op, permission)
}

#[test]
fn allow_everyone_if_no_acl_found_applies_only_to_resources_without_acls() {
    let acls = vec![acl(
        Topic,
        "topic1",
        Literal,
        "User:Alice",
        "*",
        Read,
        Allow,
    )];
    let open = Fixture::with(acls.clone(), &["User:alice", "User:chris"], true);
    assert!(
        !open.allows("Bob", Read, Topic, "topic1"),
        "topic1 has acls, none for Bob"
    );
    assert!(open.allows("Bob", Read, Topic, "topic2"));
    let closed = Fixture::with(acls, &["User:alice", "User:chris"], false);
    assert!(!closed.allows("Bob", Read, Topic, "topic1"));
    assert!(!closed.allows("Bob", Read, Topic, "topic2"));
}

#[test]
fn super_users_may_do_anything_even_against_a_deny() {
    let f = Fixture::new(vec![acl(Topic, "*", Literal, "User:*", "*", All, Deny)]);
    assert!(f.allows("superman", Write, Topic, "t"));
    assert!(f.allows("superman", ClusterAction, Cluster, "kafka-cluster"));
    assert!(!f.allows("bob", Write, Topic, "t"));
    // Names are compared exactly: a super user's name is case-sensitive.
    assert!(!f.allows("Superman", Write, Topic, "t"));
}

#[test]
fn super_users_parse_as_kafka_splits_them() {
    assert_eq!(
        parse_super_users(" User:admin ; ;User:ops;").unwrap(),
        vec!["User:admin".to_string(), "User:ops".to_string()]
    );
    assert!(parse_super_users("admin").is_err());
    assert_eq!(parse_super_users("").unwrap(), Vec::<String>::new());
}

#[test]
fn allow_read_write_delete_alter_imply_describe_but_deny_implies_nothing() {
    for op in [Describe, Read, Write, Delete, Alter] {
        assert!(
            Fixture::new(vec![foo(op, Allow)]).allows("bob", Describe, Topic, "foo_bar"),
            "{op}"
        );
    }
    assert!(!Fixture::new(vec![foo(Create, Allow)]).allows("bob", Describe, Topic, "foo_bar"));
    for op in [Read, Write, Delete, Alter] {
        // The DENY READ does not match DESCRIBE, but the resource has acls: default deny.
        let f = Fixture::new(vec![foo(op, Deny), foo(Describe, Allow)]);
        assert!(f.allows("bob", Describe, Topic, "foo_bar"), "{op}");
    }
    let f = Fixture::new(vec![foo(Describe, Deny), foo(Read, Allow)]);
    assert!(!f.allows("bob", Describe, Topic, "foo_bar"));
    for op in [DescribeConfigs, AlterConfigs] {
        assert!(Fixture::new(vec![foo(op, Allow)]).allows(
            "bob",
            DescribeConfigs,
            Topic,
            "foo_bar"
        ));
    }
    let f = Fixture::new(vec![foo(AlterConfigs, Deny), foo(DescribeConfigs, Allow)]);
    assert!(f.allows("bob", DescribeConfigs, Topic, "foo_bar"));
    assert!(!f.allows("bob", AlterConfigs, Topic, "foo_bar"));
}

#[test]
fn principals_match_exactly_or_by_the_user_wildcard() {
    let f = Fixture::new(vec![foo(Read, Allow), bar(Read, Deny)]);
    assert!(f.allows("bob", Read, Topic, "foo_bar"));
    assert!(!f.allows("alice", Read, Topic, "foo_bar"));
    let f = Fixture::with(vec![bar(Read, Deny)], &[], true);
    assert!(
        !f.allows("alice", Read, Group, "bar"),
        "User:* denies alice"
    );
}

#[test]
fn literal_and_prefixed_acls_apply_as_in_kafka() {
    let f = Fixture::new(vec![
        foo(Read, Allow),
        foo(Write, Allow),
        bar(DescribeConfigs, Allow),
        bar(AlterConfigs, Allow),
    ]);
    assert!(
        f.allows("bob", Read, Topic, "foo_"),
        "a prefix covers its own name"
    );
    assert!(f.allows("fred", AlterConfigs, Group, "bar"));
    assert!(
        !f.allows("bob", Read, Topic, "foo"),
        "foo is not under foo_"
    );
    assert!(
        !f.allows("fred", AlterConfigs, Group, "barn"),
        "a literal is not a prefix"
    );
}

#[test]
fn deny_wins_over_allow_with_operation_all() {
    let f = Fixture::new(vec![
        acl(Topic, "foo", Literal, "User:alice", "*", All, Deny),
        acl(Topic, "foo", Prefixed, "User:alice", "*", Read, Allow),
        acl(Topic, "foo", Literal, "User:*", "*", All, Deny),
        acl(Topic, "foo", Prefixed, "User:*", "*", Describe, Allow),
    ]);
    assert!(!f.allows("alice", Write, Topic, "foo"));
    assert!(!f.allows("alice", Read, Topic, "foo"));
    assert!(!f.allows("alice", Describe, Topic, "foo"));
    assert!(f.allows("alice", Read, Topic, "foobar"));
    assert!(!f.allows("bob", Describe, Topic, "foo"));
    assert!(!f.allows("bob", Read, Topic, "foo"));
    assert!(!f.allows("bob", Write, Topic, "foo"));
    assert!(f.allows("bob", Describe, Topic, "foobaz"));
    assert!(!f.allows("bob", Read, Topic, "foobaz"));
}

#[test]
fn operation_all_allows_every_operation() {
    let f = Fixture::new(vec![
        acl(Topic, "foo", Literal, "User:*", "*", All, Allow),
        acl(Topic, "bar", Prefixed, "User:alice", "*", All, Allow),
        acl(Topic, "baz", Literal, "User:bob", "*", All, Allow),
    ]);
    assert!(f.allows("alice", Write, Topic, "foo"));
    assert!(f.allows("alice", DescribeConfigs, Topic, "bar"));
    assert!(!f.allows("alice", Describe, Topic, "baz"));
    assert!(f.allows("bob", Write, Topic, "foo"));
    assert!(!f.allows("bob", Read, Topic, "bar"));
    assert!(f.allows("bob", Describe, Topic, "baz"));
    assert!(f.allows("malory", Describe, Topic, "foo"));
    assert!(!f.allows("malory", Write, Topic, "bar"));
    assert!(!f.allows("malory", Read, Topic, "baz"));
}

#[test]
fn hosts_match_exactly_or_by_the_wildcard() {
    let (host1, host2) = ("192.168.1.1", "192.168.1.2");
    let f = Fixture::new(vec![
        acl(Topic, "foo", Literal, "User:alice", host1, Read, Deny),
        acl(Topic, "foo", Literal, "User:alice", "*", Read, Allow),
        acl(Topic, "bar", Literal, "User:bob", host2, Read, Allow),
        acl(Topic, "bar", Literal, "User:*", LOCALHOST, Describe, Allow),
    ]);
    let answers = |user: &str, host: &str| {
        [
            f.allows_from(user, host, Read, Topic, "foo"),
            f.allows_from(user, host, Read, Topic, "bar"),
            f.allows_from(user, host, Describe, Topic, "bar"),
        ]
    };
    assert_eq!(answers("alice", LOCALHOST), [true, false, true]);
    assert_eq!(answers("alice", host1), [false, false, false]);
    assert_eq!(answers("alice", host2), [true, false, false]);
    assert_eq!(answers("bob", LOCALHOST), [false, false, true]);
    assert_eq!(answers("bob", host1), [false, false, false]);
    assert_eq!(answers("bob", host2), [false, true, true]);
}

#[test]
fn many_acls_combine_as_in_kafka() {
    let f = Fixture::new(vec![
        acl(Topic, "green2", Literal, "User:*", "*", Read, Allow),
        acl(Topic, "green", Prefixed, "User:bob", "*", Read, Allow),
        acl(Topic, "betamax4", Literal, "User:bob", "*", Read, Allow),
        acl(Topic, "betamax", Literal, "User:bob", "*", Read, Allow),
        acl(Topic, "beta", Prefixed, "User:*", "*", Read, Allow),
        acl(Topic, "alpha", Prefixed, "User:*", "*", Read, Allow),
        acl(Topic, "alp", Prefixed, "User:bob", "*", Read, Deny),
        acl(Group, "*", Literal, "User:bob", "*", Write, Allow),
        acl(Group, "wheel", Literal, "User:*", "*", Write, Deny),
    ]);
    assert!(f.allows("bob", Read, Topic, "green1"));
    assert!(!f.allows("bob", Write, Group, "wheel"));
    assert!(!f.allows("bob", Read, Topic, "alpha"));
    assert!(f.allows("bob", Write, Group, "arbitrary"));
    assert!(!f.allows("bob", Read, Topic, "ala"));
}

#[test]
fn prefix_acls_apply_to_longer_names_only() {
    let f = Fixture::new(vec![
        acl(Topic, "fooa", Prefixed, "User:alice", "*", All, Allow),
        acl(Topic, "foobar", Literal, "User:bob", "*", All, Allow),
        acl(Topic, "f", Prefixed, "User:bob", "*", All, Allow),
    ]);
    assert!(f.allows("bob", Write, Topic, "foobarr"));
    assert!(!f.allows("bob", Read, Topic, "goobar"));
    assert!(f.allows("bob", Read, Topic, "fooa"));
    assert!(f.allows("alice", Describe, Topic, "fooa"));
    assert!(!f.allows("alice", Write, Topic, "bar"));
    assert!(!f.allows("alice", Read, Topic, "baz"));
}

#[test]
fn a_prefixed_allow_and_a_literal_deny_combine() {
    let f = Fixture::new(vec![
        acl(Topic, "orders-", Prefixed, "User:alice", "*", Write, Allow),
        acl(
            Topic,
            "orders-secret",
            Literal,
            "User:alice",
            "*",
            Write,
            Deny,
        ),
    ]);
    assert!(f.allows("alice", Write, Topic, "orders-eu"));
    assert!(!f.allows("alice", Write, Topic, "orders-secret"));
    assert!(
        f.allows("alice", Write, Topic, "orders-secret2"),
        "the literal covers one name"
    );
    assert!(
        f.allows("alice", Describe, Topic, "orders-secret"),
        "DENY WRITE implies nothing"
    );
}

#[test]
fn the_wildcard_resource_applies_to_every_name_but_a_prefixed_star_is_a_prefix() {
    let f = Fixture::new(vec![
        acl(Topic, "*", Literal, "User:alice", "*", Read, Allow),
        acl(Topic, "*", Prefixed, "User:bob", "*", Read, Allow),
    ]);
    assert!(f.allows("alice", Read, Topic, "anything"));
    assert!(!f.allows("bob", Read, Topic, "anything"));
    assert!(f.allows("bob", Read, Topic, "*star"));
}

// BaseAuthorizerTest's authorizeByResourceType cases.

#[test]
fn on_any_deny_on_the_same_resource_takes_precedence() {
    let host1 = "192.168.1.1";
    let mut f = Fixture::with(
        vec![acl(
            Topic,
            "sb1",
            Literal,
            "User:user1",
            host1,
            Write,
            Allow,
        )],
        &[],
        false,
    );
    assert!(f.allows_on_any("user1", host1, Write, Topic));
    f.index
        .insert(acl(Topic, "sb1", Literal, "User:user1", host1, Write, Deny));
    assert!(!f.allows_on_any("user1", host1, Write, Topic));
}

#[test]
fn on_any_a_shorter_prefixed_deny_dominates() {
    let host1 = "192.168.1.1";
    let ace =
        |name: &str, permission| acl(Group, name, Prefixed, "User:user1", host1, Read, permission);
    let mut f = Fixture::with(vec![ace("abcde", Allow)], &[], false);
    assert!(f.allows_on_any("user1", host1, Read, Group));
    f.index.insert(ace("abcd", Deny));
    assert!(!f.allows_on_any("user1", host1, Read, Group));
    f.index.insert(ace("abc", Allow));
    assert!(f.allows_on_any("user1", host1, Read, Group));
    f.index.insert(ace("a", Deny));
    assert!(!f.allows_on_any("user1", host1, Read, Group));
    f.index.insert(ace("ab", Allow));
    assert!(!f.allows_on_any("user1", host1, Read, Group));
}

#[test]
fn on_any_a_wildcard_deny_dominates_every_allow() {
    let host1 = "192.168.1.1";
    let ace = |name: &str, pattern_type, permission| {
        acl(
            Group,
            name,
            pattern_type,
            "User:user1",
            host1,
            Write,
            permission,
        )
    };
    let mut f = Fixture::with(vec![ace("hello", Prefixed, Allow)], &[], false);
    assert!(f.allows_on_any("user1", host1, Write, Group));
    f.index.insert(ace("*", Literal, Deny));
    assert!(!f.allows_on_any("user1", host1, Write, Group));
    f.index.insert(ace("*", Literal, Allow));
    assert!(!f.allows_on_any("user1", host1, Write, Group));
    f.index.insert(ace("aloha", Literal, Allow));
    assert!(!f.allows_on_any("user1", host1, Write, Group));
}

#[test]
fn on_any_counts_all_but_not_implied_operations_and_honours_super_users() {
    let f = Fixture::with(
        vec![acl(Topic, "t", Literal, "User:*", "*", All, Allow)],
        &["User:root"],
        false,
    );
    assert!(f.allows_on_any("anyone", LOCALHOST, Write, Topic));
    let f = Fixture::with(
        vec![acl(Topic, "t", Literal, "User:u", "*", Read, Allow)],
        &["User:root"],
        false,
    );
    assert!(
        !f.allows_on_any("u", LOCALHOST, Describe, Topic),
        "READ does not count as DESCRIBE here"
    );
    assert!(f.allows_on_any("root", LOCALHOST, Write, Topic));
    let open = Fixture::with(vec![], &[], true);
    assert!(
        open.allows_on_any("u", LOCALHOST, Write, Topic),
        "through the `hardcode` check"
    );
}

#[test]
fn ipv6_hosts_are_written_as_java_writes_them() {
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    assert_eq!(host_address(ip("::1")), "0:0:0:0:0:0:0:1");
    assert_eq!(host_address(ip("fe80::1:abcd")), "fe80:0:0:0:0:0:1:abcd");
    assert_eq!(host_address(ip("::ffff:10.0.0.1")), "10.0.0.1");
    assert_eq!(host_address(ip("10.1.2.3")), "10.1.2.3");
}

#[test]
fn the_index_counts_bindings_once() {
    let mut index = AclIndex::default();
    let a = foo(Read, Allow);
    assert!(index.insert(a.clone()));
    assert!(!index.insert(a.clone()));
    assert_eq!(index.len(), 1);
    assert!(index.contains(&a));
    assert!(index.remove(&a));
    assert!(!index.remove(&a));
    assert!(index.is_empty());
    assert_eq!(
        index.verdict(
            Asker {
                principal: "User:bob",
                host: "h"
            },
            Read,
            Topic,
            "foo_x"
        ),
        Verdict::Unmatched {
            resource_has_acls: false
        }
    );
}

#[test]
fn the_wildcard_does_not_apply_to_names_starting_with_a_star_as_in_kafka() {
    // Found by kafka_authorizer_cases: StandardAuthorizer skips `*` for `*c` (see index.rs).
    let f = Fixture::with(
        vec![acl(Group, "*", Literal, "User:*", "*", Read, Deny)],
        &[],
        true,
    );
    assert!(!f.allows("bob", Read, Group, "c"));
    assert!(!f.allows("bob", Read, Group, "*"));
    assert!(
        f.allows("bob", Read, Group, "*c"),
        "no acl applies: the default allows"
    );
}
