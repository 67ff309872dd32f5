//! Consumer groups over the wire: every listed version of every group API, rebalances with
//! several members, fencing, expiry, deletion, and durability across a restart.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and times of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{create_topic, name, s, Client, TestBroker};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use protocol::versions::supported_range;

/// No initial rebalance delay and short sessions keep the tests quick.
const BROKER_ARGS: &[&str] = &[
    "--group-initial-rebalance-delay-ms",
    "0",
    "--group-min-session-timeout-ms",
    "500",
];
const SESSION_MS: i32 = 10_000;

fn versions(api_key: ApiKey) -> std::ops::RangeInclusive<i16> {
    let (min, max) = supported_range(api_key).expect("api in the table");
    min..=max
}

fn gid(value: &str) -> GroupId {
    GroupId(s(value))
}

fn code(error: ResponseError) -> i16 {
    error.code()
}

fn join_request(
    version: i16,
    group: &str,
    member_id: &str,
    session_ms: i32,
    metadata: &'static [u8],
) -> JoinGroupRequest {
    let request = JoinGroupRequest::default()
        .with_group_id(gid(group))
        .with_session_timeout_ms(session_ms)
        .with_member_id(s(member_id))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(Bytes::from_static(metadata))]);
    if version >= 1 {
        request.with_rebalance_timeout_ms(5_000)
    } else {
        request
    }
}

/// Joins (taking the MEMBER_ID_REQUIRED round trip of v4+) and returns the final answer.
async fn join(
    client: &mut Client,
    version: i16,
    group: &str,
    member_id: &str,
    session_ms: i32,
) -> JoinGroupResponse {
    let request = join_request(version, group, member_id, session_ms, b"meta");
    let response = expect_kind!(
        client.call(ApiKey::JoinGroup, version, request).await,
        JoinGroup
    );
    if response.error_code != code(ResponseError::MemberIdRequired) {
        return response;
    }
    assert!(version >= 4 && member_id.is_empty(), "v{version}");
    let request = join_request(version, group, &response.member_id, session_ms, b"meta");
    expect_kind!(
        client.call(ApiKey::JoinGroup, version, request).await,
        JoinGroup
    )
}

async fn sync(
    client: &mut Client,
    version: i16,
    group: &str,
    generation: i32,
    member_id: &str,
    assignments: &[(&str, &'static [u8])],
) -> SyncGroupResponse {
    let mut request = SyncGroupRequest::default()
        .with_group_id(gid(group))
        .with_generation_id(generation)
        .with_member_id(s(member_id))
        .with_assignments(
            assignments
                .iter()
                .map(|(m, a)| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(s(m))
                        .with_assignment(Bytes::from_static(a))
                })
                .collect(),
        );
    if version >= 5 {
        request = request
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(Some(s("range")));
    }
    expect_kind!(
        client.call(ApiKey::SyncGroup, version, request).await,
        SyncGroup
    )
}

async fn heartbeat(
    client: &mut Client,
    version: i16,
    group: &str,
    generation: i32,
    member_id: &str,
) -> i16 {
    let request = HeartbeatRequest::default()
        .with_group_id(gid(group))
        .with_generation_id(generation)
        .with_member_id(s(member_id));
    expect_kind!(
        client.call(ApiKey::Heartbeat, version, request).await,
        Heartbeat
    )
    .error_code
}

async fn leave(client: &mut Client, version: i16, group: &str, member_id: &str) -> i16 {
    let request = if version >= 3 {
        LeaveGroupRequest::default()
            .with_group_id(gid(group))
            .with_members(vec![MemberIdentity::default().with_member_id(s(member_id))])
    } else {
        LeaveGroupRequest::default()
            .with_group_id(gid(group))
            .with_member_id(s(member_id))
    };
    let response = expect_kind!(
        client.call(ApiKey::LeaveGroup, version, request).await,
        LeaveGroup
    );
    if version >= 3 {
        assert_eq!(response.error_code, 0);
        response.members[0].error_code
    } else {
        response.error_code
    }
}

fn commit_request(
    group: &str,
    generation: i32,
    member_id: &str,
    topic: &str,
    offsets: &[(i32, i64)],
) -> OffsetCommitRequest {
    let partitions = offsets
        .iter()
        .map(|&(partition, offset)| {
            OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(7)
                .with_committed_metadata(Some(s(&format!("md-{partition}"))))
        })
        .collect();
    OffsetCommitRequest::default()
        .with_group_id(gid(group))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(member_id))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(name(topic))
            .with_partitions(partitions)])
}

