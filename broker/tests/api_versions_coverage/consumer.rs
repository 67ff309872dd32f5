//! The consumer group protocol of KIP-848, one version at a time: ConsumerGroupHeartbeat
//! (join, assignment, fencing, leave) and ConsumerGroupDescribe.

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use uuid::Uuid;

use crate::common::{name, s};
use crate::ctx::Ctx;
use crate::expect_kind;
use crate::groups::{code, gid, stable_member};

const HEARTBEAT_LATEST: i16 = 1;
const LEAVE_EPOCH: i32 = -1;

fn join_request(group: &str, member_id: &str, topic: &str) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(gid(group))
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
    owned: Option<(Uuid, Vec<i32>)>,
) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(gid(group))
        .with_member_id(s(member_id))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1)
        .with_topic_partitions(owned.map(|(topic_id, partitions)| {
            vec![TopicPartitions::default()
                .with_topic_id(topic_id)
                .with_partitions(partitions)]
        }))
}

async fn heartbeat(
    ctx: &mut Ctx,
    version: i16,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    expect_kind!(
        ctx.call(ApiKey::ConsumerGroupHeartbeat, version, request)
            .await,
        ConsumerGroupHeartbeat
    )
}

/// `(topic id, partitions)` of an assignment.
fn assigned(response: &ConsumerGroupHeartbeatResponse) -> Vec<(Uuid, Vec<i32>)> {
    let topics = response
        .assignment
        .iter()
        .flat_map(|a| a.topic_partitions.iter());
    topics.map(|t| (t.topic_id, t.partitions.clone())).collect()
}

/// Joins `group` subscribed to `topic` at `version`; returns the member id. v0 clients let
/// the coordinator name them, v1 clients bring their own id.
async fn join(
    ctx: &mut Ctx,
    version: i16,
    group: &str,
    topic: &str,
) -> (String, ConsumerGroupHeartbeatResponse) {
    let own_id = if version >= 1 {
        Uuid::new_v4().to_string()
    } else {
        String::new()
    };
    let joined = heartbeat(ctx, version, join_request(group, &own_id, topic)).await;
    assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);
    let member = joined.member_id.as_deref().unwrap_or_default().to_string();
    if version >= 1 {
        assert_eq!(member, own_id);
    } else {
        assert!(!member.is_empty());
    }
    (member, joined)
}

pub async fn consumer_group_heartbeat(ctx: &mut Ctx, version: i16) {
    let topic = format!("kip848-v{version}");
    let group = format!("kip848-v{version}-group");
    let topic_id = ctx.create_topic(&topic, 2).await;
    let (member, joined) = join(ctx, version, &group, &topic).await;
    assert_eq!(joined.member_epoch, 1);
    assert!(joined.heartbeat_interval_ms > 0);
    assert_eq!(assigned(&joined), vec![(topic_id, vec![0, 1])]);
    // Owning its assignment, the member stays at its epoch; another epoch is fenced.
    let owned = Some((topic_id, vec![0, 1]));
    let stayed = heartbeat(ctx, version, beat_request(&group, &member, 1, owned)).await;
    assert_eq!((stayed.error_code, stayed.member_epoch), (0, 1));
    let fenced = heartbeat(ctx, version, beat_request(&group, &member, 5, None)).await;
    assert_eq!(fenced.error_code, code(ResponseError::FencedMemberEpoch));
    let left = heartbeat(
        ctx,
        version,
        beat_request(&group, &member, LEAVE_EPOCH, None),
    )
    .await;
    assert_eq!((left.error_code, left.member_epoch), (0, LEAVE_EPOCH));
    let gone = heartbeat(ctx, version, beat_request(&group, &member, 1, None)).await;
    assert_eq!(gone.error_code, code(ResponseError::UnknownMemberId));
}

async fn describe(
    ctx: &mut Ctx,
    version: i16,
    group: &str,
) -> consumer_group_describe_response::DescribedGroup {
    let request = ConsumerGroupDescribeRequest::default().with_group_ids(vec![gid(group)]);
    let mut response = expect_kind!(
        ctx.call(ApiKey::ConsumerGroupDescribe, version, request)
            .await,
        ConsumerGroupDescribe
    );
    assert_eq!(response.groups.len(), 1);
    response.groups.remove(0)
}

pub async fn consumer_group_describe(ctx: &mut Ctx, version: i16) {
    let topic = format!("described848-v{version}");
    let group = format!("described848-v{version}-group");
    ctx.create_topic(&topic, 3).await;
    let (member, _) = join(ctx, HEARTBEAT_LATEST, &group, &topic).await;
    let described = describe(ctx, version, &group).await;
    assert_eq!(
        (described.error_code, &*described.group_state),
        (0, "Stable")
    );
    assert_eq!((described.group_epoch, described.assignment_epoch), (1, 1));
    assert_eq!(&*described.assignor_name, "uniform");
    assert_eq!(described.members.len(), 1);
    let m = &described.members[0];
    assert_eq!(
        (&*m.member_id, &*m.client_id, m.member_epoch),
        (member.as_str(), "broker-tests", 1)
    );
    let subscribed: Vec<&str> = m.subscribed_topic_names.iter().map(|t| &*t.0).collect();
    assert_eq!(subscribed, vec![topic.as_str()]);
    let owned: Vec<(&str, Vec<i32>)> = m
        .assignment
        .topic_partitions
        .iter()
        .map(|t| (&*t.topic_name.0, t.partitions.clone()))
        .collect();
    assert_eq!(owned, vec![(topic.as_str(), vec![0, 1, 2])]);
    // The member type (1: the consumer protocol) is in the answer from v1.
    assert_eq!(m.member_type, if version >= 1 { 1 } else { -1 });
    // Neither an unknown nor a classic group is a consumer group.
    let classic = format!("described848-v{version}-classic");
    stable_member(ctx, &classic, b"a").await;
    for other in [format!("described848-v{version}-missing"), classic] {
        let found = describe(ctx, version, &other).await;
        assert_eq!(
            found.error_code,
            code(ResponseError::GroupIdNotFound),
            "{other}"
        );
    }
}
