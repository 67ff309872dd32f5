//! Kafka's listener syntax: `NAME://host:port` lists (`listeners`, `advertised_listeners`) and
//! `NAME:PROTOCOL` maps (`listener_security_protocol_map`). Names are case-insensitive, as
//! Kafka's, and kept in capitals.

use std::collections::BTreeMap;

use crate::security::SecurityProtocol;

/// One `NAME://host:port` entry. An empty host means every interface, as in Kafka.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub name: String,
    pub host: String,
    pub port: u16,
}

/// Parses `NAME://host:port,...`; the error says which entry is wrong and why.
pub fn addresses(text: &str) -> Result<Vec<Address>, String> {
    let mut out: Vec<Address> = Vec::new();
    for entry in entries(text) {
        let address = address(entry)?;
        if out.iter().any(|a| a.name == address.name) {
            return Err(format!("listener name {} appears twice", address.name));
        }
        out.push(address);
    }
    if out.is_empty() {
        return Err("expected at least one NAME://host:port".into());
    }
    Ok(out)
}

fn address(entry: &str) -> Result<Address, String> {
    let invalid = |why: &str| format!("{entry:?}: {why}");
    let (name, rest) = entry
        .split_once("://")
        .ok_or_else(|| invalid("expected NAME://host:port"))?;
    let name = listener_name(name).map_err(|why| invalid(&why))?;
    let (host, port) = rest
        .rsplit_once(':')
        .ok_or_else(|| invalid("expected NAME://host:port"))?;
    let host = match host.strip_prefix('[') {
        Some(v6) => v6
            .strip_suffix(']')
            .ok_or_else(|| invalid("unclosed [ in the host"))?,
        None => host,
    };
    if host.contains(['/', ' ', ',']) {
        return Err(invalid("bad host"));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| invalid("the port must be a number from 0 to 65535"))?;
    Ok(Address {
        name,
        host: host.to_string(),
        port,
    })
}

/// Parses `NAME:PROTOCOL,...` (Kafka's `listener.security.protocol.map`).
pub fn protocol_map(text: &str) -> Result<BTreeMap<String, SecurityProtocol>, String> {
    let mut out = BTreeMap::new();
    for entry in entries(text) {
        let (name, protocol) = entry
            .split_once(':')
            .ok_or_else(|| format!("{entry:?}: expected NAME:PROTOCOL"))?;
        let name = listener_name(name).map_err(|why| format!("{entry:?}: {why}"))?;
        let protocol =
            SecurityProtocol::parse(&protocol.trim().to_ascii_uppercase()).ok_or_else(|| {
                format!(
                    "{entry:?}: unknown security protocol {protocol:?} \
                     (expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)"
                )
            })?;
        if out.insert(name.clone(), protocol).is_some() {
            return Err(format!("listener name {name} appears twice"));
        }
    }
    Ok(out)
}

/// Entries of a comma-separated list, trimmed; empty entries (a trailing comma) are skipped.
fn entries(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|e| !e.is_empty())
}

fn listener_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("empty listener name".into());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "listener name {name:?} may hold only letters, digits, _ and -"
        ));
    }
    Ok(name.to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(name: &str, host: &str, port: u16) -> Address {
        Address {
            name: name.into(),
            host: host.into(),
            port,
        }
    }

    #[test]
    fn listener_lists_take_every_form_kafka_accepts() {
        assert_eq!(
            addresses("PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093").unwrap(),
            vec![
                addr("PLAINTEXT", "127.0.0.1", 9092),
                addr("SSL", "127.0.0.1", 9093)
            ]
        );
        assert_eq!(
            addresses(" external://[::1]:9094 , internal://:9095,").unwrap(),
            vec![addr("EXTERNAL", "::1", 9094), addr("INTERNAL", "", 9095)]
        );
        assert_eq!(
            addresses("SASL_SSL://kafka-1.example.com:0").unwrap(),
            vec![addr("SASL_SSL", "kafka-1.example.com", 0)]
        );
    }

    #[test]
    fn bad_listener_lists_say_which_entry_and_why() {
        let error = |text: &str| addresses(text).unwrap_err();
        assert_eq!(
            error("PLAINTEXT:/h:1"),
            "\"PLAINTEXT:/h:1\": expected NAME://host:port"
        );
        assert_eq!(
            error("PLAINTEXT://h"),
            "\"PLAINTEXT://h\": expected NAME://host:port"
        );
        assert!(error("PLAINTEXT://h:99999").contains("the port must be a number"));
        assert!(error("://h:1").contains("empty listener name"));
        assert!(error("A B://h:1").contains("may hold only letters"));
        assert!(error("SSL://[::1:9093").contains("unclosed ["));
        assert_eq!(
            error("SSL://a:1,ssl://b:2"),
            "listener name SSL appears twice"
        );
        assert_eq!(error(" , "), "expected at least one NAME://host:port");
    }

    #[test]
    fn protocol_maps_name_kafkas_protocols() {
        let map = protocol_map("EXTERNAL:SSL, internal:plaintext,SECURE:SASL_SSL").unwrap();
        assert_eq!(map["EXTERNAL"], SecurityProtocol::Ssl);
        assert_eq!(map["INTERNAL"], SecurityProtocol::Plaintext);
        assert_eq!(map["SECURE"], SecurityProtocol::SaslSsl);
        assert!(protocol_map("EXTERNAL:TLS")
            .unwrap_err()
            .contains("unknown security protocol \"TLS\""));
        assert!(protocol_map("EXTERNAL")
            .unwrap_err()
            .contains("expected NAME:PROTOCOL"));
        assert_eq!(
            protocol_map("A:SSL,a:PLAINTEXT").unwrap_err(),
            "listener name A appears twice"
        );
    }
}
