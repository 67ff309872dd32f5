//! The request-byte budgets that frames are read under (docs/security.md, "The front door").
//!
//! A frame takes bytes from its budget one step ahead of what it has received, never for the
//! length it merely declares: a connection that declares a large frame and sends nothing holds
//! one step. With the default settings `max_connections` steps fit in each budget, so silent
//! or trickling connections alone never spend one. A frame that has not received a whole step
//! for `stall` is *stalled* (at most `step / stall` bytes per second: a trickle).
//!
//! - The **authenticated** budget (`queued_max_request_bytes`): a reader waits while it is spent
//!   (Kafka mutes the channel the same way), and while it waits it closes one frame that gives
//!   way: the stalled frame that went longest without a step, else, when no byte of the
//!   budget is held by a request being served and every frame being read has waited for more
//!   since the last look (several large frames each holding part of it would wait forever; so
//!   would a frame larger than the budget), the frame started last, so that the others
//!   finish in the order they started. One frame gives way at a time: the next is chosen once
//!   it has let its bytes go.
//! - The **unauthenticated** budget (`queued_max_unauthenticated_request_bytes`), for
//!   connections of a SASL listener before they logged in: nobody queues there, since an
//!   attacker's queued frames would stand before every login. A reader that finds it spent
//!   closes a frame at once, the stalled one that went longest without a step, else the one
//!   started first (a login's frames are small and read in a moment), and takes its bytes; if
//!   there is none, its own connection is closed.
//!
//! Bytes of frames that were read whole and are being served are never taken back: they come
//! back when their requests finish.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// The most an authenticated frame holds beyond the bytes it has received.
pub const STEP_BYTES: usize = 64 << 10;
/// The same before authentication: 1,024 connections hold 16 MiB at most.
pub const UNAUTHENTICATED_STEP_BYTES: usize = 16 << 10;
/// How long an unauthenticated reader waits for the frame it closed to let its bytes go.
const RELEASE_WAIT: Duration = Duration::from_millis(200);
/// How often a waiting reader looks for a frame that gives way (at most; `stall` if shorter).
const LOOK_INTERVAL: Duration = Duration::from_millis(100);

/// The two budgets every connection of a broker reads under.
pub struct Budgets {
    pub authenticated: Arc<Budget>,
    pub unauthenticated: Arc<Budget>,
}

impl Budgets {
    pub fn new(authenticated_bytes: usize, unauthenticated_bytes: usize, stall: Duration) -> Self {
        Budgets {
            authenticated: Budget::new(Kind::Authenticated, authenticated_bytes, stall),
            unauthenticated: Budget::new(Kind::Unauthenticated, unauthenticated_bytes, stall),
        }
    }
}

/// Which budget, and so what its readers do when it is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Readers wait.
    Authenticated,
    /// Readers close another frame or their own.
    Unauthenticated,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Authenticated => "authenticated",
            Kind::Unauthenticated => "unauthenticated",
        }
    }
}

/// One budget of request bytes and the frames being read under it.
pub struct Budget {
    kind: Kind,
    total_bytes: usize,
    semaphore: Arc<Semaphore>,
    stall: Duration,
    frames: Mutex<HashMap<u64, Reading>>,
    next_id: AtomicU64,
    /// Bytes handed out as [`HeldBytes`] and not yet given back, changed under the `frames`
    /// lock with the frames' `held_bytes`. The semaphore's available permits cannot tell
    /// this: it hands released bytes to its first waiter in part.
    granted_bytes: AtomicUsize,
}

/// A frame being read, as the budget's readers judge it.
struct Reading {
    started: Instant,
    /// When its last whole step arrived (or it started).
    last_step: Instant,
    /// Bytes of the budget it holds.
    held_bytes: usize,
    /// Since when it waits for the budget, if it does (then it is not the one stalling).
    waiting_since: Option<Instant>,
    /// Already told to close.
    evicted: bool,
    evict: Arc<Notify>,
}

/// Why a frame was not read: the budget was spent and this frame gave way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("frame closed to free the {budget} request-byte budget")]
pub struct Evicted {
    pub budget: &'static str,
}

