//! The classic group protocol, one version at a time: FindCoordinator, JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup, DescribeGroups, ListGroups, DeleteGroups. Requests of the other
//! group APIs go at their latest version.

use bytes::Bytes;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::common::{s, Client};
use crate::ctx::Ctx;
use crate::expect_kind;
use crate::offsets::commit_standalone;

pub const SESSION_MS: i32 = 10_000;
pub const JOIN_LATEST: i16 = 9;
pub const SYNC_LATEST: i16 = 5;
const HEARTBEAT_LATEST: i16 = 4;
const DESCRIBE_LATEST: i16 = 5;
/// DescribeGroups' "authorized operations not requested".
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

pub fn gid(group: &str) -> GroupId {
    GroupId(s(group))
}

pub fn code(error: ResponseError) -> i16 {
    error.code()
}

pub fn join_request(
    version: i16,
    group: &str,
    member_id: &str,
    metadata: Bytes,
) -> JoinGroupRequest {
    let request = JoinGroupRequest::default()
        .with_group_id(gid(group))
        .with_session_timeout_ms(SESSION_MS)
        .with_member_id(s(member_id))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(metadata)]);
    // The rebalance timeout exists from v1 (v0 uses the session timeout).
    if version >= 1 {
        request.with_rebalance_timeout_ms(5_000)
    } else {
        request
    }
}

/// Joins `group` as a new member at `version`, taking the MEMBER_ID_REQUIRED round trip that
/// v4+ require (and only they), and returns the final answer.
pub async fn join(ctx: &mut Ctx, version: i16, group: &str) -> JoinGroupResponse {
    let meta = Bytes::from_static(b"meta");
    let request = join_request(version, group, "", meta.clone());
    let first = expect_kind!(
        ctx.call(ApiKey::JoinGroup, version, request).await,
        JoinGroup
    );
    if version < 4 {
        return first;
    }
    assert_eq!(first.error_code, code(ResponseError::MemberIdRequired));
    assert!(!first.member_id.is_empty());
    let request = join_request(version, group, &first.member_id, meta);
    expect_kind!(
        ctx.call(ApiKey::JoinGroup, version, request).await,
        JoinGroup
    )
}

