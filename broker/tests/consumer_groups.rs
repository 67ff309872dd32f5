//! Consumer groups of the KIP-848 protocol over the wire: every listed version of
//! ConsumerGroupHeartbeat and ConsumerGroupDescribe, incremental hand-over between members,
//! fencing, offset commits checked against member epochs, coexistence with the classic
//! protocol, and durability across a restart.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::{create_topic, name, s, Client, TestBroker};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use protocol::versions::supported_range;
use uuid::Uuid;

fn versions(api_key: ApiKey) -> std::ops::RangeInclusive<i16> {
    let (min, max) = supported_range(api_key).expect("api in the table");
    min..=max
}

fn join_request(group: &str, member_id: &str, topic: &str) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member_id))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(5000)
        .with_subscribed_topic_names(Some(vec![name(topic)]))
        .with_topic_partitions(Some(vec![]))
}

fn beat_request(
    group: &str,
    member_id: &str,
    epoch: i32,
    owned: Option<(Uuid, &[i32])>,
) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member_id))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1)
        .with_topic_partitions(owned.map(|(topic_id, partitions)| {
            vec![TopicPartitions::default()
                .with_topic_id(topic_id)
                .with_partitions(partitions.to_vec())]
        }))
}

async fn heartbeat(
    client: &mut Client,
    version: i16,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    expect_kind!(
        client
            .call(ApiKey::ConsumerGroupHeartbeat, version, request)
            .await,
        ConsumerGroupHeartbeat
    )
}

fn partitions(response: &ConsumerGroupHeartbeatResponse) -> Vec<i32> {
    let mut out: Vec<i32> = response
        .assignment
        .iter()
        .flat_map(|a| a.topic_partitions.iter())
        .flat_map(|t| t.partitions.iter().copied())
        .collect();
    out.sort();
    out
}

async fn describe(
    client: &mut Client,
    version: i16,
    group: &str,
) -> consumer_group_describe_response::DescribedGroup {
    let request = ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(s(group))]);
    let mut response = expect_kind!(
        client
            .call(ApiKey::ConsumerGroupDescribe, version, request)
            .await,
        ConsumerGroupDescribe
    );
    response.groups.remove(0)
}

async fn commit(client: &mut Client, group: &str, member: &str, epoch: i32, topic: &str) -> i16 {
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member))
        .with_generation_id_or_member_epoch(epoch)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(17)])]);
    let response = expect_kind!(
        client.call(ApiKey::OffsetCommit, 9, request).await,
        OffsetCommit
    );
    response.topics[0].partitions[0].error_code
}

/// (group error, committed offset of partition 0)
async fn fetch(
    client: &mut Client,
    group: &str,
    member: Option<&str>,
    epoch: i32,
    topic: &str,
) -> (i16, i64) {
    let request =
        OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(s(group)))
            .with_member_id(member.map(s))
            .with_member_epoch(epoch)
            .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                .with_name(name(topic))
                .with_partition_indexes(vec![0])]))]);
    let response = expect_kind!(
        client.call(ApiKey::OffsetFetch, 9, request).await,
        OffsetFetch
    );
    let group = &response.groups[0];
    let offset = group
        .topics
        .first()
        .map_or(-1, |t| t.partitions[0].committed_offset);
    (group.error_code, offset)
}

#[tokio::test]
async fn heartbeat_and_describe_serve_every_listed_version() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    let topic_id = create_topic(&mut client, "t", 3).await;
    for version in versions(ApiKey::ConsumerGroupHeartbeat) {
        let group = format!("g-{version}");
        // v0 clients let the coordinator name them; v1 clients bring their own id.
        let own_id = if version >= 1 {
            Uuid::new_v4().to_string()
        } else {
            String::new()
        };
        let joined = heartbeat(&mut client, version, join_request(&group, &own_id, "t")).await;
        assert_eq!(
            joined.error_code, 0,
            "v{version}: {:?}",
            joined.error_message
        );
        let member = joined.member_id.as_deref().unwrap_or_default().to_string();
        assert!(!member.is_empty());
        if version >= 1 {
            assert_eq!(member, own_id);
        }
        assert_eq!(joined.member_epoch, 1);
        assert!(joined.heartbeat_interval_ms > 0);
        assert_eq!(partitions(&joined), vec![0, 1, 2]);
        assert_eq!(
            joined.assignment.as_ref().unwrap().topic_partitions[0].topic_id,
            topic_id
        );

        for describe_version in versions(ApiKey::ConsumerGroupDescribe) {
            let described = describe(&mut client, describe_version, &group).await;
            assert_eq!(described.error_code, 0);
            assert_eq!(&*described.group_state, "Stable");
            assert_eq!((described.group_epoch, described.assignment_epoch), (1, 1));
            assert_eq!(&*described.assignor_name, "uniform");
            let m = &described.members[0];
            assert_eq!(&*m.member_id, member.as_str());
            assert_eq!(&*m.client_id, "broker-tests");
            assert_eq!(m.member_epoch, 1);
            assert_eq!(&*m.assignment.topic_partitions[0].topic_name.0, "t");
            assert_eq!(
                m.target_assignment.topic_partitions[0].partitions,
                vec![0, 1, 2]
            );
            assert_eq!(m.member_type, if describe_version >= 1 { 1 } else { -1 });
        }

        let stayed = heartbeat(&mut client, version, beat_request(&group, &member, 1, None)).await;
        assert_eq!((stayed.error_code, stayed.member_epoch), (0, 1));
        let left = heartbeat(
            &mut client,
            version,
            beat_request(&group, &member, -1, None),
        )
        .await;
        assert_eq!((left.error_code, left.member_epoch), (0, -1));
        assert_eq!(
            &*describe(&mut client, 0, &group).await.group_state,
            "Empty"
        );
    }
    let unknown = describe(&mut client, 1, "no-such-group").await;
    assert_eq!(unknown.error_code, ResponseError::GroupIdNotFound.code());
}