async fn commit(client: &mut Client, version: i16, request: OffsetCommitRequest) -> Vec<i16> {
    let response = expect_kind!(
        client.call(ApiKey::OffsetCommit, version, request).await,
        OffsetCommit
    );
    response
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

/// `(partition, offset, leader epoch, metadata)` for the topic, via OffsetFetch `version`.
async fn fetch(
    client: &mut Client,
    version: i16,
    group: &str,
    topic: &str,
    partitions: Option<&[i32]>,
) -> Vec<(i32, i64, i32, String)> {
    if version >= 8 {
        let topics = partitions.map(|p| {
            vec![OffsetFetchRequestTopics::default()
                .with_name(name(topic))
                .with_partition_indexes(p.to_vec())]
        });
        let request =
            OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                .with_group_id(gid(group))
                .with_topics(topics)]);
        let response = expect_kind!(
            client.call(ApiKey::OffsetFetch, version, request).await,
            OffsetFetch
        );
        assert_eq!(response.groups.len(), 1);
        assert_eq!(response.groups[0].error_code, 0);
        return response.groups[0]
            .topics
            .iter()
            .filter(|t| &*t.name.0 == topic)
            .flat_map(|t| t.partitions.iter())
            .map(|p| {
                (
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.metadata.as_deref().unwrap_or("").to_string(),
                )
            })
            .collect();
    }
    let topics = partitions.map(|p| {
        vec![OffsetFetchRequestTopic::default()
            .with_name(name(topic))
            .with_partition_indexes(p.to_vec())]
    });
    let request = OffsetFetchRequest::default()
        .with_group_id(gid(group))
        .with_topics(topics);
    let response = expect_kind!(
        client.call(ApiKey::OffsetFetch, version, request).await,
        OffsetFetch
    );
    assert_eq!(response.error_code, 0);
    response
        .topics
        .iter()
        .filter(|t| &*t.name.0 == topic)
        .flat_map(|t| t.partitions.iter())
        .map(|p| {
            (
                p.partition_index,
                p.committed_offset,
                p.committed_leader_epoch,
                p.metadata.as_deref().unwrap_or("").to_string(),
            )
        })
        .collect()
}

async fn describe(
    client: &mut Client,
    version: i16,
    group: &str,
) -> describe_groups_response::DescribedGroup {
    let request = DescribeGroupsRequest::default().with_groups(vec![gid(group)]);
    let mut response = expect_kind!(
        client.call(ApiKey::DescribeGroups, version, request).await,
        DescribeGroups
    );
    response.groups.remove(0)
}

#[tokio::test]
async fn find_coordinator_names_this_broker_at_every_version_and_refuses_transactions() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    let port = i32::from(broker.addr().port());
    for version in versions(ApiKey::FindCoordinator) {
        let request = if version >= 4 {
            FindCoordinatorRequest::default().with_coordinator_keys(vec![s("g1"), s("g/2")])
        } else {
            FindCoordinatorRequest::default().with_key(s("g1"))
        };
        let response = expect_kind!(
            client.call(ApiKey::FindCoordinator, version, request).await,
            FindCoordinator
        );
        if version >= 4 {
            assert_eq!(response.coordinators.len(), 2);
            for (coordinator, key) in response.coordinators.iter().zip(["g1", "g/2"]) {
                assert_eq!(
                    (&*coordinator.key, coordinator.error_code, coordinator.port),
                    (key, 0, port)
                );
                assert_eq!(coordinator.node_id.0, 1);
            }
        } else {
            assert_eq!(
                (response.error_code, response.node_id.0, response.port),
                (0, 1, port),
                "v{version}"
            );
            assert_eq!(&*response.host, "127.0.0.1");
        }
        if version >= 1 {
            let transactional = if version >= 4 {
                FindCoordinatorRequest::default()
                    .with_key_type(1)
                    .with_coordinator_keys(vec![s("txn")])
            } else {
                FindCoordinatorRequest::default()
                    .with_key_type(1)
                    .with_key(s("txn"))
            };
            let response = expect_kind!(
                client
                    .call(ApiKey::FindCoordinator, version, transactional)
                    .await,
                FindCoordinator
            );
            let (error, node) = if version >= 4 {
                let c = &response.coordinators[0];
                (c.error_code, c.node_id.0)
            } else {
                (response.error_code, response.node_id.0)
            };
            assert_eq!((error, node), (0, 1), "v{version}");
        }
    }
}

