//! SSL listeners: TLS 1.2 and 1.3 with a rustls client, client certificates none / requested /
//! required, refused certificates (expired, untrusted) leaving the broker serving others,
//! clients of the wrong protocol refused quickly, per-listener advertised addresses,
//! certificate reload, the handshake's timeout and slot, and the key's permissions.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::pki::{self, Ca, Files};
use common::{call_on, Client, TestBroker};
use kafka_protocol::messages::*;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::rustls;

/// A CA, the broker's files, and a broker with a PLAINTEXT and an SSL listener.
struct Setup {
    ca: Ca,
    files: Files,
    broker: TestBroker,
}

impl Setup {
    async fn start(extra: &[&str]) -> Setup {
        let ca = Ca::new("test ca");
        let files = Files::write(&ca, &ca.server("broker"));
        let mut args: Vec<String> = ["--listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"]
            .iter()
            .map(|a| a.to_string())
            .collect();
        args.extend(files.args());
        args.extend(extra.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let broker = TestBroker::start(&args).await;
        Setup { ca, files, broker }
    }

    fn ssl(&self) -> SocketAddr {
        self.broker.running.listener_addr("SSL").unwrap()
    }

    fn plaintext(&self) -> SocketAddr {
        self.broker.running.listener_addr("PLAINTEXT").unwrap()
    }

    /// Connects to the SSL listener as `identity`; `None` when the handshake fails.
    async fn tls(
        &self,
        identity: Option<&pki::Issued>,
    ) -> Option<tokio_rustls::client::TlsStream<TcpStream>> {
        let config = pki::client_config(&self.ca, identity, None);
        pki::connect(self.ssl(), config).await.ok()
    }

    /// Whether a client with `identity` gets an ApiVersions answer over TLS.
    async fn served(&self, identity: Option<&pki::Issued>) -> bool {
        let Some(mut stream) = self.tls(identity).await else {
            return false;
        };
        // With TLS 1.3 the client finishes its handshake before the broker has checked its
        // certificate: a refusal shows as a closed connection on the first request.
        call_on(&mut stream, ApiKey::ApiVersions, 3, api_versions())
            .await
            .is_some()
    }
}

fn api_versions() -> ApiVersionsRequest {
    ApiVersionsRequest::default()
        .with_client_software_name(common::s("t"))
        .with_client_software_version(common::s("1"))
}

#[tokio::test]
async fn tls_1_2_and_1_3_clients_are_served_on_the_ssl_listener() {
    let setup = Setup::start(&[]).await;
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let config = pki::client_config(&setup.ca, None, Some(version));
        let mut stream = pki::connect(setup.ssl(), config).await.unwrap();
        assert_eq!(stream.get_ref().1.protocol_version(), Some(version.version));
        let response = call_on(
            &mut stream,
            ApiKey::Metadata,
            12,
            MetadataRequest::default(),
        )
        .await
        .unwrap();
        assert_eq!(expect_kind!(response, Metadata).brokers.len(), 1);
    }
    // Without client authentication a certificate is not even asked for.
    let alice = setup.ca.client("alice");
    assert!(setup.served(Some(&alice)).await);
}

#[tokio::test]
async fn mtls_required_refuses_clients_without_a_trusted_certificate_and_serves_the_others() {
    let setup = Setup::start(&["--ssl-client-auth", "required"]).await;
    let other_ca = Ca::new("other ca");
    assert!(!setup.served(None).await, "no certificate");
    assert!(
        !setup.served(Some(&setup.ca.expired_client("old"))).await,
        "expired certificate"
    );
    assert!(
        !setup.served(Some(&other_ca.client("mallory"))).await,
        "certificate from an untrusted CA"
    );
    assert!(setup.served(Some(&setup.ca.client("alice"))).await);
    let mut plain = Client::connect(setup.plaintext()).await;
    let response = plain.call(ApiKey::ApiVersions, 3, api_versions()).await;
    assert_eq!(expect_kind!(response, ApiVersions).error_code, 0);
}

#[tokio::test]
async fn mtls_requested_serves_clients_without_a_certificate_but_not_with_a_bad_one() {
    let setup = Setup::start(&["--ssl-client-auth", "requested"]).await;
    assert!(setup.served(None).await);
    assert!(setup.served(Some(&setup.ca.client("alice"))).await);
    assert!(!setup.served(Some(&setup.ca.expired_client("old"))).await);
    assert!(!setup.served(Some(&Ca::new("other").client("x"))).await);
    assert!(setup.served(None).await);
}

