//! DescribeUserScramCredentials v0, as Kafka's `ScramImage.describe`: the mechanisms and
//! iterations of each user asked for (every user with a credential when the list is null or
//! empty); RESOURCE_NOT_FOUND for a user without any, DUPLICATE_RESOURCE for a user asked for
//! twice. Salts and keys are never described.

use std::collections::HashMap;

use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::ResponseError;

use crate::context::Broker;

use super::{str_bytes, RequestContext};
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;

pub fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: &DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    if !broker.authorizer.allows(
        context,
        &operations::DESCRIBE_USER_SCRAM_CREDENTIALS,
        CLUSTER_NAME,
    ) {
        return DescribeUserScramCredentialsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
            .with_error_message(Some(str_bytes("Cluster authorization failed.")));
    }
    let asked: Vec<String> = match request.users.as_deref() {
        None | Some([]) => broker.scram.users(),
        Some(users) => users.iter().map(|u| u.name.to_string()).collect(),
    };
    let mut times_asked: HashMap<&str, usize> = HashMap::new();
    for user in &asked {
        *times_asked.entry(user).or_default() += 1;
    }
    let mut seen = std::collections::HashSet::new();
    let results = asked
        .iter()
        .filter(|user| seen.insert(user.as_str()))
        .map(|user| describe(broker, user, times_asked.get(user.as_str()) > Some(&1)))
        .collect();
    DescribeUserScramCredentialsResponse::default().with_results(results)
}

fn describe(broker: &Broker, user: &str, duplicate: bool) -> DescribeUserScramCredentialsResult {
    let result = DescribeUserScramCredentialsResult::default().with_user(str_bytes(user));
    if duplicate {
        return result
            .with_error_code(ResponseError::DuplicateResource.code())
            .with_error_message(Some(str_bytes(&format!(
                "Cannot describe SCRAM credentials for the same user twice in a single request: {user}"
            ))));
    }
    let infos: Vec<CredentialInfo> = broker
        .scram
        .describe(user)
        .into_iter()
        .map(|(mechanism, iterations)| {
            CredentialInfo::default()
                .with_mechanism(mechanism.type_code())
                .with_iterations(iterations)
        })
        .collect();
    if infos.is_empty() {
        return result
            .with_error_code(ResponseError::ResourceNotFound.code())
            .with_error_message(Some(str_bytes(&format!(
                "Attempt to describe a user credential that does not exist: {user}"
            ))));
    }
    result.with_credential_infos(infos)
}
