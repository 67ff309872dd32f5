//! Committed-offset expiry through the coordinator, on a real embedded MetaStore, under a
//! hand-moved clock.

use std::sync::Arc;

use bytes::Bytes;
use metastore::embedded::EmbeddedMetaStore;
use metastore::{MetaOptions, MetaStore};

use super::clock::ManualClock;
use super::consumer::group::{Heartbeat, JOIN_EPOCH, LEAVE_EPOCH};
use super::consumer::{Assignment, ConsumerGroupConfig, TopicMeta};
use super::expiry::ExpiryCursor;
use super::group::{GroupState, JoinRequest, SyncRequest};
use super::member::Protocol;
use super::store::{CommittedOffset, OffsetRecord};
use super::{GroupConfig, GroupCoordinator};

const T0: u64 = 1_700_000_000_000;
const RETENTION_MS: u64 = 60 * 60 * 1000;
const MINUTE_MS: u64 = 60_000;
/// Session and rebalance timeout of members that must outlive every clock jump of a test: the
/// timer tasks tick once at start, at a moment a test does not choose.
const LONG_TIMEOUT_MS: i32 = 24 * 60 * 60 * 1000;

struct Env {
    _dir: tempfile::TempDir,
    meta: Arc<dyn MetaStore>,
    clock: Arc<ManualClock>,
}

impl Env {
    async fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let meta = EmbeddedMetaStore::open_in_dir(dir.path(), MetaOptions::default())
            .await
            .unwrap();
        Env {
            _dir: dir,
            meta: Arc::new(meta),
            clock: Arc::new(ManualClock::new(T0)),
        }
    }

    async fn coordinator(&self, config: GroupConfig) -> Arc<GroupCoordinator> {
        GroupCoordinator::open(self.meta.clone(), config, self.clock.clone())
            .await
            .unwrap()
    }
}

fn config() -> GroupConfig {
    GroupConfig {
        initial_rebalance_delay_ms: 0,
        max_session_timeout_ms: i32::MAX,
        offsets_retention_ms: RETENTION_MS,
        // Timers only run when a test asks: the clock is moved by hand. Both protocols: a
        // consumer-group tick racing a test's clock jump expired a member the test still used.
        tick_interval_ms: 3_600_000,
        consumer: ConsumerGroupConfig {
            tick_interval_ms: 3_600_000,
            session_timeout_ms: LONG_TIMEOUT_MS,
            ..ConsumerGroupConfig::default()
        },
        ..GroupConfig::default()
    }
}

fn offset(topic: &str, partition: i32, value: i64) -> CommittedOffset {
    CommittedOffset {
        topic: topic.into(),
        partition,
        record: OffsetRecord {
            offset: value,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp_ms: 0,
        },
    }
}

fn everything(_: &str) -> bool {
    true
}

/// Runs expiry until a cycle over every group completes.
async fn expire(coordinator: &GroupCoordinator) -> (usize, usize) {
    let mut cursor = ExpiryCursor::default();
    let (mut offsets, mut groups) = (0, 0);
    for _ in 0..100 {
        let report = coordinator
            .expire_offsets(&everything, &mut cursor)
            .await
            .unwrap();
        offsets += report.offsets_deleted;
        groups += report.groups_deleted;
        if report.cycle_complete {
            return (offsets, groups);
        }
    }
    panic!("expiry never completed a cycle");
}

async fn committed(coordinator: &GroupCoordinator, group: &str) -> Vec<i64> {
    let mut offsets: Vec<i64> = coordinator
        .fetch_offsets(group, None)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.record.offset)
        .collect();
    offsets.sort();
    offsets
}

/// A one-member classic group, stable; returns the member id and generation.
async fn stable_member(coordinator: &GroupCoordinator, group: &str) -> (String, i32) {
    stable_member_with(coordinator, group, Bytes::from_static(b"m"), 10_000).await
}

/// A one-member classic group of protocol type "consumer" whose member sends `metadata`.
async fn stable_member_with(
    coordinator: &GroupCoordinator,
    group: &str,
    metadata: Bytes,
    session_timeout_ms: i32,
) -> (String, i32) {
    let join = JoinRequest {
        member_id: String::new(),
        group_instance_id: None,
        client_id: "client".into(),
        client_host: String::new(),
        session_timeout_ms,
        rebalance_timeout_ms: 10_000,
        protocol_type: "consumer".into(),
        protocols: vec![Protocol {
            name: "range".into(),
            metadata,
        }],
        require_known_member_id: false,
        supports_skip_assignment: false,
    };
    let joined = coordinator.join(group, join).await;
    assert_eq!(joined.error, None);
    let synced = coordinator
        .sync(
            group,
            SyncRequest {
                member_id: joined.member_id.clone(),
                group_instance_id: None,
                generation_id: joined.generation_id,
                protocol_type: Some("consumer".into()),
                protocol_name: Some("range".into()),
                assignments: vec![(joined.member_id.clone(), Bytes::from_static(b"a"))],
            },
        )
        .await;
    assert_eq!(synced.error, None);
    (joined.member_id, joined.generation_id)
}