#[tokio::test]
async fn clients_of_the_wrong_protocol_are_refused_quickly() {
    let setup = Setup::start(&[]).await;
    let started = Instant::now();
    // A plaintext Kafka request on the TLS port: not a TLS record, so the handshake fails.
    let mut plain_on_tls = Client::connect(setup.ssl()).await;
    plain_on_tls.send_raw(&api_versions_v0()).await;
    let mut buf = vec![0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        let mut total = Vec::new();
        loop {
            match plain_on_tls.stream.read(&mut buf).await {
                Ok(0) | Err(_) => return total,
                Ok(n) => total.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the broker keeps a plaintext client on its TLS port");
    // At most a TLS alert (record type 21), never a Kafka response.
    assert!(read.is_empty() || read[0] == 21, "{read:?}");
    // A TLS client on the plaintext port: its ClientHello reads as a huge frame.
    let config = pki::client_config(&setup.ca, None, None);
    let tls_on_plain = tokio::time::timeout(
        Duration::from_secs(5),
        pki::connect(setup.plaintext(), config),
    )
    .await
    .expect("the broker keeps a TLS client on its plaintext port");
    assert!(tls_on_plain.is_err());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(setup.served(None).await);
}

#[tokio::test]
async fn a_failed_handshake_is_closed_after_the_failed_authentication_delay() {
    let setup = Setup::start(&["--connection-failed-authentication-delay-ms", "600"]).await;
    let started = Instant::now();
    let mut plain_on_tls = Client::connect(setup.ssl()).await;
    plain_on_tls.send_raw(&api_versions_v0()).await;
    let mut buf = vec![0u8; 64];
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match plain_on_tls.stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the connection is closed in the end");
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "closed after {:?}",
        started.elapsed()
    );
    assert!(setup.served(None).await);
}

fn api_versions_v0() -> [u8; 15] {
    [0, 0, 0, 11, 0, 18, 0, 0, 0, 0, 0, 9, 0, 1, b't']
}

#[tokio::test]
async fn each_listener_advertises_its_own_address() {
    let setup = Setup::start(&["--advertised-listeners", "SSL://ssl.example.com:19093"]).await;
    let plain_port = i32::from(setup.plaintext().port());
    let mut plain = Client::connect(setup.plaintext()).await;
    let mut tls = setup.tls(None).await.unwrap();
    let metadata = |response| expect_kind!(response, Metadata).brokers;
    let on_plain = metadata(
        plain
            .call(ApiKey::Metadata, 12, MetadataRequest::default())
            .await,
    );
    assert_eq!(
        (on_plain[0].host.as_str(), on_plain[0].port),
        ("127.0.0.1", plain_port)
    );
    let on_tls = call_on(&mut tls, ApiKey::Metadata, 12, MetadataRequest::default()).await;
    let on_tls = metadata(on_tls.unwrap());
    assert_eq!(
        (on_tls[0].host.as_str(), on_tls[0].port),
        ("ssl.example.com", 19093)
    );
    let find = FindCoordinatorRequest::default().with_coordinator_keys(vec![common::s("g")]);
    let found = call_on(&mut tls, ApiKey::FindCoordinator, 4, find).await;
    let found = &expect_kind!(found.unwrap(), FindCoordinator).coordinators[0];
    assert_eq!(
        (found.host.as_str(), found.port),
        ("ssl.example.com", 19093)
    );
    let cluster = call_on(
        &mut tls,
        ApiKey::DescribeCluster,
        0,
        DescribeClusterRequest::default(),
    )
    .await;
    let cluster = expect_kind!(cluster.unwrap(), DescribeCluster).brokers;
    assert_eq!(
        (cluster[0].host.as_str(), cluster[0].port),
        ("ssl.example.com", 19093)
    );
}

/// The certificate the SSL listener presents to a new connection.
async fn served_certificate(setup: &Setup) -> Vec<u8> {
    let stream = setup.tls(None).await.unwrap();
    let certificates = stream.get_ref().1.peer_certificates().unwrap();
    certificates[0].to_vec()
}

#[tokio::test]
async fn a_rotated_certificate_is_served_to_new_connections_and_open_ones_keep_working() {
    let setup = Setup::start(&["--ssl-reload-interval-ms", "100"]).await;
    let first = served_certificate(&setup).await;
    let mut open = setup.tls(None).await.unwrap();
    let rotated = setup.ca.server("broker-rotated");
    // A different length too, so that the change shows even within one mtime tick.
    setup.files.replace(&rotated);
    let deadline = Instant::now() + Duration::from_secs(10);
    while served_certificate(&setup).await == first {
        assert!(
            Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(served_certificate(&setup).await, rotated.der.to_vec());
    assert!(call_on(&mut open, ApiKey::ApiVersions, 3, api_versions())
        .await
        .is_some());
}

#[tokio::test]
async fn a_broken_rotation_keeps_the_previous_certificate() {
    let setup = Setup::start(&["--ssl-reload-interval-ms", "50"]).await;
    let first = served_certificate(&setup).await;
    // A certificate whose key is another one's: refused, the old pair stays in use.
    let a = setup.ca.server("a");
    let b = setup.ca.server("b");
    std::fs::write(setup.files.cert(), &a.cert_pem).unwrap();
    pki::write_key(&setup.files.key(), &b.key_pem);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(served_certificate(&setup).await, first);
}

#[tokio::test]
async fn a_silent_handshake_times_out() {
    let setup = Setup::start(&["--ssl-handshake-timeout-ms", "300"]).await;
    let mut silent = TcpStream::connect(setup.ssl()).await.unwrap();
    let mut buf = [0u8; 16];
    let started = Instant::now();
    let read = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert!(setup.served(None).await);
}

#[tokio::test]
async fn a_connection_still_handshaking_gives_its_slot_to_a_newcomer() {
    let setup = Setup::start(&["--max-connections", "1"]).await;
    let mut silent = TcpStream::connect(setup.ssl()).await.unwrap();
    // The newcomer takes the slot of the connection that has proven nothing yet.
    let served = tokio::time::timeout(Duration::from_secs(5), setup.served(None)).await;
    assert_eq!(served.ok(), Some(true));
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
}

#[tokio::test]
async fn a_key_others_may_read_stops_the_broker_unless_allowed() {
    use std::os::unix::fs::PermissionsExt;
    let ca = Ca::new("ca");
    let files = Files::write(&ca, &ca.server("broker"));
    std::fs::set_permissions(files.key(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "broker".to_string(),
        "--listeners".into(),
        "SSL://127.0.0.1:0".into(),
        "--data-dir".into(),
        dir.path().display().to_string(),
    ];
    args.extend(files.args());
    let config = broker::config::Config::load_from(args.clone()).unwrap();
    let error = broker::app::start(config).await.err().unwrap().to_string();
    assert!(
        error.contains("may be read by group or others (mode 644)"),
        "{error}"
    );
    assert!(
        error.contains("--ssl-key-file-permissions-unchecked"),
        "{error}"
    );
    args.extend(["--ssl-key-file-permissions-unchecked".into(), "true".into()]);
    let config = broker::config::Config::load_from(args).unwrap();
    broker::app::start(config).await.unwrap().shutdown().await;
}

/// The principal the broker's handshake gives a client presenting `identity`.
async fn principal_of(
    rules: &str,
    identity: Option<&pki::Issued>,
) -> Result<String, broker::tls::handshake::HandshakeError> {
    use broker::tls::principal_mapping::PrincipalMapper;
    use broker::tls::{ClientCa, ServerTls, TlsConfig};
    let ca = Ca::new("ca");
    let files = Files::write(&ca, &ca.server("broker"));
    let tls = ServerTls::load(TlsConfig {
        cert_file: files.cert(),
        key_file: files.key(),
        client_ca: Some(ClientCa {
            ca_file: files.ca(),
            required: false,
        }),
        principal_mapping: PrincipalMapper::parse(rules).unwrap(),
        key_file_permissions_unchecked: false,
        reload_interval_ms: 0,
        handshake_timeout_ms: 5000,
        failed_handshake_delay_ms: 0,
    })
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // The client's certificate is issued by the broker's CA: made here, from the same CA.
    let identity = identity.map(|i| ca.client(&i.cn()));
    let client = tokio::spawn(async move {
        let config = pki::client_config(&ca, identity.as_ref(), None);
        let _stream = pki::connect(addr, config).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    });
    let (tcp, _) = listener.accept().await.unwrap();
    let accepted = broker::tls::handshake::accept(&tls, tcp).await;
    client.await.unwrap();
    accepted.map(|(_, principal)| principal.to_string())
}

#[tokio::test]
async fn the_principal_is_the_client_certificate_subject_through_the_mapping_rules() {
    let alice = Ca::new("x").client("Alice");
    assert_eq!(
        principal_of("DEFAULT", Some(&alice)).await.unwrap(),
        "User:CN=Alice,OU=eng,O=acme"
    );
    assert_eq!(
        principal_of("RULE:^CN=([^,]+),OU=eng,.*$/$1/L,DEFAULT", Some(&alice))
            .await
            .unwrap(),
        "User:alice"
    );
    assert_eq!(
        principal_of("RULE:^CN=([^,]+),OU=ops,.*$/$1/", None)
            .await
            .unwrap(),
        "User:ANONYMOUS"
    );
    let refused = principal_of("RULE:^CN=([^,]+),OU=ops,.*$/$1/", Some(&alice)).await;
    assert!(
        matches!(
            refused,
            Err(broker::tls::handshake::HandshakeError::NoMatchingRule { .. })
        ),
        "{refused:?}"
    );
}

/// The certificate served at `addr`.
async fn certificate_at(ca: &Ca, addr: SocketAddr) -> Vec<u8> {
    let stream = pki::connect(addr, pki::client_config(ca, None, None))
        .await
        .unwrap();
    stream.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

#[tokio::test]
async fn sighup_reloads_the_certificate_of_the_broker_process_and_logs_no_secret() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let ca = Ca::new("ca");
    let first = ca.server("first");
    let files = Files::write(&ca, &first);
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_broker"))
        .args([
            "--listeners",
            "SSL://127.0.0.1:0",
            "--ssl-reload-interval-ms",
            "0",
        ])
        .arg("--data-dir")
        .arg(data.path())
        .args(files.args())
        .env("RUST_LOG", "info")
        .env_remove("BROKER_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, received) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut log = Vec::new();
    let addr: SocketAddr = loop {
        let line = received.recv_timeout(Duration::from_secs(30)).unwrap();
        log.push(line.clone());
        if let Some(rest) = line.split("local_addr=").nth(1) {
            break rest.split_whitespace().next().unwrap().parse().unwrap();
        }
    };
    assert_eq!(certificate_at(&ca, addr).await, first.der.to_vec());
    let second = ca.server("second");
    files.replace(&second);
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while certificate_at(&ca, addr).await != second.der.to_vec() {
        assert!(
            Instant::now() < deadline,
            "SIGHUP did not reload the certificate"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert!(child.wait().unwrap().success());
    log.extend(received.try_iter());
    let log = log.join("\n");
    assert!(log.contains("tls files reloaded"), "{log}");
    for key in [&first.key_pem, &second.key_pem] {
        let body = key.lines().nth(1).unwrap();
        assert!(!log.contains(body), "a key reached the log");
    }
}

#[tokio::test]
async fn every_broker_of_a_cluster_is_named_by_its_address_on_the_listener_asked() {
    let ca = Ca::new("ca");
    let files = Files::write(&ca, &ca.server("broker"));
    let data = tempfile::tempdir().unwrap();
    let mut brokers = Vec::new();
    for id in ["1", "2"] {
        let mut args = vec![
            "broker".to_string(),
            "--listeners".into(),
            "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0".into(),
            "--broker-id".into(),
            id.into(),
            "--data-dir".into(),
            data.path().display().to_string(),
            "--compaction".into(),
            "false".into(),
        ];
        args.extend(files.args());
        let config = broker::config::Config::load_from(args).unwrap();
        brokers.push(broker::app::start(config).await.unwrap());
    }
    let port = |b: &broker::app::Running, listener: &str| {
        i32::from(b.listener_addr(listener).unwrap().port())
    };
    let expected = |listener: &str| -> Vec<(i32, i32)> {
        vec![
            (1, port(&brokers[0], listener)),
            (2, port(&brokers[1], listener)),
        ]
    };
    let listed = |response| {
        let mut brokers: Vec<(i32, i32)> = expect_kind!(response, Metadata)
            .brokers
            .iter()
            .map(|b| (b.node_id.0, b.port))
            .collect();
        brokers.sort();
        brokers
    };
    // Membership is followed asynchronously: wait until broker 1 sees broker 2.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut plain = Client::connect(brokers[0].listener_addr("PLAINTEXT").unwrap()).await;
        let on_plain = listed(
            plain
                .call(ApiKey::Metadata, 12, MetadataRequest::default())
                .await,
        );
        if on_plain == expected("PLAINTEXT") {
            break;
        }
        assert!(Instant::now() < deadline, "{on_plain:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let config = pki::client_config(&ca, None, None);
    let mut tls = pki::connect(brokers[0].listener_addr("SSL").unwrap(), config)
        .await
        .unwrap();
    let on_tls = call_on(&mut tls, ApiKey::Metadata, 12, MetadataRequest::default()).await;
    assert_eq!(listed(on_tls.unwrap()), expected("SSL"));
    for running in brokers {
        running.shutdown().await;
    }
}
