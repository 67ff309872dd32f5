//! The group coordinator for the classic consumer group protocol (JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup) and committed offsets, durable in the coordination MetaStore.
//!
//! - [`group`]: the per-group state machine (pure, driven by an explicit `now_ms`);
//! - [`host`]: what the coordinators of both protocols share: loading, locking, timers,
//!   ownership, persistence;
//! - [`coordinator`]: the classic groups of this broker and their committed offsets;
//! - [`expiry`]: when committed offsets of an empty group expire (the coordinator runs it);
//! - [`registry`]: the in-memory groups of a coordinator (both kinds);
//! - [`store`], [`records`] and [`keys`]: what is stored where; [`stored`]: keeping a copy in
//!   step with its record;
//! - [`consumer`]: consumer groups of the KIP-848 protocol, which share the committed offsets.

pub mod clock;
pub mod consumer;
pub mod coordinator;
pub mod expiry;
pub mod group;
pub mod host;
pub mod keys;
pub mod member;
pub mod records;
pub mod registry;
pub mod store;
pub mod stored;

pub use coordinator::GroupCoordinator;

/// Limits and timeouts of the coordinator (Kafka's `group.*` broker settings).
#[derive(Debug, Clone, Copy)]
pub struct GroupConfig {
    /// How long the first rebalance of an empty group waits for more members, and again after
    /// each such wait in which one arrived (`group.initial.rebalance.delay.ms`).
    pub initial_rebalance_delay_ms: u64,
    /// How long a new member may wait for its first JoinGroup answer (Kafka's fixed
    /// `classicGroupNewMemberJoinTimeoutMs`): a client that went away mid-rebalance must not
    /// stay a member for as long as the rebalance lasts.
    pub new_member_join_timeout_ms: u64,
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    /// Members (including ids handed out but not yet used) per group.
    pub members_max: usize,
    /// Groups this coordinator holds.
    pub groups_max: usize,
    /// Protocols one member may offer, and their metadata bytes in total.
    pub member_protocols_max: usize,
    pub member_metadata_bytes_max: usize,
    /// Bytes of all assignments in one SyncGroup.
    pub assignment_bytes_max: usize,
    /// Length of the metadata string of one committed offset (`offset.metadata.max.bytes`).
    pub offset_metadata_bytes_max: usize,
    /// How often timers are checked.
    pub tick_interval_ms: u64,
    /// Committed offsets of an empty group live this long after its last commit, or after
    /// it became empty if later (`offsets.retention.minutes`).
    pub offsets_retention_ms: u64,
    /// Pause between offset expiry runs (`offsets.retention.check.interval.ms`).
    pub offsets_retention_check_interval_ms: u64,
    /// Groups one expiry run examines at most; the next run carries on from there.
    pub expiry_groups_per_run_max: usize,
    /// Settings of the KIP-848 consumer groups.
    pub consumer: consumer::ConsumerGroupConfig,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            initial_rebalance_delay_ms: 3000,
            new_member_join_timeout_ms: 300_000,
            min_session_timeout_ms: 6000,
            max_session_timeout_ms: 1_800_000,
            members_max: 1000,
            groups_max: 100_000,
            member_protocols_max: 16,
            member_metadata_bytes_max: 1 << 20,
            assignment_bytes_max: 16 << 20,
            offset_metadata_bytes_max: 4096,
            tick_interval_ms: 100,
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
            expiry_groups_per_run_max: 10_000,
            consumer: consumer::ConsumerGroupConfig::default(),
        }
    }
}

impl GroupConfig {
    /// The defaults, with the settings the broker's command line exposes.
    pub fn from_config(config: &crate::config::Config) -> GroupConfig {
        GroupConfig {
            initial_rebalance_delay_ms: config.group_initial_rebalance_delay_ms,
            min_session_timeout_ms: config.group_min_session_timeout_ms,
            offsets_retention_ms: config.offsets_retention_ms(),
            offsets_retention_check_interval_ms: config.offsets_retention_check_interval_ms,
            consumer: consumer::ConsumerGroupConfig {
                session_timeout_ms: config.group_consumer_session_timeout_ms,
                heartbeat_interval_ms: config.group_consumer_heartbeat_interval_ms,
                ..consumer::ConsumerGroupConfig::default()
            },
            ..GroupConfig::default()
        }
    }
}

#[cfg(test)]
mod coordinator_tests;
#[cfg(test)]
mod expiry_tests;
#[cfg(test)]
mod group_tests;
