//! The Oxia backend: a [`MetaStore`] on an Oxia cluster, through the `oxia-client` crate.
//!
//! Semantics are Oxia's own (the embedded backend copies them), so this module only translates
//! types and errors. Two things are worth knowing:
//! - the client renews an expired session on the next ephemeral put, so `SessionExpired` is only
//!   seen by a put that races the expiry;
//! - scans and lists stream from the server; the whole call is bounded by the request timeout.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use oxia::{ComparisonType, OxiaClient, OxiaError};

use super::{
    Comparison, Expect, MetaError, MetaOptions, MetaResult, MetaStore, Notification, PutOptions,
    PutResult, Record, Version,
};

/// The namespace used when an `oxia://` URL names none (Oxia's own default).
pub const DEFAULT_NAMESPACE: &str = "default";

/// Notifications buffered per subscription before the server-side listener is back-pressured.
const NOTIFICATIONS_BUFFER_MAX: usize = 1024;

// Standard gRPC status codes (stable across implementations), so that no direct dependency on
// `tonic` is needed to classify them.
const GRPC_INVALID_ARGUMENT: i32 = 3;
const GRPC_DEADLINE_EXCEEDED: i32 = 4;

/// Where an Oxia metadata store lives: `host:port` of any server and the namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OxiaAddress {
    pub service_address: String,
    pub namespace: String,
}

