//! The group APIs of both protocols and committed offsets.

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::common::{name, s};
use crate::expect_kind;
use crate::harness::*;

const GAF: ResponseError = ResponseError::GroupAuthorizationFailed;
const TAF: ResponseError = ResponseError::TopicAuthorizationFailed;

fn gid(value: &str) -> GroupId {
    GroupId(s(value))
}

async fn join(a: &Authorized, user: &str, group: &str) -> JoinGroupResponse {
    let request = JoinGroupRequest::default()
        .with_group_id(gid(group))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(s(""))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(Bytes::from_static(b"m"))]);
    expect_kind!(a.call(user, ApiKey::JoinGroup, 9, request).await, JoinGroup)
}

#[tokio::test]
async fn classic_group_requests_need_read_on_the_group() {
    let a = Authorized::start().await;
    assert_eq!(join(&a, ALICE, "g1").await.error_code, code(GAF));
    let heartbeat = HeartbeatRequest::default()
        .with_group_id(gid("g1"))
        .with_member_id(s("m"));
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::Heartbeat, 4, heartbeat.clone()).await,
        Heartbeat
    );
    assert_eq!(answer.error_code, code(GAF));
    let sync = SyncGroupRequest::default()
        .with_group_id(gid("g1"))
        .with_member_id(s("m"));
    let answer = expect_kind!(a.call(ALICE, ApiKey::SyncGroup, 5, sync).await, SyncGroup);
    assert_eq!(answer.error_code, code(GAF));
    let leave = LeaveGroupRequest::default().with_group_id(gid("g1"));
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::LeaveGroup, 5, leave).await,
        LeaveGroup
    );
    assert_eq!(answer.error_code, code(GAF));

    a.allow(ALICE, GROUP, "g", PREFIXED, op::READ).await;
    // v9 asks for a member id first: the group itself let her in.
    let answer = join(&a, ALICE, "g1").await;
    assert_eq!(answer.error_code, code(ResponseError::MemberIdRequired));
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::Heartbeat, 4, heartbeat).await,
        Heartbeat
    );
    assert_eq!(answer.error_code, code(ResponseError::UnknownMemberId));
}

fn commit(group: &str, topic: &str) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(gid(group))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(s(""))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(7)])])
}

async fn commit_error(a: &Authorized, group: &str, topic: &str) -> i16 {
    let response = expect_kind!(
        a.call(ALICE, ApiKey::OffsetCommit, 9, commit(group, topic))
            .await,
        OffsetCommit
    );
    response.topics[0].partitions[0].error_code
}

/// `(group error, [(topic, partition error, offset)])` of a v9 OffsetFetch for one group.
async fn fetch(
    a: &Authorized,
    group: &str,
    topics: Option<&[&str]>,
) -> (i16, Vec<(String, i16, i64)>) {
    let request =
        OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
            .with_group_id(gid(group))
            .with_member_epoch(-1)
            .with_topics(topics.map(|names| {
                names
                    .iter()
                    .map(|t| {
                        OffsetFetchRequestTopics::default()
                            .with_name(name(t))
                            .with_partition_indexes(vec![0])
                    })
                    .collect()
            }))]);
    let response = expect_kind!(
        a.call(ALICE, ApiKey::OffsetFetch, 9, request).await,
        OffsetFetch
    );
    let group = &response.groups[0];
    let partitions = group
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.0.to_string(), p.error_code, p.committed_offset))
        })
        .collect();
    (group.error_code, partitions)
}

#[tokio::test]
async fn offsets_need_the_group_then_each_topic() {
    let a = Authorized::start().await;
    a.topic("t1", 1).await;
    a.topic("t2", 1).await;
    assert_eq!(commit_error(&a, "cg", "t1").await, code(GAF));
    a.allow(ALICE, GROUP, "cg", LITERAL, op::READ).await;
    assert_eq!(commit_error(&a, "cg", "t1").await, code(TAF));
    assert_eq!(
        commit_error(&a, "cg", "absent").await,
        code(TAF),
        "before existence"
    );
    a.allow(ALICE, TOPIC, "t1", LITERAL, op::READ).await;
    assert_eq!(commit_error(&a, "cg", "t1").await, 0);
    // The admin commits to t2, which alice may not describe.
    let response = expect_kind!(
        a.call(ADMIN, ApiKey::OffsetCommit, 9, commit("cg", "t2"))
            .await,
        OffsetCommit
    );
    assert_eq!(response.topics[0].partitions[0].error_code, 0);

    // READ on the group implies the DESCRIBE OffsetFetch needs; t2 is refused by name and
    // left out of the all-topics answer.
    assert_eq!(
        fetch(&a, "cg", Some(&["t1", "t2"])).await,
        (0, vec![("t1".into(), 0, 7), ("t2".into(), code(TAF), -1)])
    );
    assert_eq!(fetch(&a, "cg", None).await, (0, vec![("t1".into(), 0, 7)]));
    assert_eq!(fetch(&a, "other", None).await, (code(GAF), vec![]));
}

