//! Every topic as an Iceberg v2 table whose data files are exactly the Parquet files the
//! compactor writes and Kafka consumers read back: one copy of the data. The compactor calls
//! [`TableStore::sync`] in its pass; brokers serve the tables to engines through the REST
//! catalog ([`rest`]); [`sql`] keeps a SQL catalog beside an embedded store. See
//! `docs/iceberg.md`.

pub mod catalog;
mod commit;
pub mod deletes;
mod error;
pub mod manifest;
pub mod metadata;
pub mod rest;
pub mod schema;
pub mod sql;
pub mod typed;

pub use commit::{LiveFile, Loaded, Synced, TableStore, METADATA_VERSIONS_KEPT};
pub use error::TableError;

/// The absolute URL engines open the store's objects by, from the store URL the processes
/// were given (`file://./data/objects` becomes `file:///…/data/objects`).
pub fn base_url(object_store_url: &str) -> String {
    if let Some(rest) = object_store_url.strip_prefix("file://") {
        let path = std::path::Path::new(rest);
        let absolute = path
            .canonicalize()
            .or_else(|_| std::path::absolute(path))
            .unwrap_or_else(|_| path.to_path_buf());
        return format!("file://{}", absolute.display());
    }
    let trimmed = object_store_url.trim_end_matches('/');
    if trimmed.ends_with(':') {
        // `memory://`: the scheme alone.
        return object_store_url.to_string();
    }
    trimmed.to_string()
}

/// Dies here, as a SIGKILL would, when the environment variable `DISKLESS_CRASH_AT` names
/// `step`. Debug builds only: `tests/e2e/test_iceberg_typed.py` kills the compactor at every
/// step of a retype and a table commit in turn (its `CRASH_POINTS` name them); release builds
/// compile it to nothing.
pub fn crash_point(step: &str) {
    #[cfg(debug_assertions)]
    if std::env::var("DISKLESS_CRASH_AT").is_ok_and(|at| at == step) {
        tracing::warn!(step, "crash point reached: killing this process");
        let pid = std::process::id().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid])
            .status();
        std::process::abort();
    }
    #[cfg(not(debug_assertions))]
    let _ = step;
}