#[tokio::test]
async fn standalone_offsets_expire_a_retention_after_their_commit_and_the_group_goes() {
    let env = Env::new().await;
    let coordinator = env.coordinator(config()).await;
    let results = coordinator
        .commit_offsets(
            "solo",
            "",
            None,
            -1,
            &[offset("t", 0, 5), offset("t", 1, 7)],
        )
        .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    env.clock.advance_ms(RETENTION_MS - 1);
    assert_eq!(expire(&coordinator).await, (0, 0));
    assert_eq!(committed(&coordinator, "solo").await, vec![5, 7]);
    env.clock.advance_ms(1);
    assert_eq!(expire(&coordinator).await, (2, 1));
    assert!(committed(&coordinator, "solo").await.is_empty());
    assert!(coordinator.describe("solo").await.unwrap().is_none());
    assert!(coordinator.list().await.is_empty());
}

#[tokio::test]
async fn emptied_group_expires_from_when_it_became_empty_while_an_active_group_keeps_offsets() {
    let env = Env::new().await;
    let coordinator = env.coordinator(config()).await;
    let unreadable = || Bytes::from_static(b"m");
    let (left, left_generation) =
        stable_member_with(&coordinator, "left", unreadable(), LONG_TIMEOUT_MS).await;
    let (active, active_generation) =
        stable_member_with(&coordinator, "active", unreadable(), LONG_TIMEOUT_MS).await;
    let commit = |group: &'static str, member: String, generation: i32| {
        let coordinator = coordinator.clone();
        async move {
            let results = coordinator
                .commit_offsets(group, &member, None, generation, &[offset("t", 0, 42)])
                .await;
            assert!(results.iter().all(Result::is_ok), "{results:?}");
        }
    };
    commit("left", left.clone(), left_generation).await;
    commit("active", active.clone(), active_generation).await;
    env.clock.advance_ms(30 * MINUTE_MS);
    let results = coordinator.leave("left", &[(left, None)]).await.unwrap();
    assert_eq!(results, vec![Ok(())]);
    let description = coordinator.describe("left").await.unwrap().unwrap();
    assert_eq!(description.state, GroupState::Empty);

    // A retention after the commit, but not yet after the group emptied.
    env.clock.advance_ms(RETENTION_MS - 30 * MINUTE_MS);
    assert_eq!(expire(&coordinator).await, (0, 0));
    assert_eq!(committed(&coordinator, "left").await, vec![42]);

    env.clock.advance_ms(30 * MINUTE_MS);
    assert_eq!(expire(&coordinator).await, (1, 1));
    assert!(committed(&coordinator, "left").await.is_empty());
    assert!(coordinator.describe("left").await.unwrap().is_none());
    assert_eq!(committed(&coordinator, "active").await, vec![42]);
    let listed: Vec<String> = coordinator
        .list()
        .await
        .into_iter()
        .map(|g| g.group_id)
        .collect();
    assert_eq!(listed, vec!["active".to_string()]);
}

#[tokio::test]
async fn the_time_a_group_became_empty_survives_a_restart() {
    let env = Env::new().await;
    let coordinator = env.coordinator(config()).await;
    let (member, generation) = stable_member(&coordinator, "g").await;
    let results = coordinator
        .commit_offsets("g", &member, None, generation, &[offset("t", 0, 9)])
        .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    env.clock.advance_ms(30 * MINUTE_MS);
    coordinator.leave("g", &[(member, None)]).await.unwrap();
    coordinator.shutdown().await;
    drop(coordinator);

    env.clock.advance_ms(RETENTION_MS - 1);
    let restarted = env.coordinator(config()).await;
    assert_eq!(expire(&restarted).await, (0, 0));
    assert_eq!(committed(&restarted, "g").await, vec![9]);
    env.clock.advance_ms(1);
    assert_eq!(expire(&restarted).await, (1, 1));
    assert!(committed(&restarted, "g").await.is_empty());
}

