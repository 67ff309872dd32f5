//! What a coordinator of either group protocol does the same way: load the stored groups at
//! open, hold them in a [`GroupRegistry`], run their timers every tick, drop the groups
//! another broker coordinates now, act on passed deadlines before a request looks at a group,
//! and write each group's record after a change. [`GroupCoordinator`] (classic) and
//! [`ConsumerCoordinator`] (KIP-848) each embed one [`GroupHost`] and keep only their
//! protocol's requests.
//!
//! [`GroupCoordinator`]: super::GroupCoordinator
//! [`ConsumerCoordinator`]: super::consumer::ConsumerCoordinator

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use kafka_protocol::ResponseError;
use tokio::sync::MutexGuard;

use super::clock::Clock;
use super::consumer::group::ConsumerGroup;
use super::consumer::ConsumerGroupConfig;
use super::expiry::Ownership;
use super::group::Group;
use super::records::GroupRecords;
use super::registry::{GroupRegistry, Shared};
use super::store::StoreError;
use super::stored::{persist, StoredGroup};
use super::GroupConfig;

/// What the host needs of one kind of group beyond its stored form.
pub trait GroupKind: StoredGroup<Record: Send + Sync> + Send + Sized + 'static {
    type Config: Copy + Send + Sync + 'static;
    fn new(group_id: &str, config: Self::Config) -> Self;
    /// A group read from the store (its members' timers start at `now_ms`).
    fn from_record(
        group_id: &str,
        config: Self::Config,
        record: Self::Record,
        version: i64,
        now_ms: u64,
    ) -> Self;
    /// Acts on every deadline that passed by `now_ms`.
    fn tick(&mut self, now_ms: u64);
    /// This broker stops serving the group (shutdown, or another coordinator owns it now):
    /// whoever waits for an answer must not wait for this broker.
    fn release(&mut self);
    fn groups_max(config: &Self::Config) -> usize;
    fn tick_interval_ms(config: &Self::Config) -> u64;
}

impl GroupKind for Group {
    type Config = GroupConfig;

    fn new(group_id: &str, config: GroupConfig) -> Group {
        Group::new(group_id, config)
    }

    fn from_record(
        group_id: &str,
        config: GroupConfig,
        record: Self::Record,
        version: i64,
        now_ms: u64,
    ) -> Group {
        Group::from_record(group_id, config, record, version, now_ms)
    }

    fn tick(&mut self, now_ms: u64) {
        Group::tick(self, now_ms)
    }

    fn release(&mut self) {
        // Waiting JoinGroup/SyncGroup answers go out now; the client finds the coordinator.
        self.fail_waiters(ResponseError::NotCoordinator)
    }

    fn groups_max(config: &GroupConfig) -> usize {
        config.groups_max
    }

    fn tick_interval_ms(config: &GroupConfig) -> u64 {
        config.tick_interval_ms
    }
}

impl GroupKind for ConsumerGroup {
    type Config = ConsumerGroupConfig;

    fn new(group_id: &str, config: ConsumerGroupConfig) -> ConsumerGroup {
        ConsumerGroup::new(group_id, config)
    }

    fn from_record(
        group_id: &str,
        config: ConsumerGroupConfig,
        record: Self::Record,
        version: i64,
        now_ms: u64,
    ) -> ConsumerGroup {
        ConsumerGroup::from_record(group_id, config, record, version, now_ms)
    }

    fn tick(&mut self, now_ms: u64) {
        ConsumerGroup::tick(self, now_ms)
    }

    // Heartbeats never wait for other members: nobody is waiting.
    fn release(&mut self) {}

    fn groups_max(config: &ConsumerGroupConfig) -> usize {
        config.groups_max
    }

    fn tick_interval_ms(config: &ConsumerGroupConfig) -> u64 {
        config.tick_interval_ms
    }
}

/// The groups of one kind that this broker coordinates.
pub struct GroupHost<G: GroupKind> {
    config: G::Config,
    records: GroupRecords,
    clock: Arc<dyn Clock>,
    groups: GroupRegistry<G>,
    closed: AtomicBool,
    /// Which groups the placement names this broker coordinator of; unset (one broker, tests)
    /// means all.
    ownership: OnceLock<Ownership>,
}

