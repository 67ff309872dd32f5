//! Who may call the schema registry: a broker user by the password a SASL/PLAIN login would
//! check (`schema_registry_basic_auth`), then the broker's authorizer, with Confluent's
//! registry operations mapped onto Kafka ACLs as Confluent's topic ACL authorizer maps them
//! (a subject `<topic>-key`/`<topic>-value` is its topic). A wrong password is answered after
//! `connection_failed_authentication_delay_ms`, as a failed SASL login is.

use std::net::SocketAddr;
use std::sync::Weak;
use std::time::Duration;

use futures::future::BoxFuture;
use schema_registry::api::{Access, Caller, Operation};
use telemetry::http::BasicCredentials;

use crate::context::Broker;
use crate::security::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::security::Principal;

/// The topic a subject's ACLs are those of: TopicNameStrategy's subjects name their topic;
/// any other subject is matched as a topic of its own name (grant it with a prefixed ACL).
pub fn topic_of(subject: &str) -> &str {
    subject
        .strip_suffix("-value")
        .or_else(|| subject.strip_suffix("-key"))
        .unwrap_or(subject)
}

/// The Kafka ACL a registry operation needs (`docs/schema-registry.md` has the table).
pub fn acl_of(operation: Operation, subject: Option<&str>) -> (AclOperation, ResourceType, &str) {
    let topic = |op| match subject {
        Some(subject) => (op, ResourceType::Topic, topic_of(subject)),
        // Reading a schema no subject holds any more: anyone who may describe the cluster.
        None => (AclOperation::Describe, ResourceType::Cluster, CLUSTER_NAME),
    };
    match operation {
        Operation::SubjectRead => topic(AclOperation::Read),
        Operation::SubjectWrite => topic(AclOperation::Write),
        Operation::SubjectDelete => topic(AclOperation::Delete),
        Operation::SubjectCompatibilityRead => topic(AclOperation::DescribeConfigs),
        Operation::SubjectCompatibilityWrite => topic(AclOperation::AlterConfigs),
        Operation::GlobalCompatibilityRead => (
            AclOperation::DescribeConfigs,
            ResourceType::Cluster,
            CLUSTER_NAME,
        ),
        Operation::GlobalCompatibilityWrite => {
            (AclOperation::Alter, ResourceType::Cluster, CLUSTER_NAME)
        }
    }
}

/// [`Access`] by the broker's users and authorizer.
pub struct RegistryAccess {
    /// Weak: the registry listener must not keep a stopped broker alive.
    broker: Weak<Broker>,
    basic_auth: bool,
}

impl RegistryAccess {
    pub fn new(broker: Weak<Broker>, basic_auth: bool) -> RegistryAccess {
        RegistryAccess { broker, basic_auth }
    }

    /// The caller of these credentials (the Iceberg catalog logs in the same way).
    pub(crate) async fn login(
        &self,
        credentials: Option<BasicCredentials>,
        peer: SocketAddr,
    ) -> Option<Caller> {
        if !self.basic_auth {
            return Some(Caller { user: None, peer });
        }
        let broker = self.broker.upgrade()?;
        let credentials = credentials?;
        let user = credentials.user.as_str();
        if broker
            .sasl
            .verify_password(user, &credentials.password)
            .await
        {
            return Some(Caller {
                user: Some(credentials.user.clone()),
                peer,
            });
        }
        tracing::info!(%peer, user, "schema registry basic authentication failed");
        let delay_ms = broker.sasl.config().failed_authentication_delay_ms;
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        None
    }
}

impl Access for RegistryAccess {
    fn authenticate(
        &self,
        credentials: Option<BasicCredentials>,
        peer: SocketAddr,
    ) -> BoxFuture<'_, Option<Caller>> {
        Box::pin(self.login(credentials, peer))
    }

    fn allows(&self, caller: &Caller, operation: Operation, subject: Option<&str>) -> bool {
        let Some(broker) = self.broker.upgrade() else {
            return false;
        };
        let principal = match &caller.user {
            Some(user) => Principal::user(user),
            None => Principal::anonymous(),
        };
        broker.authorizer.allows_http(
            &principal,
            caller.peer.ip(),
            operation.name(),
            acl_of(operation, subject),
        )
    }

    fn authorizes(&self) -> bool {
        self.broker
            .upgrade()
            .is_some_and(|broker| broker.authorizer.enabled())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_name_strategy_subjects_are_their_topics_and_others_their_own_name() {
        assert_eq!(topic_of("orders-value"), "orders");
        assert_eq!(topic_of("orders-key"), "orders");
        assert_eq!(topic_of("com.example.Order"), "com.example.Order");
        assert_eq!(
            acl_of(Operation::SubjectWrite, Some("orders-value")),
            (AclOperation::Write, ResourceType::Topic, "orders")
        );
        assert_eq!(
            acl_of(Operation::GlobalCompatibilityWrite, None).0,
            AclOperation::Alter
        );
    }
}
