//! The background work of transactions on every broker: markers of decided transactions whose
//! writer is this broker (woken at once by any change of a transaction's state, and every
//! [`MARKER_SWEEP_INTERVAL`] in case a notification was missed), and, for the transactional
//! ids this broker coordinates, decided transactions completed (after their coordinator
//! died), open ones past their timeout aborted, and idle ids expired.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use metastore::{Expect, MetaError, Notification, Record};
use tokio::sync::{watch, Notify};

use super::records::{decode, OpenTxn, Status, TxnState};
use super::{coordinator, keys, markers};
use crate::context::Broker;

pub const MARKER_SWEEP_INTERVAL: Duration = Duration::from_millis(500);
/// How often decided transactions are looked for (bounded by the cleanup interval).
const STATE_SCAN_INTERVAL_MAX: Duration = Duration::from_millis(1000);
const SCAN_PAGE: usize = 256;

/// Starts the sweep; it ends at shutdown.
pub fn spawn(broker: &Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let wake = Arc::new(Notify::new());
    spawn_follower(broker, wake.clone());
    let weak = Arc::downgrade(broker);
    tokio::spawn(async move {
        let mut last_state_scan = Instant::now();
        let mut last_cleanup = Instant::now();
        loop {
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return,
                _ = wake.notified() => {}
                _ = tokio::time::sleep(MARKER_SWEEP_INTERVAL) => {}
            }
            let Some(broker) = weak.upgrade() else { return };
            write_due_markers(&broker).await;
            let cleanup = Duration::from_millis(broker.transactions.config().cleanup_interval_ms);
            if last_state_scan.elapsed() >= cleanup.min(STATE_SCAN_INTERVAL_MAX) {
                let expire = last_cleanup.elapsed() >= cleanup;
                scan_states(&broker, expire).await;
                last_state_scan = Instant::now();
                if expire {
                    last_cleanup = Instant::now();
                }
            }
        }
    });
}

/// Wakes the sweep whenever a transaction's state changes on any broker.
fn spawn_follower(broker: &Arc<Broker>, wake: Arc<Notify>) {
    let meta = broker.transactions.meta().clone();
    tokio::spawn(async move {
        let (prefix, _) = keys::state_range();
        loop {
            match meta.notifications().await {
                Ok(mut changes) => {
                    while let Some(change) = changes.next().await {
                        let relevant = match &change {
                            Notification::KeyRangeDeleted { .. } => false,
                            other => other.key().starts_with(&prefix),
                        };
                        if relevant {
                            wake.notify_one();
                        }
                    }
                }
                Err(error) => tracing::debug!(%error, "transaction notifications unavailable"),
            }
            tokio::time::sleep(MARKER_SWEEP_INTERVAL).await;
        }
    });
}

/// Every record of a key family, in pages.
async fn scan_all(
    broker: &Broker,
    (start, end): (String, String),
) -> Result<Vec<Record>, MetaError> {
    let meta = broker.transactions.meta();
    let mut out = Vec::new();
    let mut from = start;
    loop {
        let page = meta.range_scan(&from, &end, None, SCAN_PAGE).await?;
        let full = page.len() == SCAN_PAGE;
        if let Some(last) = page.last() {
            from = format!("{}\u{1}", last.key);
        }
        out.extend(page);
        if !full {
            return Ok(out);
        }
    }
}

async fn write_due_markers(broker: &Broker) {
    let entries = match scan_all(broker, keys::all_open_range()).await {
        Ok(entries) => entries,
        Err(error) => {
            tracing::debug!(%error, "open transactions not readable");
            return;
        }
    };
    let mut states: HashMap<String, Option<TxnState>> = HashMap::new();
    for record in entries {
        let Ok(entry) = decode::<OpenTxn>(&record.value) else {
            continue;
        };
        if markers::marker_writer(broker, &entry) != broker.node.broker_id {
            continue;
        }
        let state = match states.get(&entry.transactional_id) {
            Some(state) => state.clone(),
            None => {
                let Ok(loaded) = broker.transactions.load(&entry.transactional_id).await else {
                    continue;
                };
                let state = loaded.map(|(s, _)| s);
                states.insert(entry.transactional_id.clone(), state.clone());
                state
            }
        };
        if markers::decided(&entry, state.as_ref()).is_none() {
            continue;
        }
        let Some(stream) = record
            .key
            .strip_prefix("txn-open/")
            .and_then(|k| k.rsplit_once(':'))
        else {
            continue;
        };
        if let Err(error) = markers::write_marker(broker, stream.0, entry.producer_id).await {
            tracing::debug!(stream = stream.0, ?error, "marker not written yet");
        }
    }
}

async fn scan_states(broker: &Arc<Broker>, expire: bool) {
    let states = match scan_all(broker, keys::state_range()).await {
        Ok(states) => states,
        Err(error) => {
            tracing::debug!(%error, "transaction states not readable");
            return;
        }
    };
    let now = storage::clock::system_now_ms();
    let expiration = broker.transactions.config().id_expiration_ms;
    for record in states {
        let (Some(id), Ok(state)) = (
            keys::transactional_id_of(&record.key),
            decode::<TxnState>(&record.value),
        ) else {
            continue;
        };
        if !coordinator::is_coordinator(broker, &id) {
            continue;
        }
        let outcome = if state.status.is_prepared() {
            coordinator::complete(broker, &id).await
        } else if state.timed_out(now) {
            coordinator::abort_timed_out(broker, &id).await
        } else {
            Ok(())
        };
        if let Err(error) = outcome {
            tracing::debug!(
                transactional_id = id,
                ?error,
                "transaction not completed yet"
            );
        }
        let idle = matches!(
            state.status,
            Status::Empty | Status::CompleteCommit | Status::CompleteAbort
        ) && now.saturating_sub(state.updated_ms) > expiration;
        if expire && idle {
            let deleted = broker
                .transactions
                .meta()
                .delete(
                    &record.key,
                    Expect::Version(record.version.version_id),
                    None,
                )
                .await;
            if deleted.is_ok() {
                tracing::info!(transactional_id = id, "transactional id expired");
            }
        }
    }
}
