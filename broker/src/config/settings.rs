//! The declarations of the broker's own settings, and the broker's [`schema`]: these, the
//! engine's and the data location (`storage`), compaction (`compactor`) and the topic defaults.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use compactor::config::settings as compaction;
use storage::config::settings::{ENGINE, LOCATION, OBSERVABILITY};
use storage::settings::{topic_settings, AnySetting, Resolved, Schema, Setting, Unit};

use super::Endpoint;
use crate::listener::parse;

pub static NODE: &[&dyn AnySetting] = &[
    &LISTEN,
    &ADVERTISED_LISTENER,
    &LISTENERS,
    &LISTENER_SECURITY_PROTOCOL_MAP,
    &ADVERTISED_LISTENERS,
    &BROKER_ID,
    &RACK,
];
pub static TOPICS: &[&dyn AnySetting] = &[&AUTO_CREATE_TOPICS, &DEFAULT_PARTITIONS];
pub static CONNECTIONS: &[&dyn AnySetting] = &[
    &MAX_FRAME_BYTES,
    &QUEUED_MAX_REQUEST_BYTES,
    &QUEUED_MAX_UNAUTHENTICATED_REQUEST_BYTES,
    &FRAME_STALL_TIMEOUT_MS,
    &MAX_CONNECTIONS,
    &MAX_CONNECTIONS_PER_IP,
    &CONNECTIONS_MAX_IDLE_MS,
    &FRAME_READ_TIMEOUT_MS,
    &MAX_INFLIGHT_REQUESTS,
    &SHUTDOWN_TIMEOUT_MS,
];
pub static AUTHORIZATION: &[&dyn AnySetting] = &[
    &AUTHORIZER,
    &SUPER_USERS,
    &ALLOW_EVERYONE_IF_NO_ACL_FOUND,
    &ACLS_MAX,
];
pub static GROUPS: &[&dyn AnySetting] = &[
    &GROUP_INITIAL_REBALANCE_DELAY_MS,
    &GROUP_MIN_SESSION_TIMEOUT_MS,
    &GROUP_CONSUMER_SESSION_TIMEOUT_MS,
    &GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS,
    &OFFSETS_RETENTION_MINUTES,
    &OFFSETS_RETENTION_MS,
    &OFFSETS_RETENTION_CHECK_INTERVAL_MS,
];

/// Every setting of the `broker` binary, grouped as `--help` lists them.
pub fn schema() -> Schema {
    let schema = Schema::new("broker", "BROKER_")
        .group("Listener and cluster", NODE.iter().copied())
        .group("TLS", crate::tls::settings::TLS.iter().copied())
        .group("Data", LOCATION.iter().copied())
        .group(
            "Metrics and health",
            OBSERVABILITY
                .iter()
                .chain(crate::metrics::settings::HTTP_SECURITY)
                .chain(crate::metrics::settings::CONSUMER_LAG)
                .copied(),
        )
        .group(
            "Schema registry",
            crate::schemas::settings::SCHEMA_REGISTRY.iter().copied(),
        )
        .group(
            "Iceberg tables",
            crate::tables::settings::ICEBERG.iter().copied(),
        )
        .group("Topics", TOPICS.iter().copied())
        .group("Connections", CONNECTIONS.iter().copied())
        .group("Authorization", AUTHORIZATION.iter().copied())
        .group("SASL", super::sasl::SASL.iter().copied())
        .group("Quotas", crate::quotas::settings::QUOTAS.iter().copied())
        .group(
            "Transactions",
            crate::transactions::settings::TRANSACTIONS.iter().copied(),
        )
        .group("Write and read path", ENGINE.iter().copied())
        .group("Consumer groups", GROUPS.iter().copied())
        .group("Compaction", [&COMPACTION as &dyn AnySetting]);
    compaction::add_to(schema, "Compaction")
        .group("Topic defaults (Kafka's broker settings)", topic_settings())
        .rule(QUEUED_MAX_REQUEST_BYTES.key, queue_holds_a_frame)
        .rule(
            GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS.key,
            heartbeat_within_session,
        )
        .rule(
            super::sasl::SASL_ENABLED_MECHANISMS.key,
            super::sasl::oauthbearer_has_keys,
        )
}

/// A frame is admitted whole, so the queue must have room for the largest one.
fn queue_holds_a_frame(resolved: &Resolved) -> Result<(), String> {
    let frame = resolved.get(&MAX_FRAME_BYTES);
    if resolved.get(&QUEUED_MAX_REQUEST_BYTES) >= frame {
        Ok(())
    } else {
        Err(format!("must be at least max_frame_bytes ({frame})"))
    }
}

fn heartbeat_within_session(resolved: &Resolved) -> Result<(), String> {
    let session = resolved.get(&GROUP_CONSUMER_SESSION_TIMEOUT_MS);
    if resolved.get(&GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS) < session {
        Ok(())
    } else {
        Err(format!(
            "must be below group_consumer_session_timeout_ms ({session})"
        ))
    }
}

pub static LISTEN: Setting<SocketAddr> = Setting::new(
    "listen",
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9092)),
    Unit::None,
    "Address the Kafka listener binds to",
);