pub fn sync_request(
    version: i16,
    group: &str,
    generation: i32,
    member_id: &str,
    assignments: &[(&str, &'static [u8])],
) -> SyncGroupRequest {
    let assignments = assignments
        .iter()
        .map(|(member, assignment)| {
            SyncGroupRequestAssignment::default()
                .with_member_id(s(member))
                .with_assignment(Bytes::from_static(assignment))
        })
        .collect();
    let request = SyncGroupRequest::default()
        .with_group_id(gid(group))
        .with_generation_id(generation)
        .with_member_id(s(member_id))
        .with_assignments(assignments);
    // v5 names the protocol the member believes was chosen.
    if version >= 5 {
        request
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(Some(s("range")))
    } else {
        request
    }
}

async fn sync(ctx: &mut Ctx, version: i16, request: SyncGroupRequest) -> SyncGroupResponse {
    expect_kind!(
        ctx.call(ApiKey::SyncGroup, version, request).await,
        SyncGroup
    )
}

/// A one-member Stable group (latest versions); returns `(member id, generation)`.
pub async fn stable_member(ctx: &mut Ctx, group: &str, assignment: &'static [u8]) -> (String, i32) {
    let joined = join(ctx, JOIN_LATEST, group).await;
    assert_eq!(joined.error_code, 0);
    let member = joined.member_id.to_string();
    let request = sync_request(
        SYNC_LATEST,
        group,
        joined.generation_id,
        &member,
        &[(&member, assignment)],
    );
    assert_eq!(sync(ctx, SYNC_LATEST, request).await.error_code, 0);
    (member, joined.generation_id)
}

fn heartbeat_request(group: &str, generation: i32, member_id: &str) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(gid(group))
        .with_generation_id(generation)
        .with_member_id(s(member_id))
}

async fn heartbeat_code(
    ctx: &mut Ctx,
    version: i16,
    group: &str,
    generation: i32,
    member: &str,
) -> i16 {
    let request = heartbeat_request(group, generation, member);
    expect_kind!(
        ctx.call(ApiKey::Heartbeat, version, request).await,
        Heartbeat
    )
    .error_code
}

/// One error per leaving member (v3+ leave several at once; older versions one).
async fn leave_codes(ctx: &mut Ctx, version: i16, group: &str, members: &[&str]) -> Vec<i16> {
    let request = if version >= 3 {
        let members = members
            .iter()
            .map(|m| MemberIdentity::default().with_member_id(s(m)))
            .collect();
        LeaveGroupRequest::default()
            .with_group_id(gid(group))
            .with_members(members)
    } else {
        assert_eq!(members.len(), 1, "v{version} leaves one member");
        LeaveGroupRequest::default()
            .with_group_id(gid(group))
            .with_member_id(s(members[0]))
    };
    let response = expect_kind!(
        ctx.call(ApiKey::LeaveGroup, version, request).await,
        LeaveGroup
    );
    if version < 3 {
        return vec![response.error_code];
    }
    assert_eq!(response.error_code, 0);
    let answered: Vec<&str> = response.members.iter().map(|m| &*m.member_id).collect();
    assert_eq!(answered, members);
    response.members.iter().map(|m| m.error_code).collect()
}

pub async fn describe(ctx: &mut Ctx, version: i16, group: &str) -> DescribedGroup {
    let request = DescribeGroupsRequest::default().with_groups(vec![gid(group)]);
    let mut response = expect_kind!(
        ctx.call(ApiKey::DescribeGroups, version, request).await,
        DescribeGroups
    );
    assert_eq!(response.groups.len(), 1);
    let described = response.groups.remove(0);
    assert_eq!(&*described.group_id.0, group);
    described
}

pub async fn find_coordinator(ctx: &mut Ctx, version: i16) {
    let port = i32::from(ctx.broker.addr().port());
    // v4 looks up several keys at once; older versions one.
    let (request, transactional) = if version >= 4 {
        let keys = vec![s("g1"), s("g/2")];
        (
            FindCoordinatorRequest::default().with_coordinator_keys(keys),
            FindCoordinatorRequest::default()
                .with_key_type(1)
                .with_coordinator_keys(vec![s("txn")]),
        )
    } else {
        (
            FindCoordinatorRequest::default().with_key(s("g1")),
            FindCoordinatorRequest::default()
                .with_key_type(1)
                .with_key(s("txn")),
        )
    };
    let response = expect_kind!(
        ctx.call(ApiKey::FindCoordinator, version, request).await,
        FindCoordinator
    );
    if version >= 4 {
        let found: Vec<(&str, i16, i32, &str, i32)> = response
            .coordinators
            .iter()
            .map(|c| (&*c.key, c.error_code, c.node_id.0, &*c.host, c.port))
            .collect();
        let expected = vec![
            ("g1", 0, 1, "127.0.0.1", port),
            ("g/2", 0, 1, "127.0.0.1", port),
        ];
        assert_eq!(found, expected);
    } else {
        let found = (
            response.error_code,
            response.node_id.0,
            &*response.host,
            response.port,
        );
        assert_eq!(found, (0, 1, "127.0.0.1", port));
    }
    // Transaction coordinators (key type 1, v1+): this broker too.
    if version >= 1 {
        let response = expect_kind!(
            ctx.call(ApiKey::FindCoordinator, version, transactional)
                .await,
            FindCoordinator
        );
        let found = if version >= 4 {
            let c = &response.coordinators[0];
            (c.error_code, c.node_id.0, c.port)
        } else {
            (response.error_code, response.node_id.0, response.port)
        };
        assert_eq!(found, (0, 1, port));
    }
}

pub async fn join_group(ctx: &mut Ctx, version: i16) {
    let group = format!("join-v{version}");
    let joined = join(ctx, version, &group).await;
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.generation_id, 1);
    let member = joined.member_id.to_string();
    assert!(!member.is_empty());
    assert_eq!(&*joined.leader, member.as_str(), "the only member leads");
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    if version >= 7 {
        assert_eq!(joined.protocol_type.as_deref(), Some("consumer"));
    }
    let members: Vec<(&str, &[u8])> = joined
        .members
        .iter()
        .map(|m| (&*m.member_id, &m.metadata[..]))
        .collect();
    assert_eq!(members, vec![(member.as_str(), &b"meta"[..])]);
    // The member is real: it syncs, heartbeats and is described.
    let request = sync_request(SYNC_LATEST, &group, 1, &member, &[(&member, b"a")]);
    assert_eq!(
        sync(ctx, SYNC_LATEST, request).await.assignment,
        Bytes::from_static(b"a")
    );
    assert_eq!(
        heartbeat_code(ctx, HEARTBEAT_LATEST, &group, 1, &member).await,
        0
    );
    let described = describe(ctx, DESCRIBE_LATEST, &group).await;
    assert_eq!(
        (&*described.group_state, described.members.len()),
        ("Stable", 1)
    );
    // A member id the group never handed out is refused.
    let stranger = join_request(version, &group, "stranger", Bytes::from_static(b"m"));
    let refused = expect_kind!(
        ctx.call(ApiKey::JoinGroup, version, stranger).await,
        JoinGroup
    );
    assert_eq!(refused.error_code, code(ResponseError::UnknownMemberId));
}

