//! Committed-offset expiry, as Kafka does it since 2.1 (KIP-211, `offsets.retention.minutes`):
//! the offsets of a group without members are deleted once the retention has passed, and a
//! group left empty with no offsets is deleted with them. In a group with members, offsets of
//! topics no member subscribes to any more expire a retention after their commit (Kafka's
//! `removeExpiredOffsets`); those of subscribed topics are kept however old.
//!
//! The clock of one offset starts at the later of its commit and the moment its group last
//! became Empty. Kafka counts a classic group's offsets from the moment it became Empty (its
//! `currentStateTimestamp`) and, for groups that never joined (standalone consumers) or KIP-848
//! groups, from each offset's commit. Taking the later of the two never expires an offset
//! before Kafka would, and keeps offsets reset on an idle group (`--reset-offsets`) for a full
//! retention period instead of letting them go with the older ones.
//!
//! A run is bounded (`expiry_groups_per_run_max` groups); the next run resumes where it
//! stopped. Only the coordinator of a group (the placement hash names it) expires it; each
//! offset is deleted only if its record is unchanged since it was read, so a commit racing the
//! sweep wins.

use std::sync::Arc;

use super::store::{GroupStore, StoreError, StoredOffset};

/// Whether the broker coordinates a group (the placement hash over the live brokers).
pub type Ownership = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Whether an offset committed at `commit_timestamp_ms`, in a group that became empty at
/// `empty_since_ms` (if known), has outlived `retention_ms` at `now_ms`. A commit time in the
/// future (another broker's clock ahead of ours) keeps the offset.
pub fn is_due(
    commit_timestamp_ms: i64,
    empty_since_ms: Option<u64>,
    now_ms: u64,
    retention_ms: u64,
) -> bool {
    let committed_ms = u64::try_from(commit_timestamp_ms).unwrap_or(0);
    let base_ms = empty_since_ms.map_or(committed_ms, |since| since.max(committed_ms));
    now_ms
        .checked_sub(base_ms)
        .is_some_and(|age| age >= retention_ms)
}

/// Which topics of a group keep their offsets whatever their age: those a member subscribes to.
pub type Subscribed<'a> = &'a (dyn Fn(&str) -> bool + Send + Sync);

/// No member subscribes to anything: the group is empty.
pub fn no_subscriptions(_topic: &str) -> bool {
    false
}

/// Deletes the due offsets of a group, except those of topics `subscribed` names. Returns
/// `(deleted, remaining)`; an offset whose record changed since it was read (a fresh commit)
/// counts as remaining.
pub async fn expire_group_offsets(
    store: &GroupStore,
    group_id: &str,
    subscribed: Subscribed<'_>,
    empty_since_ms: Option<u64>,
    now_ms: u64,
    retention_ms: u64,
) -> Result<(usize, usize), StoreError> {
    let offsets = store.fetch_stored_offsets(group_id, None).await?;
    let due: Vec<&StoredOffset> = offsets
        .iter()
        .filter(|o| {
            !subscribed(&o.offset.topic)
                && is_due(
                    o.offset.record.commit_timestamp_ms,
                    empty_since_ms,
                    now_ms,
                    retention_ms,
                )
        })
        .collect();
    let deletes = due.iter().map(|o| store.delete_offset_at(group_id, o));
    let mut deleted = 0;
    for result in futures::future::join_all(deletes).await {
        if result? {
            deleted += 1;
        }
    }
    if deleted > 0 {
        tracing::info!(
            group = group_id,
            offsets = deleted,
            "committed offsets expired"
        );
    }
    Ok((deleted, offsets.len() - deleted))
}

/// What expiry did to one group.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GroupExpiry {
    pub offsets_deleted: usize,
    pub group_deleted: bool,
}

/// What one expiry run did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SweepReport {
    pub groups_examined: usize,
    pub offsets_deleted: usize,
    pub groups_deleted: usize,
    /// The run reached the end of every group: the next one starts a new cycle.
    pub cycle_complete: bool,
}

impl SweepReport {
    pub fn add(&mut self, group: GroupExpiry) {
        self.offsets_deleted += group.offsets_deleted;
        self.groups_deleted += usize::from(group.group_deleted);
    }

    pub fn merge(&mut self, other: SweepReport) {
        self.groups_examined += other.groups_examined;
        self.offsets_deleted += other.offsets_deleted;
        self.groups_deleted += other.groups_deleted;
    }
}

/// Where a cycle over the stored groups stands: classic groups first, then consumer groups.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ExpiryCursor {
    /// Last classic group key read; `None` at the start of the cycle.
    pub classic_after: Option<String>,
    pub classic_done: bool,
    /// Last consumer group key read.
    pub consumer_after: Option<String>,
}

impl ExpiryCursor {
    pub fn at_start(&self) -> bool {
        *self == ExpiryCursor::default()
    }
}

#[cfg(test)]
// Test code: test times converted with `as`.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]
mod tests {
    use super::*;

    const DAY_MS: u64 = 24 * 60 * 60 * 1000;

    #[test]
    fn offset_of_a_standalone_consumer_expires_from_its_commit() {
        let t0 = 100 * DAY_MS;
        assert!(!is_due(t0 as i64, None, t0 + 7 * DAY_MS - 1, 7 * DAY_MS));
        assert!(is_due(t0 as i64, None, t0 + 7 * DAY_MS, 7 * DAY_MS));
    }

    #[test]
    fn offset_of_an_emptied_group_expires_from_when_it_became_empty() {
        let t0 = 100 * DAY_MS;
        let empty = t0 + 3 * DAY_MS;
        assert!(!is_due(t0 as i64, Some(empty), t0 + 8 * DAY_MS, 7 * DAY_MS));
        assert!(is_due(
            t0 as i64,
            Some(empty),
            empty + 7 * DAY_MS,
            7 * DAY_MS
        ));
    }

    #[test]
    fn commit_into_an_empty_group_restarts_that_offsets_clock() {
        let empty = 100 * DAY_MS;
        let reset = empty + 5 * DAY_MS;
        assert!(!is_due(
            reset as i64,
            Some(empty),
            empty + 7 * DAY_MS,
            7 * DAY_MS
        ));
        assert!(is_due(
            reset as i64,
            Some(empty),
            reset + 7 * DAY_MS,
            7 * DAY_MS
        ));
    }

    #[test]
    fn commit_time_ahead_of_the_clock_never_expires() {
        assert!(!is_due(2_000, None, 1_000, 0));
        assert!(is_due(-5, None, 0, 0));
    }
}
