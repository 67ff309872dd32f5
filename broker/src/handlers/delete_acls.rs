//! DeleteAcls: ALTER on the cluster, then every stored binding each filter selects is deleted
//! (at most 10,000 per filter, as Kafka) and listed in the answer. Without an authorizer every
//! filter gets SECURITY_DISABLED.

use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::{DeleteAclsRequest, DeleteAclsResponse};
use kafka_protocol::ResponseError;

use super::{str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::acl::{AclBinding, AclBindingFilter, CLUSTER_NAME};
use crate::security::authorizer::operations;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: DeleteAclsRequest,
) -> DeleteAclsResponse {
    let refuse_all = |code: ResponseError, message: &str| {
        let result = DeleteAclsFilterResult::default()
            .with_error_code(code.code())
            .with_error_message(Some(str_bytes(message)));
        DeleteAclsResponse::default().with_filter_results(vec![result; request.filters.len()])
    };
    if !broker
        .authorizer
        .allows(context, &operations::DELETE_ACLS, CLUSTER_NAME)
    {
        return refuse_all(
            ResponseError::ClusterAuthorizationFailed,
            "Cluster authorization failed.",
        );
    }
    let Some(acls) = broker.authorizer.acls() else {
        return refuse_all(
            ResponseError::SecurityDisabled,
            "No Authorizer is configured.",
        );
    };
    let filters: Vec<AclBindingFilter> = request.filters.iter().map(filter).collect();
    let results = acls
        .delete(&filters)
        .await
        .into_iter()
        .map(|result| match result {
            Ok(deleted) => DeleteAclsFilterResult::default()
                .with_matching_acls(deleted.into_iter().map(matching_acl).collect()),
            Err(error) => {
                context.refused(
                    "delete_acls",
                    "acl filter",
                    error.code(),
                    &error.to_string(),
                );
                DeleteAclsFilterResult::default()
                    .with_error_code(error.code().code())
                    .with_error_message(Some(str_bytes(&error.to_string())))
            }
        })
        .collect();
    DeleteAclsResponse::default().with_filter_results(results)
}

fn filter(filter: &DeleteAclsFilter) -> AclBindingFilter {
    AclBindingFilter::from_codes(
        filter.resource_type_filter,
        filter.resource_name_filter.as_ref().map(|s| s.to_string()),
        filter.pattern_type_filter,
        filter.principal_filter.as_ref().map(|s| s.to_string()),
        filter.host_filter.as_ref().map(|s| s.to_string()),
        filter.operation,
        filter.permission_type,
    )
}

fn matching_acl(binding: AclBinding) -> DeleteAclsMatchingAcl {
    DeleteAclsMatchingAcl::default()
        .with_resource_type(binding.pattern.resource_type.code())
        .with_resource_name(str_bytes(&binding.pattern.name))
        .with_pattern_type(binding.pattern.pattern_type.code())
        .with_principal(str_bytes(&binding.entry.principal))
        .with_host(str_bytes(&binding.entry.host))
        .with_operation(binding.entry.operation.code())
        .with_permission_type(binding.entry.permission.code())
}
