//! Keeps a connection's produce requests in order while they run concurrently.
//!
//! The connection reader takes a [`Ticket`] for each Produce request, synchronously and in
//! request order, before handing the request to its own task. The task waits for its turn,
//! submits its appends to storage (which fixes their offsets' order), then releases the next
//! request and only then awaits durability. So pipelined produce requests get offsets in the
//! order they were sent, and their object writes and index commits overlap.

use std::sync::Mutex;

use tokio::sync::oneshot;

#[derive(Default)]
pub struct Sequencer {
    last: Mutex<Option<oneshot::Receiver<()>>>,
}

pub struct Ticket {
    previous: Option<oneshot::Receiver<()>>,
    release: Option<oneshot::Sender<()>>,
}

impl Sequencer {
    /// Must be called in request order.
    pub fn ticket(&self) -> Ticket {
        let (release, next) = oneshot::channel();
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let previous = last.replace(next);
        Ticket {
            previous,
            release: Some(release),
        }
    }
}

impl Ticket {
    /// Resolves once every earlier ticket was released (or dropped).
    pub async fn turn(&mut self) {
        if let Some(previous) = self.previous.take() {
            // An error means the earlier holder was dropped: its turn is over either way.
            let _ = previous.await;
        }
    }

    /// Lets the next ticket's holder proceed. Dropping the ticket does the same.
    pub fn release(&mut self) {
        if let Some(release) = self.release.take() {
            let _ = release.send(());
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn tickets_take_turns_in_the_order_they_were_issued() {
        let sequencer = Sequencer::default();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        let tickets: Vec<Ticket> = (0..5).map(|_| sequencer.ticket()).collect();
        // Start the tasks in reverse: they must still run their turns in ticket order.
        for (i, mut ticket) in tickets.into_iter().enumerate().rev() {
            let order = order.clone();
            tasks.push(tokio::spawn(async move {
                ticket.turn().await;
                order.lock().unwrap().push(i);
                ticket.release();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn a_dropped_ticket_does_not_block_the_next() {
        let sequencer = Sequencer::default();
        let first = sequencer.ticket();
        let mut second = sequencer.ticket();
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(1), second.turn())
            .await
            .unwrap();
    }
}