pub static ADVERTISED_LISTENER: Setting<Option<String>> = Setting::new(
    "advertised_listener",
    None,
    Unit::None,
    "`host:port` clients of the listen address are told to connect to in Metadata (a `PLAINTEXT://` scheme is accepted)",
)
.default_note("the bound listen address")
.checked(|value| match value {
    Some(value) => match Endpoint::parse(value) {
        Ok(_) => Ok(()),
        Err(super::ConfigError::Invalid { reason, .. }) => Err(reason),
        Err(other) => Err(other.to_string()),
    },
    None => Ok(()),
});

pub static LISTENERS: Setting<Option<String>> = Setting::new(
    "listeners",
    None,
    Unit::None,
    "Kafka-style listeners, `NAME://host:port,...` (`PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093`; an empty host binds every interface); instead of listen",
)
.default_note("`PLAINTEXT://<listen>`")
.checked(|value| match value {
    Some(value) => parse::addresses(value).map(drop),
    None => Ok(()),
});

pub static LISTENER_SECURITY_PROTOCOL_MAP: Setting<Option<String>> = Setting::new(
    "listener_security_protocol_map",
    None,
    Unit::None,
    "`NAME:PROTOCOL,...`: the security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) of listeners named otherwise (`EXTERNAL:SSL`)",
)
.default_note("a listener named after a protocol uses it")
.checked(|value| match value {
    Some(value) => parse::protocol_map(value).map(drop),
    None => Ok(()),
});

pub static ADVERTISED_LISTENERS: Setting<Option<String>> = Setting::new(
    "advertised_listeners",
    None,
    Unit::None,
    "`NAME://host:port,...`: what Metadata, FindCoordinator and DescribeCluster tell the clients of each listener (Kafka's `advertised.listeners`)",
)
.default_note("each listener's bound address")
.checked(|value| match value {
    Some(value) => parse::addresses(value).map(drop),
    None => Ok(()),
});

pub static BROKER_ID: Setting<i32> = Setting::new(
    "broker_id",
    1,
    Unit::None,
    "This broker's id, unique in the cluster",
)
.at_least(0);

pub static RACK: Setting<Option<String>> =
    Setting::new("rack", None, Unit::None, "Rack (zone) reported to clients").default_note("none");

pub static AUTO_CREATE_TOPICS: Setting<bool> = Setting::new(
    "auto_create_topics",
    true,
    Unit::None,
    "Create unknown topics when a client's Metadata request asks for it",
);

pub static DEFAULT_PARTITIONS: Setting<i32> = Setting::new(
    "default_partitions",
    1,
    Unit::Count,
    "Partitions of topics created without an explicit count (auto-created or `num_partitions=-1`)",
)
.at_least(1);

pub static MAX_FRAME_BYTES: Setting<usize> = Setting::new(
    "max_frame_bytes",
    protocol::frame::DEFAULT_MAX_FRAME_BYTES,
    Unit::Bytes,
    "Largest request frame accepted; a larger one closes the connection",
)
.at_least(1024)
.at_most(i32::MAX as i128);

pub static QUEUED_MAX_REQUEST_BYTES: Setting<usize> = Setting::new(
    "queued_max_request_bytes",
    256 << 20,
    Unit::Bytes,
    "Request bytes being read or served across all connections (Kafka's `queued.max.request.bytes`); past it, connections pause reading. At least max_frame_bytes",
)
.at_most(tokio::sync::Semaphore::MAX_PERMITS as i128);

pub static QUEUED_MAX_UNAUTHENTICATED_REQUEST_BYTES: Setting<usize> = Setting::new(
    "queued_max_unauthenticated_request_bytes",
    32 << 20,
    Unit::Bytes,
    "Request bytes being read or served across connections of SASL listeners that have not authenticated yet, apart from queued_max_request_bytes so that they cannot spend what authenticated clients need; at least 512 KiB (the largest frame before authentication)",
)
.at_least(crate::security::sasl::MAX_RECEIVE_BYTES as i128)
.at_most(tokio::sync::Semaphore::MAX_PERMITS as i128);

pub static FRAME_STALL_TIMEOUT_MS: Setting<u64> = Setting::new(
    "frame_stall_timeout_ms",
    2_000,
    Unit::Ms,
    "While readers wait for a spent request-byte budget, a frame of that budget that has received no byte for this long is closed, so that slow or silent connections give way to others (docs/security.md, \"The front door\")",
)
.at_least(1);

pub static MAX_CONNECTIONS: Setting<usize> = Setting::new(
    "max_connections",
    1024,
    Unit::Count,
    "Client connections served at once; when all are taken, the oldest that has not sent a request yet is closed for a newcomer, else newcomers wait in the accept backlog",
)
.at_least(1);

pub static MAX_CONNECTIONS_PER_IP: Setting<usize> = Setting::new(
    "max_connections_per_ip",
    i32::MAX as usize,
    Unit::Count,
    "Connections from one IP address at once; further ones are closed (Kafka's `max.connections.per.ip`)",
)
.at_least(1);

