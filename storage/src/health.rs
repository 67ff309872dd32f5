//! The readiness checks both binaries share: the MetaStore answers a read and the object store
//! answers a metadata request, each through the process's own handle.

use std::sync::Arc;

use metastore::{Comparison, MetaStore};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use telemetry::ready::Readiness;

/// A key no one writes: reading it costs one round trip.
const PROBE_KEY: &str = "readyz/probe";

/// `metastore` and `object_store` checks.
pub fn readiness(meta: Arc<dyn MetaStore>, objects: Arc<dyn ObjectStore>) -> Readiness {
    Readiness::new()
        .check("metastore", move || metastore_answers(meta.clone()))
        .check("object_store", move || {
            object_store_answers(objects.clone())
        })
}

async fn metastore_answers(meta: Arc<dyn MetaStore>) -> Result<(), String> {
    meta.get(PROBE_KEY, Comparison::Equal, None)
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

async fn object_store_answers(objects: Arc<dyn ObjectStore>) -> Result<(), String> {
    match objects.head(&Path::from(PROBE_KEY)).await {
        Ok(_) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(error) => Err(error.to_string()),
    }
}
