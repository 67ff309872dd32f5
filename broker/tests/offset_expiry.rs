//! Committed-offset expiry over the wire: a group whose members left loses its offsets (and
//! then itself) once the retention has passed, while a group with members keeps them.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{create_topic, name, s, Client, TestBroker};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;

const RETENTION_MS: u64 = 1_500;
const BROKER_ARGS: &[&str] = &[
    "--group-initial-rebalance-delay-ms",
    "0",
    "--offsets-retention-ms",
    "1500",
    "--offsets-retention-check-interval-ms",
    "100",
];

fn gid(value: &str) -> GroupId {
    GroupId(s(value))
}

/// A one-member group, stable: returns the member id and generation.
async fn stable_member(client: &mut Client, group: &str) -> (String, i32) {
    let request = JoinGroupRequest::default()
        .with_group_id(gid(group))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(5_000)
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(Bytes::from_static(b"meta"))]);
    let joined = expect_kind!(client.call(ApiKey::JoinGroup, 3, request).await, JoinGroup);
    assert_eq!(joined.error_code, 0);
    let member = joined.member_id.to_string();
    let request = SyncGroupRequest::default()
        .with_group_id(gid(group))
        .with_generation_id(joined.generation_id)
        .with_member_id(s(&member))
        .with_assignments(vec![SyncGroupRequestAssignment::default()
            .with_member_id(s(&member))
            .with_assignment(Bytes::from_static(b"a"))]);
    let synced = expect_kind!(client.call(ApiKey::SyncGroup, 3, request).await, SyncGroup);
    assert_eq!(synced.error_code, 0);
    (member, joined.generation_id)
}

async fn commit(client: &mut Client, group: &str, member: &str, generation: i32, offset: i64) {
    let request = OffsetCommitRequest::default()
        .with_group_id(gid(group))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(member))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(name("t"))
            .with_partitions(
                (0..2)
                    .map(|p| {
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(p)
                            .with_committed_offset(offset)
                    })
                    .collect(),
            )]);
    let response = expect_kind!(
        client.call(ApiKey::OffsetCommit, 8, request).await,
        OffsetCommit
    );
    for partition in &response.topics[0].partitions {
        assert_eq!(partition.error_code, 0);
    }
}

/// Committed offsets of partitions 0 and 1 of `t` (-1: none).
async fn committed(client: &mut Client, group: &str) -> Vec<i64> {
    let request = OffsetFetchRequest::default()
        .with_group_id(gid(group))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(name("t"))
            .with_partition_indexes(vec![0, 1])]));
    let response = expect_kind!(
        client.call(ApiKey::OffsetFetch, 7, request).await,
        OffsetFetch
    );
    assert_eq!(response.error_code, 0);
    response.topics[0]
        .partitions
        .iter()
        .map(|p| p.committed_offset)
        .collect()
}

async fn group_state(client: &mut Client, group: &str) -> String {
    let request = DescribeGroupsRequest::default().with_groups(vec![gid(group)]);
    let response = expect_kind!(
        client.call(ApiKey::DescribeGroups, 5, request).await,
        DescribeGroups
    );
    response.groups[0].group_state.to_string()
}

async fn listed(client: &mut Client) -> Vec<String> {
    let response = expect_kind!(
        client
            .call(ApiKey::ListGroups, 4, ListGroupsRequest::default())
            .await,
        ListGroups
    );
    let mut ids: Vec<String> = response
        .groups
        .iter()
        .map(|g| g.group_id.to_string())
        .collect();
    ids.sort();
    ids
}

async fn heartbeat(client: &mut Client, group: &str, member: &str, generation: i32) {
    let request = HeartbeatRequest::default()
        .with_group_id(gid(group))
        .with_generation_id(generation)
        .with_member_id(s(member));
    let response = expect_kind!(client.call(ApiKey::Heartbeat, 3, request).await, Heartbeat);
    assert_eq!(response.error_code, 0);
}

#[tokio::test]
async fn offsets_of_a_group_that_left_expire_while_an_active_groups_stay() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "t", 2).await;
    let (gone, gone_generation) = stable_member(&mut client, "gone").await;
    let (active, active_generation) = stable_member(&mut client, "active").await;
    commit(&mut client, "gone", &gone, gone_generation, 10).await;
    commit(&mut client, "active", &active, active_generation, 20).await;

    let request = LeaveGroupRequest::default()
        .with_group_id(gid("gone"))
        .with_members(vec![MemberIdentity::default().with_member_id(s(&gone))]);
    let left = expect_kind!(
        client.call(ApiKey::LeaveGroup, 3, request).await,
        LeaveGroup
    );
    assert_eq!(left.error_code, 0);
    let left_at = Instant::now();
    assert_eq!(group_state(&mut client, "gone").await, "Empty");
    assert_eq!(committed(&mut client, "gone").await, vec![10, 10]);

    // Expiry runs every 100 ms: the offsets go soon after the retention, never before.
    let deadline = left_at + Duration::from_secs(15);
    loop {
        heartbeat(&mut client, "active", &active, active_generation).await;
        let offsets = committed(&mut client, "gone").await;
        if offsets == vec![-1, -1] {
            break;
        }
        // Each offset is deleted on its own: a read in between sees one of them expired.
        assert!(offsets.iter().all(|o| [10, -1].contains(o)), "{offsets:?}");
        assert!(Instant::now() < deadline, "offsets never expired");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        left_at.elapsed() >= Duration::from_millis(RETENTION_MS),
        "expired after {:?}",
        left_at.elapsed()
    );
    assert_eq!(group_state(&mut client, "gone").await, "Dead");
    assert_eq!(listed(&mut client).await, vec!["active".to_string()]);

    // The active group's offsets are older than the retention too, and stay.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(committed(&mut client, "active").await, vec![20, 20]);
    assert_eq!(group_state(&mut client, "active").await, "Stable");
    broker.running.shutdown().await;
}

#[tokio::test]
async fn commit_times_survive_a_restart() {
    let broker = TestBroker::start(&[
        "--group-initial-rebalance-delay-ms",
        "0",
        "--offsets-retention-ms",
        "600000",
    ])
    .await;
    let mut client = broker.client().await;
    create_topic(&mut client, "t", 2).await;
    commit(&mut client, "standalone", "", -1, 5).await;
    let committed_at = Instant::now();
    let broker = broker.restart(BROKER_ARGS).await;
    let mut client = broker.client().await;
    // Under the new, short retention the offsets expire a retention after their commit: not
    // at once (a lost commit time would read as ancient) and not never.
    let deadline = committed_at + Duration::from_secs(15);
    loop {
        let offsets = committed(&mut client, "standalone").await;
        if offsets == vec![-1, -1] {
            break;
        }
        // Each offset is deleted on its own (a conditional delete per key): a read in between
        // sees one expired and one not.
        assert!(offsets.iter().all(|o| [5, -1].contains(o)), "{offsets:?}");
        assert!(Instant::now() < deadline, "offsets never expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        committed_at.elapsed() >= Duration::from_millis(RETENTION_MS),
        "expired after {:?}",
        committed_at.elapsed()
    );
    assert!(listed(&mut client).await.is_empty());
    broker.running.shutdown().await;
}
