//! The metadata store: a key-value store shaped after Oxia's client API.
//!
//! Oxia is the production backend; the embedded backend reproduces its semantics on local disk
//! so that a single-node deployment (and the tests) need no extra server; the memory backend
//! reproduces the embedded one in process memory, deterministically, for simulations. Every
//! backend runs the same conformance suite ([`conformance`], behind the `conformance` feature,
//! which any backend's tests run with [`meta_conformance_tests!`]).
//!
//! Semantics every backend honours:
//! - keys are UTF-8 strings without NUL bytes, ordered as the Oxia server orders them: by number
//!   of `/` first, then by bytes with `/` above every other byte ([`compare_keys`]);
//! - every record carries a [`Version`]; `version_id` is unique per store and grows with every
//!   write, `modifications_count` counts writes to that key since it was created;
//! - `put` and `delete` can be conditional on a version ([`Expect`]);
//! - a put with `sequence_key_deltas` appends `-%020d` per delta to the key, each number being the
//!   highest number among the prefix's existing keys plus the delta, assigned atomically (requires a
//!   partition key, forbids an expected version); every delta must be > 0. Deleting a prefix's
//!   newest key therefore rewinds its sequence, as in Oxia: never delete a stream's last index key;
//! - `partition_key` routes a key to a shard; keys sharing a partition key share a shard. Reads
//!   and range operations given a partition key only look at that shard;
//! - ephemeral records belong to the handle's session and vanish when the session ends (closed
//!   handle, or no keep-alive within the session timeout);
//! - notifications report every change made through any handle on the same store.

#[cfg(feature = "conformance")]
pub mod conformance;
pub mod embedded;
#[cfg(feature = "testkit")]
pub mod failing;
mod keys;
pub mod memory;
mod metered;
mod open;
pub mod oxia;
mod rules;

pub use embedded::EmbeddedMetaStore;
#[cfg(feature = "testkit")]
pub use failing::{FailingMetaStore, FaultMode};
pub use keys::{compare_keys, sort_key};
pub use memory::{MemoryMetaStore, MemoryStore, MemoryStoreConfig, MetaClock};
pub use metered::{register_metrics, MeteredMetaStore};
pub use open::open_meta_store;
pub use oxia::{parse_oxia_url, OxiaAddress, OxiaMetaStore};

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;

/// Errors a caller can act on. Backends map their own failures onto these.
#[derive(Clone, Debug, thiserror::Error)]
pub enum MetaError {
    /// The key does not exist (unconditional delete of a missing key). Conditional puts and
    /// deletes on a missing key fail with `UnexpectedVersion`, as in Oxia.
    #[error("key not found")]
    KeyNotFound,
    /// A conditional put or delete found another version.
    #[error("unexpected version")]
    UnexpectedVersion,
    /// The handle's session ended; ephemeral writes through it are no longer possible.
    #[error("session expired")]
    SessionExpired,
    /// The request is malformed (bad key, sequence put without partition key, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The store did not answer in time; the operation may or may not have happened.
    #[error("metadata store timed out")]
    Timeout,
    /// The store is unreachable or failed; retrying later may succeed.
    #[error("metadata store unavailable: {0}")]
    Unavailable(String),
    /// The handle was closed.
    #[error("metadata store handle closed")]
    Closed,
}

impl MetaError {
    /// Whether retrying the same operation later may succeed.
    pub fn is_retriable(&self) -> bool {
        matches!(self, MetaError::Timeout | MetaError::Unavailable(_))
    }
}

pub type MetaResult<T> = Result<T, MetaError>;

/// The version of a stored record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub version_id: i64,
    pub modifications_count: i64,
    pub created_ms: u64,
    pub modified_ms: u64,
    /// The session owning this record when it is ephemeral.
    pub session_id: Option<i64>,
}

/// A stored record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: String,
    pub value: Bytes,
    pub version: Version,
}

