//! Transactions (KIP-98) on the MetaStore: the coordinator's state per transactional id
//! (`coordinator`), the partition writer's side of each transaction (`writer`: verification of
//! transactional batches and the open-transaction entries that hold the last stable offset),
//! commit/abort markers written through the normal WAL path (`markers`), the read side
//! (`stable`: last stable offset and aborted transactions for read_committed fetches), the
//! offsets a transaction commits for groups (`offsets`), and the background sweep that resumes
//! decided transactions after any broker died and aborts those past their timeout (`sweep`).
//! `docs/transactions.md` describes the design and its guarantees.

pub mod coordinator;
pub mod keys;
pub mod markers;
pub mod offsets;
pub mod records;
pub mod settings;
pub mod stable;
pub mod sweep;
pub mod writer;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use kafka_protocol::ResponseError;
use metastore::{Comparison, Expect, MetaError, MetaStore, PutOptions};

use records::{decode, encode, TxnState};

/// Partitions one transaction may hold (bounds the size of its state record).
pub const TXN_PARTITIONS_MAX: usize = 10_000;
/// Groups one transaction may commit offsets for.
pub const TXN_GROUPS_MAX: usize = 100;

/// The settings the coordinator works with.
#[derive(Clone, Copy, Debug)]
pub struct TxnConfig {
    pub max_timeout_ms: i32,
    pub id_expiration_ms: u64,
    pub cleanup_interval_ms: u64,
}

/// One async lock per key, dropped from the map when nobody holds or waits for it.
#[derive(Default)]
pub struct KeyedLocks<V: Default> {
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<V>>>>,
}

impl<V: Default> KeyedLocks<V> {
    pub async fn lock(&self, key: &str) -> tokio::sync::OwnedMutexGuard<V> {
        let lock = {
            let mut map = self.locks.lock().unwrap_or_else(|p| p.into_inner());
            // Forget locks nobody holds (bounded by the keys in use at once).
            if map.len() > 1024 {
                map.retain(|_, l| Arc::strong_count(l) > 1);
            }
            map.entry(key.to_string()).or_default().clone()
        };
        lock.lock_owned().await
    }
}

/// What a partition writer knows of the transactions open on one partition: producer id to
/// epoch, for the ones whose entry it wrote (batches of those need no verification).
#[derive(Default)]
pub struct WriterState {
    generation: u64,
    open: HashMap<i64, i16>,
}

pub struct Transactions {
    meta: Arc<dyn MetaStore>,
    config: TxnConfig,
    /// Serialises the coordinator's changes to one transactional id.
    ids: KeyedLocks<()>,
    /// Serialises transactional appends and markers of one partition on this broker.
    partitions: KeyedLocks<WriterState>,
    membership_generation: Arc<AtomicU64>,
}

impl Transactions {
    pub fn new(
        meta: Arc<dyn MetaStore>,
        config: TxnConfig,
        membership_generation: Arc<AtomicU64>,
    ) -> Transactions {
        Transactions {
            meta,
            config,
            ids: KeyedLocks::default(),
            partitions: KeyedLocks::default(),
            membership_generation,
        }
    }

    pub fn config(&self) -> TxnConfig {
        self.config
    }

    pub fn meta(&self) -> &Arc<dyn MetaStore> {
        &self.meta
    }

    fn generation(&self) -> u64 {
        self.membership_generation.load(Ordering::Acquire)
    }

    /// Forgets a deleted partition's open transactions and aborted-transaction index (the
    /// coordinators waiting for their markers then see them gone).
    pub async fn forget_stream(&self, stream: &str) -> Result<(), MetaError> {
        let (start, end) = keys::open_range(stream);
        self.meta.delete_range(&start, &end, None).await?;
        let (start, end) = keys::aborted_range_from(stream, 0);
        self.meta.delete_range(&start, &end, None).await
    }

    /// The state of `transactional_id` and its record version.
    pub async fn load(
        &self,
        transactional_id: &str,
    ) -> Result<Option<(TxnState, i64)>, ResponseError> {
        let key = keys::state_key(transactional_id);
        let record = self
            .meta
            .get(&key, Comparison::Equal, None)
            .await
            .map_err(|e| unavailable("read", &e))?;
        let Some(record) = record else {
            return Ok(None);
        };
        match decode::<TxnState>(&record.value) {
            Ok(state) => Ok(Some((state, record.version.version_id))),
            Err(error) => {
                tracing::error!(transactional_id, %error, "undecodable transaction state");
                Err(ResponseError::CoordinatorNotAvailable)
            }
        }
    }

    /// Writes `state` if its record is still at `version` (`None`: if it does not exist).
    pub async fn store(
        &self,
        transactional_id: &str,
        state: &TxnState,
        version: Option<i64>,
    ) -> Result<i64, ResponseError> {
        let options = PutOptions {
            expect: version.map_or(Expect::NotExists, Expect::Version),
            ..Default::default()
        };
        let key = keys::state_key(transactional_id);
        match self.meta.put(&key, encode(state), options).await {
            Ok(put) => Ok(put.version.version_id),
            // Another coordinator (a membership change) got there first: the client retries.
            Err(MetaError::UnexpectedVersion) => Err(ResponseError::ConcurrentTransactions),
            Err(e) => Err(unavailable("write", &e)),
        }
    }
}

fn unavailable(what: &str, error: &MetaError) -> ResponseError {
    tracing::warn!(%error, what, "transaction state not reachable");
    ResponseError::CoordinatorNotAvailable
}
