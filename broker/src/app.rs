//! Starting and stopping a whole broker: stores, catalog, listener. Used by `main` and by
//! in-process tests.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use metastore::{
    open_meta_store, Comparison, Expect, MetaError, MetaOptions, MetaStore, PutOptions,
};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::catalog::{Catalog, CatalogError};
use crate::config::{Config, ConfigError, Endpoint};
use crate::context::{Broker, Node, NodeListener};
use crate::listener::ListenerConfig;
use crate::server::{self, Bound};
use crate::tls::ServerTls;

/// Incremental fetch sessions kept at once; the least recently used is evicted past it.
const FETCH_SESSIONS_MAX: usize = 1000;

const CLUSTER_ID_KEY: &str = "cluster/id";

/// How often the live-broker view is rescanned besides notifications.
const MEMBERSHIP_REFRESH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot open object store: {0}")]
    ObjectStore(String),
    #[error("cannot open metadata store: {0}")]
    MetaStore(#[from] MetaError),
    #[error("cannot load topics: {0}")]
    Catalog(#[from] CatalogError),
    #[error("cannot load scram credentials: {0}")]
    Scram(#[from] crate::security::scram::ScramStoreError),
    #[error(transparent)]
    Sasl(#[from] crate::security::sasl::SaslSetupError),
    #[error("cannot load client quotas: {0}")]
    Quotas(#[from] crate::quotas::QuotaStoreError),
    #[error("cannot load consumer groups: {0}")]
    Groups(#[from] crate::groups::store::StoreError),
    #[error(transparent)]
    HttpListener(#[from] telemetry::http::router::BindError),
    #[error("listener {listener}: cannot listen on {addr}: {source}")]
    Bind {
        listener: String,
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot set up TLS: {0}")]
    Tls(#[from] crate::tls::files::TlsError),
    #[error("loading the TLS files stopped: {0}")]
    TlsTask(tokio::task::JoinError),
    #[error(transparent)]
    Http(#[from] telemetry::http::HttpError),
}

/// A started broker.
pub struct Running {
    /// The first listener's address.
    pub local_addr: SocketAddr,
    pub listeners: Vec<NodeListener>,
    pub broker: Arc<Broker>,
    /// The metrics and health listener, when it is bound.
    pub http_addr: Option<SocketAddr>,
    http: Option<JoinHandle<()>>,
    /// The schema registry's listener, when it is bound.
    pub schema_registry_addr: Option<SocketAddr>,
    schema_registry: Option<JoinHandle<()>>,
    pub iceberg_catalog_addr: Option<SocketAddr>,
    iceberg_catalog: Option<JoinHandle<()>>,
    tls_reload: Option<JoinHandle<()>>,
    shutdown: watch::Sender<bool>,
    server: JoinHandle<()>,
    /// The in-process compactor, when `--compaction` is on.
    compaction: Option<JoinHandle<()>>,
    index_meta: Arc<dyn MetaStore>,
    coordination_meta: Arc<dyn MetaStore>,
    objects: Arc<storage::objects::CountingObjectStore>,
}

pub async fn start(config: Config) -> Result<Running, StartError> {
    // First, so that a bad certificate or key stops the broker before it touches any store.
    let tls = load_tls(&config).await?;
    let object_url = config.object_store_url.clone();
    let compactor_config = config.compaction.then(|| config.compactor_config());
    let objects =
        storage::objects::open(&object_url).map_err(|e| StartError::ObjectStore(e.to_string()))?;
    let objects = storage::objects::with_latency(objects, config.object_latency);
    crate::metrics::register();
    let objects: Arc<dyn object_store::ObjectStore> = Arc::new(
        storage::objects::Intercepted::wrap(objects, storage::objects::Meter),
    );
    let objects = Arc::new(storage::objects::CountingObjectStore::new(objects));
    // Two handles, as in the seed system: the index is high-volume and needs no notifications,
    // coordination (topics, groups) does.
    let index_meta = open_meta_store(
        &config.metastore,
        &config.data_dir,
        MetaOptions {
            notifications: false,
            ..MetaOptions::default()
        },
    )
    .await?;
    let coordination_meta =
        open_meta_store(&config.metastore, &config.data_dir, MetaOptions::default()).await?;
    let cluster_id = cluster_id(coordination_meta.as_ref()).await?;
    let catalog = Catalog::open(coordination_meta.clone(), config.topic_defaults().clone()).await?;
    // Loaded before the listener opens: no request is ever decided on a partial set of ACLs.
    let authorizer = crate::security::authorizer::Authorizer::open(
        &config.authorizer,
        coordination_meta.clone(),
    )
    .await?;
    // Loaded before the listener opens, so that no login is decided on a partial set.
    let scram = crate::security::scram::ScramCredentials::open(coordination_meta.clone()).await?;
    // Loaded before the listener opens, as credentials are: no request escapes a quota set.
    let quotas = crate::quotas::QuotaStore::open(coordination_meta.clone()).await?;
    let quota_window = config.quota_window;
    let transactions = config.transactions;
    let sasl = crate::security::sasl::SaslAuthenticator::open(
        config.sasl.clone(),
        scram.clone(),
        storage::clock::system(),
    )
    .await?;
    let mut storage_config = config.storage_config();
    // Compacted files of typed tables keep an Avro value once, in its typed columns.
    storage_config.value_restorer = Some(Arc::new(tables::typed::restore::Restorer::new()));
    let storage = storage::Storage::open(storage_config, objects.clone(), index_meta.clone());
    // Long polls here wake on other brokers' appends, told by the coordination handle's
    // notifications (the index handle has none: its own traffic needs none).
    storage.spawn_bounds_follower(coordination_meta.clone());
    let groups = crate::groups::GroupCoordinator::open(
        coordination_meta.clone(),
        crate::groups::GroupConfig::from_config(&config),
        Arc::new(crate::groups::clock::SystemClock),
    )
    .await?;

    let bound = bind(&config.listeners, tls.as_ref()).await?;
    let node = Node {
        broker_id: config.broker_id,
        listeners: bound.iter().map(|b| b.listener.node.clone()).collect(),
        rack: config.rack.clone(),
    };
    let me = member(&node);
    let membership = crate::cluster::Membership::start(
        coordination_meta.clone(),
        me,
        MEMBERSHIP_REFRESH_INTERVAL,
    )
    .await?;
    // A group is this broker's while the placement names it coordinator, as it says now.
    let view = membership.clone();
    let my_id = node.broker_id;
    let owns: crate::groups::expiry::Ownership = Arc::new(move |group_id: &str| {
        view.placement().group_coordinator(group_id).broker_id == my_id
    });
    // Timers run for, and offsets expire on, the groups this broker coordinates only.
    groups.set_ownership(owns.clone());
    groups.start_offset_expiry(owns);
    let producers =
        crate::producers::Producers::new(coordination_meta.clone(), membership.generation());
    let (shutdown, shutdown_rx) = watch::channel(false);
    // Before the line below, which scripts wait for: from then on SIGHUP reloads.
    let http_tls = tls
        .as_ref()
        .filter(|_| config.http_tls)
        .map(ServerTls::http_source);
    let registry_tls = tls
        .as_ref()
        .filter(|_| config.schema_registry.tls)
        .map(ServerTls::http_source);
    let tls_reload = tls.map(|tls| crate::tls::reload::spawn(tls, shutdown_rx.clone()));
    let local_addr = node.listeners[0].local_addr;
    let advertised = &node.listeners[0].advertised;
    tracing::info!(%local_addr, %advertised, broker_id = node.broker_id, %cluster_id, objects = %object_url, metastore = %config.metastore, "broker listening");
    let listeners = node.listeners.clone();
    let txn_generation = membership.generation();
    let broker = Arc::new(Broker {
        config,
        node,
        cluster_id,
        catalog,
        storage,
        fetch_sessions: crate::fetch_session::FetchSessions::new(FETCH_SESSIONS_MAX),
        groups,
        membership,
        producers,
        authorizer,
        scram,
        sasl,
        quotas: crate::quotas::Quotas::new(quotas, quota_window),
        transactions: crate::transactions::Transactions::new(
            coordination_meta.clone(),
            transactions,
            txn_generation,
        ),
        schema_registry: Arc::new(schema_registry::Registry::new(coordination_meta.clone())),
    });
    crate::transactions::sweep::spawn(&broker, shutdown_rx.clone());
    let compaction = compactor_config.map(|compactor_config| {
        let compactor = compactor::Compactor::new(
            objects.clone(),
            index_meta.clone(),
            coordination_meta.clone(),
            compactor_config,
        );
        let mut stop = shutdown_rx.clone();
        tokio::spawn(async move {
            compactor
                .run(async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await
        })
    });
    crate::metrics::register_broker_gauges(&broker);
    crate::metrics::spawn_group_sampler(Arc::downgrade(&broker), shutdown_rx.clone());
    let lag = broker.config.consumer_lag;
    crate::metrics::spawn_lag_sampler(Arc::downgrade(&broker), lag, shutdown_rx.clone());
    let readiness =
        crate::health::readiness(coordination_meta.clone(), objects.clone(), local_addr);
    let listen = broker.config.http_listen;
    if broker.config.http_basic_auth && !broker.config.http_tls {
        tracing::warn!("http_basic_auth without http_tls: scrapers send their passwords in clear");
    }
    let security = telemetry::http::HttpSecurity {
        tls: http_tls,
        metrics_access: broker.config.http_basic_auth.then(|| {
            let users = crate::security::http_access::BrokerUsers::new(Arc::downgrade(&broker));
            Arc::new(users) as Arc<dyn telemetry::http::MetricsAccess>
        }),
    };
    let http = telemetry::http::start(listen, readiness, security, shutdown_rx.clone()).await?;
    let (http_addr, http) = http.unzip();
    let registry = crate::schemas::start(&broker, registry_tls, shutdown_rx.clone()).await?;
    let (schema_registry_addr, schema_registry) = registry.unzip();
    let catalog = crate::tables::start(
        &broker,
        objects.clone(),
        coordination_meta.clone(),
        &object_url,
        shutdown_rx.clone(),
    )
    .await?;
    let (iceberg_catalog_addr, iceberg_catalog) = catalog.unzip();
    let server = tokio::spawn(server::run(bound, broker.clone(), shutdown_rx));
    Ok(Running {
        http_addr,
        http,
        schema_registry_addr,
        schema_registry,
        iceberg_catalog_addr,
        iceberg_catalog,
        local_addr,
        listeners,
        tls_reload,
        broker,
        shutdown,
        server,
        compaction,
        index_meta,
        coordination_meta,
        objects,
    })
}

impl Running {
    /// The bound address of listener `name`.
    pub fn listener_addr(&self, name: &str) -> Option<SocketAddr> {
        self.listeners
            .iter()
            .find(|l| l.name == name)
            .map(|l| l.local_addr)
    }

    /// Stops accepting, finishes in-flight requests, flushes storage, closes the stores.
    pub async fn shutdown(self) {
        // Leave the cluster first, so that other brokers stop naming this one at once.
        self.broker.membership.deregister().await;
        let _ = self.shutdown.send(true);
        // Pending JoinGroup/SyncGroup answers would otherwise hold the server open.
        self.broker.groups.shutdown().await;
        if let Err(error) = self.server.await {
            tracing::error!(%error, "server task failed");
        }
        if let Some(reload) = self.tls_reload {
            let _ = reload.await;
        }
        for task in [self.http, self.schema_registry, self.iceberg_catalog]
            .into_iter()
            .flatten()
        {
            let _ = task.await;
        }
        if let Some(compaction) = self.compaction {
            if let Err(error) = compaction.await {
                tracing::error!(%error, "compaction task failed");
            }
        }
        self.broker.storage.shutdown().await;
        self.broker
            .producers
            .snapshot_all(&self.broker.storage)
            .await;
        crate::stats::log_object_totals(&self.objects);
        for meta in [&self.coordination_meta, &self.index_meta] {
            if let Err(error) = meta.close().await {
                tracing::warn!(%error, "closing metadata store failed");
            }
        }
        tracing::info!("broker stopped");
    }
}

/// Loads the TLS files when a listener needs them (file reads, off the async threads).
async fn load_tls(config: &Config) -> Result<Option<Arc<ServerTls>>, StartError> {
    let Some(tls) = config.tls.clone() else {
        return Ok(None);
    };
    let loaded = tokio::task::spawn_blocking(move || ServerTls::load(tls))
        .await
        .map_err(StartError::TlsTask)??;
    Ok(Some(loaded))
}

/// Binds every listener, in order, and works out what each advertises.
async fn bind(
    listeners: &[ListenerConfig],
    tls: Option<&Arc<ServerTls>>,
) -> Result<Vec<Bound>, StartError> {
    if listeners.is_empty() {
        // The settings always give one; the node and its membership record need one.
        return Err(StartError::Config(ConfigError::Invalid {
            key: crate::config::settings::LISTENERS.key.into(),
            reason: "no listener".into(),
        }));
    }
    let mut bound = Vec::with_capacity(listeners.len());
    for listener in listeners {
        // An empty host binds every interface, as in Kafka.
        let host = if listener.host.is_empty() {
            "0.0.0.0"
        } else {
            listener.host.as_str()
        };
        let failed = |source| StartError::Bind {
            listener: listener.name.clone(),
            addr: listener.url(),
            source,
        };
        let tcp = TcpListener::bind((host, listener.port))
            .await
            .map_err(failed)?;
        let local_addr = tcp.local_addr().map_err(failed)?;
        let advertised = listener
            .advertised
            .clone()
            .unwrap_or_else(|| advertised_default(&listener.name, local_addr));
        tracing::info!(listener = %listener.name, protocol = listener.protocol.name(), addr = %local_addr, %advertised, "listener bound");
        let node = NodeListener {
            name: listener.name.clone(),
            protocol: listener.protocol,
            local_addr,
            advertised,
        };
        let tls = match (listener.protocol.uses_tls(), tls) {
            (false, _) => None,
            (true, Some(tls)) => Some(tls.clone()),
            // The settings require the TLS files of a TLS listener; never serve it in clear.
            (true, None) => {
                return Err(StartError::Config(ConfigError::Invalid {
                    key: crate::tls::settings::SSL_CERT_FILE.key.into(),
                    reason: format!("required by the TLS listener {}", listener.name),
                }))
            }
        };
        bound.push(Bound {
            tcp,
            listener: server::Listener { node, tls },
        });
    }
    Ok(bound)
}

/// The bound address, or 127.0.0.1 for a listener on every interface (with a warning: remote
/// clients cannot use it).
fn advertised_default(name: &str, local_addr: SocketAddr) -> Endpoint {
    let host = if local_addr.ip().is_unspecified() {
        tracing::warn!(listener = name, %local_addr, "listening on all interfaces without an advertised address; advertising 127.0.0.1");
        "127.0.0.1".to_string()
    } else {
        local_addr.ip().to_string()
    };
    Endpoint {
        host,
        port: i32::from(local_addr.port()),
    }
}

/// This broker's membership record: every listener's advertised address, the first one's also
/// where brokers predating named listeners look for it.
fn member(node: &Node) -> crate::cluster::Member {
    let first = &node.listeners[0].advertised;
    crate::cluster::Member {
        broker_id: node.broker_id,
        host: first.host.clone(),
        port: first.port,
        rack: node.rack.clone(),
        listeners: node
            .listeners
            .iter()
            .map(|l| crate::cluster::AdvertisedListener {
                name: l.name.clone(),
                host: l.advertised.host.clone(),
                port: l.advertised.port,
            })
            .collect(),
    }
}

/// The cluster id, created by the first broker that starts on an empty store.
async fn cluster_id(meta: &dyn MetaStore) -> Result<String, MetaError> {
    if let Some(record) = meta.get(CLUSTER_ID_KEY, Comparison::Equal, None).await? {
        return Ok(String::from_utf8_lossy(&record.value).into_owned());
    }
    let candidate = uuid::Uuid::new_v4().simple().to_string();
    let options = PutOptions {
        expect: Expect::NotExists,
        ..Default::default()
    };
    match meta
        .put(CLUSTER_ID_KEY, Bytes::from(candidate.clone()), options)
        .await
    {
        Ok(_) => Ok(candidate),
        // Another broker won the race: use its id.
        Err(MetaError::UnexpectedVersion) => {
            match meta.get(CLUSTER_ID_KEY, Comparison::Equal, None).await? {
                Some(record) => Ok(String::from_utf8_lossy(&record.value).into_owned()),
                None => Err(MetaError::Unavailable("cluster id vanished".into())),
            }
        }
        Err(e) => Err(e),
    }
}
