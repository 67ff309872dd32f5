//! The Iceberg REST catalog in the broker: its listener (`iceberg_catalog_listen`) and who may
//! read which table. Tables themselves (metadata, commits, the routes) are the `tables` crate;
//! the compactor commits them.

pub mod settings;

use std::net::SocketAddr;
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use metastore::MetaStore;
use object_store::ObjectStore;
use storage::config::HttpListen;
use tables::rest::{self, Access, Caller, Catalog};
use telemetry::http::router::{BindError, Server};
use telemetry::http::BasicCredentials;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::context::Broker;
use crate::schemas::access::RegistryAccess;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Principal;

/// Where the catalog listens and what it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogConfig {
    pub listen: HttpListen,
    pub basic_auth: bool,
    pub namespace: String,
}

impl CatalogConfig {
    pub fn from_settings(r: &storage::settings::Resolved) -> CatalogConfig {
        CatalogConfig {
            listen: storage::config::listen_setting(r, &settings::ICEBERG_CATALOG_LISTEN),
            basic_auth: r.get(&settings::ICEBERG_CATALOG_BASIC_AUTH),
            namespace: r.get(&compactor::config::settings::ICEBERG_NAMESPACE),
        }
    }
}

/// [`Access`] by the broker's users (the registry's login) and authorizer.
struct CatalogAccess {
    broker: Weak<Broker>,
    login: RegistryAccess,
}

impl CatalogAccess {
    fn allows(
        &self,
        caller: &Caller,
        operation: AclOperation,
        name: &'static str,
        topic: &str,
    ) -> bool {
        let Some(broker) = self.broker.upgrade() else {
            return false;
        };
        let principal = caller
            .user
            .as_deref()
            .map_or_else(Principal::anonymous, Principal::user);
        broker.authorizer.allows_http(
            &principal,
            caller.peer.ip(),
            name,
            (operation, ResourceType::Topic, topic),
        )
    }
}

impl Access for CatalogAccess {
    fn authenticate(
        &self,
        credentials: Option<BasicCredentials>,
        peer: SocketAddr,
    ) -> BoxFuture<'_, Option<Caller>> {
        Box::pin(self.login.login(credentials, peer))
    }

    fn may_describe(&self, caller: &Caller, topic: &str) -> bool {
        self.allows(caller, AclOperation::Describe, "ICEBERG_LIST", topic)
    }

    fn may_read(&self, caller: &Caller, topic: &str) -> bool {
        self.allows(caller, AclOperation::Read, "ICEBERG_LOAD_TABLE", topic)
    }
}

/// Binds and serves the catalog until `shutdown`; `Ok(None)` when off, or when the default
/// address is taken (logged).
pub async fn start(
    broker: &Arc<Broker>,
    objects: Arc<dyn ObjectStore>,
    meta: Arc<dyn MetaStore>,
    object_store_url: &str,
    shutdown: watch::Receiver<bool>,
) -> Result<Option<(SocketAddr, JoinHandle<()>)>, BindError> {
    let config = broker.config.iceberg_catalog.clone();
    let (addr, explicit) = match config.listen {
        HttpListen::Off => return Ok(None),
        HttpListen::Default(addr) => (addr, false),
        HttpListen::Explicit(addr) => (addr, true),
    };
    let access = CatalogAccess {
        broker: Arc::downgrade(broker),
        login: RegistryAccess::new(Arc::downgrade(broker), config.basic_auth),
    };
    let catalog = Arc::new(Catalog {
        tables: tables::TableStore::new(objects, meta, tables::base_url(object_store_url)),
        namespace: config.namespace.clone(),
        access: Arc::new(access) as Arc<dyn Access>,
    });
    let server = match Server::bind("iceberg_catalog_listen", addr, rest::router(catalog), None)
        .await
    {
        Ok(server) => server,
        Err(error) if !explicit => {
            tracing::warn!(%error, "no iceberg catalog: its default address is taken; set iceberg_catalog_listen");
            return Ok(None);
        }
        Err(error) => return Err(error),
    };
    let bound = server.local_addr().unwrap_or(addr);
    tracing::info!(addr = %bound, namespace = %config.namespace, "iceberg rest catalog listening");
    Ok(Some((bound, tokio::spawn(server.run(shutdown)))))
}
