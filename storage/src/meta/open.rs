//! Opening a MetaStore handle from the `--metastore` setting.

use std::path::Path;
use std::sync::Arc;

use super::{EmbeddedMetaStore, MetaError, MetaOptions, MetaResult, MetaStore, OxiaMetaStore};

/// Opens `embedded` (SQLite under `<data_dir>/meta`) or `oxia://host:port/namespace`.
pub async fn open_meta_store(
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
    Err(MetaError::InvalidArgument(format!(
        "metastore {spec:?}: expected `embedded` or `oxia://host:port/namespace`"
    )))
}
