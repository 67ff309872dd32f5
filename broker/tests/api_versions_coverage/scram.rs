//! SCRAM credentials (AlterUserScramCredentials, DescribeUserScramCredentials) and the client
//! quotas `kafka-configs` describes beside them, one version at a time; each change is read
//! back through the other API.

use broker::security::scram::ScramMechanism;
use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::common::s;
use crate::ctx::Ctx;
use crate::expect_kind;

/// What Kafka's admin client sends for `password`: its own salt and `Hi(password)`.
pub fn upsertion(
    user: &str,
    m: ScramMechanism,
    password: &str,
    iterations: i32,
) -> ScramCredentialUpsertion {
    let salt = format!("salt-of-{user}").into_bytes();
    let salted = m
        .salted_password(password.as_bytes(), &salt, iterations as u32)
        .unwrap();
    ScramCredentialUpsertion::default()
        .with_name(s(user))
        .with_mechanism(m.type_code())
        .with_iterations(iterations)
        .with_salt(Bytes::from(salt))
        .with_salted_password(Bytes::from(salted))
}

pub fn deletion(user: &str, m: ScramMechanism) -> ScramCredentialDeletion {
    ScramCredentialDeletion::default()
        .with_name(s(user))
        .with_mechanism(m.type_code())
}

pub async fn alter(
    ctx: &mut Ctx,
    version: i16,
    deletions: Vec<ScramCredentialDeletion>,
    upsertions: Vec<ScramCredentialUpsertion>,
) -> Vec<(String, i16)> {
    let request = AlterUserScramCredentialsRequest::default()
        .with_deletions(deletions)
        .with_upsertions(upsertions);
    let response = expect_kind!(
        ctx.call(ApiKey::AlterUserScramCredentials, version, request)
            .await,
        AlterUserScramCredentials
    );
    response
        .results
        .iter()
        .map(|r| (r.user.to_string(), r.error_code))
        .collect()
}

/// `(user, error, [(mechanism, iterations)])` per result, at DescribeUserScramCredentials v0.
pub async fn describe(
    ctx: &mut Ctx,
    version: i16,
    users: Option<&[&str]>,
) -> Vec<(String, i16, Vec<(i8, i32)>)> {
    let users = users.map(|u| {
        u.iter()
            .map(|n| UserName::default().with_name(s(n)))
            .collect()
    });
    let request = DescribeUserScramCredentialsRequest::default().with_users(users);
    let response = expect_kind!(
        ctx.call(ApiKey::DescribeUserScramCredentials, version, request)
            .await,
        DescribeUserScramCredentials
    );
    assert_eq!(response.error_code, 0);
    response
        .results
        .iter()
        .map(|r| {
            let infos = r
                .credential_infos
                .iter()
                .map(|i| (i.mechanism, i.iterations))
                .collect();
            (r.user.to_string(), r.error_code, infos)
        })
        .collect()
}

