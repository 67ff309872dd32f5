//! Committed offsets, one version at a time: OffsetCommit (standalone and by a group member),
//! OffsetFetch (named partitions, all of them, several groups) and OffsetDelete.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use kafka_protocol::ResponseError;

use crate::common::{name, s};
use crate::ctx::Ctx;
use crate::expect_kind;
use crate::groups::{code, gid, join_request, stable_member, sync_request};

const COMMIT_LATEST: i16 = 9;
const LEADER_EPOCH: i32 = 7;

/// `(partition, offset, leader epoch, metadata)`.
type Committed = (i32, i64, i32, String);

fn commit_request(
    group: &str,
    generation: i32,
    member: &str,
    topic: &str,
    offsets: &[(i32, i64)],
) -> OffsetCommitRequest {
    let partitions = offsets
        .iter()
        .map(|&(partition, offset)| {
            OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(LEADER_EPOCH)
                .with_committed_metadata(Some(s(&format!("md-{partition}"))))
        })
        .collect();
    OffsetCommitRequest::default()
        .with_group_id(gid(group))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(member))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(name(topic))
            .with_partitions(partitions)])
}

/// One error per committed offset, in order.
async fn commit(ctx: &mut Ctx, version: i16, request: OffsetCommitRequest) -> Vec<i16> {
    let response = expect_kind!(
        ctx.call(ApiKey::OffsetCommit, version, request).await,
        OffsetCommit
    );
    response
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

/// Commits `offset` for partition 0 outside group management (latest version).
pub async fn commit_standalone(ctx: &mut Ctx, group: &str, topic: &str, offset: i64) {
    let request = commit_request(group, -1, "", topic, &[(0, offset)]);
    assert_eq!(commit(ctx, COMMIT_LATEST, request).await, vec![0]);
}

/// `(topic, partition, offset, leader epoch, metadata)` of one answered partition.
type Row = (String, i32, i64, i32, String);

fn row(
    topic: &TopicName,
    partition: i32,
    offset: i64,
    epoch: i32,
    metadata: &Option<StrBytes>,
) -> Row {
    let metadata = metadata.as_deref().unwrap_or_default().to_string();
    (topic.0.to_string(), partition, offset, epoch, metadata)
}

/// What OffsetFetch `version` returns for `partitions` of `topic` (every committed partition
/// when empty, which v2+ can ask).
pub async fn committed(
    ctx: &mut Ctx,
    version: i16,
    group: &str,
    topic: &str,
    partitions: &[i32],
) -> Vec<Committed> {
    let wanted = (!partitions.is_empty()).then(|| partitions.to_vec());
    let rows = if version >= 8 {
        let topics = wanted.map(|p| {
            vec![OffsetFetchRequestTopics::default()
                .with_name(name(topic))
                .with_partition_indexes(p)]
        });
        let asked = OffsetFetchRequestGroup::default()
            .with_group_id(gid(group))
            .with_topics(topics);
        fetch_groups(ctx, version, vec![asked]).await.remove(0)
    } else {
        let topics = wanted.map(|p| {
            vec![OffsetFetchRequestTopic::default()
                .with_name(name(topic))
                .with_partition_indexes(p)]
        });
        fetch_group(ctx, version, group, topics).await
    };
    rows.into_iter()
        .map(|(t, partition, offset, epoch, metadata)| {
            assert_eq!(t, topic, "only the topic asked is answered");
            (partition, offset, epoch, metadata)
        })
        .collect()
}

/// OffsetFetch v1-7: one group.
async fn fetch_group(
    ctx: &mut Ctx,
    version: i16,
    group: &str,
    topics: Option<Vec<OffsetFetchRequestTopic>>,
) -> Vec<Row> {
    let request = OffsetFetchRequest::default()
        .with_group_id(gid(group))
        .with_topics(topics);
    let response = expect_kind!(
        ctx.call(ApiKey::OffsetFetch, version, request).await,
        OffsetFetch
    );
    assert_eq!(response.error_code, 0);
    let partitions = response
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t, p)));
    partitions
        .map(|(t, p)| {
            row(
                &t.name,
                p.partition_index,
                p.committed_offset,
                p.committed_leader_epoch,
                &p.metadata,
            )
        })
        .collect()
}