#[tokio::test]
async fn describe_list_and_delete_groups_need_describe_and_delete() {
    let a = Authorized::start().await;
    a.topic("t", 1).await;
    for group in ["mine", "theirs"] {
        let _ = a
            .call(ADMIN, ApiKey::OffsetCommit, 9, commit(group, "t"))
            .await;
    }
    let describe = |groups: &[&str]| {
        DescribeGroupsRequest::default()
            .with_groups(groups.iter().map(|g| gid(g)).collect())
            .with_include_authorized_operations(true)
    };
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::DescribeGroups, 5, describe(&["mine"]))
            .await,
        DescribeGroups
    );
    assert_eq!(answer.groups[0].error_code, code(GAF));
    a.allow(ALICE, GROUP, "mine", LITERAL, op::DESCRIBE).await;
    let answer = expect_kind!(
        a.call(
            ALICE,
            ApiKey::DescribeGroups,
            5,
            describe(&["mine", "theirs"])
        )
        .await,
        DescribeGroups
    );
    assert_eq!(answer.groups[0].error_code, 0);
    assert_eq!(
        answer.groups[0].authorized_operations,
        1 << 8,
        "DESCRIBE only"
    );
    assert_eq!(answer.groups[1].error_code, code(GAF));

    let list = || ListGroupsRequest::default();
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::ListGroups, 5, list()).await,
        ListGroups
    );
    let listed: Vec<&str> = answer
        .groups
        .iter()
        .map(|g| g.group_id.0.as_str())
        .collect();
    assert_eq!(listed, vec!["mine"]);
    a.allow(ALICE, CLUSTER, "kafka-cluster", LITERAL, op::DESCRIBE)
        .await;
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::ListGroups, 5, list()).await,
        ListGroups
    );
    assert_eq!(
        answer.groups.len(),
        2,
        "DESCRIBE on the cluster lists every group"
    );

    let delete = DeleteGroupsRequest::default().with_groups_names(vec![gid("mine")]);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::DeleteGroups, 2, delete.clone()).await,
        DeleteGroups
    );
    assert_eq!(answer.results[0].error_code, code(GAF));
    a.allow(ALICE, GROUP, "mine", LITERAL, op::DELETE).await;
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::DeleteGroups, 2, delete).await,
        DeleteGroups
    );
    assert_eq!(answer.results[0].error_code, 0);
}

#[tokio::test]
async fn offset_delete_needs_delete_on_the_group_and_read_on_the_topic() {
    let a = Authorized::start().await;
    a.topic("t", 1).await;
    let _ = a
        .call(ADMIN, ApiKey::OffsetCommit, 9, commit("og", "t"))
        .await;
    let request = OffsetDeleteRequest::default().with_group_id(gid("og")).with_topics(vec![
        kafka_protocol::messages::offset_delete_request::OffsetDeleteRequestTopic::default()
            .with_name(name("t"))
            .with_partitions(vec![
                kafka_protocol::messages::offset_delete_request::OffsetDeleteRequestPartition::default()
                    .with_partition_index(0),
            ]),
    ]);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::OffsetDelete, 0, request.clone())
            .await,
        OffsetDelete
    );
    assert_eq!(answer.error_code, code(GAF));
    a.allow(ALICE, GROUP, "og", LITERAL, op::DELETE).await;
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::OffsetDelete, 0, request.clone())
            .await,
        OffsetDelete
    );
    assert_eq!(answer.error_code, 0);
    assert_eq!(answer.topics[0].partitions[0].error_code, code(TAF));
    a.allow(ALICE, TOPIC, "t", LITERAL, op::READ).await;
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::OffsetDelete, 0, request).await,
        OffsetDelete
    );
    assert_eq!(answer.topics[0].partitions[0].error_code, 0);
}

#[tokio::test]
async fn find_coordinator_needs_describe_on_the_group_or_transactional_id() {
    let a = Authorized::start().await;
    let ask = |key_type: i8, key: &str| {
        FindCoordinatorRequest::default()
            .with_key_type(key_type)
            .with_coordinator_keys(vec![s(key)])
    };
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::FindCoordinator, 4, ask(0, "g")).await,
        FindCoordinator
    );
    assert_eq!(answer.coordinators[0].error_code, code(GAF));
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::FindCoordinator, 4, ask(1, "tx"))
            .await,
        FindCoordinator
    );
    assert_eq!(
        answer.coordinators[0].error_code,
        code(ResponseError::TransactionalIdAuthorizationFailed)
    );
    a.allow(ALICE, GROUP, "g", LITERAL, op::DESCRIBE).await;
    a.allow(ALICE, TRANSACTIONAL_ID, "tx", LITERAL, op::DESCRIBE)
        .await;
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::FindCoordinator, 4, ask(0, "g")).await,
        FindCoordinator
    );
    assert_eq!(answer.coordinators[0].error_code, 0);
    assert!(answer.coordinators[0].node_id.0 >= 0);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::FindCoordinator, 4, ask(1, "tx"))
            .await,
        FindCoordinator
    );
    assert_eq!(answer.coordinators[0].error_code, 0);
    assert!(answer.coordinators[0].node_id.0 >= 0);
}

