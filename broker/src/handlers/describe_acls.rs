//! DescribeAcls: DESCRIBE on the cluster, then the bindings the filter selects from this
//! broker's index (what Kafka's brokers answer from their authorizer's cache), grouped by
//! resource pattern. Without an authorizer: SECURITY_DISABLED.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{DescribeAclsRequest, DescribeAclsResponse};
use kafka_protocol::ResponseError;

use super::{str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::acl::{AclBinding, AclBindingFilter, ResourcePattern, CLUSTER_NAME};
use crate::security::authorizer::operations;

pub fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: DescribeAclsRequest,
) -> DescribeAclsResponse {
    let refuse = |code: ResponseError, message: &str| {
        DescribeAclsResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(str_bytes(message)))
    };
    if !broker
        .authorizer
        .allows(context, &operations::DESCRIBE_ACLS, CLUSTER_NAME)
    {
        return refuse(
            ResponseError::ClusterAuthorizationFailed,
            "Cluster authorization failed.",
        );
    }
    let Some(acls) = broker.authorizer.acls() else {
        return refuse(
            ResponseError::SecurityDisabled,
            "No Authorizer is configured on the broker",
        );
    };
    let filter = filter(&request);
    if let Err(message) = filter.check_known() {
        return refuse(ResponseError::InvalidRequest, message);
    }
    let matching = acls.read().matching(&filter);
    DescribeAclsResponse::default().with_resources(resources(matching))
}

fn filter(request: &DescribeAclsRequest) -> AclBindingFilter {
    AclBindingFilter::from_codes(
        request.resource_type_filter,
        request.resource_name_filter.as_ref().map(|s| s.to_string()),
        request.pattern_type_filter,
        request.principal_filter.as_ref().map(|s| s.to_string()),
        request.host_filter.as_ref().map(|s| s.to_string()),
        request.operation,
        request.permission_type,
    )
}

/// One entry per resource pattern, holding its ACLs.
fn resources(bindings: Vec<AclBinding>) -> Vec<DescribeAclsResource> {
    let mut by_pattern: BTreeMap<ResourcePattern, Vec<AclDescription>> = BTreeMap::new();
    for AclBinding { pattern, entry } in bindings {
        by_pattern.entry(pattern).or_default().push(
            AclDescription::default()
                .with_principal(str_bytes(&entry.principal))
                .with_host(str_bytes(&entry.host))
                .with_operation(entry.operation.code())
                .with_permission_type(entry.permission.code()),
        );
    }
    by_pattern
        .into_iter()
        .map(|(pattern, acls)| {
            DescribeAclsResource::default()
                .with_resource_type(pattern.resource_type.code())
                .with_resource_name(str_bytes(&pattern.name))
                .with_pattern_type(pattern.pattern_type.code())
                .with_acls(acls)
        })
        .collect()
}
