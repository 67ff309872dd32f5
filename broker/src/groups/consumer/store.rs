//! The durable record of a consumer group: `consumer-groups/<group>` -> JSON. It holds what
//! members need to carry on after a coordinator restart or move (group epoch, subscriptions,
//! target and current assignments, member epochs); session deadlines restart from the load.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use storage::meta::{Comparison, Expect, MetaError, MetaStore, PutOptions};

use super::reconcile::Reconciliation;
use super::{Assignment, TopicsMeta};
use crate::groups::keys::{decode_segment, encode_segment};
use crate::groups::store::StoreError;

const PREFIX: &str = "consumer-groups/";
/// Upper bound of the depth-1 `consumer-groups/<group>` keys (see `groups::keys`).
const END: &str = "consumer-groups//";
const SCAN_PAGE: usize = 1000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerGroupRecord {
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    /// Topic metadata the target assignment was computed from.
    pub topics: TopicsMeta,
    pub target: BTreeMap<String, Assignment>,
    pub members: Vec<MemberRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRecord {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub subscribed: BTreeSet<String>,
    pub server_assignor: Option<String>,
    pub reconciliation: Reconciliation,
    /// A static member that left with epoch -2 and may come back under its instance id.
    pub left_static: bool,
}

pub fn group_key(group_id: &str) -> String {
    format!("{PREFIX}{}", encode_segment(group_id))
}

#[derive(Clone)]
pub struct ConsumerGroupStore {
    meta: Arc<dyn MetaStore>,
}

impl ConsumerGroupStore {
    pub fn new(meta: Arc<dyn MetaStore>) -> ConsumerGroupStore {
        ConsumerGroupStore { meta }
    }

    /// Every stored consumer group with the version its record was read at.
    pub async fn load_all(&self) -> Result<Vec<(String, ConsumerGroupRecord, i64)>, StoreError> {
        let mut groups = Vec::new();
        let mut start = PREFIX.to_string();
        loop {
            let page = self.meta.range_scan(&start, END, None, SCAN_PAGE).await?;
            let full = page.len() == SCAN_PAGE;
            for record in &page {
                let group_id = record
                    .key
                    .strip_prefix(PREFIX)
                    .and_then(decode_segment)
                    .ok_or_else(|| StoreError::Corrupt {
                        key: record.key.clone(),
                        reason: "not a consumer group key".into(),
                    })?;
                groups.push((
                    group_id,
                    decode(&record.key, &record.value)?,
                    record.version.version_id,
                ));
            }
            match page.last() {
                // Encoded keys never contain U+0001, so this is the smallest key after `last`.
                Some(last) if full => start = format!("{}\u{1}", last.key),
                _ => break,
            }
        }
        Ok(groups)
    }

    pub async fn load(
        &self,
        group_id: &str,
    ) -> Result<Option<(ConsumerGroupRecord, i64)>, StoreError> {
        let key = group_key(group_id);
        match self.meta.get(&key, Comparison::Equal, None).await? {
            Some(record) => Ok(Some((
                decode(&key, &record.value)?,
                record.version.version_id,
            ))),
            None => Ok(None),
        }
    }

    /// Writes the record if the stored one is still at `expected_version` (absent when
    /// `None`), so that two coordinators never overwrite each other. Returns the new version.
    pub async fn save(
        &self,
        group_id: &str,
        record: &ConsumerGroupRecord,
        expected_version: Option<i64>,
    ) -> Result<i64, StoreError> {
        let value = serde_json::to_vec(record).map_err(|e| StoreError::Corrupt {
            key: group_key(group_id),
            reason: e.to_string(),
        })?;
        let options = PutOptions {
            expect: expected_version.map_or(Expect::NotExists, Expect::Version),
            ..Default::default()
        };
        let put = self
            .meta
            .put(&group_key(group_id), Bytes::from(value), options)
            .await?;
        Ok(put.version.version_id)
    }

    /// Up to `limit` consumer groups (id, whether it has members, record version) in key
    /// order after the key `after` (from the start when `None`; unreadable records are
    /// skipped), and the cursor of the next
    /// page (`None` when the range is exhausted).
    pub async fn scan_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<(String, bool, i64)>, Option<String>), StoreError> {
        let start = match after {
            // Encoded keys never contain U+0001, so this is the smallest key after `after`.
            Some(after) => format!("{after}\u{1}"),
            None => PREFIX.to_string(),
        };
        let limit = limit.max(1);
        let page = self.meta.range_scan(&start, END, None, limit).await?;
        let mut groups = Vec::with_capacity(page.len());
        for record in &page {
            // One unreadable record must not stop the scan over all the others.
            let decoded = record
                .key
                .strip_prefix(PREFIX)
                .and_then(decode_segment)
                .ok_or_else(|| StoreError::Corrupt {
                    key: record.key.clone(),
                    reason: "not a consumer group key".into(),
                })
                .and_then(|id| Ok((id, decode(&record.key, &record.value)?)));
            match decoded {
                Ok((group_id, group)) => groups.push((
                    group_id,
                    !group.members.is_empty(),
                    record.version.version_id,
                )),
                Err(error) => tracing::warn!(%error, "consumer group record skipped"),
            }
        }
        let cursor = match page.last() {
            Some(last) if page.len() == limit => Some(last.key.clone()),
            _ => None,
        };
        Ok((groups, cursor))
    }

    /// Deletes the record (offsets are the classic store's business).
    pub async fn delete(&self, group_id: &str, version: Option<i64>) -> Result<(), StoreError> {
        let expect = version.map_or(Expect::Any, Expect::Version);
        match self.meta.delete(&group_key(group_id), expect, None).await {
            Ok(()) | Err(MetaError::KeyNotFound) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

fn decode(key: &str, value: &[u8]) -> Result<ConsumerGroupRecord, StoreError> {
    serde_json::from_slice(value).map_err(|e| StoreError::Corrupt {
        key: key.to_string(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::consumer::TopicMeta;
    use std::cmp::Ordering;
    use storage::meta::compare_keys;
    use uuid::Uuid;

    #[test]
    fn record_round_trips_through_json() {
        let topic = Uuid::from_u128(42);
        let mut assignment = Assignment::new();
        assignment.insert(topic, BTreeSet::from([0, 3]));
        let mut reconciliation = Reconciliation::joining();
        reconciliation.assigned = assignment.clone();
        let record = ConsumerGroupRecord {
            group_epoch: 4,
            assignment_epoch: 4,
            topics: [(
                "t".to_string(),
                TopicMeta {
                    id: topic,
                    name: "t".into(),
                    partitions: 6,
                },
            )]
            .into(),
            target: [("m".to_string(), assignment)].into(),
            members: vec![MemberRecord {
                member_id: "m".into(),
                instance_id: Some("i".into()),
                rack_id: None,
                client_id: "c".into(),
                client_host: "h".into(),
                rebalance_timeout_ms: 300_000,
                subscribed: BTreeSet::from(["t".to_string()]),
                server_assignor: Some("range".into()),
                reconciliation,
                left_static: false,
            }],
        };
        let bytes = serde_json::to_vec(&record).unwrap();
        assert_eq!(decode("k", &bytes).unwrap(), record);
    }

    #[test]
    fn consumer_group_keys_stay_out_of_the_classic_groups_range() {
        use crate::groups::keys::{GROUPS_END, GROUPS_PREFIX};
        for group in ["g", "a/b", "%"] {
            let key = group_key(group);
            let inside = |min: &str, max: &str| {
                compare_keys(&key, min) != Ordering::Less
                    && compare_keys(&key, max) == Ordering::Less
            };
            assert!(inside(PREFIX, END), "{key}");
            assert!(!inside(GROUPS_PREFIX, GROUPS_END), "{key}");
        }
    }
}