pub async fn alter_user_scram_credentials(ctx: &mut Ctx, version: i16) {
    let user = format!("alter-v{version}");
    let sha256 = ScramMechanism::Sha256;
    let results = alter(
        ctx,
        version,
        vec![],
        vec![upsertion(&user, sha256, "pw", 4096)],
    )
    .await;
    assert_eq!(results, vec![(user.clone(), 0)]);
    let described = describe(ctx, 0, Some(&[&user])).await;
    assert_eq!(described, vec![(user.clone(), 0, vec![(1, 4096)])]);

    let results = alter(ctx, version, vec![deletion(&user, sha256)], vec![]).await;
    assert_eq!(results, vec![(user.clone(), 0)]);
    let results = alter(ctx, version, vec![deletion(&user, sha256)], vec![]).await;
    assert_eq!(
        results,
        vec![(user.clone(), ResponseError::ResourceNotFound.code())]
    );
    let described = describe(ctx, 0, Some(&[&user])).await;
    assert_eq!(described[0].1, ResponseError::ResourceNotFound.code());

    let few = upsertion("few", sha256, "pw", 4096).with_iterations(4095);
    let unknown = upsertion("unknown", sha256, "pw", 4096).with_mechanism(0);
    // Kafka keys a request's changes by user: two mechanisms of one user are two requests.
    let twice = [
        upsertion("twice", sha256, "pw", 4096),
        upsertion("twice", ScramMechanism::Sha512, "pw", 4096),
    ];
    let upsertions = [vec![few, unknown], twice.to_vec()].concat();
    let missing = deletion("missing", sha256);
    let also_missing = upsertion("missing", sha256, "pw", 4096);
    let upsertions = [upsertions, vec![also_missing]].concat();
    let results = alter(ctx, version, vec![missing], upsertions).await;
    assert_eq!(
        results,
        vec![
            ("missing".into(), ResponseError::ResourceNotFound.code()),
            ("few".into(), ResponseError::UnacceptableCredential.code()),
            (
                "unknown".into(),
                ResponseError::UnsupportedSaslMechanism.code()
            ),
            ("twice".into(), ResponseError::DuplicateResource.code()),
        ]
    );
    let described = describe(ctx, 0, Some(&["twice", "missing"])).await;
    assert!(described
        .iter()
        .all(|(_, error, _)| *error == ResponseError::ResourceNotFound.code()));
}

pub async fn describe_user_scram_credentials(ctx: &mut Ctx, version: i16) {
    let user = format!("describe-v{version}");
    let upsertions = vec![
        upsertion(&user, ScramMechanism::Sha512, "pw", 8192),
        upsertion(&format!("{user}-256"), ScramMechanism::Sha256, "pw", 4096),
    ];
    let results = alter(ctx, 0, vec![], upsertions).await;
    assert!(results.iter().all(|(_, error)| *error == 0), "{results:?}");
    let described = describe(ctx, version, Some(&[&user, "nobody"])).await;
    assert_eq!(
        described,
        vec![
            (user.clone(), 0, vec![(2, 8192)]),
            (
                "nobody".into(),
                ResponseError::ResourceNotFound.code(),
                vec![]
            ),
        ]
    );
    let twice = describe(ctx, version, Some(&[&user, &user])).await;
    assert_eq!(
        twice,
        vec![(
            user.clone(),
            ResponseError::DuplicateResource.code(),
            vec![]
        )]
    );
    // A null list describes every user.
    let all = describe(ctx, version, None).await;
    assert!(all.contains(&(user.clone(), 0, vec![(2, 8192)])), "{all:?}");
    assert!(
        all.contains(&(format!("{user}-256"), 0, vec![(1, 4096)])),
        "{all:?}"
    );
}

pub async fn describe_client_quotas(ctx: &mut Ctx, version: i16) {
    let exact = ComponentData::default()
        .with_entity_type(s("user"))
        .with_match_type(0)
        .with_match(Some(s("alice")));
    let request = DescribeClientQuotasRequest::default().with_components(vec![exact]);
    let response = expect_kind!(
        ctx.call(ApiKey::DescribeClientQuotas, version, request)
            .await,
        DescribeClientQuotas
    );
    assert_eq!((response.error_code, response.entries), (0, Some(vec![])));
    let bad = ComponentData::default()
        .with_entity_type(s("user"))
        .with_match_type(0)
        .with_match(None);
    let request = DescribeClientQuotasRequest::default().with_components(vec![bad]);
    let response = expect_kind!(
        ctx.call(ApiKey::DescribeClientQuotas, version, request)
            .await,
        DescribeClientQuotas
    );
    assert_eq!(response.error_code, ResponseError::InvalidRequest.code());
    assert_eq!(response.entries, None);
}

