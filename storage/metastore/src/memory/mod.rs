//! The memory metadata store: the embedded backend's semantics in process memory, deterministic,
//! for simulations and tests (not durable: everything is lost with the process).
//!
//! Shape (see `docs/metastore-memory.md`):
//! - a [`MemoryStore`] is the shared state (records, sessions, counters, notification channel);
//!   [`MemoryStore::handle`] opens a [`MemoryMetaStore`] on it, each handle with its own session,
//!   as several processes or handles share one embedded file;
//! - every operation runs whole under one `std::sync::Mutex`, never held across an await, and
//!   completes without waiting for anything else: no threads, no timers, no `spawn_blocking`,
//!   no I/O. The same sequence of operations therefore gives the same keys, version ids,
//!   session ids and notifications, run after run;
//! - time is read only through the store's [`MetaClock`] (default: system time), once per put,
//!   to stamp `created_ms`/`modified_ms`;
//! - semantics are the embedded store's, from the same code where possible (`meta/rules.rs`):
//!   Oxia's key order through [`sort_key`](crate::sort_key), version ids unique and
//!   increasing per store from 1, `modifications_count` from 0, Oxia's conditional put/delete
//!   errors, Oxia's sequence-key rule, and one shard: partition keys are accepted and ignored,
//!   exactly as the embedded store does (the conformance suite allows it);
//! - notifications come from every handle of the store, in the order the changes were applied.
//!
//! Sessions never expire by time. A session ends when its handle is closed, dropped, or told to
//! expire ([`MemoryMetaStore::expire_session`], [`MemoryStore::expire_session`]); its ephemeral
//! records are then deleted at once, with one `KeyDeleted` notification each. Dropping a handle
//! stands for a crashed process: the embedded store would delete its records one session timeout
//! later, the memory store does it at the drop, because the simulation, not a timer, decides
//! when time has passed. `MetaOptions::session_timeout` and `request_timeout` are therefore
//! unused: nothing here waits or times out.
//!
//! Limits:
//! - keys: UTF-8 without NUL, no length limit; sequence puts take 1 to 16 deltas, each > 0
//!   (as the embedded store);
//! - stored bytes: the sum of key and value lengths is at most
//!   [`MemoryStoreConfig::data_bytes_max`] (default [`DATA_BYTES_MAX_DEFAULT`]); a put that
//!   would pass it fails with `Unavailable`, like an embedded store on a full disk;
//! - notifications: each subscriber's buffer holds [`NOTIFICATION_BUFFER_MAX`] notifications
//!   (the embedded store's figure); a subscriber further behind loses the oldest ones, a warning
//!   is logged, and its stream continues with the oldest it still holds.

mod handle;
mod state;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

pub use self::handle::MemoryMetaStore;
use self::state::State;
use super::MetaOptions;

/// Notifications buffered per subscriber (the embedded store's `NOTIFICATION_BUFFER_MAX`).
pub const NOTIFICATION_BUFFER_MAX: usize = 4096;
/// Default bound on the sum of key and value lengths held by one store.
pub const DATA_BYTES_MAX_DEFAULT: usize = 1 << 30;

/// Milliseconds since the Unix epoch, as the store should see them.
pub type MetaClock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The wall clock, the default [`MetaClock`].
pub fn system_clock() -> MetaClock {
    Arc::new(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    })
}

/// Settings of one [`MemoryStore`].
#[derive(Clone)]
pub struct MemoryStoreConfig {
    /// Stamps `created_ms` and `modified_ms`; called once per put, under the store's lock.
    pub clock: MetaClock,
    /// Bound on the sum of key and value lengths of the stored records.
    pub data_bytes_max: usize,
}

impl Default for MemoryStoreConfig {
    fn default() -> Self {
        MemoryStoreConfig {
            clock: system_clock(),
            data_bytes_max: DATA_BYTES_MAX_DEFAULT,
        }
    }
}

impl std::fmt::Debug for MemoryStoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStoreConfig")
            .field("data_bytes_max", &self.data_bytes_max)
            .finish_non_exhaustive()
    }
}

/// One in-memory store, shared by its handles. Cloning gives another reference to the same
/// store; the data lives until the last clone and the last handle are dropped.
#[derive(Clone)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store on the system clock with the default limits.
    pub fn new() -> Self {
        MemoryStore::with_config(MemoryStoreConfig::default())
    }

    /// An empty store whose versions are stamped by `clock`.
    pub fn with_clock(clock: MetaClock) -> Self {
        MemoryStore::with_config(MemoryStoreConfig {
            clock,
            ..MemoryStoreConfig::default()
        })
    }

    pub fn with_config(config: MemoryStoreConfig) -> Self {
        let state = State::new(config.clock, config.data_bytes_max, NOTIFICATION_BUFFER_MAX);
        MemoryStore {
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// The store this process shares under `name`, created empty on first use and kept until
    /// the process exits (what `--metastore memory` opens, so that the broker's index and
    /// coordination handles see the same data).
    pub fn process_wide(name: &str) -> MemoryStore {
        static STORES: OnceLock<Mutex<HashMap<String, MemoryStore>>> = OnceLock::new();
        let mut stores = STORES
            .get_or_init(|| Mutex::new(HashMap::new()))
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        stores.entry(name.to_string()).or_default().clone()
    }

    /// Opens a handle with a new session.
    pub fn handle(&self, options: MetaOptions) -> MemoryMetaStore {
        let session_id = self.lock().open_session();
        tracing::debug!(session_id, "opened memory metadata session");
        MemoryMetaStore::new(self.clone(), session_id, options)
    }

    /// Ends a session as if it had timed out: its ephemeral records are deleted (and their
    /// deletion notified); its handle stays open, but ephemeral puts through it fail with
    /// `SessionExpired`. Returns false if the session had already ended.
    pub fn expire_session(&self, session_id: i64) -> bool {
        let ended = self.lock().end_session(session_id);
        if let Some(ephemeral_records) = ended {
            tracing::debug!(
                session_id,
                ephemeral_records,
                "expired memory metadata session"
            );
        }
        ended.is_some()
    }

    /// Sessions not ended yet, in increasing order.
    pub fn live_sessions(&self) -> Vec<i64> {
        self.lock().live_sessions()
    }

    /// Records stored.
    pub fn records_count(&self) -> usize {
        self.lock().records_count()
    }

    /// Sum of key and value lengths stored (what `data_bytes_max` bounds).
    pub fn data_bytes(&self) -> usize {
        self.lock().data_bytes()
    }

    /// A panic while the lock is held cannot leave the state half changed (operations check
    /// everything, and call the clock, before they change anything), so a poisoned lock is
    /// taken over rather than failing every later operation.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