#[tokio::test]
async fn a_single_member_group_works_at_every_join_sync_heartbeat_and_leave_version() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    for join_version in versions(ApiKey::JoinGroup) {
        let sync_version = join_version.min(*versions(ApiKey::SyncGroup).end());
        let heartbeat_version = join_version.min(*versions(ApiKey::Heartbeat).end());
        let leave_version = join_version.min(*versions(ApiKey::LeaveGroup).end());
        let group = format!("solo-v{join_version}");
        // v4+: the first join only hands out a member id (an id left unused would hold the
        // rebalance until it lapses, as in Kafka).
        let mut member_id = String::new();
        if join_version >= 4 {
            let request = join_request(join_version, &group, "", SESSION_MS, b"m");
            let first = expect_kind!(
                client.call(ApiKey::JoinGroup, join_version, request).await,
                JoinGroup
            );
            assert_eq!(
                first.error_code,
                code(ResponseError::MemberIdRequired),
                "v{join_version}"
            );
            assert!(!first.member_id.is_empty());
            member_id = first.member_id.to_string();
        }
        let joined = join(&mut client, join_version, &group, &member_id, SESSION_MS).await;
        assert_eq!(joined.error_code, 0, "v{join_version}");
        assert_eq!(joined.generation_id, 1);
        assert_eq!(joined.leader, joined.member_id);
        assert_eq!(joined.members.len(), 1);
        assert_eq!(joined.protocol_name.as_deref(), Some("range"));
        let member = joined.member_id.to_string();
        let synced = sync(
            &mut client,
            sync_version,
            &group,
            1,
            &member,
            &[(&member, b"assigned")],
        )
        .await;
        assert_eq!(
            (synced.error_code, &synced.assignment[..]),
            (0, &b"assigned"[..]),
            "v{sync_version}"
        );
        assert_eq!(
            heartbeat(&mut client, heartbeat_version, &group, 1, &member).await,
            0
        );
        assert_eq!(
            heartbeat(&mut client, heartbeat_version, &group, 0, &member).await,
            code(ResponseError::IllegalGeneration)
        );
        assert_eq!(
            heartbeat(&mut client, heartbeat_version, &group, 1, "stranger").await,
            code(ResponseError::UnknownMemberId)
        );
        assert_eq!(
            leave(&mut client, leave_version, &group, &member).await,
            0,
            "v{leave_version}"
        );
        assert_eq!(
            leave(&mut client, leave_version, &group, &member).await,
            code(ResponseError::UnknownMemberId)
        );
        assert_eq!(
            heartbeat(&mut client, heartbeat_version, &group, 1, &member).await,
            code(ResponseError::UnknownMemberId)
        );
    }
    // Empty group ids and out-of-range session timeouts are refused.
    let invalid = expect_kind!(
        client
            .call(
                ApiKey::JoinGroup,
                5,
                join_request(5, "", "", SESSION_MS, b"m")
            )
            .await,
        JoinGroup
    );
    assert_eq!(invalid.error_code, code(ResponseError::InvalidGroupId));
    let invalid = expect_kind!(
        client
            .call(ApiKey::JoinGroup, 5, join_request(5, "g", "", 10, b"m"))
            .await,
        JoinGroup
    );
    assert_eq!(
        invalid.error_code,
        code(ResponseError::InvalidSessionTimeout)
    );
}

