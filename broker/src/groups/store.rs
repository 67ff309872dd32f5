//! Durable group state in the coordination MetaStore: one JSON record per group (generation,
//! protocol, members with their static ids and assignments) and one JSON record per committed
//! offset. Key layout in [`super::keys`].

use std::sync::Arc;

use bytes::Bytes;
use metastore::{Expect, MetaError, MetaStore, PutOptions};
use serde::{Deserialize, Serialize};

use super::keys;
use super::records::{decode, GroupRecords};

const SCAN_PAGE: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Meta(#[from] MetaError),
    #[error("group record {key} is unreadable: {reason}")]
    Corrupt { key: String, reason: String },
}

/// A group as persisted at the end of a generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRecord {
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub generation_id: i32,
    pub leader_id: Option<String>,
    pub members: Vec<MemberRecord>,
    /// When the group last became Empty (Kafka's `currentStateTimestamp`), the base of offset
    /// expiry; absent in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_since_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRecord {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocols: Vec<ProtocolRecord>,
    #[serde(with = "hex_bytes")]
    pub assignment: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolRecord {
    pub name: String,
    #[serde(with = "hex_bytes")]
    pub metadata: Bytes,
}

/// One committed offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetRecord {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp_ms: i64,
}

/// A committed offset with the version of its record, for conditional deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOffset {
    pub offset: CommittedOffset,
    pub version: i64,
}

/// A committed offset with the partition it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    pub topic: String,
    pub partition: i32,
    pub record: OffsetRecord,
}

#[derive(Clone)]
pub struct GroupStore {
    meta: Arc<dyn MetaStore>,
    records: GroupRecords,
}

impl GroupStore {
    pub fn new(meta: Arc<dyn MetaStore>) -> GroupStore {
        let records = GroupRecords::new(
            meta.clone(),
            "classic",
            keys::GROUPS_PREFIX,
            keys::GROUPS_END,
        );
        GroupStore { meta, records }
    }

    /// The group records, for what both kinds of group share.
    pub fn records(&self) -> &GroupRecords {
        &self.records
    }

    /// Every stored group with the version its record was read at.
    pub async fn load_all(&self) -> Result<Vec<(String, GroupRecord, i64)>, StoreError> {
        self.records.load_all().await
    }

    pub async fn load(&self, group_id: &str) -> Result<Option<(GroupRecord, i64)>, StoreError> {
        self.records.load(group_id).await
    }

    /// Writes the group record if the stored one is still at `expected_version` (absent when
    /// `None`), so that two coordinators never overwrite each other. Returns the new version.
    pub async fn save(
        &self,
        group_id: &str,
        record: &GroupRecord,
        expected_version: Option<i64>,
    ) -> Result<i64, StoreError> {
        self.records.save(group_id, record, expected_version).await
    }