#[tokio::test]
async fn groups_coordinated_elsewhere_are_left_alone() {
    let env = Env::new().await;
    let coordinator = env.coordinator(config()).await;
    for group in ["mine", "theirs"] {
        let results = coordinator
            .commit_offsets(group, "", None, -1, &[offset("t", 0, 1)])
            .await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
    }
    env.clock.advance_ms(RETENTION_MS);
    let mut cursor = ExpiryCursor::default();
    let report = coordinator
        .expire_offsets(&|group: &str| group == "mine", &mut cursor)
        .await
        .unwrap();
    assert_eq!((report.offsets_deleted, report.groups_deleted), (1, 1));
    assert!(committed(&coordinator, "mine").await.is_empty());
    assert_eq!(committed(&coordinator, "theirs").await, vec![1]);
}

#[tokio::test]
async fn runs_are_bounded_and_resume_where_the_last_one_stopped() {
    let env = Env::new().await;
    let coordinator = env
        .coordinator(GroupConfig {
            expiry_groups_per_run_max: 2,
            ..config()
        })
        .await;
    for i in 0..5 {
        let group = format!("g{i}");
        let results = coordinator
            .commit_offsets(&group, "", None, -1, &[offset("t", 0, i)])
            .await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
    }
    env.clock.advance_ms(RETENTION_MS);
    let mut cursor = ExpiryCursor::default();
    let mut runs = 0;
    let mut deleted = 0;
    loop {
        let report = coordinator
            .expire_offsets(&everything, &mut cursor)
            .await
            .unwrap();
        runs += 1;
        assert!(report.groups_examined <= 2, "{report:?}");
        deleted += report.groups_deleted;
        if report.cycle_complete {
            break;
        }
        assert!(runs < 10, "no end");
    }
    assert_eq!(deleted, 5);
    assert!(runs >= 3, "{runs} runs");
    for i in 0..5 {
        assert!(committed(&coordinator, &format!("g{i}")).await.is_empty());
    }
}

#[tokio::test]
async fn a_fresh_commit_keeps_that_offset_and_its_group() {
    let env = Env::new().await;
    let coordinator = env.coordinator(config()).await;
    let results = coordinator
        .commit_offsets("g", "", None, -1, &[offset("t", 0, 1), offset("t", 1, 1)])
        .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    env.clock.advance_ms(RETENTION_MS);
    // A fresh commit of one partition restarts that offset's clock only.
    let results = coordinator
        .commit_offsets("g", "", None, -1, &[offset("t", 1, 2)])
        .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(expire(&coordinator).await, (1, 0));
    assert_eq!(committed(&coordinator, "g").await, vec![2]);
    assert!(coordinator.describe("g").await.unwrap().is_some());
}

fn topics(name: &str) -> Option<TopicMeta> {
    (name == "t").then(|| TopicMeta {
        id: uuid::Uuid::from_u128(7),
        name: "t".into(),
        partitions: 2,
    })
}

#[tokio::test]
async fn empty_consumer_protocol_group_loses_its_offsets_and_then_itself() {
    let env = Env::new().await;
    let coordinator = env.coordinator(config()).await;
    let consumer = coordinator.consumer().clone();
    let joined = consumer
        .heartbeat(
            "kip848",
            Heartbeat {
                member_id: "m1".into(),
                member_epoch: JOIN_EPOCH,
                rebalance_timeout_ms: 10_000,
                subscribed_topic_names: Some(vec!["t".into()]),
                owned: Some(Assignment::new()),
                ..Heartbeat::default()
            },
            &topics,
        )
        .await
        .unwrap();
    let results = coordinator
        .commit_offsets(
            "kip848",
            "m1",
            None,
            joined.member_epoch,
            &[offset("t", 0, 3)],
        )
        .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    // Members keep their offsets however old.
    env.clock.advance_ms(RETENTION_MS);
    assert_eq!(expire(&coordinator).await, (0, 0));
    assert_eq!(committed(&coordinator, "kip848").await, vec![3]);
    consumer
        .heartbeat(
            "kip848",
            Heartbeat {
                member_id: "m1".into(),
                member_epoch: LEAVE_EPOCH,
                ..Heartbeat::default()
            },
            &topics,
        )
        .await
        .unwrap();
    assert_eq!(expire(&coordinator).await, (1, 1));
    assert!(committed(&coordinator, "kip848").await.is_empty());
    assert!(consumer.describe("kip848").await.unwrap().is_none());
}

