//! Producer id allocation: blocks of ids reserved from the MetaStore with a conditional put,
//! so ids are unique across brokers and restarts (a restart wastes the rest of its block).

use std::sync::Arc;

use bytes::Bytes;
use metastore::{Comparison, Expect, MetaError, MetaStore, PutOptions};
use tokio::sync::Mutex;

const NEXT_ID_KEY: &str = "producer-ids/next";
/// Ids reserved per MetaStore round trip.
const BLOCK_IDS: i64 = 1000;
/// Conditional-put attempts before giving up under contention.
const RESERVE_ATTEMPTS_MAX: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum IdError {
    #[error("metadata store: {0}")]
    Meta(#[from] MetaError),
    #[error("stored next producer id is not a number")]
    CorruptCounter,
    #[error("producer id block not reserved after {RESERVE_ATTEMPTS_MAX} contended attempts")]
    Contended,
    #[error("producer ids exhausted")]
    Exhausted,
}

pub struct IdAllocator {
    meta: Arc<dyn MetaStore>,
    /// `[next, end)` of the block in hand.
    block: Mutex<(i64, i64)>,
}

impl IdAllocator {
    pub fn new(meta: Arc<dyn MetaStore>) -> Self {
        IdAllocator {
            meta,
            block: Mutex::new((0, 0)),
        }
    }

    pub async fn next(&self) -> Result<i64, IdError> {
        let mut block = self.block.lock().await;
        if block.0 >= block.1 {
            *block = self.reserve().await?;
        }
        let id = block.0;
        block.0 += 1;
        Ok(id)
    }

    async fn reserve(&self) -> Result<(i64, i64), IdError> {
        for _ in 0..RESERVE_ATTEMPTS_MAX {
            let current = self.meta.get(NEXT_ID_KEY, Comparison::Equal, None).await?;
            let (expect, start) = match &current {
                None => (Expect::NotExists, 0),
                Some(record) => (
                    Expect::Version(record.version.version_id),
                    std::str::from_utf8(&record.value)
                        .ok()
                        .and_then(|s| s.parse::<i64>().ok())
                        .filter(|n| *n >= 0)
                        .ok_or(IdError::CorruptCounter)?,
                ),
            };
            let end = start.checked_add(BLOCK_IDS).ok_or(IdError::Exhausted)?;
            let options = PutOptions {
                expect,
                ..Default::default()
            };
            match self
                .meta
                .put(NEXT_ID_KEY, Bytes::from(end.to_string()), options)
                .await
            {
                Ok(_) => {
                    tracing::debug!(start, end, "reserved producer id block");
                    return Ok((start, end));
                }
                // Another broker reserved a block meanwhile: read again.
                Err(MetaError::UnexpectedVersion) | Err(MetaError::KeyNotFound) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(IdError::Contended)
    }
}