/// Parses `oxia://host:port[/namespace]`. The namespace defaults to [`DEFAULT_NAMESPACE`].
pub fn parse_oxia_url(url: &str) -> MetaResult<OxiaAddress> {
    let invalid = |why: &str| MetaError::InvalidArgument(format!("oxia url {url:?}: {why}"));
    let rest = url
        .strip_prefix("oxia://")
        .ok_or_else(|| invalid("must start with oxia://"))?;
    let (authority, namespace) = match rest.split_once('/') {
        Some((authority, namespace)) => (authority, namespace.trim_end_matches('/')),
        None => (rest, ""),
    };
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or_else(|| invalid("expected host:port"))?;
    if host.is_empty() {
        return Err(invalid("empty host"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => return Err(invalid("port must be a number in 1..=65535")),
    }
    if namespace.contains('/') {
        return Err(invalid("namespace must be a single path segment"));
    }
    let namespace = if namespace.is_empty() {
        DEFAULT_NAMESPACE
    } else {
        namespace
    };
    Ok(OxiaAddress {
        service_address: authority.to_string(),
        namespace: namespace.to_string(),
    })
}

/// A [`MetaStore`] handle on an Oxia namespace. One handle owns one client (and so one session
/// per shard for its ephemeral records).
#[derive(Debug)]
pub struct OxiaMetaStore {
    client: OxiaClient,
    request_timeout: Duration,
    notifications: bool,
}

impl OxiaMetaStore {
    /// Connects to `address`. Fails with `Unavailable` or `Timeout` when the cluster cannot be
    /// reached within the request timeout, `InvalidArgument` for a bad namespace or options.
    pub async fn open(address: &OxiaAddress, options: &MetaOptions) -> MetaResult<Self> {
        let client = OxiaClient::builder()
            .service_address(address.service_address.clone())
            .namespace(address.namespace.clone())
            .session_timeout(options.session_timeout)
            .request_timeout(options.request_timeout)
            .build();
        // The client bounds connection set-up itself; the outer bound is a safety net for a
        // server that accepts the connection and never answers.
        let client = match tokio::time::timeout(options.request_timeout, client).await {
            Ok(Ok(client)) => client,
            Ok(Err(err)) => return Err(map_error(err)),
            Err(_) => return Err(MetaError::Timeout),
        };
        tracing::debug!(
            service_address = %address.service_address,
            namespace = %address.namespace,
            "oxia metastore connected"
        );
        Ok(OxiaMetaStore {
            client,
            request_timeout: options.request_timeout,
            notifications: options.notifications,
        })
    }

    /// Parses an `oxia://host:port/namespace` URL and connects.
    pub async fn open_url(url: &str, options: &MetaOptions) -> MetaResult<Self> {
        Self::open(&parse_oxia_url(url)?, options).await
    }

    /// Runs `f` under the request timeout (for calls the client does not bound itself).
    async fn bounded<T>(
        &self,
        f: impl std::future::Future<Output = MetaResult<T>>,
    ) -> MetaResult<T> {
        tokio::time::timeout(self.request_timeout, f)
            .await
            .map_err(|_| MetaError::Timeout)?
    }
}

#[async_trait]
impl MetaStore for OxiaMetaStore {
    async fn put(&self, key: &str, value: Bytes, options: PutOptions) -> MetaResult<PutResult> {
        let mut put = self.client.put(key, value);
        match options.expect {
            Expect::Any => {}
            Expect::NotExists => put = put.expected_record_not_exists(),
            Expect::Version(version_id) => put = put.expected_version_id(version_id),
        }
        if let Some(partition_key) = options.partition_key {
            put = put.partition_key(partition_key);
        }
        if let Some(deltas) = options.sequence_key_deltas {
            put = put.sequence_key_deltas(deltas);
        }
        if options.ephemeral {
            put = put.ephemeral();
        }
        let result = put.await.map_err(map_error)?;
        Ok(PutResult {
            key: result.key,
            version: map_version(result.version),
        })
    }

    async fn get(
        &self,
        key: &str,
        comparison: Comparison,
        partition_key: Option<&str>,
    ) -> MetaResult<Option<Record>> {
        let mut get = self.client.get(key).comparison(map_comparison(comparison));
        if let Some(partition_key) = partition_key {
            get = get.partition_key(partition_key);
        }
        match get.await {
            Ok(found) => Ok(Some(map_record(found))),
            Err(OxiaError::KeyNotFound) => Ok(None),
            Err(err) => Err(map_error(err)),
        }
    }

    async fn delete(
        &self,
        key: &str,
        expect: Expect,
        partition_key: Option<&str>,
    ) -> MetaResult<()> {
        let mut delete = self.client.delete(key);
        match expect {
            Expect::Any => {}
            // Oxia deletes only existing keys; "delete if absent" is a contradiction.
            Expect::NotExists => {
                return Err(MetaError::InvalidArgument(
                    "a delete cannot expect the key not to exist".into(),
                ))
            }
            Expect::Version(version_id) => delete = delete.expected_version_id(version_id),
        }
        if let Some(partition_key) = partition_key {
            delete = delete.partition_key(partition_key);
        }
        delete.await.map_err(map_error)
    }

    async fn delete_range(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
    ) -> MetaResult<()> {
        let mut delete = self.client.delete_range(min_key, max_key);
        if let Some(partition_key) = partition_key {
            delete = delete.partition_key(partition_key);
        }
        delete.await.map_err(map_error)
    }

    async fn list(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
    ) -> MetaResult<Vec<String>> {
        let mut list = self.client.list(min_key, max_key);
        if let Some(partition_key) = partition_key {
            list = list.partition_key(partition_key);
        }
        list.await.map_err(map_error)
    }

    async fn range_scan(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
        limit: usize,
    ) -> MetaResult<Vec<Record>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut scan = self.client.range_scan(min_key, max_key);
        if let Some(partition_key) = partition_key {
            scan = scan.partition_key(partition_key);
        }
        self.bounded(async move {
            let stream = scan.stream().await.map_err(map_error)?;
            // Dropping the stream after `limit` records cancels the server-side scan.
            stream
                .take(limit)
                .map_ok(map_record)
                .try_collect::<Vec<_>>()
                .await
                .map_err(map_error)
        })
        .await
    }

    async fn notifications(&self) -> MetaResult<BoxStream<'static, Notification>> {
        if !self.notifications {
            return Err(MetaError::InvalidArgument(
                "this handle was opened without notifications".into(),
            ));
        }
        let subscribe = self
            .client
            .notifications()
            .buffer_size(NOTIFICATIONS_BUFFER_MAX);
        // Awaiting the subscription returns once every shard listener is live, so changes made
        // after this call are all delivered.
        let notifications = self
            .bounded(async { subscribe.await.map_err(map_error) })
            .await?;
        Ok(notifications
            .filter_map(|n| async move { map_notification(n) })
            .boxed())
    }

    async fn close(&self) -> MetaResult<()> {
        self.bounded(async { self.client.close().await.map_err(map_error) })
            .await
    }
}

fn map_comparison(comparison: Comparison) -> ComparisonType {
    match comparison {
        Comparison::Equal => ComparisonType::Equal,
        Comparison::Floor => ComparisonType::Floor,
        Comparison::Ceiling => ComparisonType::Ceiling,
        Comparison::Lower => ComparisonType::Lower,
        Comparison::Higher => ComparisonType::Higher,
    }
}

fn map_version(version: oxia::Version) -> Version {
    Version {
        version_id: version.version_id,
        modifications_count: version.modifications_count,
        created_ms: version.created_timestamp,
        modified_ms: version.modified_timestamp,
        session_id: version.session_id,
    }
}

fn map_record(found: oxia::GetResult) -> Record {
    Record {
        key: found.key,
        // Oxia stores an empty value as "no value".
        value: found.value.unwrap_or_default(),
        version: map_version(found.version),
    }
}

