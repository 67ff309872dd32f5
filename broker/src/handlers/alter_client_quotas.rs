//! AlterClientQuotas v0-1 (`kafka-configs --alter --entity-type users|clients`): each entry
//! is validated as Kafka's `ClientQuotaControlManager` validates it (entity, keys, values),
//! then its ops applied to the entity's stored quotas in one write, unless `validate_only`.
//! ALTER_CONFIGS on the cluster, as in Kafka. Only the byte-rate keys and `request_percentage`
//! are accepted: the others Kafka knows are refused with a message saying they are not
//! enforced here.

use kafka_protocol::messages::alter_client_quotas_request::EntryData;
use kafka_protocol::messages::alter_client_quotas_response::{self as response, EntityData};
use kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};
use kafka_protocol::ResponseError;

use super::{str_bytes, RequestContext};
use crate::context::Broker;
use crate::quotas::entity::{validate_value, Entity};
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    let allowed = broker
        .authorizer
        .allows(context, &operations::ALTER_CLIENT_QUOTAS, CLUSTER_NAME);
    let mut entries = Vec::with_capacity(request.entries.len());
    for entry in &request.entries {
        let outcome = if allowed {
            alter(broker, entry, request.validate_only).await
        } else {
            Err((
                ResponseError::ClusterAuthorizationFailed,
                "Cluster authorization failed.".into(),
            ))
        };
        let answered = response::EntryData::default().with_entity(
            entry
                .entity
                .iter()
                .map(|e| {
                    EntityData::default()
                        .with_entity_type(e.entity_type.clone())
                        .with_entity_name(e.entity_name.clone())
                })
                .collect(),
        );
        entries.push(match outcome {
            Ok(()) => answered,
            Err((error, message)) => {
                context.refused("AlterClientQuotas", "quota", error, &message);
                answered
                    .with_error_code(error.code())
                    .with_error_message(Some(str_bytes(&message)))
            }
        });
    }
    AlterClientQuotasResponse::default().with_entries(entries)
}

async fn alter(
    broker: &Broker,
    entry: &EntryData,
    validate_only: bool,
) -> Result<(), (ResponseError, String)> {
    let invalid = |message: String| (ResponseError::InvalidRequest, message);
    let components = entry
        .entity
        .iter()
        .map(|e| (&*e.entity_type, e.entity_name.as_deref()));
    let entity = Entity::from_components(components).map_err(invalid)?;
    let mut values = broker.quotas.store.get(&entity);
    for op in &entry.ops {
        let key = op.key.to_string();
        if op.remove {
            values.remove(&key);
        } else {
            validate_value(&entity, &key, op.value).map_err(invalid)?;
            values.insert(key, op.value);
        }
    }
    if validate_only {
        return Ok(());
    }
    broker
        .quotas
        .store
        .set(&entity, values)
        .await
        .map_err(|e| (ResponseError::UnknownServerError, e.to_string()))
}
