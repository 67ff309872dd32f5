//! The HTTP listener guarded (`http_basic_auth`, `http_tls`): `/metrics` answers a broker user
//! allowed DESCRIBE on the cluster, challenges strangers and wrong passwords, refuses users the
//! ACLs do not allow; `/healthz` and `/readyz` stay open; over TLS, plain HTTP gets nothing.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;

use base64::Engine;
use common::pki::{self, Ca, Files};
use common::{s, TestBroker};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::{ApiKey, CreateAclsRequest};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

const USERS: &str = "admin:admin-secret\nalice:alice-secret\nbob:bob-secret\n";

struct Setup {
    broker: TestBroker,
    _users: tempfile::TempDir,
    tls: Option<(Ca, Files)>,
}

impl Setup {
    /// A broker with the ACL authorizer (`admin` and the PLAINTEXT listener's anonymous
    /// clients super users), the users above, and `/metrics` behind Basic authentication.
    async fn start(tls: bool) -> Setup {
        let users = tempfile::tempdir().unwrap();
        let file = users.path().join("users");
        std::fs::write(&file, USERS).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut args: Vec<String> = [
            "--http-listen",
            "127.0.0.1:0",
            "--http-basic-auth",
            "true",
            "--sasl-plain-users-file",
            file.to_str().unwrap(),
            "--authorizer",
            "acl",
            "--super-users",
            "User:admin;User:ANONYMOUS",
            "--connection-failed-authentication-delay-ms",
            "0",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        let tls = tls.then(|| {
            let ca = Ca::new("test ca");
            let files = Files::write(&ca, &ca.server("broker"));
            args.extend(files.args());
            args.extend(["--http-tls".to_string(), "true".to_string()]);
            (ca, files)
        });
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let broker = TestBroker::start(&args).await;
        Setup {
            broker,
            _users: users,
            tls,
        }
    }

    fn http(&self) -> SocketAddr {
        self.broker.running.http_addr.unwrap()
    }

    /// The whole answer to `GET path` as `user:password` (none if `None`).
    async fn get(&self, path: &str, user: Option<&str>) -> String {
        let tcp = TcpStream::connect(self.http()).await.unwrap();
        match &self.tls {
            None => get_on(tcp, path, user).await,
            Some((ca, _)) => {
                let config = pki::client_config(ca, None, None);
                let name =
                    tokio_rustls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
                let stream = tokio_rustls::TlsConnector::from(config)
                    .connect(name, tcp)
                    .await
                    .unwrap();
                get_on(stream, path, user).await
            }
        }
    }

    /// Allows `principal` DESCRIBE on the cluster.
    async fn allow_cluster_describe(&self, principal: &str) {
        // Resource type 4 = CLUSTER, pattern 3 = LITERAL, operation 8 = DESCRIBE, 3 = ALLOW.
        let creation = AclCreation::default()
            .with_resource_type(4)
            .with_resource_name(s("kafka-cluster"))
            .with_resource_pattern_type(3)
            .with_principal(s(principal))
            .with_host(s("*"))
            .with_operation(8)
            .with_permission_type(3);
        let request = CreateAclsRequest::default().with_creations(vec![creation]);
        let mut client = self.broker.client().await;
        let created = client.call(ApiKey::CreateAcls, 3, request).await;
        match created {
            kafka_protocol::messages::ResponseKind::CreateAcls(created) => {
                assert_eq!(created.results[0].error_code, 0)
            }
            other => panic!("{other:?}"),
        }
    }
}

async fn get_on<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    path: &str,
    user: Option<&str>,
) -> String {
    let authorization = user
        .map(|user| {
            let token = base64::engine::general_purpose::STANDARD.encode(user);
            format!("Authorization: Basic {token}\r\n")
        })
        .unwrap_or_default();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n{authorization}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    // A TLS peer may close without close_notify once it answered; what arrived is the answer.
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

fn status(answer: &str) -> &str {
    answer.get(9..12).unwrap_or(answer)
}

#[tokio::test]
async fn metrics_answer_allowed_users_challenge_strangers_and_refuse_the_others() {
    let setup = Setup::start(false).await;
    let anonymous = setup.get("/metrics", None).await;
    assert_eq!(status(&anonymous), "401", "{anonymous}");
    assert!(
        anonymous.to_lowercase().contains("www-authenticate: basic"),
        "{anonymous}"
    );
    assert!(
        !anonymous.contains("kafka_"),
        "nothing is told: {anonymous}"
    );
    let wrong = setup.get("/metrics", Some("admin:guess")).await;
    assert_eq!(status(&wrong), "401", "{wrong}");
    let unknown = setup.get("/metrics", Some("mallory:x")).await;
    assert_eq!(status(&unknown), "401", "{unknown}");
    let alice = setup.get("/metrics", Some("alice:alice-secret")).await;
    assert_eq!(status(&alice), "403", "no acl allows alice: {alice}");
    let admin = setup.get("/metrics", Some("admin:admin-secret")).await;
    assert_eq!(status(&admin), "200", "{admin}");
    assert!(admin.trim_end().ends_with("# EOF"), "{admin}");

    setup.allow_cluster_describe("User:bob").await;
    let bob = setup.get("/metrics", Some("bob:bob-secret")).await;
    assert_eq!(status(&bob), "200", "DESCRIBE on the cluster: {bob}");
    assert_eq!(status(&setup.get("/healthz", None).await), "200");
    assert_eq!(status(&setup.get("/readyz", None).await), "200");
}

#[tokio::test]
async fn over_tls_metrics_and_health_are_served_and_plain_http_gets_nothing() {
    let setup = Setup::start(true).await;
    assert_eq!(status(&setup.get("/healthz", None).await), "200");
    let anonymous = setup.get("/metrics", None).await;
    assert_eq!(status(&anonymous), "401", "{anonymous}");
    let admin = setup.get("/metrics", Some("admin:admin-secret")).await;
    assert_eq!(status(&admin), "200", "{admin}");
    assert!(admin.trim_end().ends_with("# EOF"), "{admin}");

    let plain = get_on(
        TcpStream::connect(setup.http()).await.unwrap(),
        "/healthz",
        None,
    )
    .await;
    assert!(!plain.contains("HTTP/1.1 200"), "{plain}");
}
