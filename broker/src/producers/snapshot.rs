//! A partition's producer table persisted in the MetaStore under `s/<stream>/producers`, with
//! the offset it covers: recovery loads it and replays only the index entries after that
//! offset, so a producer is remembered however far back its last batch lies.
//!
//! The value is JSON (small, readable with any Oxia tool), bounded by keeping at most
//! [`SNAPSHOT_PRODUCERS_MAX`] producers, the most recently seen ones.

use std::sync::Arc;

use bytes::Bytes;
use metastore::{Comparison, Expect, MetaError, MetaStore, PutOptions};
use serde::{Deserialize, Serialize};
use storage::stream::producers_key;

use super::state::{BatchView, ProducerView};

/// Producers kept per snapshot; less recently seen ones are left out (unknown after recovery,
/// which Kafka allows for producers whose state was removed).
pub const SNAPSHOT_PRODUCERS_MAX: usize = 2_000;
/// A snapshot value larger than this is neither written nor read.
pub const SNAPSHOT_BYTES_MAX: usize = 1 << 20;
const FORMAT_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("metadata store: {0}")]
    Meta(#[from] MetaError),
    #[error("undecodable producer snapshot: {0}")]
    Corrupt(String),
    #[error("producer snapshot of {bytes} bytes exceeds {SNAPSHOT_BYTES_MAX}")]
    TooLarge { bytes: usize },
}

/// The producer table as of `covered_offset`: every idempotent batch below it is reflected, none
/// at or above it. Batch slots are absolute base offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub covered_offset: u64,
    pub producers: Vec<ProducerView<u64>>,
}

/// (first sequence, last sequence, base offset).
type StoredBatch = (i32, i32, u64);

#[derive(Serialize, Deserialize)]
struct StoredProducer {
    id: i64,
    epoch: i16,
    last_seq: Option<i32>,
    seen_ms: u64,
    batches: Vec<StoredBatch>,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    version: u32,
    covered_offset: u64,
    producers: Vec<StoredProducer>,
}

impl Snapshot {
    pub fn encode(&self) -> Result<Bytes, SnapshotError> {
        let stored = Stored {
            version: FORMAT_VERSION,
            covered_offset: self.covered_offset,
            producers: self
                .producers
                .iter()
                .take(SNAPSHOT_PRODUCERS_MAX)
                .map(|p| StoredProducer {
                    id: p.producer_id,
                    epoch: p.epoch,
                    last_seq: p.last_seq,
                    seen_ms: p.last_seen_ms,
                    batches: p
                        .batches
                        .iter()
                        .map(|b| (b.first_seq, b.last_seq, b.slot + b.offset_delta))
                        .collect(),
                })
                .collect(),
        };
        let bytes =
            serde_json::to_vec(&stored).map_err(|e| SnapshotError::Corrupt(e.to_string()))?;
        if bytes.len() > SNAPSHOT_BYTES_MAX {
            return Err(SnapshotError::TooLarge { bytes: bytes.len() });
        }
        Ok(Bytes::from(bytes))
    }

    pub fn decode(value: &[u8]) -> Result<Snapshot, SnapshotError> {
        if value.len() > SNAPSHOT_BYTES_MAX {
            return Err(SnapshotError::TooLarge { bytes: value.len() });
        }
        let stored: Stored =
            serde_json::from_slice(value).map_err(|e| SnapshotError::Corrupt(e.to_string()))?;
        if stored.version != FORMAT_VERSION {
            return Err(SnapshotError::Corrupt(format!(
                "unknown format version {}",
                stored.version
            )));
        }
        if stored.producers.len() > SNAPSHOT_PRODUCERS_MAX {
            return Err(SnapshotError::Corrupt(format!(
                "{} producers, at most {SNAPSHOT_PRODUCERS_MAX}",
                stored.producers.len()
            )));
        }
        let producers = stored
            .producers
            .into_iter()
            .map(|p| ProducerView {
                producer_id: p.id,
                epoch: p.epoch,
                last_seq: p.last_seq,
                last_seen_ms: p.seen_ms,
                batches: p
                    .batches
                    .into_iter()
                    .map(|(first_seq, last_seq, offset)| BatchView {
                        first_seq,
                        last_seq,
                        slot: offset,
                        offset_delta: 0,
                    })
                    .collect(),
            })
            .collect();
        Ok(Snapshot {
            covered_offset: stored.covered_offset,
            producers,
        })
    }
}

