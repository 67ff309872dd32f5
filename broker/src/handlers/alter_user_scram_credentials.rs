//! AlterUserScramCredentials v0, as Kafka's controller (`ScramControlManager`) decides it:
//! one result per user; a user named twice in one request (deletion or upsertion) fails with
//! DUPLICATE_RESOURCE; names must not be empty; the mechanism must be SCRAM-SHA-256 or -512;
//! iterations within 4096..=16384; deleting a credential that does not exist is
//! RESOURCE_NOT_FOUND. An upsertion carries the client's salt and salted password (the admin
//! client salts the password it was given); the broker stores the derived stored and server
//! keys, never the salted password.

use std::collections::HashMap;

use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};
use kafka_protocol::ResponseError;

use crate::context::Broker;
use crate::security::scram::store::USER_NAME_BYTES_MAX;
use crate::security::scram::{ScramCredential, ScramMechanism, ScramStoreError};

use super::{str_bytes, RequestContext};

type Outcome = Result<(), (ResponseError, String)>;

/// A request's changes by user: users in the order first named, the one change of each user
/// named once, the DUPLICATE_RESOURCE outcome of each user named more than once.
struct Grouped<'a> {
    order: Vec<&'a str>,
    changes: Vec<(&'a str, Change<'a>)>,
    outcomes: HashMap<&'a str, Outcome>,
}

enum Change<'a> {
    Delete(&'a ScramCredentialDeletion),
    Upsert(&'a ScramCredentialUpsertion),
}

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    // Authorization hook: Kafka requires ALTER on the CLUSTER resource and otherwise answers
    // CLUSTER_AUTHORIZATION_FAILED for every user of the request.
    let Grouped {
        order,
        changes,
        mut outcomes,
    } = group_by_user(&request);
    for (user, change) in changes {
        let outcome = apply(broker, user, change).await;
        if let Err((error, reason)) = &outcome {
            context.refused("AlterUserScramCredentials", user, *error, reason);
        }
        outcomes.insert(user, outcome);
    }
    let results = order
        .into_iter()
        .map(|user| result(user, outcomes.remove(user).unwrap_or(Ok(()))))
        .collect();
    AlterUserScramCredentialsResponse::default().with_results(results)
}

fn group_by_user(request: &AlterUserScramCredentialsRequest) -> Grouped<'_> {
    let named = request
        .deletions
        .iter()
        .map(|d| (&*d.name, Change::Delete(d)))
        .chain(
            request
                .upsertions
                .iter()
                .map(|u| (&*u.name, Change::Upsert(u))),
        );
    let mut order = Vec::new();
    let mut changes: HashMap<&str, Change<'_>> = HashMap::new();
    let mut outcomes = HashMap::new();
    for (user, change) in named {
        if outcomes.contains_key(user) {
            continue;
        }
        if changes.remove(user).is_some() {
            let duplicate = "A user credential cannot be altered twice in the same request";
            outcomes.insert(
                user,
                Err((ResponseError::DuplicateResource, duplicate.to_string())),
            );
        } else {
            order.push(user);
            changes.insert(user, change);
        }
    }
    let changes = order
        .iter()
        .filter_map(|user| changes.remove(user).map(|change| (*user, change)))
        .collect();
    Grouped {
        order,
        changes,
        outcomes,
    }
}

async fn apply(broker: &Broker, user: &str, change: Change<'_>) -> Outcome {
    let code = match &change {
        Change::Delete(d) => d.mechanism,
        Change::Upsert(u) => u.mechanism,
    };
    let mechanism = validate_name_and_mechanism(user, code)?;
    let stored = match change {
        Change::Delete(_) => {
            if !broker.scram.contains(user, mechanism) {
                return Err((
                    ResponseError::ResourceNotFound,
                    "Attempt to delete a user credential that does not exist".into(),
                ));
            }
            broker.scram.delete(user, mechanism).await.map(|_| ())
        }
        Change::Upsert(upsertion) => {
            let credential = credential(mechanism, upsertion)?;
            broker.scram.upsert(user, mechanism, credential).await
        }
    };
    stored.map_err(store_error)
}

fn validate_name_and_mechanism(
    user: &str,
    code: i8,
) -> Result<ScramMechanism, (ResponseError, String)> {
    if user.is_empty() {
        return Err((
            ResponseError::UnacceptableCredential,
            "Username must not be empty".into(),
        ));
    }
    if user.len() > USER_NAME_BYTES_MAX {
        return Err((
            ResponseError::UnacceptableCredential,
            format!("Username must not be longer than {USER_NAME_BYTES_MAX} bytes"),
        ));
    }
    ScramMechanism::from_type_code(code).ok_or((
        ResponseError::UnsupportedSaslMechanism,
        "Unknown SCRAM mechanism".into(),
    ))
}

fn credential(
    mechanism: ScramMechanism,
    upsertion: &ScramCredentialUpsertion,
) -> Result<ScramCredential, (ResponseError, String)> {
    let unacceptable = |reason: String| (ResponseError::UnacceptableCredential, reason);
    if upsertion.iterations < ScramMechanism::MIN_ITERATIONS {
        return Err(unacceptable("Too few iterations".into()));
    }
    if upsertion.iterations > ScramMechanism::MAX_ITERATIONS {
        return Err(unacceptable("Too many iterations".into()));
    }
    ScramCredential::from_salted_password(
        mechanism,
        &upsertion.salt,
        &upsertion.salted_password,
        upsertion.iterations,
    )
    .map_err(|e| unacceptable(e.to_string()))
}

fn store_error(error: ScramStoreError) -> (ResponseError, String) {
    let code = match &error {
        ScramStoreError::Full => ResponseError::PolicyViolation,
        ScramStoreError::Meta(metastore::MetaError::Timeout) => ResponseError::RequestTimedOut,
        _ => ResponseError::UnknownServerError,
    };
    (code, error.to_string())
}

fn result(user: &str, outcome: Outcome) -> AlterUserScramCredentialsResult {
    let result = AlterUserScramCredentialsResult::default().with_user(str_bytes(user));
    match outcome {
        Ok(()) => result,
        Err((error, message)) => result
            .with_error_code(error.code())
            .with_error_message(Some(str_bytes(&message))),
    }
}
