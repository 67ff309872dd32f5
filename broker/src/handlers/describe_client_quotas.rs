//! DescribeClientQuotas v0-1: this broker enforces no client quotas and none can be set (no
//! AlterClientQuotas), so every valid filter matches nothing. The filter is validated as
//! Kafka's `ClientQuotasImage.describe` does. `kafka-configs --describe --entity-type users`
//! asks this before it describes SCRAM credentials.

use std::collections::HashSet;

use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};
use kafka_protocol::ResponseError;

use super::{str_bytes, RequestContext};
use crate::context::Broker;
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;

const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_SPECIFIED: i8 = 2;
const ENTITY_TYPES: [&str; 3] = ["user", "client-id", "ip"];

pub fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: &DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    let allowed =
        broker
            .authorizer
            .allows(context, &operations::DESCRIBE_CLIENT_QUOTAS, CLUSTER_NAME);
    let checked = if allowed {
        validate(request)
    } else {
        Err((
            ResponseError::ClusterAuthorizationFailed,
            "Cluster authorization failed.".to_string(),
        ))
    };
    match checked {
        Ok(()) => DescribeClientQuotasResponse::default().with_entries(Some(Vec::new())),
        Err((error, message)) => DescribeClientQuotasResponse::default()
            .with_error_code(error.code())
            .with_error_message(Some(str_bytes(&message)))
            .with_entries(None),
    }
}

fn validate(request: &DescribeClientQuotasRequest) -> Result<(), (ResponseError, String)> {
    let invalid = |message: String| (ResponseError::InvalidRequest, message);
    let mut types = HashSet::new();
    for component in &request.components {
        let entity_type = &*component.entity_type;
        if entity_type.is_empty() {
            return Err(invalid("Invalid empty entity type.".into()));
        }
        if !types.insert(entity_type) {
            return Err(invalid(format!(
                "Entity type {entity_type} cannot appear more than once in the filter."
            )));
        }
        if !ENTITY_TYPES.contains(&entity_type) {
            return Err((
                ResponseError::UnsupportedVersion,
                format!("Unsupported entity type {entity_type}"),
            ));
        }
        let has_match = component._match.is_some();
        match (component.match_type, has_match) {
            (MATCH_EXACT, false) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                ))
            }
            (MATCH_DEFAULT, true) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                        .into(),
                ))
            }
            (MATCH_SPECIFIED, true) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                        .into(),
                ))
            }
            (MATCH_EXACT | MATCH_DEFAULT | MATCH_SPECIFIED, _) => {}
            (other, _) => {
                return Err((
                    ResponseError::UnsupportedVersion,
                    format!("Unknown match type {other}"),
                ))
            }
        }
    }
    if types.contains("ip") && (types.contains("user") || types.contains("client-id")) {
        return Err(invalid(
            "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.".into(),
        ));
    }
    Ok(())
}
