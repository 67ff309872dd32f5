//! Finds WAL objects and the streams they hold. A listing only proposes candidates: what may be
//! deleted is decided against the index.

use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use storage::wal::format;

use crate::CompactorError;

pub struct WalObject {
    pub key: String,
    pub last_modified_ms: u64,
    pub streams: Vec<String>,
}

/// Every object under the WAL prefix with the streams its directory names. Objects whose
/// directory cannot be read are skipped (and logged): never deleted on a guess.
pub async fn scan(
    objects: &Arc<dyn ObjectStore>,
    wal_prefix: &str,
) -> Result<Vec<WalObject>, CompactorError> {
    let metas: Vec<_> = objects
        .list(Some(&Path::from(wal_prefix)))
        .try_collect()
        .await?;
    let mut out = Vec::with_capacity(metas.len());
    for meta in metas {
        let key = meta.location.to_string();
        match read_streams(objects, &meta.location, meta.size).await {
            Ok(mut streams) => {
                streams.sort();
                streams.dedup();
                out.push(WalObject {
                    key,
                    last_modified_ms: u64::try_from(meta.last_modified.timestamp_millis())
                        .unwrap_or(0),
                    streams,
                });
            }
            Err(e) => {
                tracing::warn!(object_key = %key, error = %e, "skipping unreadable wal object")
            }
        }
    }
    Ok(out)
}

async fn read_streams(
    objects: &Arc<dyn ObjectStore>,
    path: &Path,
    size: u64,
) -> Result<Vec<String>, CompactorError> {
    let footer_len = format::FOOTER_LEN as u64;
    if size < footer_len {
        return Err(CompactorError::Corrupt(format!("{path} is too short")));
    }
    let tail = objects.get_range(path, size - footer_len..size).await?;
    let footer = format::parse_footer(&tail).map_err(|e| CompactorError::Corrupt(e.to_string()))?;
    let start = footer.directory_offset;
    let dir = objects
        .get_range(path, start..start + u64::from(footer.directory_len))
        .await?;
    let slices = format::decode_directory(&dir, &footer)
        .map_err(|e| CompactorError::Corrupt(e.to_string()))?;
    Ok(slices.into_iter().map(|s| s.stream).collect())
}