#[tokio::test]
async fn offsets_commit_and_fetch_at_every_version() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "orders", 3).await;
    for commit_version in versions(ApiKey::OffsetCommit) {
        let group = format!("offsets-v{commit_version}");
        let request = commit_request(
            &group,
            -1,
            "",
            "orders",
            &[(0, 10 + i64::from(commit_version)), (2, 5)],
        );
        assert_eq!(
            commit(&mut client, commit_version, request).await,
            vec![0, 0],
            "v{commit_version}"
        );
        let stored = fetch(&mut client, 8, &group, "orders", Some(&[0, 1, 2])).await;
        let epoch = if commit_version >= 6 { 7 } else { -1 };
        assert_eq!(
            stored,
            vec![
                (0, 10 + i64::from(commit_version), epoch, "md-0".to_string()),
                (1, -1, -1, String::new()),
                (2, 5, epoch, "md-2".to_string()),
            ],
            "v{commit_version}"
        );
    }
    for fetch_version in versions(ApiKey::OffsetFetch) {
        let named = fetch(
            &mut client,
            fetch_version,
            "offsets-v9",
            "orders",
            Some(&[2, 0]),
        )
        .await;
        let epoch = if fetch_version >= 5 { 7 } else { -1 };
        assert_eq!(
            named,
            vec![
                (0, 19, epoch, "md-0".to_string()),
                (2, 5, epoch, "md-2".to_string())
            ],
            "v{fetch_version}"
        );
        if fetch_version >= 2 {
            let all = fetch(&mut client, fetch_version, "offsets-v9", "orders", None).await;
            assert_eq!(all.len(), 2, "v{fetch_version}: every committed partition");
        }
    }
    // Unknown partitions, oversized metadata, empty group ids and stale generations.
    let request = commit_request("offsets-v9", -1, "", "orders", &[(3, 1)]);
    assert_eq!(
        commit(&mut client, 9, request).await,
        vec![code(ResponseError::UnknownTopicOrPartition)]
    );
    let mut request = commit_request("offsets-v9", -1, "", "orders", &[(0, 1)]);
    request.topics[0].partitions[0].committed_metadata = Some(s(&"x".repeat(5000)));
    assert_eq!(
        commit(&mut client, 9, request).await,
        vec![code(ResponseError::OffsetMetadataTooLarge)]
    );
    let request = commit_request("", -1, "", "orders", &[(0, 1)]);
    assert_eq!(
        commit(&mut client, 9, request).await,
        vec![code(ResponseError::InvalidGroupId)]
    );
    let request = commit_request("never-joined", 3, "someone", "orders", &[(0, 1)]);
    assert_eq!(
        commit(&mut client, 9, request).await,
        vec![code(ResponseError::IllegalGeneration)]
    );
    // Several groups in one v8+ request.
    let request = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(gid("offsets-v2"))
            .with_topics(None),
        OffsetFetchRequestGroup::default()
            .with_group_id(gid("offsets-v3"))
            .with_topics(None),
    ]);
    let response = expect_kind!(
        client.call(ApiKey::OffsetFetch, 9, request).await,
        OffsetFetch
    );
    let firsts: Vec<i64> = response
        .groups
        .iter()
        .map(|g| g.topics[0].partitions[0].committed_offset)
        .collect();
    assert_eq!(firsts, vec![12, 13]);
}

#[tokio::test]
async fn group_ids_with_slashes_and_percent_signs_keep_their_offsets_apart() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "t", 1).await;
    for (i, group) in ["a", "a/b", "a%2Fb", "a/", "a.b-c_d"].iter().enumerate() {
        let request = commit_request(group, -1, "", "t", &[(0, i as i64)]);
        assert_eq!(commit(&mut client, 9, request).await, vec![0]);
    }
    for (i, group) in ["a", "a/b", "a%2Fb", "a/", "a.b-c_d"].iter().enumerate() {
        let all = fetch(&mut client, 7, group, "t", None).await;
        assert_eq!(all, vec![(0, i as i64, 7, "md-0".to_string())], "{group}");
    }
}