/// OffsetFetch v8+: several groups, each answered with its rows.
async fn fetch_groups(
    ctx: &mut Ctx,
    version: i16,
    groups: Vec<OffsetFetchRequestGroup>,
) -> Vec<Vec<Row>> {
    let asked: Vec<GroupId> = groups.iter().map(|g| g.group_id.clone()).collect();
    let request = OffsetFetchRequest::default().with_groups(groups);
    let response = expect_kind!(
        ctx.call(ApiKey::OffsetFetch, version, request).await,
        OffsetFetch
    );
    let answered: Vec<GroupId> = response.groups.iter().map(|g| g.group_id.clone()).collect();
    assert_eq!(answered, asked);
    let rows = |g: &offset_fetch_response::OffsetFetchResponseGroup| {
        assert_eq!(g.error_code, 0);
        let partitions = g
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t, p)));
        partitions
            .map(|(t, p)| {
                row(
                    &t.name,
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    &p.metadata,
                )
            })
            .collect()
    };
    response.groups.iter().map(rows).collect()
}

pub async fn offset_commit(ctx: &mut Ctx, version: i16) {
    let topic = format!("commits-v{version}");
    ctx.create_topic(&topic, 3).await;
    let standalone = format!("commits-v{version}-standalone");
    let first = 10 + i64::from(version);
    let request = commit_request(&standalone, -1, "", &topic, &[(0, first), (2, 5)]);
    assert_eq!(commit(ctx, version, request).await, vec![0, 0]);
    // The leader epoch is kept from v6; older versions cannot send one.
    let epoch = if version >= 6 { LEADER_EPOCH } else { -1 };
    assert_eq!(
        committed(ctx, COMMIT_LATEST, &standalone, &topic, &[0, 1, 2]).await,
        vec![
            (0, first, epoch, "md-0".into()),
            (1, -1, -1, String::new()),
            (2, 5, epoch, "md-2".into())
        ]
    );

    // A member commits in its generation; another generation is refused.
    let group = format!("commits-v{version}-member");
    let (member, generation) = stable_member(ctx, &group, b"a").await;
    let request = commit_request(&group, generation, &member, &topic, &[(1, 42)]);
    assert_eq!(commit(ctx, version, request).await, vec![0]);
    let request = commit_request(&group, generation + 1, &member, &topic, &[(1, 43)]);
    assert_eq!(
        commit(ctx, version, request).await,
        vec![code(ResponseError::IllegalGeneration)]
    );
    assert_eq!(
        committed(ctx, COMMIT_LATEST, &group, &topic, &[1]).await[0].1,
        42
    );

    let request = commit_request(&standalone, -1, "", &topic, &[(3, 1)]);
    let unknown = code(ResponseError::UnknownTopicOrPartition);
    assert_eq!(commit(ctx, version, request).await, vec![unknown]);
}

pub async fn offset_fetch(ctx: &mut Ctx, version: i16) {
    let topic = format!("fetched-v{version}");
    ctx.create_topic(&topic, 3).await;
    let group = format!("fetched-v{version}-group");
    let request = commit_request(&group, -1, "", &topic, &[(0, 11), (2, 22)]);
    assert_eq!(commit(ctx, COMMIT_LATEST, request).await, vec![0, 0]);
    // The leader epoch is in the answer from v5.
    let epoch = if version >= 5 { LEADER_EPOCH } else { -1 };
    let expected = vec![
        (0, 11, epoch, "md-0".to_string()),
        (1, -1, -1, String::new()),
        (2, 22, epoch, "md-2".to_string()),
    ];
    assert_eq!(
        committed(ctx, version, &group, &topic, &[0, 1, 2]).await,
        expected
    );
    // From v2, no topics means every committed partition.
    if version >= 2 {
        let all = committed(ctx, version, &group, &topic, &[]).await;
        assert_eq!(all, vec![expected[0].clone(), expected[2].clone()]);
    }
    let nobody = committed(
        ctx,
        version,
        &format!("fetched-v{version}-nobody"),
        &topic,
        &[0],
    )
    .await;
    assert_eq!(nobody, vec![(0, -1, -1, String::new())]);
    // From v8, several groups in one request.
    if version >= 8 {
        let other = format!("fetched-v{version}-other");
        commit_standalone(ctx, &other, &topic, 99).await;
        let everything = |g: &str| {
            OffsetFetchRequestGroup::default()
                .with_group_id(gid(g))
                .with_topics(None)
        };
        let groups = fetch_groups(ctx, version, vec![everything(&group), everything(&other)]).await;
        let offsets: Vec<Vec<i64>> = groups
            .iter()
            .map(|g| g.iter().map(|r| r.2).collect())
            .collect();
        assert_eq!(offsets, vec![vec![11, 22], vec![99]]);
    }
}

