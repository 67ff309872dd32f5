//! Who may read the HTTP listener's `/metrics` (`http_basic_auth`): a broker user, by the
//! password a SASL/PLAIN login would check, allowed DESCRIBE on the cluster by the authorizer
//! (as DescribeCluster asks). A wrong password is answered after
//! `connection_failed_authentication_delay_ms`, as a failed SASL login is. See
//! `docs/security.md`, "The HTTP listener".

use std::net::SocketAddr;
use std::sync::Weak;
use std::time::Duration;

use futures::future::BoxFuture;
use telemetry::http::{Access, BasicCredentials, MetricsAccess};

use super::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use super::Principal;
use crate::context::Broker;

/// What `/metrics` needs of an authenticated user.
pub const METRICS_OPERATION: (AclOperation, ResourceType, &str) =
    (AclOperation::Describe, ResourceType::Cluster, CLUSTER_NAME);

/// [`MetricsAccess`] by the broker's users and authorizer.
pub struct BrokerUsers {
    /// Weak: the HTTP listener must not keep a stopped broker alive.
    broker: Weak<Broker>,
}

impl BrokerUsers {
    pub fn new(broker: Weak<Broker>) -> BrokerUsers {
        BrokerUsers { broker }
    }

    async fn decide(&self, credentials: Option<BasicCredentials>, peer: SocketAddr) -> Access {
        let (Some(broker), Some(credentials)) = (self.broker.upgrade(), credentials) else {
            return Access::Unauthenticated;
        };
        let user = credentials.user.as_str();
        if !broker
            .sasl
            .verify_password(user, &credentials.password)
            .await
        {
            tracing::info!(%peer, user, "http basic authentication failed");
            let delay_ms = broker.sasl.config().failed_authentication_delay_ms;
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            return Access::Unauthenticated;
        }
        let principal = Principal::user(user);
        if broker
            .authorizer
            .allows_http(&principal, peer.ip(), "/metrics", METRICS_OPERATION)
        {
            Access::Granted
        } else {
            Access::Forbidden
        }
    }
}

impl MetricsAccess for BrokerUsers {
    fn check(
        &self,
        credentials: Option<BasicCredentials>,
        peer: SocketAddr,
    ) -> BoxFuture<'_, Access> {
        Box::pin(self.decide(credentials, peer))
    }
}
