//! DescribeClientQuotas v0-1: the stored quotas of every entity the filter matches, as
//! Kafka's `ClientQuotasImage.describe` matches them (each component's type must be in the
//! entity and its name match exactly, be the default, or be any given name; `strict` also
//! refuses entities with more types than the filter). The filter is validated first, as
//! Kafka does. `kafka-configs --describe --entity-type users` asks this before it describes
//! SCRAM credentials.

use std::collections::HashSet;

use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
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
        Ok(()) => {
            DescribeClientQuotasResponse::default().with_entries(Some(matching(broker, request)))
        }
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

fn matching(broker: &Broker, request: &DescribeClientQuotasRequest) -> Vec<EntryData> {
    use crate::quotas::entity::Name;
    let matches = |entity: &crate::quotas::entity::Entity| {
        let components = entity.components();
        if request.strict && components.len() != request.components.len() {
            return false;
        }
        request.components.iter().all(|filter| {
            let Some((_, name)) = components.iter().find(|(t, _)| *t == &*filter.entity_type)
            else {
                return false;
            };
            match (filter.match_type, name) {
                (MATCH_EXACT, Name::Named(n)) => filter._match.as_deref() == Some(n.as_str()),
                (MATCH_DEFAULT, Name::Default) | (MATCH_SPECIFIED, Name::Named(_)) => true,
                _ => false,
            }
        })
    };
    broker
        .quotas
        .store
        .all()
        .into_iter()
        .filter(|(entity, _)| matches(entity))
        .map(|(entity, values)| {
            let components = entity
                .components()
                .into_iter()
                .map(|(t, name)| {
                    EntityData::default()
                        .with_entity_type(str_bytes(t))
                        .with_entity_name(name.as_wire().map(str_bytes))
                })
                .collect();
            let values = values
                .into_iter()
                .map(|(key, value)| {
                    ValueData::default()
                        .with_key(str_bytes(&key))
                        .with_value(value)
                })
                .collect();
            EntryData::default()
                .with_entity(components)
                .with_values(values)
        })
        .collect()
}