#[tokio::test]
async fn second_member_gets_partitions_only_after_the_first_revokes_them() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    let topic_id = create_topic(&mut client, "t", 4).await;
    let a = heartbeat(&mut client, 1, join_request("g", "a", "t")).await;
    assert_eq!(partitions(&a), vec![0, 1, 2, 3]);
    let b = heartbeat(&mut client, 1, join_request("g", "b", "t")).await;
    assert_eq!(b.member_epoch, 2);
    assert!(partitions(&b).is_empty(), "a still owns every partition");
    let a = heartbeat(&mut client, 1, beat_request("g", "a", 1, None)).await;
    assert_eq!(a.member_epoch, 1, "a keeps its epoch until it revokes");
    let kept = partitions(&a);
    assert_eq!(kept.len(), 2);
    let b = heartbeat(
        &mut client,
        1,
        beat_request("g", "b", 2, Some((topic_id, &[]))),
    )
    .await;
    assert!(partitions(&b).is_empty());
    let a = heartbeat(
        &mut client,
        1,
        beat_request("g", "a", 1, Some((topic_id, &kept))),
    )
    .await;
    assert_eq!(a.member_epoch, 2);
    let b = heartbeat(
        &mut client,
        1,
        beat_request("g", "b", 2, Some((topic_id, &[]))),
    )
    .await;
    let mut all = [partitions(&a), partitions(&b)].concat();
    all.sort();
    assert_eq!(all, vec![0, 1, 2, 3]);
    assert_eq!(&*describe(&mut client, 1, "g").await.group_state, "Stable");
}

#[tokio::test]
async fn regex_subscription_is_resolved_by_the_broker_and_follows_topics_created_later() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "rx-a", 2).await;
    create_topic(&mut client, "rx-b", 1).await;
    create_topic(&mut client, "other-rx-a", 1).await;
    let join = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_member_id(s("a"))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(5000)
        .with_subscribed_topic_names(Some(vec![]))
        .with_subscribed_topic_regex(Some(s("rx-.*")))
        .with_topic_partitions(Some(vec![]));
    let joined = heartbeat(&mut client, 1, join).await;
    assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);
    assert_eq!(partitions(&joined), vec![0, 0, 1], "rx-a 0-1 and rx-b 0");

    create_topic(&mut client, "rx-c", 2).await;
    let a = heartbeat(&mut client, 1, beat_request("g", "a", 1, None)).await;
    assert_eq!((a.error_code, a.member_epoch), (0, 2));
    assert_eq!(partitions(&a), vec![0, 0, 0, 1, 1], "rx-c 0-1 added");

    let described = describe(&mut client, 1, "g").await;
    let member = &described.members[0];
    assert_eq!(member.subscribed_topic_regex.as_deref(), Some("rx-.*"));
    assert!(member.subscribed_topic_names.is_empty());
    let mut assigned: Vec<&str> = member
        .assignment
        .topic_partitions
        .iter()
        .map(|t| &*t.topic_name.0)
        .collect();
    assigned.sort();
    assert_eq!(assigned, ["rx-a", "rx-b", "rx-c"]);
}

