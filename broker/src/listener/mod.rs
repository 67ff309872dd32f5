//! Listeners, Kafka style: several at once, each with a name and a security protocol
//! (`--listeners PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093`), custom names mapped to a
//! protocol (`--listener-security-protocol-map EXTERNAL:SSL`), and the address each one
//! advertises (`--advertised-listeners`). `--listen` with `--advertised-listener` stays the
//! shorthand for one PLAINTEXT listener, and the default.
//!
//! - [`parse`]: the syntax of those settings;
//! - [`stream`]: what the connection code needs of a stream, plain TCP or TLS.

pub mod parse;
pub mod stream;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use storage::settings::{Resolved, Source};

use crate::config::settings as s;
use crate::config::{ConfigError, Endpoint};
use crate::security::SecurityProtocol;

/// One listener as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerConfig {
    /// In capitals: `PLAINTEXT`, `SSL`, `EXTERNAL`.
    pub name: String,
    pub protocol: SecurityProtocol,
    /// The host to bind: an IP address or a name (empty: every interface).
    pub host: String,
    /// 0: any free port.
    pub port: u16,
    /// What clients of this listener are told to connect to; its bound address when unset.
    pub advertised: Option<Endpoint>,
}

impl ListenerConfig {
    /// `NAME://host:port`, as Kafka writes listeners.
    pub fn url(&self) -> String {
        url(&self.name, &self.host, i32::from(self.port))
    }
}

pub fn url(name: &str, host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("{name}://[{host}]:{port}")
    } else {
        format!("{name}://{host}:{port}")
    }
}

fn invalid(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        reason: reason.into(),
    }
}

/// The listeners the settings describe: `listeners` (with the protocol map and
/// `advertised_listeners`), or else the one PLAINTEXT listener of `listen`.
pub fn from_settings(r: &Resolved) -> Result<Vec<ListenerConfig>, ConfigError> {
    let listeners = match r.get(&s::LISTENERS) {
        Some(listeners) => configured(r, &listeners)?,
        None => vec![shorthand(r)?],
    };
    let protocols = protocol_map(r)?;
    let advertised = advertised_map(r, &listeners)?;
    let mut out = Vec::with_capacity(listeners.len());
    for listener in listeners {
        let protocol = protocols
            .get(&listener.name)
            .copied()
            .or_else(|| SecurityProtocol::parse(&listener.name))
            .ok_or_else(|| {
                invalid(
                    s::LISTENER_SECURITY_PROTOCOL_MAP.key,
                    format!(
                        "no security protocol for listener {} (add {}:SSL or another protocol)",
                        listener.name, listener.name
                    ),
                )
            })?;
        out.push(ListenerConfig {
            advertised: advertised
                .get(&listener.name)
                .cloned()
                .or(listener.advertised),
            name: listener.name,
            protocol,
            host: listener.host,
            port: listener.port,
        });
    }
    Ok(out)
}

/// A listener before its protocol is known.
struct Named {
    name: String,
    host: String,
    port: u16,
    advertised: Option<Endpoint>,
}

fn configured(r: &Resolved, listeners: &str) -> Result<Vec<Named>, ConfigError> {
    // A `listen` at its default value, as `--print-config` writes it into a file, says nothing.
    let listen_given = r.source(s::LISTEN.key) != Some(Source::Default)
        && r.get(&s::LISTEN) != s::LISTEN.default_value();
    if listen_given {
        return Err(invalid(
            s::LISTEN.key,
            "set listen or listeners, not both (listen is the shorthand for one PLAINTEXT listener)",
        ));
    }
    if r.get(&s::ADVERTISED_LISTENER).is_some() {
        return Err(invalid(
            s::ADVERTISED_LISTENER.key,
            "with listeners, name the advertised address of each in advertised_listeners",
        ));
    }
    let addresses = parse::addresses(listeners).map_err(|e| invalid(s::LISTENERS.key, e))?;
    let mut ports: BTreeMap<u16, &str> = BTreeMap::new();
    for address in &addresses {
        if let Some(other) = ports.insert(address.port, &address.name) {
            if address.port != 0 {
                return Err(invalid(
                    s::LISTENERS.key,
                    format!(
                        "listeners {other} and {} both use port {}",
                        address.name, address.port
                    ),
                ));
            }
        }
    }
    Ok(addresses
        .into_iter()
        .map(|a| Named {
            name: a.name,
            host: a.host,
            port: a.port,
            advertised: None,
        })
        .collect())
}

/// `--listen` (and `--advertised-listener`): one PLAINTEXT listener.
fn shorthand(r: &Resolved) -> Result<Named, ConfigError> {
    let listen: SocketAddr = r.get(&s::LISTEN);
    let advertised = r
        .get(&s::ADVERTISED_LISTENER)
        .map(|text| Endpoint::parse(&text))
        .transpose()?;
    if advertised.is_some() && r.get(&s::ADVERTISED_LISTENERS).is_some() {
        return Err(invalid(
            s::ADVERTISED_LISTENER.key,
            "set advertised_listener or advertised_listeners, not both",
        ));
    }
    Ok(Named {
        name: SecurityProtocol::Plaintext.name().to_string(),
        host: listen.ip().to_string(),
        port: listen.port(),
        advertised,
    })
}

fn protocol_map(r: &Resolved) -> Result<BTreeMap<String, SecurityProtocol>, ConfigError> {
    match r.get(&s::LISTENER_SECURITY_PROTOCOL_MAP) {
        Some(map) => {
            parse::protocol_map(&map).map_err(|e| invalid(s::LISTENER_SECURITY_PROTOCOL_MAP.key, e))
        }
        None => Ok(BTreeMap::new()),
    }
}

fn advertised_map(
    r: &Resolved,
    listeners: &[Named],
) -> Result<BTreeMap<String, Endpoint>, ConfigError> {
    let Some(text) = r.get(&s::ADVERTISED_LISTENERS) else {
        return Ok(BTreeMap::new());
    };
    let key = s::ADVERTISED_LISTENERS.key;
    let mut out = BTreeMap::new();
    for address in parse::addresses(&text).map_err(|e| invalid(key, e))? {
        if !listeners.iter().any(|l| l.name == address.name) {
            return Err(invalid(
                key,
                format!("{} is not one of the listeners", address.name),
            ));
        }
        if address.host.is_empty() || address.port == 0 {
            return Err(invalid(
                key,
                format!(
                    "{}: an advertised address needs a host and a port",
                    address.name
                ),
            ));
        }
        let endpoint = Endpoint {
            host: address.host,
            port: i32::from(address.port),
        };
        out.insert(address.name, endpoint);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
