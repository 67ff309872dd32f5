//! `/schemas`: schemas by id and the schema types.

use std::sync::Arc;

use axum::extract::{Extension, Path, Query, State};
use axum::routing::get;
use axum::Router;

use super::bodies::{Flags, SchemaBodyOut};
use super::{ok, Api, ApiError, ApiResult, Caller, Operation, Shared};
use crate::error::RegistryError;
use crate::schema::{Parsed, SchemaType};
use crate::store::StoredSchema;

pub fn routes() -> Router<Arc<Api>> {
    Router::new()
        .route("/schemas/types", get(types))
        .route("/schemas/ids/{id}", get(by_id))
        .route("/schemas/ids/{id}/schema", get(raw_by_id))
        .route("/schemas/ids/{id}/subjects", get(subjects_of))
        .route("/schemas/ids/{id}/versions", get(versions_of))
}

async fn types() -> ApiResult {
    let names: Vec<&str> = SchemaType::ALL.iter().map(|t| t.name()).collect();
    ok(&names)
}

fn parse_id(text: &str) -> Result<i32, ApiError> {
    text.parse::<i32>()
        .map_err(|_| ApiError(RegistryError::SchemaNotFound(text.to_string())))
}

/// The subjects and versions holding `id` that `caller` may read; reading a schema by id
/// needs SUBJECT_READ on one of them, as Confluent's authorizers decide.
async fn readable_usages(
    api: &Api,
    caller: &Caller,
    id: i32,
    deleted: bool,
) -> Result<Vec<(String, i32)>, ApiError> {
    let usages = api.registry.usages(id, true).await?;
    let any_readable = usages
        .iter()
        .any(|(s, _)| api.access.allows(caller, Operation::SubjectRead, Some(s)));
    // A schema no subject holds any more stays readable to callers who may read subjects
    // at all (`*`), so records written with it stay readable.
    if !any_readable && !api.access.allows(caller, Operation::SubjectRead, None) {
        return Err(ApiError(RegistryError::Forbidden {
            operation: Operation::SubjectRead.name().into(),
            resource: format!("schema {id}"),
        }));
    }
    let shown = if deleted {
        usages
    } else {
        api.registry.usages(id, false).await?
    };
    Ok(shown
        .into_iter()
        .filter(|(s, _)| api.access.allows(caller, Operation::SubjectRead, Some(s)))
        .collect())
}

/// `stored` (schema `id`) in the format a request asks for: `?format=serialized` gives a
/// Protobuf schema as a base64 `FileDescriptorProto`, as Confluent answers it.
pub async fn formatted(
    api: &Api,
    id: i32,
    mut stored: StoredSchema,
    flags: &Flags,
) -> Result<StoredSchema, ApiError> {
    if flags.format.as_deref() == Some("serialized") && stored.schema_type == SchemaType::Protobuf {
        if let Parsed::Protobuf(parsed) = &*api.registry.parsed(id).await? {
            stored.schema = parsed.serialized();
        }
    }
    Ok(stored)
}

async fn by_id(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    let id = parse_id(&id)?;
    let stored = api.registry.schema_by_id(id).await?;
    let stored = formatted(&api, id, stored, &flags).await?;
    if api.access.authorizes() {
        readable_usages(&api, &caller, id, true).await?;
    }
    ok(&SchemaBodyOut::of_schema(stored))
}

async fn raw_by_id(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    let id = parse_id(&id)?;
    let stored = api.registry.schema_by_id(id).await?;
    let stored = formatted(&api, id, stored, &flags).await?;
    if api.access.authorizes() {
        readable_usages(&api, &caller, id, true).await?;
    }
    Ok(raw_text(stored.schema))
}

/// A schema's text alone, as `/schema` routes answer it.
pub fn raw_text(text: String) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        [(axum::http::header::CONTENT_TYPE, super::CONTENT_TYPE)],
        text,
    )
        .into_response()
}

async fn subjects_of(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    let id = parse_id(&id)?;
    let usages = readable_usages(&api, &caller, id, flags.deleted).await?;
    let mut subjects: Vec<String> = usages.into_iter().map(|(s, _)| s).collect();
    subjects.dedup();
    ok(&subjects)
}

#[derive(serde::Serialize)]
struct SubjectVersionOut {
    subject: String,
    version: i32,
}

async fn versions_of(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    let id = parse_id(&id)?;
    let usages = readable_usages(&api, &caller, id, flags.deleted).await?;
    let out: Vec<SubjectVersionOut> = usages
        .into_iter()
        .map(|(subject, version)| SubjectVersionOut { subject, version })
        .collect();
    ok(&out)
}
