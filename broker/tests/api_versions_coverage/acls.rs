//! CreateAcls, DescribeAcls and DeleteAcls one version at a time, on a broker with the ACL
//! authorizer whose anonymous clients are super users; each change is read back.

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::common::s;
use crate::ctx::Ctx;
use crate::expect_kind;

pub const BROKER_ARGS: &[&str] = &["--authorizer", "acl", "--super-users", "User:ANONYMOUS"];

const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const MATCH: i8 = 2;
const ANY: i8 = 1;
const READ: i8 = 3;
const WRITE: i8 = 4;
const ALLOW: i8 = 3;
const DENY: i8 = 2;

fn creation(resource_type: i8, name: &str, pattern: i8, op: i8, permission: i8) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(s(name))
        .with_resource_pattern_type(pattern)
        .with_principal(s("User:alice"))
        .with_host(s("*"))
        .with_operation(op)
        .with_permission_type(permission)
}

async fn create(ctx: &mut Ctx, version: i16, creations: Vec<AclCreation>) -> CreateAclsResponse {
    let request = CreateAclsRequest::default().with_creations(creations);
    expect_kind!(
        ctx.call(ApiKey::CreateAcls, version, request).await,
        CreateAcls
    )
}

/// `(resource name, pattern type, operation)` of what a MATCH filter on a topic name selects.
async fn matching(ctx: &mut Ctx, version: i16, topic: &str) -> Vec<(String, i8, i8)> {
    let request = DescribeAclsRequest::default()
        .with_resource_type_filter(TOPIC)
        .with_resource_name_filter(Some(s(topic)))
        .with_pattern_type_filter(MATCH)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(ANY)
        .with_permission_type(ANY);
    let response = expect_kind!(
        ctx.call(ApiKey::DescribeAcls, version, request).await,
        DescribeAcls
    );
    assert_eq!(response.error_code, 0, "{response:?}");
    let mut found = Vec::new();
    for resource in response.resources {
        for acl in resource.acls {
            assert_eq!(acl.principal.as_str(), "User:alice");
            found.push((
                resource.resource_name.to_string(),
                resource.pattern_type,
                acl.operation,
            ));
        }
    }
    found.sort();
    found
}

pub async fn create_acls(ctx: &mut Ctx, version: i16) {
    let topic = format!("create-acls-v{version}");
    let response = create(
        ctx,
        version,
        vec![
            creation(TOPIC, &topic, LITERAL, READ, ALLOW),
            creation(TOPIC, &topic, LITERAL, READ, ALLOW),
            creation(4, "not-the-cluster", LITERAL, READ, ALLOW),
            creation(TOPIC, &topic, MATCH, READ, ALLOW),
        ],
    )
    .await;
    let codes: Vec<i16> = response.results.iter().map(|r| r.error_code).collect();
    let invalid = ResponseError::InvalidRequest.code();
    assert_eq!(codes, vec![0, 0, invalid, invalid], "{response:?}");
    assert_eq!(
        response.results[2].error_message.as_deref(),
        Some("The only valid name for the CLUSTER resource is kafka-cluster")
    );
    assert_eq!(
        matching(ctx, 3, &topic).await,
        vec![(topic.clone(), LITERAL, READ)]
    );
}

pub async fn describe_acls(ctx: &mut Ctx, version: i16) {
    let topic = format!("describe-acls-v{version}");
    let response = create(
        ctx,
        3,
        vec![
            creation(TOPIC, &topic, LITERAL, WRITE, DENY),
            creation(TOPIC, "describe-acls-", PREFIXED, READ, ALLOW),
            creation(GROUP, &topic, LITERAL, READ, ALLOW),
        ],
    )
    .await;
    assert!(
        response.results.iter().all(|r| r.error_code == 0),
        "{response:?}"
    );
    assert_eq!(
        matching(ctx, version, &topic).await,
        vec![
            ("describe-acls-".to_string(), PREFIXED, READ),
            (topic.clone(), LITERAL, WRITE),
        ]
    );
}

pub async fn delete_acls(ctx: &mut Ctx, version: i16) {
    let topic = format!("delete-acls-v{version}");
    create(
        ctx,
        3,
        vec![
            creation(TOPIC, &topic, LITERAL, READ, ALLOW),
            creation(TOPIC, &topic, LITERAL, WRITE, ALLOW),
        ],
    )
    .await;
    let filter = |op: i8| {
        DeleteAclsFilter::default()
            .with_resource_type_filter(TOPIC)
            .with_resource_name_filter(Some(s(&topic)))
            .with_pattern_type_filter(LITERAL)
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_operation(op)
            .with_permission_type(ANY)
    };
    let request = DeleteAclsRequest::default().with_filters(vec![filter(READ), filter(0)]);
    let response = expect_kind!(
        ctx.call(ApiKey::DeleteAcls, version, request).await,
        DeleteAcls
    );
    let first = &response.filter_results[0];
    assert_eq!(first.error_code, 0, "{response:?}");
    assert_eq!(first.matching_acls.len(), 1);
    assert_eq!(first.matching_acls[0].operation, READ);
    assert_eq!(first.matching_acls[0].resource_name.as_str(), topic);
    let unknown = &response.filter_results[1];
    assert_eq!(unknown.error_code, ResponseError::InvalidRequest.code());
    assert_eq!(
        unknown.error_message.as_deref(),
        Some("Unknown entryFilter.")
    );
    assert_eq!(
        matching(ctx, 3, &topic).await,
        vec![(topic.clone(), LITERAL, WRITE)]
    );
}