#[tokio::test]
async fn fencing_assignors_commits_and_the_classic_protocol_are_checked() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    create_topic(&mut client, "t", 2).await;
    let bad = heartbeat(
        &mut client,
        1,
        join_request("g", "a", "t").with_server_assignor(Some(s("sticky"))),
    )
    .await;
    assert_eq!(bad.error_code, ResponseError::UnsupportedAssignor.code());
    let regex = heartbeat(
        &mut client,
        1,
        join_request("g", "a", "t").with_subscribed_topic_regex(Some(s("t("))),
    )
    .await;
    assert_eq!(
        regex.error_code,
        ResponseError::InvalidRegularExpression.code()
    );
    assert!(regex.error_message.is_some());

    let joined = heartbeat(
        &mut client,
        0,
        join_request("g", "", "t").with_server_assignor(Some(s("range"))),
    )
    .await;
    assert_eq!(joined.error_code, 0);
    let member = joined.member_id.unwrap().to_string();
    let fenced = heartbeat(&mut client, 0, beat_request("g", &member, 9, None)).await;
    assert_eq!(fenced.error_code, ResponseError::FencedMemberEpoch.code());
    let unknown = heartbeat(&mut client, 0, beat_request("g", "nobody", 1, None)).await;
    assert_eq!(unknown.error_code, ResponseError::UnknownMemberId.code());
    assert_eq!(&*describe(&mut client, 0, "g").await.assignor_name, "range");

    // Offsets: only the member at its current epoch commits; admins may read.
    assert_eq!(
        commit(&mut client, "g", &member, 0, "t").await,
        ResponseError::StaleMemberEpoch.code()
    );
    assert_eq!(
        commit(&mut client, "g", "nobody", 1, "t").await,
        ResponseError::UnknownMemberId.code()
    );
    assert_eq!(
        commit(&mut client, "g", "", -1, "t").await,
        ResponseError::UnknownMemberId.code()
    );
    assert_eq!(commit(&mut client, "g", &member, 1, "t").await, 0);
    assert_eq!(
        fetch(&mut client, "g", Some(&member), 1, "t").await,
        (0, 17)
    );
    assert_eq!(fetch(&mut client, "g", None, -1, "t").await, (0, 17));
    assert_eq!(
        fetch(&mut client, "g", Some(&member), 3, "t").await.0,
        ResponseError::StaleMemberEpoch.code()
    );

    // A classic member cannot join a live consumer group; tools still see the group.
    let classic = JoinGroupRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(Bytes::from_static(b"m"))]);
    let refused = expect_kind!(client.call(ApiKey::JoinGroup, 9, classic).await, JoinGroup);
    assert_eq!(
        refused.error_code,
        ResponseError::InconsistentGroupProtocol.code()
    );
    let listed = expect_kind!(
        client
            .call(ApiKey::ListGroups, 5, ListGroupsRequest::default())
            .await,
        ListGroups
    );
    let row = listed
        .groups
        .iter()
        .find(|g| &*g.group_id.0 == "g")
        .unwrap();
    assert_eq!(
        (&*row.group_type, &*row.protocol_type, &*row.group_state),
        ("consumer", "consumer", "Stable")
    );
    let described = expect_kind!(
        client
            .call(
                ApiKey::DescribeGroups,
                5,
                DescribeGroupsRequest::default().with_groups(vec![GroupId(s("g"))])
            )
            .await,
        DescribeGroups
    );
    assert_eq!(&*described.groups[0].protocol_type, "consumer");
    assert_eq!(described.groups[0].members.len(), 1);
    let deleted = expect_kind!(
        client
            .call(
                ApiKey::DeleteGroups,
                2,
                DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s("g"))])
            )
            .await,
        DeleteGroups
    );
    assert_eq!(
        deleted.results[0].error_code,
        ResponseError::NonEmptyGroup.code()
    );
    // Once the member left, the group can be deleted with its offsets.
    heartbeat(&mut client, 0, beat_request("g", &member, -1, None)).await;
    let deleted = expect_kind!(
        client
            .call(
                ApiKey::DeleteGroups,
                2,
                DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s("g"))])
            )
            .await,
        DeleteGroups
    );
    assert_eq!(deleted.results[0].error_code, 0);
    assert_eq!(fetch(&mut client, "g", None, -1, "t").await, (0, -1));
}

#[tokio::test]
async fn members_carry_on_with_their_epochs_after_a_restart() {
    let broker = TestBroker::start(&[]).await;
    let mut client = broker.client().await;
    let topic_id = create_topic(&mut client, "t", 2).await;
    heartbeat(&mut client, 1, join_request("g", "a", "t")).await;
    let b = heartbeat(&mut client, 1, join_request("g", "b", "t")).await;
    let a = heartbeat(&mut client, 1, beat_request("g", "a", 1, None)).await;
    let kept = partitions(&a);
    let a = heartbeat(
        &mut client,
        1,
        beat_request("g", "a", 1, Some((topic_id, &kept))),
    )
    .await;
    assert_eq!(a.member_epoch, b.member_epoch);
    assert_eq!(commit(&mut client, "g", "a", a.member_epoch, "t").await, 0);
    drop(client);

    let broker = broker.restart(&[]).await;
    let mut client = broker.client().await;
    let again = heartbeat(&mut client, 1, beat_request("g", "a", a.member_epoch, None)).await;
    assert_eq!(again.error_code, 0);
    assert_eq!(
        (again.member_epoch, partitions(&again)),
        (a.member_epoch, kept)
    );
    let b = heartbeat(
        &mut client,
        1,
        beat_request("g", "b", b.member_epoch, Some((topic_id, &[]))),
    )
    .await;
    assert_eq!(b.error_code, 0);
    assert_eq!(partitions(&b).len(), 1);
    let described = describe(&mut client, 1, "g").await;
    assert_eq!(described.group_epoch, a.member_epoch);
    assert_eq!(described.members.len(), 2);
    assert_eq!(fetch(&mut client, "g", None, -1, "t").await, (0, 17));
}
