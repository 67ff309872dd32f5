//! The Iceberg REST catalog every broker serves (`iceberg_catalog_listen`): the read side of
//! Iceberg's REST OpenAPI that engines need to list namespaces and tables and load a table
//! (pyiceberg's `RestCatalog`, DuckDB's `ATTACH … (TYPE iceberg)`, Spark, Trino). Tables are
//! committed by the compactor only; every write route answers 403. Callers authenticate with
//! HTTP Basic as the broker's users; a table is listed to a caller who may DESCRIBE its topic
//! and loaded by one who may READ it.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures::future::BoxFuture;
use serde_json::json;
use telemetry::http::router::Peer;
use telemetry::http::BasicCredentials;

use crate::{catalog, TableStore};

pub use telemetry::http::Caller;

/// Authentication and authorization, decided by the process that owns users and ACLs.
pub trait Access: Send + Sync {
    /// The caller of these credentials; `None` for absent, malformed or wrong ones (401).
    fn authenticate(
        &self,
        credentials: Option<BasicCredentials>,
        peer: SocketAddr,
    ) -> BoxFuture<'_, Option<Caller>>;

    /// Whether `caller` may see that `topic`'s table exists.
    fn may_describe(&self, caller: &Caller, topic: &str) -> bool;

    /// Whether `caller` may load `topic`'s table (and so learn where its data files are).
    fn may_read(&self, caller: &Caller, topic: &str) -> bool;
}

/// Lets every caller read every table: a listener without authentication or ACLs.
pub struct Open;

impl Access for Open {
    fn authenticate(
        &self,
        _credentials: Option<BasicCredentials>,
        peer: SocketAddr,
    ) -> BoxFuture<'_, Option<Caller>> {
        Box::pin(async move { Some(Caller { user: None, peer }) })
    }

    fn may_describe(&self, _caller: &Caller, _topic: &str) -> bool {
        true
    }

    fn may_read(&self, _caller: &Caller, _topic: &str) -> bool {
        true
    }
}

/// What the catalog's routes share.
pub struct Catalog {
    pub tables: TableStore,
    /// The one namespace the topics' tables are in (`kafka` unless configured).
    pub namespace: String,
    pub access: Arc<dyn Access>,
}

type Shared = State<Arc<Catalog>>;

/// The catalog's routes.
pub fn router(catalog: Arc<Catalog>) -> Router {
    Router::new()
        .route("/v1/config", get(config))
        .route("/v1/namespaces", get(namespaces).post(read_only))
        .route(
            "/v1/namespaces/{namespace}",
            get(namespace)
                .head(namespace)
                .delete(read_only)
                .post(read_only),
        )
        .route(
            "/v1/namespaces/{namespace}/tables",
            get(list_tables).post(read_only),
        )
        .route(
            "/v1/namespaces/{namespace}/tables/{table}",
            get(load_table)
                .head(load_table)
                .post(read_only)
                .delete(read_only),
        )
        .route("/tables", get(table_states))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "NotFoundException", "no such route") })
        .layer(axum::middleware::from_fn_with_state(
            catalog.clone(),
            authenticate,
        ))
        .with_state(catalog)
}

/// An error as Iceberg's REST spec shapes it (`ErrorModel` in an `IcebergErrorResponse`).
fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "code": status.as_u16()}});
    (status, Json(body)).into_response()
}

async fn authenticate(State(catalog): Shared, mut request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<Peer>()
        .map_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)), |p| p.0);
    let credentials = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| BasicCredentials::parse(value.as_bytes()));
    let Some(caller) = catalog.access.authenticate(credentials, peer).await else {
        let mut refused = error(
            StatusCode::UNAUTHORIZED,
            "NotAuthorizedException",
            "authentication required",
        );
        refused.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Basic realm=\"iceberg\", charset=\"UTF-8\""),
        );
        return refused;
    };
    request.extensions_mut().insert(caller);
    next.run(request).await
}

async fn config() -> Response {
    Json(json!({"defaults": {}, "overrides": {}})).into_response()
}

#[derive(serde::Deserialize)]
struct Parent {
    parent: Option<String>,
}

