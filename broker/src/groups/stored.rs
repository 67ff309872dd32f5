//! What the coordinators need of either kind of group to keep an in-memory copy in step with
//! its stored record.

use std::future::Future;

use metastore::MetaError;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::consumer::group::ConsumerGroup;
use super::consumer::store::ConsumerGroupRecord;
use super::group::{Group, GroupState};
use super::records::GroupRecords;
use super::store::{GroupRecord, StoreError};

// The impls call the groups' inherent methods of the same names (inherent ones win).
pub trait StoredGroup {
    type Record: Serialize + DeserializeOwned;
    fn group_id(&self) -> &str;
    fn to_record(&self) -> Self::Record;
    /// A deleted group is never written again.
    fn is_dead(&self) -> bool;
    /// Version of the stored record this copy was read or last written at.
    fn store_version(&self) -> Option<i64>;
    fn set_store_version(&mut self, version: Option<i64>);
    /// Whether a change of this copy is still to be written (clearing that mark).
    fn take_dirty(&mut self) -> bool;
    fn mark_dirty(&mut self);
    fn record_has_members(record: &Self::Record) -> bool;
}

impl StoredGroup for Group {
    type Record = GroupRecord;

    fn group_id(&self) -> &str {
        Group::group_id(self)
    }

    fn to_record(&self) -> GroupRecord {
        Group::to_record(self)
    }

    fn is_dead(&self) -> bool {
        self.state() == GroupState::Dead
    }

    fn store_version(&self) -> Option<i64> {
        self.store_version
    }

    fn set_store_version(&mut self, version: Option<i64>) {
        self.store_version = version;
    }

    fn take_dirty(&mut self) -> bool {
        Group::take_dirty(self)
    }

    fn mark_dirty(&mut self) {
        Group::mark_dirty(self)
    }

    fn record_has_members(record: &GroupRecord) -> bool {
        !record.members.is_empty()
    }
}

impl StoredGroup for ConsumerGroup {
    type Record = ConsumerGroupRecord;

    fn group_id(&self) -> &str {
        ConsumerGroup::group_id(self)
    }

    fn to_record(&self) -> ConsumerGroupRecord {
        ConsumerGroup::to_record(self)
    }

    fn is_dead(&self) -> bool {
        false
    }

    fn store_version(&self) -> Option<i64> {
        self.store_version
    }

    fn set_store_version(&mut self, version: Option<i64>) {
        self.store_version = version;
    }

    fn take_dirty(&mut self) -> bool {
        ConsumerGroup::take_dirty(self)
    }

    fn mark_dirty(&mut self) {
        ConsumerGroup::mark_dirty(self)
    }

    fn record_has_members(record: &ConsumerGroupRecord) -> bool {
        !record.members.is_empty()
    }
}

/// Before the offsets of an empty group that a scan read at `version` expire: when the scan
/// or this copy is behind, decides on what `read` finds stored now (an empty group has
/// nothing that a newer empty record could lose). `false`: leave the group alone this time
/// (its record is gone or has members, or a change of this copy is still to be written);
/// `true`: `group` is up to date, rebuilt by `from_record` if it was behind.
pub async fn catch_up_for_expiry<G: StoredGroup>(
    group: &mut G,
    version: i64,
    read: impl Future<Output = Result<Option<(G::Record, i64)>, StoreError>>,
    from_record: impl FnOnce(G::Record, i64) -> G,
) -> Result<bool, StoreError> {
    if group.store_version() == Some(version) {
        return Ok(true);
    }
    match read.await? {
        None => Ok(false),
        Some((fresh, fresh_version)) if group.store_version() != Some(fresh_version) => {
            if G::record_has_members(&fresh) {
                return Ok(false);
            }
            if group.take_dirty() {
                // A change of this copy is still to be written: leave it to that.
                group.mark_dirty();
                return Ok(false);
            }
            *group = from_record(fresh, fresh_version);
            Ok(true)
        }
        Some(_) => Ok(true),
    }
}

/// Writes the group's record if it changed. `false` when the write failed: the group stays
/// dirty and the next tick retries, the in-memory group staying authoritative meanwhile.
pub async fn persist<G: StoredGroup>(records: &GroupRecords, group: &mut G) -> bool {
    if !group.take_dirty() || group.is_dead() {
        return true;
    }
    let group_id = group.group_id().to_string();
    let kind = records.kind();
    match records
        .save(&group_id, &group.to_record(), group.store_version())
        .await
    {
        Ok(version) => {
            group.set_store_version(Some(version));
            true
        }
        Err(StoreError::Meta(MetaError::UnexpectedVersion | MetaError::KeyNotFound)) => {
            // Someone else wrote or deleted the record: this coordinator owns the group now
            // (the hash says so), so adopt the stored version and write again.
            tracing::warn!(group = %group_id, kind, "group record changed behind this coordinator");
            let stored = records.load::<G::Record>(&group_id).await;
            if let Ok(found) = stored {
                group.set_store_version(found.map(|(_, version)| version));
            }
            group.mark_dirty();
            false
        }
        Err(error) => {
            tracing::warn!(group = %group_id, kind, %error, "cannot persist group");
            group.mark_dirty();
            false
        }
    }
}
