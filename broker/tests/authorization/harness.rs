//! A broker with the ACL authorizer, requests sent as a chosen principal, and ACLs made by the
//! super user.

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, RequestHeader, RequestKind, ResponseKind,
};
use protocol::codec::Request;

use std::sync::Arc;

use crate::common::{s, TestBroker};
use broker::context::Broker;
use broker::security::{Principal, Session};

pub const ADMIN: &str = "admin";
pub const ALICE: &str = "alice";

pub const TOPIC: i8 = 2;
pub const GROUP: i8 = 3;
pub const CLUSTER: i8 = 4;
pub const TRANSACTIONAL_ID: i8 = 5;
pub const LITERAL: i8 = 3;
pub const PREFIXED: i8 = 4;

/// Kafka's operation codes.
pub mod op {
    pub const READ: i8 = 3;
    pub const WRITE: i8 = 4;
    pub const CREATE: i8 = 5;
    pub const DELETE: i8 = 6;
    pub const ALTER: i8 = 7;
    pub const DESCRIBE: i8 = 8;
    pub const DESCRIBE_CONFIGS: i8 = 10;
    pub const ALTER_CONFIGS: i8 = 11;
    pub const IDEMPOTENT_WRITE: i8 = 12;
}

const ALLOW: i8 = 3;
const DENY: i8 = 2;

pub struct Authorized {
    pub broker: TestBroker,
}

impl Authorized {
    /// `--authorizer acl --super-users User:admin`, no ACL means deny.
    pub async fn start() -> Authorized {
        Authorized::start_with(&[]).await
    }

    pub async fn start_with(extra_args: &[&str]) -> Authorized {
        let mut args = vec![
            "--authorizer",
            "acl",
            "--super-users",
            "User:admin",
            "--compaction",
            "false",
            "--group-initial-rebalance-delay-ms",
            "0",
        ];
        args.extend_from_slice(extra_args);
        Authorized {
            broker: TestBroker::start(&args).await,
        }
    }

    /// Serves `body` as if `user` had sent it on a connection from 127.0.0.1.
    pub async fn call(
        &self,
        user: &str,
        api: ApiKey,
        version: i16,
        body: impl Into<RequestKind>,
    ) -> ResponseKind {
        call(&self.broker.running.broker, user, api, version, body).await
    }

    pub async fn allow(
        &self,
        user: &str,
        resource_type: i8,
        name: &str,
        pattern: i8,
        operation: i8,
    ) {
        self.acl(user, resource_type, name, pattern, operation, ALLOW)
            .await;
    }

    pub async fn deny(
        &self,
        user: &str,
        resource_type: i8,
        name: &str,
        pattern: i8,
        operation: i8,
    ) {
        self.acl(user, resource_type, name, pattern, operation, DENY)
            .await;
    }

    async fn acl(
        &self,
        user: &str,
        resource_type: i8,
        name: &str,
        pattern: i8,
        operation: i8,
        permission: i8,
    ) {
        let creation = AclCreation::default()
            .with_resource_type(resource_type)
            .with_resource_name(s(name))
            .with_resource_pattern_type(pattern)
            .with_principal(s(&format!("User:{user}")))
            .with_host(s("*"))
            .with_operation(operation)
            .with_permission_type(permission);
        let request = CreateAclsRequest::default().with_creations(vec![creation]);
        let response = crate::expect_kind!(
            self.call(ADMIN, ApiKey::CreateAcls, 3, request).await,
            CreateAcls
        );
        assert_eq!(response.results[0].error_code, 0, "{response:?}");
    }

    /// Creates a topic as the super user.
    pub async fn topic(&self, name: &str, partitions: i32) {
        let request = kafka_protocol::messages::CreateTopicsRequest::default()
            .with_timeout_ms(5000)
            .with_topics(vec![
                kafka_protocol::messages::create_topics_request::CreatableTopic::default()
                    .with_name(crate::common::name(name))
                    .with_num_partitions(partitions)
                    .with_replication_factor(-1),
            ]);
        let response = crate::expect_kind!(
            self.call(ADMIN, ApiKey::CreateTopics, 7, request).await,
            CreateTopics
        );
        assert_eq!(response.topics[0].error_code, 0, "{response:?}");
    }
}

/// Serves `body` on `broker` as if `user` had sent it on a connection from 127.0.0.1.
pub async fn call(
    broker: &Arc<Broker>,
    user: &str,
    api: ApiKey,
    version: i16,
    body: impl Into<RequestKind>,
) -> ResponseKind {
    let mut session = Session::plaintext("PLAINTEXT", "127.0.0.1:40000".parse().unwrap());
    session.principal = Principal::user(user);
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(s("authorization-tests")));
    let request = Request {
        api_key: api,
        header,
        body: body.into(),
    };
    broker::handlers::handle(broker, request, None, &session)
        .await
        .unwrap()
        .expect("an answer")
}

pub fn code(error: kafka_protocol::ResponseError) -> i16 {
    error.code()
}