/// Condition attached to a put or delete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Expect {
    /// Unconditional.
    #[default]
    Any,
    /// The key must not exist (puts only).
    NotExists,
    /// The key must exist with exactly this `version_id`.
    Version(i64),
}

#[derive(Clone, Debug, Default)]
pub struct PutOptions {
    pub expect: Expect,
    pub partition_key: Option<String>,
    /// When set, the stored key is `key` followed by `-%020d` per delta (see module docs).
    pub sequence_key_deltas: Option<Vec<u64>>,
    /// Bind the record to this handle's session.
    pub ephemeral: bool,
}

impl PutOptions {
    pub fn partition(partition_key: impl Into<String>) -> Self {
        PutOptions {
            partition_key: Some(partition_key.into()),
            ..Default::default()
        }
    }
}

/// The result of a put: the key actually written (differs from the requested key for sequence
/// puts) and its new version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PutResult {
    pub key: String,
    pub version: Version,
}

/// How `get` matches keys, as in Oxia.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Comparison {
    #[default]
    Equal,
    /// Highest key `<=` the requested key.
    Floor,
    /// Lowest key `>=` the requested key.
    Ceiling,
    /// Highest key `<` the requested key.
    Lower,
    /// Lowest key `>` the requested key.
    Higher,
}

/// A change observed through [`MetaStore::notifications`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notification {
    KeyCreated {
        key: String,
        version_id: i64,
    },
    KeyModified {
        key: String,
        version_id: i64,
    },
    KeyDeleted {
        key: String,
    },
    /// Keys in `[key, end_key)` were deleted.
    KeyRangeDeleted {
        key: String,
        end_key: String,
    },
}

impl Notification {
    pub fn key(&self) -> &str {
        match self {
            Notification::KeyCreated { key, .. }
            | Notification::KeyModified { key, .. }
            | Notification::KeyDeleted { key }
            | Notification::KeyRangeDeleted { key, .. } => key,
        }
    }
}

/// Settings common to every backend's handle.
#[derive(Clone, Debug)]
pub struct MetaOptions {
    /// How long the handle's session survives without a keep-alive.
    pub session_timeout: Duration,
    /// Per-request deadline; past it the request fails with [`MetaError::Timeout`].
    pub request_timeout: Duration,
    /// Whether this handle will be asked for notifications (the coordination handle is, the
    /// index handle is not).
    pub notifications: bool,
}

impl Default for MetaOptions {
    fn default() -> Self {
        MetaOptions {
            session_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            notifications: true,
        }
    }
}

/// One handle on a metadata store. Cheap to share behind an `Arc`.
#[async_trait]
pub trait MetaStore: Send + Sync + 'static {
    async fn put(&self, key: &str, value: Bytes, options: PutOptions) -> MetaResult<PutResult>;

    /// `Ok(None)` when no key matches.
    async fn get(
        &self,
        key: &str,
        comparison: Comparison,
        partition_key: Option<&str>,
    ) -> MetaResult<Option<Record>>;

    /// Fails with `KeyNotFound` when the key does not exist.
    async fn delete(
        &self,
        key: &str,
        expect: Expect,
        partition_key: Option<&str>,
    ) -> MetaResult<()>;

    /// Deletes every key in `[min_key, max_key)`.
    async fn delete_range(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
    ) -> MetaResult<()>;

    /// Keys in `[min_key, max_key)`, in key order.
    async fn list(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
    ) -> MetaResult<Vec<String>>;

    /// Records in `[min_key, max_key)`, in key order, at most `limit` of them.
    async fn range_scan(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
        limit: usize,
    ) -> MetaResult<Vec<Record>>;

    /// A stream of changes made from now on by any handle on this store. Fails with
    /// `InvalidArgument` if the handle was opened without notifications.
    async fn notifications(&self) -> MetaResult<BoxStream<'static, Notification>>;

    /// Ends the session (its ephemeral records are deleted) and releases resources.
    async fn close(&self) -> MetaResult<()>;
}
