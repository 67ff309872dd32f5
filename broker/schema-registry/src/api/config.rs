//! `/config` (compatibility levels) and `/mode`, global and per subject.

use std::sync::Arc;

use axum::extract::{Extension, Path, Query, State};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use serde::Deserialize;

use super::bodies::Flags;
use super::{ok, Api, ApiError, ApiResult, Caller, Operation, Shared};
use crate::compatibility::Level;
use crate::error::RegistryError;
use crate::mode::Mode;
use crate::registry::check_subject;

pub fn routes() -> Router<Arc<Api>> {
    Router::new()
        .route(
            "/config",
            get(get_global).put(put_global).delete(delete_global),
        )
        .route(
            "/config/{subject}",
            get(get_subject).put(put_subject).delete(delete_subject),
        )
        .route("/mode", get(get_mode_global).put(put_mode_global))
        .route(
            "/mode/{subject}",
            get(get_mode_subject)
                .put(put_mode_subject)
                .delete(delete_mode_subject),
        )
}

#[derive(Deserialize)]
struct ConfigBody {
    compatibility: Option<String>,
    #[serde(rename = "compatibilityLevel")]
    compatibility_level: Option<String>,
}

fn level_of(body: &Bytes) -> Result<Level, ApiError> {
    let parsed: ConfigBody = serde_json::from_slice(body).map_err(|e| {
        ApiError(RegistryError::BadRequest(format!(
            "Unrecognized request body: {e}"
        )))
    })?;
    parsed
        .compatibility
        .or(parsed.compatibility_level)
        .as_deref()
        .and_then(Level::parse)
        .ok_or(ApiError(RegistryError::InvalidCompatibilityLevel))
}

fn level_answer(level: Level) -> ApiResult {
    ok(&serde_json::json!({ "compatibilityLevel": level.name() }))
}

async fn get_global(State(api): Shared, Extension(caller): Extension<Caller>) -> ApiResult {
    api.require(&caller, Operation::GlobalCompatibilityRead, None)?;
    level_answer(api.registry.level(None).await?)
}

async fn put_global(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> ApiResult {
    api.require(&caller, Operation::GlobalCompatibilityWrite, None)?;
    let level = level_of(&body)?;
    api.registry.set_level(None, level).await?;
    ok(&serde_json::json!({ "compatibility": level.name() }))
}

async fn delete_global(State(api): Shared, Extension(caller): Extension<Caller>) -> ApiResult {
    api.require(&caller, Operation::GlobalCompatibilityWrite, None)?;
    level_answer(api.registry.delete_level(None).await?)
}

async fn get_subject(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(subject): Path<String>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    api.require(&caller, Operation::SubjectCompatibilityRead, Some(&subject))?;
    check_subject(&subject)?;
    match api.registry.own_level(Some(&subject)).await? {
        Some(level) => level_answer(level),
        None if flags.default_to_global => level_answer(api.registry.level(None).await?),
        None => Err(RegistryError::SubjectConfigNotFound(subject).into()),
    }
}

async fn put_subject(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(subject): Path<String>,
    body: Bytes,
) -> ApiResult {
    api.require(
        &caller,
        Operation::SubjectCompatibilityWrite,
        Some(&subject),
    )?;
    let level = level_of(&body)?;
    api.registry.set_level(Some(&subject), level).await?;
    ok(&serde_json::json!({ "compatibility": level.name() }))
}

async fn delete_subject(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(subject): Path<String>,
) -> ApiResult {
    api.require(
        &caller,
        Operation::SubjectCompatibilityWrite,
        Some(&subject),
    )?;
    check_subject(&subject)?;
    if api.registry.own_level(Some(&subject)).await?.is_none() {
        return Err(RegistryError::SubjectConfigNotFound(subject).into());
    }
    level_answer(api.registry.delete_level(Some(&subject)).await?)
}

#[derive(Deserialize)]
struct ModeBody {
    mode: String,
}

fn mode_of(body: &Bytes) -> Result<Mode, ApiError> {
    let parsed: ModeBody = serde_json::from_slice(body).map_err(|e| {
        ApiError(RegistryError::BadRequest(format!(
            "Unrecognized request body: {e}"
        )))
    })?;
    Mode::parse(&parsed.mode).ok_or(ApiError(RegistryError::InvalidMode))
}

fn mode_answer(mode: Mode) -> ApiResult {
    ok(&serde_json::json!({ "mode": mode.name() }))
}

async fn get_mode_global(State(api): Shared, Extension(caller): Extension<Caller>) -> ApiResult {
    api.require(&caller, Operation::GlobalCompatibilityRead, None)?;
    mode_answer(api.registry.mode(None).await?)
}

async fn put_mode_global(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Query(flags): Query<Flags>,
    body: Bytes,
) -> ApiResult {
    api.require(&caller, Operation::GlobalCompatibilityWrite, None)?;
    let mode = mode_of(&body)?;
    api.registry.set_mode(None, mode, flags.force).await?;
    mode_answer(mode)
}

async fn get_mode_subject(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(subject): Path<String>,
    Query(flags): Query<Flags>,
) -> ApiResult {
    api.require(&caller, Operation::SubjectCompatibilityRead, Some(&subject))?;
    check_subject(&subject)?;
    match api.registry.own_mode(Some(&subject)).await? {
        Some(mode) => mode_answer(mode),
        None if flags.default_to_global => mode_answer(api.registry.mode(None).await?),
        None => Err(RegistryError::SubjectModeNotFound(subject).into()),
    }
}

async fn put_mode_subject(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(subject): Path<String>,
    Query(flags): Query<Flags>,
    body: Bytes,
) -> ApiResult {
    api.require(
        &caller,
        Operation::SubjectCompatibilityWrite,
        Some(&subject),
    )?;
    check_subject(&subject)?;
    let mode = mode_of(&body)?;
    api.registry
        .set_mode(Some(&subject), mode, flags.force)
        .await?;
    mode_answer(mode)
}

async fn delete_mode_subject(
    State(api): Shared,
    Extension(caller): Extension<Caller>,
    Path(subject): Path<String>,
) -> ApiResult {
    api.require(
        &caller,
        Operation::SubjectCompatibilityWrite,
        Some(&subject),
    )?;
    check_subject(&subject)?;
    mode_answer(api.registry.delete_mode(&subject).await?)
}
