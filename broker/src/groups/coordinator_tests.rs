//! Group timers through the coordinator, on a real embedded MetaStore, under a hand-moved
//! clock whose timer tasks never run on their own: DeleteGroups, DescribeGroups and ListGroups
//! see members expired at their session deadline exactly, however late the timer task would
//! have come.

// Test code: test times and counts converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use metastore::embedded::EmbeddedMetaStore;
use metastore::MetaOptions;

use super::clock::ManualClock;
use super::consumer::group::{ConsumerGroupState, Heartbeat, JOIN_EPOCH, STATIC_LEAVE_EPOCH};
use super::consumer::{Assignment, ConsumerGroupConfig, TopicMeta};
use super::group::{GroupState, JoinRequest, SyncRequest};
use super::member::Protocol;
use super::{GroupConfig, GroupCoordinator};

const T0: u64 = 1_700_000_000_000;
const SESSION_MS: u64 = 6_000;

async fn coordinator() -> (tempfile::TempDir, Arc<ManualClock>, Arc<GroupCoordinator>) {
    let dir = tempfile::tempdir().unwrap();
    let meta = EmbeddedMetaStore::open_in_dir(dir.path(), MetaOptions::default())
        .await
        .unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let config = GroupConfig {
        initial_rebalance_delay_ms: 0,
        // Timers only run when a test asks.
        tick_interval_ms: 3_600_000,
        consumer: ConsumerGroupConfig {
            tick_interval_ms: 3_600_000,
            session_timeout_ms: SESSION_MS as i32,
            ..ConsumerGroupConfig::default()
        },
        ..GroupConfig::default()
    };
    let coordinator = GroupCoordinator::open(Arc::new(meta), config, clock.clone())
        .await
        .unwrap();
    (dir, clock, coordinator)
}

fn topics(name: &str) -> Option<TopicMeta> {
    (name == "t").then(|| TopicMeta {
        id: uuid::Uuid::from_u128(7),
        name: "t".into(),
        partitions: 2,
    })
}

#[tokio::test]
async fn classic_static_member_that_stops_heartbeating_is_gone_at_its_session_timeout() {
    let (_dir, clock, coordinator) = coordinator().await;
    let join = JoinRequest {
        member_id: String::new(),
        group_instance_id: Some("i1".into()),
        client_id: "client".into(),
        client_host: String::new(),
        session_timeout_ms: SESSION_MS as i32,
        rebalance_timeout_ms: 300_000,
        protocol_type: "consumer".into(),
        protocols: vec![Protocol {
            name: "range".into(),
            metadata: Bytes::from_static(b"m"),
        }],
        require_known_member_id: true,
        supports_skip_assignment: true,
    };
    let joined = coordinator.join("g", join).await;
    assert_eq!(joined.error, None);
    let sync = SyncRequest {
        member_id: joined.member_id.clone(),
        group_instance_id: Some("i1".into()),
        generation_id: joined.generation_id,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments: vec![(joined.member_id.clone(), Bytes::from_static(b"a"))],
    };
    assert_eq!(coordinator.sync("g", sync).await.error, None);
    clock.advance_ms(1_000);
    let beat = coordinator
        .heartbeat("g", &joined.member_id, Some("i1"), joined.generation_id)
        .await;
    assert_eq!(beat, Ok(()));
    // It closes without leaving.
    clock.advance_ms(SESSION_MS - 1);
    assert_eq!(
        coordinator.delete("g").await,
        Err(ResponseError::NonEmptyGroup)
    );
    clock.advance_ms(1);
    assert_eq!(coordinator.delete("g").await, Ok(()));
}

#[tokio::test]
async fn consumer_group_static_member_that_left_is_gone_a_session_after_its_last_heartbeat() {
    let (_dir, clock, coordinator) = coordinator().await;
    let consumer = coordinator.consumer().clone();
    let heartbeat = |member_epoch, subscribe: bool| Heartbeat {
        member_id: "m1".into(),
        member_epoch,
        instance_id: Some("i1".into()),
        rebalance_timeout_ms: 10_000,
        subscribed_topic_names: subscribe.then(|| vec!["t".into()]),
        owned: Some(Assignment::new()),
        ..Heartbeat::default()
    };
    let joined = consumer
        .heartbeat("k", heartbeat(JOIN_EPOCH, true), &topics)
        .await
        .unwrap();
    clock.advance_ms(1_000);
    consumer
        .heartbeat("k", heartbeat(joined.member_epoch, false), &topics)
        .await
        .unwrap();
    // It closes 700 ms later with epoch -2: its partitions wait for it, but not longer than
    // the session its last heartbeat started.
    clock.advance_ms(700);
    let left = consumer
        .heartbeat("k", heartbeat(STATIC_LEAVE_EPOCH, false), &topics)
        .await
        .unwrap();
    assert_eq!(left.member_epoch, STATIC_LEAVE_EPOCH);
    clock.advance_ms(SESSION_MS - 700 - 1);
    assert_eq!(
        coordinator.delete("k").await,
        Err(ResponseError::NonEmptyGroup)
    );
    clock.advance_ms(1);
    assert_eq!(coordinator.delete("k").await, Ok(()));
}

/// A coordinator whose timer tasks have had their first tick (they tick once at start, at a
/// moment a test does not choose, and then not for an hour): from here on only requests act
/// on deadlines, so a passing test shows that the request did.
async fn idle_coordinator() -> (tempfile::TempDir, Arc<ManualClock>, Arc<GroupCoordinator>) {
    let opened = coordinator().await;
    // The test runtime has one thread: while this sleeps, the timer tasks run their tick.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    opened
}

