//! The ACL APIs: without an authorizer, refused without ALTER / DESCRIBE on the cluster, kept
//! across restarts, bounded, and made through one broker, enforced by another sharing the
//! store within a second.

use std::time::{Duration, Instant};

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::common::{name, s, start_in, TestBroker};
use crate::expect_kind;
use crate::harness::*;

const ANY: i8 = 1;
const MATCH: i8 = 2;
const CAF: ResponseError = ResponseError::ClusterAuthorizationFailed;

fn creation(
    user: &str,
    resource_type: i8,
    resource: &str,
    pattern: i8,
    operation: i8,
) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(s(resource))
        .with_resource_pattern_type(pattern)
        .with_principal(s(&format!("User:{user}")))
        .with_host(s("*"))
        .with_operation(operation)
        .with_permission_type(3)
}

fn describe_all() -> DescribeAclsRequest {
    DescribeAclsRequest::default()
        .with_resource_type_filter(ANY)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(ANY)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(ANY)
        .with_permission_type(ANY)
}

fn delete_filter(resource: Option<&str>, pattern: i8) -> DeleteAclsFilter {
    DeleteAclsFilter::default()
        .with_resource_type_filter(ANY)
        .with_resource_name_filter(resource.map(s))
        .with_pattern_type_filter(pattern)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(ANY)
        .with_permission_type(ANY)
}

#[tokio::test]
async fn without_an_authorizer_the_acl_apis_answer_security_disabled() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    let disabled = ResponseError::SecurityDisabled.code();
    let create = CreateAclsRequest::default().with_creations(vec![creation(
        "a",
        TOPIC,
        "t",
        LITERAL,
        op::READ,
    )]);
    let answer = expect_kind!(client.call(ApiKey::CreateAcls, 3, create).await, CreateAcls);
    assert_eq!(answer.results[0].error_code, disabled);
    assert_eq!(
        answer.results[0].error_message.as_deref(),
        Some("No Authorizer is configured.")
    );
    let answer = expect_kind!(
        client.call(ApiKey::DescribeAcls, 3, describe_all()).await,
        DescribeAcls
    );
    assert_eq!(answer.error_code, disabled);
    assert_eq!(
        answer.error_message.as_deref(),
        Some("No Authorizer is configured on the broker")
    );
    let delete = DeleteAclsRequest::default().with_filters(vec![delete_filter(None, ANY)]);
    let answer = expect_kind!(client.call(ApiKey::DeleteAcls, 3, delete).await, DeleteAcls);
    assert_eq!(answer.filter_results[0].error_code, disabled);
}

#[tokio::test]
async fn the_acl_apis_need_alter_and_describe_on_the_cluster() {
    let a = Authorized::start().await;
    let create = || {
        CreateAclsRequest::default().with_creations(vec![creation(
            "bob",
            TOPIC,
            "t",
            LITERAL,
            op::READ,
        )])
    };
    let delete =
        || DeleteAclsRequest::default().with_filters(vec![delete_filter(Some("t"), LITERAL)]);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::CreateAcls, 3, create()).await,
        CreateAcls
    );
    assert_eq!(answer.results[0].error_code, CAF.code());
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::DescribeAcls, 3, describe_all()).await,
        DescribeAcls
    );
    assert_eq!(answer.error_code, CAF.code());
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::DeleteAcls, 3, delete()).await,
        DeleteAcls
    );
    assert_eq!(answer.filter_results[0].error_code, CAF.code());

    a.allow(ALICE, CLUSTER, "kafka-cluster", LITERAL, op::DESCRIBE)
        .await;
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::DescribeAcls, 3, describe_all()).await,
        DescribeAcls
    );
    assert_eq!(answer.error_code, 0);
    assert_eq!(answer.resources.len(), 1, "alice's own ACL on the cluster");
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::CreateAcls, 3, create()).await,
        CreateAcls
    );
    assert_eq!(
        answer.results[0].error_code,
        CAF.code(),
        "DESCRIBE is not ALTER"
    );

    a.allow(ALICE, CLUSTER, "kafka-cluster", LITERAL, op::ALTER)
        .await;
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::CreateAcls, 3, create()).await,
        CreateAcls
    );
    assert_eq!(answer.results[0].error_code, 0);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::DeleteAcls, 3, delete()).await,
        DeleteAcls
    );
    assert_eq!(answer.filter_results[0].matching_acls.len(), 1);
}