/// The stream's snapshot, if one was written.
pub async fn load(
    meta: &Arc<dyn MetaStore>,
    stream: &str,
) -> Result<Option<Snapshot>, SnapshotError> {
    let key = producers_key(stream);
    match meta.get(&key, Comparison::Equal, Some(stream)).await? {
        None => Ok(None),
        Some(record) => Snapshot::decode(&record.value).map(Some),
    }
}

/// Writes `snapshot` unless the stored one already covers as much or more (another broker that
/// led the partition later). Returns whether it was written.
pub async fn store(
    meta: &Arc<dyn MetaStore>,
    stream: &str,
    snapshot: &Snapshot,
) -> Result<bool, SnapshotError> {
    let key = producers_key(stream);
    let value = snapshot.encode()?;
    let expect = match meta.get(&key, Comparison::Equal, Some(stream)).await? {
        None => Expect::NotExists,
        Some(record) => {
            let newer = Snapshot::decode(&record.value)
                .is_ok_and(|s| s.covered_offset >= snapshot.covered_offset);
            if newer {
                return Ok(false);
            }
            Expect::Version(record.version.version_id)
        }
    };
    let options = PutOptions {
        expect,
        partition_key: Some(stream.to_string()),
        ..Default::default()
    };
    match meta.put(&key, value, options).await {
        Ok(_) => Ok(true),
        // Someone wrote a snapshot meanwhile; theirs is at least as recent as the table it
        // was taken from, so leaving it is safe.
        Err(MetaError::UnexpectedVersion) | Err(MetaError::KeyNotFound) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Removes the stream's snapshot (the partition was deleted).
pub async fn delete(meta: &Arc<dyn MetaStore>, stream: &str) -> Result<(), SnapshotError> {
    match meta
        .delete(&producers_key(stream), Expect::Any, Some(stream))
        .await
    {
        Ok(()) | Err(MetaError::KeyNotFound) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn producer(id: i64, seen_ms: u64) -> ProducerView<u64> {
        ProducerView {
            producer_id: id,
            epoch: 2,
            last_seq: Some(9),
            last_seen_ms: seen_ms,
            batches: vec![BatchView {
                first_seq: 5,
                last_seq: 9,
                slot: 100,
                offset_delta: 3,
            }],
        }
    }

    #[test]
    fn a_snapshot_survives_the_round_trip_with_absolute_offsets() {
        let snapshot = Snapshot {
            covered_offset: 200,
            producers: vec![producer(7, 50)],
        };
        let decoded = Snapshot::decode(&snapshot.encode().unwrap()).unwrap();
        assert_eq!(decoded.covered_offset, 200);
        assert_eq!(decoded.producers[0].batches[0].slot, 103);
        assert_eq!(decoded.producers[0].batches[0].offset_delta, 0);
        assert_eq!(decoded.producers[0].epoch, 2);
    }

    #[test]
    fn a_snapshot_keeps_at_most_the_producer_limit() {
        let snapshot = Snapshot {
            covered_offset: 1,
            producers: (0..i64::try_from(SNAPSHOT_PRODUCERS_MAX).unwrap() + 10)
                .map(|i| producer(i, 1))
                .collect(),
        };
        let decoded = Snapshot::decode(&snapshot.encode().unwrap()).unwrap();
        assert_eq!(decoded.producers.len(), SNAPSHOT_PRODUCERS_MAX);
    }

    #[test]
    fn garbage_is_refused() {
        assert!(matches!(
            Snapshot::decode(b"{\"version\":99,\"covered_offset\":1,\"producers\":[]}"),
            Err(SnapshotError::Corrupt(_))
        ));
        assert!(Snapshot::decode(b"not json").is_err());
    }
}
