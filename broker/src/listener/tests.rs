//! Listener settings as a whole: the forms Kafka operators write, the `--listen` shorthand,
//! and the errors, each naming the setting to fix.

use super::*;
use crate::config::{Config, Startup};

fn load(args: &[&str], env: &[(&str, &str)]) -> Result<Config, String> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Startup::load(std::iter::once("broker").chain(args.iter().copied()), &env)
        .map(|s| s.config)
        .map_err(|e| e.to_string())
}

fn listeners(args: &[&str]) -> Vec<ListenerConfig> {
    load(args, &[]).unwrap().listeners
}

fn error(args: &[&str]) -> String {
    load(args, &[]).unwrap_err()
}

fn endpoint(host: &str, port: i32) -> Option<Endpoint> {
    Some(Endpoint {
        host: host.into(),
        port,
    })
}

const TLS_FILES: [&str; 4] = ["--ssl-cert-file", "c.pem", "--ssl-key-file", "k.pem"];

#[test]
fn without_arguments_one_plaintext_listener_on_9092() {
    assert_eq!(
        listeners(&[]),
        vec![ListenerConfig {
            name: "PLAINTEXT".into(),
            protocol: SecurityProtocol::Plaintext,
            host: "127.0.0.1".into(),
            port: 9092,
            advertised: None,
        }]
    );
    assert!(load(&[], &[]).unwrap().tls.is_none());
}

#[test]
fn listen_and_advertised_listener_stay_the_plaintext_shorthand() {
    let one = listeners(&[
        "--listen",
        "0.0.0.0:9094",
        "--advertised-listener",
        "kafka-1:19094",
    ]);
    assert_eq!(one.len(), 1);
    assert_eq!((one[0].host.as_str(), one[0].port), ("0.0.0.0", 9094));
    assert_eq!(one[0].advertised, endpoint("kafka-1", 19094));
    assert_eq!(one[0].url(), "PLAINTEXT://0.0.0.0:9094");
}

#[test]
fn several_listeners_with_their_protocols_and_advertised_addresses() {
    let mut args = vec![
        "--listeners",
        "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,external://[::]:9094",
        "--listener-security-protocol-map",
        "EXTERNAL:SSL",
        "--advertised-listeners",
        "EXTERNAL://kafka.example.com:443,SSL://10.0.0.1:9093",
    ];
    args.extend(TLS_FILES);
    let all = listeners(&args);
    let summary: Vec<_> = all
        .iter()
        .map(|l| (l.name.as_str(), l.protocol, l.url()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "PLAINTEXT",
                SecurityProtocol::Plaintext,
                "PLAINTEXT://127.0.0.1:9092".to_string()
            ),
            ("SSL", SecurityProtocol::Ssl, "SSL://127.0.0.1:9093".into()),
            (
                "EXTERNAL",
                SecurityProtocol::Ssl,
                "EXTERNAL://[::]:9094".into()
            ),
        ]
    );
    assert_eq!(all[0].advertised, None);
    assert_eq!(all[1].advertised, endpoint("10.0.0.1", 9093));
    assert_eq!(all[2].advertised, endpoint("kafka.example.com", 443));
}

#[test]
fn listeners_come_from_the_environment_and_the_file_too() {
    let env = [
        (
            "BROKER_LISTENERS",
            "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        ),
        (
            "BROKER_LISTENER_SECURITY_PROTOCOL_MAP",
            "INTERNAL:PLAINTEXT",
        ),
    ];
    let config = load(&[], &env).unwrap();
    assert_eq!(config.listeners.len(), 2);
    assert_eq!(config.listeners[1].protocol, SecurityProtocol::Plaintext);
}

#[test]
fn what_print_config_writes_loads_back() {
    let args = [
        "--listeners",
        "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
    ];
    let args = [
        &args[..],
        &["--listener-security-protocol-map", "INTERNAL:PLAINTEXT"],
    ]
    .concat();
    let printed = Startup::load(std::iter::once("broker").chain(args), &[])
        .unwrap()
        .resolved
        .print();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, printed.as_bytes()).unwrap();
    let path = file.path().to_str().unwrap();
    assert_eq!(listeners(&["--config", path]).len(), 2);
}

