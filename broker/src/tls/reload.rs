//! Certificate reload without a restart: on SIGHUP, and whenever a poll every
//! `ssl_reload_interval_ms` finds that a TLS file's modification time or length changed.
//! New connections get the new files; open ones keep the session they negotiated. A file that
//! fails to load is logged and the previous files stay in use.

use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::ServerTls;

/// Follows the TLS files until `shutdown`. SIGHUP is watched from the moment this returns.
pub fn spawn(tls: Arc<ServerTls>, mut shutdown: watch::Receiver<bool>) -> JoinHandle<()> {
    // Installing a SIGHUP handler also stops SIGHUP from killing the process, which is why
    // only brokers with TLS listeners install one.
    let mut hangups = match signal(SignalKind::hangup()) {
        Ok(hangups) => Some(hangups),
        Err(error) => {
            tracing::warn!(%error, "cannot watch SIGHUP; tls files reload on change only");
            None
        }
    };
    let interval_ms = tls.config().reload_interval_ms;
    let mut poll = (interval_ms > 0).then(|| {
        let mut poll = tokio::time::interval(Duration::from_millis(interval_ms));
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        poll
    });
    tokio::spawn(async move {
        loop {
            let force = tokio::select! {
                _ = shutdown.changed() => return,
                Some(()) = next_hangup(&mut hangups) => true,
                _ = next_tick(&mut poll) => false,
            };
            reload(&tls, force).await;
        }
    })
}

async fn reload(tls: &Arc<ServerTls>, force: bool) {
    let loading = tls.clone();
    let cert_file = tls.config().cert_file.display().to_string();
    match tokio::task::spawn_blocking(move || loading.reload(force)).await {
        Ok(Ok(true)) => tracing::info!(cert_file, "tls files reloaded for new connections"),
        Ok(Ok(false)) => {}
        Ok(Err(error)) => {
            tracing::warn!(%error, "tls files not reloaded; new connections keep the previous ones")
        }
        Err(error) => tracing::error!(%error, "tls reload failed"),
    }
}

async fn next_hangup(hangups: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match hangups {
        Some(hangups) => hangups.recv().await,
        None => std::future::pending().await,
    }
}

async fn next_tick(poll: &mut Option<tokio::time::Interval>) {
    match poll {
        Some(poll) => {
            poll.tick().await;
        }
        None => std::future::pending().await,
    }
}