    /// Deletes the group's offsets, then its record (in that order, so a crash in between
    /// leaves a visible group that can be deleted again, never orphaned offsets).
    pub async fn delete_group(
        &self,
        group_id: &str,
        version: Option<i64>,
    ) -> Result<(), StoreError> {
        let (min, max) = keys::group_offsets_range(group_id);
        self.meta.delete_range(&min, &max, None).await?;
        let Some(version) = version else {
            return Ok(());
        };
        match self
            .meta
            .delete(&keys::group_key(group_id), Expect::Version(version), None)
            .await
        {
            Ok(()) | Err(MetaError::KeyNotFound) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes offsets concurrently; one result per input, in input order.
    pub async fn commit_offsets(
        &self,
        group_id: &str,
        offsets: &[CommittedOffset],
    ) -> Vec<Result<(), StoreError>> {
        let writes = offsets.iter().map(|o| {
            let key = keys::offset_key(group_id, &o.topic, o.partition);
            let value = encode(&o.record);
            async move {
                self.meta.put(&key, value, PutOptions::default()).await?;
                Ok(())
            }
        });
        futures::future::join_all(writes).await
    }

    /// Every committed offset of the group, or only those of `topic` when given.
    pub async fn fetch_offsets(
        &self,
        group_id: &str,
        topic: Option<&str>,
    ) -> Result<Vec<CommittedOffset>, StoreError> {
        let stored = self.fetch_stored_offsets(group_id, topic).await?;
        Ok(stored.into_iter().map(|s| s.offset).collect())
    }

    /// Like [`GroupStore::fetch_offsets`], with each record's version.
    pub async fn fetch_stored_offsets(
        &self,
        group_id: &str,
        topic: Option<&str>,
    ) -> Result<Vec<StoredOffset>, StoreError> {
        let (mut start, end) = match topic {
            Some(topic) => keys::topic_offsets_range(group_id, topic),
            None => keys::group_offsets_range(group_id),
        };
        let mut out = Vec::new();
        loop {
            let page = self.meta.range_scan(&start, &end, None, SCAN_PAGE).await?;
            let full = page.len() == SCAN_PAGE;
            for record in &page {
                let (topic, partition) =
                    keys::topic_partition_of(&record.key).ok_or_else(|| StoreError::Corrupt {
                        key: record.key.clone(),
                        reason: "not an offset key".into(),
                    })?;
                out.push(StoredOffset {
                    offset: CommittedOffset {
                        topic,
                        partition,
                        record: decode(&record.key, &record.value)?,
                    },
                    version: record.version.version_id,
                });
            }
            match page.last() {
                Some(last) if full => start = format!("{}\u{1}", last.key),
                _ => break,
            }
        }
        Ok(out)
    }

    /// Deletes one committed offset if its record is still at `version`. `Ok(false)` when it
    /// changed (a commit raced) or is gone.
    pub async fn delete_offset_at(
        &self,
        group_id: &str,
        offset: &StoredOffset,
    ) -> Result<bool, StoreError> {
        let key = keys::offset_key(group_id, &offset.offset.topic, offset.offset.partition);
        match self
            .meta
            .delete(&key, Expect::Version(offset.version), None)
            .await
        {
            Ok(()) => Ok(true),
            Err(MetaError::KeyNotFound | MetaError::UnexpectedVersion) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Up to `limit` groups with their record versions, in key order, after the key `after`
    /// (see [`GroupRecords::scan_page`]).
    pub async fn scan_group_keys(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<(String, GroupRecord, i64)>, Option<String>), StoreError> {
        self.records.scan_page(after, limit).await
    }

    /// Deletes the group record (not its offsets) if it is still at `version`. `Ok(false)`
    /// when it changed or is gone.
    pub async fn delete_group_record(
        &self,
        group_id: &str,
        version: i64,
    ) -> Result<bool, StoreError> {
        match self
            .meta
            .delete(&keys::group_key(group_id), Expect::Version(version), None)
            .await
        {
            Ok(()) => Ok(true),
            Err(MetaError::KeyNotFound | MetaError::UnexpectedVersion) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes one committed offset; deleting an absent one is not an error.
    pub async fn delete_offset(
        &self,
        group_id: &str,
        topic: &str,
        partition: i32,
    ) -> Result<(), StoreError> {
        match self
            .meta
            .delete(
                &keys::offset_key(group_id, topic, partition),
                Expect::Any,
                None,
            )
            .await
        {
            Ok(()) | Err(MetaError::KeyNotFound) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

fn encode<T: Serialize>(value: &T) -> Bytes {
    // Plain data with string keys always serialises.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

/// Opaque client bytes (protocol metadata, assignments) as lowercase hex in JSON.
mod hex_bytes {
    use bytes::Bytes;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &Bytes, serializer: S) -> Result<S::Ok, S::Error> {
        let mut text = String::with_capacity(bytes.len() * 2);
        for byte in bytes.iter() {
            text.push_str(&format!("{byte:02x}"));
        }
        serializer.serialize_str(&text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Bytes, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.len() % 2 != 0 {
            return Err(D::Error::custom("odd hex length"));
        }
        (0..text.len())
            .step_by(2)
            .map(|i| {
                text.get(i..i + 2)
                    .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                    .ok_or_else(|| D::Error::custom("bad hex"))
            })
            .collect::<Result<Vec<u8>, _>>()
            .map(Bytes::from)
    }
}
