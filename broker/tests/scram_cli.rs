//! `broker scram set|list|delete` on the real binary, then the credential as a started
//! broker describes it (DescribeUserScramCredentials).

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use common::{s, TestBroker};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::*;

fn scram(data_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_broker"))
        .arg("scram")
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "info")
        .env_remove("BROKER_CONFIG")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn password_file(dir: &Path, password: &str, mode: u32) -> String {
    let path = dir.join(format!("password-{mode:o}"));
    std::fs::write(&path, format!("{password}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_str().unwrap().to_string()
}

#[tokio::test]
async fn scram_set_writes_a_credential_the_broker_then_describes() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let secret = password_file(dir.path(), "alice-secret", 0o600);
    let set = scram(
        data.path(),
        &[
            "set",
            "--user",
            "alice",
            "--mechanism",
            "SCRAM-SHA-512",
            "--password-file",
            &secret,
            "--iterations",
            "8192",
        ],
    );
    assert!(set.status.success(), "{}", text(&set.stderr));
    let (stdout, stderr) = (text(&set.stdout), text(&set.stderr));
    assert!(
        stdout.contains("stored SCRAM-SHA-512 credential for user \"alice\""),
        "{stdout}"
    );
    assert!(!stdout.contains("alice-secret") && !stderr.contains("alice-secret"));
    let set = scram(
        data.path(),
        &[
            "set",
            "--user",
            "bob",
            "--mechanism",
            "SCRAM-SHA-256",
            "--password-file",
            &secret,
        ],
    );
    assert!(set.status.success(), "{}", text(&set.stderr));

    let list = scram(data.path(), &["list"]);
    assert!(list.status.success());
    assert_eq!(
        text(&list.stdout),
        "alice SCRAM-SHA-512 iterations=8192\nbob SCRAM-SHA-256 iterations=4096\n"
    );
    let delete = scram(
        data.path(),
        &["delete", "--user", "bob", "--mechanism", "SCRAM-SHA-256"],
    );
    assert!(delete.status.success(), "{}", text(&delete.stderr));
    let again = scram(
        data.path(),
        &["delete", "--user", "bob", "--mechanism", "SCRAM-SHA-256"],
    );
    assert_eq!(again.status.code(), Some(1));

    let broker = TestBroker::start_on(data, &[]).await;
    let mut client = broker.client().await;
    let users = ["alice", "bob"].map(|u| UserName::default().with_name(s(u)));
    let request = DescribeUserScramCredentialsRequest::default().with_users(Some(users.to_vec()));
    let response = expect_kind!(
        client
            .call(ApiKey::DescribeUserScramCredentials, 0, request)
            .await,
        DescribeUserScramCredentials
    );
    let alice = &response.results[0];
    assert_eq!((&*alice.user, alice.error_code), ("alice", 0));
    assert_eq!(
        alice
            .credential_infos
            .iter()
            .map(|i| (i.mechanism, i.iterations))
            .collect::<Vec<_>>(),
        vec![(2, 8192)]
    );
    assert_eq!(
        response.results[1].error_code,
        kafka_protocol::ResponseError::ResourceNotFound.code()
    );
    broker.running.shutdown().await;
}

#[test]
fn scram_set_refuses_bad_input_with_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.as_path();
    let open = password_file(dir.path(), "pw", 0o644);
    let private = password_file(dir.path(), "pw", 0o600);
    let cases: [&[&str]; 4] = [
        &[
            "set",
            "--user",
            "a",
            "--mechanism",
            "SCRAM-SHA-256",
            "--password-file",
            &open,
        ],
        &[
            "set",
            "--user",
            "a",
            "--mechanism",
            "SCRAM-SHA-256",
            "--password-file",
            &private,
            "--iterations",
            "1000",
        ],
        &[
            "set",
            "--user",
            "a",
            "--mechanism",
            "SCRAM-SHA-1",
            "--password-file",
            &private,
        ],
        &["frobnicate"],
    ];
    for args in cases {
        let output = scram(data, args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&output.stderr)
        );
        assert!(!text(&output.stderr).contains("pw\n"));
    }
}

#[tokio::test]
async fn an_admin_set_before_the_first_start_logs_in_and_administers_acls() {
    use kafka_protocol::messages::create_acls_request::AclCreation;
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let secret = password_file(dir.path(), "admin-secret", 0o600);
    let set = scram(
        data.path(),
        &[
            "set",
            "--user",
            "admin",
            "--mechanism",
            "SCRAM-SHA-512",
            "--password-file",
            &secret,
        ],
    );
    assert!(set.status.success(), "{}", text(&set.stderr));
    let broker = TestBroker::start_on(
        data,
        &[
            "--listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "--sasl-enabled-mechanisms",
            "SCRAM-SHA-512",
            "--authorizer",
            "acl",
            "--super-users",
            "User:admin",
        ],
    )
    .await;
    // ACL type 2 = TOPIC, pattern 3 = LITERAL, operation 3 = READ, permission 3 = ALLOW.
    let creation = AclCreation::default()
        .with_resource_type(2)
        .with_resource_name(s("orders"))
        .with_resource_pattern_type(3)
        .with_principal(s("User:alice"))
        .with_host(s("*"))
        .with_operation(3)
        .with_permission_type(3);
    let request = CreateAclsRequest::default().with_creations(vec![creation]);
    let sasl = broker.running.listener_addr("SASL_PLAINTEXT").unwrap();

    let mut wrong = tokio::net::TcpStream::connect(sasl).await.unwrap();
    assert!(!common::scram_client::login(&mut wrong, "admin", "guess").await);
    let mut anonymous = broker.client().await;
    let refused = anonymous.call(ApiKey::CreateAcls, 3, request.clone()).await;
    let refused = expect_kind!(refused, CreateAcls).results[0].error_code;
    assert_eq!(
        refused,
        kafka_protocol::ResponseError::ClusterAuthorizationFailed.code()
    );

    let mut admin = tokio::net::TcpStream::connect(sasl).await.unwrap();
    assert!(common::scram_client::login(&mut admin, "admin", "admin-secret").await);
    let created = common::call_on(&mut admin, ApiKey::CreateAcls, 3, request).await;
    assert_eq!(
        expect_kind!(created.unwrap(), CreateAcls).results[0].error_code,
        0
    );
}