#[tokio::test]
async fn second_member_triggers_a_rebalance_and_stale_generations_are_fenced() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    create_topic(&mut broker.client().await, "t", 2).await;
    let mut a = broker.client().await;
    let mut b = broker.client().await;
    let first = join(&mut a, 9, "g", "", SESSION_MS).await;
    let member_a = first.member_id.to_string();
    assert_eq!(
        sync(&mut a, 5, "g", 1, &member_a, &[(&member_a, b"p0p1")])
            .await
            .error_code,
        0
    );

    // b joins and waits; a learns of the rebalance through its heartbeat and rejoins.
    let b_join = tokio::spawn(async move {
        let joined = join(&mut b, 9, "g", "", SESSION_MS).await;
        (b, joined)
    });
    let mut heartbeat_error = 0;
    for _ in 0..50 {
        heartbeat_error = heartbeat(&mut a, 4, "g", 1, &member_a).await;
        if heartbeat_error != 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(heartbeat_error, code(ResponseError::RebalanceInProgress));
    // Commits of the current generation are still accepted during the rebalance.
    let request = commit_request("g", 1, &member_a, "t", &[(0, 3)]);
    assert_eq!(commit(&mut a, 9, request).await, vec![0]);
    let rejoined = join(&mut a, 9, "g", &member_a, SESSION_MS).await;
    let (mut b, b_joined) = b_join.await.unwrap();
    assert_eq!((rejoined.error_code, b_joined.error_code), (0, 0));
    assert_eq!((rejoined.generation_id, b_joined.generation_id), (2, 2));
    assert_eq!(&*rejoined.leader, member_a.as_str(), "the leader stays");
    assert_eq!(rejoined.members.len(), 2);
    assert!(b_joined.members.is_empty());
    let member_b = b_joined.member_id.to_string();

    // During CompletingRebalance commits are refused; b's sync waits for the leader's.
    let request = commit_request("g", 2, &member_b, "t", &[(1, 1)]);
    assert_eq!(
        commit(&mut a, 9, request).await,
        vec![code(ResponseError::RebalanceInProgress)]
    );
    let b_sync = tokio::spawn(async move {
        let synced = sync(&mut b, 5, "g", 2, &member_b, &[]).await;
        (b, synced)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let member_b = b_joined.member_id.to_string();
    let a_sync = sync(
        &mut a,
        5,
        "g",
        2,
        &member_a,
        &[(&member_a, b"p0"), (&member_b, b"p1")],
    )
    .await;
    let (mut b, b_synced) = b_sync.await.unwrap();
    assert_eq!(&a_sync.assignment[..], b"p0");
    assert_eq!(&b_synced.assignment[..], b"p1");

    // The old generation is fenced everywhere.
    assert_eq!(
        heartbeat(&mut b, 4, "g", 1, &member_b).await,
        code(ResponseError::IllegalGeneration)
    );
    let request = commit_request("g", 1, &member_a, "t", &[(0, 4)]);
    assert_eq!(
        commit(&mut a, 9, request).await,
        vec![code(ResponseError::IllegalGeneration)]
    );
    assert_eq!(
        sync(&mut b, 5, "g", 1, &member_b, &[]).await.error_code,
        code(ResponseError::IllegalGeneration)
    );

    let described = describe(&mut a, 5, "g").await;
    assert_eq!(
        (&*described.group_state, &*described.protocol_data),
        ("Stable", "range")
    );
    assert_eq!(described.members.len(), 2);
    assert_eq!(
        &*described
            .members
            .iter()
            .find(|m| *m.member_id == *member_b)
            .unwrap()
            .member_assignment,
        b"p1"
    );
}

#[tokio::test]
async fn member_without_heartbeats_expires_and_the_group_becomes_empty() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    let joined = join(&mut client, 5, "expiring", "", 600).await;
    let member = joined.member_id.to_string();
    assert_eq!(
        sync(&mut client, 3, "expiring", 1, &member, &[(&member, b"x")])
            .await
            .error_code,
        0
    );
    assert_eq!(
        &*describe(&mut client, 5, "expiring").await.group_state,
        "Stable"
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        &*describe(&mut client, 5, "expiring").await.group_state,
        "Empty"
    );
    assert_eq!(
        heartbeat(&mut client, 3, "expiring", 1, &member).await,
        code(ResponseError::UnknownMemberId)
    );
}

#[tokio::test]
async fn describe_list_and_delete_groups_at_every_version() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "t", 1).await;
    let joined = join(&mut client, 5, "active", "", SESSION_MS).await;
    let member = joined.member_id.to_string();
    assert_eq!(
        sync(&mut client, 3, "active", 1, &member, &[(&member, b"a")])
            .await
            .error_code,
        0
    );
    for version in versions(ApiKey::DeleteGroups) {
        let group = format!("idle-{version}");
        assert_eq!(
            commit(
                &mut client,
                9,
                commit_request(&group, -1, "", "t", &[(0, 1)])
            )
            .await,
            vec![0]
        );
    }

    for version in versions(ApiKey::DescribeGroups) {
        let active = describe(&mut client, version, "active").await;
        assert_eq!(
            (
                active.error_code,
                &*active.group_state,
                &*active.protocol_type
            ),
            (0, "Stable", "consumer")
        );
        assert_eq!(active.members.len(), 1);
        assert_eq!(&*active.members[0].client_id, "broker-tests");
        let idle = describe(&mut client, version, "idle-0").await;
        assert_eq!(
            (idle.error_code, &*idle.group_state, idle.members.len()),
            (0, "Empty", 0)
        );
        let missing = describe(&mut client, version, "missing").await;
        assert_eq!(&*missing.group_state, "Dead", "v{version}");
        let expected = if version >= 6 {
            code(ResponseError::GroupIdNotFound)
        } else {
            0
        };
        assert_eq!(missing.error_code, expected, "v{version}");
    }

    for version in versions(ApiKey::ListGroups) {
        let response = expect_kind!(
            client
                .call(ApiKey::ListGroups, version, ListGroupsRequest::default())
                .await,
            ListGroups
        );
        let mut ids: Vec<String> = response
            .groups
            .iter()
            .map(|g| g.group_id.0.to_string())
            .collect();
        ids.sort();
        assert_eq!(
            ids,
            vec!["active", "idle-0", "idle-1", "idle-2"],
            "v{version}"
        );
        if version >= 4 {
            let request = ListGroupsRequest::default().with_states_filter(vec![s("Stable")]);
            let response = expect_kind!(
                client.call(ApiKey::ListGroups, version, request).await,
                ListGroups
            );
            let stable: Vec<(&str, &str)> = response
                .groups
                .iter()
                .map(|g| (&*g.group_id.0, &*g.group_state))
                .collect();
            assert_eq!(stable, vec![("active", "Stable")], "v{version}");
        }
        if version >= 5 {
            let request = ListGroupsRequest::default().with_types_filter(vec![s("consumer")]);
            let response = expect_kind!(
                client.call(ApiKey::ListGroups, version, request).await,
                ListGroups
            );
            assert!(response.groups.is_empty(), "no KIP-848 groups here");
        }
    }

    for version in versions(ApiKey::DeleteGroups) {
        let idle = format!("idle-{version}");
        let request = DeleteGroupsRequest::default().with_groups_names(vec![
            gid(&idle),
            gid("active"),
            gid("missing"),
        ]);
        let response = expect_kind!(
            client.call(ApiKey::DeleteGroups, version, request).await,
            DeleteGroups
        );
        let codes: Vec<i16> = response.results.iter().map(|r| r.error_code).collect();
        assert_eq!(
            codes,
            vec![
                0,
                code(ResponseError::NonEmptyGroup),
                code(ResponseError::GroupIdNotFound)
            ],
            "v{version}"
        );
        assert_eq!(
            fetch(&mut client, 7, &idle, "t", None).await,
            vec![],
            "offsets deleted with the group"
        );
        assert_eq!(&*describe(&mut client, 5, &idle).await.group_state, "Dead");
    }
}

