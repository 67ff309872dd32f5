//! What all handles on one database file in this process share: the writer thread, the reader
//! pool, the notification channel, the change-log poller and the session keep-alive thread.
//!
//! Sharing one writer per file and process makes group commit span every handle (the index
//! handle and the coordination handle usually point at the same file).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::notify::{self, NOTIFICATION_BUFFER_MAX};
use super::reader::{self, Readers};
use super::schema;
use super::writer::{self, WriteOp, WriteOutcome, WriteRequest, WriterStats, WRITE_QUEUE_MAX};
use crate::{MetaError, MetaResult, Notification};

/// How often the keep-alive thread wakes to see whether anything is due.
const MAINTENANCE_TICK: Duration = Duration::from_millis(100);
/// How often to look for sessions of dead processes.
const REAP_CHECK_INTERVAL: Duration = Duration::from_millis(250);
/// How often to prune the change log.
const PRUNE_INTERVAL: Duration = Duration::from_secs(5);

/// Open stores of this process, by canonical path.
fn registry() -> &'static Mutex<HashMap<PathBuf, Weak<Shared>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<PathBuf, Weak<Shared>>>> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(HashMap::new()))
}

/// A session of one live handle of this process, renewed every `timeout / 3`.
struct Lease {
    timeout: Duration,
    renewed_at: Instant,
    expired: Arc<AtomicBool>,
}

pub(super) struct Shared {
    pub path: PathBuf,
    origin: i64,
    writes: mpsc::Sender<WriteRequest>,
    pub readers: Arc<Readers>,
    pub stats: Arc<WriterStats>,
    events: broadcast::Sender<Notification>,
    leases: Mutex<HashMap<i64, Lease>>,
    poller_started: Mutex<bool>,
}

fn unavailable(context: &str, error: impl std::fmt::Display) -> MetaError {
    MetaError::Unavailable(format!("{context}: {error}"))
}

impl Shared {
    /// Returns this process's shared state for the database at `path`, opening it if needed.
    /// Blocking: call from a blocking thread.
    pub fn open(path: &Path) -> MetaResult<Arc<Shared>> {
        let file_name = path.file_name().ok_or_else(|| {
            MetaError::InvalidArgument(format!("{} names no file", path.display()))
        })?;
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| unavailable("cannot create metadata directory", e))?;
        let canonical = dir
            .canonicalize()
            .map_err(|e| unavailable("cannot resolve metadata directory", e))?
            .join(file_name);

        let mut registry = registry()
            .lock()
            .map_err(|_| MetaError::Unavailable("registry poisoned".into()))?;
        registry.retain(|_, shared| shared.strong_count() > 0);
        if let Some(shared) = registry.get(&canonical).and_then(Weak::upgrade) {
            return Ok(shared);
        }

        let mut conn = schema::open_connection(&canonical)
            .map_err(|e| unavailable("cannot open metadata store", e))?;
        schema::create_schema(&mut conn)
            .map_err(|e| unavailable("cannot create metadata schema", e))?;
        let (origin_high, _) = uuid::Uuid::new_v4().as_u64_pair();
        let origin = i64::from_ne_bytes(origin_high.to_ne_bytes());
        let (writes, requests) = mpsc::channel(WRITE_QUEUE_MAX);
        let (events, _) = broadcast::channel(NOTIFICATION_BUFFER_MAX);
        let writer_events = events.clone();
        let stats = Arc::new(WriterStats::default());
        let writer_stats = Arc::clone(&stats);
        std::thread::Builder::new()
            .name("meta-writer".into())
            .spawn(move || writer::run_writer(conn, origin, requests, writer_events, writer_stats))
            .map_err(|e| unavailable("cannot start metadata writer", e))?;