pub async fn alter_client_quotas(ctx: &mut Ctx, version: i16) {
    use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
    let user = format!("quoted-v{version}");
    let entry = |key: &str, value: f64, remove: bool| {
        EntryData::default()
            .with_entity(vec![
                EntityData::default()
                    .with_entity_type(s("user"))
                    .with_entity_name(Some(s(&user))),
                EntityData::default()
                    .with_entity_type(s("client-id"))
                    .with_entity_name(None),
            ])
            .with_ops(vec![OpData::default()
                .with_key(s(key))
                .with_value(value)
                .with_remove(remove)])
    };
    let producer_rate = entry("producer_byte_rate", 1024.0, false);
    let error = alter_quota(ctx, version, producer_rate.clone(), true).await;
    assert_eq!(error, 0);
    let stored = quotas_of(ctx, &user).await;
    assert!(stored.is_empty(), "validate_only stored a quota");
    assert_eq!(alter_quota(ctx, version, producer_rate, false).await, 0);
    assert_eq!(
        quotas_of(ctx, &user).await,
        vec![("producer_byte_rate".to_string(), 1024.0)]
    );
    // A request quota is a DOUBLE: a fraction of a percent is a valid one.
    let request_rate = entry("request_percentage", 250.5, false);
    assert_eq!(alter_quota(ctx, version, request_rate, false).await, 0);
    assert_eq!(
        quotas_of(ctx, &user).await,
        vec![
            ("producer_byte_rate".to_string(), 1024.0),
            ("request_percentage".to_string(), 250.5)
        ]
    );
    for (key, value) in [
        ("producer_byte_rate", 1.5),
        ("producer_byte_rate", -1.0),
        ("request_percentage", 0.0),
        ("request_percentage", -5.0),
        ("controller_mutation_rate", 1.0),
        ("no_such_quota", 1.0),
    ] {
        let error = alter_quota(ctx, version, entry(key, value, false), false).await;
        assert_eq!(error, ResponseError::InvalidRequest.code(), "{key}={value}");
    }
    let mut both_removed = entry("producer_byte_rate", 0.0, true);
    both_removed.ops.push(
        OpData::default()
            .with_key(s("request_percentage"))
            .with_remove(true),
    );
    assert_eq!(alter_quota(ctx, version, both_removed, false).await, 0);
    assert!(quotas_of(ctx, &user).await.is_empty());
    // A name longer than the entity name cap (1024 bytes) is refused, as a bad value is.
    let long_name = EntryData::default()
        .with_entity(vec![EntityData::default()
            .with_entity_type(s("client-id"))
            .with_entity_name(Some(s(&"c".repeat(1025))))])
        .with_ops(vec![OpData::default()
            .with_key(s("consumer_byte_rate"))
            .with_value(1024.0)]);
    let error = alter_quota(ctx, version, long_name, false).await;
    assert_eq!(error, ResponseError::InvalidRequest.code());
}

/// One AlterClientQuotas entry sent alone: its error code.
async fn alter_quota(
    ctx: &mut Ctx,
    version: i16,
    entry: kafka_protocol::messages::alter_client_quotas_request::EntryData,
    validate_only: bool,
) -> i16 {
    let request = AlterClientQuotasRequest::default()
        .with_entries(vec![entry])
        .with_validate_only(validate_only);
    let response = expect_kind!(
        ctx.call(ApiKey::AlterClientQuotas, version, request).await,
        AlterClientQuotas
    );
    response.entries[0].error_code
}

/// The `(key, value)` quotas DescribeClientQuotas v1 lists for `user` (any client id).
async fn quotas_of(ctx: &mut Ctx, user: &str) -> Vec<(String, f64)> {
    let request =
        DescribeClientQuotasRequest::default().with_components(vec![ComponentData::default()
            .with_entity_type(s("user"))
            .with_match_type(0)
            .with_match(Some(s(user)))]);
    let response = expect_kind!(
        ctx.call(ApiKey::DescribeClientQuotas, 1, request).await,
        DescribeClientQuotas
    );
    response
        .entries
        .unwrap_or_default()
        .iter()
        .flat_map(|e| e.values.iter().map(|v| (v.key.to_string(), v.value)))
        .collect()
}
