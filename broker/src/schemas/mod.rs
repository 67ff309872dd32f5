//! The schema registry in the broker: its listener (`schema_registry_listen`), who may call it
//! ([`access`]) and the produce-time validation of topics that ask for it ([`validation`]).
//! The registry itself is the `schema-registry` crate.

pub mod access;
pub mod settings;
pub mod validation;

use std::net::SocketAddr;
use std::sync::Arc;

use schema_registry::api::{self, server::Server, Access, Api};
use storage::config::HttpListen;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::context::Broker;

/// Where and how the registry listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryListenConfig {
    pub listen: HttpListen,
    pub tls: bool,
    pub basic_auth: bool,
}

impl RegistryListenConfig {
    pub fn from_settings(r: &storage::settings::Resolved) -> RegistryListenConfig {
        RegistryListenConfig {
            listen: storage::config::listen_setting(r, &settings::SCHEMA_REGISTRY_LISTEN),
            tls: r.get(&settings::SCHEMA_REGISTRY_TLS),
            basic_auth: r.get(&settings::SCHEMA_REGISTRY_BASIC_AUTH),
        }
    }
}

/// Binds and serves the registry until `shutdown`; `Ok(None)` when off, or when the default
/// address is taken (logged).
pub async fn start(
    broker: &Arc<Broker>,
    tls: Option<Arc<dyn telemetry::http::TlsSource>>,
    shutdown: watch::Receiver<bool>,
) -> Result<Option<(SocketAddr, JoinHandle<()>)>, api::server::BindError> {
    let config = broker.config.schema_registry;
    let (addr, explicit) = match config.listen {
        HttpListen::Off => return Ok(None),
        HttpListen::Default(addr) => (addr, false),
        HttpListen::Explicit(addr) => (addr, true),
    };
    if config.basic_auth && tls.is_none() {
        tracing::warn!("schema_registry_basic_auth without schema_registry_tls: clients send their passwords in clear");
    }
    let access = access::RegistryAccess::new(Arc::downgrade(broker), config.basic_auth);
    let api = Arc::new(Api {
        registry: broker.schema_registry.clone(),
        access: Arc::new(access) as Arc<dyn Access>,
    });
    let scheme = if tls.is_some() { "https" } else { "http" };
    let server = match Server::bind("schema_registry_listen", addr, api::router(api), tls).await {
        Ok(server) => server,
        Err(error) if !explicit => {
            tracing::warn!(%error, "no schema registry: its default address is taken; set schema_registry_listen");
            return Ok(None);
        }
        Err(error) => return Err(error),
    };
    let bound = server.local_addr().unwrap_or(addr);
    tracing::info!(addr = %bound, scheme, basic_auth = config.basic_auth, "schema registry listening");
    schema_registry::metrics::register();
    Ok(Some((bound, tokio::spawn(server.run(shutdown)))))
}
