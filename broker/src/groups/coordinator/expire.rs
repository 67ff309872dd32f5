//! The coordinator's side of offset expiry (rules in [`crate::groups::expiry`]): a bounded run
//! over the stored groups, and the task that repeats it every check interval.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::ResponseError;

use super::GroupCoordinator;
use crate::groups::expiry::{
    expire_group_offsets, no_subscriptions, ExpiryCursor, GroupExpiry, Ownership, Subscribed,
    SweepReport,
};
use crate::groups::group::{Group, GroupState};
use crate::groups::store::{GroupRecord, StoreError};
use crate::groups::stored::catch_up_for_expiry;

/// The only classic protocol type whose member metadata names the subscribed topics.
const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Pause before a run that continues a cycle cut short by the per-run bound.
const CONTINUE_PAUSE: Duration = Duration::from_millis(100);

impl GroupCoordinator {
    /// Starts the task that expires committed offsets of the groups `owns` says this broker
    /// coordinates: a run at once, then one every `offsets_retention_check_interval_ms`.
    pub fn start_offset_expiry(self: &Arc<Self>, owns: Ownership) {
        let weak = Arc::downgrade(self);
        let interval =
            Duration::from_millis(self.config().offsets_retention_check_interval_ms.max(1));
        tokio::spawn(async move {
            let mut cursor = ExpiryCursor::default();
            loop {
                let Some(coordinator) = weak.upgrade() else {
                    return;
                };
                if coordinator.groups.is_closed() {
                    return;
                }
                match coordinator.expire_offsets(owns.as_ref(), &mut cursor).await {
                    Ok(report) if report.offsets_deleted > 0 || report.groups_deleted > 0 => {
                        tracing::info!(
                            groups_examined = report.groups_examined,
                            offsets_deleted = report.offsets_deleted,
                            groups_deleted = report.groups_deleted,
                            "expired committed offsets"
                        );
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "offset expiry run failed");
                        cursor = ExpiryCursor::default();
                    }
                }
                drop(coordinator);
                let pause = if cursor.at_start() {
                    interval
                } else {
                    CONTINUE_PAUSE.min(interval)
                };
                tokio::time::sleep(pause).await;
            }
        });
    }

    /// One run: examines up to `expiry_groups_per_run_max` stored groups from `cursor` on,
    /// expires the due offsets of those coordinated here (in groups with members, only of
    /// topics no member subscribes to), and deletes empty groups left without offsets.
    pub async fn expire_offsets(
        &self,
        owns: &(dyn Fn(&str) -> bool + Send + Sync),
        cursor: &mut ExpiryCursor,
    ) -> Result<SweepReport, StoreError> {
        let now_ms = self.groups.now_ms();
        let config = *self.config();
        let retention_ms = config.offsets_retention_ms;
        let mut budget = config.expiry_groups_per_run_max.max(1);
        let mut report = SweepReport::default();
        if !cursor.classic_done {
            let (page, next) = self
                .store
                .scan_group_keys(cursor.classic_after.as_deref(), budget)
                .await?;
            budget = budget.saturating_sub(page.len());
            for (group_id, record, version) in page {
                report.groups_examined += 1;
                if !owns(&group_id) {
                    continue;
                }
                match self
                    .expire_classic(&group_id, record, version, now_ms, retention_ms)
                    .await
                {
                    Ok(expiry) => report.add(expiry),
                    Err(error) => {
                        tracing::warn!(group = %group_id, %error, "offset expiry failed for group")
                    }
                }
            }
            cursor.classic_done = next.is_none();
            cursor.classic_after = next;
        }
        if cursor.classic_done && budget > 0 {
            let (consumer_report, next) = self
                .consumer
                .expire_offsets_page(
                    cursor.consumer_after.as_deref(),
                    budget,
                    owns,
                    now_ms,
                    retention_ms,
                )
                .await?;
            report.merge(consumer_report);
            match next {
                Some(next) => cursor.consumer_after = Some(next),
                None => {
                    *cursor = ExpiryCursor::default();
                    report.cycle_complete = true;
                }
            }
        }
        Ok(report)
    }

    /// Expires one classic group stored at `version` with `record`. A group with members is
    /// expired only as Kafka does it: Stable, protocol type "consumer", offsets of topics no
    /// member's subscription names (an unreadable subscription keeps every topic).
    async fn expire_classic(
        &self,
        group_id: &str,
        record: GroupRecord,
        version: i64,
        now_ms: u64,
        retention_ms: u64,
    ) -> Result<GroupExpiry, StoreError> {
        let config = *self.config();
        let shared = self.groups.insert_if_absent(group_id, || {
            Group::from_record(group_id, config, record, version, now_ms)
        });
        let mut group = shared.lock().await;
        let Some(empty) = expiry_kind(&group) else {
            return Ok(GroupExpiry::default());
        };
        // A copy with members that is out of step with the scanned record is left alone: its
        // subscriptions may be old (and catching up must not drop its members).
        if !empty && group.store_version != Some(version) {
            return Ok(GroupExpiry::default());
        }
        let from_record = |fresh, fresh_version| {
            Group::from_record(group_id, config, fresh, fresh_version, now_ms)
        };
        let read = self.store.load(group_id);
        if !catch_up_for_expiry(&mut *group, version, read, from_record).await? {
            return Ok(GroupExpiry::default());
        }
        // A copy caught up from the store may no longer be what was checked above.
        if expiry_kind(&group) != Some(empty) {
            return Ok(GroupExpiry::default());
        }
        // Groups that never used group management (no protocol type) expire per commit, and
        // so do the unsubscribed topics of a group with members.
        let empty_since_ms = group.protocol_type().and_then(|_| group.empty_since_ms());
        let keep = |topic: &str| group.is_subscribed_to(topic);
        let subscribed: Subscribed = if empty { &no_subscriptions } else { &keep };
        let (offsets_deleted, remaining) = expire_group_offsets(
            &self.store,
            group_id,
            subscribed,
            empty_since_ms,
            now_ms,
            retention_ms,
        )
        .await?;
        let mut expiry = GroupExpiry {
            offsets_deleted,
            group_deleted: false,
        };
        if !empty || remaining > 0 {
            return Ok(expiry);
        }
        let Some(version) = group.store_version else {
            return Ok(expiry);
        };
        if self.store.delete_group_record(group_id, version).await? {
            group.mark_dead(ResponseError::UnknownMemberId);
            drop(group);
            self.groups.forget(group_id, &shared);
            expiry.group_deleted = true;
            tracing::info!(group = group_id, "empty group without offsets deleted");
        }
        Ok(expiry)
    }
}

/// How a classic group's offsets may expire: `Some(true)` all of them (Empty), `Some(false)`
/// only those of unsubscribed topics (Stable consumer group whose chosen protocol tells which
/// member metadata to read), `None` not now (a rebalance is under way, or the member metadata
/// does not name topics).
fn expiry_kind(group: &Group) -> Option<bool> {
    match group.state() {
        GroupState::Empty => Some(true),
        GroupState::Stable
            if group.protocol_type() == Some(CONSUMER_PROTOCOL_TYPE)
                && group.protocol_name().is_some() =>
        {
            Some(false)
        }
        _ => None,
    }
}
