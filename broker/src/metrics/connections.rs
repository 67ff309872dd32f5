//! Open connections by listener (`kafka_server_listener_connections`): a guard per accepted
//! connection, counted down when the connection's task ends, whatever ended it.

use std::sync::LazyLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListenerLabels {
    listener: String,
}

static OPEN: LazyLock<Family<ListenerLabels, Gauge>> = LazyLock::new(|| {
    telemetry::gauge_family(
        "kafka_server_listener_connections",
        "Open client connections by listener name (TLS handshakes and SASL exchanges included)",
    )
});

pub(super) fn register() {
    LazyLock::force(&OPEN);
}

/// Counts one connection on `listener` until the guard is dropped.
pub struct OpenConnection(Option<Gauge>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        if let Some(gauge) = self.0.take() {
            gauge.dec();
        }
    }
}

pub fn connection_opened(listener: &str) -> OpenConnection {
    if !telemetry::enabled() {
        return OpenConnection(None);
    }
    let labels = ListenerLabels {
        listener: listener.to_string(),
    };
    let gauge = OPEN.get_or_create(&labels).clone();
    gauge.inc();
    OpenConnection(Some(gauge))
}
