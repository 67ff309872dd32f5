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
use crate::context::{Broker, Node};
use crate::server;

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
    #[error("cannot load consumer groups: {0}")]
    Groups(#[from] crate::groups::store::StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A started broker.
pub struct Running {
    pub local_addr: SocketAddr,
    pub broker: Arc<Broker>,
    shutdown: watch::Sender<bool>,
    server: JoinHandle<()>,
    /// The in-process compactor, when `--compaction` is on.
    compaction: Option<JoinHandle<()>>,
    index_meta: Arc<dyn MetaStore>,
    coordination_meta: Arc<dyn MetaStore>,
    objects: Arc<storage::objects::CountingObjectStore>,
}

pub async fn start(config: Config) -> Result<Running, StartError> {
    let object_url = config.object_store_url.clone();
    let compactor_config = config.compaction.then(|| config.compactor_config());
    let objects =
        storage::objects::open(&object_url).map_err(|e| StartError::ObjectStore(e.to_string()))?;
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
    // Loaded before the listener opens, so that no login is decided on a partial set.
    let scram = crate::security::scram::ScramCredentials::open(coordination_meta.clone()).await?;
    let sasl = crate::security::sasl::SaslAuthenticator::open(
        config.sasl.clone(),
        scram.clone(),
        storage::clock::system(),
    )
    .await?;
    let storage =
        storage::Storage::open(config.storage_config(), objects.clone(), index_meta.clone());
    // Long polls here wake on other brokers' appends.
    storage.spawn_bounds_poller();
    let groups = crate::groups::GroupCoordinator::open(
        coordination_meta.clone(),
        crate::groups::GroupConfig::from_config(&config),
        Arc::new(crate::groups::clock::SystemClock),
    )
    .await?;

    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartError::Bind {
            addr: config.listen,
            source,
        })?;
    let local_addr = listener.local_addr().map_err(|source| StartError::Bind {
        addr: config.listen,
        source,
    })?;
    let endpoint = match &config.advertised_listener {
        Some(advertised) => Endpoint::parse(advertised)?,
        None => {
            if local_addr.ip().is_unspecified() {
                tracing::warn!(%local_addr, "listening on all interfaces without --advertised-listener; advertising 127.0.0.1");
            }
            let host = if local_addr.ip().is_unspecified() {
                "127.0.0.1".to_string()
            } else {
                local_addr.ip().to_string()
            };
            Endpoint {
                host,
                port: i32::from(local_addr.port()),
            }
        }
    };
    let node = Node {
        broker_id: config.broker_id,
        endpoint,
        rack: config.rack.clone(),
    };
    let me = crate::cluster::Member {
        broker_id: node.broker_id,
        host: node.endpoint.host.clone(),
        port: node.endpoint.port,
        rack: node.rack.clone(),
    };
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
    tracing::info!(%local_addr, advertised = ?node.endpoint, broker_id = node.broker_id, %cluster_id, objects = %object_url, metastore = %config.metastore, "broker listening");
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
        scram,
        sasl,
    });
    let (shutdown, shutdown_rx) = watch::channel(false);
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
    let server = tokio::spawn(server::run(listener, broker.clone(), shutdown_rx));
    Ok(Running {
        local_addr,
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
