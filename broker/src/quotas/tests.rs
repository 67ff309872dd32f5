//! Request quotas through [`Quotas::request`]: Kafka's throttle arithmetic applied to handler
//! time, the entity resolution shared with the byte rates, and the mute kept to the later end.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use metastore::MetaStore;

use super::entity::{Entity, Values, CLIENT_ID, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, USER};
use super::rate::QuotaWindow;
use super::{QuotaStore, Quotas};

const PEER: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9);

async fn quotas_with(entity: [(&str, Option<&str>); 1], percentage: f64) -> Quotas {
    quotas_holding(entity, &[(REQUEST_PERCENTAGE, percentage)]).await
}

async fn quotas_holding(entity: [(&str, Option<&str>); 1], quotas: &[(&str, f64)]) -> Quotas {
    let meta: Arc<dyn MetaStore> = Arc::new(metastore::MemoryMetaStore::open(Default::default()));
    let store = QuotaStore::open(meta)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let entity = Entity::from_components(entity).unwrap_or_else(|e| panic!("{e}"));
    let values: Values = quotas.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    store
        .set(&entity, values)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    Quotas::new(store, QuotaWindow::default())
}

fn close_to(actual: Duration, expected: Duration) -> bool {
    actual.abs_diff(expected) < Duration::from_millis(2)
}

#[tokio::test]
async fn handler_time_over_the_percentage_waits_in_proportion_to_the_excess() {
    let quotas = quotas_with([(CLIENT_ID, Some("c"))], 10.0).await;
    // 1.05 s of handler time over the 10 s span is 10.5% against 10%: wait 5% of the span.
    let throttle = quotas.request("u", "c", Duration::from_millis(1050), Duration::ZERO, PEER);
    assert!(
        close_to(throttle, Duration::from_millis(500)),
        "{throttle:?}"
    );
}

#[tokio::test]
async fn handler_time_within_the_percentage_is_not_throttled() {
    let quotas = quotas_with([(CLIENT_ID, Some("c"))], 10.0).await;
    let throttle = quotas.request("u", "c", Duration::from_millis(900), Duration::ZERO, PEER);
    assert_eq!(throttle, Duration::ZERO);
}

#[tokio::test]
async fn a_request_throttle_is_at_most_one_window() {
    let quotas = quotas_with([(CLIENT_ID, Some("c"))], 0.01).await;
    let throttle = quotas.request("u", "c", Duration::from_secs(5), Duration::ZERO, PEER);
    assert_eq!(throttle, Duration::from_secs(1));
}

#[tokio::test]
async fn another_client_id_is_not_held_to_the_quota() {
    let quotas = quotas_with([(CLIENT_ID, Some("c"))], 0.01).await;
    let throttle = quotas.request("u", "other", Duration::from_secs(5), Duration::ZERO, PEER);
    assert_eq!(throttle, Duration::ZERO);
}

#[tokio::test]
async fn a_user_quota_adds_up_the_time_of_all_its_clients() {
    let quotas = quotas_with([(USER, Some("alice"))], 10.0).await;
    let first = quotas.request(
        "alice",
        "a",
        Duration::from_millis(600),
        Duration::ZERO,
        PEER,
    );
    assert_eq!(first, Duration::ZERO);
    let second = quotas.request(
        "alice",
        "b",
        Duration::from_millis(600),
        Duration::ZERO,
        PEER,
    );
    assert!(!second.is_zero(), "1.2 s over 10 s is over 10%");
}

#[tokio::test]
async fn the_connection_is_muted_for_a_request_throttle() {
    let quotas = quotas_with([(CLIENT_ID, Some("c"))], 10.0).await;
    let throttle = quotas.request("u", "c", Duration::from_millis(1050), Duration::ZERO, PEER);
    let muted = quotas.lock_muted().get(&PEER).copied();
    let left = muted.map(|until| until.saturating_duration_since(std::time::Instant::now()));
    assert!(
        left.is_some_and(|left| left <= throttle && left > throttle / 2),
        "{left:?}"
    );
}

#[tokio::test]
async fn a_byte_rate_throttle_longer_than_the_request_throttle_is_left_as_it_is() {
    let quotas = quotas_with([(CLIENT_ID, Some("c"))], 10.0).await;
    let byte_throttle = Duration::from_secs(1);
    let throttle = quotas.request("u", "c", Duration::from_millis(1050), byte_throttle, PEER);
    assert!(!throttle.is_zero() && throttle < byte_throttle);
    // The byte-rate quota muted the connection (in `admit`); the request quota adds nothing.
    assert!(quotas.lock_muted().get(&PEER).is_none());
}

#[tokio::test]
async fn a_fetch_over_its_request_quota_is_throttled_and_its_bytes_not_counted() {
    let quotas = [(REQUEST_PERCENTAGE, 10.0), (CONSUMER_BYTE_RATE, 1000.0)];
    let quotas = quotas_holding([(CLIENT_ID, Some("c"))], &quotas).await;
    // 9,000 bytes over the 10 s span are under 1,000 B/s; 1.05 s of handler time is not.
    let spent = Some(Duration::from_millis(1050));
    let throttle = quotas.fetch("u", "c", 9000, spent, PEER);
    assert!(
        close_to(throttle, Duration::from_millis(500)),
        "{throttle:?}"
    );
    // Had the first 9,000 bytes been counted, these would pass 1,000 B/s.
    assert_eq!(quotas.fetch("u", "c", 9000, None, PEER), Duration::ZERO);
}