impl Budget {
    pub fn new(kind: Kind, total_bytes: usize, stall: Duration) -> Arc<Budget> {
        Arc::new(Budget {
            kind,
            total_bytes,
            semaphore: Arc::new(Semaphore::new(total_bytes)),
            stall,
            frames: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            granted_bytes: AtomicUsize::new(0),
        })
    }

    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// The most a frame of this budget holds beyond the bytes it has received.
    pub fn step_bytes(&self) -> usize {
        match self.kind {
            Kind::Authenticated => STEP_BYTES,
            Kind::Unauthenticated => UNAUTHENTICATED_STEP_BYTES,
        }
    }

    /// Bytes not held by any frame.
    pub fn available_bytes(&self) -> usize {
        self.semaphore.available_permits()
    }

    /// Registers a frame about to be read; it leaves the budget's view when dropped.
    pub fn start_frame(self: &Arc<Self>) -> FrameTicket {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let evict = Arc::new(Notify::new());
        let now = Instant::now();
        self.lock().insert(
            id,
            Reading {
                started: now,
                last_step: now,
                held_bytes: 0,
                waiting_since: None,
                evicted: false,
                evict: evict.clone(),
            },
        );
        FrameTicket {
            budget: self.clone(),
            id,
            evict,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Reading>> {
        self.frames.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, id: u64, change: impl FnOnce(&mut Reading)) {
        if let Some(reading) = self.lock().get_mut(&id) {
            change(reading);
        }
    }

    /// The frame that gives way for reader `me` (see the module documentation), marked
    /// evicted, and its signal.
    fn choose_victim(&self, me: u64, now: Instant) -> Option<(u64, Arc<Notify>)> {
        let mut frames = self.lock();
        let waits = self.kind == Kind::Authenticated;
        if waits && frames.values().any(|f| f.evicted) {
            return None;
        }
        let candidates = || {
            frames
                .iter()
                .filter(|(id, f)| **id != me && !f.evicted && f.held_bytes > 0)
        };
        let stalled = candidates()
            .filter(|(_, f)| {
                f.waiting_since.is_none() && now.duration_since(f.last_step) >= self.stall
            })
            .min_by_key(|(_, f)| f.last_step)
            .map(|(id, _)| *id);
        let victim = stalled.or_else(|| {
            if !waits {
                return candidates()
                    .min_by_key(|(_, f)| f.started)
                    .map(|(id, _)| *id);
            }
            // A waiter the semaphore just served has not yet said so: it waited only briefly.
            let long_waiting = |f: &Reading| {
                f.waiting_since
                    .is_some_and(|since| now.duration_since(since) >= self.look_interval())
            };
            let reading_bytes: usize = frames.values().map(|f| f.held_bytes).sum();
            let granted_bytes = self.granted_bytes.load(Ordering::Acquire);
            debug_assert!(
                granted_bytes >= reading_bytes,
                "bytes being read were granted"
            );
            let serving_bytes = granted_bytes.saturating_sub(reading_bytes);
            let deadlocked = serving_bytes == 0 && frames.values().all(long_waiting);
            // The frame started last gives way, so frames finish in the order they started,
            // as when each took its whole size at once.
            frames
                .iter()
                .filter(|(_, f)| deadlocked && f.held_bytes > 0)
                .max_by_key(|(id, f)| (f.started, **id))
                .map(|(id, _)| *id)
        })?;
        let reading = frames.get_mut(&victim)?;
        reading.evicted = true;
        Some((victim, reading.evict.clone()))
    }

    fn look_interval(&self) -> Duration {
        self.stall.min(LOOK_INTERVAL)
    }
}

/// Bytes of a budget held by one frame, from its first step until its request was served.
pub struct HeldBytes {
    permit: OwnedSemaphorePermit,
    budget: Arc<Budget>,
    frame: u64,
}

impl HeldBytes {
    /// Counts `permit` as granted to `frame`, which no longer waits.
    fn new(permit: OwnedSemaphorePermit, budget: Arc<Budget>, frame: u64) -> Self {
        let bytes = permit.num_permits();
        let mut frames = budget.lock();
        budget.granted_bytes.fetch_add(bytes, Ordering::AcqRel);
        if let Some(reading) = frames.get_mut(&frame) {
            reading.held_bytes += bytes;
            reading.waiting_since = None;
        }
        drop(frames);
        HeldBytes {
            permit,
            budget,
            frame,
        }
    }

    /// Holds `other`'s bytes too, as one.
    pub fn merge(&mut self, mut other: HeldBytes) {
        debug_assert!(Arc::ptr_eq(&self.budget, &other.budget) && self.frame == other.frame);
        if let Some(moved) = other.permit.split(other.permit.num_permits()) {
            self.permit.merge(moved);
        }
    }
}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        let bytes = self.permit.num_permits();
        let mut frames = self.budget.lock();
        let before = self.budget.granted_bytes.fetch_sub(bytes, Ordering::AcqRel);
        debug_assert!(before >= bytes, "bytes given back were granted");
        if let Some(reading) = frames.get_mut(&self.frame) {
            debug_assert!(
                reading.held_bytes >= bytes,
                "a frame gives back what it holds"
            );
            reading.held_bytes = reading.held_bytes.saturating_sub(bytes);
        }
    }
}