/// Member metadata of the `consumer` protocol subscribing to `topics`.
fn subscription(topics: &[&str]) -> Bytes {
    let mut metadata = BytesMut::new();
    metadata.extend_from_slice(&0i16.to_be_bytes());
    ConsumerProtocolSubscription::default()
        .with_topics(topics.iter().map(|t| s(t)).collect())
        .encode(&mut metadata, 0)
        .unwrap();
    metadata.freeze()
}

pub async fn offset_delete(ctx: &mut Ctx, version: i16) {
    let group = format!("od-v{version}");
    let subscribed = format!("od-v{version}-subscribed");
    let other = format!("od-v{version}-other");
    ctx.create_topic(&subscribed, 1).await;
    ctx.create_topic(&other, 1).await;
    let joined = expect_kind!(
        ctx.call(
            ApiKey::JoinGroup,
            3,
            join_request(3, &group, "", subscription(&[&subscribed]))
        )
        .await,
        JoinGroup
    );
    let member = joined.member_id.to_string();
    let synced = ctx
        .call(
            ApiKey::SyncGroup,
            3,
            sync_request(3, &group, joined.generation_id, &member, &[]),
        )
        .await;
    assert_eq!(expect_kind!(synced, SyncGroup).error_code, 0);
    for topic in [&subscribed, &other] {
        let request = commit_request(&group, joined.generation_id, &member, topic, &[(0, 5)]);
        assert_eq!(commit(ctx, COMMIT_LATEST, request).await, vec![0]);
    }
    let partition0 = || vec![OffsetDeleteRequestPartition::default().with_partition_index(0)];
    let request = OffsetDeleteRequest::default()
        .with_group_id(gid(&group))
        .with_topics(
            [subscribed.as_str(), other.as_str(), "od-missing"]
                .iter()
                .map(|t| {
                    OffsetDeleteRequestTopic::default()
                        .with_name(name(t))
                        .with_partitions(partition0())
                })
                .collect(),
        );
    let response = expect_kind!(
        ctx.call(ApiKey::OffsetDelete, version, request).await,
        OffsetDelete
    );
    assert_eq!(response.error_code, 0);
    let codes: Vec<i16> = response
        .topics
        .iter()
        .map(|t| t.partitions[0].error_code)
        .collect();
    let expected = vec![
        code(ResponseError::GroupSubscribedToTopic),
        0,
        code(ResponseError::UnknownTopicOrPartition),
    ];
    assert_eq!(codes, expected);
    assert_eq!(
        committed(ctx, COMMIT_LATEST, &group, &other, &[0]).await[0].1,
        -1
    );
    assert_eq!(
        committed(ctx, COMMIT_LATEST, &group, &subscribed, &[0]).await[0].1,
        5
    );
    let request =
        OffsetDeleteRequest::default().with_group_id(gid(&format!("od-v{version}-nobody")));
    let response = expect_kind!(
        ctx.call(ApiKey::OffsetDelete, version, request).await,
        OffsetDelete
    );
    assert_eq!(response.error_code, code(ResponseError::GroupIdNotFound));
}
