//! One member of a classic group, and the answers a member may be waiting for.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::store::{MemberRecord, ProtocolRecord};

/// An assignor protocol a member supports, with its opaque subscription metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol {
    pub name: String,
    pub metadata: Bytes,
}

/// What a JoinGroup answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinResponse {
    pub error: Option<ResponseError>,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader_id: String,
    pub member_id: String,
    /// Only the leader gets the members (with their metadata for the chosen protocol).
    pub members: Vec<JoinedMember>,
    /// JoinGroup v9+: the leader must not compute an assignment (a static leader that came
    /// back into a stable group: the current assignment stands).
    pub skip_assignment: bool,
}

impl JoinResponse {
    pub fn error(error: ResponseError, member_id: &str) -> JoinResponse {
        JoinResponse {
            error: Some(error),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader_id: String::new(),
            member_id: member_id.to_string(),
            members: Vec::new(),
            skip_assignment: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

/// What a SyncGroup answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncResponse {
    pub error: Option<ResponseError>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncResponse {
    pub fn error(error: ResponseError) -> SyncResponse {
        SyncResponse {
            error: Some(error),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

#[derive(Debug)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocols: Vec<Protocol>,
    pub assignment: Bytes,
    /// Past this instant without a heartbeat the member is removed (unless it is waiting for
    /// a join or sync answer, which counts as alive, as in Kafka).
    pub session_deadline_ms: u64,
    /// Waiting for its first join answer: then `session_deadline_ms` is the new-member join
    /// timeout, which runs out even while it waits (Kafka's `isNew`).
    pub is_new: bool,
    pub awaiting_join: Option<oneshot::Sender<JoinResponse>>,
    pub awaiting_sync: Option<oneshot::Sender<SyncResponse>>,
}

impl Member {
    pub fn metadata_for(&self, protocol: &str) -> Option<&Bytes> {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| &p.metadata)
    }

    pub fn is_awaiting(&self) -> bool {
        self.awaiting_join.is_some() || self.awaiting_sync.is_some()
    }

    pub fn touch(&mut self, now_ms: u64) {
        self.session_deadline_ms = now_ms + timeout_ms(self.session_timeout_ms);
    }

    /// Whether the member's session (or, for a new member, its join timeout) ran out at
    /// `now_ms`. Any other member waiting for an answer is alive: its session restarts when
    /// it gets one.
    pub fn session_expired(&self, now_ms: u64) -> bool {
        (self.is_new || !self.is_awaiting()) && self.session_deadline_ms <= now_ms
    }

    /// Answers a pending JoinGroup, if any (a client that went away is not an error).
    pub fn answer_join(&mut self, response: JoinResponse) {
        if let Some(waiter) = self.awaiting_join.take() {
            let _ = waiter.send(response);
        }
    }

    pub fn answer_sync(&mut self, response: SyncResponse) {
        if let Some(waiter) = self.awaiting_sync.take() {
            let _ = waiter.send(response);
        }
    }

    pub fn to_record(&self) -> MemberRecord {
        MemberRecord {
            member_id: self.member_id.clone(),
            group_instance_id: self.group_instance_id.clone(),
            client_id: self.client_id.clone(),
            client_host: self.client_host.clone(),
            session_timeout_ms: self.session_timeout_ms,
            rebalance_timeout_ms: self.rebalance_timeout_ms,
            protocols: self
                .protocols
                .iter()
                .map(|p| ProtocolRecord {
                    name: p.name.clone(),
                    metadata: p.metadata.clone(),
                })
                .collect(),
            assignment: self.assignment.clone(),
        }
    }

    pub fn from_record(record: MemberRecord, now_ms: u64) -> Member {
        let mut member = Member {
            member_id: record.member_id,
            group_instance_id: record.group_instance_id,
            client_id: record.client_id,
            client_host: record.client_host,
            session_timeout_ms: record.session_timeout_ms,
            rebalance_timeout_ms: record.rebalance_timeout_ms,
            protocols: record
                .protocols
                .into_iter()
                .map(|p| Protocol {
                    name: p.name,
                    metadata: p.metadata,
                })
                .collect(),
            assignment: record.assignment,
            session_deadline_ms: 0,
            is_new: false,
            awaiting_join: None,
            awaiting_sync: None,
        };
        member.touch(now_ms);
        member
    }
}

/// Client-supplied timeouts are validated positive before use; clamp defensively anyway.
pub fn timeout_ms(value: i32) -> u64 {
    u64::try_from(value).unwrap_or(0)
}