impl<G: GroupKind> GroupHost<G> {
    /// Loads every stored group of the kind `records` holds and starts the timer task.
    pub async fn open(
        records: GroupRecords,
        config: G::Config,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<GroupHost<G>>, StoreError> {
        let now_ms = clock.now_ms();
        let loaded = records.load_all::<G::Record>().await?.into_iter().map(
            |(group_id, record, version)| {
                let group = G::from_record(&group_id, config, record, version, now_ms);
                (group_id, group)
            },
        );
        let groups = GroupRegistry::new(records.kind(), G::groups_max(&config), loaded);
        let host = Arc::new(GroupHost {
            config,
            records,
            clock,
            groups,
            closed: AtomicBool::new(false),
            ownership: OnceLock::new(),
        });
        spawn_ticks(&host);
        Ok(host)
    }

    pub fn config(&self) -> &G::Config {
        &self.config
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Tells the host which groups are its own from now on (see [`Self::tick_all`]).
    pub fn set_ownership(&self, owns: Ownership) {
        let _ = self.ownership.set(owns);
    }

    fn owns(&self, group_id: &str) -> bool {
        self.ownership.get().is_none_or(|owns| owns(group_id))
    }

    /// Whether `group_id` is held in memory (without asking the store).
    pub fn is_cached(&self, group_id: &str) -> bool {
        self.groups.contains(group_id)
    }

    /// The group if this host or the store knows it.
    pub async fn existing(&self, group_id: &str) -> Result<Option<Shared<G>>, ResponseError> {
        let from_record = |record, version| {
            G::from_record(group_id, self.config, record, version, self.clock.now_ms())
        };
        self.groups
            .existing(group_id, self.records.load(group_id), from_record)
            .await
    }

    /// The group if known, else a new one (unless the host holds too many).
    pub async fn get_or_create(&self, group_id: &str) -> Result<Option<Shared<G>>, ResponseError> {
        if let Some(group) = self.existing(group_id).await? {
            return Ok(Some(group));
        }
        let new = || G::new(group_id, self.config);
        self.groups.get_or_insert_new(group_id, new).map(Some)
    }

    /// The held group, or the one `make` builds from a record a scan read.
    pub fn insert_if_absent(&self, group_id: &str, make: impl FnOnce() -> G) -> Shared<G> {
        self.groups.insert_if_absent(group_id, make)
    }

    /// Stops holding `shared` (deleted, or another broker's now).
    pub fn forget(&self, group_id: &str, shared: &Shared<G>) {
        self.groups.forget(group_id, shared);
    }

    /// Writes the group record if it changed (see [`persist`]); `false` when that failed.
    pub async fn persist(&self, group: &mut G) -> bool {
        persist(&self.records, group).await
    }

    /// The group locked, as Kafka's timers would have left it however late the timer task
    /// runs: the deadlines that passed are acted on, and what that changed is written, before
    /// the caller looks. A group another broker coordinates now is only locked: its timers are
    /// that broker's to run, and this copy goes at the next tick.
    pub async fn lock_current<'a>(&self, shared: &'a Shared<G>) -> MutexGuard<'a, G> {
        let mut group = shared.lock().await;
        if self.owns(group.group_id()) {
            group.tick(self.clock.now_ms());
            self.persist(&mut group).await;
        }
        group
    }

    /// One row per held group that `row` keeps, in group id order; each group is seen as
    /// [`Self::lock_current`] leaves it.
    pub async fn list<T>(&self, row: impl Fn(&G) -> Option<T>) -> Vec<T> {
        let mut rows = Vec::new();
        for shared in self.groups.snapshot() {
            let group = self.lock_current(&shared).await;
            if let Some(listed) = row(&group) {
                rows.push((group.group_id().to_string(), listed));
            }
        }
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows.into_iter().map(|(_, listed)| listed).collect()
    }

    /// Runs every group's timers once (the timer task calls this every tick interval).
    /// A group another broker coordinates now is dropped instead: its timers must not expire
    /// members of the live coordinator, and if it comes back here it is loaded afresh.
    pub async fn tick_all(&self) {
        for shared in self.groups.snapshot() {
            let mut group = shared.lock().await;
            if !self.owns(group.group_id()) {
                group.release();
                let group_id = group.group_id().to_string();
                drop(group);
                self.groups.forget(&group_id, &shared);
                continue;
            }
            group.tick(self.clock.now_ms());
            self.persist(&mut group).await;
        }
    }

    /// Stops the timers, releases whoever waits (so that shutdown does not wait for
    /// rebalances) and writes what is still unwritten.
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        for shared in self.groups.snapshot() {
            let mut group = shared.lock().await;
            group.release();
            self.persist(&mut group).await;
        }
    }
}

/// Starts the timer task of `host`: a tick every tick interval until the host is dropped or
/// shut down.
fn spawn_ticks<G: GroupKind>(host: &Arc<GroupHost<G>>) {
    let weak: Weak<GroupHost<G>> = Arc::downgrade(host);
    let tick_interval = Duration::from_millis(G::tick_interval_ms(&host.config).max(1));
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(tick_interval);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            interval.tick().await;
            let Some(host) = weak.upgrade() else {
                return;
            };
            if host.is_closed() {
                return;
            }
            host.tick_all().await;
        }
    });
}
