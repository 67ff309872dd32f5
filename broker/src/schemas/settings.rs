//! The schema registry's listener and how it is guarded (`docs/schema-registry.md`).

use storage::settings::{AnySetting, Setting, Unit};

pub static SCHEMA_REGISTRY: &[&dyn AnySetting] = &[
    &SCHEMA_REGISTRY_LISTEN,
    &SCHEMA_REGISTRY_TLS,
    &SCHEMA_REGISTRY_BASIC_AUTH,
];

pub static SCHEMA_REGISTRY_LISTEN: Setting<String> = Setting::new(
    "schema_registry_listen",
    "127.0.0.1:8081",
    Unit::None,
    "`ip:port` of the Confluent Schema Registry API (schemas live in the MetaStore: every broker of a cluster serves the same registry), or `none`; at its default a taken port is logged and skipped (several brokers on one host), an address given explicitly must bind",
)
.checked(storage::config::settings::check_listen);

pub static SCHEMA_REGISTRY_TLS: Setting<bool> = Setting::new(
    "schema_registry_tls",
    false,
    Unit::None,
    "Serve the schema registry over TLS (HTTPS) with ssl_cert_file and ssl_key_file, reloaded as for the Kafka listeners",
);

pub static SCHEMA_REGISTRY_BASIC_AUTH: Setting<bool> = Setting::new(
    "schema_registry_basic_auth",
    false,
    Unit::None,
    "The schema registry asks for HTTP Basic authentication as a broker user (SCRAM credentials or sasl_plain_users_file); with an authorizer, each call also needs the topic or cluster ACL its operation maps to",
);
