//! Where a duplicate learns the offset its original write got: a write's outcome, published
//! once, awaited by any number of retries of the same batches.

use std::sync::Arc;

use tokio::sync::watch;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    Pending,
    /// Durable at this base offset.
    Written(u64),
    /// Not written; the batches were rolled back and may be retried.
    Failed,
}

#[derive(Clone, Debug)]
pub struct Slot(Arc<watch::Sender<SlotState>>);

impl Slot {
    pub fn pending() -> Slot {
        Slot(Arc::new(watch::channel(SlotState::Pending).0))
    }

    pub fn written(base_offset: u64) -> Slot {
        Slot(Arc::new(watch::channel(SlotState::Written(base_offset)).0))
    }

    /// Publishes the outcome; only the first one counts.
    pub fn finish(&self, state: SlotState) {
        self.0.send_if_modified(|current| {
            let first = *current == SlotState::Pending && state != SlotState::Pending;
            if first {
                *current = state;
            }
            first
        });
    }

    /// The state now, without waiting.
    pub fn state(&self) -> SlotState {
        *self.0.borrow()
    }

    /// The outcome, once there is one.
    pub async fn outcome(&self) -> SlotState {
        let mut rx = self.0.subscribe();
        // The sender lives as long as `self`, so this cannot fail while we wait.
        let state = match rx.wait_for(|s| *s != SlotState::Pending).await {
            Ok(state) => *state,
            Err(_) => SlotState::Failed,
        };
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiter_sees_the_first_outcome_only() {
        let slot = Slot::pending();
        let waiter = {
            let slot = slot.clone();
            tokio::spawn(async move { slot.outcome().await })
        };
        slot.finish(SlotState::Written(7));
        slot.finish(SlotState::Failed);
        assert_eq!(waiter.await.unwrap(), SlotState::Written(7));
        assert_eq!(slot.outcome().await, SlotState::Written(7));
    }
}