#[tokio::test]
async fn a_match_filter_deletes_the_literal_prefixed_and_wildcard_acls_that_apply() {
    let a = Authorized::start().await;
    let request = CreateAclsRequest::default().with_creations(vec![
        creation("bob", TOPIC, "orders", LITERAL, op::READ),
        creation("bob", TOPIC, "ord", PREFIXED, op::READ),
        creation("bob", TOPIC, "*", LITERAL, op::READ),
        creation("bob", TOPIC, "orders-2", LITERAL, op::READ),
        creation("bob", GROUP, "orders", LITERAL, op::READ),
    ]);
    let answer = expect_kind!(
        a.call(ADMIN, ApiKey::CreateAcls, 3, request).await,
        CreateAcls
    );
    assert!(answer.results.iter().all(|r| r.error_code == 0));
    let mut filter = delete_filter(Some("orders"), MATCH);
    filter.resource_type_filter = TOPIC;
    let request = DeleteAclsRequest::default().with_filters(vec![filter]);
    let answer = expect_kind!(
        a.call(ADMIN, ApiKey::DeleteAcls, 3, request).await,
        DeleteAcls
    );
    let mut deleted: Vec<String> = answer.filter_results[0]
        .matching_acls
        .iter()
        .map(|m| format!("{}:{}", m.resource_name.as_str(), m.pattern_type))
        .collect();
    deleted.sort();
    assert_eq!(deleted, vec!["*:3", "ord:4", "orders:3"]);
    // Two filters of one request that select the same ACL both answer it, as in Kafka.
    let both = DeleteAclsRequest::default().with_filters(vec![
        delete_filter(Some("orders-2"), LITERAL),
        delete_filter(Some("orders-2"), ANY),
    ]);
    let answer = expect_kind!(a.call(ADMIN, ApiKey::DeleteAcls, 3, both).await, DeleteAcls);
    let counts: Vec<usize> = answer
        .filter_results
        .iter()
        .map(|r| r.matching_acls.len())
        .collect();
    assert_eq!(counts, vec![1, 1]);
    let answer = expect_kind!(
        a.call(ADMIN, ApiKey::DescribeAcls, 3, describe_all()).await,
        DescribeAcls
    );
    let left: Vec<(i8, String)> = answer
        .resources
        .iter()
        .map(|r| (r.resource_type, r.resource_name.to_string()))
        .collect();
    assert_eq!(left, vec![(GROUP, "orders".into())]);
}

#[tokio::test]
async fn acls_are_kept_across_a_restart() {
    let a = Authorized::start().await;
    a.topic("kept", 1).await;
    a.allow(ALICE, TOPIC, "kept", LITERAL, op::DESCRIBE).await;
    let args = [
        "--authorizer",
        "acl",
        "--super-users",
        "User:admin",
        "--compaction",
        "false",
    ];
    let broker = a.broker.restart(&args).await;
    let a = Authorized { broker };
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::Metadata, 12, metadata("kept")).await,
        Metadata
    );
    assert_eq!(answer.topics[0].error_code, 0);
}

#[tokio::test]
async fn creations_beyond_acls_max_are_refused_with_policy_violation() {
    let a = Authorized::start_with(&["--acls-max", "2"]).await;
    let request = CreateAclsRequest::default().with_creations(vec![
        creation("bob", TOPIC, "a", LITERAL, op::READ),
        creation("bob", TOPIC, "b", LITERAL, op::READ),
        creation("bob", TOPIC, "a", LITERAL, op::READ),
        creation("bob", TOPIC, "c", LITERAL, op::READ),
    ]);
    let answer = expect_kind!(
        a.call(ADMIN, ApiKey::CreateAcls, 3, request).await,
        CreateAcls
    );
    let codes: Vec<i16> = answer.results.iter().map(|r| r.error_code).collect();
    // Creating an existing binding again is no new ACL.
    assert_eq!(
        codes,
        vec![0, 0, 0, ResponseError::PolicyViolation.code()],
        "{answer:?}"
    );
}

fn metadata(topic: &str) -> MetadataRequest {
    MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(name(topic)))
        ]))
        .with_allow_auto_topic_creation(false)
}

#[tokio::test]
async fn an_acl_made_through_one_broker_is_enforced_by_another_within_a_second() {
    let a = Authorized::start().await;
    a.topic("shared", 1).await;
    let other = start_in(
        &a.broker.dir,
        &[
            "--authorizer",
            "acl",
            "--broker-id",
            "2",
            "--compaction",
            "false",
        ],
    )
    .await;
    let describe = || metadata("shared");
    let answer = expect_kind!(
        call(&other.broker, ALICE, ApiKey::Metadata, 12, describe()).await,
        Metadata
    );
    assert_eq!(
        answer.topics[0].error_code,
        ResponseError::TopicAuthorizationFailed.code()
    );

    a.allow(ALICE, TOPIC, "shared", LITERAL, op::DESCRIBE).await;
    let made = Instant::now();
    loop {
        let answer = expect_kind!(
            call(&other.broker, ALICE, ApiKey::Metadata, 12, describe()).await,
            Metadata
        );
        if answer.topics[0].error_code == 0 {
            break;
        }
        assert!(
            made.elapsed() < Duration::from_secs(1),
            "not enforced after {:?}",
            made.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seen_after = made.elapsed();

    let request =
        DeleteAclsRequest::default().with_filters(vec![delete_filter(Some("shared"), LITERAL)]);
    let answer = expect_kind!(
        a.call(ADMIN, ApiKey::DeleteAcls, 3, request).await,
        DeleteAcls
    );
    assert_eq!(answer.filter_results[0].matching_acls.len(), 1);
    let deleted = Instant::now();
    loop {
        let answer = expect_kind!(
            call(&other.broker, ALICE, ApiKey::Metadata, 12, describe()).await,
            Metadata
        );
        if answer.topics[0].error_code != 0 {
            break;
        }
        assert!(
            deleted.elapsed() < Duration::from_secs(1),
            "still allowed after {:?}",
            deleted.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    eprintln!(
        "created acl enforced after {seen_after:?}, deleted after {:?}",
        deleted.elapsed()
    );
    other.shutdown().await;
}