        let shared = Arc::new(Shared {
            path: canonical.clone(),
            origin,
            writes,
            readers: Arc::new(Readers::new(canonical.clone())),
            stats,
            events,
            leases: Mutex::new(HashMap::new()),
            poller_started: Mutex::new(false),
        });
        let weak = Arc::downgrade(&shared);
        let maintenance_path = canonical.clone();
        std::thread::Builder::new()
            .name("meta-keepalive".into())
            .spawn(move || run_maintenance(weak, maintenance_path))
            .map_err(|e| unavailable("cannot start metadata keep-alive", e))?;
        registry.insert(canonical, Arc::downgrade(&shared));
        tracing::info!(path = %shared.path.display(), "opened embedded metadata store");
        Ok(shared)
    }

    /// Queues a write and waits for the group commit that applies it.
    pub async fn write(&self, op: WriteOp) -> MetaResult<WriteOutcome> {
        let (reply, answer) = oneshot::channel();
        self.writes
            .send(WriteRequest { op, reply })
            .await
            .map_err(|_| MetaError::Unavailable("metadata writer stopped".into()))?;
        answer
            .await
            .map_err(|_| MetaError::Unavailable("metadata writer stopped".into()))?
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.events.subscribe()
    }

    /// Starts the change-log poller once; changes committed from now on by other processes are
    /// delivered. Blocking.
    pub fn ensure_poller(self: &Arc<Self>) -> MetaResult<()> {
        let mut started = self
            .poller_started
            .lock()
            .map_err(|_| MetaError::Unavailable("poller lock poisoned".into()))?;
        if *started {
            return Ok(());
        }
        let conn: Connection = schema::open_reader(&self.path)
            .map_err(|e| unavailable("cannot open change-log poller", e))?;
        let last_id =
            notify::last_change_id(&conn).map_err(|e| unavailable("cannot read change log", e))?;
        let weak = Arc::downgrade(self);
        let origin = self.origin;
        let events = self.events.clone();
        std::thread::Builder::new()
            .name("meta-poller".into())
            .spawn(move || notify::run_poller(weak, conn, origin, last_id, events))
            .map_err(|e| unavailable("cannot start change-log poller", e))?;
        *started = true;
        Ok(())
    }

    /// Keeps `session_id` alive until [`Shared::release_lease`]; the flag turns true if the
    /// session is found expired.
    pub fn register_lease(&self, session_id: i64, timeout: Duration) -> Arc<AtomicBool> {
        let expired = Arc::new(AtomicBool::new(false));
        let lease = Lease {
            timeout,
            renewed_at: Instant::now(),
            expired: Arc::clone(&expired),
        };
        if let Ok(mut leases) = self.leases.lock() {
            leases.insert(session_id, lease);
        }
        expired
    }

    pub fn release_lease(&self, session_id: i64) {
        if let Ok(mut leases) = self.leases.lock() {
            leases.remove(&session_id);
        }
    }

    fn due_leases(&self, now: Instant) -> Vec<i64> {
        match self.leases.lock() {
            Ok(leases) => leases
                .iter()
                .filter(|(_, lease)| now.duration_since(lease.renewed_at) >= lease.timeout / 3)
                .map(|(id, _)| *id)
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    fn renewed(&self, renewed: &[i64], at: Instant, lost: &[i64]) {
        let Ok(mut leases) = self.leases.lock() else {
            return;
        };
        for id in renewed {
            if let Some(lease) = leases.get_mut(id) {
                lease.renewed_at = at;
            }
        }
        for id in lost {
            if let Some(lease) = leases.remove(id) {
                lease.expired.store(true, Ordering::SeqCst);
                tracing::warn!(
                    session_id = id,
                    "metadata session expired before it could be renewed"
                );
            }
        }
    }
}

/// Renews this process's sessions, reaps sessions of dead processes and prunes the change log,
/// until the shared state is dropped.
fn run_maintenance(shared: Weak<Shared>, path: PathBuf) {
    let mut reader: Option<Connection> = None;
    let mut last_reap_check = Instant::now();
    let mut last_prune = Instant::now();
    loop {
        std::thread::sleep(MAINTENANCE_TICK);
        let Some(strong) = shared.upgrade() else {
            return;
        };
        let now = Instant::now();
        let renew = strong.due_leases(now);
        let prune_changes = now.duration_since(last_prune) >= PRUNE_INTERVAL;
        let mut reap = false;
        if now.duration_since(last_reap_check) >= REAP_CHECK_INTERVAL {
            last_reap_check = now;
            reap = expired_session_exists(&mut reader, &path);
        }
        if renew.is_empty() && !prune_changes && !reap {
            continue;
        }
        if prune_changes {
            last_prune = now;
        }
        let (reply, answer) = oneshot::channel();
        let op = WriteOp::Maintain {
            renew: renew.clone(),
            prune_changes,
        };
        if strong
            .writes
            .blocking_send(WriteRequest { op, reply })
            .is_err()
        {
            return;
        }
        // Let the store close while we wait, if every handle is gone.
        drop(strong);
        match answer.blocking_recv() {
            Ok(Ok(WriteOutcome::Maintained { lost })) => {
                if let Some(strong) = shared.upgrade() {
                    strong.renewed(&renew, now, &lost);
                }
            }
            Ok(Ok(_)) => {
                tracing::error!("metadata writer answered maintenance with another outcome")
            }
            // Leases stay due, so the renewal is retried on the next tick.
            Ok(Err(error)) => tracing::warn!(%error, "metadata session keep-alive failed"),
            Err(_) => return,
        }
    }
}

fn expired_session_exists(reader: &mut Option<Connection>, path: &Path) -> bool {
    if reader.is_none() {
        *reader = schema::open_reader(path).ok();
    }
    match reader
        .as_ref()
        .map(|conn| reader::any_session_expired(conn, writer::now_ms()))
    {
        Some(Ok(found)) => found,
        // Cannot tell: let the writer look.
        _ => true,
    }
}
