//! Opening a MetaStore handle from the `--metastore` setting.

use std::path::Path;
use std::sync::Arc;

use super::{
    EmbeddedMetaStore, MemoryStore, MetaError, MetaOptions, MetaResult, MetaStore,
    MeteredMetaStore, OxiaMetaStore,
};

/// Opens `embedded` (SQLite under `<data_dir>/meta`), `oxia://host:port/namespace`, or
/// `memory` / `memory://<name>`: a store in this process's memory, shared by every handle opened
/// with the same name in this process, never durable and invisible to other processes (for tests
/// and benchmarks; see `docs/metastore-memory.md`).
/// Every handle is metered (`docs/metrics.md`).
pub async fn open_meta_store(
    spec: &str,
    data_dir: &Path,
    options: MetaOptions,
) -> MetaResult<Arc<dyn MetaStore>> {
    let store = open_backend(spec, data_dir, options).await?;
    Ok(Arc::new(MeteredMetaStore::wrap(store)))
}

async fn open_backend(
    spec: &str,
    data_dir: &Path,
    options: MetaOptions,
) -> MetaResult<Arc<dyn MetaStore>> {
    if spec == "embedded" {
        return Ok(Arc::new(
            EmbeddedMetaStore::open_in_dir(data_dir.join("meta"), options).await?,
        ));
    }
    if spec.starts_with("oxia://") {
        return Ok(Arc::new(OxiaMetaStore::open_url(spec, &options).await?));
    }
    if let Some(name) = memory_store_name(spec) {
        return Ok(Arc::new(MemoryStore::process_wide(name).handle(options)));
    }
    Err(MetaError::InvalidArgument(format!(
        "metastore {spec:?}: expected `embedded`, `oxia://host:port/namespace` or `memory`"
    )))
}

/// `memory` is the store named "" and `memory://<name>` the store named `<name>`.
fn memory_store_name(spec: &str) -> Option<&str> {
    if spec == "memory" {
        return Some("");
    }
    spec.strip_prefix("memory://")
}