/// Translates one server notification. A notification missing a field the protocol promises is
/// logged and dropped rather than guessed at.
fn map_notification(notification: oxia::Notification) -> Option<Notification> {
    match notification {
        oxia::Notification::KeyCreated {
            key,
            version_id: Some(version_id),
        } => Some(Notification::KeyCreated { key, version_id }),
        oxia::Notification::KeyModified {
            key,
            version_id: Some(version_id),
        } => Some(Notification::KeyModified { key, version_id }),
        oxia::Notification::KeyDeleted { key } => Some(Notification::KeyDeleted { key }),
        oxia::Notification::KeyRangeDeleted {
            key,
            key_range_last: Some(end_key),
        } => Some(Notification::KeyRangeDeleted { key, end_key }),
        other => {
            tracing::warn!(notification = %other, "dropping malformed oxia notification");
            None
        }
    }
}

/// Maps a client error onto what a caller can act on.
fn map_error(err: OxiaError) -> MetaError {
    match err {
        OxiaError::KeyNotFound => MetaError::KeyNotFound,
        OxiaError::UnexpectedVersionId => MetaError::UnexpectedVersion,
        OxiaError::SessionExpired => MetaError::SessionExpired,
        OxiaError::InvalidArgument(why) => MetaError::InvalidArgument(why),
        OxiaError::RequestTooLarge => MetaError::InvalidArgument("request too large".into()),
        OxiaError::Timeout => MetaError::Timeout,
        OxiaError::Closed => MetaError::Closed,
        OxiaError::Grpc { code, message } => match i32::from(code) {
            GRPC_DEADLINE_EXCEEDED => MetaError::Timeout,
            GRPC_INVALID_ARGUMENT => MetaError::InvalidArgument(message),
            _ => MetaError::Unavailable(format!("grpc {code:?}: {message}")),
        },
        // Routing gaps, lost connections, shard moves, undecodable answers and whatever a newer
        // client adds: the store cannot serve the request right now.
        other => MetaError::Unavailable(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_with_namespace_parses() {
        let address = parse_oxia_url("oxia://127.0.0.1:6648/broker").unwrap();
        assert_eq!(address.service_address, "127.0.0.1:6648");
        assert_eq!(address.namespace, "broker");
    }

    #[test]
    fn url_without_namespace_uses_default() {
        assert_eq!(
            parse_oxia_url("oxia://oxia:6648").unwrap().namespace,
            DEFAULT_NAMESPACE
        );
        assert_eq!(
            parse_oxia_url("oxia://oxia:6648/").unwrap().namespace,
            DEFAULT_NAMESPACE
        );
    }

    #[test]
    fn malformed_urls_are_rejected() {
        for url in [
            "http://h:1/ns",
            "oxia://h/ns",
            "oxia://:6648/ns",
            "oxia://h:0/ns",
            "oxia://h:70000/ns",
            "oxia://h:x/ns",
            "oxia://h:1/a/b",
        ] {
            assert!(
                matches!(parse_oxia_url(url), Err(MetaError::InvalidArgument(_))),
                "{url} should be rejected"
            );
        }
    }

    #[test]
    fn client_errors_map_to_actionable_errors() {
        assert!(matches!(
            map_error(OxiaError::KeyNotFound),
            MetaError::KeyNotFound
        ));
        assert!(matches!(
            map_error(OxiaError::UnexpectedVersionId),
            MetaError::UnexpectedVersion
        ));
        assert!(matches!(
            map_error(OxiaError::SessionExpired),
            MetaError::SessionExpired
        ));
        assert!(matches!(map_error(OxiaError::Timeout), MetaError::Timeout));
        assert!(matches!(map_error(OxiaError::Closed), MetaError::Closed));
        assert!(matches!(
            map_error(OxiaError::Disconnected("reset".into())),
            MetaError::Unavailable(_)
        ));
        assert!(matches!(
            map_error(OxiaError::LeaderNotFound { shard: 3 }),
            MetaError::Unavailable(_)
        ));
        assert!(matches!(
            map_error(OxiaError::Decode("missing version".into())),
            MetaError::Unavailable(_)
        ));
        assert!(matches!(
            map_error(OxiaError::RequestTooLarge),
            MetaError::InvalidArgument(_)
        ));
    }

    #[test]
    fn notifications_missing_fields_are_dropped() {
        let created = oxia::Notification::KeyCreated {
            key: "a".into(),
            version_id: Some(7),
        };
        assert_eq!(
            map_notification(created),
            Some(Notification::KeyCreated {
                key: "a".into(),
                version_id: 7
            })
        );
        let no_version = oxia::Notification::KeyModified {
            key: "a".into(),
            version_id: None,
        };
        assert_eq!(map_notification(no_version), None);
        let no_end = oxia::Notification::KeyRangeDeleted {
            key: "a".into(),
            key_range_last: None,
        };
        assert_eq!(map_notification(no_end), None);
    }
}
