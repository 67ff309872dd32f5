//! Quota entities as Kafka names them: a user, a client id, both, or an IP address, each name
//! either given or the default (`<default>`), and the quota keys each may hold.

use std::collections::BTreeMap;
use std::fmt;

/// A name in an entity: a given one or the default of its type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Name {
    Default,
    Named(String),
}

impl Name {
    pub fn from_wire(name: Option<&str>) -> Name {
        name.map_or(Name::Default, |n| Name::Named(n.to_string()))
    }

    pub fn as_wire(&self) -> Option<&str> {
        match self {
            Name::Default => None,
            Name::Named(name) => Some(name),
        }
    }
}

/// One quota entity. Kafka's valid combinations: user, client id, user and client id, ip.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entity {
    pub user: Option<Name>,
    pub client_id: Option<Name>,
    pub ip: Option<Name>,
}

/// Longest name an entity may have, in bytes (as a SCRAM user name): every broker holds every
/// entity in memory, and Kafka itself sets no bound.
pub const NAME_BYTES_MAX: usize = 1024;

pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";
pub const IP: &str = "ip";

/// The quota keys this broker enforces.
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
/// Percent of one request handler's time (KIP-124): 200 is two handlers' worth.
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
/// Kafka's other keys: valid there, refused here because nothing would enforce them.
const NOT_ENFORCED: [&str; 2] = ["controller_mutation_rate", "connection_creation_rate"];

/// The stored quotas of one entity, by key.
pub type Values = BTreeMap<String, f64>;

impl Entity {
    /// As Kafka's `ClientQuotaControlManager.validateEntity`.
    pub fn from_components<'a>(
        components: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<Entity, String> {
        let mut entity = Entity {
            user: None,
            client_id: None,
            ip: None,
        };
        let mut empty = true;
        for (entity_type, name) in components {
            empty = false;
            let slot = match entity_type {
                USER => &mut entity.user,
                CLIENT_ID => &mut entity.client_id,
                IP => &mut entity.ip,
                other => return Err(format!("Unhandled client quota entity type: {other}")),
            };
            if slot.is_some() {
                return Err(format!(
                    "Duplicate {entity_type} entity type in client quota entity"
                ));
            }
            if name.is_some_and(|n| n.len() > NAME_BYTES_MAX) {
                return Err(format!(
                    "The {entity_type} name of a client quota entity is longer than {NAME_BYTES_MAX} bytes"
                ));
            }
            *slot = Some(Name::from_wire(name));
        }
        if empty {
            return Err("Invalid empty client quota entity".into());
        }
        if entity.ip.is_some() && (entity.user.is_some() || entity.client_id.is_some()) {
            return Err("Invalid quota entity combination, IP entity should not be combined with User or ClientId".into());
        }
        if let Some(Name::Named(ip)) = &entity.ip {
            if ip.parse::<std::net::IpAddr>().is_err() {
                return Err(format!("{ip} is not a valid IP or resolvable host."));
            }
        }
        Ok(entity)
    }

    /// `(type, name)` pairs in Kafka's order.
    pub fn components(&self) -> Vec<(&'static str, &Name)> {
        let mut out = Vec::new();
        if let Some(user) = &self.user {
            out.push((USER, user));
        }
        if let Some(client) = &self.client_id {
            out.push((CLIENT_ID, client));
        }
        if let Some(ip) = &self.ip {
            out.push((IP, ip));
        }
        out
    }
}

