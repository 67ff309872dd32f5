//! Incremental reconciliation of one member (KIP-848's current assignment builder).
//!
//! A member moves towards its target assignment in steps that never let two members own a
//! partition at once:
//! 1. partitions the target takes away are first only *revoked*: the member keeps its epoch
//!    and is told its retained partitions, until a heartbeat shows it no longer owns them;
//! 2. then it gets the target epoch and every new partition that no other member still owns;
//! 3. partitions still owned elsewhere are handed over on a later heartbeat, once released.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{intersect, minus, Assignment};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemberState {
    /// The member has everything the target gives it, at the target epoch.
    Stable,
    /// The member must give up `pending_revocation` before it moves on.
    UnrevokedPartitions,
    /// The member is at the target epoch but waits for partitions others still own.
    UnreleasedPartitions,
}

/// Where a member stands: what it was told it owns, and what it must still give up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reconciliation {
    pub state: MemberState,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub assigned: Assignment,
    pub pending_revocation: Assignment,
}

impl Reconciliation {
    /// A member that just joined and owns nothing.
    pub fn joining() -> Reconciliation {
        Reconciliation {
            state: MemberState::Stable,
            member_epoch: 0,
            previous_member_epoch: -1,
            assigned: Assignment::new(),
            pending_revocation: Assignment::new(),
        }
    }

    /// A static member's instance back under a new member id: at epoch 0 like a joining
    /// member, but with the partitions it held (as Kafka's copy of the departed member).
    pub fn rejoining(assigned: Assignment) -> Reconciliation {
        Reconciliation {
            state: MemberState::Stable,
            member_epoch: 0,
            previous_member_epoch: 0,
            assigned,
            pending_revocation: Assignment::new(),
        }
    }

    /// Partitions this member may still be consuming.
    pub fn owns(&self, topic: &Uuid, partition: i32) -> bool {
        let has = |a: &Assignment| a.get(topic).is_some_and(|ps| ps.contains(&partition));
        has(&self.assigned) || has(&self.pending_revocation)
    }

    /// The next step towards `target` (at `target_epoch`). `owned` is what the member reports
    /// it owns in this heartbeat (`None`: not reported); `owned_elsewhere` tells whether
    /// another member still owns a partition.
    pub fn next(
        &self,
        target: &Assignment,
        target_epoch: i32,
        owned: Option<&Assignment>,
        owned_elsewhere: &dyn Fn(&Uuid, i32) -> bool,
    ) -> Reconciliation {
        match self.state {
            MemberState::UnrevokedPartitions => {
                let revoked =
                    owned.is_some_and(|o| intersect(o, &self.pending_revocation).is_empty());
                if revoked {
                    self.advance(target, target_epoch, owned_elsewhere)
                } else {
                    self.clone()
                }
            }
            MemberState::UnreleasedPartitions => {
                self.advance(target, target_epoch, owned_elsewhere)
            }
            MemberState::Stable if self.member_epoch == target_epoch => self.clone(),
            MemberState::Stable => self.advance(target, target_epoch, owned_elsewhere),
        }
    }

    fn advance(
        &self,
        target: &Assignment,
        target_epoch: i32,
        owned_elsewhere: &dyn Fn(&Uuid, i32) -> bool,
    ) -> Reconciliation {
        let retained = intersect(&self.assigned, target);
        let to_revoke = minus(&self.assigned, target);
        if !to_revoke.is_empty() {
            return Reconciliation {
                state: MemberState::UnrevokedPartitions,
                member_epoch: self.member_epoch,
                previous_member_epoch: self.previous_member_epoch,
                assigned: retained,
                pending_revocation: to_revoke,
            };
        }
        let mut assigned = retained;
        let mut unreleased = false;
        for (topic, partitions) in minus(target, &self.assigned) {
            for partition in partitions {
                if owned_elsewhere(&topic, partition) {
                    unreleased = true;
                } else {
                    super::insert(&mut assigned, topic, partition);
                }
            }
        }
        let previous_member_epoch = if self.member_epoch == target_epoch {
            self.previous_member_epoch
        } else {
            self.member_epoch
        };
        Reconciliation {
            state: if unreleased {
                MemberState::UnreleasedPartitions
            } else {
                MemberState::Stable
            },
            member_epoch: target_epoch,
            previous_member_epoch,
            assigned,
            pending_revocation: Assignment::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn t() -> Uuid {
        Uuid::from_u128(7)
    }

    fn parts(ps: &[i32]) -> Assignment {
        if ps.is_empty() {
            return Assignment::new();
        }
        [(t(), ps.iter().copied().collect::<BTreeSet<i32>>())].into()
    }

    fn nobody(_: &Uuid, _: i32) -> bool {
        false
    }

    #[test]
    fn joining_member_gets_free_partitions_and_the_target_epoch() {
        let next = Reconciliation::joining().next(&parts(&[0, 1]), 3, None, &nobody);
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!(next.member_epoch, 3);
        assert_eq!(next.assigned, parts(&[0, 1]));
    }

    #[test]
    fn partition_owned_elsewhere_is_withheld_until_released() {
        let other_owns_1 = |_: &Uuid, p: i32| p == 1;
        let next = Reconciliation::joining().next(&parts(&[0, 1]), 3, None, &other_owns_1);
        assert_eq!(next.state, MemberState::UnreleasedPartitions);
        assert_eq!(next.member_epoch, 3);
        assert_eq!(next.assigned, parts(&[0]));
        let later = next.next(&parts(&[0, 1]), 3, None, &nobody);
        assert_eq!(later.state, MemberState::Stable);
        assert_eq!(later.assigned, parts(&[0, 1]));
    }

    #[test]
    fn revoked_partitions_keep_the_old_epoch_until_acknowledged() {
        let stable = Reconciliation::joining().next(&parts(&[0, 1, 2]), 1, None, &nobody);
        let revoking = stable.next(&parts(&[0, 5]), 2, None, &nobody);
        assert_eq!(revoking.state, MemberState::UnrevokedPartitions);
        assert_eq!(revoking.member_epoch, 1);
        assert_eq!(revoking.assigned, parts(&[0]));
        assert_eq!(revoking.pending_revocation, parts(&[1, 2]));
        assert!(revoking.owns(&t(), 2));
        // No report, or a report still holding a revoked partition: nothing moves.
        assert_eq!(revoking.next(&parts(&[0, 5]), 2, None, &nobody), revoking);
        let still = revoking.next(&parts(&[0, 5]), 2, Some(&parts(&[0, 2])), &nobody);
        assert_eq!(still, revoking);
        let done = revoking.next(&parts(&[0, 5]), 2, Some(&parts(&[0])), &nobody);
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!(done.member_epoch, 2);
        assert_eq!(done.previous_member_epoch, 1);
        assert_eq!(done.assigned, parts(&[0, 5]));
        assert!(!done.owns(&t(), 2));
    }

    #[test]
    fn stable_member_at_target_epoch_stays_put() {
        let stable = Reconciliation::joining().next(&parts(&[0]), 4, None, &nobody);
        assert_eq!(
            stable.next(&parts(&[0]), 4, Some(&parts(&[0])), &nobody),
            stable
        );
    }

    #[test]
    fn member_that_only_gains_partitions_moves_at_once() {
        let stable = Reconciliation::joining().next(&parts(&[0]), 1, None, &nobody);
        let next = stable.next(&parts(&[0, 1]), 2, None, &nobody);
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!((next.member_epoch, next.previous_member_epoch), (2, 1));
        assert_eq!(next.assigned, parts(&[0, 1]));
    }
}
