//! The shared state every request handler sees.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::config::{Config, Endpoint};
use crate::security::SecurityProtocol;

/// This broker as clients see it.
#[derive(Debug, Clone)]
pub struct Node {
    pub broker_id: i32,
    /// In the order configured; never empty.
    pub listeners: Vec<NodeListener>,
    pub rack: Option<String>,
}

/// One bound listener.
#[derive(Debug, Clone)]
pub struct NodeListener {
    pub name: String,
    pub protocol: SecurityProtocol,
    pub local_addr: SocketAddr,
    pub advertised: Endpoint,
}

pub struct Broker {
    pub config: Config,
    pub node: Node,
    pub cluster_id: String,
    pub catalog: Arc<Catalog>,
    pub storage: Arc<storage::Storage>,
    /// Incremental fetch sessions (KIP-227) of every connection.
    pub fetch_sessions: crate::fetch_session::FetchSessions,
    /// The classic consumer group coordinator and committed offsets.
    pub groups: Arc<crate::groups::GroupCoordinator>,
    /// Producer ids and per-partition idempotence state.
    pub producers: crate::producers::Producers,
    /// The live brokers, for partition leaders and group coordinators.
    pub membership: Arc<crate::cluster::Membership>,
    /// What each request may do (`--authorizer`).
    pub authorizer: crate::security::authorizer::Authorizer,
    /// SCRAM credentials of the cluster (AlterUserScramCredentials, SASL logins).
    pub scram: Arc<crate::security::scram::ScramCredentials>,
    /// Shared by the SASL state of every connection on a SASL listener.
    pub sasl: Arc<crate::security::sasl::SaslAuthenticator>,
    /// Client quotas (AlterClientQuotas) and their enforcement.
    pub quotas: crate::quotas::Quotas,
    /// Transaction coordinator state, markers and the last stable offsets.
    pub transactions: crate::transactions::Transactions,
    /// The schema registry (its listener and produce-time validation read it).
    pub schema_registry: Arc<schema_registry::Registry>,
}