pub static CONNECTIONS_MAX_IDLE_MS: Setting<u64> = Setting::new(
    "connections_max_idle_ms",
    600_000,
    Unit::Ms,
    "A connection with no request in flight that sends nothing for this long is closed (Kafka's `connections.max.idle.ms`)",
)
.at_least(1);

pub static FRAME_READ_TIMEOUT_MS: Setting<u64> = Setting::new(
    "frame_read_timeout_ms",
    60_000,
    Unit::Ms,
    "Once a request frame has started, its length and body must arrive within this long",
)
.at_least(1);

pub static MAX_INFLIGHT_REQUESTS: Setting<usize> = Setting::new(
    "max_inflight_requests",
    64,
    Unit::Count,
    "Requests of one connection processed concurrently (responses still go out in order)",
)
.at_least(1);

pub static SHUTDOWN_TIMEOUT_MS: Setting<u64> = Setting::new(
    "shutdown_timeout_ms",
    30_000,
    Unit::Ms,
    "Longest wait for in-flight requests on shutdown",
);

pub static AUTHORIZER: Setting<String> = Setting::new(
    "authorizer",
    "none",
    Unit::None,
    "`none`: every request is allowed and the ACL APIs answer SECURITY_DISABLED (Kafka without `authorizer.class.name`); `acl`: ACLs in the metadata store decide, as Kafka's StandardAuthorizer",
)
.checked(|value| match crate::security::authorizer::AuthorizerKind::parse(value) {
    Some(_) => Ok(()),
    None => Err("expected none or acl".into()),
});

pub static SUPER_USERS: Setting<Option<String>> = Setting::new(
    "super_users",
    None,
    Unit::None,
    "Principals allowed everything whatever the ACLs, `;`-separated (Kafka's `super.users`, e.g. `User:admin;User:ops`)",
)
.default_note("none")
.checked(|value| match value {
    Some(text) => crate::security::authorizer::parse_super_users(text).map(|_| ()),
    None => Ok(()),
});

pub static ALLOW_EVERYONE_IF_NO_ACL_FOUND: Setting<bool> = Setting::new(
    "allow_everyone_if_no_acl_found",
    false,
    Unit::None,
    "With `--authorizer acl`, allow an operation on a resource no ACL applies to (Kafka's `allow.everyone.if.no.acl.found`); a resource with ACLs for anyone is refused to everyone else",
);

pub static ACLS_MAX: Setting<usize> = Setting::new(
    "acls_max",
    100_000,
    Unit::Count,
    "ACLs the cluster may hold; CreateAcls beyond it is refused with POLICY_VIOLATION. Every broker keeps all of them in memory (about 300 bytes each) and lists them at start",
)
.at_least(1);

pub static GROUP_INITIAL_REBALANCE_DELAY_MS: Setting<u64> = Setting::new(
    "group_initial_rebalance_delay_ms",
    3000,
    Unit::Ms,
    "How long the first rebalance of a new consumer group waits for more members",
);

pub static GROUP_MIN_SESSION_TIMEOUT_MS: Setting<i32> = Setting::new(
    "group_min_session_timeout_ms",
    6000,
    Unit::Ms,
    "Smallest session timeout a classic group member may ask for",
)
.at_least(0);

pub static GROUP_CONSUMER_SESSION_TIMEOUT_MS: Setting<i32> = Setting::new(
    "group_consumer_session_timeout_ms",
    45_000,
    Unit::Ms,
    "Session timeout of consumer-protocol (KIP-848) group members",
)
.at_least(1);

pub static GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS: Setting<i32> = Setting::new(
    "group_consumer_heartbeat_interval_ms",
    5_000,
    Unit::Ms,
    "Heartbeat interval given to consumer-protocol (KIP-848) group members; below the session timeout",
)
.at_least(1);

// Minutes beyond the maximum overflow milliseconds in u64 arithmetic.
pub static OFFSETS_RETENTION_MINUTES: Setting<u64> = Setting::new(
    "offsets_retention_minutes",
    10_080,
    Unit::Minutes,
    "Committed offsets of a group without members are deleted this long after their last commit (or after the group became empty, if later)",
)
.at_least(1)
.at_most((u64::MAX / 60_000) as i128);

pub static OFFSETS_RETENTION_MS: Setting<Option<u64>> = Setting::new(
    "offsets_retention_ms",
    None,
    Unit::Ms,
    "Offset retention in milliseconds; overrides offsets_retention_minutes when set (as `log.retention.ms` overrides `log.retention.minutes` in Kafka)",
)
.default_note("offsets_retention_minutes")
.at_least(1);

pub static OFFSETS_RETENTION_CHECK_INTERVAL_MS: Setting<u64> = Setting::new(
    "offsets_retention_check_interval_ms",
    600_000,
    Unit::Ms,
    "Pause between offset expiry runs",
)
.at_least(1);

pub static COMPACTION: Setting<bool> = Setting::new(
    "compaction",
    true,
    Unit::None,
    "Run the compactor (WAL -> Parquet, retention, reclamation) inside this process; clusters run the separate `compactor` binary instead",
);
