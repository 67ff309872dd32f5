//! `/subjects` and `/compatibility`: register, look up, list, read and delete versions.

use std::sync::Arc;

use axum::extract::{Extension, Path, Query, State};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;

use super::bodies::{schema_request, Flags, SchemaBodyOut};
use super::schemas::{formatted, raw_text};
use super::{ok, Api, ApiResult, Caller, Operation, Shared};
use crate::error::RegistryError;
use crate::registry::VersionSpec;

pub fn routes() -> Router<Arc<Api>> {
    Router::new()
        .route("/subjects", get(list))
        .route(
            "/subjects/{subject}",
            get(versions_alias).post(lookup).delete(delete_subject),
        )
        .route("/subjects/{subject}/versions", get(versions).post(register))
        .route(
            "/subjects/{subject}/versions/{version}",
            get(version).delete(delete_version),
        )
        .route(
            "/subjects/{subject}/versions/{version}/schema",
            get(raw_version),
        )
        .route(
            "/subjects/{subject}/versions/{version}/referencedby",
            get(referenced_by),
        )
}

async fn list(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    let prefix = flags.subject_prefix.unwrap_or_default();
    let subjects: Vec<String> = api
        .registry
        .subjects(flags.deleted)
        .await?
        .into_iter()
        .filter(|s| s.starts_with(&prefix))
        // Listing shows the subjects the caller may read, as Kafka's Metadata shows topics.
        .filter(|s| api.access.allows(&caller, Operation::SubjectRead, Some(s)))
        .collect();
    ok(&subjects)
}

async fn versions(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(subject): Path<String>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    api.require(&caller, Operation::SubjectRead, Some(&subject))?;
    ok(&api.registry.versions(&subject, flags.deleted).await?)
}

/// `GET /subjects/{subject}`: not in Confluent's API; answered as its 404 would be.
async fn versions_alias() -> ApiResult {
    Err(RegistryError::NotFound.into())
}

async fn register(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(subject): Path<String>,
    body: Bytes,
) -> ApiResult {
    api.require(&caller, Operation::SubjectWrite, Some(&subject))?;
    let request = schema_request(&body)?;
    let id = api.registry.register(&subject, &request).await?;
    crate::metrics::registered(id);
    ok(&serde_json::json!({ "id": id }))
}

async fn lookup(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(subject): Path<String>,
    Query(flags): Query<Flags>,
    body: Bytes,
) -> ApiResult {
    api.require(&caller, Operation::SubjectRead, Some(&subject))?;
    let request = schema_request(&body)?;
    let view = api
        .registry
        .lookup(&subject, &request, flags.deleted)
        .await?;
    ok(&SchemaBodyOut::of_view(view))
}

async fn version(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path((subject, version)): Path<(String, String)>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    api.require(&caller, Operation::SubjectRead, Some(&subject))?;
    let spec = VersionSpec::parse(&version)?;
    let mut view = api.registry.version(&subject, spec, flags.deleted).await?;
    view.schema = formatted(&api, view.id, view.schema, &flags).await?;
    ok(&SchemaBodyOut::of_view(view))
}

async fn raw_version(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path((subject, version)): Path<(String, String)>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    api.require(&caller, Operation::SubjectRead, Some(&subject))?;
    let spec = VersionSpec::parse(&version)?;
    let view = api.registry.version(&subject, spec, flags.deleted).await?;
    let stored = formatted(&api, view.id, view.schema, &flags).await?;
    Ok(raw_text(stored.schema))
}

async fn referenced_by(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path((subject, version)): Path<(String, String)>,
) -> ApiResult {
    api.require(&caller, Operation::SubjectRead, Some(&subject))?;
    let spec = VersionSpec::parse(&version)?;
    ok(&api.registry.referenced_by(&subject, spec).await?)
}

async fn delete_subject(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(subject): Path<String>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    api.require(&caller, Operation::SubjectDelete, Some(&subject))?;
    ok(&api
        .registry
        .delete_subject(&subject, flags.permanent)
        .await?)
}

async fn delete_version(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path((subject, version)): Path<(String, String)>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    api.require(&caller, Operation::SubjectDelete, Some(&subject))?;
    let spec = VersionSpec::parse(&version)?;
    ok(&api
        .registry
        .delete_version(&subject, spec, flags.permanent)
        .await?)
}

/// The answer of a compatibility test: `messages` only with `?verbose=true`, as Confluent.
fn compatibility_answer(messages: Vec<String>, verbose: bool) -> ApiResult {
    let mut body = serde_json::json!({ "is_compatible": messages.is_empty() });
    if verbose {
        body["messages"] = serde_json::json!(messages);
    }
    ok(&body)
}

pub async fn compatibility_with(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path((subject, version)): Path<(String, String)>,
    Query(flags): Query<Flags>,
    body: Bytes,
) -> ApiResult {
    api.require(&caller, Operation::SubjectWrite, Some(&subject))?;
    let spec = VersionSpec::parse(&version)?;
    let request = schema_request(&body)?;
    let messages = api
        .registry
        .check_compatibility(&subject, Some(spec), &request)
        .await?;
    compatibility_answer(messages, flags.verbose)
}

pub async fn compatibility_all(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(subject): Path<String>,
    Query(flags): Query<Flags>,
    body: Bytes,
) -> ApiResult {
    api.require(&caller, Operation::SubjectWrite, Some(&subject))?;
    let request = schema_request(&body)?;
    let messages = api
        .registry
        .check_compatibility(&subject, None, &request)
        .await?;
    compatibility_answer(messages, flags.verbose)
}
