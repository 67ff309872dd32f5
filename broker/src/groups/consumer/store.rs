//! The durable record of a consumer group: `consumer-groups/<group>` -> JSON. It holds what
//! members need to carry on after a coordinator restart or move (group epoch, subscriptions,
//! target and current assignments, member epochs); session deadlines restart from the load.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use metastore::{Expect, MetaError, MetaStore};
use serde::{Deserialize, Serialize};

use super::reconcile::Reconciliation;
use super::{Assignment, TopicsMeta};
use crate::groups::keys::encode_segment;
use crate::groups::records::GroupRecords;
use crate::groups::store::StoreError;

const PREFIX: &str = "consumer-groups/";
/// Upper bound of the depth-1 `consumer-groups/<group>` keys (see `groups::keys`).
const END: &str = "consumer-groups//";

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
    /// The topic names the member sent (its regex matches are in `regex_topics`).
    pub subscribed: BTreeSet<String>,
    /// Absent from records written before regex subscriptions.
    #[serde(default)]
    pub subscribed_regex: Option<String>,
    /// The topics the regex matched when last resolved, so that a restarted coordinator
    /// assigns from them before the next heartbeat resolves the regex again.
    #[serde(default)]
    pub regex_topics: BTreeSet<String>,
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
    records: GroupRecords,
}

impl ConsumerGroupStore {
    pub fn new(meta: Arc<dyn MetaStore>) -> ConsumerGroupStore {
        let records = GroupRecords::new(meta.clone(), "consumer", PREFIX, END);
        ConsumerGroupStore { meta, records }
    }

    /// The group records, for what both kinds of group share.
    pub fn records(&self) -> &GroupRecords {
        &self.records
    }

    /// Every stored consumer group with the version its record was read at.
    pub async fn load_all(&self) -> Result<Vec<(String, ConsumerGroupRecord, i64)>, StoreError> {
        self.records.load_all().await
    }

    pub async fn load(
        &self,
        group_id: &str,
    ) -> Result<Option<(ConsumerGroupRecord, i64)>, StoreError> {
        self.records.load(group_id).await
    }

    /// Writes the record if the stored one is still at `expected_version` (absent when
    /// `None`), so that two coordinators never overwrite each other. Returns the new version.
    pub async fn save(
        &self,
        group_id: &str,
        record: &ConsumerGroupRecord,
        expected_version: Option<i64>,
    ) -> Result<i64, StoreError> {
        self.records.save(group_id, record, expected_version).await
    }

    /// Up to `limit` consumer groups (id, whether it has members, record version) in key
    /// order after the key `after` (see [`GroupRecords::scan_page`]), and the cursor of the
    /// next page.
    pub async fn scan_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<(String, bool, i64)>, Option<String>), StoreError> {
        let (page, cursor) = self
            .records
            .scan_page::<ConsumerGroupRecord>(after, limit)
            .await?;
        let groups = page
            .into_iter()
            .map(|(group_id, group, version)| (group_id, !group.members.is_empty(), version))
            .collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::consumer::TopicMeta;
    use crate::groups::records::decode;
    use metastore::compare_keys;
    use std::cmp::Ordering;
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
                subscribed_regex: Some("t.*".into()),
                regex_topics: BTreeSet::from(["t1".to_string()]),
                server_assignor: Some("range".into()),
                reconciliation,
                left_static: false,
            }],
        };
        let bytes = serde_json::to_vec(&record).unwrap();
        let decoded: ConsumerGroupRecord = decode("k", &bytes).unwrap();
        assert_eq!(decoded, record);
    }

    #[test]
    fn member_record_written_before_regex_subscriptions_still_loads() {
        let old = br#"{"member_id":"m","instance_id":null,"rack_id":null,"client_id":"c",
            "client_host":"h","rebalance_timeout_ms":1000,"subscribed":["t"],
            "server_assignor":null,"reconciliation":RECONCILIATION,"left_static":false}"#;
        let reconciliation = serde_json::to_string(&Reconciliation::joining()).unwrap();
        let old = String::from_utf8(old.to_vec())
            .unwrap()
            .replace("RECONCILIATION", &reconciliation);
        let member: MemberRecord = serde_json::from_str(&old).unwrap();
        assert_eq!(member.subscribed, BTreeSet::from(["t".to_string()]));
        assert_eq!(member.subscribed_regex, None);
        assert!(member.regex_topics.is_empty());
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
