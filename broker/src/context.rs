//! The shared state every request handler sees.

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::config::{Config, Endpoint};

/// This broker as clients see it.
#[derive(Debug, Clone)]
pub struct Node {
    pub broker_id: i32,
    pub endpoint: Endpoint,
    pub rack: Option<String>,
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
    /// SCRAM credentials of the cluster (AlterUserScramCredentials, SASL logins).
    pub scram: Arc<crate::security::scram::ScramCredentials>,
    /// Shared by the SASL state of every connection on a SASL listener.
    pub sasl: Arc<crate::security::sasl::SaslAuthenticator>,
}