#[tokio::test]
async fn offset_delete_refuses_subscribed_topics_of_an_active_consumer_group() {
    use kafka_protocol::messages::ConsumerProtocolSubscription;
    use kafka_protocol::protocol::Encodable;
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "subscribed", 1).await;
    create_topic(&mut client, "other", 1).await;
    let mut metadata = bytes::BytesMut::new();
    metadata.extend_from_slice(&0i16.to_be_bytes());
    ConsumerProtocolSubscription::default()
        .with_topics(vec![s("subscribed")])
        .encode(&mut metadata, 0)
        .unwrap();
    let request = join_request(3, "od", "", SESSION_MS, b"").with_protocols(vec![
        JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(metadata.freeze()),
    ]);
    let joined = expect_kind!(client.call(ApiKey::JoinGroup, 3, request).await, JoinGroup);
    let member = joined.member_id.to_string();
    assert_eq!(
        sync(&mut client, 3, "od", 1, &member, &[]).await.error_code,
        0
    );
    for topic in ["subscribed", "other"] {
        assert_eq!(
            commit(
                &mut client,
                9,
                commit_request("od", 1, &member, topic, &[(0, 5)])
            )
            .await,
            vec![0]
        );
    }
    let request = OffsetDeleteRequest::default()
        .with_group_id(gid("od"))
        .with_topics(
            ["subscribed", "other", "missing"]
                .iter()
                .map(|t| {
                    OffsetDeleteRequestTopic::default()
                        .with_name(name(t))
                        .with_partitions(vec![
                            OffsetDeleteRequestPartition::default().with_partition_index(0)
                        ])
                })
                .collect(),
        );
    let response = expect_kind!(
        client.call(ApiKey::OffsetDelete, 0, request).await,
        OffsetDelete
    );
    assert_eq!(response.error_code, 0);
    let codes: Vec<i16> = response
        .topics
        .iter()
        .map(|t| t.partitions[0].error_code)
        .collect();
    assert_eq!(
        codes,
        vec![
            code(ResponseError::GroupSubscribedToTopic),
            0,
            code(ResponseError::UnknownTopicOrPartition)
        ]
    );
    assert_eq!(fetch(&mut client, 7, "od", "other", None).await, vec![]);
    assert_eq!(
        fetch(&mut client, 7, "od", "subscribed", None).await.len(),
        1
    );
    let request = OffsetDeleteRequest::default().with_group_id(gid("nope"));
    let response = expect_kind!(
        client.call(ApiKey::OffsetDelete, 0, request).await,
        OffsetDelete
    );
    assert_eq!(response.error_code, code(ResponseError::GroupIdNotFound));
}