pub async fn sync_group(ctx: &mut Ctx, version: i16) {
    let group = format!("sync-v{version}");
    let joined = join(ctx, JOIN_LATEST, &group).await;
    let (member, generation) = (joined.member_id.to_string(), joined.generation_id);
    let request = sync_request(version, &group, generation, &member, &[(&member, b"p0p1")]);
    let synced = sync(ctx, version, request).await;
    assert_eq!(
        (synced.error_code, &synced.assignment[..]),
        (0, &b"p0p1"[..])
    );
    if version >= 5 {
        assert_eq!(synced.protocol_type.as_deref(), Some("consumer"));
        assert_eq!(synced.protocol_name.as_deref(), Some("range"));
    }
    // Stable now: a repeated SyncGroup gets the same assignment.
    let again = sync(
        ctx,
        version,
        sync_request(version, &group, generation, &member, &[]),
    )
    .await;
    assert_eq!((again.error_code, &again.assignment[..]), (0, &b"p0p1"[..]));
    let stale = sync(
        ctx,
        version,
        sync_request(version, &group, generation + 1, &member, &[]),
    )
    .await;
    assert_eq!(stale.error_code, code(ResponseError::IllegalGeneration));
    let stranger = sync(
        ctx,
        version,
        sync_request(version, &group, generation, "stranger", &[]),
    )
    .await;
    assert_eq!(stranger.error_code, code(ResponseError::UnknownMemberId));
}

