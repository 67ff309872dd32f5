//! CreateAcls: ALTER on the cluster, then each binding checked as Kafka checks it and stored
//! (creating an existing one succeeds). Without an authorizer every creation gets
//! SECURITY_DISABLED, as Kafka answers.

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::{CreateAclsRequest, CreateAclsResponse};
use kafka_protocol::ResponseError;

use super::{str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::acl::{
    AccessControlEntry, AclBinding, AclOperation, PatternType, PermissionType, ResourcePattern,
    ResourceType, CLUSTER_NAME,
};
use crate::security::authorizer::operations;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: CreateAclsRequest,
) -> CreateAclsResponse {
    let refuse_all = |code: ResponseError, message: &str| {
        let result = AclCreationResult::default()
            .with_error_code(code.code())
            .with_error_message(Some(str_bytes(message)));
        CreateAclsResponse::default().with_results(vec![result; request.creations.len()])
    };
    if !broker
        .authorizer
        .allows(context, &operations::CREATE_ACLS, CLUSTER_NAME)
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
    let bindings: Vec<AclBinding> = request.creations.iter().map(binding).collect();
    let results = acls
        .create(bindings)
        .await
        .into_iter()
        .map(|result| match result {
            Ok(()) => AclCreationResult::default(),
            Err(error) => {
                context.refused("create_acls", "acl", error.code(), &error.to_string());
                AclCreationResult::default()
                    .with_error_code(error.code().code())
                    .with_error_message(Some(str_bytes(&error.to_string())))
            }
        })
        .collect();
    CreateAclsResponse::default().with_results(results)
}

fn binding(creation: &AclCreation) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type: ResourceType::from_code(creation.resource_type),
            name: creation.resource_name.to_string(),
            pattern_type: PatternType::from_code(creation.resource_pattern_type),
        },
        entry: AccessControlEntry {
            principal: creation.principal.to_string(),
            host: creation.host.to_string(),
            operation: AclOperation::from_code(creation.operation),
            permission: PermissionType::from_code(creation.permission_type),
        },
    }
}