#[tokio::test]
async fn committed_offsets_and_membership_survive_a_restart() {
    let broker = TestBroker::start(BROKER_ARGS).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "t", 2).await;
    let joined = join(&mut client, 9, "durable", "", SESSION_MS).await;
    let member = joined.member_id.to_string();
    assert_eq!(
        sync(&mut client, 5, "durable", 1, &member, &[(&member, b"both")])
            .await
            .error_code,
        0
    );
    let request = commit_request("durable", 1, &member, "t", &[(0, 41), (1, 42)]);
    assert_eq!(commit(&mut client, 9, request).await, vec![0, 0]);
    drop(client);

    let broker = broker.restart(BROKER_ARGS).await;
    let mut client = broker.client().await;
    let stored = fetch(&mut client, 9, "durable", "t", None).await;
    assert_eq!(
        stored,
        vec![
            (0, 41, 7, "md-0".to_string()),
            (1, 42, 7, "md-1".to_string())
        ]
    );
    // The member carries on in its generation without rejoining.
    assert_eq!(heartbeat(&mut client, 4, "durable", 1, &member).await, 0);
    let described = describe(&mut client, 5, "durable").await;
    assert_eq!(&*described.group_state, "Stable");
    assert_eq!(&*described.members[0].member_assignment, b"both");
    assert_eq!(
        sync(&mut client, 5, "durable", 1, &member, &[])
            .await
            .assignment,
        Bytes::from_static(b"both")
    );
}
