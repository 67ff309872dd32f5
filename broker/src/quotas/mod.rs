//! Client quotas with Kafka's semantics: produce and fetch byte rates, and the share of a
//! handler's time requests may take (`request_percentage`, [`poll_time`]), per user, client id or
//! both (defaults and overrides, stored in the MetaStore: [`store`]), resolved in Kafka's order
//! of precedence, measured over Kafka's sampled window ([`rate`]) and enforced as Kafka does
//! since KIP-219: the response goes out at once carrying `throttle_time_ms`, and the
//! connection is muted for that long (its next request waits), so clients that throttle
//! themselves and clients that do not are held to the quota alike.

pub mod entity;
pub mod exempt;
pub mod poll_time;
pub mod rate;
pub mod settings;
pub mod store;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use entity::{Entity, Name, CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE};
use rate::{QuotaWindow, Rate};
pub use store::{QuotaStore, QuotaStoreError};

/// Quota entities measured at once; idle ones are dropped first when it is reached.
const SENSORS_MAX: usize = 10_000;
/// Connections muted at once (each is one entry until its mute ends).
const MUTED_MAX: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaKind {
    Produce,
    Fetch,
    Request,
}

impl QuotaKind {
    fn key(self) -> &'static str {
        match self {
            QuotaKind::Produce => PRODUCER_BYTE_RATE,
            QuotaKind::Fetch => CONSUMER_BYTE_RATE,
            QuotaKind::Request => REQUEST_PERCENTAGE,
        }
    }

    fn label(self) -> &'static str {
        match self {
            QuotaKind::Produce => "produce",
            QuotaKind::Fetch => "fetch",
            QuotaKind::Request => "request",
        }
    }
}

/// Whose traffic one rate adds up: Kafka's metric tags of the quota level that matched.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SensorKey {
    kind: QuotaKind,
    user: String,
    client_id: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    quota: &'static str,
}

type SecondsCounter = Counter<f64, std::sync::atomic::AtomicU64>;

struct Metrics {
    throttle: Family<KindLabels, SecondsCounter>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let throttle = Family::<KindLabels, SecondsCounter>::default();
    telemetry::registry::registry().register(
        "kafka_server_quota_throttle_seconds",
        "Seconds of throttle time given to clients over a quota, by quota (produce, fetch, request: what a request quota adds beyond a byte-rate throttle of the same request)",
        throttle.clone(),
    );
    Metrics { throttle }
});

pub fn register_metrics() {
    LazyLock::force(&METRICS);
}

pub struct Quotas {
    pub store: Arc<QuotaStore>,
    window: QuotaWindow,
    sensors: Mutex<HashMap<SensorKey, Rate>>,
    muted: Mutex<HashMap<SocketAddr, Instant>>,
}

impl Quotas {
    pub fn new(store: Arc<QuotaStore>, window: QuotaWindow) -> Quotas {
        Quotas {
            store,
            window,
            sensors: Mutex::new(HashMap::new()),
            muted: Mutex::new(HashMap::new()),
        }
    }

    /// The quota that applies to `user` and `client_id`, in Kafka's order: user and client,
    /// user and default client, user, default user and client, default user and default
    /// client, default user, client, default client.
    fn resolve(&self, kind: QuotaKind, user: &str, client_id: &str) -> Option<(f64, SensorKey)> {
        // No quota anywhere (the usual case): nothing to look up, nothing to allocate.
        if self.store.is_empty() {
            return None;
        }
        let named = |n: &str| Some(Name::Named(n.to_string()));
        let levels = [
            (named(user), named(client_id)),
            (named(user), Some(Name::Default)),
            (named(user), None),
            (Some(Name::Default), named(client_id)),
            (Some(Name::Default), Some(Name::Default)),
            (Some(Name::Default), None),
            (None, named(client_id)),
            (None, Some(Name::Default)),
        ];
        levels.into_iter().find_map(|(u, c)| {
            let sensor = SensorKey {
                kind,
                user: if u.is_some() {
                    user.to_string()
                } else {
                    String::new()
                },
                client_id: if c.is_some() {
                    client_id.to_string()
                } else {
                    String::new()
                },
            };
            let entity = Entity {
                user: u,
                client_id: c,
                ip: None,
            };
            self.store
                .value(&entity, kind.key())
                .map(|quota| (quota, sensor))
        })
    }

    /// Waits out `peer`'s mute, then records `bytes` of `kind` traffic and returns the throttle
    /// time, muting `peer`'s connection for it. The check and the record are one step under the
    /// mute lock: of requests pipelined on one connection, one passes per unmute, as Kafka,
    /// which reads a muted connection's next request only once it is unmuted, lets one pass.
    pub async fn admit(
        &self,
        kind: QuotaKind,
        user: &str,
        client_id: &str,
        bytes: u64,
        peer: SocketAddr,
    ) -> Duration {
        let Some((quota, sensor)) = self.resolve(kind, user, client_id) else {
            self.wait_unmuted(peer).await;
            return Duration::ZERO;
        };
        loop {
            let now = Instant::now();
            let throttle = {
                let mut muted = self.lock_muted();
                match muted.get(&peer) {
                    Some(until) if *until > now => Err(*until),
                    _ => {
                        muted.remove(&peer);
                        Ok(self.measure(&sensor, bytes_amount(bytes), now, quota, Rate::record))
                    }
                }
            };
            match throttle {
                Ok(throttle) => {
                    self.throttled(kind, peer, throttle, now);
                    return throttle;
                }
                Err(until) => tokio::time::sleep_until(until.into()).await,
            }
        }
    }