/// As Kafka's `validateQuotaKeyValue`, for the keys enforced here.
pub fn validate_value(entity: &Entity, key: &str, value: f64) -> Result<(), String> {
    if entity.ip.is_some() || NOT_ENFORCED.contains(&key) {
        if NOT_ENFORCED.contains(&key) {
            return Err(format!("{key} quotas are not enforced by this broker; only {PRODUCER_BYTE_RATE}, {CONSUMER_BYTE_RATE} and {REQUEST_PERCENTAGE}"));
        }
        return Err(format!("Invalid configuration key {key}"));
    }
    if ![PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE].contains(&key) {
        return Err(format!("Invalid configuration key {key}"));
    }
    if value <= 0.0 || value.is_nan() {
        return Err(format!("Quota {key} must be greater than 0"));
    }
    if key == REQUEST_PERCENTAGE {
        // A DOUBLE key: any positive value, fractions too. Kafka also takes infinity, which
        // the JSON the store keeps cannot hold; a quota that large never throttles anyway.
        if value.is_infinite() {
            return Err(format!("Quota {key} must be finite"));
        }
        return Ok(());
    }
    // LONG keys: Kafka refuses what a long cannot hold and fractions.
    if value > 9.223_372_036_854_776e18 {
        return Err(format!("Proposed value for {key} is too large for a LONG."));
    }
    if value.fract() != 0.0 {
        return Err(format!("{key} cannot be a fractional value."));
    }
    Ok(())
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .components()
            .into_iter()
            .map(|(t, n)| format!("{t}={}", n.as_wire().unwrap_or("<default>")))
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_entity_combinations_are_accepted_and_others_refused() {
        assert!(Entity::from_components([(USER, Some("alice"))]).is_ok());
        assert!(Entity::from_components([(USER, Some("alice")), (CLIENT_ID, None)]).is_ok());
        assert!(Entity::from_components([(IP, Some("10.0.0.1"))]).is_ok());
        assert!(Entity::from_components([]).is_err());
        assert!(Entity::from_components([(IP, None), (USER, None)]).is_err());
        assert!(Entity::from_components([(USER, None), (USER, Some("b"))]).is_err());
        assert!(Entity::from_components([("topic", Some("t"))]).is_err());
        assert!(Entity::from_components([(IP, Some("not an ip"))]).is_err());
    }

    #[test]
    fn names_longer_than_the_cap_are_refused() {
        let longest = "u".repeat(NAME_BYTES_MAX);
        assert!(Entity::from_components([(USER, Some(longest.as_str()))]).is_ok());
        let longer = "c".repeat(NAME_BYTES_MAX + 1);
        let refused = Entity::from_components([(CLIENT_ID, Some(longer.as_str()))]);
        assert!(refused.is_err_and(|e| e.contains("longer than 1024 bytes")));
    }

    #[test]
    fn byte_rates_must_be_positive_whole_numbers() {
        let user = Entity::from_components([(USER, Some("a"))]).unwrap_or_else(|e| panic!("{e}"));
        assert!(validate_value(&user, PRODUCER_BYTE_RATE, 1024.0).is_ok());
        assert!(validate_value(&user, PRODUCER_BYTE_RATE, 0.0).is_err());
        assert!(validate_value(&user, CONSUMER_BYTE_RATE, 10.5).is_err());
        assert!(validate_value(&user, "controller_mutation_rate", 50.0).is_err());
        assert!(validate_value(&user, "no_such_key", 1.0).is_err());
    }

    #[test]
    fn request_percentages_may_be_any_positive_finite_fraction() {
        let client =
            Entity::from_components([(CLIENT_ID, Some("c"))]).unwrap_or_else(|e| panic!("{e}"));
        assert!(validate_value(&client, REQUEST_PERCENTAGE, 0.01).is_ok());
        assert!(validate_value(&client, REQUEST_PERCENTAGE, 250.5).is_ok());
        assert!(validate_value(&client, REQUEST_PERCENTAGE, 0.0).is_err());
        assert!(validate_value(&client, REQUEST_PERCENTAGE, -1.0).is_err());
        assert!(validate_value(&client, REQUEST_PERCENTAGE, f64::NAN).is_err());
        assert!(validate_value(&client, REQUEST_PERCENTAGE, f64::INFINITY).is_err());
        let ip =
            Entity::from_components([(IP, Some("10.0.0.1"))]).unwrap_or_else(|e| panic!("{e}"));
        assert!(validate_value(&ip, REQUEST_PERCENTAGE, 10.0).is_err());
    }
}
