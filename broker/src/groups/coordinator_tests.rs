//! Group timers through the coordinator, on a real embedded MetaStore, under a hand-moved
//! clock whose timer tasks never run on their own: DeleteGroups sees members expired at their
//! session deadline exactly, however late the timer task would have come.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use storage::meta::embedded::EmbeddedMetaStore;
use storage::meta::MetaOptions;

use super::clock::ManualClock;
use super::consumer::group::{Heartbeat, JOIN_EPOCH, STATIC_LEAVE_EPOCH};
use super::consumer::{Assignment, ConsumerGroupConfig, TopicMeta};
use super::group::{JoinRequest, SyncRequest};
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
    clock.advance(1_000);
    let beat = coordinator
        .heartbeat("g", &joined.member_id, Some("i1"), joined.generation_id)
        .await;
    assert_eq!(beat, Ok(()));
    // It closes without leaving.
    clock.advance(SESSION_MS - 1);
    assert_eq!(
        coordinator.delete("g").await,
        Err(ResponseError::NonEmptyGroup)
    );
    clock.advance(1);
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
    clock.advance(1_000);
    consumer
        .heartbeat("k", heartbeat(joined.member_epoch, false), &topics)
        .await
        .unwrap();
    // It closes 700 ms later with epoch -2: its partitions wait for it, but not longer than
    // the session its last heartbeat started.
    clock.advance(700);
    let left = consumer
        .heartbeat("k", heartbeat(STATIC_LEAVE_EPOCH, false), &topics)
        .await
        .unwrap();
    assert_eq!(left.member_epoch, STATIC_LEAVE_EPOCH);
    clock.advance(SESSION_MS - 700 - 1);
    assert_eq!(
        coordinator.delete("k").await,
        Err(ResponseError::NonEmptyGroup)
    );
    clock.advance(1);
    assert_eq!(coordinator.delete("k").await, Ok(()));
}