/// A one-member classic group, Stable, whose member's session started at `T0 + 1000` (its
/// last heartbeat); returns the member id.
async fn stable_classic_member(
    coordinator: &GroupCoordinator,
    clock: &ManualClock,
    group: &str,
) -> String {
    let join = JoinRequest {
        member_id: String::new(),
        group_instance_id: None,
        client_id: "client".into(),
        client_host: String::new(),
        session_timeout_ms: SESSION_MS as i32,
        rebalance_timeout_ms: 300_000,
        protocol_type: "consumer".into(),
        protocols: vec![Protocol {
            name: "range".into(),
            metadata: Bytes::from_static(b"m"),
        }],
        require_known_member_id: false,
        supports_skip_assignment: true,
    };
    let joined = coordinator.join(group, join).await;
    assert_eq!(joined.error, None);
    let sync = SyncRequest {
        member_id: joined.member_id.clone(),
        group_instance_id: None,
        generation_id: joined.generation_id,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments: vec![(joined.member_id.clone(), Bytes::from_static(b"a"))],
    };
    assert_eq!(coordinator.sync(group, sync).await.error, None);
    clock.advance_ms(1_000);
    let beat = coordinator
        .heartbeat(group, &joined.member_id, None, joined.generation_id)
        .await;
    assert_eq!(beat, Ok(()));
    joined.member_id
}

/// `(state, members)` as DescribeGroups and ListGroups show the classic group.
async fn classic_seen(
    coordinator: &GroupCoordinator,
    group: &str,
) -> (GroupState, usize, GroupState) {
    let described = coordinator.describe(group).await.unwrap().unwrap();
    let listed = coordinator.list().await;
    let row = listed.iter().find(|g| g.group_id == group).unwrap();
    (described.state, described.members.len(), row.state)
}

#[tokio::test]
async fn describe_and_list_show_a_classic_member_gone_at_its_session_deadline() {
    let (_dir, clock, coordinator) = idle_coordinator().await;
    stable_classic_member(&coordinator, &clock, "g").await;
    clock.advance_ms(SESSION_MS - 1);
    assert_eq!(
        classic_seen(&coordinator, "g").await,
        (GroupState::Stable, 1, GroupState::Stable)
    );
    clock.advance_ms(1);
    // The timer task never runs here: DescribeGroups itself acts on the passed deadline.
    assert_eq!(
        classic_seen(&coordinator, "g").await,
        (GroupState::Empty, 0, GroupState::Empty)
    );
}

#[tokio::test]
async fn list_alone_shows_a_classic_group_empty_at_its_members_session_deadline() {
    let (_dir, clock, coordinator) = idle_coordinator().await;
    stable_classic_member(&coordinator, &clock, "g").await;
    clock.advance_ms(SESSION_MS);
    let listed = coordinator.list().await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state, GroupState::Empty);
}

#[tokio::test]
async fn what_describe_saw_expire_is_stored() {
    let (dir, clock, coordinator) = idle_coordinator().await;
    stable_classic_member(&coordinator, &clock, "g").await;
    clock.advance_ms(SESSION_MS);
    assert_eq!(
        coordinator.describe("g").await.unwrap().unwrap().state,
        GroupState::Empty
    );
    coordinator.shutdown().await;
    drop(coordinator);
    // A broker opening the same store later loads the group without the expired member.
    let meta = EmbeddedMetaStore::open_in_dir(dir.path(), MetaOptions::default())
        .await
        .unwrap();
    let records = super::store::GroupStore::new(Arc::new(meta));
    let (record, _) = records.load("g").await.unwrap().unwrap();
    assert!(record.members.is_empty());
}

/// A consumer group whose one member's session started at `T0` (its joining heartbeat).
async fn consumer_member(coordinator: &GroupCoordinator, group: &str) {
    let join = Heartbeat {
        member_id: "m1".into(),
        member_epoch: JOIN_EPOCH,
        rebalance_timeout_ms: 10_000,
        subscribed_topic_names: Some(vec!["t".into()]),
        owned: Some(Assignment::new()),
        ..Heartbeat::default()
    };
    coordinator
        .consumer()
        .heartbeat(group, join, &topics)
        .await
        .unwrap();
}

/// `(state, members)` as DescribeGroups (and ConsumerGroupDescribe) and ListGroups show it.
async fn consumer_seen(
    coordinator: &GroupCoordinator,
    group: &str,
) -> (ConsumerGroupState, usize, ConsumerGroupState) {
    let consumer = coordinator.consumer();
    let described = consumer.describe(group).await.unwrap().unwrap();
    let listed = consumer.list().await;
    let row = listed.iter().find(|g| g.group_id == group).unwrap();
    (described.state, described.members.len(), row.state)
}

#[tokio::test]
async fn describe_and_list_show_a_consumer_group_member_gone_at_its_session_deadline() {
    let (_dir, clock, coordinator) = idle_coordinator().await;
    consumer_member(&coordinator, "k").await;
    clock.advance_ms(SESSION_MS - 1);
    let (state, members, listed) = consumer_seen(&coordinator, "k").await;
    assert_ne!(state, ConsumerGroupState::Empty);
    assert_eq!((members, listed), (1, state));
    clock.advance_ms(1);
    assert_eq!(
        consumer_seen(&coordinator, "k").await,
        (ConsumerGroupState::Empty, 0, ConsumerGroupState::Empty)
    );
}

#[tokio::test]
async fn list_alone_shows_a_consumer_group_empty_at_its_members_session_deadline() {
    let (_dir, clock, coordinator) = idle_coordinator().await;
    consumer_member(&coordinator, "k").await;
    clock.advance_ms(SESSION_MS);
    let listed = coordinator.consumer().list().await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state, ConsumerGroupState::Empty);
}