#[test]
fn errors_name_the_setting_to_fix() {
    assert_eq!(
        error(&["--listeners", "PLAINTEXT:/127.0.0.1:9092"]),
        "invalid setting listeners: \"PLAINTEXT:/127.0.0.1:9092\": expected NAME://host:port, \
         on the command line"
    );
    assert!(
        error(&["--listen", "127.0.0.1:1", "--listeners", "PLAINTEXT://:2"])
            .starts_with("invalid setting listen: set listen or listeners, not both")
    );
    assert!(error(&[
        "--listeners",
        "PLAINTEXT://:2",
        "--advertised-listener",
        "h:2"
    ])
    .starts_with("invalid setting advertised_listener:"));
    assert_eq!(
        error(&["--listeners", "EXTERNAL://:9094"]),
        "invalid setting listener_security_protocol_map: no security protocol for listener \
         EXTERNAL (add EXTERNAL:SSL or another protocol)"
    );
    assert!(error(&["--listener-security-protocol-map", "EXTERNAL:TLS"])
        .starts_with("invalid setting listener_security_protocol_map: \"EXTERNAL:TLS\": unknown"));
    assert_eq!(
        error(&["--advertised-listeners", "SSL://h:1"]),
        "invalid setting advertised_listeners: SSL is not one of the listeners"
    );
    assert!(error(&["--advertised-listeners", "PLAINTEXT://:1"])
        .contains("an advertised address needs a host and a port"));
    assert_eq!(
        error(&["--listeners", "PLAINTEXT://a:9092,INTERNAL://b:9092"]),
        "invalid setting listeners: listeners PLAINTEXT and INTERNAL both use port 9092"
    );
}

#[test]
fn sasl_listeners_take_their_protocol_from_the_name_or_the_map() {
    let map = parse::protocol_map("A:SASL_PLAINTEXT,B:SASL_SSL").unwrap();
    assert_eq!(map["A"], SecurityProtocol::SaslPlaintext);
    assert_eq!(map["B"], SecurityProtocol::SaslSsl);
    let protocols: Vec<SecurityProtocol> = listeners(&[
        "--listeners",
        "PLAINTEXT://:1,SASL_PLAINTEXT://:2,EXTERNAL://:3",
        "--listener-security-protocol-map",
        "EXTERNAL:SASL_PLAINTEXT",
    ])
    .iter()
    .map(|l| l.protocol)
    .collect();
    assert_eq!(
        protocols,
        [
            SecurityProtocol::Plaintext,
            SecurityProtocol::SaslPlaintext,
            SecurityProtocol::SaslPlaintext
        ]
    );
    assert_eq!(
        error(&["--listeners", "SASL_SSL://:2"]),
        "invalid setting ssl_cert_file: required by the TLS listener SASL_SSL"
    );
}

#[test]
fn tls_settings_are_required_only_by_tls_listeners() {
    assert_eq!(
        error(&["--listeners", "SSL://:9093"]),
        "invalid setting ssl_cert_file: required by the TLS listener SSL"
    );
    let mut required = vec![
        "--listeners",
        "SSL://:9093",
        "--ssl-client-auth",
        "required",
    ];
    required.extend(TLS_FILES);
    assert_eq!(
        error(&required),
        "invalid setting ssl_ca_file: required with ssl_client_auth=required"
    );
    required.extend(["--ssl-ca-file", "ca.pem"]);
    let tls = load(&required, &[]).unwrap().tls.unwrap();
    assert!(tls.client_ca.unwrap().required);
    assert!(error(&["--ssl-client-auth", "maybe"])
        .starts_with("invalid setting ssl_client_auth: expected none, requested or required"));
    assert!(error(&["--ssl-principal-mapping-rules", "RULE:x"])
        .starts_with("invalid setting ssl_principal_mapping_rules: invalid rule"));
}
