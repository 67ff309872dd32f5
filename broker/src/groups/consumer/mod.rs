//! The consumer group protocol of KIP-848 (`ConsumerGroupHeartbeat`, `ConsumerGroupDescribe`):
//! the coordinator computes assignments itself and hands them out through heartbeats.
//!
//! - [`assignor`]: the server-side `uniform` and `range` assignors (pure);
//! - [`reconcile`]: how one member moves towards its target assignment without two members
//!   ever owning a partition at once (pure);
//! - [`group`]: one group's state machine, driven by an explicit `now_ms`;
//! - [`store`]: the durable group record;
//! - [`topic_regex`]: subscriptions by regular expression and the cache of what they match;
//! - [`coordinator`]: the consumer groups of this broker, locking, timers, persistence.

pub mod assignor;
pub mod coordinator;
pub mod group;
pub mod reconcile;
pub mod store;
pub mod topic_regex;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use coordinator::ConsumerCoordinator;
pub use topic_regex::TopicRegexError;

/// Partitions by topic id, as the protocol carries them.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// A subscribed topic as the assignors see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicMeta {
    pub id: Uuid,
    pub name: String,
    pub partitions: i32,
}

/// Subscribed topics that exist, by name.
pub type TopicsMeta = BTreeMap<String, TopicMeta>;

/// The existing topics, as a group sees them during one heartbeat.
pub trait TopicSource: Sync {
    /// The topic named `name`, if it exists.
    fn topic(&self, name: &str) -> Option<TopicMeta>;
    /// The names of the existing topics that `pattern` matches whole.
    fn matching(&self, pattern: &str) -> Result<Arc<BTreeSet<String>>, TopicRegexError>;
}

/// For tests that look topics up by name only: they know no topic list, so a valid regex
/// matches nothing.
#[cfg(test)]
impl<F: Fn(&str) -> Option<TopicMeta> + Sync> TopicSource for F {
    fn topic(&self, name: &str) -> Option<TopicMeta> {
        self(name)
    }

    fn matching(&self, pattern: &str) -> Result<Arc<BTreeSet<String>>, TopicRegexError> {
        topic_regex::compile(pattern)?;
        Ok(Arc::default())
    }
}

/// Limits and timeouts (Kafka's `group.consumer.*` broker settings).
#[derive(Debug, Clone, Copy)]
pub struct ConsumerGroupConfig {
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    /// Members per group (`group.consumer.max.size`).
    pub members_max: usize,
    /// Consumer groups this coordinator holds.
    pub groups_max: usize,
    /// Topics one member may subscribe to.
    pub subscribed_topics_max: usize,
    /// How often session and revocation deadlines are checked.
    pub tick_interval_ms: u64,
}

impl Default for ConsumerGroupConfig {
    fn default() -> Self {
        ConsumerGroupConfig {
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            members_max: 1000,
            groups_max: 100_000,
            subscribed_topics_max: 10_000,
            tick_interval_ms: 100,
        }
    }
}

/// `a - b`.
pub(crate) fn minus(a: &Assignment, b: &Assignment) -> Assignment {
    let mut out = Assignment::new();
    for (topic, partitions) in a {
        let rest: BTreeSet<i32> = match b.get(topic) {
            Some(other) => partitions.difference(other).copied().collect(),
            None => partitions.clone(),
        };
        if !rest.is_empty() {
            out.insert(*topic, rest);
        }
    }
    out
}

/// `a ∩ b`.
pub(crate) fn intersect(a: &Assignment, b: &Assignment) -> Assignment {
    let mut out = Assignment::new();
    for (topic, partitions) in a {
        if let Some(other) = b.get(topic) {
            let both: BTreeSet<i32> = partitions.intersection(other).copied().collect();
            if !both.is_empty() {
                out.insert(*topic, both);
            }
        }
    }
    out
}

pub(crate) fn insert(assignment: &mut Assignment, topic: Uuid, partition: i32) {
    assignment.entry(topic).or_default().insert(partition);
}

pub(crate) fn partition_count(assignment: &Assignment) -> usize {
    assignment.values().map(BTreeSet::len).sum()
}

#[cfg(test)]
mod group_tests;