/// A frame being read under a budget: takes its bytes step by step.
pub struct FrameTicket {
    budget: Arc<Budget>,
    id: u64,
    evict: Arc<Notify>,
}

impl FrameTicket {
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    fn evicted_error(&self) -> Evicted {
        Evicted {
            budget: self.budget.kind.name(),
        }
    }

    /// Takes `bytes` more of the budget; fails if this frame gave way instead.
    pub async fn take(&self, bytes: usize) -> Result<HeldBytes, Evicted> {
        let n = u32::try_from(bytes).map_err(|_| self.evicted_error())?;
        debug_assert!(
            bytes <= self.budget.total_bytes,
            "a step never exceeds its budget"
        );
        self.budget
            .update(self.id, |r| r.waiting_since = Some(Instant::now()));
        let taken = match self.budget.kind {
            Kind::Authenticated => self.wait_for(n).await,
            Kind::Unauthenticated => self.take_or_evict(n).await,
        };
        match taken {
            Ok(permit) => Ok(HeldBytes::new(permit, self.budget.clone(), self.id)),
            Err(evicted) => {
                self.budget.update(self.id, |r| r.waiting_since = None);
                Err(evicted)
            }
        }
    }

    /// Waits for `n` bytes, closing a frame that gives way when there is one.
    async fn wait_for(&self, n: u32) -> Result<OwnedSemaphorePermit, Evicted> {
        let acquire = self.budget.semaphore.clone().acquire_many_owned(n);
        tokio::pin!(acquire);
        loop {
            tokio::select! {
                biased;
                _ = self.evict.notified() => return Err(self.evicted_error()),
                permit = &mut acquire => return permit.map_err(|_| self.evicted_error()),
                _ = tokio::time::sleep(self.budget.look_interval()) => {
                    self.make_room();
                }
            }
        }
    }

    /// Takes `n` bytes at once, or closes a frame and takes its bytes, or gives up.
    async fn take_or_evict(&self, n: u32) -> Result<OwnedSemaphorePermit, Evicted> {
        let semaphore = self.budget.semaphore.clone();
        if let Ok(permit) = semaphore.clone().try_acquire_many_owned(n) {
            return Ok(permit);
        }
        if !self.make_room() {
            return Err(self.evicted_error());
        }
        let released = tokio::time::timeout(RELEASE_WAIT, semaphore.acquire_many_owned(n));
        tokio::select! {
            biased;
            _ = self.evict.notified() => Err(self.evicted_error()),
            taken = released => match taken {
                Ok(Ok(permit)) => Ok(permit),
                _ => Err(self.evicted_error()),
            },
        }
    }

    /// A whole step arrived.
    pub fn stepped(&self) {
        self.budget
            .update(self.id, |r| r.last_step = Instant::now());
    }

    /// Resolves when another reader chose this frame to give way.
    pub async fn evicted(&self) -> Evicted {
        self.evict.notified().await;
        self.evicted_error()
    }

    /// Tells the frame that gives way to close; false if there is none.
    fn make_room(&self) -> bool {
        let Some((victim, signal)) = self.budget.choose_victim(self.id, Instant::now()) else {
            return false;
        };
        // In a deadlock this reader may hold the most: then it gives way itself.
        debug_assert!(victim != self.id || self.budget.kind == Kind::Authenticated);
        tracing::info!(
            budget = self.budget.kind.name(),
            available_bytes = self.budget.available_bytes(),
            "request-byte budget spent: closing the frame that gives way"
        );
        signal.notify_one();
        true
    }
}

impl Drop for FrameTicket {
    fn drop(&mut self) {
        self.budget.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests;