async fn namespaces(State(catalog): Shared, Query(query): Query<Parent>) -> Response {
    // One level of namespaces: nothing lies under ours.
    let namespaces = match query.parent {
        Some(_) => json!([]),
        None => json!([[catalog.namespace]]),
    };
    Json(json!({"namespaces": namespaces})).into_response()
}

fn no_namespace(namespace: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "NoSuchNamespaceException",
        &format!("Namespace does not exist: {namespace}"),
    )
}

async fn namespace(State(catalog): Shared, Path(namespace): Path<String>) -> Response {
    if namespace != catalog.namespace {
        return no_namespace(&namespace);
    }
    Json(json!({"namespace": [namespace], "properties": {}})).into_response()
}

async fn list_tables(
    State(catalog): Shared,
    Path(namespace): Path<String>,
    axum::Extension(caller): axum::Extension<Caller>,
) -> Response {
    if namespace != catalog.namespace {
        return no_namespace(&namespace);
    }
    let tables = match catalog::list(catalog.tables.meta.as_ref()).await {
        Ok(tables) => tables,
        Err(e) => return unavailable(&e),
    };
    let identifiers: Vec<_> = tables
        .iter()
        .filter(|(topic, _)| catalog.access.may_describe(&caller, topic))
        .map(|(topic, _)| json!({"namespace": [namespace], "name": topic}))
        .collect();
    Json(json!({"identifiers": identifiers})).into_response()
}

/// Not Iceberg's: each table's state for operators (`curl …/tables`), the tables the caller
/// may describe only.
async fn table_states(
    State(catalog): Shared,
    axum::Extension(caller): axum::Extension<Caller>,
) -> Response {
    let tables = match catalog::list(catalog.tables.meta.as_ref()).await {
        Ok(tables) => tables,
        Err(e) => return unavailable(&e),
    };
    let states: Vec<_> = tables
        .iter()
        .filter(|(topic, _)| catalog.access.may_describe(&caller, topic))
        .map(|(topic, p)| {
            json!({
                "table": format!("{}.{topic}", catalog.namespace),
                "topic_id": p.topic_id,
                "sequence_number": p.sequence_number,
                "committed_ms": p.committed_ms,
                "data_files": p.data_files,
                "records": p.records,
                "metadata_location": p.metadata_location,
            })
        })
        .collect();
    Json(json!({ "tables": states })).into_response()
}

async fn load_table(
    State(catalog): Shared,
    method: Method,
    Path((namespace, table)): Path<(String, String)>,
    axum::Extension(caller): axum::Extension<Caller>,
) -> Response {
    let missing = || {
        error(
            StatusCode::NOT_FOUND,
            "NoSuchTableException",
            &format!("Table does not exist: {namespace}.{table}"),
        )
    };
    if namespace != catalog.namespace {
        return no_namespace(&namespace);
    }
    // A table the caller may not describe is not there for them, as Kafka hides topics.
    if !catalog.access.may_describe(&caller, &table) {
        return missing();
    }
    if !catalog.access.may_read(&caller, &table) {
        return error(
            StatusCode::FORBIDDEN,
            "ForbiddenException",
            &format!("Not authorized to read {namespace}.{table}"),
        );
    }
    let loaded = match catalog.tables.load(&table).await {
        Ok(Some(loaded)) => loaded,
        Ok(None) => return missing(),
        Err(e) => return unavailable(&e),
    };
    if method == Method::HEAD {
        return StatusCode::NO_CONTENT.into_response();
    }
    Json(json!({
        "metadata-location": loaded.versioned.pointer.metadata_location,
        "metadata": loaded.metadata_json,
        "config": {},
    }))
    .into_response()
}

async fn read_only() -> Response {
    error(
        StatusCode::FORBIDDEN,
        "ForbiddenException",
        "This catalog is read-only: tables are committed by the compactor from their topics",
    )
}

fn unavailable(e: &crate::TableError) -> Response {
    tracing::warn!(error = %e, "iceberg catalog request failed");
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailableException",
        &format!("the catalog cannot read its tables now: {e}"),
    )
}
