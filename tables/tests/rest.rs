//! The REST catalog's routes as an engine and an operator call them: Iceberg's shapes for
//! config, namespaces, table lists and loads; 401 without a login, tables hidden from callers
//! who may not describe them, 403 for a load without READ and for every write.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use futures::future::BoxFuture;
use http_body_util::BodyExt;
use metastore::{MemoryMetaStore, MetaOptions, MetaStore};
use object_store::memory::InMemory;
use object_store::ObjectStore;
use serde_json::Value;
use tables::rest::{router, Access, Caller, Catalog};
use tables::TableStore;
use telemetry::http::BasicCredentials;
use tower::ServiceExt;

/// `alice` may do everything; `bob` may describe `orders` but read nothing; anyone else is
/// refused at login.
struct Users;

impl Access for Users {
    fn authenticate(
        &self,
        credentials: Option<BasicCredentials>,
        peer: SocketAddr,
    ) -> BoxFuture<'_, Option<Caller>> {
        let user = credentials
            .filter(|c| c.password == b"secret" && (c.user == "alice" || c.user == "bob"))
            .map(|c| c.user);
        Box::pin(async move {
            user.map(|user| Caller {
                user: Some(user),
                peer,
            })
        })
    }

    fn may_describe(&self, caller: &Caller, topic: &str) -> bool {
        caller.user.as_deref() == Some("alice") || topic == "orders"
    }

    fn may_read(&self, caller: &Caller, _topic: &str) -> bool {
        caller.user.as_deref() == Some("alice")
    }
}

async fn catalog() -> axum::Router {
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let meta: Arc<dyn MetaStore> = Arc::new(MemoryMetaStore::open(MetaOptions::default()));
    let tables = TableStore::new(objects, meta, "memory://".into());
    let none = BTreeMap::new();
    for (topic, id) in [
        ("orders", "00000000000000000000000000000001"),
        ("payments", "00000000000000000000000000000002"),
    ] {
        tables.sync(topic, id, &[], &none, 1_000).await.unwrap();
    }
    router(Arc::new(Catalog {
        tables,
        namespace: "kafka".into(),
        access: Arc::new(Users),
    }))
}

async fn call(
    router: &axum::Router,
    method: Method,
    uri: &str,
    user: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(user) = user {
        let token = base64_basic(user, "secret");
        request = request.header(header::AUTHORIZATION, format!("Basic {token}"));
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn base64_basic(user: &str, password: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}

#[tokio::test]
async fn an_engine_lists_the_namespace_and_its_tables_and_loads_one() {
    let r = catalog().await;
    let (status, config) = call(&r, Method::GET, "/v1/config", Some("alice")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(config["defaults"].is_object() && config["overrides"].is_object());
    let (_, namespaces) = call(&r, Method::GET, "/v1/namespaces", Some("alice")).await;
    assert_eq!(namespaces["namespaces"], serde_json::json!([["kafka"]]));
    let (_, tables) = call(
        &r,
        Method::GET,
        "/v1/namespaces/kafka/tables",
        Some("alice"),
    )
    .await;
    assert_eq!(tables["identifiers"].as_array().unwrap().len(), 2);
    let (status, loaded) = call(
        &r,
        Method::GET,
        "/v1/namespaces/kafka/tables/orders",
        Some("alice"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(loaded["metadata"]["format-version"], 2);
    assert!(loaded["metadata-location"]
        .as_str()
        .unwrap()
        .ends_with(".metadata.json"));
    let (status, _) = call(
        &r,
        Method::HEAD,
        "/v1/namespaces/kafka/tables/orders",
        Some("alice"),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, missing) = call(
        &r,
        Method::GET,
        "/v1/namespaces/kafka/tables/nope",
        Some("alice"),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(missing["error"]["type"], "NoSuchTableException");
    let (status, _) = call(
        &r,
        Method::GET,
        "/v1/namespaces/other/tables",
        Some("alice"),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_caller_sees_only_what_its_acls_grant_and_nobody_writes() {
    let r = catalog().await;
    let (status, refused) = call(&r, Method::GET, "/v1/namespaces", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(refused["error"]["code"], 401);
    let (_, tables) = call(&r, Method::GET, "/v1/namespaces/kafka/tables", Some("bob")).await;
    let names: Vec<&str> = tables["identifiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["orders"]);
    let (status, _) = call(
        &r,
        Method::GET,
        "/v1/namespaces/kafka/tables/orders",
        Some("bob"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(
        &r,
        Method::GET,
        "/v1/namespaces/kafka/tables/payments",
        Some("bob"),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a table bob may not describe is not there for him"
    );
    for uri in [
        "/v1/namespaces",
        "/v1/namespaces/kafka/tables",
        "/v1/namespaces/kafka/tables/orders",
    ] {
        let (status, body) = call(&r, Method::POST, uri, Some("alice")).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{uri}");
        assert_eq!(body["error"]["type"], "ForbiddenException");
    }
    let (_, states) = call(&r, Method::GET, "/tables", Some("bob")).await;
    assert_eq!(states["tables"].as_array().unwrap().len(), 1);
    assert_eq!(states["tables"][0]["table"], "kafka.orders");
}
