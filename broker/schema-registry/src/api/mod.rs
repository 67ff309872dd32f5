//! Confluent's Schema Registry REST API on axum: routes, JSON bodies, the error body
//! `{"error_code", "message"}` and `application/vnd.schemaregistry.v1+json`. Every route asks
//! [`Access`] first; `docs/schema-registry.md` has the coverage table.

pub mod access;
mod bodies;
mod config;
mod schemas;
pub use telemetry::http::router as server;
mod subjects;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Serialize;

pub use access::{Access, Caller, Open, Operation};

use crate::error::RegistryError;
use crate::metrics;
use crate::Registry;

pub const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";
/// The largest request body read: a schema of `SCHEMA_BYTES_MAX` escaped into JSON fits.
const BODY_BYTES_MAX: usize = 4 << 20;

/// What every handler needs.
pub struct Api {
    pub registry: Arc<Registry>,
    pub access: Arc<dyn Access>,
}

pub type Shared = State<Arc<Api>>;

/// An error answered in Confluent's body.
#[derive(Debug)]
pub struct ApiError(pub RegistryError);

impl From<RegistryError> for ApiError {
    fn from(error: RegistryError) -> ApiError {
        ApiError(error)
    }
}

#[derive(Serialize)]
struct ErrorBody {
    error_code: u32,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, error_code) = self.0.codes();
        metrics::error(error_code);
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = ErrorBody {
            error_code,
            message: self.0.to_string(),
        };
        let mut response = json(status, &body);
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"schema-registry\", charset=\"UTF-8\""),
            );
        }
        response
    }
}

pub type ApiResult = Result<Response, ApiError>;

/// `value` as the API's JSON.
pub fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response()
}

pub fn ok<T: Serialize>(value: &T) -> ApiResult {
    Ok(json(StatusCode::OK, value))
}

impl Api {
    /// Refuses the call unless `caller` may do `operation`.
    pub fn require(
        &self,
        caller: &Caller,
        operation: Operation,
        subject: Option<&str>,
    ) -> Result<(), ApiError> {
        if self.access.allows(caller, operation, subject) {
            return Ok(());
        }
        Err(ApiError(RegistryError::Forbidden {
            operation: operation.name().to_string(),
            resource: subject.unwrap_or("the registry").to_string(),
        }))
    }
}

/// The API's routes over `api`.
pub fn router(api: Arc<Api>) -> Router {
    Router::new()
        .route("/", get(|| async { ok(&serde_json::json!({})) }))
        .merge(schemas::routes())
        .merge(subjects::routes())
        .merge(config::routes())
        .route(
            "/compatibility/subjects/{subject}/versions/{version}",
            post(subjects::compatibility_with),
        )
        .route(
            "/compatibility/subjects/{subject}/versions",
            post(subjects::compatibility_all),
        )
        .fallback(|| async { ApiError(RegistryError::NotFound) })
        .layer(axum::middleware::from_fn_with_state(
            api.clone(),
            authenticate,
        ))
        .layer(DefaultBodyLimit::max(BODY_BYTES_MAX))
        .with_state(api)
}

/// Authenticates every request and hands the [`Caller`] to its handler; counts requests.
async fn authenticate(State(api): Shared, mut request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<server::Peer>()
        .map(|p| p.0)
        .unwrap_or_else(|| std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
    let credentials = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| telemetry::http::BasicCredentials::parse(value.as_bytes()));
    let method = request.method().clone();
    let Some(caller) = api.access.authenticate(credentials, peer).await else {
        metrics::request(&method, 401);
        return ApiError(RegistryError::Unauthenticated).into_response();
    };
    request.extensions_mut().insert(caller);
    let response = next.run(request).await;
    metrics::request(&method, response.status().as_u16());
    response
}