pub async fn heartbeat(ctx: &mut Ctx, version: i16) {
    let group = format!("heartbeat-v{version}");
    let (member, generation) = stable_member(ctx, &group, b"all").await;
    assert_eq!(
        heartbeat_code(ctx, version, &group, generation, &member).await,
        0
    );
    let stale = heartbeat_code(ctx, version, &group, generation - 1, &member).await;
    assert_eq!(stale, code(ResponseError::IllegalGeneration));
    let stranger = heartbeat_code(ctx, version, &group, generation, "stranger").await;
    assert_eq!(stranger, code(ResponseError::UnknownMemberId));

    // A second member joins (and waits): the first learns of the rebalance by heartbeat.
    let mut other = ctx.connect().await;
    let waiting_group = group.clone();
    let second = tokio::spawn(async move { join_on(&mut other, &waiting_group).await });
    let mut seen = 0;
    for _ in 0..100 {
        seen = heartbeat_code(ctx, version, &group, generation, &member).await;
        if seen != 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(seen, code(ResponseError::RebalanceInProgress));
    // The first member rejoins; the rebalance completes for both.
    let meta = Bytes::from_static(b"meta");
    let request = join_request(JOIN_LATEST, &group, &member, meta);
    let rejoined = expect_kind!(
        ctx.call(ApiKey::JoinGroup, JOIN_LATEST, request).await,
        JoinGroup
    );
    let joined = second.await.unwrap();
    assert_eq!((rejoined.error_code, joined.error_code), (0, 0));
    assert_eq!(
        (rejoined.generation_id, joined.generation_id),
        (generation + 1, generation + 1)
    );
}

/// A new member joining on its own connection (latest version); the answer once the
/// rebalance completes.
async fn join_on(client: &mut Client, group: &str) -> JoinGroupResponse {
    let meta = Bytes::from_static(b"meta");
    let request = join_request(JOIN_LATEST, group, "", meta.clone());
    let first = expect_kind!(
        client.call(ApiKey::JoinGroup, JOIN_LATEST, request).await,
        JoinGroup
    );
    assert_eq!(first.error_code, code(ResponseError::MemberIdRequired));
    let request = join_request(JOIN_LATEST, group, &first.member_id, meta);
    expect_kind!(
        client.call(ApiKey::JoinGroup, JOIN_LATEST, request).await,
        JoinGroup
    )
}

pub async fn leave_group(ctx: &mut Ctx, version: i16) {
    let group = format!("leave-v{version}");
    let (member, _) = stable_member(ctx, &group, b"all").await;
    let unknown = code(ResponseError::UnknownMemberId);
    if version >= 3 {
        // Several members in one request, each answered.
        let codes = leave_codes(ctx, version, &group, &[&member, "stranger"]).await;
        assert_eq!(codes, vec![0, unknown]);
    } else {
        assert_eq!(leave_codes(ctx, version, &group, &[&member]).await, vec![0]);
    }
    let described = describe(ctx, DESCRIBE_LATEST, &group).await;
    assert_eq!(
        (&*described.group_state, described.members.len()),
        ("Empty", 0)
    );
    assert_eq!(
        leave_codes(ctx, version, &group, &[&member]).await,
        vec![unknown]
    );
    let gone = heartbeat_code(ctx, HEARTBEAT_LATEST, &group, 1, &member).await;
    assert_eq!(gone, unknown);
}

pub async fn describe_groups(ctx: &mut Ctx, version: i16) {
    let group = format!("described-v{version}");
    let (member, _) = stable_member(ctx, &group, b"assigned").await;
    let described = describe(ctx, version, &group).await;
    let found = (
        described.error_code,
        &*described.group_state,
        &*described.protocol_type,
        &*described.protocol_data,
    );
    assert_eq!(found, (0, "Stable", "consumer", "range"));
    if version >= 3 {
        assert_eq!(described.authorized_operations, OPERATIONS_NOT_REQUESTED);
    }
    assert_eq!(described.members.len(), 1);
    let m = &described.members[0];
    assert_eq!(
        (&*m.member_id, &*m.client_id),
        (member.as_str(), "broker-tests")
    );
    assert_eq!(
        (&m.member_metadata[..], &m.member_assignment[..]),
        (&b"meta"[..], &b"assigned"[..])
    );
    if version >= 4 {
        assert_eq!(m.group_instance_id, None);
    }
    // An unknown group is Dead; from v6 it is also GROUP_ID_NOT_FOUND.
    let missing = describe(ctx, version, &format!("missing-v{version}")).await;
    assert_eq!(&*missing.group_state, "Dead");
    let expected = if version >= 6 {
        code(ResponseError::GroupIdNotFound)
    } else {
        0
    };
    assert_eq!(missing.error_code, expected);
}

/// `(group, protocol type, state, type)` of this scenario's groups in a ListGroups answer.
async fn listed(
    ctx: &mut Ctx,
    version: i16,
    prefix: &str,
    request: ListGroupsRequest,
) -> Vec<(String, String, String, String)> {
    let response = expect_kind!(
        ctx.call(ApiKey::ListGroups, version, request).await,
        ListGroups
    );
    assert_eq!(response.error_code, 0);
    let mut rows: Vec<(String, String, String, String)> = response
        .groups
        .iter()
        .filter(|g| g.group_id.0.starts_with(prefix))
        .map(|g| {
            (
                g.group_id.0.to_string(),
                g.protocol_type.to_string(),
                g.group_state.to_string(),
                g.group_type.to_string(),
            )
        })
        .collect();
    rows.sort();
    rows
}

pub async fn list_groups(ctx: &mut Ctx, version: i16) {
    let prefix = format!("listed-v{version}-");
    let active = format!("{prefix}active");
    let idle = format!("{prefix}idle");
    stable_member(ctx, &active, b"a").await;
    let topic = format!("{prefix}topic");
    ctx.create_topic(&topic, 1).await;
    commit_standalone(ctx, &idle, &topic, 3).await;
    let row = |group: &str, protocol: &str, state: &str| {
        // The state is in the answer from v4, the group type from v5.
        let state = if version >= 4 { state } else { "" };
        let kind = if version >= 5 { "classic" } else { "" };
        (
            group.to_string(),
            protocol.to_string(),
            state.to_string(),
            kind.to_string(),
        )
    };
    let all = listed(ctx, version, &prefix, ListGroupsRequest::default()).await;
    assert_eq!(
        all,
        vec![row(&active, "consumer", "Stable"), row(&idle, "", "Empty")]
    );
    if version >= 4 {
        let stable = ListGroupsRequest::default().with_states_filter(vec![s("Stable")]);
        let rows = listed(ctx, version, &prefix, stable).await;
        assert_eq!(rows, vec![row(&active, "consumer", "Stable")]);
    }
    if version >= 5 {
        let classic = ListGroupsRequest::default().with_types_filter(vec![s("classic")]);
        assert_eq!(listed(ctx, version, &prefix, classic).await.len(), 2);
        let consumer = ListGroupsRequest::default().with_types_filter(vec![s("consumer")]);
        assert!(listed(ctx, version, &prefix, consumer).await.is_empty());
    }
}

pub async fn delete_groups(ctx: &mut Ctx, version: i16) {
    let idle = format!("deleted-v{version}-idle");
    let active = format!("deleted-v{version}-active");
    let missing = format!("deleted-v{version}-missing");
    let topic = format!("deleted-v{version}-topic");
    ctx.create_topic(&topic, 1).await;
    commit_standalone(ctx, &idle, &topic, 7).await;
    stable_member(ctx, &active, b"a").await;
    let request = DeleteGroupsRequest::default().with_groups_names(vec![
        gid(&idle),
        gid(&active),
        gid(&missing),
    ]);
    let response = expect_kind!(
        ctx.call(ApiKey::DeleteGroups, version, request).await,
        DeleteGroups
    );
    let results: Vec<(&str, i16)> = response
        .results
        .iter()
        .map(|r| (&*r.group_id.0, r.error_code))
        .collect();
    let expected = vec![
        (idle.as_str(), 0),
        (active.as_str(), code(ResponseError::NonEmptyGroup)),
        (missing.as_str(), code(ResponseError::GroupIdNotFound)),
    ];
    assert_eq!(results, expected);
    // The deleted group and its offsets are gone; the active one is untouched.
    assert_eq!(
        &*describe(ctx, DESCRIBE_LATEST, &idle).await.group_state,
        "Dead"
    );
    let offsets = crate::offsets::committed(ctx, 9, &idle, &topic, &[0]).await;
    assert_eq!(offsets, vec![(0, -1, -1, String::new())]);
    assert_eq!(
        &*describe(ctx, DESCRIBE_LATEST, &active).await.group_state,
        "Stable"
    );
}