#[tokio::test]
async fn an_unreadable_group_record_does_not_stop_expiry() {
    let env = Env::new().await;
    let coordinator = env.coordinator(config()).await;
    env.meta
        .put(
            &super::keys::group_key("broken"),
            Bytes::from_static(b"not json"),
            metastore::PutOptions::default(),
        )
        .await
        .unwrap();
    let results = coordinator
        .commit_offsets("solo", "", None, -1, &[offset("t", 0, 5)])
        .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    env.clock.advance_ms(RETENTION_MS);
    assert_eq!(expire(&coordinator).await, (1, 1));
}

#[tokio::test]
async fn a_broker_that_no_longer_coordinates_a_group_drops_it_instead_of_expiring_its_members() {
    let env = Env::new().await;
    let live = env.coordinator(config()).await;
    let (member_id, _) = stable_member(&live, "g").await;
    // Another broker loaded the group at start-up; the placement names `live` coordinator.
    let stale = env.coordinator(config()).await;
    stale.set_ownership(Arc::new(|_: &str| false));
    env.clock.advance_ms(60_000); // past the member's 10 s session on the stale copy
    stale.tick_all().await;
    // Nothing was written: a fresh load still sees the live coordinator's member.
    let fresh = env.coordinator(config()).await;
    let description = fresh.describe("g").await.unwrap().unwrap();
    assert_eq!(description.state, GroupState::Stable);
    assert_eq!(description.members.len(), 1);
    assert_eq!(description.members[0].member_id, member_id);
    // The owner's own timers still run: there, the silent member expires.
    live.set_ownership(Arc::new(everything));
    live.tick_all().await;
    let after = live.describe("g").await.unwrap().unwrap();
    assert_eq!(after.state, GroupState::Empty);
}

/// Topics `t` and `u`, with regexes matched against them.
struct TwoTopics;

impl super::consumer::TopicSource for TwoTopics {
    fn topic(&self, name: &str) -> Option<TopicMeta> {
        let id = match name {
            "t" => 7,
            "u" => 8,
            _ => return None,
        };
        Some(TopicMeta {
            id: uuid::Uuid::from_u128(id),
            name: name.into(),
            partitions: 2,
        })
    }

    fn matching(
        &self,
        pattern: &str,
    ) -> Result<
        Arc<std::collections::BTreeSet<String>>,
        super::consumer::topic_regex::TopicRegexError,
    > {
        let regex = super::consumer::topic_regex::compile(pattern)?;
        Ok(Arc::new(
            ["t", "u"]
                .into_iter()
                .filter(|n| regex.is_match(n))
                .map(String::from)
                .collect(),
        ))
    }
}

/// One KIP-848 member of group `g`, heartbeating its subscription changes.
struct Kip848Member {
    coordinator: Arc<GroupCoordinator>,
    epoch: i32,
    owned: Assignment,
}

impl Kip848Member {
    async fn join(coordinator: &Arc<GroupCoordinator>, names: &[&str]) -> Kip848Member {
        let mut member = Kip848Member {
            coordinator: coordinator.clone(),
            epoch: JOIN_EPOCH,
            owned: Assignment::new(),
        };
        member.subscribe(names, None).await;
        member
    }

    /// Sends `names` and, if given, `regex` (empty: none any more) as the subscription, then
    /// acknowledges the new assignment.
    async fn subscribe(&mut self, names: &[&str], regex: Option<&str>) {
        let names = Some(names.iter().map(|n| n.to_string()).collect());
        self.heartbeat(names, regex.map(String::from)).await;
        self.heartbeat(None, None).await;
    }

    async fn heartbeat(&mut self, names: Option<Vec<String>>, regex: Option<String>) {
        let answer = self
            .coordinator
            .consumer()
            .heartbeat(
                "g",
                Heartbeat {
                    member_id: "m1".into(),
                    member_epoch: self.epoch,
                    rebalance_timeout_ms: LONG_TIMEOUT_MS,
                    subscribed_topic_names: names,
                    subscribed_topic_regex: regex,
                    owned: Some(self.owned.clone()),
                    ..Heartbeat::default()
                },
                &TwoTopics,
            )
            .await
            .unwrap();
        self.epoch = answer.member_epoch;
        if let Some(assignment) = answer.assignment {
            self.owned = assignment;
        }
    }

    async fn commit(&self, offsets: &[CommittedOffset]) {
        let results = self
            .coordinator
            .commit_offsets("g", "m1", None, self.epoch, offsets)
            .await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
    }
}

