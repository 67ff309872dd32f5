//! Opening SQLite connections with the pragmas every connection needs, and the schema.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// How long a connection waits for another process's write lock before giving up. Group commits
/// are short, so waiting this long means the other side is stuck; the caller then sees
/// `Unavailable` (or its own request timeout, whichever comes first).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Enough for every distinct statement the writer and readers prepare.
const STATEMENT_CACHE_MAX: usize = 64;

/// Opens a connection in WAL mode with `synchronous=FULL`: every commit is fsynced before the
/// writer replies, because callers acknowledge Kafka produces on the strength of that reply.
pub(super) fn open_connection(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_MAX);
    let mode: String =
        while_busy(|| conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0)))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(rusqlite::Error::InvalidParameterName(format!(
            "journal_mode stayed {mode}, wal required for multi-process use"
        )));
    }
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

/// Runs `step` again while another process holds the lock it needs, for up to
/// [`BUSY_TIMEOUT`]: switching a new database to WAL takes an exclusive lock without calling
/// the busy handler, so two processes creating one store at once would otherwise fail.
fn while_busy<T>(mut step: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match step() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// Opens a connection that never writes (readers, the change-log poller).
pub(super) fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = open_connection(path)?;
    conn.pragma_update(None, "query_only", "ON")?;
    Ok(conn)
}

/// Creates the tables if missing. Safe to run from several processes at once.
pub(super) fn create_schema(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "
        -- sort_key is keys::sort_key(key): byte order of sort_key is Oxia's key order.
        CREATE TABLE IF NOT EXISTS kv (
            sort_key BLOB PRIMARY KEY NOT NULL,
            key TEXT NOT NULL,
            value BLOB NOT NULL,
            version_id INTEGER NOT NULL,
            modifications_count INTEGER NOT NULL,
            created_ms INTEGER NOT NULL,
            modified_ms INTEGER NOT NULL,
            session_id INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS kv_by_session ON kv(session_id) WHERE session_id IS NOT NULL;

        -- Store-wide counters; 'version_id' is the last version id handed out.
        CREATE TABLE IF NOT EXISTS counters (
            name TEXT PRIMARY KEY NOT NULL,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT OR IGNORE INTO counters(name, value) VALUES ('version_id', 0);

        -- AUTOINCREMENT so a reaped session's id is never handed out again.
        CREATE TABLE IF NOT EXISTS sessions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            timeout_ms INTEGER NOT NULL,
            deadline_ms INTEGER NOT NULL,
            created_ms INTEGER NOT NULL,
            pid INTEGER NOT NULL
        );

        -- Bounded change log that other processes poll for notifications.
        CREATE TABLE IF NOT EXISTS changes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            origin INTEGER NOT NULL,
            kind INTEGER NOT NULL,
            key TEXT NOT NULL,
            end_key TEXT,
            version_id INTEGER,
            created_ms INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS changes_by_time ON changes(created_ms);
        ",
    )?;
    tx.commit()
}