    /// A fetch response of `bytes` about to be sent, as Kafka's fetch and request quotas see
    /// it: counted when it may go; when it would pass the byte rate, or the request took the
    /// entity over its request quota (`spent`, the handler time so far, when still to count),
    /// `peer` muted for the larger throttle, returned, the bytes not counted (they are not
    /// sent), and the response sent empty (the caller's part).
    pub fn fetch(
        &self,
        user: &str,
        client_id: &str,
        bytes: u64,
        spent: Option<Duration>,
        peer: SocketAddr,
    ) -> Duration {
        let kind = QuotaKind::Fetch;
        let amount = bytes_amount(bytes);
        let resolved = self.resolve(kind, user, client_id);
        let now = Instant::now();
        let byte_throttle = resolved.as_ref().map_or(Duration::ZERO, |(quota, sensor)| {
            self.measure(sensor, amount, now, *quota, Rate::record_unless_throttled)
        });
        self.throttled(kind, peer, byte_throttle, now);
        let request_throttle = spent.map_or(Duration::ZERO, |spent| {
            self.request(user, client_id, spent, byte_throttle, peer)
        });
        // Kafka does not count the bytes of a fetch it answers empty, whichever quota did it.
        if byte_throttle.is_zero() && !request_throttle.is_zero() {
            if let Some((quota, sensor)) = &resolved {
                self.measure(sensor, amount, now, *quota, |rate, amount, _, _| {
                    rate.unrecord(amount);
                    Duration::ZERO
                });
            }
        }
        byte_throttle.max(request_throttle)
    }

    /// A served request that took `spent` of a handler's time, as Kafka's request quota sees
    /// it: counted, and when the entity is over its `request_percentage` the throttle time
    /// returned and `peer` muted for it. `byte_throttle` is what a byte-rate quota already gave
    /// the request: the response carries the larger of the two, and the connection is muted
    /// until the later end.
    pub fn request(
        &self,
        user: &str,
        client_id: &str,
        spent: Duration,
        byte_throttle: Duration,
        peer: SocketAddr,
    ) -> Duration {
        let kind = QuotaKind::Request;
        let Some((quota, sensor)) = self.resolve(kind, user, client_id) else {
            return Duration::ZERO;
        };
        let now = Instant::now();
        let amount = poll_time::percent_seconds(spent);
        let throttle = self.measure(&sensor, amount, now, quota, Rate::record);
        if throttle > byte_throttle {
            self.mute(peer, now + throttle, now);
            count(kind, throttle - byte_throttle);
        }
        throttle
    }

    fn measure(
        &self,
        sensor: &SensorKey,
        amount: f64,
        now: Instant,
        quota: f64,
        record: fn(&mut Rate, f64, Instant, f64) -> Duration,
    ) -> Duration {
        let mut sensors = self.sensors.lock().unwrap_or_else(|e| e.into_inner());
        if sensors.len() >= SENSORS_MAX && !sensors.contains_key(sensor) {
            sensors.retain(|_, rate| !rate.is_idle(now));
        }
        if sensors.len() >= SENSORS_MAX && !sensors.contains_key(sensor) {
            tracing::warn!(
                user = sensor.user,
                client_id = sensor.client_id,
                "quota not measured: too many quota entities active"
            );
            return Duration::ZERO;
        }
        let window = self.window;
        let rate = sensors
            .entry(sensor.clone())
            .or_insert_with(|| Rate::new(window));
        record(rate, amount, now, quota)
    }

    fn throttled(&self, kind: QuotaKind, peer: SocketAddr, throttle: Duration, now: Instant) {
        if throttle.is_zero() {
            return;
        }
        self.mute(peer, now + throttle, now);
        count(kind, throttle);
    }

    fn lock_muted(&self) -> std::sync::MutexGuard<'_, HashMap<SocketAddr, Instant>> {
        self.muted.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn mute(&self, peer: SocketAddr, until: Instant, now: Instant) {
        let mut muted = self.lock_muted();
        if muted.len() >= MUTED_MAX {
            muted.retain(|_, end| *end > now);
        }
        if muted.len() < MUTED_MAX {
            let end = muted.entry(peer).or_insert(until);
            *end = (*end).max(until);
        }
    }

    /// Waits out `peer`'s mute, if it has one (a mute extended meanwhile is waited out too).
    pub async fn wait_unmuted(&self, peer: SocketAddr) {
        loop {
            let until = {
                let mut muted = self.lock_muted();
                match muted.get(&peer) {
                    Some(end) if *end > Instant::now() => *end,
                    Some(_) => {
                        muted.remove(&peer);
                        return;
                    }
                    None => return,
                }
            };
            tokio::time::sleep_until(until.into()).await;
        }
    }
}

fn count(kind: QuotaKind, throttle: Duration) {
    if !telemetry::enabled() {
        return;
    }
    let labels = KindLabels {
        quota: kind.label(),
    };
    METRICS
        .throttle
        .get_or_create(&labels)
        .inc_by(throttle.as_secs_f64());
}

fn bytes_amount(bytes: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)] // byte counts far below 2^52
    let amount = bytes as f64;
    amount
}

/// Throttle time as the `throttle_time_ms` field carries it.
pub fn throttle_ms(throttle: Duration) -> i32 {
    i32::try_from(throttle.as_millis()).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests;