#[tokio::test]
async fn live_consumer_group_loses_old_offsets_of_topics_no_member_subscribes_to() {
    let env = Env::new().await;
    let coordinator = env.coordinator(config()).await;
    let member = Kip848Member::join(&coordinator, &["t"]).await;
    member.commit(&[offset("t", 0, 1), offset("u", 0, 2)]).await;
    env.clock.advance_ms(30 * MINUTE_MS);
    member.commit(&[offset("u", 1, 3)]).await;

    env.clock.advance_ms(RETENTION_MS - 30 * MINUTE_MS - 1);
    assert_eq!(expire(&coordinator).await, (0, 0));
    assert_eq!(committed(&coordinator, "g").await, vec![1, 2, 3]);
    // A retention after the first commits: `u`'s old offset goes, the recent one stays.
    env.clock.advance_ms(1);
    assert_eq!(expire(&coordinator).await, (1, 0));
    assert_eq!(committed(&coordinator, "g").await, vec![1, 3]);
    env.clock.advance_ms(30 * MINUTE_MS);
    assert_eq!(expire(&coordinator).await, (1, 0));
    // The subscribed topic keeps its offset however old, and the group stays.
    env.clock.advance_ms(10 * RETENTION_MS);
    assert_eq!(expire(&coordinator).await, (0, 0));
    assert_eq!(committed(&coordinator, "g").await, vec![1]);
    assert!(coordinator
        .consumer()
        .describe("g")
        .await
        .unwrap()
        .is_some());
}

#[tokio::test]
async fn subscribing_again_before_the_sweep_keeps_a_topics_offsets() {
    let env = Env::new().await;
    let coordinator = env.coordinator(config()).await;
    let mut member = Kip848Member::join(&coordinator, &["t", "u"]).await;
    member.commit(&[offset("t", 0, 1), offset("u", 0, 2)]).await;
    member.subscribe(&["t"], None).await;
    env.clock.advance_ms(RETENTION_MS - 1);
    assert_eq!(expire(&coordinator).await, (0, 0));
    member.subscribe(&["t", "u"], None).await;
    env.clock.advance_ms(1);
    assert_eq!(expire(&coordinator).await, (0, 0));
    assert_eq!(committed(&coordinator, "g").await, vec![1, 2]);
    // Dropped once more, `u` goes at the next sweep: its commit is a retention old.
    member.subscribe(&["t"], None).await;
    assert_eq!(expire(&coordinator).await, (1, 0));
    assert_eq!(committed(&coordinator, "g").await, vec![1]);
}

#[tokio::test]
async fn a_topic_matched_by_a_members_regex_keeps_its_offsets() {
    let env = Env::new().await;
    let coordinator = env.coordinator(config()).await;
    let mut member = Kip848Member::join(&coordinator, &["t"]).await;
    member.subscribe(&["t"], Some("u.*")).await;
    member.commit(&[offset("t", 0, 1), offset("u", 0, 2)]).await;
    env.clock.advance_ms(RETENTION_MS);
    assert_eq!(expire(&coordinator).await, (0, 0));
    assert_eq!(committed(&coordinator, "g").await, vec![1, 2]);
    member.subscribe(&["t"], Some("")).await;
    assert_eq!(expire(&coordinator).await, (1, 0));
    assert_eq!(committed(&coordinator, "g").await, vec![1]);
}

#[tokio::test]
async fn stable_classic_consumer_group_loses_old_offsets_of_unsubscribed_topics() {
    use kafka_protocol::messages::ConsumerProtocolSubscription;
    use kafka_protocol::protocol::{Encodable, StrBytes};
    let env = Env::new().await;
    let coordinator = env.coordinator(config()).await;
    let subscription =
        ConsumerProtocolSubscription::default().with_topics(vec![StrBytes::from_static_str("t")]);
    let mut metadata = bytes::BytesMut::new();
    metadata.extend_from_slice(&1i16.to_be_bytes());
    subscription.encode(&mut metadata, 1).unwrap();
    let (member, generation) =
        stable_member_with(&coordinator, "classic", metadata.freeze(), LONG_TIMEOUT_MS).await;
    let results = coordinator
        .commit_offsets(
            "classic",
            &member,
            None,
            generation,
            &[offset("t", 0, 1), offset("u", 0, 2)],
        )
        .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    env.clock.advance_ms(RETENTION_MS - 1);
    assert_eq!(expire(&coordinator).await, (0, 0));
    env.clock.advance_ms(1);
    assert_eq!(expire(&coordinator).await, (1, 0));
    assert_eq!(committed(&coordinator, "classic").await, vec![1]);
    let description = coordinator.describe("classic").await.unwrap().unwrap();
    assert_eq!(description.state, GroupState::Stable);
}
