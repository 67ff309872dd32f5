//! Registration and the live-broker view.
//!
//! A broker writes `cluster/brokers/<id>` as an ephemeral record of its coordination session:
//! stopping deletes it at once, a crash lets it vanish when the session expires. Every broker
//! keeps a view of the live ones, rescanned on each membership notification and every
//! `refresh_interval` as a safety net (a notification stream can end on reconnects). The same
//! tick re-registers this broker if its record went missing (an expired session, or a restarted
//! broker with the same id whose old session expired after the new one wrote the key).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use metastore::{Comparison, Expect, MetaError, MetaStore, Notification, PutOptions};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::member::{member_key, BROKERS_END, BROKERS_PREFIX};
use super::{Member, Placement};

/// Brokers read per scan; a cluster larger than this is not supported.
const MEMBERS_MAX: usize = 1000;

pub struct Membership {
    meta: Arc<dyn MetaStore>,
    me: Member,
    view: RwLock<Arc<Placement>>,
    /// Bumped on every view change, for state that is only valid while leadership holds.
    generation: Arc<AtomicU64>,
    stop: watch::Sender<bool>,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Membership {
    /// Registers `me` and starts following the membership. Fails if the first registration or
    /// scan fails (the broker should not serve with a view it could not build).
    pub async fn start(
        meta: Arc<dyn MetaStore>,
        me: Member,
        refresh_interval: Duration,
    ) -> Result<Arc<Membership>, MetaError> {
        let membership = Arc::new(Membership {
            view: RwLock::new(Arc::new(Placement::new(Vec::new(), &me))),
            generation: Arc::new(AtomicU64::new(0)),
            meta,
            me,
            stop: watch::channel(false).0,
            task: std::sync::Mutex::new(None),
        });
        // Subscribe before the scan so that no change falls between the two.
        let notifications = membership.subscribe().await;
        membership.register().await?;
        membership.rescan().await?;
        let task = tokio::spawn(follow(
            Arc::downgrade(&membership),
            notifications,
            membership.stop.subscribe(),
            refresh_interval,
        ));
        *membership.task_lock() = Some(task);
        tracing::info!(broker_id = membership.me.broker_id, rack = ?membership.me.rack, "broker registered");
        Ok(membership)
    }

    /// The live brokers now (always including this one).
    pub fn placement(&self) -> Arc<Placement> {
        self.view.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A counter that grows whenever the live-broker view changes.
    pub fn generation(&self) -> Arc<AtomicU64> {
        self.generation.clone()
    }

    pub fn me(&self) -> &Member {
        &self.me
    }

    /// Stops following and deletes this broker's record, so others stop naming it at once.
    pub async fn deregister(&self) {
        let _ = self.stop.send(true);
        let task = self.task_lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
        let key = member_key(self.me.broker_id);
        match self.meta.get(&key, Comparison::Equal, None).await {
            Ok(Some(record)) if decode(&record.value).as_ref() == Some(&self.me) => {
                let expect = Expect::Version(record.version.version_id);
                match self.meta.delete(&key, expect, None).await {
                    Ok(()) => tracing::info!(broker_id = self.me.broker_id, "broker deregistered"),
                    Err(error) => tracing::warn!(%error, "cannot deregister broker"),
                }
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "cannot read own membership record"),
        }
    }

    async fn subscribe(&self) -> Option<BoxStream<'static, Notification>> {
        match self.meta.notifications().await {
            Ok(stream) => Some(stream),
            Err(error) => {
                tracing::warn!(%error, "no membership notifications; polling only");
                None
            }
        }
    }

    async fn register(&self) -> Result<(), MetaError> {
        let value = serde_json::to_vec(&self.me)
            .map_err(|e| MetaError::InvalidArgument(format!("member record: {e}")))?;
        let options = PutOptions {
            ephemeral: true,
            ..Default::default()
        };
        self.meta
            .put(&member_key(self.me.broker_id), Bytes::from(value), options)
            .await?;
        Ok(())
    }

    /// Re-registers when this broker's record is missing or names another endpoint.
    async fn ensure_registered(&self) -> Result<(), MetaError> {
        let key = member_key(self.me.broker_id);
        let current = self.meta.get(&key, Comparison::Equal, None).await?;
        if current.and_then(|r| decode(&r.value)).as_ref() != Some(&self.me) {
            tracing::warn!(
                broker_id = self.me.broker_id,
                "membership record missing; registering again"
            );
            self.register().await?;
        }
        Ok(())
    }

    async fn rescan(&self) -> Result<(), MetaError> {
        let records = self
            .meta
            .range_scan(BROKERS_PREFIX, BROKERS_END, None, MEMBERS_MAX)
            .await?;
        let members = records
            .iter()
            .filter_map(|r| {
                let member = decode(&r.value);
                if member.is_none() {
                    tracing::warn!(key = %r.key, "ignoring undecodable membership record");
                }
                member
            })
            .collect();
        let placement = Arc::new(Placement::new(members, &self.me));
        let mut view = self.view.write().unwrap_or_else(|p| p.into_inner());
        if **view != *placement {
            let ids: Vec<i32> = placement.members().iter().map(|m| m.broker_id).collect();
            tracing::info!(brokers = ?ids, "cluster membership changed");
            *view = placement;
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }

    fn task_lock(&self) -> std::sync::MutexGuard<'_, Option<JoinHandle<()>>> {
        self.task.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn follow(
    membership: std::sync::Weak<Membership>,
    mut notifications: Option<BoxStream<'static, Notification>>,
    mut stop: watch::Receiver<bool>,
    refresh_interval: Duration,
) {
    let mut tick = tokio::time::interval(refresh_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let periodic = tokio::select! {
            _ = stop.changed() => return,
            _ = tick.tick() => true,
            next = next_notification(&mut notifications) => match next {
                Some(n) if n.key().starts_with(BROKERS_PREFIX) => false,
                Some(_) => continue,
                None => {
                    notifications = None;
                    continue;
                }
            },
        };
        let Some(membership) = membership.upgrade() else {
            return;
        };
        if periodic {
            if notifications.is_none() {
                notifications = membership.subscribe().await;
            }
            if let Err(error) = membership.ensure_registered().await {
                tracing::warn!(%error, "cannot check membership registration");
            }
        }
        if let Err(error) = membership.rescan().await {
            tracing::warn!(%error, "cannot read cluster membership");
        }
    }
}

/// The next notification, or never when there is no stream (the tick drives the loop then).
async fn next_notification(
    notifications: &mut Option<BoxStream<'static, Notification>>,
) -> Option<Notification> {
    match notifications {
        Some(stream) => stream.next().await,
        None => std::future::pending().await,
    }
}

fn decode(value: &[u8]) -> Option<Member> {
    serde_json::from_slice(value).ok()
}