fn consumer_join(group: &str, topics: &[&str]) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(gid(group))
        .with_member_id(s("member-1"))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(5000)
        .with_subscribed_topic_names(Some(topics.iter().map(|t| name(t)).collect()))
        .with_topic_partitions(Some(vec![]))
}

#[tokio::test]
async fn consumer_group_heartbeats_need_read_on_the_group_and_describe_on_each_topic() {
    let a = Authorized::start().await;
    a.topic("c1", 2).await;
    a.topic("c2", 1).await;
    let beat = |topics: &[&str]| consumer_join("kg", topics);
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::ConsumerGroupHeartbeat, 1, beat(&["c1"]))
            .await,
        ConsumerGroupHeartbeat
    );
    assert_eq!(answer.error_code, code(GAF));
    a.allow(ALICE, GROUP, "kg", LITERAL, op::READ).await;
    a.allow(ALICE, TOPIC, "c1", LITERAL, op::READ).await;
    let answer = expect_kind!(
        a.call(
            ALICE,
            ApiKey::ConsumerGroupHeartbeat,
            1,
            beat(&["c1", "c2"])
        )
        .await,
        ConsumerGroupHeartbeat
    );
    assert_eq!(answer.error_code, code(TAF), "c2 may not be described");
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::ConsumerGroupHeartbeat, 1, beat(&["c1"]))
            .await,
        ConsumerGroupHeartbeat
    );
    assert_eq!(answer.error_code, 0, "{answer:?}");

    // The admin sees the group; alice, who may not describe c2, would not if it were assigned.
    let describe = ConsumerGroupDescribeRequest::default()
        .with_group_ids(vec![gid("kg")])
        .with_include_authorized_operations(true);
    let seen = expect_kind!(
        a.call(ALICE, ApiKey::ConsumerGroupDescribe, 1, describe.clone())
            .await,
        ConsumerGroupDescribe
    );
    assert_eq!(seen.groups[0].error_code, 0, "{seen:?}");
    assert_eq!(
        seen.groups[0].authorized_operations,
        (1 << 3) | (1 << 8),
        "READ and DESCRIBE"
    );
    let admin_join = consumer_join("kg", &["c2"]).with_member_id(s("member-2"));
    let _ = a
        .call(ADMIN, ApiKey::ConsumerGroupHeartbeat, 1, admin_join)
        .await;
    let refused = expect_kind!(
        a.call(ALICE, ApiKey::ConsumerGroupDescribe, 1, describe)
            .await,
        ConsumerGroupDescribe
    );
    assert_eq!(refused.groups[0].error_code, code(TAF), "{refused:?}");
    assert!(refused.groups[0].members.is_empty());
}

#[tokio::test]
async fn a_regex_subscription_matches_only_topics_the_member_may_describe() {
    let a = Authorized::start().await;
    a.topic("rx-open", 1).await;
    a.topic("rx-closed", 1).await;
    a.allow(ALICE, GROUP, "rg", LITERAL, op::READ).await;
    a.allow(ALICE, TOPIC, "rx-open", LITERAL, op::DESCRIBE)
        .await;
    let join = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(gid("rg"))
        .with_member_id(s("member-1"))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(5000)
        .with_subscribed_topic_names(None)
        .with_subscribed_topic_regex(Some(s("rx-.*")))
        .with_topic_partitions(Some(vec![]));
    let answer = expect_kind!(
        a.call(ALICE, ApiKey::ConsumerGroupHeartbeat, 1, join).await,
        ConsumerGroupHeartbeat
    );
    assert_eq!(answer.error_code, 0, "{answer:?}");
    let describe = ConsumerGroupDescribeRequest::default().with_group_ids(vec![gid("rg")]);
    let group = expect_kind!(
        a.call(ADMIN, ApiKey::ConsumerGroupDescribe, 1, describe)
            .await,
        ConsumerGroupDescribe
    );
    let targets: Vec<String> = group.groups[0].members[0]
        .target_assignment
        .topic_partitions
        .iter()
        .map(|t| t.topic_name.0.to_string())
        .collect();
    assert_eq!(targets, vec!["rx-open".to_string()]);
}
