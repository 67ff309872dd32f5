//! AlterUserScramCredentials v0, as Kafka's controller (`ScramControlManager`) decides it:
//! one result per user; a user named twice in one request (deletion or upsertion) fails with
//! DUPLICATE_RESOURCE; names must not be empty; the mechanism must be SCRAM-SHA-256 or -512;
//! iterations within 4096..=16384; deleting a credential that does not exist is
//! RESOURCE_NOT_FOUND (a user with two mechanisms changes them in two requests, as with
//! Kafka). An upsertion carries the client's salt and salted password (the admin
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
use crate::security::acl::CLUSTER_NAME;
use crate::security::authorizer::operations;
use crate::security::scram::store::USER_NAME_BYTES_MAX;
use crate::security::scram::{ScramCredential, ScramMechanism, ScramStoreError};

use super::{str_bytes, RequestContext};

type Failure = (ResponseError, String);

/// What a request does, decided before anything is written: users in the order first named,
/// the valid change of each, and the error of each user refused.
#[derive(Default)]
struct Plan<'a> {
    order: Vec<&'a str>,
    deletions: HashMap<&'a str, ScramMechanism>,
    upsertions: HashMap<&'a str, (ScramMechanism, ScramCredential)>,
    errors: HashMap<&'a str, Failure>,
}

const ALTERED_TWICE: &str = "A user credential cannot be altered twice in the same request";

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    if !broker.authorizer.allows(
        context,
        &operations::ALTER_USER_SCRAM_CREDENTIALS,
        CLUSTER_NAME,
    ) {
        return refuse_all(&request);
    }
    let mut plan = Plan::default();
    for deletion in &request.deletions {
        plan.delete(broker, deletion);
    }
    for upsertion in &request.upsertions {
        plan.upsert(upsertion);
    }
    // Kafka's controller applies a request atomically; here each user's change is one write,
    // so a store failure can leave earlier users of the request changed.
    let mut outcomes: HashMap<&str, Result<(), Failure>> = HashMap::new();
    for (user, mechanism) in std::mem::take(&mut plan.deletions) {
        let done = broker.scram.delete(user, mechanism).await.map(|_| ());
        outcomes.insert(user, done.map_err(store_error));
    }
    for (user, (mechanism, credential)) in std::mem::take(&mut plan.upsertions) {
        let done = broker.scram.upsert(user, mechanism, credential).await;
        outcomes.insert(user, done.map_err(store_error));
    }
    for (user, failure) in std::mem::take(&mut plan.errors) {
        outcomes.insert(user, Err(failure));
    }
    let results = plan
        .order
        .iter()
        .map(|user| {
            let outcome = outcomes.remove(user).unwrap_or(Ok(()));
            if let Err((error, reason)) = &outcome {
                context.refused("AlterUserScramCredentials", user, *error, reason);
            }
            result(user, outcome)
        })
        .collect();
    AlterUserScramCredentialsResponse::default().with_results(results)
}

/// As Kafka's `getErrorResponse`: each user named, once, sorted.
fn refuse_all(request: &AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse {
    let deleted = request.deletions.iter().map(|d| &*d.name);
    let upserted = request.upsertions.iter().map(|u| &*u.name);
    let users: std::collections::BTreeSet<&str> = deleted.chain(upserted).collect();
    let failure = || {
        Err((
            ResponseError::ClusterAuthorizationFailed,
            "Cluster authorization failed.".to_string(),
        ))
    };
    let results = users.into_iter().map(|u| result(u, failure())).collect();
    AlterUserScramCredentialsResponse::default().with_results(results)
}

impl<'a> Plan<'a> {
    fn name(&mut self, user: &'a str) {
        if !self.order.contains(&user) {
            self.order.push(user);
        }
    }

    /// As Kafka: a user named twice fails whole; a deletion is checked when read.
    fn delete(&mut self, broker: &Broker, deletion: &'a ScramCredentialDeletion) {
        let user = &*deletion.name;
        self.name(user);
        if self.errors.contains_key(user) {
            return;
        }
        if self.deletions.remove(user).is_some() {
            self.errors.insert(
                user,
                (ResponseError::DuplicateResource, ALTERED_TWICE.into()),
            );
            return;
        }
        let checked = validate_name_and_mechanism(user, deletion.mechanism).and_then(|m| {
            if broker.scram.contains(user, m) {
                Ok(m)
            } else {
                Err((
                    ResponseError::ResourceNotFound,
                    "Attempt to delete a user credential that does not exist".into(),
                ))
            }
        });
        match checked {
            Ok(mechanism) => {
                self.deletions.insert(user, mechanism);
            }
            Err(failure) => {
                self.errors.insert(user, failure);
            }
        }
    }

    fn upsert(&mut self, upsertion: &'a ScramCredentialUpsertion) {
        let user = &*upsertion.name;
        self.name(user);
        if self.errors.contains_key(user) {
            return;
        }
        if self.deletions.remove(user).is_some() || self.upsertions.remove(user).is_some() {
            self.errors.insert(
                user,
                (ResponseError::DuplicateResource, ALTERED_TWICE.into()),
            );
            return;
        }
        let checked = validate_name_and_mechanism(user, upsertion.mechanism)
            .and_then(|m| credential(m, upsertion).map(|c| (m, c)));
        match checked {
            Ok(change) => {
                self.upsertions.insert(user, change);
            }
            Err(failure) => {
                self.errors.insert(user, failure);
            }
        }
    }
}

fn validate_name_and_mechanism(user: &str, code: i8) -> Result<ScramMechanism, Failure> {
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
) -> Result<ScramCredential, Failure> {
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

fn store_error(error: ScramStoreError) -> Failure {
    let code = match &error {
        ScramStoreError::Full => ResponseError::PolicyViolation,
        ScramStoreError::Meta(metastore::MetaError::Timeout) => ResponseError::RequestTimedOut,
        _ => ResponseError::UnknownServerError,
    };
    (code, error.to_string())
}

fn result(user: &str, outcome: Result<(), Failure>) -> AlterUserScramCredentialsResult {
    let result = AlterUserScramCredentialsResult::default().with_user(str_bytes(user));
    match outcome {
        Ok(()) => result,
        Err((error, message)) => result
            .with_error_code(error.code())
            .with_error_message(Some(str_bytes(&message))),
    }
}
